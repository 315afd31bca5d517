"""A raw ASGI callable: the ceiling every framework is compared with.

``GET /svc-json/demo/v1/items/{id}`` answers ``{"id": id, "title": "item"}``; anything else 404.
"""

from __future__ import annotations

import json
from typing import Any

PREFIX = "/svc-json/demo/v1/items/"
HEADERS = [(b"content-type", b"application/json")]
NOT_FOUND = b'{"detail":"Not Found"}'


async def lifespan(receive: Any, send: Any) -> None:
    """Acknowledge the lifespan events."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def item_id(method: str, path: str) -> int | None:
    """The id of ``GET /svc-json/demo/v1/items/{id}``, None for any other request."""
    tail = path[len(PREFIX) :] if path.startswith(PREFIX) else ""
    return int(tail) if method == "GET" and tail.isdigit() else None


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Serve the one route; lifespan events are acknowledged."""
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
        return
    path: str = scope["path"]
    tail = path[len(PREFIX) :] if path.startswith(PREFIX) else ""
    if scope["method"] == "GET" and tail.isdigit():
        status = 200
        body = json.dumps({"id": int(tail), "title": "item"}).encode()
    else:
        status, body = 404, NOT_FOUND
    await send({"type": "http.response.start", "status": status, "headers": HEADERS})
    await send({"type": "http.response.body", "body": body})
