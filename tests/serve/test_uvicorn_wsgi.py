"""The bridge that serves the WSGI interface on uvicorn: answers as ``app.wsgi`` does, the
answered request carried to the access-log line, bodies read only as far as the site
accepts them."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest

import svcrest
from svcrest import App, Request
from svcrest.http.request_id import ACCESS_LOG, LOGGED_REQUEST
from svcrest.serve.uvicorn_wsgi import WSGIBridge

Message = MutableMapping[str, Any]


@pytest.fixture(autouse=True)
def _access_log_names_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """As under ``svcrest serve`` with its access log on."""
    monkeypatch.setattr(ACCESS_LOG, "on", True)


def _site(tmp_path: Path) -> App:
    # A database file: uvicorn's environ claims several processes (wsgi.multiprocess).
    app = App("http://example.org", max_body_size=100, store=str(tmp_path / "s.db"))

    def echo(request: Request) -> dict[str, Any]:
        return {"size": len(request.raw_body)}

    app.register_rest_route(
        "t/v1",
        r"/items/(?P<id>\d+)",
        {"methods": ["GET", "POST"], "callback": echo, "permission_callback": svcrest.public},
    )
    return app


def _scope(method: str, path: str, headers: list[tuple[bytes, bytes]]) -> Message:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"example.org"), *headers],
        "client": ("127.0.0.1", 5000),
        "server": ("example.org", 80),
    }


class Exchange:
    """One request through the bridge: the chunks it was given, what it sent, and what the
    access log would have seen when the answer's head was sent."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = list(chunks)
        self.received = 0
        self.sent: list[Message] = []
        self.logged: tuple[str, str, int] | None = None

    async def receive(self) -> Message:
        self.received += 1
        if not self.chunks:
            return {"type": "http.disconnect"}
        part = self.chunks.pop(0)
        return {"type": "http.request", "body": part, "more_body": bool(self.chunks)}

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            ctx = LOGGED_REQUEST.get()
            assert ctx is not None
            self.logged = (ctx.request_id, ctx.matched_route, ctx.user.id)
        self.sent.append(message)


def _exchange(
    bridge: WSGIBridge,
    method: str,
    path: str,
    headers: list[tuple[bytes, bytes]],
    chunks: list[bytes],
) -> tuple[Exchange, int, dict[bytes, bytes], bytes]:
    exchange = Exchange(chunks)
    asyncio.run(bridge(_scope(method, path, headers), exchange.receive, exchange.send))
    start, body = exchange.sent
    assert body["more_body"] is False
    return exchange, start["status"], dict(start["headers"]), body["body"]


def test_a_get_is_answered_and_named_for_the_access_log(tmp_path: Path) -> None:
    bridge = WSGIBridge(_site(tmp_path).wsgi)
    exchange, status, headers, body = _exchange(
        bridge, "GET", "/svc-json/t/v1/items/7", [(b"x-request-id", b"edge-1")], [b""]
    )
    assert (status, body) == (200, b'{"size":0}')
    assert headers[b"x-request-id"] == b"edge-1"
    assert headers[b"content-type"] == b"application/json; charset=UTF-8"
    assert exchange.logged == ("edge-1", r"/t/v1/items/(?P<id>\d+)", 0)


def test_a_body_in_several_parts_reaches_the_site(tmp_path: Path) -> None:
    bridge = WSGIBridge(_site(tmp_path).wsgi)
    headers = [(b"content-type", b"text/plain"), (b"content-length", b"100")]
    exchange, status, _, body = _exchange(
        bridge, "POST", "/svc-json/t/v1/items/7", headers, [b"a" * 60, b"b" * 40]
    )
    assert (status, body) == (200, b'{"size":100}')
    assert exchange.received == 2


def test_an_announced_body_past_the_limit_is_not_read(tmp_path: Path) -> None:
    bridge = WSGIBridge(_site(tmp_path).wsgi)
    headers = [(b"content-type", b"text/plain"), (b"content-length", b"101")]
    exchange, status, _, _ = _exchange(
        bridge, "POST", "/svc-json/t/v1/items/7", headers, [b"a" * 101]
    )
    assert status == 413
    assert exchange.received == 0


def test_a_chunked_body_is_read_up_to_the_limit_and_one_byte(tmp_path: Path) -> None:
    bridge = WSGIBridge(_site(tmp_path).wsgi)
    chunks = [b"a" * 60, b"b" * 60, b"c" * 60, b"d" * 60]
    exchange, status, _, _ = _exchange(
        bridge, "POST", "/svc-json/t/v1/items/7", [(b"content-type", b"text/plain")], chunks
    )
    assert status == 413
    assert exchange.received == 2  # 120 bytes: past 101, the rest is never asked for
    exchange, status, _, body = _exchange(
        bridge, "POST", "/svc-json/t/v1/items/7", [(b"content-type", b"text/plain")], [b"x" * 99]
    )
    assert (status, body) == (200, b'{"size":99}')


def test_lifespan_events_are_answered(tmp_path: Path, handlers: list[tuple[int, str]]) -> None:
    bridge = WSGIBridge(_site(tmp_path).wsgi)
    events = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[Message] = []

    async def receive() -> Message:
        return events.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(bridge({"type": "lifespan"}, receive, send))
    assert sent == [{"type": "lifespan.startup.complete"}, {"type": "lifespan.shutdown.complete"}]


def test_a_signal_ends_the_bridged_sites_long_polls_then_the_servers_handler_runs(
    tmp_path: Path, handlers: list[tuple[int, str]]
) -> None:
    """The bridge's lifespan does what the App's does: at the startup the site's streams
    serve again and SIGTERM closes them (its waiting long-polls answer at once) before
    uvicorn's handler runs; the shutdown closes them too."""
    app = _site(tmp_path)
    app.streams.close()  # stopped before: the startup serves streams again
    bridge = WSGIBridge(app.wsgi)

    async def check() -> None:
        inbox: asyncio.Queue[Message] = asyncio.Queue()
        outbox: asyncio.Queue[Message] = asyncio.Queue()
        running = asyncio.ensure_future(bridge({"type": "lifespan"}, inbox.get, outbox.put))
        await inbox.put({"type": "lifespan.startup"})
        assert await asyncio.wait_for(outbox.get(), 2) == {"type": "lifespan.startup.complete"}
        assert app.streams.closing is False
        stopped = app.streams.stopped()
        signal.raise_signal(signal.SIGTERM)
        await asyncio.wait_for(stopped, 1)
        assert app.streams.closing is True
        assert handlers == [(signal.SIGTERM, "server")]
        app.streams.reopen()
        await inbox.put({"type": "lifespan.shutdown"})
        assert await asyncio.wait_for(outbox.get(), 2) == {"type": "lifespan.shutdown.complete"}
        assert app.streams.closing is True
        await asyncio.wait_for(running, 1)

    asyncio.run(check())


def test_a_body_not_sent_in_time_is_answered_408(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SVCREST_BODY_TIMEOUT", "0.2")
    bridge = WSGIBridge(_site(tmp_path).wsgi)
    headers = [(b"content-type", b"text/plain"), (b"content-length", b"50")]
    sent: list[Message] = []
    parts = [{"type": "http.request", "body": b"a" * 10, "more_body": True}]

    async def receive() -> Message:
        if parts:
            return parts.pop(0)
        await asyncio.sleep(5)  # the rest never comes
        raise AssertionError("waited past the time-out")

    async def send(message: Message) -> None:
        sent.append(message)

    scope = _scope("POST", "/svc-json/t/v1/items/7", headers)
    asyncio.run(bridge(scope, receive, send))
    start, body = sent
    assert start["status"] == 408
    assert json.loads(body["body"]) == {
        "code": "svc_body_timeout",
        "message": "The request body was not received within 0.2 seconds.",
        "data": {"status": 408, "body_timeout": 0.2},
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [(b"12", 12), (b" 7 ", 7), (b"\xc2\xb2", None), (b"\xb2", None), (b"1e3", None), (b"", None)],
)
def test_the_announced_length_is_ascii_digits_only(value: bytes, expected: int | None) -> None:
    """``²`` (latin-1 ``\\xb2``) is a digit to ``str.isdigit`` but not to ``int()``."""
    from svcrest.serve.uvicorn_wsgi import _length

    scope = {"headers": [(b"host", b"a"), (b"Content-Length", value)]}
    assert _length(scope) == expected
