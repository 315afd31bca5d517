"""Two real hosts, one site: two ``svcrest serve --db postgresql://…`` processes on 127.0.0.2
and 127.0.0.3, started at the same moment against an empty database (DESIGN §6)."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.e2e.test_e2e_server import free_port
from tests.pg import PostgresServer
from tests.processes import STOP_TIMEOUT, port_free, stop_servers

NOTES = "/svc-json/demo/v1/notes"


@dataclass
class Host:
    url: str
    output: list[str]


def _read_banner(process: subprocess.Popen[str]) -> list[str]:
    """The lines ``svcrest serve`` prints before serving (up to its "Log in at" line)."""
    lines: list[str] = []
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith("Log in at"):
            break
    return lines


def _wait_for(host: str, port: int, process: subprocess.Popen[str]) -> None:
    import socket
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"server exited: {process.communicate()}")
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"{host}:{port} did not start")


@contextlib.contextmanager
def serving(
    launches: list[tuple[str, list[str], dict[str, str] | None]],
) -> Iterator[list[Host]]:
    """``svcrest serve`` on each ``(address, extra options, environment)`` with a free port,
    as one site's hosts; yields them once each answers, and stops them all afterwards."""
    processes: list[tuple[str, int, subprocess.Popen[str]]] = []
    for address, options, env in launches:
        port = free_port()
        command = [sys.executable, "-m", "svcrest", "serve", "--host", address]
        command += ["--port", str(port), *options]
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            start_new_session=True,  # its workers in its process group: stopped with it
        )
        processes.append((address, port, process))
    try:
        found: list[Host] = []
        for address, port, process in processes:
            banner = _read_banner(process)
            _wait_for(address, port, process)
            found.append(Host(f"http://{address}:{port}", banner))
        yield found
    finally:
        stopped = stop_servers([process for _, _, process in processes], STOP_TIMEOUT)
        for _address, _port, process in processes:
            process.communicate(timeout=10)
    assert all(stopped)
    assert all(port_free(port, address) for address, port, _ in processes)


@pytest.fixture(scope="module")
def hosts(postgres: PostgresServer) -> Iterator[tuple[Host, Host]]:
    db = postgres.new_database()
    with serving(
        [(address, ["--db", db], None) for address in ("127.0.0.2", "127.0.0.3")]
    ) as found:
        yield found[0], found[1]


def admin_password(first: Host, second: Host) -> str:
    """Exactly one host created the admin (one schema, one site); its password."""
    created = [
        match.group(1)
        for line in first.output + second.output
        if (match := re.fullmatch(r"Created user admin with password: ([\w-]{24})", line))
    ]
    assert len(created) == 1, first.output + second.output
    return created[0]


def log_in(client: httpx.Client, password: str) -> str:
    response = client.post("/login", data={"log": "admin", "pwd": password})
    assert response.status_code == 303
    return str(client.cookies["svc_logged_in"])


def nonce_of(client: httpx.Client) -> str:
    response = client.get("/auth/nonce")
    assert response.status_code == 200
    return str(response.json()["nonce"])


def test_one_site_over_two_hosts(hosts: tuple[Host, Host]) -> None:
    first, second = hosts
    password = admin_password(first, second)
    with httpx.Client(base_url=first.url) as a, httpx.Client(base_url=second.url) as b:
        cookie = log_in(a, password)
        nonce = nonce_of(a)
        headers = {"Cookie": f"svc_logged_in={cookie}", "X-SVC-Nonce": nonce}
        # Written on the second host with the first one's login and nonce.
        created = b.post(NOTES, json={"title": "across", "content": "hosts"}, headers=headers)
        assert created.status_code == 201
        assert created.json()["id"] == 1
        # The author is the admin. Its id is not always 1: both hosts try to create the
        # admin at once, and on PostgreSQL the loser's INSERT spends a sequence value.
        author = b.get(f"/svc-json/demo/v1/users/{created.json()['author']}")
        assert author.json()["name"] == "admin"
        assert a.get(f"{NOTES}/1").json()["title"] == "across"
        # The second host checks the cookie a few times: its session cache holds the session
        # (and its heartbeat lease is up) by the time the first host logs out.
        for _ in range(10):
            seen = b.get(f"{NOTES}/1", headers=headers)
            assert (seen.status_code, seen.headers.get("X-SVC-Nonce")) == (200, nonce)
            time.sleep(0.02)
        # Logging out on the first host refuses the cookie on the second at once.
        home = a.get("/").text
        logout_nonce = home.split('name="_wpnonce" value="')[1].split('"')[0]
        assert a.post("/logout", data={"_wpnonce": logout_nonce}).status_code == 303
        refused = b.post(NOTES, json={"title": "after logout"}, headers=headers)
        assert (refused.status_code, refused.json()["code"]) == (403, "rest_cookie_invalid_nonce")
        refused = b.get(f"{NOTES}/1", headers=headers)
        assert (refused.status_code, refused.json()["code"]) == (403, "rest_cookie_invalid_nonce")


def test_concurrent_writes_over_both_hosts_lose_and_duplicate_nothing(
    hosts: tuple[Host, Host],
) -> None:
    first, second = hosts
    password = admin_password(first, second)
    with httpx.Client(base_url=first.url) as a:
        cookie = log_in(a, password)
        nonce = nonce_of(a)
        before = int(a.get(NOTES).headers["X-SVC-Total"])
    headers = {"Cookie": f"svc_logged_in={cookie}", "X-SVC-Nonce": nonce}
    statuses: list[int] = []
    lock = threading.Lock()

    def write(base: str, worker: int) -> None:
        with httpx.Client(base_url=base, headers=headers) as client:
            for i in range(10):
                title = f"w{worker}-{i}"
                response = client.post(NOTES, json={"title": title, "content": "c"})
                with lock:
                    statuses.append(response.status_code)

    threads = [
        threading.Thread(target=write, args=((first, second)[n % 2].url, n)) for n in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [201] * 60
    for host in (first, second):
        with httpx.Client(base_url=host.url) as client:
            listed = client.get(NOTES, params={"per_page": 100, "orderby": "id", "order": "asc"})
            notes = [n for n in listed.json() if n["title"].startswith("w")]
            assert listed.headers["X-SVC-Total"] == str(before + 60)
            assert sorted(n["title"] for n in notes) == sorted(
                f"w{n}-{i}" for n in range(6) for i in range(10)
            )
            assert len({n["id"] for n in notes}) == 60
