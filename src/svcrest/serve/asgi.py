"""The ASGI adapter: translate a connection scope to an ``HttpRequest`` and back.

This and ``wsgi.py`` are the only modules that speak a server protocol. Each HTTP request
is one call of :func:`svcrest.site.respond.respond`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from svcrest.http.exchange import (
    USUAL_METHODS,
    HttpRequest,
    HttpResponse,
    HttpStream,
    encode_lines,
    headers_announce_body,
    remembered_host_name,
)
from svcrest.http.headers import Headers
from svcrest.http.scope_headers import ScopeHeaders
from svcrest.serve.bodies import body_timeout, body_timeout_error
from svcrest.serve.streams import send_stream
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


async def answer_lifespan(receive: ASGIReceive, send: ASGISend) -> None:
    """Answer an ASGI server's lifespan events (a svcrest site needs none)."""
    while True:
        message = await receive()
        kind = message.get("type")
        if kind == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif kind == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def _body_reader(
    headers: Headers, receive: ASGIReceive, limit: int
) -> Callable[[], Awaitable[bytes | None]]:
    """Reads the body once: its bytes, or None when it is longer than ``limit``
    (SECURITY: refused from Content-Length before reading, or as soon as the stream passes
    the limit); raises ``BodyReadError`` (408) when the whole body has not come within the
    body deadline (``svcrest.serve.bodies``)."""
    declared = headers.index().get("content-length")

    async def read() -> bytes | None:
        if declared and declared[0].strip().isdigit() and int(declared[0]) > limit:
            return None
        seconds = body_timeout()
        try:
            async with asyncio.timeout(seconds):
                return await _receive_body(receive, limit)
        except TimeoutError:
            raise body_timeout_error(seconds) from None

    return read


async def _receive_body(receive: ASGIReceive, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
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


def _request(scope: ASGIScope) -> HttpRequest:
    """The request of an HTTP ``scope``; its header lines are read from the scope on demand
    (:class:`ScopeHeaders`). The one place an :class:`HttpRequest` is made from a scope."""
    headers = ScopeHeaders(scope["headers"])
    method = scope["method"]
    raw_query = scope.get("query_string")
    client = scope.get("client")
    host_line = headers.get_joined("host")
    if host_line is not None:
        host_value = remembered_host_name(host_line)  # PERF: a Host value seen before
    else:
        server = scope.get("server")
        host_value = str(server[0]).lower() if server else ""
    # PERF: by position, in field order (keywords cost ~2,800 instructions a request,
    # bench/instructions.py); tests/http/test_context.py reads every field back.
    return HttpRequest(
        USUAL_METHODS.get(method) or str(method).upper(),
        scope["path"],
        raw_query.decode("utf-8", "replace") if raw_query else "",
        headers,
        b"",
        scope.get("scheme", "http"),
        host_value,
        str(client[0]) if client else "",
        headers.get_joined("x-request-id") or "",
    )


async def handle_asgi(
    host: SiteHost, scope: ASGIScope, receive: ASGIReceive, send: ASGISend
) -> None:
    """Serve one ASGI connection scope of ``host``'s site."""
    kind = scope["type"]
    if kind != "http":
        if kind == "lifespan":
            await answer_lifespan(receive, send)
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
    http = _request(scope)
    headers = http.headers
    reader = (
        _body_reader(headers, receive, host.max_body_size)
        if headers_announce_body(http.method, headers)
        else None
    )
    answer = await respond(host, http, reader)  # names the request for an access log
    # PERF: one test for both rare answers (the wrapped site's, a stream).
    if type(answer) is not HttpResponse:
        if type(answer) is HttpStream:  # a change feed's stream (svcrest.serve.streams)
            await send_stream(answer, receive, send)
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
