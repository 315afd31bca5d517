"""A ``tools/call`` of an ability answers as the long path does: the endpoint runs the site
server's dispatch itself (not through ``rest_do_request_async``), finds an ability's tool
by the registry's version of the names, and reads a known session and ``Accept`` value
without a call. Each test proves one of those shortcuts behaves as internal dispatch of the
ability's run route: rate limits, permissions asked again, the output check, the caller as
``current_user()``, and a site whose internal dispatch or server is its own."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

import svcrest
from svcrest import App, Request, RestServer
from tests.site.mcp_site import SUBSCRIBER_TOKEN, plain_ability
from tests.site.test_mcp import JSON_ACCEPT, Mcp, error, make_app, text_result, tool_error

RUN = "/svc-json/svc-abilities/v1/abilities/{}/run"


@pytest.fixture(name="mcp")
def mcp_site(client_for: Any) -> Mcp:
    """The site of the transport's tests (tests/site/mcp_site.py), with a session."""
    app, editor, admin = make_app()
    site = _session(app, client_for)
    site.editor, site.admin = editor, admin
    site.subscriber = {"Authorization": f"Bearer {SUBSCRIBER_TOKEN}"}
    return site


def _ability(app: App, name: str, **extra: Any) -> None:
    plain_ability(app, name, "An ability", **extra)


def _rest_error(mcp: Mcp, name: str, headers: dict[str, str] | None = None) -> Any:
    """The run route's error over REST, as a tool error carries it."""
    response = mcp.client.get(RUN.format(name), headers=headers or {})
    assert response.status_code >= 400
    return response.json()


def _carried(result: dict[str, Any]) -> Any:
    assert result["isError"] is True
    return orjson.loads(result["content"][0]["text"])


def test_a_rate_limited_site_still_limits_an_abilitys_tool(mcp: Mcp) -> None:
    mcp.app.hooks.add_filter(
        "svc_rate_limit",
        lambda value, request: (
            {"limit": 2, "window": 60} if request.route.endswith("/site/info/run") else value
        ),
    )
    assert mcp.call("site-info", {}) == text_result({"name": "svcrest"})
    assert mcp.call("site-info", {}) == text_result({"name": "svcrest"})
    third = _carried(mcp.call("site-info", {}))
    assert (third["code"], third["data"]["status"]) == ("rest_too_many_requests", 429)


def test_a_permission_that_changes_between_list_and_call_is_asked_again(mcp: Mcp) -> None:
    allowed = {"now": True}
    _ability(mcp.app, "site/gated", permission_callback=lambda: allowed["now"])
    names = [tool["name"] for tool in mcp.rpc("tools/list")["result"]["tools"]]
    assert "site-gated" in names
    assert mcp.call("site-gated", {}) == text_result({"name": "x"})
    allowed["now"] = False
    refused = mcp.call("site-gated", {})
    assert refused == tool_error(
        "rest_ability_cannot_execute",
        "Sorry, you are not allowed to execute this ability.",
        {"status": 401},
    )
    assert _carried(refused) == _rest_error(mcp, "site/gated")
    logged_in = _carried(mcp.call("site-gated", {}, mcp.editor))
    assert logged_in == _rest_error(mcp, "site/gated", mcp.editor)
    assert logged_in["data"] == {"status": 403}


def test_an_output_the_schema_refuses_is_the_same_error_as_over_rest(mcp: Mcp) -> None:
    _ability(
        mcp.app,
        "site/liar",
        output_schema={"type": "object", "properties": {"name": {"type": "string"}}},
        execute_callback=lambda: {"name": 5},
    )
    over_rest = _rest_error(mcp, "site/liar")
    assert over_rest == {
        "code": "ability_invalid_output",
        "message": 'Ability "site/liar" has invalid output. Reason: output[name] is not of'
        " type string.",
        "data": {"status": 500},
    }
    assert _carried(mcp.call("site-liar", {})) == over_rest


def test_the_ability_runs_as_the_caller(mcp: Mcp) -> None:
    seen: list[int] = []

    def who() -> dict[str, Any]:
        seen.append(svcrest.current_user().id)
        return {"name": svcrest.current_user().login}

    _ability(mcp.app, "site/who", execute_callback=who)
    assert mcp.call("site-who", {}, mcp.editor) == text_result({"name": "editor1"})
    assert mcp.call("site-who", {}) == text_result({"name": ""})
    editor = mcp.app.users.get_by_login("editor1")
    assert editor is not None
    assert seen == [editor.id, 0]
    assert svcrest.current_user().id == 0  # nothing left set after the call


def test_an_apps_own_internal_dispatch_runs_the_tools(client_for: Any) -> None:
    dispatched: list[str] = []

    class Site(App):
        async def rest_do_request_async(self, request: Any) -> Any:
            dispatched.append(request.route)
            return await super().rest_do_request_async(request)

    app = Site(mcp=True)
    app.register_ability_category("site", label="Site", description="About this site.")
    _ability(app, "site/one", execute_callback=lambda: {"name": "one"})
    mcp = _session(app, client_for)
    assert mcp.call("site-one", {}) == text_result({"name": "one"})
    assert dispatched == ["/svc-abilities/v1/abilities/site/one/run"]


def test_a_server_class_with_its_own_dispatch_runs_the_tools(client_for: Any) -> None:
    dispatched: list[str] = []

    class Server(RestServer):
        async def dispatch_async(self, request: Request) -> Any:
            dispatched.append(request.route)
            return await super().dispatch_async(request)

    app = App(mcp=True)
    app.hooks.add_filter("svc_rest_server_class", lambda cls: Server)
    app.register_ability_category("site", label="Site", description="About this site.")
    _ability(app, "site/one", execute_callback=lambda: {"name": "one"})
    mcp = _session(app, client_for)
    assert mcp.call("site-one", {}) == text_result({"name": "one"})
    assert dispatched == ["/svc-abilities/v1/abilities/site/one/run"]


def test_a_session_used_then_ended_is_not_found(mcp: Mcp) -> None:
    assert mcp.rpc("ping") == {"jsonrpc": "2.0", "id": 7, "result": {}}
    ended = mcp.client.request("DELETE", "/mcp", headers={"Mcp-Session-Id": mcp.session})
    assert ended.status_code == 204
    again = mcp.post({"jsonrpc": "2.0", "id": 7, "method": "ping"}, {"Mcp-Session-Id": mcp.session})
    assert again.status_code == 404
    assert again.json() == error(None, -32600, "Session not found")


def test_a_known_session_with_a_version_not_served_answers_400(mcp: Mcp) -> None:
    assert mcp.rpc("ping") == {"jsonrpc": "2.0", "id": 7, "result": {}}
    refused = mcp.post(
        {"jsonrpc": "2.0", "id": 7, "method": "ping"},
        {"Mcp-Session-Id": mcp.session, "MCP-Protocol-Version": "1999-01-01"},
    )
    assert refused.status_code == 400
    assert refused.json() == error(
        None, -32600, "Bad Request: Unsupported protocol version: 1999-01-01"
    )


def test_an_accept_value_refused_before_is_refused_again(mcp: Mcp) -> None:
    for _ in range(2):
        refused = mcp.post(
            {"jsonrpc": "2.0", "id": 7, "method": "ping"},
            {"Mcp-Session-Id": mcp.session, "Accept": "text/html"},
        )
        assert refused.status_code == 406
    json_body = mcp.post(
        {"jsonrpc": "2.0", "id": 7, "method": "ping"},
        {"Mcp-Session-Id": mcp.session, "Content-Type": "text/plain"},
    )
    assert json_body.status_code == 415


def _session(app: App, client_for: Any) -> Mcp:
    client = client_for(app)
    opened = client.post(
        "/mcp",
        content=orjson.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}},
            }
        ),
        headers={"Content-Type": "application/json", **JSON_ACCEPT},
    )
    assert opened.status_code == 200, opened.text
    return Mcp(app, client, opened.headers["mcp-session-id"], {}, {}, {})


_INPUT_SCHEMAS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({}, {}),
    ({"input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}}}, {}),
    ({"input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}}}, {"n": 5}),
    ({"input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}}}, {"n": "5"}),
    ({"input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}}}, {"n": "x"}),
    ({"input_schema": {"type": "object", "additionalProperties": False}}, {"extra": 1}),
    ({"input_schema": {"type": "integer"}}, {"input": 3}),
    ({"input_schema": {"type": "integer"}}, {}),
    ({"input_schema": {"type": "string"}}, {"input": "a b"}),
    ({"annotations": {"destructive": True, "idempotent": True}}, {}),
    (
        {
            "annotations": {"destructive": True, "idempotent": True},
            "input_schema": {"type": "object", "properties": {"id": {"type": "integer"}}},
        },
        {"id": 2},
    ),
    ({"annotations": {"readonly": False}}, {}),
    (
        {
            "annotations": {"readonly": False},
            "input_schema": {"type": "object", "properties": {"id": {"type": "integer"}}},
        },
        {"id": 2},
    ),
]


@pytest.mark.parametrize(("options", "arguments"), _INPUT_SCHEMAS)
def test_a_query_input_tool_call_answers_as_the_general_request(
    client_for: Any, options: dict[str, Any], arguments: dict[str, Any]
) -> None:
    """The request of an ability tool whose input goes in the query (GET and DELETE runs, an
    object input), made in ``_tools_call`` from the tool's prepared parts, answers as
    ``Tool.request``'s: the same answer and the same input seen by the callback."""
    seen: list[Any] = []

    def echo(input: Any = None) -> dict[str, Any]:
        seen.append(input)
        return {"got": input}

    app = App(mcp=True)
    app.register_ability_category("site", label="Site", description="About this site.")
    _ability(app, "site/echo", execute_callback=echo, **options)
    mcp = _session(app, client_for)
    endpoint = app.pages["/mcp"].handler.__self__  # type: ignore[attr-defined]
    tool = endpoint.tools.find("site-echo")
    assert tool is not None
    assert tool.query_input is (tool.method != "POST" and not tool.wrap_input)
    fast = mcp.call("site-echo", arguments)
    tool.query_input = False  # the general path: Tool.request
    general = mcp.call("site-echo", arguments)
    assert fast == general
    assert seen[: len(seen) // 2] == seen[len(seen) // 2 :]


#: Plain abilities (public, no input schema) of each run method, and the arguments of a call.
_PLAIN_CALLS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({}, {}),
    ({}, {"extra": 1}),
    ({"annotations": {"destructive": True, "idempotent": True}}, {}),
    ({"annotations": {"destructive": True, "idempotent": True}}, {"extra": "x"}),
    ({"annotations": {"readonly": False}}, {}),
    ({"output_schema": {"type": "object", "properties": {"name": {"type": "integer"}}}}, {}),
]


@pytest.mark.parametrize(("options", "arguments"), _PLAIN_CALLS)
def test_a_plain_abilitys_tool_call_answers_as_the_general_path(
    client_for: Any, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any], arguments: Any
) -> None:
    """A tools/call of a public ability without input schema takes the run route's
    shortcuts (the argument step's URL-only test without the query bucket, the plain run
    allowed and run at once, the quiet actions counted without a call): the JSON-RPC answer,
    the actions counted and the callback's runs are those of the general path."""
    ran: list[str] = []

    def named() -> dict[str, Any]:
        ran.append("run")
        return {"name": "x"}

    app = App(mcp=True)
    app.register_ability_category("site", label="Site", description="About this site.")
    _ability(app, "site/plain", execute_callback=named, **options)
    mcp = _session(app, client_for)
    ability = app.abilities.by_name["site/plain"]
    answers: list[Any] = []
    for _ in range(2):  # the second call after the hooks were found quiet
        before = app.hooks.did_action("svc_before_execute_ability")
        after = app.hooks.did_action("svc_after_execute_ability")
        answer = mcp.rpc("tools/call", {"name": "site-plain", "arguments": arguments})
        answers.append(
            (
                answer,
                app.hooks.did_action("svc_before_execute_ability") - before,
                app.hooks.did_action("svc_after_execute_ability") - after,
                len(ran),
            )
        )
    assert ability.plain_method == ("" if ability.run_method == "POST" else ability.run_method)
    monkeypatch.setattr(ability, "plain_method", "")  # the general permission check and run
    monkeypatch.setattr(Request, "lone_url_params", lambda self: None)  # the buckets walked
    ran.clear()
    general: list[Any] = []
    for _ in range(2):
        before = app.hooks.did_action("svc_before_execute_ability")
        after = app.hooks.did_action("svc_after_execute_ability")
        answer = mcp.rpc("tools/call", {"name": "site-plain", "arguments": arguments})
        general.append(
            (
                answer,
                app.hooks.did_action("svc_before_execute_ability") - before,
                app.hooks.did_action("svc_after_execute_ability") - after,
                len(ran),
            )
        )
    assert answers == general


def test_a_notification_is_answered_202_only_with_an_open_session(mcp: Mcp) -> None:
    """A notification or a response to the server gets its 202 after the session's checks,
    as a request does (and an ``initialize`` notification, needing none, at once)."""
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    reply = {"jsonrpc": "2.0", "id": 3, "result": {}}
    for message in (note, reply):
        missing = mcp.post(message)
        assert missing.status_code == 400
        assert missing.json() == error(None, -32600, "Bad Request: Missing session ID")
        unknown = mcp.post(message, {"Mcp-Session-Id": "nope.00"})
        assert unknown.status_code == 404
        assert unknown.json() == error(None, -32600, "Session not found")
        accepted = mcp.post(message, {"Mcp-Session-Id": mcp.session})
        assert (accepted.status_code, accepted.content) == (202, b"")
    initialize = mcp.post({"jsonrpc": "2.0", "method": "initialize", "params": {}})
    assert (initialize.status_code, initialize.content) == (202, b"")
