"""The ASGI adapter: HTTP requests to ``handle_http``, lifespan, and the optional site app.

This and ``wsgi.py`` are the only modules that speak a server protocol.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from svcrest.express import plain_query, serve_express
from svcrest.http.exchange import HttpRequest, HttpResponse, host_name, wire_lines
from svcrest.http.headers import Headers
from svcrest.serving import handle_http, rest_route_of

if TYPE_CHECKING:
    from svcrest.app import App

__all__ = ["ASGIReceive", "ASGIScope", "ASGISend", "handle_asgi", "header_bytes"]

logger = logging.getLogger("svcrest")

ASGIScope = MutableMapping[str, Any]
ASGIReceive = Callable[[], Awaitable[MutableMapping[str, Any]]]
ASGISend = Callable[[MutableMapping[str, Any]], Awaitable[None]]


# PERF: most header lines (the default REST headers, the Link header) repeat on every
# response; memoising their encoding saved ~12 µs a request (bench/micro.py). Bounded.
_ENCODED: dict[tuple[str, str], tuple[bytes, bytes]] = {}
_ENCODED_MAX = 4096


def header_bytes(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """Encode header lines for the wire (made safe by ``safe_header_line``)."""
    encoded: list[tuple[bytes, bytes]] = []
    cache = _ENCODED
    for line in headers:
        wire = cache.get(line)
        if wire is None:
            (wire,) = wire_lines((line,))
            if len(cache) >= _ENCODED_MAX:
                cache.clear()
            cache[line] = wire
        encoded.append(wire)
    return encoded


def _wire_headers(response: HttpResponse) -> list[tuple[bytes, bytes]]:
    prefix = response.wire_prefix
    headers = response.headers
    if len(prefix) == len(headers) and response.status == 200:
        # PERF: nothing left to encode but the length (always sent with a 200).
        length = len(response.body) if response.content_length is None else response.content_length
        return [*prefix, (b"Content-Length", str(length).encode("ascii"))]
    return [*prefix, *header_bytes([*headers[len(prefix) :], *response.length_header()])]


async def _lifespan(receive: ASGIReceive, send: ASGISend) -> None:
    while True:
        message = await receive()
        kind = message.get("type")
        if kind == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif kind == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def _host_of(headers: Headers, scope: ASGIScope) -> str:
    host = headers.get("host")
    if host:
        return host_name(host)
    server = scope.get("server")
    return str(server[0]).lower() if server else ""


async def _read_body(app: App, headers: Headers, receive: ASGIReceive) -> tuple[bytes, bool]:
    """The body, or (b"", True) when it is longer than the App allows (SECURITY: refused
    from Content-Length before reading, or as soon as the stream passes the limit)."""
    limit = app.max_body_size
    declared = headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        return b"", True
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
                return b"", True
            chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks), False


async def _send(send: ASGISend, response: HttpResponse) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": response.status,
            "headers": _wire_headers(response),
        }
    )
    await send({"type": "http.response.body", "body": response.body})


async def _forward_to_site(
    app: App, scope: ASGIScope, receive: ASGIReceive, send: ASGISend
) -> None:
    """Hand a non-REST request to the wrapped site app, adding the discovery Link header."""
    link = app.rest_output_link_header()

    async def send_with_link(message: MutableMapping[str, Any]) -> None:
        if message.get("type") == "http.response.start" and link is not None:
            message = dict(message)
            message["headers"] = [*message.get("headers", []), *header_bytes([("Link", link)])]
        await send(message)

    await app.site(scope, receive, send_with_link)


def build_request(scope: ASGIScope, headers: Headers) -> HttpRequest:
    """The HttpRequest of an ASGI http scope (body not read yet)."""
    client = scope.get("client")
    return HttpRequest(
        method=scope["method"].upper(),
        path=scope["path"],
        query_string=scope.get("query_string", b"").decode("utf-8", "replace"),
        headers=headers,
        scheme=scope.get("scheme", "http"),
        host=_host_of(headers, scope),
        client=str(client[0]) if client else "",
    )


async def handle_asgi(app: App, scope: ASGIScope, receive: ASGIReceive, send: ASGISend) -> None:
    """Serve one ASGI connection scope for ``app``."""
    kind = scope["type"]
    if kind == "lifespan":
        await _lifespan(receive, send)
        return
    if kind != "http":
        if kind == "websocket":
            await send({"type": "websocket.close", "code": 1000})
        return
    headers = Headers.from_lines(
        [(name.decode("latin-1"), value.decode("latin-1")) for name, value in scope["headers"]]
    )
    method = scope["method"]
    try:
        response = None
        # A read may take the express lane (see ``svcrest.express``).
        if method == "GET" or method == "HEAD":
            raw_query = scope.get("query_string")
            query = raw_query.decode("utf-8", "replace") if raw_query else ""
            route = rest_route_of(app, scope["path"], "") if plain_query(query) else None
            if type(route) is str:
                secure = scope.get("scheme") == "https"
                host = _host_of(headers, scope)
                response = await serve_express(app, method, route, headers, secure, host, query)
        if response is None:
            http = build_request(scope, headers)
            if app.site is not None and rest_route_of(app, http.path, http.query_string) is None:
                await _forward_to_site(app, scope, receive, send)
                return
            http.body, http.body_too_large = await _read_body(app, headers, receive)
            response = await handle_http(app, http)
    except Exception:
        logger.exception("Unhandled exception serving %s %s", method, scope["path"])
        response = HttpResponse(
            500,
            [("Content-Type", "text/plain; charset=UTF-8")],
            b"Internal server error.",
        )
    await _send(send, response)
