"""Hostile input to ``<home>/mcp`` on both adapters: bytes that are not JSON, messages that
are not JSON-RPC 2.0, ids of every type, huge and deep params, unknown methods, arguments
of the wrong type or past what JSON carries, and transport headers out of their forms. Each
gets JSON-RPC's code (-32700, -32600, -32601, -32602) or an MCP tool error carrying the
REST error, never a 500. (The ordinary refusals are in tests/site/test_mcp.py.)"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from svcrest import App, public
from tests.site.test_mcp import Mcp, error
from tests.site.test_mcp import mcp as mcp

PARSE = (400, -32700, "Parse error")
#: The reason of an integer past PHP's 64 bits, as WordPress words a range.
PAST_64_BITS = (
    "input must be between -9223372036854775808 (inclusive) and 9223372036854775807 (inclusive)"
)
INVALID = (400, -32600, "Invalid Request")


def deep(depth: int, leaf: bytes = b"1") -> bytes:
    return b'{"a":' * depth + leaf + b"}" * depth


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"", PARSE),
        (b" ", PARSE),
        (b"\xef\xbb\xbf" + orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}), PARSE),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping"}\xff', PARSE),
        (b'{"jsonrpc":"2.0","id":"\xff","method":"ping"}', PARSE),
        (b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}', PARSE),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping"}{}', PARSE),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":' + deep(5000) + b"}", PARSE),
        (b"null", INVALID),
        (b"[]", INVALID),
        (b"[" + orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}) * 1 + b"]", INVALID),
        (b"1", INVALID),
        (b'{"jsonrpc":"2.0 ","id":1,"method":"ping"}', INVALID),
        (b'{"jsonrpc":"2.0","id":99999999999999999999999,"method":"ping"}', INVALID),
        (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', INVALID),
        (b'{"jsonrpc":"2.0","id":1,"method":["ping"]}', INVALID),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":1}', INVALID),
    ],
    ids=[
        "empty",
        "blank",
        "bom",
        "bad-utf8-after",
        "bad-utf8-id",
        "id-1e400",
        "two-values",
        "params-5000-deep",
        "null",
        "empty-batch",
        "batch-of-one",
        "number",
        "jsonrpc-2.0-space",
        "id-past-64-bits",
        "id-object",
        "method-list",
        "params-number",
    ],
)
def test_malformed_bodies_answer_400_with_the_json_rpc_error(
    mcp: Mcp, body: bytes, expected: tuple[int, int, str]
) -> None:
    status, code, message = expected
    response = mcp.post(body, {"Mcp-Session-Id": mcp.session})
    assert response.status_code == status
    assert response.json() == error(None, code, message)


@pytest.mark.parametrize(
    "ident", [0, -5, 2**63 - 1, "", "x" * 10_000, "\u00e9\u2028\U0001f600"], ids=repr
)
def test_any_integer_or_string_id_is_answered_with_it(mcp: Mcp, ident: Any) -> None:
    response = mcp.post(
        {"jsonrpc": "2.0", "id": ident, "method": "ping"}, {"Mcp-Session-Id": mcp.session}
    )
    assert (response.status_code, response.json()) == (
        200,
        {"jsonrpc": "2.0", "id": ident, "result": {}},
    )


@pytest.mark.parametrize(
    ("method", "params", "code", "message"),
    [
        ("x" * 100_000, None, -32601, "Method not found"),
        ("tools/list/", None, -32601, "Method not found"),
        ("TOOLS/LIST", None, -32601, "Method not found"),
        ("rpc.discover", None, -32601, "Method not found"),
        (
            "tools/call",
            {"name": "x" * 1000, "arguments": {}},
            -32602,
            "Unknown tool: " + "x" * 1000,
        ),
        ("tools/call", {"name": None}, -32602, "Invalid params"),
        ("tools/call", {"name": ["site-info"]}, -32602, "Invalid params"),
        ("resources/read", {"uri": 5}, -32602, "Invalid params"),
        ("resources/read", {}, -32602, "Invalid params"),
    ],
    ids=[
        "method-huge",
        "method-slash",
        "method-case",
        "rpc-reserved",
        "tool-name-huge",
        "tool-name-null",
        "tool-name-list",
        "uri-number",
        "uri-missing",
    ],
)
def test_unknown_methods_and_bad_params_are_json_rpc_errors(
    mcp: Mcp, method: str, params: Any, code: int, message: str
) -> None:
    assert mcp.rpc(method, params) == error(7, code, message)


@pytest.mark.parametrize(
    "uri", ["file:///etc/passwd", "svcrest://../../etc/passwd", "x" * 10_000, ""], ids=repr
)
def test_a_resource_that_is_not_the_sites_is_not_found(mcp: Mcp, uri: str) -> None:
    assert mcp.rpc("resources/read", {"uri": uri}) == error(
        7, -32002, "Resource not found", {"uri": uri}
    )


def invalid_input(reason: str) -> dict[str, Any]:
    body = {
        "code": "ability_invalid_input",
        "message": f'Ability "math/double" has invalid input. Reason: {reason}',
        "data": {"status": 400},
    }
    return {"content": [{"type": "text", "text": orjson.dumps(body).decode()}], "isError": True}


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"1e308", PAST_64_BITS),
        (b"1e19", PAST_64_BITS),
        (b"9223372036854775808", PAST_64_BITS),
        (b"99999999999999999999999", PAST_64_BITS),
        (b"-1e19", "input must be greater than or equal to 0"),
        (b"1.5", "input is not of type integer."),
        (b'"2"x', None),
        (b"[" * 200 + b"]" * 200, "input is not of type integer."),
        (b'"' + b"9" * 100_000 + b'"', "input is not of type integer."),
        (b"null", "input is not of type integer."),
    ],
    ids=[
        "1e308",
        "1e19",
        "2**63",
        "past-64-bits",
        "-1e19",
        "fraction",
        "not-json",
        "deep-list",
        "long",
        "null",
    ],
)
def test_arguments_of_the_wrong_type_or_range_are_tool_errors(
    mcp: Mcp, raw: bytes, reason: str | None
) -> None:
    body = (
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"math-double",'
        b'"arguments":{"input":' + raw + b"}}}"
    )
    response = mcp.post(body, {"Mcp-Session-Id": mcp.session, **mcp.editor})
    if reason is None:
        assert (response.status_code, response.json()) == (400, error(None, -32700, "Parse error"))
        return
    assert response.status_code == 200
    assert response.json() == {"jsonrpc": "2.0", "id": 7, "result": invalid_input(reason)}


def test_a_deep_arguments_object_is_a_tool_error_not_a_crash(mcp: Mcp) -> None:
    body = (
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"site-info",'
        b'"arguments":' + deep(600) + b"}}"
    )
    response = mcp.post(body, {"Mcp-Session-Id": mcp.session})
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["isError"] is True
    assert orjson.loads(result["content"][0]["text"])["data"]["status"] == 400


def test_a_body_past_the_sites_limit_is_413_with_the_json_rpc_error(mcp: Mcp) -> None:
    body = b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"a":"' + b"x" * (20 << 20) + b'"}}'
    response = mcp.post(body, {"Mcp-Session-Id": mcp.session})
    assert response.status_code == 413
    assert response.headers["content-type"] == "application/json"
    assert response.json() == error(None, -32600, "Request Too Large")


@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "OPTIONS"])
def test_another_method_is_405_with_the_json_rpc_error(mcp: Mcp, method: str) -> None:
    response = mcp.client.request(method, "/mcp", headers={"Accept": "text/event-stream"})
    assert response.status_code == 405
    assert response.headers["allow"] == "POST, DELETE"
    assert response.headers["content-type"] == "application/json"
    assert response.json() == error(None, -32600, "Method Not Allowed")


@pytest.mark.parametrize(
    ("headers", "status", "message"),
    [
        ({"Mcp-Session-Id": "x" * 10_000}, 404, "Session not found"),
        ({"Mcp-Session-Id": ""}, 404, "Session not found"),
        ({"Origin": "null"}, 403, "Forbidden: foreign Origin"),
        ({"Origin": "http://127.0.0.1:8000.evil.example"}, 403, "Forbidden: foreign Origin"),
        ({"Origin": "http://127.0.0.1:8000@evil.example"}, 403, "Forbidden: foreign Origin"),
        ({"Origin": "http://127.0.0.1:8000/"}, 403, "Forbidden: foreign Origin"),
        ({"Origin": "https://127.0.0.1:8000"}, 403, "Forbidden: foreign Origin"),
        (
            {"Content-Type": "application/json-patch+json"},
            415,
            "Unsupported Media Type: Content-Type must be application/json",
        ),
        (
            {"Accept": "application/json;q=abc"},
            406,
            "Not Acceptable: Client must accept application/json or text/event-stream",
        ),
        (
            {"Accept": "," * 5000},
            406,
            "Not Acceptable: Client must accept application/json or text/event-stream",
        ),
    ],
    ids=[
        "session-huge",
        "session-empty",
        "origin-null",
        "origin-suffix",
        "origin-userinfo",
        "origin-slash",
        "origin-scheme",
        "content-type",
        "accept-q",
        "accept-commas",
    ],
)
def test_transport_headers_out_of_form_are_refused(
    mcp: Mcp, headers: dict[str, str], status: int, message: str
) -> None:
    sent = {"Mcp-Session-Id": mcp.session, **headers}
    response = mcp.post({"jsonrpc": "2.0", "id": 7, "method": "ping"}, sent)
    assert response.status_code == status
    assert response.json() == error(None, -32600, message)


@pytest.mark.parametrize(
    "headers",
    [
        {"Authorization": "Basic !!!"},
        {"Authorization": "Basic " + "QQ==" * 5000},
        {"Authorization": "Bearer"},
        {"Cookie": "svc_logged_in=forged|1|2|3"},
    ],
    ids=["basic-not-base64", "basic-huge", "bearer-empty", "forged-cookie"],
)
def test_garbled_credentials_never_make_the_caller_anyone(
    mcp: Mcp, headers: dict[str, str]
) -> None:
    sent = {"Mcp-Session-Id": mcp.session, **headers}
    listed = mcp.post({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, sent)
    if listed.status_code == 200:
        names = {tool["name"] for tool in listed.json()["result"]["tools"]}
        assert names == {"site-info", "get_mcpdemo_v1_echo"}  # the anonymous caller's
    else:
        assert listed.status_code in (400, 401)
        assert listed.json()["data"]["status"] == listed.status_code


def test_an_answer_json_cannot_carry_is_a_tool_error_as_over_rest(
    mcp: Mcp, caplog: pytest.LogCaptureFixture
) -> None:
    app: App = mcp.app
    app.register_ability(
        "site/huge",
        label="Huge",
        description="A number past 64 bits (a plugin's mistake).",
        category="site",
        execute_callback=lambda: 2**70,
        permission_callback=public,
    )
    over_rest = mcp.client.post("/svc-json/svc-abilities/v1/abilities/site/huge/run")
    assert over_rest.status_code == 500
    internal = {
        "code": "rest_internal_error",
        "message": "Internal server error.",
        "data": {"status": 500},
    }
    assert over_rest.json() == internal
    caplog.clear()
    assert mcp.call("site-huge", {}) == {
        "content": [{"type": "text", "text": orjson.dumps(internal).decode()}],
        "isError": True,
    }
    assert [record.getMessage() for record in caplog.records] == [
        "The result of the MCP tool site-huge cannot be sent as JSON: Integer exceeds 64-bit"
        " range; answered rest_internal_error"
    ]


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "site-count"}},
        {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "nope"}},
        {"jsonrpc": "2.0", "method": "no/such/method"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}},
        {"jsonrpc": "2.0", "id": 7, "error": {"code": -1, "message": "x" * 10_000}},
    ],
    ids=["tools-call", "unknown-tool", "unknown-method", "cancelled", "error-reply"],
)
def test_a_notification_runs_nothing_and_is_answered_202(mcp: Mcp, message: dict[str, Any]) -> None:
    ran: list[int] = []

    def count() -> int:
        ran.append(1)
        return len(ran)

    mcp.app.register_ability(
        "site/count",
        label="Count",
        description="Counts its runs.",
        category="site",
        execute_callback=count,
        permission_callback=public,
    )
    response = mcp.post(message, {"Mcp-Session-Id": mcp.session, **mcp.admin})
    assert (response.status_code, response.content) == (202, b"")
    assert ran == []


def raw_post(app: App, headers: list[tuple[bytes, bytes]]) -> tuple[int, bytes]:
    """A ping POSTed straight to the ASGI interface with header bytes no client would send."""
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
            *headers,
        ],
        "scheme": "http",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 5000),
    }
    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], sent[1]["body"]


@pytest.mark.parametrize(
    "value", [b"\xff\xfe", b"\xe9", b"a\x00b"], ids=["binary", "latin-1", "nul"]
)
@pytest.mark.parametrize(
    ("name", "status", "message"),
    [
        (b"mcp-session-id", 404, "Session not found"),
        (b"origin", 403, "Forbidden: foreign Origin"),
        (b"mcp-protocol-version", 400, "Bad Request: Missing session ID"),
        (b"authorization", 400, "Bad Request: Missing session ID"),
        (b"cookie", 400, "Bad Request: Missing session ID"),
    ],
)
def test_header_bytes_no_client_sends_are_refused_with_the_json_rpc_error(
    mcp: Mcp, name: bytes, value: bytes, status: int, message: str
) -> None:
    answered, body = raw_post(mcp.app, [(name, value)])
    assert (answered, orjson.loads(body)) == (status, error(None, -32600, message))
