"""The RSGI adapter (granian's own interface) in process, with a scope and a protocol shaped
as granian's: the same answers as the ASGI adapter, the header lines read on demand, request
bodies (the size limit, the body deadline), change-feed streams (ending when the client
leaves and when the server stops), the worker's start and end, a WebSocket refused, and a
wrapped ASGI site app. Real granian processes: tests/e2e (``granian-rsgi`` cases)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import signal
import time
from collections.abc import AsyncIterator, Iterator, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest

from svcrest import App
from svcrest.serve.bodies import ENV_BODY_TIMEOUT
from svcrest.serve.rsgi import RSGIScopeHeaders, _request, rsgi_del, rsgi_init
from svcrest.serve.streams import STOPPING_COMMENT
from tests.conftest import raw_request
from tests.rest.test_store_collection import TASKS, Site
from tests.serve.conftest import echo_site

ECHO = "/svc-json/t/v1/echo"
FAST = "/svc-json/t/v1/fast"
TIMEOUT = 0.4
BODY = b'{"word": "hello", "n": 12345}'


class FakeHeaders:
    """An RSGI scope's header lines as granian hands them over (lower-case names)."""

    def __init__(self, lines: Sequence[tuple[str, str]]) -> None:
        self.lines = [(name.lower(), value) for name, value in lines]
        self.listed = 0

    def __contains__(self, key: str) -> bool:
        return any(name == key for name, _ in self.lines)

    def get_all(self, key: str) -> list[str]:
        return [value for name, value in self.lines if name == key]

    def items(self) -> list[tuple[str, str]]:
        self.listed += 1
        return list(self.lines)


@dataclass
class FakeScope:
    method: str = "GET"
    path: str = "/"
    query_string: str = ""
    lines: Sequence[tuple[str, str]] = (("host", "127.0.0.1:8000"),)
    proto: str = "http"
    scheme: str = "http"
    client: str = "127.0.0.1:5000"
    server: str = "127.0.0.1:8000"
    http_version: str = "1.1"
    authority: str | None = None
    headers: FakeHeaders = field(init=False)

    def __post_init__(self) -> None:
        self.headers = FakeHeaders(self.lines)


class FakeTransport:
    def __init__(self, protocol: FakeProtocol) -> None:
        self.protocol = protocol

    async def send_bytes(self, data: bytes) -> None:
        if self.protocol.left.is_set():
            raise RuntimeError("the client left")  # as granian's RSGIProtocolClosed
        self.protocol.sent.put_nowait(data)


class FakeProtocol:
    """An RSGI HTTP protocol: the body comes in ``parts`` (``pause`` seconds before each;
    never, when ``silent``); what the adapter answers is recorded."""

    def __init__(
        self, parts: Sequence[bytes] = (), pause: float = 0.0, silent: bool = False
    ) -> None:
        self.parts = list(parts)
        self.pause = pause
        self.silent = silent
        self.read = 0
        self.status = 0
        self.headers: list[tuple[str, str]] = []
        self.body = b""
        self.streamed = False
        self.sent: asyncio.Queue[bytes] = asyncio.Queue()
        self.left = asyncio.Event()
        self.closed: int | None = None

    async def __call__(self) -> bytes:
        return b"".join([part async for part in self])

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._parts()

    async def _parts(self) -> AsyncIterator[bytes]:
        for part in self.parts:
            if self.silent:
                await asyncio.Event().wait()
            if self.pause:
                await asyncio.sleep(self.pause)
            self.read += 1
            yield part

    async def client_disconnect(self) -> None:
        await self.left.wait()

    def response_bytes(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def response_stream(self, status: int, headers: list[tuple[str, str]]) -> FakeTransport:
        self.status, self.headers, self.streamed = status, headers, True
        return FakeTransport(self)

    def close(self, status: int) -> None:
        self.closed = status

    def lines(self) -> dict[str, str]:
        return {name.lower(): value for name, value in self.headers}


def serve(app: App, scope: FakeScope, protocol: FakeProtocol | None = None) -> FakeProtocol:
    """Serve one request through the App's RSGI callable; the protocol, answered."""
    used = protocol or FakeProtocol()

    async def go() -> None:
        await app.__rsgi__(scope, used)

    asyncio.run(go())
    return used


def post(path: str, body: bytes, content_type: str = "application/json", **kw: Any) -> Any:
    lines = [("host", "127.0.0.1:8000"), ("content-type", content_type)]
    if kw.pop("chunked", False):
        lines.append(("transfer-encoding", "chunked"))
    else:
        lines.append(("content-length", str(kw.pop("length", len(body)))))
    return FakeScope("POST", path, lines=lines)


@pytest.fixture
def app() -> Iterator[tuple[App, list[Any]]]:
    """A site with an echo route (the list holds the bodies its callback saw) and a GET
    answering its ``X-Dup`` header."""
    site, seen = echo_site(lambda request: {"dup": request.get_header("x-dup")})
    yield site, seen
    site.store.close()


# -- the same answers as over ASGI -------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "lines"),
    [
        ("GET", FAST, []),
        ("HEAD", FAST, []),
        ("GET", FAST, [("origin", "http://example.com"), ("x-dup", "a"), ("x-dup", "b")]),
        ("OPTIONS", ECHO, []),
        ("GET", "/svc-json/t/v1/nothing", []),
        ("GET", "/svc-json/", [("accept-encoding", "gzip")]),
        ("GET", "/login", []),
    ],
    ids=["get", "head", "cors-and-a-name-twice", "options", "404", "index-gzip", "page"],
)
def test_an_answer_is_the_asgi_adapters(
    app: tuple[App, list[Any]], method: str, path: str, lines: list[tuple[str, str]]
) -> None:
    site, _ = app
    raw = [(name.encode(), value.encode()) for name, value in lines]
    status, asgi_lines, body = raw_request(site, "asgi", method, path, raw)
    answered = serve(site, FakeScope(method, path, lines=[("host", "127.0.0.1:8000"), *lines]))

    def comparable(found: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return [(name.lower(), value) for name, value in found if name.lower() != "x-request-id"]

    assert (answered.status, answered.body) == (status, body)
    assert comparable(answered.headers) == comparable(asgi_lines)
    if method == "HEAD":
        assert answered.body == b"" and int(answered.lines()["content-length"]) > 0


def test_a_name_sent_twice_reaches_the_route_joined(app: tuple[App, list[Any]]) -> None:
    site, _ = app
    lines = [("host", "127.0.0.1:8000"), ("x-dup", "a"), ("x-dup", "b")]
    answered = serve(site, FakeScope("GET", FAST, lines=lines))
    assert (answered.status, json.loads(answered.body)) == (200, {"dup": "a, b"})


def test_the_clients_request_id_is_kept(app: tuple[App, list[Any]]) -> None:
    site, _ = app
    lines = [("host", "127.0.0.1:8000"), ("x-request-id", "edge-42")]
    answered = serve(site, FakeScope("GET", FAST, lines=lines))
    assert answered.lines()["x-request-id"] == "edge-42"


def test_header_lines_are_read_from_the_scope_on_demand() -> None:
    raw = FakeHeaders(
        [("host", "h"), ("cookie", "a=1"), ("cookie", "b=2"), ("accept", "x"), ("accept", "y")]
    )
    headers = RSGIScopeHeaders(raw)
    assert headers.get_joined("host") == "h"
    assert headers.get_joined("origin") is None
    assert headers.has_any(frozenset({"origin", "host"})) is True
    assert headers.has_any(frozenset({"origin"})) is False
    assert raw.listed == 0  # PERF: single lines need no listing
    assert headers.get_joined("cookie") == "a=1; b=2"
    assert headers.get_joined("accept") == "x, y"
    assert raw.listed == 1
    assert headers.get_list("accept") == ["x", "y"]
    assert headers.items_list() == raw.lines
    assert raw.listed == 1  # listed once


@pytest.mark.parametrize(
    ("scope", "host", "client"),
    [
        (FakeScope(), "127.0.0.1", "127.0.0.1"),
        (FakeScope(lines=[("host", "Example.COM:8080")]), "example.com", "127.0.0.1"),
        (FakeScope(lines=[], authority="api.example.com"), "api.example.com", "127.0.0.1"),
        (FakeScope(lines=[], client="[::1]:5000", server="[::1]:8000"), "::1", "::1"),
    ],
    ids=["host", "host-port", "http2-authority", "ipv6-no-host"],
)
def test_the_host_and_client_come_from_the_scope(scope: FakeScope, host: str, client: str) -> None:
    http, sent_id = _request(scope)
    assert (http.host, http.client, sent_id) == (host, client, "")


def test_the_adapter_sets_every_request_field() -> None:
    """The RSGI adapter sets the request's fields one by one (no generated ``__init__``) and
    keeps the scope's lines as ``RSGIScopeHeaders(lines)`` does: a field added to
    ``HttpRequest`` and not set here fails."""
    scope = FakeScope(
        "get",
        "/svc-json/f/v1/see",
        "q=1",
        lines=[("host", "H.example:8443"), ("x-request-id", "r-7")],
        scheme="https",
        client="10.1.2.3:5000",
    )
    http, sent_id = _request(scope)
    fields = {item.name: getattr(http, item.name) for item in dataclasses.fields(http)}
    headers = fields.pop("headers")
    assert (fields, sent_id) == (
        {
            "method": "GET",
            "path": "/svc-json/f/v1/see",
            "query_string": "q=1",
            "body": b"",
            "scheme": "https",
            "host": "h.example",
            "client": "10.1.2.3",
        },
        "r-7",
    )
    assert type(headers) is RSGIScopeHeaders
    assert (headers._raw, headers._listed_lines) == (scope.headers, None)
    assert headers.items_list() == RSGIScopeHeaders(FakeHeaders(scope.lines)).items_list()


def test_a_websocket_is_closed(app: tuple[App, list[Any]]) -> None:
    site, _ = app
    scope = FakeScope("GET", "/ws")
    scope.proto = "websocket"
    assert serve(site, scope).closed == 1000


# -- request bodies ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parts", "pause"),
    [([BODY], 0.0), ([BODY[:5], BODY[5:20], BODY[20:]], 0.0), ([BODY[:5], BODY[5:]], 0.05)],
    ids=["at-once", "in-parts", "in-parts-after-waiting"],
)
def test_a_body_is_read_whole(app: tuple[App, list[Any]], parts: list[bytes], pause: float) -> None:
    site, seen = app
    answered = serve(site, post(ECHO, BODY), FakeProtocol(parts, pause))
    assert (answered.status, json.loads(answered.body)) == (
        200,
        {"echo": {"word": "hello", "n": 12345}},
    )
    assert seen == [{"word": "hello", "n": 12345}]


TOO_LARGE = {
    "code": "rest_request_too_large",
    "message": "The request body is too large.",
    "data": {"status": 413, "max_body_size": 10},
}


def test_a_body_announced_longer_than_allowed_is_413_unread(app: tuple[App, list[Any]]) -> None:
    site, seen = app
    site.max_body_size = 10
    protocol = serve(site, post(ECHO, BODY), FakeProtocol([BODY]))
    assert (protocol.status, json.loads(protocol.body)) == (413, TOO_LARGE)
    assert (protocol.read, seen) == (0, [])


@pytest.mark.parametrize("how", ["chunked", "a-lying-length"])
def test_a_body_passing_the_limit_is_413_as_soon_as_it_does(
    app: tuple[App, list[Any]], how: str
) -> None:
    site, seen = app
    site.max_body_size = 10
    scope = post(ECHO, BODY, chunked=True) if how == "chunked" else post(ECHO, BODY, length=5)
    protocol = serve(site, scope, FakeProtocol([BODY[:8], BODY[8:16], BODY[16:]]))
    assert (protocol.status, json.loads(protocol.body)) == (413, TOO_LARGE)
    assert (protocol.read, seen) == (2, [])  # the third part is never read


def test_invalid_json_is_a_400_in_the_rest_shape(app: tuple[App, list[Any]]) -> None:
    site, seen = app
    protocol = serve(site, post(ECHO, b"{bad"), FakeProtocol([b"{bad"]))
    answer = json.loads(protocol.body)
    assert (protocol.status, answer["code"], answer["data"]["status"]) == (
        400,
        "rest_invalid_json",
        400,
    )
    assert seen == []


def test_a_silent_rest_body_is_answered_408_and_closed(
    app: tuple[App, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_BODY_TIMEOUT, str(TIMEOUT))
    site, seen = app
    started = time.monotonic()
    protocol = serve(site, post(ECHO, BODY), FakeProtocol([BODY], silent=True))
    waited = time.monotonic() - started
    assert protocol.status == 408
    assert ("Connection", "close") in protocol.headers
    assert json.loads(protocol.body) == {
        "code": "svc_body_timeout",
        "message": "The request body was not received within 0.4 seconds.",
        "data": {"status": 408, "body_timeout": 0.4},
    }
    assert TIMEOUT <= waited < TIMEOUT + 2, waited
    assert seen == []


def test_a_silent_page_body_is_answered_a_short_408(
    app: tuple[App, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_BODY_TIMEOUT, str(TIMEOUT))
    site, _ = app
    scope = post("/login", b"log=a", "application/x-www-form-urlencoded")
    protocol = serve(site, scope, FakeProtocol([b"log=a"], silent=True))
    assert protocol.status == 408
    assert ("Connection", "close") in protocol.headers
    assert ("Content-Type", "text/plain; charset=UTF-8") in protocol.headers
    assert protocol.body == b"The request body was not received within 0.4 seconds."


# -- change-feed streams -----------------------------------------------------------------------


@pytest.fixture
def site() -> Iterator[Site]:
    made = Site(None)
    made.tasks.feed.heartbeat = 0.3
    yield made
    made.app.store.close()


async def _until(protocol: FakeProtocol, marker: bytes, timeout: float = 5.0) -> bytes:
    found = b""
    deadline = time.monotonic() + timeout
    while marker not in found:
        found += await asyncio.wait_for(protocol.sent.get(), max(deadline - time.monotonic(), 0))
    return found


async def _stream(app: App, accept: str) -> tuple[FakeProtocol, asyncio.Task[None]]:
    protocol = FakeProtocol()
    scope = FakeScope(
        "GET", f"{TASKS}/changes", lines=[("host", "127.0.0.1:8000"), ("accept", accept)]
    )
    task = asyncio.ensure_future(app.__rsgi__(scope, protocol))
    while not protocol.streamed:
        await asyncio.sleep(0.01)
    return protocol, task


def test_a_stream_sends_events_as_they_come_and_ends_when_the_client_leaves(site: Site) -> None:
    async def check() -> None:
        protocol, task = await _stream(site.app, "text/event-stream")
        assert protocol.status == 200
        assert protocol.lines()["content-type"] == "text/event-stream"
        assert "content-length" not in protocol.lines()
        assert await _until(protocol, b"\n\n") == b": keep-alive\n\n"
        assert site.app.streams.open == 1
        await asyncio.to_thread(site.seed, "Dune")
        event = await _until(protocol, b"\n\n")
        assert b"event: created" in event and b'"title":"Dune"' in event
        protocol.left.set()
        await asyncio.wait_for(task, 2)
        assert site.app.streams.open == 0  # its slot given back

    asyncio.run(check())


@pytest.mark.parametrize(
    ("accept", "last"),
    [("text/event-stream", STOPPING_COMMENT), ("application/jsonl", None)],
    ids=["sse", "json-lines"],
)
def test_a_stopping_server_ends_a_stream_at_once(
    site: Site, accept: str, last: bytes | None
) -> None:
    async def check() -> None:
        protocol, task = await _stream(site.app, accept)
        await _until(protocol, b"\n")
        site.app.streams.close()
        await asyncio.wait_for(task, 1)
        rest = b""
        while not protocol.sent.empty():
            rest += protocol.sent.get_nowait()
        if last is not None:
            assert rest.endswith(last), rest
        else:
            assert rest.strip(b"\n") == b"", rest
        assert site.app.streams.open == 0

    asyncio.run(check())


def test_the_workers_start_opens_the_streams_and_a_signal_ends_them(
    handlers: list[tuple[int, str]],
) -> None:
    """granian calls ``__rsgi_init__`` with its loop before the loop runs, and
    ``__rsgi_del__`` after it stopped serving."""
    app = App()
    app.streams.close()  # stopped before: the worker's start serves streams again
    loop = asyncio.new_event_loop()
    try:
        assert App.__rsgi_init__ is rsgi_init and App.__rsgi_del__ is rsgi_del
        app.__rsgi_init__(loop)
        assert app.streams.closing is False

        async def check() -> None:
            stopped = app.streams.stopped()
            signal.raise_signal(signal.SIGTERM)
            await asyncio.wait_for(stopped, 1)

        loop.run_until_complete(check())
        assert app.streams.closing is True
        assert handlers == [(signal.SIGTERM, "server")]
        app.streams.reopen()
        app.__rsgi_del__(loop)
        assert app.streams.closing is True
    finally:
        loop.close()


# -- a wrapped ASGI site app -------------------------------------------------------------------


async def _site_app(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
    """Echoes the request's body, the client and a header; ``/parts`` answers in two body
    messages."""
    message = await receive()
    headers = dict(scope["headers"])
    body = orjson.dumps(
        {
            "path": scope["path"],
            "query": scope["query_string"].decode(),
            "client": list(scope["client"]),
            "x": headers.get(b"x-word", b"").decode(),
            "body": message["body"].decode(),
        }
    )
    await send({"type": "http.response.start", "status": 201, "headers": [(b"x-site", b"1")]})
    if scope["path"] == "/parts":
        await send({"type": "http.response.body", "body": body[:5], "more_body": True})
        await send({"type": "http.response.body", "body": body[5:], "more_body": False})
    else:
        await send({"type": "http.response.body", "body": body})


@pytest.mark.parametrize("path", ["/hello", "/parts"], ids=["at-once", "streamed"])
def test_a_wrapped_site_app_answers_outside_the_rest_prefix(path: str) -> None:
    app = App("http://127.0.0.1:8000", site=_site_app)
    try:
        raw = [(b"x-word", b"hi")]
        status, asgi_lines, asgi_body = raw_request(app, "asgi", "GET", path, raw)
        scope = FakeScope("POST", path, "a=1", [("host", "127.0.0.1:8000"), ("x-word", "hi")])
        protocol = FakeProtocol([b"some ", b"body"])
        answered = serve(app, scope, protocol)
        assert answered.status == status == 201

        def comparable(found: list[tuple[str, str]]) -> list[tuple[str, str]]:
            return [(name.lower(), v) for name, v in found if name.lower() != "x-request-id"]

        assert comparable(answered.headers) == comparable(asgi_lines)
        assert ("x-site", "1") in comparable(answered.headers)
        body = answered.body
        while not answered.sent.empty():
            body += answered.sent.get_nowait()
        assert answered.streamed is (path == "/parts")
        assert orjson.loads(body) == {
            "path": path,
            "query": "a=1",
            "client": ["127.0.0.1", 5000],
            "x": "hi",
            "body": "some body",
        }
        if path == "/hello":  # (raw_request reads the first body message only)
            assert orjson.loads(asgi_body)["x"] == "hi"
    finally:
        app.store.close()
