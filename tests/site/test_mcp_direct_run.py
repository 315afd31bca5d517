"""A ``tools/call`` of an ability without input schema whose run is a GET or DELETE, called
without arguments, runs the ability directly when the run route's dispatch would add nothing to it:
no internal request, match, argument step or permission gate (its permission callback is
asked once, as the run route's check asks it). Each test compares such a call
with the same call dispatched (the general path: ``Tool.inputless`` off) over varied callbacks:
the HTTP status and the exact answer bytes, the actions counted, the callback's runs and the
user it ran as, the route named for the metrics and the log line of a callback that fails;
and shows that anything on the dispatch that could change the answer (hooks of the
pipeline, rate limits, a scoped password, arguments, a site's own dispatch, the run handler
changed) sends the call through the dispatch again."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from typing import Any

import orjson
import pytest

import svcrest
from svcrest import App, Request, RestError, RestServer
from svcrest.http.context import RequestContext
from svcrest.http.exchange import HttpRequest, HttpResponse
from svcrest.site.host import Page, SiteHost
from svcrest.site.mcp.endpoint import McpEndpoint
from svcrest.site.mcp.tools import Tool
from tests.site.mcp_site import plain_ability
from tests.site.test_mcp import JSON_ACCEPT, basic

NAME = "site/plain"
TOOL = "site-plain"


class Site:
    """An MCP site with one ability, a session, and what each call left behind."""

    def __init__(self, app: App, client_for: Any) -> None:
        self.app = app
        self.client = client_for(app)
        self.routes: list[str] = []
        #: The routes of the internal requests dispatched (none on a direct run).
        self.dispatched: list[str] = []
        server = app.rest_get_server()
        planned = server.dispatch_planned

        async def dispatch_planned(request: Request, plan: Any) -> Any:
            self.dispatched.append(request.route)
            return await planned(request, plan)

        server.dispatch_planned = dispatch_planned  # type: ignore[method-assign]
        self.endpoint: McpEndpoint = app.pages["/mcp"].handler.__self__  # type: ignore[attr-defined]
        serve = self.endpoint.serve

        async def watched(host: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
            answer: HttpResponse = await serve(host, http, ctx)
            self.routes.append(ctx.matched_route)
            return answer

        app.pages["/mcp"] = Page(watched, ("POST", "DELETE"), html=False)
        opened = self.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
        assert opened.status_code == 200, opened.text
        self.session = opened.headers["mcp-session-id"]

    def post(self, message: Any, headers: dict[str, str] | None = None) -> Any:
        sent = {"Content-Type": "application/json", **JSON_ACCEPT, **(headers or {})}
        return self.client.post("/mcp", content=orjson.dumps(message), headers=sent)

    def call(self, arguments: Any = None, headers: dict[str, str] | None = None) -> Any:
        params: dict[str, Any] = {"name": TOOL}
        if arguments is not None:
            params["arguments"] = arguments
        message = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}
        return self.post(message, {"Mcp-Session-Id": self.session, **(headers or {})})

    def tool(self) -> Tool:
        found = self.endpoint.tools.find(TOOL)
        assert found is not None
        return found


def _site(client_for: Any, **options: Any) -> Site:
    app = App(mcp=True)
    app.register_ability_category("site", label="Site", description="About this site.")
    plain_ability(app, NAME, **options)
    app.users.create("editor1", "editor password", roles=["editor"])
    return Site(app, client_for)


def _raises() -> Any:
    raise ValueError("broken")


def _refuses() -> Any:
    raise RestError("site_refused", "Refused.", {"status": 409})


async def _async_dict() -> dict[str, Any]:
    await asyncio.sleep(0)
    return {"name": "later"}


async def _async_raises() -> Any:
    await asyncio.sleep(0)
    raise ValueError("broken later")


async def _async_refuses() -> Any:
    raise RestError("site_refused", "Refused later.")


def _who() -> dict[str, Any]:
    return {"name": svcrest.current_user().login, "id": svcrest.current_user().id}


def _can_edit() -> bool:
    return svcrest.current_user().can("edit_posts")


async def _async_can_edit() -> bool:
    await asyncio.sleep(0)
    return svcrest.current_user().can("edit_posts")


_OBJECT = {"type": "object", "properties": {"name": {"type": "string"}}}

#: An ability's options: callbacks answering every kind of result, output schemas that
#: accept and refuse it, the DELETE run, permission callbacks allowing and refusing in every
#: way, sync and async.
_CASES: dict[str, dict[str, Any]] = {
    "dict": {},
    "dict of its schema": {"output_schema": _OBJECT},
    "dict the schema refuses": {
        "output_schema": _OBJECT,
        "execute_callback": lambda: {"name": 5},
    },
    "string of its schema": {"output_schema": {"type": "string"}, "execute_callback": lambda: "a"},
    "list": {"execute_callback": lambda: [1, "two", None]},
    "string": {"execute_callback": lambda: "text"},
    "none": {"execute_callback": lambda: None},
    "zero of a number schema": {"output_schema": {"type": "number"}, "execute_callback": lambda: 0},
    "an error returned": {"execute_callback": lambda: RestError("site_no", "No.")},
    "an error with a status": {
        "execute_callback": lambda: RestError("site_gone", "Gone.", {"status": 410}),
    },
    "an error raised": {"execute_callback": _refuses},
    "an exception": {"execute_callback": _raises},
    "a Response": {"execute_callback": lambda: svcrest.Response({"name": "r"}, status=201)},
    "async": {"execute_callback": _async_dict},
    "async the schema refuses": {
        "output_schema": {"type": "object", "properties": {"name": {"type": "integer"}}},
        "execute_callback": _async_dict,
    },
    "async exception": {"execute_callback": _async_raises},
    "async error": {"execute_callback": _async_refuses},
    "the caller": {"execute_callback": _who},
    "DELETE": {"annotations": {"destructive": True, "idempotent": True}},
    "DELETE, the caller": {
        "annotations": {"destructive": True, "idempotent": True},
        "execute_callback": _who,
    },
    "allowed": {"permission_callback": lambda: True},
    "allowed, its input": {"permission_callback": lambda input: input is None},
    "refused": {"permission_callback": lambda: False},
    "refused by a truthy value": {"permission_callback": lambda: 1},
    "by capability": {"permission_callback": _can_edit, "execute_callback": _who},
    "refused with a status": {
        "permission_callback": lambda: RestError("site_no", "No.", {"status": 418}),
    },
    "refused without a status": {"permission_callback": lambda: RestError("site_no", "No.")},
    "refused, raised": {"permission_callback": _refuses},
    "a permission that fails": {"permission_callback": _raises},
    "async, by capability": {"permission_callback": _async_can_edit, "execute_callback": _who},
    "async allowed, async run": {
        "permission_callback": _async_can_edit,
        "execute_callback": _async_dict,
    },
    "async, refused raised": {"permission_callback": _async_refuses},
    "async permission that fails": {"permission_callback": _async_raises},
    "DELETE, by capability": {
        "annotations": {"destructive": True, "idempotent": True},
        "permission_callback": _can_edit,
    },
}


#: The request id a log line names (each HTTP request has its own).
_REQUEST_ID = re.compile(r"\(request [0-9a-f]+\)")


def _observed(
    site: Site, caplog: pytest.LogCaptureFixture, headers: dict[str, str] | None = None
) -> list[Any]:
    """Two calls (the second once the actions are known quiet): what each left behind."""
    hooks = site.app.hooks
    seen = []
    for _ in range(2):
        caplog.clear()
        before = hooks.did_action("svc_before_execute_ability")
        after = hooks.did_action("svc_after_execute_ability")
        answer = site.call({}, headers)
        seen.append(
            (
                answer.status_code,
                answer.headers["content-type"],
                answer.content,
                hooks.did_action("svc_before_execute_ability") - before,
                hooks.did_action("svc_after_execute_ability") - after,
                site.routes[-1],
                [
                    (
                        record.levelname,
                        _REQUEST_ID.sub("(request …)", record.getMessage()),
                        getattr(record, "route", None),
                    )
                    for record in caplog.records
                    if record.name == "svcrest"
                ],
            )
        )
    return seen


@pytest.mark.parametrize("case", list(_CASES))
@pytest.mark.parametrize("who", ["anonymous", "editor"])
def test_a_direct_run_answers_as_the_dispatched_one(
    client_for: Any,
    caplog: pytest.LogCaptureFixture,
    case: str,
    who: str,
) -> None:
    site = _site(client_for, **_CASES[case])
    dispatched = site.dispatched
    headers: dict[str, str] = {}
    if who == "editor":
        editor = site.app.users.get_by_login("editor1")
        assert editor is not None
        password, _ = site.app.users.create_application_password(editor.id, "agent")
        headers = basic("editor1", password)
    caplog.set_level(logging.ERROR, logger="svcrest")
    direct = _observed(site, caplog, headers)
    assert dispatched == []  # run directly: no internal request was made
    site.tool().inputless = False  # the general path: the run route dispatched
    general = _observed(site, caplog, headers)
    assert len(dispatched) == 2
    assert direct == general
    assert direct[0][5] == "/svc-abilities/v1/abilities/(?P<name>[a-zA-Z0-9\\-\\/]+?)/run"


def test_a_response_of_the_callback_is_the_tools_result(client_for: Any) -> None:
    """An ability answering with a Response of its own (kept as WordPress's
    ``rest_ensure_response`` keeps one): the tool's result is its data, on both paths."""
    site = _site(client_for, **_CASES["a Response"])
    expected = (
        b'{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":'
        b'"{\\"name\\":\\"r\\"}"}],"structuredContent":{"name":"r"},"isError":false}}'
    )
    assert (site.call().status_code, site.call().content) == (200, expected)
    site.tool().inputless = False  # the general path: the run route dispatched
    assert site.call().content == expected
    assert len(site.dispatched) == 1


def test_a_direct_runs_answer_and_its_actions(client_for: Any) -> None:
    """What a direct run answers, written out: the JSON-RPC result of the callback's data,
    both actions with their arguments once a callback listens."""
    site = _site(client_for, output_schema=_OBJECT)
    dispatched = site.dispatched
    heard: list[Any] = []
    site.app.hooks.add_action("svc_before_execute_ability", lambda *args: heard.append(args))
    site.app.hooks.add_action("svc_after_execute_ability", lambda *args: heard.append(args))
    answer = site.call()
    assert answer.status_code == 200
    assert answer.content == (
        b'{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":'
        b'"{\\"name\\":\\"x\\"}"}],"structuredContent":{"name":"x"},"isError":false}}'
    )
    assert heard == [(NAME, None), (NAME, None, {"name": "x"})]
    assert dispatched == []


def _pre_dispatch(app: App) -> None:
    app.hooks.add_filter("rest_pre_dispatch", lambda result, server, request: result)


def _before_callbacks(app: App) -> None:
    app.hooks.add_filter("rest_request_before_callbacks", lambda response, *rest: response)


def _dispatch_request(app: App) -> None:
    app.hooks.add_filter("rest_dispatch_request", lambda result, *rest: result)


def _after_callbacks(app: App) -> None:
    app.hooks.add_filter("rest_request_after_callbacks", lambda response, *rest: response)


def _rate_limit(app: App) -> None:
    app.hooks.add_filter("svc_rate_limit", lambda value, request: {"limit": 1, "window": 60})


def _arg_added_in_place(app: App) -> None:
    server = app.rest_get_server()
    chosen = server.table.handler_for(f"/svc-abilities/v1/abilities/{NAME}/run", "GET")
    assert chosen is not None
    chosen[1].definition["args"]["extra"] = {
        "type": "string",
        "required": True,
        "description": "Added in place.",
    }


def _answered_instead(app: App) -> None:
    app.hooks.add_filter("rest_dispatch_request", lambda result, *rest: {"name": "from a filter"})


#: Changes that may change a tool call's answer: each sends it through the dispatch.
_DISPATCHERS: dict[str, Callable[[App], None]] = {
    "rest_pre_dispatch": _pre_dispatch,
    "rest_request_before_callbacks": _before_callbacks,
    "rest_dispatch_request": _dispatch_request,
    "rest_dispatch_request answering": _answered_instead,
    "rest_request_after_callbacks": _after_callbacks,
    "svc_rate_limit": _rate_limit,
    "an argument added in place": _arg_added_in_place,
}


@pytest.mark.parametrize("change", list(_DISPATCHERS))
def test_a_change_the_dispatch_could_make_sends_the_call_through_it(
    client_for: Any, change: str
) -> None:
    site = _site(client_for)
    dispatched = site.dispatched
    first = site.call()
    assert dispatched == []
    _DISPATCHERS[change](site.app)
    changed = [site.call(), site.call()]
    assert dispatched == [f"/svc-abilities/v1/abilities/{NAME}/run"] * 2
    site.tool().inputless = False
    general = [site.call(), site.call()]
    if change == "svc_rate_limit":  # the limit counts on: both refused now
        changed = changed[1:] * 2
    assert [(one.status_code, one.content) for one in changed] == [
        (one.status_code, one.content) for one in general
    ]
    if change in ("rest_pre_dispatch", "rest_request_before_callbacks", "rest_dispatch_request"):
        assert changed[0].content == first.content
    elif change == "rest_dispatch_request answering":
        assert orjson.loads(changed[0].content)["result"]["structuredContent"] == {
            "name": "from a filter"
        }
    elif change == "svc_rate_limit":
        assert b"rest_too_many_requests" in changed[0].content
    elif change == "an argument added in place":
        assert b"rest_missing_callback_param" in changed[0].content


def test_calls_with_arguments_or_a_scope_or_other_abilities_are_dispatched(client_for: Any) -> None:
    site = _site(client_for)
    dispatched = site.dispatched
    assert site.call({"extra": 1}).status_code == 200  # the ability's own refusal
    assert dispatched == [f"/svc-abilities/v1/abilities/{NAME}/run"]
    editor = site.app.users.get_by_login("editor1")
    assert editor is not None
    password, _ = site.app.users.create_application_password(
        editor.id, "scoped", scope=["svc-abilities/v1"], read_only=True
    )
    dispatched.clear()
    scoped = site.call({}, basic("editor1", password))
    assert orjson.loads(scoped.content)["result"]["structuredContent"] == {"name": "x"}
    assert dispatched == [f"/svc-abilities/v1/abilities/{NAME}/run"]
    for options in (
        {"input_schema": {"type": "object"}},
        {"annotations": {"readonly": False}},
    ):
        other = _site(client_for, **options)
        assert other.call({}).status_code == 200
        assert len(other.dispatched) == 1
        assert other.tool().inputless is False


def test_a_registry_or_route_table_change_is_seen(client_for: Any) -> None:
    site = _site(client_for)
    dispatched = site.dispatched
    site.call()
    known = site.tool().direct
    plain_ability(
        site.app, "site/other", "Other", "Another.", execute_callback=lambda: {"name": "other"}
    )
    site.call()
    assert site.tool().direct[2] != known[2]  # the registry's version asked again
    site.app.register_rest_route(
        "site/v1", "/thing", {"callback": lambda: {}, "permission_callback": svcrest.public}
    )
    site.call()
    assert site.tool().direct[1] != known[1]  # the route table's
    site.app.unregister_ability(NAME)
    gone = site.call()
    assert orjson.loads(gone.content)["error"]["code"] == -32602
    assert dispatched == []


def test_a_sites_own_dispatch_is_used(client_for: Any) -> None:
    ran: list[str] = []

    class Server(RestServer):
        async def dispatch_planned(self, request: Request, plan: Any) -> Any:
            ran.append(request.route)
            return await super().dispatch_planned(request, plan)

    app = App(mcp=True)
    app.hooks.add_filter("svc_rest_server_class", lambda cls: Server)
    app.register_ability_category("site", label="Site", description="About this site.")
    plain_ability(app, NAME)
    site = Site(app, client_for)
    assert orjson.loads(site.call().content)["result"]["structuredContent"] == {"name": "x"}
    assert ran == [f"/svc-abilities/v1/abilities/{NAME}/run"]
