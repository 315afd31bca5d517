"""A raw ASGI callable that sends the header lines of a svcrest response: the ceiling.

DESIGN §3 makes every served REST response carry seven header lines of its own, each on its
own line; with the Allow line, the three CORS lines of a request with an Origin and
Content-Length, a svcrest answer to ``GET /svc-json/demo/v1/items/42`` has twelve lines where
the raw callable has one. uvicorn checks every line with two regexes, so these lines cost
time whoever sends them. This callable does no work besides sending them (the same bytes as
the ``svcrest`` target, prepared at import): no framework implementing the contract can be
faster under uvicorn, and ``run.py`` reports its ratio to raw ASGI next to svcrest's.
"""

from __future__ import annotations

import json
import os
from typing import Any

from raw_asgi import NOT_FOUND, item_id, lifespan

HOME = os.environ.get("SVCREST_BENCH_HOME", "http://127.0.0.1:8000")
HEADERS = [
    (b"Content-Type", b"application/json; charset=UTF-8"),
    (b"X-Content-Type-Options", b"nosniff"),
    (b"X-Robots-Tag", b"noindex"),
    (b"Link", f'<{HOME}/svc-json/>; rel="https://api.w.org/"'.encode()),
    (b"Vary", b"Origin"),
    (
        b"Access-Control-Expose-Headers",
        b"X-SVC-Total, X-SVC-TotalPages, Link, RateLimit, RateLimit-Policy, Retry-After,"
        b" Idempotent-Replayed",
    ),
    (
        b"Access-Control-Allow-Headers",
        b"Authorization, X-SVC-Nonce, Content-Disposition, Content-MD5, Content-Type,"
        b" Idempotency-Key",
    ),
    (b"Allow", b"GET"),
    (b"Access-Control-Allow-Origin", b"http://example.com"),
    (b"Access-Control-Allow-Methods", b"POST, GET, OPTIONS, PUT, DELETE"),
    (b"Access-Control-Allow-Credentials", b"true"),
]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Serve the one route with svcrest's header lines; lifespan events are acknowledged."""
    await _serve(scope, receive, send, HEADERS, b"Content-Length")


async def _serve(
    scope: dict[str, Any],
    receive: Any,
    send: Any,
    lines: list[tuple[bytes, bytes]],
    length_name: bytes,
) -> None:
    """Answer ``scope`` with ``lines`` and a length line named ``length_name``."""
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
        return
    found = item_id(scope["method"], scope["path"])
    if found is not None:
        status = 200
        body = json.dumps({"id": found, "title": "item"}, separators=(",", ":")).encode()
    else:
        status, body = 404, NOT_FOUND
    headers = [*lines, (length_name, str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


#: The same lines with their names in lower case, as ASGI's specification asks of a server's
#: request lines (``bench/served_instructions.py raw-granian-asgi-svc-headers-lower``: what
#: the names' case costs granian, which writes every name in lower case on HTTP/1.1 anyway).
LOWER_HEADERS = [(name.lower(), value) for name, value in HEADERS]


async def lower(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """:func:`app` sending :data:`LOWER_HEADERS`."""
    await _serve(scope, receive, send, LOWER_HEADERS, b"content-length")
