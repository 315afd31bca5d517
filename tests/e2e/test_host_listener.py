"""`svcrest serve --workers 2` on PostgreSQL: the workers share one listening connection
(counted in ``pg_stat_activity`` by its ``application_name``), a logout on one worker is
refused by both from the next request, and when the worker that holds the connection is
killed the other takes it over."""

from __future__ import annotations

import os
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_serving_options import PASSWORD, add_editor, free_port, running, serve_command
from tests.pg import PostgresServer
from tests.store.test_pg_relay import database_of, listening_connections, lock_holder

pytestmark = pytest.mark.slow

PLUGIN = """
import os

import svcrest


def me():
    return {"user": svcrest.current_user().id}


def logged_in():
    return svcrest.current_user().id > 0


def tag(response, server, request):
    headers = getattr(response, "headers", None)
    if headers is not None:
        headers["X-Pid"] = str(os.getpid())
    return response


def register(app):
    app.register_rest_route(
        "t/v1", "/me", {"methods": "GET", "callback": me, "permission_callback": logged_in}
    )
    app.hooks.add_filter("rest_post_dispatch", tag, 40)
"""


@pytest.fixture
def run_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="svr-", dir="/tmp") as name:
        yield Path(name)


def eventually(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def ask(url: str, headers: dict[str, str]) -> tuple[int, int]:
    """GET /t/v1/me on a new connection (the kernel picks the worker): status, worker pid."""
    with httpx.Client(base_url=url, timeout=10) as fresh:
        answer = fresh.get("/svc-json/t/v1/me", headers=headers)
    return answer.status_code, int(answer.headers["X-Pid"])


def both_answer(url: str, headers: dict[str, str], status: int, workers: int = 2) -> set[int]:
    """Ask on new connections until ``workers`` workers answered; every answer ``status``."""
    pids: set[int] = set()
    for _ in range(400):
        got, pid = ask(url, headers)
        assert got == status, (got, pid)
        pids.add(pid)
        if len(pids) == workers:
            return pids
    raise AssertionError(f"only workers {pids} answered")


def log_in(url: str) -> dict[str, str]:
    with httpx.Client(base_url=url, timeout=10) as client:
        assert client.post("/login", data={"log": "editor1", "pwd": PASSWORD}).status_code == 303
        nonce = client.get("/auth/nonce").json()["nonce"]
        cookie = client.cookies["svc_logged_in"]
    return {"Cookie": f"svc_logged_in={cookie}", "X-SVC-Nonce": nonce}


def log_out(url: str, headers: dict[str, str]) -> None:
    with httpx.Client(base_url=url, timeout=10, headers={"Cookie": headers["Cookie"]}) as client:
        home = client.get("/").text
        nonce = home.split('name="_wpnonce" value="')[1].split('"')[0]
        assert client.post("/logout", data={"_wpnonce": nonce}).status_code == 303


@pytest.mark.parametrize("server", ["granian", "uvicorn"])
def test_two_workers_share_one_listener_and_refuse_a_revocation_at_once(
    tmp_path: Path, postgres: PostgresServer, run_dir: Path, server: str
) -> None:
    db = postgres.new_database()
    add_editor(db)
    (tmp_path / "me_plugin.py").write_text(PLUGIN)
    port = free_port()
    command = serve_command(port, "--server", server, "--db", db, "--workers", "2")
    command += ["--plugin", "me_plugin:register"]
    with running(command, tmp_path, port, {"SVCREST_RUN_DIR": str(run_dir)}) as served:
        headers = log_in(served.url)
        pids = both_answer(served.url, headers, 200)
        database = database_of(db)
        assert listening_connections(postgres, database) == 1, served.output()
        (lock,) = run_dir.glob("listen-*.lock")
        assert lock_holder(str(lock)) in pids
        for _ in range(20):  # both caches hold the session now
            assert ask(served.url, headers)[0] == 200
        log_out(served.url, headers)
        assert both_answer(served.url, headers, 403) == pids
        assert listening_connections(postgres, database) == 1


def test_when_the_listening_worker_dies_the_other_takes_over(
    tmp_path: Path, postgres: PostgresServer, run_dir: Path
) -> None:
    """uvicorn starts a new worker in place of a dead one (granian, as svcrest starts it,
    stops the server instead)."""
    db = postgres.new_database()
    add_editor(db)
    (tmp_path / "me_plugin.py").write_text(PLUGIN)
    port = free_port()
    command = serve_command(port, "--server", "uvicorn", "--db", db, "--workers", "2")
    command += ["--plugin", "me_plugin:register"]
    with running(command, tmp_path, port, {"SVCREST_RUN_DIR": str(run_dir)}) as served:
        headers = log_in(served.url)
        pids = both_answer(served.url, headers, 200)
        database = database_of(db)
        (lock,) = run_dir.glob("listen-*.lock")
        holder = lock_holder(str(lock))
        assert holder in pids
        (survivor,) = pids - {holder}
        os.kill(holder, signal.SIGKILL)
        # The survivor takes the lock (uvicorn's new worker may start later).
        eventually(lambda: lock_holder(str(lock)) not in (None, holder), 15, "nobody took over")
        assert lock_holder(str(lock)) == survivor
        eventually(lambda: listening_connections(postgres, database) == 1, 15, "not one listener")
        # Both workers (the survivor and uvicorn's new one) hold the session.
        pids = eventually(lambda: _two_live(served.url, headers, holder), 60, "no second worker")
        assert survivor in pids
        for _ in range(20):
            assert ask(served.url, headers)[0] == 200
        assert listening_connections(postgres, database) == 1
        log_out(served.url, headers)
        assert both_answer(served.url, headers, 403) == pids


def _two_live(url: str, headers: dict[str, str], dead: int) -> set[int] | None:
    """The two workers answering now (None while only one answers)."""
    pids: set[int] = set()
    for _ in range(40):
        status, pid = ask(url, headers)
        assert status == 200 and pid != dead
        pids.add(pid)
        if len(pids) == 2:
            return pids
    return None
