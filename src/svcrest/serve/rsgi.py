"""The RSGI adapter: the same site on granian's own interface (``granian --interface rsgi``).

RSGI hands a request over as a scope object (its header lines a mapping in the server's own
memory) and a protocol object: the body is awaited from it, the answer sent with one call
(``response_bytes``) or as a stream (``response_stream``), with no message dictionaries on
the way (what an ASGI server builds for every request). Each HTTP request is one call of
:func:`svcrest.site.respond.respond`, as on ASGI and WSGI, and gets the same answer.

What the ASGI adapter does, this one does the same way: a request body longer than the
site's ``max_body_size`` is refused from its ``Content-Length`` before reading (413), or as
soon as the stream passes the limit; the whole body has ``body_timeout()`` seconds to come
(408 after, the connection closed); a change feed's stream is sent chunk by chunk and ends
when its chunks end, when the client leaves, or when the server stops
(:func:`svcrest.serve.streams.pump_stream`); the worker's start (``__rsgi_init__``) opens the
site's streams and makes SIGTERM and SIGINT end them first, its end (``__rsgi_del__``) ends
them. A request outside the REST prefix for a wrapped ASGI site app goes to that app through
a small bridge (:func:`forward_to_asgi_site`).

Granian leaves out of the scope's lines a header value that is not text (bytes beyond
ASCII); the ASGI interface hands those over as Latin-1.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Protocol

from svcrest.http.exchange import (
    HttpRequest,
    HttpResponse,
    HttpStream,
    headers_announce_body,
    known_host_name,
    remembered_host_name,
    usual_method,
)
from svcrest.http.headers import Headers, Lines, OnDemandHeaders
from svcrest.http.streams import StreamSlots
from svcrest.instances import without_init
from svcrest.serve.bodies import body_timeout, body_timeout_error, declared_too_long
from svcrest.serve.streams import close_on_signals, pump_stream
from svcrest.site.host import ASGIApp, SiteHost
from svcrest.site.respond import SiteForward, respond

__all__ = [
    "RSGIHeaderMap",
    "RSGIProtocol",
    "RSGIScope",
    "RSGIScopeHeaders",
    "client_host",
    "forward_to_asgi_site",
    "handle_rsgi",
    "rsgi_del",
    "rsgi_init",
]


class RSGIHeaderMap(Protocol):
    """The header lines of an RSGI scope (granian's ``RSGIHeaders``): lower-case names."""

    def __contains__(self, key: str) -> bool: ...
    def get_all(self, key: str) -> list[str]: ...
    def items(self) -> list[tuple[str, str]]: ...


class RSGIScope(Protocol):
    """An RSGI connection scope (the fields this adapter reads)."""

    proto: str
    method: str
    path: str
    query_string: str
    scheme: str
    client: str
    server: str
    http_version: str
    authority: str | None

    @property
    def headers(self) -> RSGIHeaderMap: ...


class RSGIStreamTransport(Protocol):
    """What ``response_stream`` gives: the stream's body is sent through it."""

    async def send_bytes(self, data: bytes) -> None: ...


class RSGIProtocol(Protocol):
    """An RSGI HTTP protocol (the calls this adapter makes)."""

    def __call__(self) -> Awaitable[bytes]: ...
    def __aiter__(self) -> Any: ...
    def client_disconnect(self) -> Awaitable[None]: ...
    def response_bytes(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None: ...
    def response_stream(
        self, status: int, headers: list[tuple[str, str]]
    ) -> RSGIStreamTransport: ...


_CLOSE = ("Connection", "close")


class RSGIScopeHeaders(OnDemandHeaders):
    """The header lines of an RSGI scope, read from it on demand.

    PERF: a look-up (``get_joined``, ``has_any``) asks the server's own map (a call in
    Rust); the lines are listed into Python strings and indexed only the first time
    something needs them all, changes them, or a name came twice (its lines are joined)
    (see :class:`~svcrest.http.headers.OnDemandHeaders`).
    """

    __slots__ = ("_raw",)

    def __init__(self, raw: RSGIHeaderMap) -> None:
        """The header lines of ``raw``, a scope's ``headers`` (read, not copied)."""
        self._listed_lines = None
        self._raw: RSGIHeaderMap | None = raw

    def _list_lines(self) -> Lines:
        raw = self._raw
        assert raw is not None  # listed once
        self._raw = None
        return raw.items(), None  # Headers indexes them when a look-up needs it

    def get_joined(self, name: str) -> str | None:
        """The value of ``name`` (lower case), or None (see :meth:`Headers.get_joined`)."""
        raw = self._raw
        if raw is None:
            return self.listed().get_joined(name)
        values = raw.get_all(name)
        if not values:
            return None
        if len(values) == 1:
            return values[0]
        return self.listed().get_joined(name)  # joined as Headers joins them

    def has_any(self, names: frozenset[str]) -> bool:
        """Whether a line of any of ``names`` (lower case) is there."""
        raw = self._raw
        if raw is None:
            return self.listed().has_any(names)
        # PERF: a loop, not any() over a generator (two names, usually)
        for name in names:  # noqa: SIM110
            if name in raw:
                return True
        return False


def _address(value: str) -> tuple[str, int]:
    """``host`` and ``port`` of an RSGI address (``"127.0.0.1:5000"``, ``"[::1]:5000"``)."""
    host, _, port = value.rpartition(":")
    if host[:1] == "[" and host[-1:] == "]":
        host = host[1:-1]
    return host, int(port) if port.isdigit() else 0


def client_host(value: str) -> str:
    """The host of an RSGI client address, ``"127.0.0.1:5000"`` → ``"127.0.0.1"``,
    ``"[::1]:5000"`` → ``"::1"`` (PERF: one slice for the usual IPv4 one)."""
    host = value[: value.rfind(":")] if ":" in value else value
    return host[1:-1] if host[:1] == "[" else host


def _request(scope: RSGIScope) -> tuple[HttpRequest, str]:
    """The request of an RSGI ``scope`` and the ``X-Request-Id`` its client sent ("" for
    none). The one place an :class:`HttpRequest` is made from an RSGI scope."""
    # PERF: the lines kept as ``RSGIScopeHeaders.__init__`` keeps them, without the class call
    # and its frame; tests/serve/test_rsgi.py reads them back.
    headers = without_init(RSGIScopeHeaders)
    headers._listed_lines = None
    headers._raw = scope.headers
    host_line = headers.get_joined("host") or scope.authority
    if host_line is not None:
        # PERF: a Host value seen before, without a Python call
        host_value = known_host_name(host_line) or remembered_host_name(host_line)
    else:
        host_value = _address(scope.server)[0].lower()
    method = scope.method
    # PERF: every field set here, in field order, as the ASGI adapter sets them (no generated
    # ``__init__`` frame: an RSGI GET 78,047 → 76,576 instructions with the lines' object
    # above, bench/instructions.py); tests/serve/test_rsgi.py reads every field back.
    http = without_init(HttpRequest)
    http.method = usual_method(method) or str(method).upper()
    http.path = scope.path
    http.query_string = scope.query_string
    http.headers = headers
    http.body = b""
    http.scheme = scope.scheme
    http.host = host_value
    http.client = client_host(scope.client)
    return http, headers.get_joined("x-request-id") or ""


def _body_reader(
    headers: Headers, protocol: RSGIProtocol, limit: int
) -> Callable[[], Awaitable[bytes | None]]:
    """Reads the body once: its bytes, or None when it is longer than ``limit``
    (SECURITY: refused from Content-Length before reading, or as soon as the stream passes
    the limit); raises ``BodyReadError`` (408) when the whole body has not come within the
    body deadline (``svcrest.serve.bodies``)."""
    declared = headers.get_joined("content-length")

    async def read() -> bytes | None:
        if declared_too_long(declared, limit):
            return None
        seconds = body_timeout()
        try:
            async with asyncio.timeout(seconds):
                return await _receive_body(protocol, limit)
        except TimeoutError:
            raise body_timeout_error(seconds) from None

    return read


async def _receive_body(protocol: RSGIProtocol, limit: int) -> bytes | None:
    """The body's bytes as they come, None as soon as they pass ``limit``."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in protocol:
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def _left(protocol: RSGIProtocol) -> None:
    """Return when the client has left. (A coroutine: granian's own awaitable is no asyncio
    future that ``asyncio.gather`` could wait for.)"""
    await protocol.client_disconnect()


def _stream_lines(answer: HttpStream) -> list[tuple[str, str]]:
    """The header lines of a stream: no ``Content-Length`` (the body's end ends it)."""
    lines = answer.safe_headers()
    if lines and lines[-1][0] == "Content-Length":
        lines.pop()
    return lines


async def _send_stream(
    answer: HttpStream, protocol: RSGIProtocol, slots: StreamSlots | None
) -> None:
    """Send ``answer``'s chunks as they come (the rule of
    :func:`svcrest.serve.streams.pump_stream`); the body ends when this returns."""
    chunks = answer.chunks
    try:
        transport = protocol.response_stream(answer.status, _stream_lines(answer))
        tail = await pump_stream(answer, transport.send_bytes, _left(protocol), slots)
        if tail:
            with contextlib.suppress(Exception):  # the client may have left meanwhile
                await transport.send_bytes(tail)
    finally:
        await chunks.aclose()


def _asgi_scope(scope: RSGIScope) -> dict[str, Any]:
    """The ASGI HTTP scope of an RSGI one (for a wrapped ASGI site app)."""
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": scope.http_version,
        "method": scope.method,
        "scheme": scope.scheme,
        "path": scope.path,
        "raw_path": scope.path.encode("utf-8"),
        "query_string": scope.query_string.encode("latin-1", "replace"),
        "root_path": "",
        "headers": [
            (name.encode("latin-1"), value.encode("latin-1", "replace"))
            for name, value in scope.headers.items()
        ],
        "client": _address(scope.client),
        "server": _address(scope.server),
        "extensions": {},
    }


async def forward_to_asgi_site(
    site: ASGIApp,
    lines: tuple[tuple[str, str], ...],
    scope: RSGIScope,
    protocol: RSGIProtocol,
) -> None:
    """Hand a non-REST request to the wrapped ASGI site app over RSGI, adding ``lines`` to
    its answer: its body is handed over whole, its answer sent at once when it comes in one
    message, else as a stream."""
    state: dict[str, Any] = {}
    received = False

    async def receive() -> MutableMapping[str, Any]:
        nonlocal received
        if not received:
            received = True
            return {"type": "http.request", "body": await protocol(), "more_body": False}
        await protocol.client_disconnect()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        kind = message.get("type")
        if kind == "http.response.start":
            state["status"] = int(message["status"])
            state["headers"] = [
                *(
                    (bytes(name).decode("latin-1"), bytes(value).decode("latin-1"))
                    for name, value in message.get("headers", [])
                ),
                *lines,
            ]
            return
        if kind != "http.response.body" or "status" not in state:
            return
        body = bytes(message.get("body", b""))
        transport = state.get("transport")
        if transport is None and not message.get("more_body", False):
            protocol.response_bytes(state["status"], state["headers"], body)
            state["transport"] = False  # answered
            return
        if transport is None:
            transport = state["transport"] = protocol.response_stream(
                state["status"], state["headers"]
            )
        if transport and body:
            await transport.send_bytes(body)

    await site(_asgi_scope(scope), receive, send)


async def handle_rsgi(host: SiteHost, scope: RSGIScope, protocol: Any) -> None:
    """Serve one RSGI scope of ``host``'s site: an HTTP request; a WebSocket is closed
    (the site serves none)."""
    if scope.proto != "http":
        protocol.close(1000)
        return
    check = host.process_check  # an in-memory store split by several workers: refused
    if check.pending or check.refusal is not None:
        check.decide(host.store_in_memory)
        if check.refusal is not None:
            refusal = check.refusal
            protocol.response_bytes(503, refusal.safe_headers(), refusal.body)
            return
    http, sent_id = _request(scope)
    headers = http.headers
    reader = (
        _body_reader(headers, protocol, host.max_body_size)
        if headers_announce_body(http.method, headers)
        else None
    )
    answer = await respond(host, http, reader, sent_id)
    if type(answer) is not HttpResponse:
        if type(answer) is HttpStream:  # a change feed's stream
            slots = getattr(host, "streams", None)
            await _send_stream(answer, protocol, slots if type(slots) is StreamSlots else None)
            return
        assert type(answer) is SiteForward
        site = host.site
        assert site is not None  # respond forwards only when there is a site app
        await forward_to_asgi_site(site, answer.lines, scope, protocol)
        return
    lines = answer.safe_headers()
    if answer.status == 408:  # RFC 9110: the server closes the connection after a 408
        lines.append(_CLOSE)
    protocol.response_bytes(answer.status, lines, answer.body)


def _slots(host: SiteHost) -> StreamSlots | None:
    streams = getattr(host, "streams", None)
    return streams if isinstance(streams, StreamSlots) else None


def rsgi_init(host: SiteHost, loop: asyncio.AbstractEventLoop) -> None:
    """A granian RSGI worker starts (``__rsgi_init__``, before it serves): ``host``'s
    streams serve again, and SIGTERM and SIGINT end them before the server's own handler
    runs (:func:`svcrest.serve.streams.close_on_signals`)."""
    slots = _slots(host)
    if slots is not None:
        slots.reopen()
        close_on_signals(slots, loop)


def rsgi_del(host: SiteHost, loop: asyncio.AbstractEventLoop) -> None:
    """A granian RSGI worker stops (``__rsgi_del__``): ``host``'s streams end."""
    slots = _slots(host)
    if slots is not None:
        slots.close()
