"""The ASGI adapter reads a body only when the request's lines announce one (RFC 9112 §6.3):
a GET, HEAD, OPTIONS or DELETE with ``Content-Length`` other than 0 or ``Transfer-Encoding``
has its body read, one without either line is answered without asking for it."""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

import pytest

from svcrest import App, public


def _app() -> App:
    app = App("http://example.org")
    app.register_rest_route(
        "t/v1",
        "/echo",
        {
            "methods": "GET",
            "callback": lambda request: {"json": request.get_json_params()},
            "permission_callback": public,
        },
    )
    return app


def _get(lines: list[tuple[bytes, bytes]], body: bytes) -> tuple[int, bytes, int]:
    """Status, body and how many times the app asked for a message."""
    asked = 0
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal asked
        asked += 1
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/svc-json/t/v1/echo",
        "query_string": b"",
        "headers": [(b"host", b"example.org"), *lines],
    }
    asyncio.run(_app()(scope, receive, send))
    return sent[0]["status"], sent[1]["body"], asked


@pytest.mark.parametrize(
    "lines",
    [
        [(b"content-type", b"application/json"), (b"content-length", b"8")],
        [(b"content-type", b"application/json"), (b"transfer-encoding", b"chunked")],
        # a name twice: the lines are joined before they are read
        [
            (b"content-type", b"application/json"),
            (b"x-a", b"1"),
            (b"x-a", b"2"),
            (b"content-length", b"8"),
        ],
    ],
)
def test_a_get_announcing_a_body_has_it_read(lines: list[tuple[bytes, bytes]]) -> None:
    status, body, asked = _get(lines, b'{"a": 1}')
    assert (status, body, asked) == (200, b'{"json":{"a":1}}', 1)


@pytest.mark.parametrize(
    "lines",
    [
        [(b"content-type", b"application/json")],
        [(b"content-type", b"application/json"), (b"content-length", b"0")],
        [(b"x-a", b"1"), (b"x-a", b"2")],
    ],
)
def test_a_get_without_a_body_is_answered_without_reading(
    lines: list[tuple[bytes, bytes]],
) -> None:
    status, body, asked = _get(lines, b'{"a": 1}')
    assert (status, body, asked) == (200, b'{"json":null}', 0)
