"""Silent request bodies over real servers: clients that send a request head announcing a body
(``Content-Length``) and then nothing at all.

On the default ``svcrest serve`` (granian ASGI) a silent body costs a coroutine: however many
arrive, logins and REST writes are answered meanwhile, and each silent body is answered 408
``svc_body_timeout`` at the body time-out. On granian's WSGI interface (``--interface
wsgi``, an opt-in) a silent body holds one of the few reading threads until it leaves; one
client address holds at most its share of them, so another address still logs in."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from svcrest.client import RestProxy
from svcrest.serve.bodies import address_share, slow_body_readers
from svcrest.serve.launcher import granian_threads
from tests.e2e.test_e2e_server import PASSWORD, svcrest
from tests.e2e.test_serving_bounds import Server, _serve

pytestmark = pytest.mark.slow

BODY_TIMEOUT = 2.0
SILENT = 8  # four times the reading places of a WSGI worker on a 2-CPU machine
NOTES = "/svc-json/demo/v1/notes"
BUSY = {
    "code": "svc_body_busy",
    "message": "Too many slow request bodies are being received; please try again shortly.",
    "data": {"status": 503},
}


def _started(directory: Path, interface: str, choice: list[str]) -> Iterator[Server]:
    added = svcrest(
        "user", "add", "editor1", "--role", "editor", "--password-stdin", "--db",
        str(directory / "s.db"), stdin=PASSWORD + "\n",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    plugin = "def register(app):\n    pass\n"
    choice = ["--body-timeout", str(BODY_TIMEOUT), *choice]
    for started in _serve(directory, plugin, "granian", interface, choice):
        assert httpx.get(started.url + NOTES, timeout=30).status_code == 200
        yield started


@pytest.fixture(scope="module")
def default_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    for started in _started(tmp_path_factory.mktemp("silent-default"), "asgi", []):
        assert "with granian (asgi)" in started.log_text()
        yield started


@pytest.fixture(scope="module")
def wsgi_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    directory = tmp_path_factory.mktemp("silent-wsgi")
    for started in _started(directory, "wsgi", ["--interface", "wsgi"]):
        assert "with granian (wsgi)" in started.log_text()
        yield started


def _silent(port: int, path: str, source: str = "127.0.0.1") -> socket.socket:
    """A connection that sent a POST head announcing 1000 bytes of JSON, and nothing more."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Content-Length: 1000\r\n\r\n"
    )
    sock.sendall(head.encode())
    return sock


def _answer(sock: socket.socket) -> tuple[float, bytes]:
    """The seconds until the server's answer came on ``sock``, and the answer."""
    started = time.monotonic()
    data = b""
    while b"\r\n\r\n" not in data or len(data) < _length(data):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return time.monotonic() - started, data


def _length(data: bytes) -> int:
    head, _, _ = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(head) + 4 + int(value)
    return len(data) + 1


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def _body(answer: bytes) -> object:
    return json.loads(answer.partition(b"\r\n\r\n")[2])


def test_silent_bodies_stop_no_login_nor_write_on_the_default_server(
    default_server: Server,
) -> None:
    port = default_server.port
    silent = [_silent(port, "/login" if i % 2 else NOTES) for i in range(SILENT)]
    opened = time.monotonic()
    try:
        time.sleep(0.3)  # every head is in: its request waits for its body
        for round_ in range(3):
            sent = time.monotonic()
            with RestProxy(default_server.url + NOTES) as notes:
                notes.login("editor1", PASSWORD)
                [created] = notes.create({"title": f"Written {round_}"})
            assert created["title"] == f"Written {round_}"
            assert time.monotonic() - sent < 1.5
        assert time.monotonic() - opened < BODY_TIMEOUT  # all of it while the bodies were due
        answers = [_answer(sock) for sock in silent]
    finally:
        for sock in silent:
            sock.close()
    for index, (_seconds, answer) in enumerate(answers):
        assert _status(answer) == 408, answer
        if index % 2 == 0:  # the REST route: the JSON error
            assert _body(answer) == {
                "code": "svc_body_timeout",
                "message": "The request body was not received within 2 seconds.",
                "data": {"status": 408, "body_timeout": 2.0},
            }
    # Each at the time-out, counted from when its head came.
    assert BODY_TIMEOUT - 0.3 <= time.monotonic() - opened <= BODY_TIMEOUT + 1.5


def _login_from(server: Server, source: str) -> httpx.Response:
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(transport=transport, timeout=10) as client:
        return client.post(server.url + "/login", json={"log": "editor1", "pwd": PASSWORD})


def test_on_wsgi_one_address_holds_at_most_its_share_of_reading_places(
    wsgi_server: Server,
) -> None:
    readers = slow_body_readers(granian_threads())
    share = address_share(readers)
    silent = [_silent(wsgi_server.port, "/login") for _ in range(share)]
    try:
        time.sleep(0.3)
        # The address holding its share is refused another place at once...
        refused = _login_from(wsgi_server, "127.0.0.1")
        assert (refused.status_code, refused.text) == (503, BUSY["message"])
        assert refused.headers["Retry-After"] == "1"
        # ...while another address logs in.
        other = _login_from(wsgi_server, "127.0.0.2")
        assert other.status_code == 200, other.text
        assert other.cookies
    finally:
        for sock in silent:
            sock.close()
    time.sleep(0.3)
    assert _login_from(wsgi_server, "127.0.0.1").status_code == 200
