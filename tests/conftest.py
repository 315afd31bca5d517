"""Shared fixtures: an in-process HTTP client for the App over ASGI and over WSGI."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, Final

import httpx
import pytest

from svcrest import App
from svcrest.http.request_id import ACCESS_LOG
from svcrest.store.pg_relay_process import FIRST_CLIENT
from tests.cli_run import env_names
from tests.pg import PostgresServer
from tests.processes import become_subreaper, descendants, end_processes

ADAPTERS = ["asgi", "wsgi"]
#: The store engines the store, auth and demo suites run on.
ENGINES = ["sqlite", "postgresql"]
_UNSET: Final = object()


class SiteClient:
    """A synchronous httpx client talking to an App in-process, over ASGI or WSGI."""

    def __init__(self, app: App, adapter: str, base_url: str | None = None) -> None:
        self.adapter = adapter
        base = base_url or app.home
        self._loop: asyncio.AbstractEventLoop | None = None
        if adapter == "asgi":
            self._loop = asyncio.new_event_loop()
            self._async = httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url=base, follow_redirects=False
            )
        else:
            self._sync = httpx.Client(
                transport=httpx.WSGITransport(app=app.wsgi), base_url=base, follow_redirects=False
            )

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """Send one request."""
        if self._loop is not None:
            return self._loop.run_until_complete(self._async.request(method, url, **kwargs))
        return self._sync.request(method, url, **kwargs)

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        """GET."""
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        """POST."""
        return self.request("POST", url, **kwargs)

    @property
    def cookies(self) -> httpx.Cookies:
        """The client's cookie jar."""
        return self._async.cookies if self._loop is not None else self._sync.cookies

    def close(self) -> None:
        """Close the client (and its loop)."""
        if self._loop is not None:
            self._loop.run_until_complete(self._async.aclose())
            self._loop.close()
        else:
            self._sync.close()


#: The environment variables svcrest names outside ``SVCREST_*`` (the metrics directory).
_OTHER_ENV: Final = tuple(sorted(name for name in env_names() if not name.startswith("SVCREST_")))


def process_state() -> dict[str, object]:
    """What a test must leave as it found it: every ``SVCREST_*`` environment variable (and
    the others svcrest names), and the switches ``svcrest serve`` flips for the whole
    process: the access log, the start method of ``multiprocessing`` (``--reload``) and the
    root logger (``--log-format json``)."""
    state: dict[str, object] = {k: v for k, v in os.environ.items() if k.startswith("SVCREST_")}
    for name in _OTHER_ENV:
        state[name] = os.environ.get(name)
    root = logging.getLogger()
    state["ACCESS_LOG.on"] = ACCESS_LOG.on
    state["multiprocessing start method"] = multiprocessing.get_start_method(allow_none=True)
    state["root logger level"] = root.level
    # pytest's own capturing handlers change between a test's phases: left out.
    state["root logger handlers"] = [
        handler for handler in root.handlers if type(handler).__module__ != "_pytest.logging"
    ]
    return state


def _shown(state: dict[str, object], name: str) -> str:
    return repr(state[name]) if name in state else "(unset)"


@pytest.fixture(autouse=True)
def process_state_kept() -> Iterator[None]:
    """Fails a test that leaves process-wide state changed (:func:`process_state`), naming
    each change with its value before and after. ``svcrest serve`` run in-process sets
    environment variables for its workers and turns the access log on for the whole
    process: left behind, they would change every later test (with the access log on, each
    request runs the naming the access log needs; a later ``serve`` or site would read the
    variables). A test that serves in-process puts them back with ``monkeypatch``
    (``tests.cli_run.keep_serve_state``)."""
    before = process_state()
    yield
    after = process_state()
    if after != before:
        changed = [
            f"{name}: {_shown(before, name)} -> {_shown(after, name)}"
            for name in sorted(before.keys() | after.keys())
            if before.get(name, _UNSET) != after.get(name, _UNSET)
        ]
        pytest.fail("the test left process state changed: " + "; ".join(changed), pytrace=False)


#: Seconds the processes a test run leaves have to end by themselves once every fixture is
#: torn down: a PostgreSQL relay nobody connected to waits ``FIRST_CLIENT`` seconds.
LEFT_GRACE: Final = FIRST_CLIENT + 5.0


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--left-grace``: :data:`LEFT_GRACE` for one run (a test of the check runs pytest with
    less)."""
    parser.addoption(
        "--left-grace",
        type=float,
        default=LEFT_GRACE,
        help="seconds the processes a test run leaves have to end by themselves",
    )


@pytest.fixture(scope="session", autouse=True)
def no_process_left(
    pytestconfig: pytest.Config,
) -> Iterator[dict[tuple[int, int], str]]:
    """Fails the run when a process it started is still running at its end, after every
    other fixture is torn down (and a grace time, :data:`LEFT_GRACE`): a server, or a worker
    of one, that a test did not stop with its whole process group would otherwise keep its
    port, and answer a later test's requests in place of the server that test started. The
    pytest process becomes a child subreaper first, so that an orphaned worker stays a
    descendant of it instead of passing to init. Yields the ledger
    :func:`processes_noted` fills: each process seen (its id and start time) to the test
    after which it was first seen. What is left is killed (with its process group), then
    named."""
    become_subreaper()
    seen: dict[tuple[int, int], str] = {}
    yield seen
    deadline = time.monotonic() + float(pytestconfig.getoption("left_grace"))
    left = descendants()
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = descendants()
    if not left:
        return
    end_processes([pid for pid, _start in left])
    named = [
        f"{key[0]} `{command}` (first seen after {seen.get(key, 'the last test')})"
        for key, command in sorted(left.items())
    ]
    pytest.fail("processes the test run started are still running: " + "; ".join(named))


@pytest.fixture(autouse=True)
def processes_noted(
    request: pytest.FixtureRequest, no_process_left: dict[tuple[int, int], str]
) -> Iterator[None]:
    """Notes the processes running after each test (:func:`no_process_left` names, for what
    the run leaves, the test that started it)."""
    yield
    for key in descendants():
        no_process_left.setdefault(key, request.node.nodeid)


@pytest.fixture(params=ADAPTERS)
def adapter(request: pytest.FixtureRequest) -> str:
    """Each HTTP-level test runs once per adapter."""
    return str(request.param)


@pytest.fixture
def client_for(adapter: str) -> Iterator[Callable[..., SiteClient]]:
    """A factory of SiteClients for the current adapter; all are closed at the end."""
    made: list[SiteClient] = []

    def make(app: App, base_url: str | None = None) -> SiteClient:
        client = SiteClient(app, adapter, base_url)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def raw_request(
    app: App, adapter: str, method: str, path: str, headers: list[tuple[bytes, bytes]]
) -> tuple[int, list[tuple[str, str]], bytes]:
    """Send header bytes no HTTP client would (binary, non-ASCII) straight to an adapter."""
    if adapter == "asgi":
        sent: list[MutableMapping[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "method": method,
            "path": path,
            "query_string": b"",
            "headers": [(b"host", b"127.0.0.1:8000"), *headers],
            "scheme": "http",
            "server": ("127.0.0.1", 8000),
            "client": ("127.0.0.1", 5000),
        }
        asyncio.run(app(scope, receive, send))
        start, body = sent[0], sent[1]
        lines = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in start["headers"]]
        return start["status"], lines, body["body"]
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "wsgi.url_scheme": "http",
        "HTTP_HOST": "127.0.0.1:8000",
    }
    for name, value in headers:
        environ["HTTP_" + name.decode().upper().replace("-", "_")] = value.decode("latin-1")
    status: list[str] = []
    result: list[tuple[str, str]] = []

    def start_response(line: str, header_list: list[tuple[str, str]]) -> None:
        status.append(line)
        result.extend(header_list)

    body_parts = app.wsgi(environ, start_response)
    return int(status[0].split()[0]), result, b"".join(body_parts)


class Clock:
    """A settable clock (Unix seconds) for ``App(clock=...)`` and the auth services."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the session, started on first use and stopped at the end.

    When it cannot start, the tests that need it skip with the reason, except under CI
    (``CI`` set), where they fail: CI must run them.
    """
    try:
        import psycopg  # noqa: F401 - the driver of the PostgreSQL store
    except ImportError as exc:
        reason = f"psycopg is not installed: {exc}"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        server = PostgresServer()
    except Exception as exc:  # initdb/pg_ctl missing or failing
        reason = f"PostgreSQL cannot start: {exc}"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    yield server
    server.stop()


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    """The store engine of the test (store, auth and demo suites run on both)."""
    return str(request.param)


@pytest.fixture
def store_location(engine: str, request: pytest.FixtureRequest) -> str | None:
    """A fresh, empty store of the current engine: None (in-memory SQLite) or the URL of a
    new PostgreSQL schema."""
    if engine == "sqlite":
        return None
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.new_schema()
