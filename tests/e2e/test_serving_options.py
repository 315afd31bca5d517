"""`svcrest serve` options over real servers, in subprocesses: `--reload` serves the edited
plugin and ignores log and database files, a default start is quiet, `--proxy-headers` works
on both servers (exact Set-Cookie attributes), nonces sent under encoded names are redacted in
both access logs, and an in-memory App served by several workers is refused."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.processes import STOP_TIMEOUT, port_free, stop_server

pytestmark = pytest.mark.slow

PASSWORD = "correct horse battery"
NOTES = "/svc-json/demo/v1/notes"
COOKIE_VALUE = re.compile(r"^svc_logged_in=editor1\|[^;]+")
PLUGIN = """
import os

import svcrest


def register(app):
    app.register_rest_route(
        "t/v1",
        "/v",
        {
            "methods": "GET",
            "callback": lambda: {"v": 1, "pid": os.getpid()},
            "permission_callback": svcrest.public,
        },
    )
"""


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def running(
    command: list[str], directory: Path, port: int, env: dict[str, str] | None = None
) -> Iterator[Server]:
    """``command`` started in ``directory``, its output in ``directory/server.log``, until
    the block ends (stopped with its whole process group, which must stop by itself); fails
    when nothing listens on ``port`` within 30 s."""
    log = directory / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=directory,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            start_new_session=True,  # its workers in its process group: stopped with it
        )
    server = Server(f"http://127.0.0.1:{port}", process, log)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, server.output()
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                assert time.monotonic() < deadline, server.output()
                time.sleep(0.05)
        yield server
    finally:
        stopped = stop_server(process, STOP_TIMEOUT)
    assert stopped, server.output()
    assert port_free(port)


def add_editor(db: str) -> None:
    """``svcrest user add editor1`` (an editor whose password is ``PASSWORD``) to ``db``."""
    add = ["user", "add", "editor1", "--role", "editor", "--password-stdin", "--db", db]
    added = subprocess.run(
        [sys.executable, "-m", "svcrest", *add],
        input=PASSWORD,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert added.returncode == 0, added.stderr


def serve_command(port: int, *options: str) -> list[str]:
    return [sys.executable, "-m", "svcrest", "serve", "--port", str(port), *options]


def get_json(url: str, timeout: float = 20.0) -> dict[str, object]:
    """The JSON of ``url``, retried while the server restarts."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            response = httpx.get(url, timeout=5)
            if response.status_code == 200:
                return dict(response.json())
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, f"no answer from {url}"
        time.sleep(0.1)


# -- --reload ----------------------------------------------------------------------------------


@pytest.mark.parametrize("server", ["granian", "uvicorn"])
def test_reload_serves_the_edited_plugin_and_ignores_logs(tmp_path: Path, server: str) -> None:
    (tmp_path / "plug.py").write_text(PLUGIN)
    port = free_port()
    command = serve_command(port, "--server", server, "--reload", "--db", "var/s.db")
    with running([*command, "--plugin", "plug:register"], tmp_path, port) as served:
        url = served.url + "/svc-json/t/v1/v"
        first = get_json(url)
        assert first["v"] == 1
        (tmp_path / "plug.py").write_text(PLUGIN.replace('"v": 1', '"v": 2'))
        deadline = time.monotonic() + 30
        while (second := get_json(url))["v"] != 2:
            assert time.monotonic() < deadline, served.output()
            time.sleep(0.2)
        # The server's own log (written at every request, in the watched folder), another
        # log and the database change: the worker that answers stays the same.
        for round_ in range(10):
            with (tmp_path / "app.log").open("a") as log:
                log.write(f"line {round_}\n")
            assert get_json(url) == second, served.output()
            time.sleep(0.3)
        assert httpx.get(served.url + NOTES, timeout=5).status_code == 200  # a database read
        time.sleep(1.5)
        assert get_json(url) == second, served.output()


@pytest.mark.parametrize("server", ["granian", "uvicorn"])
def test_reload_survives_a_syntax_error_and_serves_the_next_good_save(
    tmp_path: Path, server: str
) -> None:
    """A plugin saved with a syntax error: the worker shows where and the server keeps
    watching (granian exited for good); the next good save is served."""
    plugin = tmp_path / "plug.py"
    plugin.write_text(PLUGIN)
    port = free_port()
    command = serve_command(port, "--server", server, "--reload", "--db", "var/s.db")
    with running([*command, "--plugin", "plug:register"], tmp_path, port) as served:
        assert get_json(served.url + "/svc-json/t/v1/v")["v"] == 1
        plugin.write_text("def register(app):\n    broken = (\n")
        where = (
            "Traceback (most recent call last; the plugin's frames, --traceback shows all):\n"
            f'  File "{plugin}", line 2\n'
            "    broken = (\n"
            "             ^\n"
            "SyntaxError: '(' was never closed\n"
            "svcrest: error: cannot load plugin 'plug:register': SyntaxError: '(' was never"
            " closed (plug.py, line 2)\n"
            "svcrest: waiting for the next change to a .py file to serve again (--reload)\n"
        )
        deadline = time.monotonic() + 30
        while where not in served.output():
            assert time.monotonic() < deadline, served.output()
            time.sleep(0.2)
        time.sleep(1.0)
        assert served.process.poll() is None, served.output()
        plugin.write_text(PLUGIN.replace('"/v"', '"/w"').replace('"v": 1', '"v": 3'))
        assert get_json(served.url + "/svc-json/t/v1/w", timeout=30)["v"] == 3, served.output()
        assert served.process.poll() is None


# -- a default start ---------------------------------------------------------------------------


def test_a_default_start_prints_no_warning(tmp_path: Path) -> None:
    port = free_port()
    with running(serve_command(port), tmp_path, port) as served:
        assert get_json(served.url + NOTES.rsplit("/", 1)[0])  # the namespace index
        output = served.output()
    assert "with granian (asgi)" in output
    assert "[WARNING]" not in output
    assert "Python threads" not in output


# -- --proxy-headers on both servers, and the access logs --------------------------------------


@pytest.fixture(
    scope="module",
    params=[
        ("granian", "wsgi"),
        ("granian", "asgi"),
        ("uvicorn", "asgi"),
        ("uvicorn", "wsgi"),
        ("granian", "rsgi"),
    ],
    ids=["granian-wsgi", "granian-asgi", "uvicorn-asgi", "uvicorn-wsgi", "granian-rsgi"],
)
def proxied(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Server]]:
    """``svcrest serve --proxy-headers`` trusting 127.0.0.1 only, with a user ``editor1``."""
    name, interface = request.param
    directory = tmp_path_factory.mktemp(f"proxied-{name}-{interface}")
    db = str(directory / "s.db")
    add_editor(db)
    port = free_port()
    command = serve_command(port, "--server", name, "--interface", interface, "--db", db)
    command += ["--proxy-headers", "--forwarded-allow-ips", "127.0.0.1"]
    with running(command, directory, port) as served:
        yield name, served


def _login(url: str, local_address: str, headers: dict[str, str]) -> httpx.Response:
    transport = httpx.HTTPTransport(local_address=local_address)
    with httpx.Client(transport=transport, base_url=url, timeout=10) as client:
        return client.post("/login", data={"log": "editor1", "pwd": PASSWORD}, headers=headers)


@pytest.mark.parametrize(
    ("local_address", "attributes"),
    [
        ("127.0.0.1", "; Path=/; HttpOnly; SameSite=Lax; Secure"),
        ("127.0.0.2", "; Path=/; HttpOnly; SameSite=Lax"),  # not a trusted proxy
    ],
    ids=["trusted", "untrusted"],
)
def test_forwarded_https_makes_the_cookie_secure(
    proxied: tuple[str, Server], local_address: str, attributes: str
) -> None:
    _, served = proxied
    login = _login(served.url, local_address, {"X-Forwarded-Proto": "https"})
    assert login.status_code == 303
    assert COOKIE_VALUE.sub("", login.headers["set-cookie"]) == attributes


def test_plain_http_from_the_proxy_is_not_secure(proxied: tuple[str, Server]) -> None:
    _, served = proxied
    login = _login(served.url, "127.0.0.1", {})
    assert COOKIE_VALUE.sub("", login.headers["set-cookie"]) == "; Path=/; HttpOnly; SameSite=Lax"


@pytest.mark.parametrize("server", ["granian", "uvicorn"])
def test_an_https_home_makes_the_cookie_secure(tmp_path: Path, server: str) -> None:
    """Behind a TLS proxy whose headers the server is not told to read."""
    db = str(tmp_path / "s.db")
    add_editor(db)
    port = free_port()
    command = serve_command(port, "--server", server, "--db", db, "--home", "https://site.test")
    with running(command, tmp_path, port) as served:
        login = _login(served.url, "127.0.0.1", {})
    assert login.status_code == 303
    attributes = COOKIE_VALUE.sub("", login.headers["set-cookie"])
    assert attributes == "; Path=/; HttpOnly; SameSite=Lax; Secure"


@pytest.mark.parametrize(
    ("query", "logged"),
    [
        ("%5Fwpnonce=SECRET1&per_page=2", "%5Fwpnonce=[redacted]&per_page=2"),
        ("%5F%77%70nonce=SECRET2", "%5F%77%70nonce=[redacted]"),
        ("_wpnonce[]=SECRET3", "_wpnonce[]=[redacted]"),
    ],
    ids=["encoded-underscore", "encoded-letters", "brackets"],
)
def test_nonces_under_encoded_names_are_redacted(
    proxied: tuple[str, Server], query: str, logged: str
) -> None:
    name, served = proxied
    response = httpx.get(f"{served.url}{NOTES}?{query}", headers={"Cookie": "svc_x=C"})
    assert response.status_code == 403
    # granian logs the path alone, uvicorn the path and query string (redacted).
    path = NOTES if name == "granian" else f"{NOTES}?{logged}"
    line = f'"GET {path} HTTP/1.1" 403'
    deadline = time.monotonic() + 5
    while line not in served.output():
        assert time.monotonic() < deadline, served.output()[-2000:]
        time.sleep(0.05)
    assert "SECRET" not in served.output()


def _logged(served: Server, line: str) -> None:
    """Wait (5 s at most) until the server's output holds ``line``."""
    deadline = time.monotonic() + 5
    while line not in served.output():
        assert time.monotonic() < deadline, served.output()[-2000:]
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("sent", "kept"),
    [("edge-42.a:b_C", True), ("has space", False), ("x" * 129, False)],
    ids=["kept", "invalid", "too-long"],
)
def test_the_access_log_names_the_request_id(
    proxied: tuple[str, Server], sent: str, kept: bool
) -> None:
    name, served = proxied
    path = NOTES if name == "granian" else f"{NOTES}?per_page=1"

    def lines() -> list[str]:
        return [line for line in served.output().splitlines() if f"GET {path} " in line]

    # The server serves every case: this request's line is the one after those already there.
    before = len(lines())
    response = httpx.get(f"{served.url}{NOTES}?per_page=1", headers={"X-Request-Id": sent})
    assert response.status_code == 200
    request_id = response.headers["x-request-id"]
    if kept:
        assert request_id == sent
    else:
        assert re.fullmatch("[0-9a-f]{32}", request_id)
    if name == "granian":
        # The line of an earlier test's request may reach the log late (a loaded machine):
        # this request's line is the new one naming its id, with its status.
        wanted = f'"GET {path} HTTP/1.1" 200 '
        deadline = time.monotonic() + 5
        while not any(
            wanted in line and line.endswith(f" request_id={request_id}")
            for line in lines()[before:]
        ):
            assert time.monotonic() < deadline, lines()[before:] or served.output()[-2000:]
            time.sleep(0.05)
    else:
        _logged(served, f'"GET {path} HTTP/1.1" 200 OK request_id={request_id}')


# -- an in-memory App on several workers -------------------------------------------------------

MEMORY_SITE = """
import svcrest

app = svcrest.App()
wsgi = app.wsgi
"""


@pytest.mark.parametrize(
    ("options", "env"),
    [
        (["--interface", "wsgi", "--workers", "2", "memory_site:wsgi"], {}),
        (["memory_site:app"], {"WEB_CONCURRENCY": "2"}),
    ],
    ids=["wsgi-workers", "asgi-web-concurrency"],
)
def test_an_in_memory_app_on_several_workers_is_refused(
    tmp_path: Path, options: list[str], env: dict[str, str]
) -> None:
    (tmp_path / "memory_site.py").write_text(MEMORY_SITE)
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "--port", str(port), *options]
    with running(command, tmp_path, port, env) as served:
        for _ in range(4):
            response = httpx.get(served.url + "/svc-json/", timeout=10)
            assert response.status_code == 503
            assert response.json()["code"] == "svc_store_not_shared"
        time.sleep(0.5)
        output = served.output()
    assert "svcrest: refusing every request: This site keeps its data in memory" in output


@pytest.mark.parametrize("interface", ["wsgi", "asgi"])
def test_an_in_memory_database_on_one_worker_is_served(tmp_path: Path, interface: str) -> None:
    """`svcrest serve --db :memory:` (uvicorn, one worker): served, although uvicorn's WSGI
    bridge claims `wsgi.multiprocess` (serve tells the App its worker count)."""
    port = free_port()
    command = serve_command(port, "--db", ":memory:", "--interface", interface)
    with running(command, tmp_path, port) as served:
        response = httpx.get(served.url + NOTES, timeout=10)
        assert (response.status_code, response.json()) == (200, [])
        assert f"with uvicorn ({interface})" in served.output()
