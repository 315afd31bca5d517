"""`svcrest serve --workers 2 --admin-port` over a real server: the probes and one view of
both workers' metrics on the admin port, nothing of it on the API port."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from svcrest.auth.throttle import MAX_FAILURES
from tests.e2e.test_serving_options import (
    PASSWORD,
    PLUGIN,
    add_editor,
    free_port,
    running,
    serve_command,
)
from tests.pg import PostgresServer

pytestmark = pytest.mark.slow

NOTES = "/svc-json/demo/v1/notes"


@pytest.mark.parametrize(
    ("server", "interface"),
    [("granian", "wsgi"), ("uvicorn", "asgi"), ("granian", "rsgi")],
    ids=["granian-wsgi", "uvicorn-asgi", "granian-rsgi"],
)
def test_two_workers_one_view(tmp_path: Path, server: str, interface: str) -> None:
    db = str(tmp_path / "s.db")
    add_editor(db)
    (tmp_path / "pid_plugin.py").write_text(PLUGIN)
    port, admin_port = free_port(), free_port()
    command = serve_command(port, "--server", server, "--interface", interface, "--db", db)
    command += ["--workers", "2", "--plugin", "pid_plugin:register"]
    env = {"SVCREST_ADMIN_PORT": str(admin_port)}  # the environment's default of the option
    with running(command, tmp_path, port, env) as served:
        admin = f"http://127.0.0.1:{admin_port}"
        deadline = time.monotonic() + 30
        while True:  # the admin port starts with the server, the workers a little later
            try:
                if httpx.get(f"{admin}/live", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, served.output()
            time.sleep(0.1)
        live = httpx.get(f"{admin}/live")
        assert (live.status_code, live.json()) == (200, {"status": "ok"})
        ready = httpx.get(f"{admin}/ready")
        assert (ready.status_code, ready.json()) == (
            200,
            {"status": "ready", "checks": {"store": "ok", "draining": "no"}},
        )
        pids: set[int] = set()
        asked = 0
        while len(pids) < 2:  # new connections until both workers answered
            assert asked < 300, pids
            with httpx.Client(base_url=served.url, timeout=10) as fresh:
                answer = fresh.get("/svc-json/t/v1/v")
            assert answer.status_code == 200
            pids.add(answer.json()["pid"])
            asked += 1
        with httpx.Client(base_url=served.url, timeout=10) as client:
            for number in range(5):
                assert client.get(f"{NOTES}/{900 + number}").status_code == 404
            for path in ("/live", "/ready", "/metrics"):  # never on the API port
                assert client.get(path).status_code == 404
        lines = [
            f'svcrest_requests_total{{method="GET",route="/t/v1/v",status="200"}} {asked}.0',
            'svcrest_requests_total{method="GET",route="",status="404"} 3.0',
            f'svcrest_request_duration_seconds_count{{method="GET",route="/t/v1/v"}} {asked}.0',
            f'svcrest_request_duration_seconds_bucket{{le="+Inf",method="GET",route="/t/v1/v"}}'
            f" {asked}.0",
        ]
        deadline = time.monotonic() + 10
        while True:  # each worker adds its requests to the series once a second
            metrics = httpx.get(f"{admin}/metrics")
            assert metrics.status_code == 200
            assert metrics.headers["content-type"].startswith("text/plain; version=")
            text = metrics.text
            if all(line in text.splitlines() for line in lines):
                break
            assert time.monotonic() < deadline, (lines, text)
            time.sleep(0.2)
        item = 'svcrest_requests_total{method="GET",route="/demo/v1/notes/{id}",status="404"} 5.0'
        assert item in text.splitlines(), text


SLOW_PLUGIN = """
import time

import svcrest


def register(app):
    def slow():
        time.sleep(2.0)
        return {"slow": True}

    app.register_rest_route(
        "t/v1",
        "/slow",
        {"methods": "GET", "callback": slow, "permission_callback": svcrest.public,
         "blocking": True},
    )
"""


@pytest.mark.parametrize(
    ("server", "workers"),
    [("granian", "2"), ("uvicorn", "2"), ("uvicorn", "1")],
    ids=["granian-2", "uvicorn-2", "uvicorn-1"],
)
def test_sigterm_drains_then_exits(tmp_path: Path, server: str, workers: str) -> None:
    """SIGTERM: /ready answers 503 at once, the request in flight finishes, then the process
    exits (granian with two workers; uvicorn's supervisor of two workers, and its one server
    process)."""
    db = str(tmp_path / "s.db")
    add_editor(db)
    (tmp_path / "slow_plugin.py").write_text(SLOW_PLUGIN)
    port, admin_port = free_port(), free_port()
    command = serve_command(port, "--db", db, "--workers", workers, "--admin-port", str(admin_port))
    command += ["--server", server]
    command += ["--plugin", "slow_plugin:register", "--graceful-timeout", "10"]
    admin = f"http://127.0.0.1:{admin_port}"
    with running(command, tmp_path, port) as served:
        assert httpx.get(f"{admin}/ready").status_code == 200
        answers: list[httpx.Response] = []
        slow = threading.Thread(
            target=lambda: answers.append(httpx.get(f"{served.url}/svc-json/t/v1/slow", timeout=20))
        )
        slow.start()
        time.sleep(0.7)  # the slow request is in flight
        served.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 1.0
        while True:
            ready = httpx.get(f"{admin}/ready", timeout=2)
            if ready.status_code == 503 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert (ready.status_code, ready.json()) == (
            503,
            {"status": "unavailable", "checks": {"store": "ok", "draining": "yes"}},
        )
        slow.join(20)
        [answer] = answers
        assert (answer.status_code, answer.json()) == (200, {"slow": True})
        # uvicorn's one server process re-raises the signal it caught once it has stopped.
        status = -signal.SIGTERM if (server, workers) == ("uvicorn", "1") else 0
        assert served.process.wait(timeout=15) == status, served.output()


@pytest.mark.parametrize(
    ("server", "interface"),
    [("granian", "asgi"), ("uvicorn", "asgi"), ("granian", "rsgi")],
    ids=["granian", "uvicorn", "granian-rsgi"],
)
def test_json_access_lines(tmp_path: Path, server: str, interface: str) -> None:
    db = str(tmp_path / "s.db")
    add_editor(db)
    port = free_port()
    command = serve_command(port, "--server", server, "--interface", interface, "--db", db)
    command += ["--log-format", "json"]
    with running(command, tmp_path, port) as served:
        target = f"{served.url}{NOTES}/77?password=SECRET"
        response = httpx.get(target, headers={"X-Request-Id": f"json-{server}"})
        assert response.status_code == 404
        deadline = time.monotonic() + 5
        while f'"request_id": "json-{server}"' not in served.output():
            assert time.monotonic() < deadline, served.output()
            time.sleep(0.05)
        output = served.output()
    assert "SECRET" not in output
    [line] = [json.loads(text) for text in output.splitlines() if f"json-{server}" in text]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", line.pop("time"))
    duration = line.pop("duration_ms")
    message = line.pop("message")
    assert "GET /svc-json/demo/v1/notes/77" in message
    assert line == {
        "level": "INFO",
        "logger": f"{server}.access",
        "request_id": f"json-{server}",
        "method": "GET",
        "route": r"/demo/v1/notes/(?P<id>\d+)",
        "status": 404,
        "user_id": 0,
        "path": f"{NOTES}/77?password=[redacted]",  # both servers: the query, redacted
    }
    if server == "granian":
        assert isinstance(duration, float) and duration > 0
    else:
        assert duration is None
    # Every line is one JSON object, the command's own (Serving…, Log in at…) included.
    for text in output.splitlines():
        assert text.startswith("{") and isinstance(json.loads(text), dict), (text, output)


def _series(admin: str) -> dict[str, float]:
    """The admin port's ``/metrics`` as ``{series line without value: value}``."""
    text = httpx.get(f"{admin}/metrics", timeout=5).text
    return {
        line.rpartition(" ")[0]: float(line.rpartition(" ")[2])
        for line in text.splitlines()
        if line and not line.startswith("#")
    }


def test_two_workers_on_postgresql(tmp_path: Path, postgres: PostgresServer) -> None:
    """On PostgreSQL: /ready checks the listener, and /metrics adds up both workers' pools
    and session-cache look-ups; a batch's size and a refused log-in are counted."""
    db = postgres.new_database() + "&pool_size=3"
    add_editor(db)
    port, admin_port = free_port(), free_port()
    command = serve_command(port, "--db", db, "--workers", "2", "--admin-port", str(admin_port))
    admin = f"http://127.0.0.1:{admin_port}"
    with running(command, tmp_path, port) as served:
        ready = httpx.get(f"{admin}/ready", timeout=5)
        assert (ready.status_code, ready.json()) == (
            200,
            {"status": "ready", "checks": {"store": "ok", "listener": "ok", "draining": "no"}},
        )
        checks = 0
        with httpx.Client(base_url=served.url, timeout=10) as client:
            login = client.post("/login", data={"log": "editor1", "pwd": PASSWORD})
            assert login.status_code == 303
            nonce = client.get("/auth/nonce").json()["nonce"]  # one cookie check
            checks += 1
            for _ in range(6):
                answer = client.get(NOTES, headers={"X-SVC-Nonce": nonce})
                assert answer.status_code == 200
                checks += 1
            batch = {"requests": [{"path": "/demo/v1/notes", "body": {"title": "b"}}] * 3}
            answer = client.post("/svc-json/batch/v1", json=batch, headers={"X-SVC-Nonce": nonce})
            assert answer.status_code == 207
            checks += 1
        with httpx.Client(base_url=served.url, timeout=10) as other:
            for _ in range(MAX_FAILURES):
                assert other.post("/login", data={"log": "editor1", "pwd": "x"}).status_code != 429
            refused = other.post("/login", data={"log": "editor1", "pwd": "x"})
            assert refused.status_code == 429
        deadline = time.monotonic() + 10
        while True:  # each worker copies its figures into the series once a second
            series = _series(admin)
            lookups = sum(
                value
                for name, value in series.items()
                if name.startswith("svcrest_session_cache_lookups_total{")
            )
            refusals = series.get("svcrest_login_throttle_refusals_total", 0.0)
            if (lookups, refusals) == (checks, 1.0) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert (lookups, refusals) == (checks, 1.0), series
        assert series["svcrest_session_cache_listening"] == 1.0
        hits = series['svcrest_session_cache_lookups_total{result="hit"}']
        trusted = hits + series['svcrest_session_cache_lookups_total{result="miss"}']
        assert series["svcrest_session_cache_trusted_ratio"] == pytest.approx(trusted / checks)
        in_use = series['svcrest_pool_connections{state="in_use"}']
        idle = series['svcrest_pool_connections{state="idle"}']
        # Summed over the workers: each client keeps one connection to one worker, so the
        # kernel may hand both clients to the same worker and the other one may have opened
        # nothing yet; at least the serving worker's connection, at most 3 in each worker.
        assert in_use == 0.0 and 1.0 <= idle <= 6.0, series
        assert series["svcrest_pool_waiting"] == 0.0
        assert series["svcrest_pool_acquire_timeouts_total"] == 0.0
        assert series['svcrest_batch_size_bucket{le="2.0"}'] == 0.0
        assert series['svcrest_batch_size_bucket{le="5.0"}'] == 1.0
        assert series["svcrest_batch_size_sum"] == 3.0


def _listening_addresses(port: int) -> set[str]:
    """The local addresses of the sockets listening on ``port`` (IPv4, from /proc)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, _, hex_port = local.partition(":")
        if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
            found.add(".".join(str(int(address[i : i + 2], 16)) for i in (6, 4, 2, 0)))
    return found


def _wait_live(admin: str, served: object) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{admin}/live", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, served
        time.sleep(0.1)


def test_the_admin_port_is_loopback_bound_holds_off_slow_clients_and_stops_promptly(
    tmp_path: Path,
) -> None:
    """The default server with ``--host 0.0.0.0``: the admin port listens on 127.0.0.1 only;
    200 connections to it sending nothing do not stop ``/live`` and ``/ready`` answering
    within 1 s; with them still open, SIGTERM ends the server within a few seconds."""
    db = str(tmp_path / "s.db")
    port, admin_port = free_port(), free_port()
    command = serve_command(port, "--host", "0.0.0.0", "--db", db, "--admin-port", str(admin_port))
    with running(command, tmp_path, port) as served:
        admin = f"http://127.0.0.1:{admin_port}"
        _wait_live(admin, served)
        assert _listening_addresses(admin_port) == {"127.0.0.1"}
        assert _listening_addresses(port) == {"0.0.0.0"}
        held = [socket.create_connection(("127.0.0.1", admin_port)) for _ in range(200)]
        try:
            time.sleep(0.3)
            for path in ("/live", "/ready"):
                started = time.monotonic()
                assert httpx.get(f"{admin}{path}", timeout=5).status_code == 200
                assert time.monotonic() - started < 1.0, path
            started = time.monotonic()
            served.process.send_signal(signal.SIGTERM)
            served.process.wait(timeout=10)
            assert time.monotonic() - started < 5.0, served.output()
        finally:
            for sock in held:
                sock.close()


def test_admin_host_publishes_the_probes_when_asked(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    port, admin_port = free_port(), free_port()
    command = serve_command(port, "--db", db, "--admin-port", str(admin_port))
    env = {"SVCREST_ADMIN_HOST": "0.0.0.0"}  # the environment's default of --admin-host
    with running(command, tmp_path, port, env) as served:
        _wait_live(f"http://127.0.0.1:{admin_port}", served)
        assert _listening_addresses(admin_port) == {"0.0.0.0"}
        assert _listening_addresses(port) == {"127.0.0.1"}


def test_a_killed_servers_metrics_directory_is_removed_by_the_next(tmp_path: Path) -> None:
    """SIGKILL leaves no time to remove the workers' figures: the next server does."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    port, admin_port = free_port(), free_port()
    command = serve_command(port, "--db", str(tmp_path / "s.db"), "--admin-port", str(admin_port))
    with (tmp_path / "killed.log").open("wb") as out:
        killed = subprocess.Popen(
            command,
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{admin_port}/live", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert killed.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        left = [path.name for path in temp.iterdir()]
        assert len(left) == 1 and left[0].startswith(f"svcrest-metrics-{killed.pid}-"), left
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()
    time.sleep(0.5)  # the group's workers gone too
    assert [path.name for path in temp.iterdir()] == left  # nothing removed it
    port, admin_port = free_port(), free_port()
    command = serve_command(port, "--db", str(tmp_path / "s.db"), "--admin-port", str(admin_port))
    with running(command, tmp_path, port, {"TMPDIR": str(temp)}) as served:
        names = [path.name for path in temp.iterdir()]
        assert left[0] not in names, served.output()
        assert len(names) == 1 and names[0].startswith(f"svcrest-metrics-{served.process.pid}-")
