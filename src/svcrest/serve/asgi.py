"""The ASGI adapter: translate a connection scope to an ``HttpRequest`` and back.

This and ``wsgi.py`` are the only modules that speak a server protocol. Each HTTP request
is one call of :func:`svcrest.site.respond.respond`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator, MutableMapping
from types import CoroutineType
from typing import Any

from svcrest.http.exchange import (
    BODILESS_METHODS,
    HttpRequest,
    HttpResponse,
    HttpStream,
    encode_lines,
    headers_announce_body,
    known_host_name,
    remembered_host_name,
    usual_method,
)
from svcrest.http.headers import Headers
from svcrest.http.scope_headers import ScopeHeaders
from svcrest.http.streams import StreamSlots
from svcrest.instances import without_init
from svcrest.serve.bodies import body_timeout, body_timeout_error, declared_too_long
from svcrest.serve.streams import close_on_signals, send_stream
from svcrest.site.host import ASGIApp, SiteHost
from svcrest.site.respond import SiteForward, respond

__all__ = [
    "ASGIReceive",
    "ASGIScope",
    "ASGISend",
    "answer_lifespan",
    "forward_to_site",
    "handle_asgi",
]

ASGIScope = MutableMapping[str, Any]
ASGIReceive = Callable[[], Awaitable[MutableMapping[str, Any]]]
ASGISend = Callable[[MutableMapping[str, Any]], Awaitable[None]]


_CLOSE = (b"connection", b"close")
#: The raw names of the header lines that can announce a body.
_BODY_LINES = frozenset({b"content-length", b"transfer-encoding"})
#: A Content-Length value shorter than this many characters declares at most
#: ``_SHORT_LIMIT`` bytes.
_SHORT_LENGTH = 7
_SHORT_LIMIT = 999_999


async def answer_lifespan(
    receive: ASGIReceive, send: ASGISend, streams: StreamSlots | None = None
) -> None:
    """Answer an ASGI server's lifespan events (a svcrest site needs none to start). With
    the site's ``streams``: at the startup they serve again and SIGTERM and SIGINT end them
    before the server's own handler runs (:func:`svcrest.serve.streams.close_on_signals`),
    and the shutdown ends them too."""
    while True:
        message = await receive()
        kind = message.get("type")
        if kind == "lifespan.startup":
            if streams is not None:
                streams.reopen()
                close_on_signals(streams)
            await send({"type": "lifespan.startup.complete"})
        elif kind == "lifespan.shutdown":
            if streams is not None:
                streams.close()
            await send({"type": "lifespan.shutdown.complete"})
            return


def _body_reader(
    headers: Headers, single: dict[bytes, bytes] | None, receive: ASGIReceive, limit: int
) -> Callable[[], Awaitable[bytes | None]]:
    """Reads the body once: its bytes, or None when it is longer than ``limit``
    (SECURITY: refused from Content-Length before reading, or as soon as the stream passes
    the limit); raises ``BodyReadError`` (408) when the whole body has not come within the
    body deadline (``svcrest.serve.bodies``). ``single`` is the lines of ``headers`` by raw
    name when no name came twice (:attr:`ScopeHeaders.single`), else None."""
    if single is None:
        declared = headers.get_joined("content-length")
    else:
        # PERF: one line read in C. A value of at most six characters declares at most
        # 999,999 bytes: never past a limit of that or more (the default's 10 MiB), so it is
        # neither decoded nor parsed (with the first step inline below: a JSON POST
        # 202,147 → 198,351 instructions, bench/instructions.py --cases post).
        raw = single.get(b"content-length")
        declared = (
            None
            if raw is None or (len(raw) < _SHORT_LENGTH and limit >= _SHORT_LIMIT)
            else raw.decode("latin-1")
        )

    async def read() -> bytes | None:
        if declared is not None and declared_too_long(declared, limit):
            return None
        # PERF: the first message asked here, and taken without a timer when ``receive``
        # gives it in its first step (a server's does for a body it read already: every
        # small JSON POST); with the look-up above, an MCP ping 191,999 → 131,414
        # instructions (bench/mcp_call.py --instructions). Inline, not a helper's call.
        waiting = receive()
        first: Any = None
        later: Awaitable[Any] | None = waiting
        if type(waiting) is CoroutineType:
            try:
                pending = waiting.send(None)
            except StopIteration as done:
                first, later = done.value, None
                if not first.get("more_body", False):
                    # The whole body came already: nothing waited, no deadline to keep.
                    if first.get("type") == "http.disconnect":
                        return b""
                    chunk = first.get("body", b"")
                    return None if len(chunk) > limit else chunk
            else:
                later = _Resumed(waiting, pending)
        seconds = body_timeout()
        try:
            async with asyncio.timeout(seconds):
                return await _receive_body(receive, limit, first, later)
        except TimeoutError:
            raise body_timeout_error(seconds) from None

    return read


class _Resumed:
    """A coroutine whose first step was run by hand (it yielded ``pending``), awaited to its
    end as ``await`` would have: what the task sends or throws goes on to the coroutine (a
    deadline's cancellation included)."""

    __slots__ = ("_coroutine", "_pending")

    def __init__(self, coroutine: CoroutineType[Any, Any, Any], pending: Any) -> None:
        self._coroutine = coroutine
        self._pending = pending

    def __await__(self) -> Generator[Any, Any, Any]:
        coroutine, step = self._coroutine, self._pending
        while True:
            try:
                sent = yield step
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as thrown:
                try:
                    step = coroutine.throw(thrown)
                except StopIteration as done:
                    return done.value
                continue
            try:
                step = coroutine.send(sent)
            except StopIteration as done:
                return done.value


async def _receive_body(
    receive: ASGIReceive, limit: int, first: Any = None, later: Awaitable[Any] | None = None
) -> bytes | None:
    """The body's bytes, None past ``limit``; ``first`` (the first message) or ``later``
    (what gives it) when it was asked for already."""
    chunks: list[bytes] = []
    size = 0
    while True:
        if first is not None:
            message, first = first, None
        elif later is not None:
            message, later = await later, None
        else:
            message = await receive()
        if message.get("type") == "http.disconnect":
            break
        chunk = message.get("body", b"")
        if chunk:
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def forward_to_site(
    site: ASGIApp,
    lines: tuple[tuple[str, str], ...],
    scope: ASGIScope,
    receive: ASGIReceive,
    send: ASGISend,
) -> None:
    """Hand a non-REST request to the wrapped site app, adding ``lines`` to its answer."""
    extra = encode_lines(lines)

    async def send_with_lines(message: MutableMapping[str, Any]) -> None:
        if message.get("type") == "http.response.start" and extra:
            message = dict(message)
            message["headers"] = [*message.get("headers", []), *extra]
        await send(message)

    await site(scope, receive, send_with_lines)


def _request(scope: ASGIScope) -> tuple[HttpRequest, str]:
    """The request of an HTTP ``scope`` and the ``X-Request-Id`` its client sent ("" for
    none); its header lines are read from the scope on demand (:class:`ScopeHeaders`). The
    one place an :class:`HttpRequest` is made from a scope."""
    # PERF: the scope's lines kept as ``ScopeHeaders.__init__`` keeps them, without the class
    # call and its ``__init__`` frame; tests/http/test_scope_headers.py reads them back.
    headers = without_init(ScopeHeaders)
    headers._listed_lines = None
    pairs = scope["headers"]
    if type(pairs) is not list:
        pairs = list(pairs)
    by_name = dict(pairs)
    headers._raw = pairs
    single = headers.single = by_name if len(by_name) == len(pairs) else None
    method = scope["method"]
    raw_query = scope.get("query_string")
    client = scope.get("client")
    if single is None:  # a name came twice: its lines joined
        host_line = headers.get_joined("host")
        sent_id = headers.get_joined("x-request-id") or ""
    else:  # PERF: read in C (two Python calls less: an ASGI GET ~1,000 instructions less)
        raw = single.get(b"host")
        host_line = None if raw is None else raw.decode("latin-1")
        raw = single.get(b"x-request-id")
        sent_id = "" if raw is None else raw.decode("latin-1")
    if host_line is not None:
        # PERF: a Host value seen before, without a Python call
        host_value = known_host_name(host_line) or remembered_host_name(host_line)
    else:
        server = scope.get("server")
        host_value = str(server[0]).lower() if server else ""
    # PERF: every field set here, in field order, without the generated ``__init__``'s frame
    # (an ASGI GET 93,732 → 92,424 instructions, bench/instructions.py; keywords cost more);
    # tests/http/test_context.py reads every field back.
    http = without_init(HttpRequest)
    http.method = usual_method(method) or str(method).upper()
    http.path = scope["path"]
    http.query_string = raw_query.decode("utf-8", "replace") if raw_query else ""
    http.headers = headers
    http.body = b""
    http.scheme = scope.get("scheme", "http")
    http.host = host_value
    http.client = str(client[0]) if client else ""
    return http, sent_id


async def handle_asgi(
    host: SiteHost, scope: ASGIScope, receive: ASGIReceive, send: ASGISend
) -> None:
    """Serve one ASGI connection scope of ``host``'s site."""
    kind = scope["type"]
    if kind != "http":
        if kind == "lifespan":
            streams = getattr(host, "streams", None)
            mine = streams if isinstance(streams, StreamSlots) else None
            await answer_lifespan(receive, send, mine)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1000})
        return
    check = host.process_check  # an in-memory store split by several workers: refused
    if check.pending or check.refusal is not None:
        check.decide(host.store_in_memory)
        if check.refusal is not None:
            start = {"status": 503, "headers": check.refusal.wire_headers()}
            await send({"type": "http.response.start", **start})
            await send({"type": "http.response.body", "body": check.refusal.body})
            return
    http, sent_id = _request(scope)
    headers = http.headers
    # PERF: a request with neither body line is answered without asking its headers (two
    # Python calls less: an ASGI GET 89,650 → 88,574 instructions, bench/instructions.py).
    single = headers.single  # type: ignore[attr-defined]  # the ScopeHeaders _request made
    announced = http.method not in BODILESS_METHODS or (
        (single is None or not _BODY_LINES.isdisjoint(single))
        and headers_announce_body(http.method, headers)
    )
    reader = _body_reader(headers, single, receive, host.max_body_size) if announced else None
    answer = await respond(host, http, reader, sent_id)  # names the request for an access log
    # PERF: one test for both rare answers (the wrapped site's, a stream).
    if type(answer) is not HttpResponse:
        if type(answer) is HttpStream:  # a change feed's stream (svcrest.serve.streams)
            slots = getattr(host, "streams", None)
            await send_stream(answer, receive, send, slots if type(slots) is StreamSlots else None)
            return
        assert type(answer) is SiteForward
        site = host.site
        assert site is not None  # respond forwards only when there is a site app
        await forward_to_site(site, answer.lines, scope, receive, send)
        return
    wire = answer.wire_headers()
    if answer.status == 408:  # RFC 9110: the server closes the connection after a 408
        wire.append(_CLOSE)
    await send({"type": "http.response.start", "status": answer.status, "headers": wire})
    await send({"type": "http.response.body", "body": answer.body})
