"""``<home>/mcp`` in-process over both adapters: the JSON-RPC layer with exact bodies, the
transport's refusals, and what each caller sees and runs (tests/site/mcp_site.py)."""

from __future__ import annotations

import base64
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

import svcrest
from svcrest import App
from tests.conftest import SiteClient
from tests.site.mcp_site import SUBSCRIBER_TOKEN, plain_ability, register

ClientFor = Callable[..., SiteClient]
INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "test", "version": "1"},
}
JSON_ACCEPT = {"Accept": "application/json, text/event-stream"}


@dataclass
class Mcp:
    app: App
    client: SiteClient
    session: str
    editor: dict[str, str]
    admin: dict[str, str]
    subscriber: dict[str, str]

    def post(self, body: Any, headers: dict[str, str] | None = None) -> Any:
        content = body if isinstance(body, bytes) else orjson.dumps(body)
        sent = {"Content-Type": "application/json", **JSON_ACCEPT, **(headers or {})}
        return self.client.post("/mcp", content=content, headers=sent)

    def rpc(self, method: str, params: Any = None, who: dict[str, str] | None = None) -> Any:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "method": method}
        if params is not None:
            message["params"] = params
        response = self.post(message, {"Mcp-Session-Id": self.session, **(who or {})})
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == "application/json"
        return response.json()

    def call(self, name: str, arguments: Any, who: dict[str, str] | None = None) -> Any:
        return self.rpc("tools/call", {"name": name, "arguments": arguments}, who)["result"]


def basic(login: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{login}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def make_app() -> tuple[App, dict[str, str], dict[str, str]]:
    app = App(mcp=True)
    register(app)
    app.users.create("sub1", "subscriber password", roles=["subscriber"])
    editor = app.users.create("editor1", "editor password", roles=["editor"])
    admin = app.users.create("admin1", "admin password", roles=["administrator"])
    editor_password, _ = app.users.create_application_password(editor.id, "agent")
    admin_password, _ = app.users.create_application_password(admin.id, "agent")
    return app, basic("editor1", editor_password), basic("admin1", admin_password)


@pytest.fixture
def mcp(client_for: ClientFor) -> Mcp:
    app, editor, admin = make_app()
    client = client_for(app)
    response = client.post(
        "/mcp",
        content=orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}),
        headers={"Content-Type": "application/json", **JSON_ACCEPT},
    )
    assert response.status_code == 200, response.text
    session = response.headers["mcp-session-id"]
    subscriber = {"Authorization": f"Bearer {SUBSCRIBER_TOKEN}"}
    return Mcp(app, client, session, editor, admin, subscriber)


def error(ident: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    detail: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        detail["data"] = data
    return {"jsonrpc": "2.0", "id": ident, "error": detail}


def text_result(value: Any) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": orjson.dumps(value).decode()}],
        "structuredContent": value,
        "isError": False,
    }


def tool_error(code: str, message: str, data: dict[str, Any]) -> dict[str, Any]:
    body = {"code": code, "message": message, "data": data}
    return {"content": [{"type": "text", "text": orjson.dumps(body).decode()}], "isError": True}


# -- initialize and the session ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("asked", "answered"),
    [
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2024-11-05"),
        ("2025-11-25", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ],
)
def test_initialize_answers_the_version_and_issues_a_session(
    client_for: ClientFor, asked: str, answered: str
) -> None:
    app, _, _ = make_app()
    client = client_for(app)
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {**INIT}}
    message["params"]["protocolVersion"] = asked  # type: ignore[index]
    response = client.post(
        "/mcp", content=orjson.dumps(message), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 200
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "protocolVersion": answered,
            "capabilities": {
                "tools": {"listChanged": False},
                "resources": {"subscribe": False, "listChanged": False},
            },
            "serverInfo": {"name": "svcrest", "version": "2.0"},
        },
    }
    token, dot, signature = response.headers["mcp-session-id"].partition(".")
    assert dot and len(token) == 32 and len(signature) == 32
    assert response.headers["cache-control"] == "no-store"


def test_ping_and_the_initialized_notification(mcp: Mcp) -> None:
    assert mcp.rpc("ping") == {"jsonrpc": "2.0", "id": 7, "result": {}}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    response = mcp.post(note, {"Mcp-Session-Id": mcp.session})
    assert (response.status_code, response.content) == (202, b"")


def test_a_request_without_the_session_answers_400(mcp: Mcp) -> None:
    response = mcp.post({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    assert response.status_code == 400
    assert response.json() == error(None, -32600, "Bad Request: Missing session ID")


@pytest.mark.parametrize("session", ["made-up", "abc.def", "x" * 200])
def test_a_session_not_issued_here_answers_404(mcp: Mcp, session: str) -> None:
    response = mcp.post({"jsonrpc": "2.0", "id": 3, "method": "ping"}, {"Mcp-Session-Id": session})
    assert response.status_code == 404
    assert response.json() == error(None, -32600, "Session not found")


def test_a_session_signed_by_another_site_answers_404(mcp: Mcp, client_for: ClientFor) -> None:
    other = App(mcp=True, secret_key="another key")
    client = client_for(other)
    response = client.post(
        "/mcp",
        content=orjson.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
        headers={"Content-Type": "application/json", "Mcp-Session-Id": mcp.session},
    )
    assert response.status_code == 404


def test_delete_ends_the_session(mcp: Mcp) -> None:
    ended = mcp.client.request("DELETE", "/mcp", headers={"Mcp-Session-Id": mcp.session})
    assert (ended.status_code, ended.content) == (204, b"")
    response = mcp.post(
        {"jsonrpc": "2.0", "id": 3, "method": "ping"}, {"Mcp-Session-Id": mcp.session}
    )
    assert response.status_code == 404
    again = mcp.client.request("DELETE", "/mcp", headers={"Mcp-Session-Id": mcp.session})
    assert again.status_code == 404
    missing = mcp.client.request("DELETE", "/mcp")
    assert missing.status_code == 400


def test_an_unsupported_protocol_version_header_answers_400(mcp: Mcp) -> None:
    response = mcp.post(
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        {"Mcp-Session-Id": mcp.session, "MCP-Protocol-Version": "1999-01-01"},
    )
    assert response.status_code == 400
    assert response.json() == error(
        None, -32600, "Bad Request: Unsupported protocol version: 1999-01-01"
    )


def test_each_request_authenticates_on_its_own_never_by_its_session(mcp: Mcp) -> None:
    names = [tool["name"] for tool in mcp.rpc("tools/list", who=mcp.admin)["result"]["tools"]]
    assert "site-purge" in names
    # The same session without credentials is anonymous again.
    names = [tool["name"] for tool in mcp.rpc("tools/list")["result"]["tools"]]
    assert names == ["site-info", "get_mcpdemo_v1_echo"]


# -- protocol errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code", "message"),
    [
        (b"{not json", -32700, "Parse error"),
        (b'{"id": 1, "method": "ping"}', -32600, "Invalid Request"),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}', -32600, "Invalid Request"),
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', -32600, "Invalid Request"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": 5}', -32600, "Invalid Request"),
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', -32600, "Invalid Request"),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}',
            -32600,
            "Invalid Request",
        ),
        (b'"ping"', -32600, "Invalid Request"),
    ],
    ids=[
        "parse",
        "no-jsonrpc",
        "jsonrpc-1",
        "batch",
        "method-number",
        "id-bool",
        "params-list",
        "string",
    ],
)
def test_malformed_messages_answer_400_with_the_json_rpc_error(
    mcp: Mcp, body: bytes, code: int, message: str
) -> None:
    response = mcp.post(body, {"Mcp-Session-Id": mcp.session})
    assert response.status_code == 400
    assert response.json() == error(None, code, message)


def test_an_unknown_method_is_method_not_found(mcp: Mcp) -> None:
    assert mcp.rpc("prompts/list") == error(7, -32601, "Method not found")


def test_a_response_to_the_server_is_accepted(mcp: Mcp) -> None:
    response = mcp.post({"jsonrpc": "2.0", "id": 9, "result": {}}, {"Mcp-Session-Id": mcp.session})
    assert (response.status_code, response.content) == (202, b"")


def test_get_answers_405_no_server_stream_is_offered(mcp: Mcp) -> None:
    response = mcp.client.get("/mcp", headers={"Accept": "text/event-stream"})
    assert response.status_code == 405
    assert response.headers["allow"] == "POST, DELETE"


def test_a_body_that_is_not_json_answers_415(mcp: Mcp) -> None:
    response = mcp.client.post(
        "/mcp", content=b"ping", headers={"Content-Type": "text/plain", **JSON_ACCEPT}
    )
    assert response.status_code == 415
    assert response.json() == error(
        None, -32600, "Unsupported Media Type: Content-Type must be application/json"
    )


def test_a_client_that_accepts_neither_answer_type_gets_406(mcp: Mcp) -> None:
    response = mcp.post(
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        {"Mcp-Session-Id": mcp.session, "Accept": "text/html"},
    )
    assert response.status_code == 406
    assert response.json() == error(
        None, -32600, "Not Acceptable: Client must accept application/json or text/event-stream"
    )


def test_a_client_that_accepts_only_event_streams_gets_one_sse_event(mcp: Mcp) -> None:
    response = mcp.post(
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        {"Mcp-Session-Id": mcp.session, "Accept": "text/event-stream"},
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.content == b'event: message\ndata: {"jsonrpc":"2.0","id":3,"result":{}}\n\n'


@pytest.mark.parametrize(
    "accept",
    [
        "application/json;q=0, text/event-stream",
        "application/json; q=0.0, */*",
        "application/*;q=0, text/*",
        "text/event-stream;q=0.5, application/json;Q=0",
    ],
)
def test_json_refused_with_q_0_gets_one_sse_event(mcp: Mcp, accept: str) -> None:
    response = mcp.post(
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        {"Mcp-Session-Id": mcp.session, "Accept": accept},
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.content == b'event: message\ndata: {"jsonrpc":"2.0","id":3,"result":{}}\n\n'


@pytest.mark.parametrize(
    "accept",
    [
        "application/json;q=0",
        "application/json;q=0, text/event-stream;q=0",
        "*/*;q=0",
        "application/json;q=0, text/html",
        "text/*;q=0, application/json;q=0, */*",
    ],
)
def test_every_answer_type_refused_with_q_0_gets_406(mcp: Mcp, accept: str) -> None:
    response = mcp.post(
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        {"Mcp-Session-Id": mcp.session, "Accept": accept},
    )
    assert response.status_code == 406
    assert response.json() == error(
        None, -32600, "Not Acceptable: Client must accept application/json or text/event-stream"
    )


@pytest.mark.parametrize(
    "accept", ["application/json;q=0.1, text/event-stream", "*/*", "application/*", "*/*;q=0.01"]
)
def test_json_accepted_with_any_weight_above_0_gets_json(mcp: Mcp, accept: str) -> None:
    response = mcp.post(
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        {"Mcp-Session-Id": mcp.session, "Accept": accept},
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"


# -- Origin and authentication -------------------------------------------------------------------


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "http://127.0.0.1:8001", "null", "https://127.0.0.1:8000"]
)
def test_a_foreign_origin_answers_403(mcp: Mcp, origin: str) -> None:
    response = mcp.post(
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        {"Mcp-Session-Id": mcp.session, "Origin": origin},
    )
    assert response.status_code == 403
    assert response.json() == error(None, -32600, "Forbidden: foreign Origin")


def test_the_sites_own_origin_is_served(mcp: Mcp) -> None:
    response = mcp.post(
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        {"Mcp-Session-Id": mcp.session, "Origin": "http://127.0.0.1:8000"},
    )
    assert response.status_code == 200


def test_a_filter_may_allow_another_origin(mcp: Mcp) -> None:
    mcp.app.hooks.add_filter(
        "svc_mcp_allowed_origin",
        lambda allowed, origin: allowed or origin == "http://localhost:6274",
    )
    headers = {"Mcp-Session-Id": mcp.session, "Origin": "http://localhost:6274"}
    assert mcp.post({"jsonrpc": "2.0", "id": 3, "method": "ping"}, headers).status_code == 200


def test_refused_credentials_answer_401_in_the_rest_shape(mcp: Mcp) -> None:
    response = mcp.post(
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
        {"Mcp-Session-Id": mcp.session, **basic("editor1", "wrong wrong wrong wrong")},
    )
    assert response.status_code == 401
    assert response.json() == {
        "code": "incorrect_password",
        "message": "The provided password is an invalid application password.",
        "data": {"status": 401},
    }
    bearer = mcp.post(
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
        {"Mcp-Session-Id": mcp.session, "Authorization": "Bearer nope"},
    )
    assert bearer.status_code == 401
    assert bearer.json()["code"] == "bad_token"


def test_the_login_cookie_without_a_nonce_is_anonymous(mcp: Mcp) -> None:
    login = mcp.client.post("/login", data={"log": "admin1", "pwd": "admin password"})
    assert login.status_code == 303
    assert mcp.client.cookies
    names = [tool["name"] for tool in mcp.rpc("tools/list")["result"]["tools"]]
    assert names == ["site-info", "get_mcpdemo_v1_echo"]


def test_without_mcp_there_is_no_page(client_for: ClientFor) -> None:
    app = App()
    response = client_for(app).post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert response.status_code == 404
    assert "/mcp" not in app.pages


# -- tools/list ---------------------------------------------------------------------------------

ANYONE = ["site-info", "get_mcpdemo_v1_echo"]
SUBSCRIBER = ["site-info", "site-whoami", "get_mcpdemo_v1_echo"]
EDITOR = ["site-info", "site-whoami", "math-double", "get_mcpdemo_v1_echo", "post_mcpdemo_v1_items"]
ADMIN = [
    "site-info",
    "site-whoami",
    "math-double",
    "site-purge",
    "get_mcpdemo_v1_echo",
    "post_mcpdemo_v1_items",
]


@pytest.mark.parametrize(
    ("who", "names"),
    [("anonymous", ANYONE), ("subscriber", SUBSCRIBER), ("editor", EDITOR), ("admin", ADMIN)],
)
def test_tools_list_shows_what_the_caller_may_run(mcp: Mcp, who: str, names: list[str]) -> None:
    headers = {"anonymous": {}, "subscriber": mcp.subscriber, "editor": mcp.editor}
    headers["admin"] = mcp.admin
    tools = mcp.rpc("tools/list", {}, headers[who])["result"]["tools"]
    assert [tool["name"] for tool in tools] == names


def test_tools_list_describes_abilities_and_routes(mcp: Mcp) -> None:
    tools = {tool["name"]: tool for tool in mcp.rpc("tools/list", who=mcp.admin)["result"]["tools"]}
    assert tools["site-info"] == {
        "name": "site-info",
        "title": "Site information",
        "description": "The site's name.",
        "inputSchema": {"type": "object", "properties": {}},
        "outputSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        },
        "annotations": {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True},
    }
    # A non-object input is offered as "input", a non-object output as "result".
    assert tools["math-double"] == {
        "name": "math-double",
        "title": "Double",
        "description": "Twice the number given.",
        "inputSchema": {
            "type": "object",
            "properties": {"input": {"type": "integer", "minimum": 0}},
            "required": ["input"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"result": {"type": "integer"}},
            "required": ["result"],
        },
    }
    assert tools["site-purge"]["annotations"] == {"destructiveHint": True, "idempotentHint": True}
    assert tools["get_mcpdemo_v1_echo"] == {
        "name": "get_mcpdemo_v1_echo",
        "description": "Say the word back.",
        "inputSchema": {
            "type": "object",
            "properties": {"word": {"type": "string", "description": "A word."}},
            "required": ["word"],
        },
        "annotations": {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True},
    }
    items = tools["post_mcpdemo_v1_items"]
    assert items["inputSchema"] == {
        "type": "object",
        "properties": {"word": {"type": "string"}},
        "required": ["word"],
    }
    assert items["outputSchema"]["properties"]["word"] == {"type": "string"}
    assert items["outputSchema"]["properties"]["length"] == {"type": "integer"}
    assert items["annotations"] == {
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
    }


def test_a_route_tool_is_named_after_its_openapi_operation(mcp: Mcp) -> None:
    document = mcp.app.openapi()
    ids = {
        operation["operationId"]
        for item in document["paths"].values()
        for key, operation in item.items()
        if key != "x-svc-route"
    }
    assert {"get_mcpdemo_v1_echo", "post_mcpdemo_v1_items", "get_mcpdemo_v1_hidden"} <= ids
    names = [tool["name"] for tool in mcp.rpc("tools/list", who=mcp.admin)["result"]["tools"]]
    assert "get_mcpdemo_v1_hidden" not in names  # not marked "mcp": True


def test_an_ability_hidden_from_rest_is_no_tool(mcp: Mcp) -> None:
    mcp.app.register_ability(
        "site/secret",
        label="Secret",
        description="Not shown.",
        category="site",
        execute_callback=lambda: 1,
        permission_callback=svcrest.public,
        show_in_rest=False,
    )
    names = [tool["name"] for tool in mcp.rpc("tools/list")["result"]["tools"]]
    assert names == ANYONE
    assert mcp.rpc("tools/call", {"name": "site-secret"}) == error(
        7, -32602, "Unknown tool: site-secret"
    )


def test_a_route_marked_later_is_listed_next_time(mcp: Mcp) -> None:
    assert len(mcp.rpc("tools/list")["result"]["tools"]) == 2
    mcp.app.register_rest_route(
        "mcpdemo/v1",
        "/later",
        {
            "methods": "GET",
            "callback": lambda: {"ok": True},
            "permission_callback": svcrest.public,
            "mcp": True,
        },
    )
    names = [tool["name"] for tool in mcp.rpc("tools/list")["result"]["tools"]]
    assert names == [*ANYONE, "get_mcpdemo_v1_later"]


# -- tools/call ---------------------------------------------------------------------------------


def test_calls_answer_structured_results(mcp: Mcp) -> None:
    assert mcp.call("site-info", {}) == text_result({"name": "svcrest"})
    assert mcp.call("site-whoami", {}, mcp.subscriber) == text_result({"result": "sub1"})
    assert mcp.call("math-double", {"input": 21}, mcp.editor) == text_result({"result": 42})
    assert mcp.call("site-purge", {}, mcp.admin) == text_result({"result": True})
    assert mcp.call("get_mcpdemo_v1_echo", {"word": "hi"}) == text_result({"word": "hi"})
    assert mcp.call("post_mcpdemo_v1_items", {"word": "hello"}, mcp.editor) == text_result(
        {"word": "hello", "length": 5}
    )


def test_arguments_may_be_left_out(mcp: Mcp) -> None:
    result = mcp.rpc("tools/call", {"name": "site-info"})["result"]
    assert result == text_result({"name": "svcrest"})


def test_refusals_are_tool_errors_with_the_rest_code(mcp: Mcp) -> None:
    refused = tool_error(
        "rest_ability_cannot_execute",
        "Sorry, you are not allowed to execute this ability.",
        {"status": 401},
    )
    assert mcp.call("math-double", {"input": 2}) == refused
    assert mcp.call("site-purge", {}, mcp.editor) == tool_error(
        "rest_ability_cannot_execute",
        "Sorry, you are not allowed to execute this ability.",
        {"status": 403},
    )
    assert mcp.call("post_mcpdemo_v1_items", {"word": "x"}, mcp.subscriber) == tool_error(
        "rest_forbidden", "Sorry, you are not allowed to do that.", {"status": 403}
    )


def test_invalid_arguments_are_tool_errors_with_the_rest_code(mcp: Mcp) -> None:
    assert mcp.call("math-double", {"input": -1}, mcp.editor) == tool_error(
        "ability_invalid_input",
        'Ability "math/double" has invalid input. Reason: input must be greater than or equal to 0',
        {"status": 400},
    )
    assert mcp.call("get_mcpdemo_v1_echo", {}) == tool_error(
        "rest_missing_callback_param",
        "Missing parameter(s): word",
        {"status": 400, "params": ["word"]},
    )


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"name": 5},
        {"name": "site-info", "arguments": [1]},
        {"name": "site-info", "arguments": "x"},
    ],
)
def test_bad_call_params_are_invalid_params(mcp: Mcp, params: dict[str, Any]) -> None:
    assert mcp.rpc("tools/call", params) == error(7, -32602, "Invalid params")


def test_an_unknown_tool_is_invalid_params(mcp: Mcp) -> None:
    assert mcp.rpc("tools/call", {"name": "nope", "arguments": {}}) == error(
        7, -32602, "Unknown tool: nope"
    )


def test_a_tool_comes_and_goes_with_its_ability(mcp: Mcp) -> None:
    assert mcp.call("site-info", {}) == text_result({"name": "svcrest"})
    mcp.app.unregister_ability("site/info")
    assert mcp.rpc("tools/call", {"name": "site-info", "arguments": {}}) == error(
        7, -32602, "Unknown tool: site-info"
    )
    plain_ability(
        mcp.app,
        "site/info",
        "Site information",
        "The site's name, again.",
        execute_callback=lambda: {"name": "again"},
    )
    assert mcp.call("site-info", {}) == text_result({"name": "again"})


def test_a_call_runs_through_the_routes_rate_limit(mcp: Mcp) -> None:
    mcp.app.register_rest_route(
        "mcpdemo/v1",
        "/limited",
        {
            "methods": "GET",
            "callback": lambda: {"ok": True},
            "permission_callback": svcrest.public,
            "mcp": True,
        },
    )
    # One request a minute per caller.
    mcp.app.hooks.add_filter(
        "svc_rate_limit",
        lambda value, request: (
            {"limit": 1, "window": 60} if request.route == "/mcpdemo/v1/limited" else value
        ),
    )
    assert mcp.call("get_mcpdemo_v1_limited", {}) == text_result({"ok": True})
    second = mcp.call("get_mcpdemo_v1_limited", {})
    assert second["isError"] is True
    body = orjson.loads(second["content"][0]["text"])
    assert (body["code"], body["data"]["status"]) == ("rest_too_many_requests", 429)


def test_the_callback_sees_the_caller_and_the_request_id(mcp: Mcp) -> None:
    seen: list[tuple[int, str, bool]] = []

    def spy(request: svcrest.Request) -> dict[str, Any]:
        seen.append((svcrest.current_user().id, request.request_id, svcrest.is_rest_request()))
        return {}

    mcp.app.register_rest_route(
        "mcpdemo/v1",
        "/spy",
        {"methods": "GET", "callback": spy, "permission_callback": svcrest.public, "mcp": True},
    )
    response = mcp.post(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "get_mcpdemo_v1_spy"},
        },
        {"Mcp-Session-Id": mcp.session, "X-Request-Id": "abc123", **mcp.editor},
    )
    assert response.status_code == 200
    editor = mcp.app.users.get_by_login("editor1")
    assert editor is not None
    assert seen == [(editor.id, "abc123", True)]
    assert response.headers["x-request-id"] == "abc123"


# -- resources ----------------------------------------------------------------------------------


def test_resources_list_names_the_index_and_the_openapi_document(mcp: Mcp) -> None:
    assert mcp.rpc("resources/list")["result"] == {
        "resources": [
            {
                "uri": "http://127.0.0.1:8000/svc-json/",
                "name": "rest-index",
                "title": "REST API index",
                "description": "The REST API's index: its namespaces, routes and"
                " authentication schemes.",
                "mimeType": "application/json",
            },
            {
                "uri": "http://127.0.0.1:8000/openapi.json",
                "name": "openapi",
                "title": "OpenAPI document",
                "description": "The OpenAPI 3.1 document of the REST API.",
                "mimeType": "application/json",
            },
        ]
    }


def test_resources_read_answers_the_documents(mcp: Mcp) -> None:
    [index] = mcp.rpc("resources/read", {"uri": "http://127.0.0.1:8000/svc-json/"})["result"][
        "contents"
    ]
    assert (index["uri"], index["mimeType"]) == (
        "http://127.0.0.1:8000/svc-json/",
        "application/json",
    )
    assert "mcpdemo/v1" in orjson.loads(index["text"])["namespaces"]
    [openapi] = mcp.rpc("resources/read", {"uri": "http://127.0.0.1:8000/openapi.json"})["result"][
        "contents"
    ]
    assert orjson.loads(openapi["text"])["openapi"] == "3.1.0"


def test_resources_read_of_an_unknown_uri_is_resource_not_found(mcp: Mcp) -> None:
    assert mcp.rpc("resources/read", {"uri": "file:///etc/passwd"}) == error(
        7, -32002, "Resource not found", {"uri": "file:///etc/passwd"}
    )
    assert mcp.rpc("resources/read", {}) == error(7, -32602, "Invalid params")


# -- path parameters and idempotency keys ---------------------------------------------------------


def _word_routes(app: App) -> None:
    counter = itertools.count(1)
    app.register_rest_route(
        "mcpdemo/v1",
        r"/words/(?P<id>\d+)",
        {
            "methods": "GET",
            "callback": lambda request: {"id": request["id"]},
            "permission_callback": svcrest.public,
            "args": {"id": {"type": "integer"}},
            "mcp": True,
        },
    )
    app.register_rest_route(
        "mcpdemo/v1",
        "/notes",
        {
            0: {
                "methods": "POST",
                "callback": lambda request: {"title": request["title"], "n": next(counter)},
                "permission_callback": svcrest.public,
                "args": {"title": {"type": "string", "required": True}},
                "mcp": True,
            },
            "idempotency": "optional",
        },
    )


def test_a_route_tool_fills_its_path_parameters(mcp: Mcp) -> None:
    _word_routes(mcp.app)
    tools = {tool["name"]: tool for tool in mcp.rpc("tools/list")["result"]["tools"]}
    schema = tools["get_mcpdemo_v1_words_id"]["inputSchema"]
    assert schema["required"] == ["id"]
    assert schema["properties"]["id"]["type"] == "integer"
    assert mcp.call("get_mcpdemo_v1_words_id", {"id": 5}) == text_result({"id": 5})
    assert mcp.call("get_mcpdemo_v1_words_id", {}) == tool_error(
        "rest_missing_callback_param", "Missing parameter(s): id", {"status": 400, "params": ["id"]}
    )
    assert mcp.call("get_mcpdemo_v1_words_id", {"id": "5/../1"}) == tool_error(
        "rest_invalid_param",
        "Invalid parameter(s): id",
        {"status": 400, "params": {"id": "id is not a path segment."}},
    )


def test_an_idempotency_key_covers_the_calls_arguments(mcp: Mcp) -> None:
    _word_routes(mcp.app)

    def call(title: str) -> Any:
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "post_mcpdemo_v1_notes", "arguments": {"title": title}},
        }
        headers = {"Mcp-Session-Id": mcp.session, "Idempotency-Key": "k-1"}
        return mcp.post(message, headers).json()["result"]

    assert call("first") == text_result({"title": "first", "n": 1})
    assert call("first") == text_result({"title": "first", "n": 1})  # replayed, not run
    mismatch = call("second")
    assert mismatch["isError"] is True
    assert orjson.loads(mismatch["content"][0]["text"])["code"] == "rest_idempotency_mismatch"


def test_the_request_metrics_name_the_route_the_tool_ran(mcp: Mcp) -> None:
    seen: list[tuple[str, str, int]] = []
    mcp.app.request_observer = lambda method, route, status, seconds: seen.append(
        (method, route, status)
    )
    mcp.call("site-info", {})
    mcp.rpc("ping")
    assert seen == [
        ("POST", "/svc-abilities/v1/abilities/(?P<name>[a-zA-Z0-9\\-\\/]+?)/run", 200),
        ("POST", "", 200),
    ]


def test_a_throttled_password_answers_429_with_retry_after(mcp: Mcp) -> None:
    wrong = {"Mcp-Session-Id": mcp.session, **basic("editor1", "wrong wrong wrong wrong")}
    statuses = []
    for _ in range(30):
        response = mcp.post({"jsonrpc": "2.0", "id": 3, "method": "ping"}, wrong)
        statuses.append(response.status_code)
        if response.status_code == 429:
            break
    assert statuses[0] == 401
    assert statuses[-1] == 429
    assert response.json()["code"] == "svc_too_many_login_attempts"
    assert int(response.headers["retry-after"]) > 0


def test_the_endpoint_lives_under_the_homes_path(client_for: ClientFor) -> None:
    app = App("http://127.0.0.1:8000/blog", mcp=True)
    client = client_for(app)
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}
    response = client.post("/mcp", json=message, headers={"Origin": "http://127.0.0.1:8000"})
    assert response.status_code == 200
    session = response.headers["mcp-session-id"]
    listed = client.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 2, "method": "resources/list"},
        headers={"Mcp-Session-Id": session},
    )
    uris = [resource["uri"] for resource in listed.json()["result"]["resources"]]
    assert uris == [
        "http://127.0.0.1:8000/blog/svc-json/",
        "http://127.0.0.1:8000/blog/openapi.json",
    ]
    assert response.request.url == "http://127.0.0.1:8000/blog/mcp"


# -- scoped application passwords -------------------------------------------------------------

SCOPE_REFUSED = tool_error(
    "rest_application_password_scope",
    "This application password may not be used for this request.",
    {"status": 403},
)


def scoped(mcp: Mcp, scope: list[str] | None, read_only: bool = False) -> dict[str, str]:
    editor = mcp.app.users.get_by_login("editor1")
    assert editor is not None
    password, _ = mcp.app.users.create_application_password(
        editor.id, "scoped agent", scope=scope, read_only=read_only
    )
    return basic("editor1", password)


def test_a_scoped_password_lists_and_runs_only_the_tools_in_its_scope(mcp: Mcp) -> None:
    who = scoped(mcp, ["mcpdemo/v1"])
    tools = mcp.rpc("tools/list", {}, who)["result"]["tools"]
    assert [tool["name"] for tool in tools] == ["get_mcpdemo_v1_echo", "post_mcpdemo_v1_items"]
    assert mcp.call("post_mcpdemo_v1_items", {"word": "hello"}, who) == text_result(
        {"word": "hello", "length": 5}
    )
    assert mcp.call("math-double", {"input": 21}, who) == SCOPE_REFUSED
    assert mcp.call("site-info", {}, who) == SCOPE_REFUSED


def test_a_password_scoped_to_the_abilities_runs_only_them(mcp: Mcp) -> None:
    who = scoped(mcp, ["svc-abilities/v1"])
    tools = mcp.rpc("tools/list", {}, who)["result"]["tools"]
    assert [tool["name"] for tool in tools] == ["site-info", "site-whoami", "math-double"]
    assert mcp.call("math-double", {"input": 21}, who) == text_result({"result": 42})
    assert mcp.call("get_mcpdemo_v1_echo", {"word": "hi"}, who) == SCOPE_REFUSED


def test_a_read_only_password_lists_and_runs_only_reading_tools(mcp: Mcp) -> None:
    who = scoped(mcp, None, read_only=True)
    tools = mcp.rpc("tools/list", {}, who)["result"]["tools"]
    # math/double is not readonly: it runs with POST.
    assert [tool["name"] for tool in tools] == ["site-info", "site-whoami", "get_mcpdemo_v1_echo"]
    assert mcp.call("math-double", {"input": 21}, who) == SCOPE_REFUSED
    assert mcp.call("post_mcpdemo_v1_items", {"word": "x"}, who) == SCOPE_REFUSED
    assert mcp.call("get_mcpdemo_v1_echo", {"word": "hi"}, who) == text_result({"word": "hi"})


def test_a_line_sent_twice_is_read_joined(mcp: Mcp) -> None:
    # Two Accept lines (read as one list, "text/plain, text/event-stream") and a foreign
    # Origin sent twice: the lines are read as a REST request's.
    ping = b'{"jsonrpc":"2.0","id":4,"method":"ping"}'
    lines = [
        ("Content-Type", "application/json"),
        ("Accept", "text/plain"),
        ("Accept", "text/event-stream"),
        ("Mcp-Session-Id", mcp.session),
    ]
    response = mcp.client.post("/mcp", content=ping, headers=lines)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.text == 'event: message\ndata: {"jsonrpc":"2.0","id":4,"result":{}}\n\n'
    foreign = [*lines, ("Origin", "http://evil.example"), ("Origin", "http://evil.example")]
    assert mcp.client.post("/mcp", content=ping, headers=foreign).status_code == 403
