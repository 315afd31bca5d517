"""What one client may hold, on real servers (DESIGN §7, issue 13): `svcrest serve` on each
server in a subprocess with a 2 s head time-out and idle keep-alive, then a 1 MB header,
50 clients sending their headers a byte a second, idle connections, and the access log."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.processes import GRACEFUL_TIMEOUT, STOP_TIMEOUT, port_free, stop_server

pytestmark = pytest.mark.slow

TIMEOUT = 2.0  # --header-timeout and --keep-alive-timeout of the servers under test
NOTES = "/svc-json/demo/v1/notes"
SLEEP_SECONDS = 3.0
# A plugin (--plugin blocking_routes:register) with a callback that blocks for 3 s, a plain
# route, and a write that takes the store's write lock.
PLUGIN = f"""
import time

import svcrest


def register(app):
    def sleep(request):
        time.sleep({SLEEP_SECONDS})
        return {{"slept": True}}

    def write(request):
        with app.store.transaction() as conn:
            conn.execute("SELECT 1")
        return {{"written": True}}

    public = {{"permission_callback": svcrest.public}}
    app.register_rest_route(
        "test/v1", "/sleep", {{"methods": "GET", "callback": sleep, "blocking": True, **public}}
    )
    app.register_rest_route(
        "test/v1", "/fast", {{"methods": "GET", "callback": lambda: "ok", **public}}
    )
    app.register_rest_route(
        "test/v1", "/write", {{"methods": "POST", "callback": write, "blocking": True, **public}}
    )
"""


@dataclass
class Server:
    name: str
    interface: str
    url: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path
    db: Path

    def log_text(self) -> str:
        """The server's output so far (its access log lines are written as they happen)."""
        return self.log.read_text(errors="replace")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"svcrest serve did not listen on port {port}: {log.read_text()}")


@pytest.fixture(
    scope="module",
    params=[("granian", "wsgi"), ("granian", "asgi"), ("uvicorn", "asgi"), ("granian", "rsgi")],
    ids=["granian-wsgi", "granian-asgi", "uvicorn-asgi", "granian-rsgi"],
)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    name, interface = request.param
    directory = tmp_path_factory.mktemp(f"{name}-{interface}")
    yield from _serve(
        directory, PLUGIN, name, interface, ["--server", name, "--interface", interface]
    )


def _serve(
    directory: Path, plugin: str, name: str, interface: str, choice: list[str]
) -> Iterator[Server]:
    """``svcrest serve`` with ``choice`` (its server options) and ``plugin``, until the end."""
    port = free_port()
    log = directory / "server.log"
    (directory / "blocking_routes.py").write_text(plugin)
    command = [sys.executable, "-m", "svcrest", "serve", *choice]
    command += ["--port", str(port), "--db", str(directory / "s.db")]
    command += ["--graceful-timeout", str(GRACEFUL_TIMEOUT)]
    command += ["--header-timeout", str(TIMEOUT), "--keep-alive-timeout", str(TIMEOUT)]
    command += ["--plugin", "blocking_routes:register"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=directory,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its workers in its process group: stopped with it
        )
    try:
        _wait_for_port(port, process, log)
        url = f"http://127.0.0.1:{port}"
        yield Server(name, interface, url, port, process, log, directory / "s.db")
    finally:
        stopped = stop_server(process, STOP_TIMEOUT)
    assert stopped, log.read_text(errors="replace")
    assert port_free(port)


@pytest.fixture(scope="module")
def wsgi_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``svcrest serve --interface wsgi`` (granian, the opt-in interface), and routes that
    block without the ``"blocking"`` mark."""
    directory = tmp_path_factory.mktemp("wsgi-unmarked")
    unmarked = PLUGIN.replace('"blocking": True, ', "")
    assert '"blocking"' not in unmarked
    yield from _serve(directory, unmarked, "granian", "wsgi", ["--interface", "wsgi"])


@pytest.fixture(scope="module")
def default_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``svcrest serve`` with its default server and interface (granian ASGI), and the
    routes that block marked ``"blocking"``."""
    directory = tmp_path_factory.mktemp("default")
    yield from _serve(directory, PLUGIN, "granian", "asgi", [])


def _served(server: Server) -> None:
    response = httpx.get(server.url + NOTES, timeout=5)
    assert (response.status_code, response.json()) == (200, [])


def _answer_or_close(sock: socket.socket) -> bytes:
    """What the server sent before closing (b"" when it reset the connection)."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return received


def test_a_one_megabyte_header_is_refused(server: Server) -> None:
    head = b"GET " + NOTES.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: "
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        # The server may close while we are still sending.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(head + b"a" * 1024 * 1024 + b"\r\n\r\n")
        answer = _answer_or_close(sock)
    assert answer == b"" or answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    _served(server)


async def _slow_client(port: int, started: float) -> float:
    """Send a request head a byte a second; the seconds until the server closed it."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = b"GET " + NOTES.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"s" * 30
    try:
        for byte in head:
            writer.write(bytes([byte]))
            try:
                await writer.drain()
                data = await asyncio.wait_for(reader.read(1024), timeout=1.0)
            except TimeoutError:
                continue
            except (ConnectionError, OSError):
                return time.monotonic() - started
            assert data == b"", data  # never an answer: the head never ends
            return time.monotonic() - started
        raise AssertionError("the server kept a slow client past the whole head")
    finally:
        writer.close()


async def _slow_clients_and_others(server: Server) -> tuple[list[float], list[float]]:
    started = time.monotonic()
    slow = [asyncio.create_task(_slow_client(server.port, started)) for _ in range(50)]
    await asyncio.sleep(0.5)
    latencies = []
    async with httpx.AsyncClient(timeout=5) as client:
        for _ in range(10):
            sent = time.monotonic()
            response = await client.get(server.url + NOTES)
            assert response.status_code == 200
            latencies.append(time.monotonic() - sent)
            await asyncio.sleep(0.1)
    return await asyncio.gather(*slow), latencies


def test_slow_header_clients_are_closed_and_others_served(server: Server) -> None:
    closed, latencies = asyncio.run(_slow_clients_and_others(server))
    assert len(closed) == 50
    # Closed after the 2 s head time-out (the byte-a-second reads see it within ~1 s more).
    assert all(TIMEOUT - 0.2 <= seconds <= TIMEOUT + 3 for seconds in closed), closed
    assert max(latencies) < 1.0, latencies
    _served(server)


def test_a_silent_connection(server: Server) -> None:
    """uvicorn (svcrest's protocol) closes a connection that never sends a byte after the
    head time-out. granian lacks that bound: hyper's header read time-out starts with the
    first byte of a head, so a silent new connection stays open (an idle one after an answer
    is closed, below); each costs granian a socket and a few KiB, not a Python thread."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT + 1.5) as sock:
        started = time.monotonic()
        if server.name == "granian":
            with pytest.raises(TimeoutError):
                sock.recv(1)
            return
        assert _answer_or_close(sock) == b""
        waited = time.monotonic() - started
    assert TIMEOUT - 0.2 <= waited <= TIMEOUT + 1.5, waited


def test_an_idle_keep_alive_connection_is_closed(server: Server) -> None:
    request = f"GET {NOTES} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(request)
        answer = b""
        while not answer.endswith(b"[]"):
            answer += sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
        started = time.monotonic()
        assert _answer_or_close(sock) == b""
        waited = time.monotonic() - started
    assert TIMEOUT - 0.2 <= waited <= TIMEOUT + 2, waited


def test_the_access_log_redacts_nonces(server: Server) -> None:
    query = "?_wpnonce=SECRET&per_page=2"
    response = httpx.get(server.url + NOTES + query, headers={"Cookie": "svc_x=COOKIE"})
    assert response.json()["code"] == "rest_cookie_invalid_nonce"
    # granian logs the path alone, uvicorn the path and query string (redacted).
    logged = NOTES if server.name == "granian" else NOTES + "?_wpnonce=[redacted]&per_page=2"
    line = f'"GET {logged} HTTP/1.1" 403'
    deadline = time.monotonic() + 5
    while line not in server.log_text():
        assert time.monotonic() < deadline, server.log_text()[-2000:]
        time.sleep(0.05)
    assert "SECRET" not in server.log_text()
    assert "COOKIE" not in server.log_text()


def test_the_access_log_escapes_control_characters(server: Server) -> None:
    """A ``%0D%0A`` in a path writes no forged line, and a ``%1B`` no terminal escape."""
    path = NOTES + "/x%0D%0AFORGED-LINE%1B%5B2J"
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
        )
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 404 ")
    deadline = time.monotonic() + 5
    while "FORGED-LINE" not in server.log_text():
        assert time.monotonic() < deadline, server.log_text()[-2000:]
        time.sleep(0.05)
    text = server.log_text()
    assert "\x1b" not in text
    for line in text.splitlines():
        assert not line.startswith("FORGED-LINE"), line
    # granian logs the decoded path (escaped here), uvicorn the path percent-encoded again.
    shown = (
        "\\x0d\\x0aFORGED-LINE\\x1b[2J" if server.name == "granian" else "%0D%0AFORGED-LINE%1B%5B2J"
    )
    assert shown in text, text[-2000:]


# -- blocking isolation ----------------------------------------------------------------------


@contextlib.contextmanager
def _client_without_gc() -> Iterator[None]:
    """The latencies measured are the server's: a full collection of the test process's own
    heap (late in a long suite, it can pause the client for half a second) must not count."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@contextlib.contextmanager
def _write_lock_held(db: Path) -> Iterator[None]:
    """Another process holds the write lock of ``db`` during the block."""
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        yield
    finally:
        holder.communicate("", timeout=10)


async def _fast_while_blocked(server: Server) -> tuple[httpx.Response, list[float]]:
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as client:
        blocked = asyncio.create_task(client.get("/svc-json/test/v1/sleep"))
        await asyncio.sleep(0.3)

        async def fast() -> float:
            sent = time.monotonic()
            response = await client.get("/svc-json/test/v1/fast")
            assert (response.status_code, response.json()) == (200, "ok")
            return time.monotonic() - sent

        latencies = await asyncio.gather(*(fast() for _ in range(20)))
        return await blocked, list(latencies)


def test_a_blocking_callback_delays_only_its_own_request(server: Server) -> None:
    started = time.monotonic()
    with _client_without_gc():
        blocked, latencies = asyncio.run(_fast_while_blocked(server))
    assert (blocked.status_code, blocked.json()) == (200, {"slept": True})
    assert time.monotonic() - started >= SLEEP_SECONDS
    assert max(latencies) < 0.5, latencies


def test_the_default_pair_isolates_a_marked_blocking_callback(default_server: Server) -> None:
    """DESIGN §1: on the default deployment (granian ASGI) a sync callback that blocks,
    marked ``"blocking"``, delays only its own request."""
    assert "with granian (asgi)" in default_server.log_text()
    test_a_blocking_callback_delays_only_its_own_request(default_server)


def test_the_wsgi_pair_isolates_an_unmarked_blocking_callback(wsgi_server: Server) -> None:
    """On granian's WSGI interface (``--interface wsgi``) a sync callback that blocks, marked
    or not, delays only its own request."""
    assert "with granian (wsgi)" in wsgi_server.log_text()
    test_a_blocking_callback_delays_only_its_own_request(wsgi_server)


@pytest.mark.parametrize("pair", ["default_server", "wsgi_server"])
def test_the_pair_serves_others_while_a_write_waits_for_the_lock(
    pair: str, request: pytest.FixtureRequest
) -> None:
    """The default pair with a marked write, the WSGI pair with an unmarked one."""
    served: Server = request.getfixturevalue(pair)

    async def write_and_read() -> tuple[httpx.Response, list[float]]:
        async with httpx.AsyncClient(base_url=served.url, timeout=15) as client:
            write = asyncio.create_task(client.post("/svc-json/test/v1/write"))
            await asyncio.sleep(0.5)
            latencies = []
            for _ in range(10):
                sent = time.monotonic()
                response = await client.get("/svc-json/test/v1/fast")
                assert (response.status_code, response.json()) == (200, "ok")
                latencies.append(time.monotonic() - sent)
            return await write, latencies

    with _write_lock_held(served.db), _client_without_gc():
        written, latencies = asyncio.run(write_and_read())
    assert written.status_code == 503
    assert written.headers["Retry-After"] == "1"
    assert max(latencies) < 0.5, latencies


def test_a_held_write_lock_answers_503(server: Server) -> None:
    if (server.name, server.interface) != ("granian", "asgi"):
        pytest.skip("the store is the same under every server: granian ASGI shows it")
    with _write_lock_held(server.db):
        started = time.monotonic()
        response = httpx.post(server.url + "/svc-json/test/v1/write", timeout=15)
        waited = time.monotonic() - started
        assert response.status_code == 503
        assert response.headers["Retry-After"] == "1"
        assert response.json() == {
            "code": "svc_store_busy",
            "message": "The database is busy; please try again shortly.",
            "data": {"status": 503},
        }
        assert 4.5 <= waited <= 8, waited  # the store's 5 s busy time-out
    written = httpx.post(server.url + "/svc-json/test/v1/write", timeout=15)
    assert (written.status_code, written.json()) == (200, {"written": True})


# Another process holding the write lock (BEGIN IMMEDIATE) until its standard input closes.
LOCK_HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""
