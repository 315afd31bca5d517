"""JSON-RPC messages as :func:`svcrest.site.mcp.protocol.read_message` reads them: the usual
request and every other shape (notifications, responses to the server, invalid messages)."""

from __future__ import annotations

from typing import Any

import pytest

from svcrest.site.mcp.protocol import INVALID_REQUEST, Message, ProtocolError, read_message


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":3,"method":"ping"}', Message("ping", 3, {}, True)),
        (b'{"jsonrpc":"2.0","id":"a","method":"x","params":null}', Message("x", "a", {}, True)),
        (
            b'{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"t"}}',
            Message("tools/call", 0, {"name": "t"}, True),
        ),
        (
            b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
            Message("notifications/initialized", None, {}, False),
        ),
        (
            b'{"jsonrpc":"2.0","method":"n","params":{"a":1}}',
            Message("n", None, {"a": 1}, False),
        ),
        (b'{"jsonrpc":"2.0","id":9,"result":{}}', Message(None, 9, {}, False)),
        (b'{"jsonrpc":"2.0","error":{"code":1}}', Message(None, None, {}, False)),
    ],
    ids=["ping", "string-id", "params", "notification", "notification-params", "result", "error"],
)
def test_read_message(body: bytes, expected: Message) -> None:
    assert read_message(body) == expected


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc":"2.0","id":null,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":false,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":[1],"method":"ping"}',
        b'{"jsonrpc":"2.0","id":1,"method":null}',
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}',
        b'{"jsonrpc":"2.0","method":"n","params":[]}',
        b'{"jsonrpc":"2.0","id":1}',
        b'{"jsonrpc":2.0,"id":1,"method":"ping"}',
    ],
    ids=[
        "id-null",
        "id-float",
        "id-false",
        "id-list",
        "method-null",
        "params-string",
        "notification-params-list",
        "neither",
        "jsonrpc-number",
    ],
)
def test_invalid_messages_are_invalid_request(body: bytes) -> None:
    with pytest.raises(ProtocolError) as raised:
        read_message(body)
    error: Any = raised.value
    assert (error.code, error.message) == (INVALID_REQUEST, "Invalid Request")
