"""Internal dispatch: matching, arguments, permissions, errors and the hook pipeline."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest

from svcrest import App, Request, Response, RestError, public, rest_ensure_response
from svcrest.http.user import User
from tests.conftest import SiteClient

NO_ROUTE = "No route was found matching the URL and request method."


def echo(request: Request) -> dict[str, Any]:
    return {"params": request.get_params(), "url": request.url_params}


@pytest.fixture
def app() -> App:
    return App()


def test_unknown_route_is_404(app: App) -> None:
    response = app.rest_do_request("/nope")
    assert response.status == 404
    assert response.data == {
        "code": "rest_no_route",
        "message": NO_ROUTE,
        "data": {"status": 404},
    }


def test_empty_route_matches_nothing(app: App) -> None:
    assert app.rest_do_request(Request("GET", "")).status == 404


def test_wrong_method_is_405_with_allow(app: App) -> None:
    app.register_rest_route(
        "demo/v1",
        "/items",
        [{"permission_callback": public, "methods": "GET, PUT", "callback": echo}],
    )
    response = app.rest_do_request(Request("DELETE", "/demo/v1/items"))
    assert response.status == 405
    assert response.data["code"] == "rest_no_route"
    assert response.headers["Allow"] == "GET, PUT"


def test_a_405_where_no_method_is_allowed_sends_no_allow_header(
    app: App, client_for: Callable[..., SiteClient]
) -> None:
    # Spec 4.5: when no method is allowed the header is not sent (also on a 405).
    app.register_rest_route(
        "demo/v1",
        "/locked",
        {"methods": "GET", "callback": echo, "permission_callback": lambda request: False},
    )
    internal = app.rest_do_request(Request("DELETE", "/demo/v1/locked"))
    assert (internal.status, "Allow" in internal.headers) == (405, False)
    served = client_for(app).request("DELETE", "/svc-json/demo/v1/locked")
    assert (served.status_code, "allow" in served.headers) == (405, False)


def test_named_groups_become_url_params_unnamed_do_not(app: App) -> None:
    app.register_rest_route(
        "demo/v1",
        r"/items/(?P<id>\d+)/(draft|live)(?:/(?P<rev>\d+))?",
        {"permission_callback": public, "callback": echo},
    )
    response = app.rest_do_request("/demo/v1/items/7/live")
    assert response.status == 200
    assert response.data["url"] == {"id": "7"}
    response = app.rest_do_request("/demo/v1/items/7/draft/3")
    assert response.data["url"] == {"id": "7", "rev": "3"}


def test_matching_is_anchored_and_case_insensitive(app: App) -> None:
    app.register_rest_route(
        "demo/v1", "/items", {"permission_callback": public, "callback": lambda r: "items"}
    )
    assert app.rest_do_request("/DEMO/V1/Items").status == 200
    assert app.rest_do_request("/demo/v1/items/extra").status == 404
    assert app.rest_do_request("/x/demo/v1/items").status == 404
    assert app.rest_do_request("/demo/v1/items\n").status == 404


def test_first_registered_match_wins(app: App) -> None:
    app.register_rest_route(
        "demo/v1",
        r"/(?P<slug>[a-z]+)",
        {"permission_callback": public, "callback": lambda r: "slug"},
    )
    app.register_rest_route(
        "demo/v1", "/special", {"permission_callback": public, "callback": lambda r: "special"}
    )
    assert app.rest_do_request("/demo/v1/special").data == "slug"


def test_later_route_serves_a_method_the_first_match_lacks(app: App) -> None:
    app.register_rest_route(
        "demo/v1",
        r"/(?P<slug>[a-z]+)",
        {"permission_callback": public, "callback": lambda r: "get"},
    )
    app.register_rest_route(
        "demo/v1",
        "/special",
        {"permission_callback": public, "methods": "POST", "callback": lambda r: "post"},
    )
    assert app.rest_do_request(Request("POST", "/demo/v1/special")).data == "post"


def test_first_handler_with_the_method_wins(app: App) -> None:
    app.register_rest_route(
        "demo/v1",
        "/items",
        [
            {"permission_callback": public, "methods": "POST", "callback": lambda r: "post"},
            {"permission_callback": public, "methods": "GET", "callback": lambda r: "first"},
            {"permission_callback": public, "methods": "GET", "callback": lambda r: "second"},
        ],
    )
    assert app.rest_do_request("/demo/v1/items").data == "first"


def test_head_uses_get_handler(app: App) -> None:
    app.register_rest_route(
        "demo/v1", "/items", {"permission_callback": public, "callback": lambda r: r.method}
    )
    response = app.rest_do_request(Request("HEAD", "/demo/v1/items"))
    assert (response.status, response.data) == (200, "HEAD")


def test_head_handler_is_preferred_when_declared(app: App) -> None:
    app.register_rest_route(
        "demo/v1",
        "/items",
        [
            {"permission_callback": public, "methods": "GET", "callback": lambda r: "get"},
            {"permission_callback": public, "methods": "HEAD", "callback": lambda r: "head"},
        ],
    )
    # The GET handler comes first and HEAD is served by GET unless a handler declares HEAD:
    # WordPress checks handler by handler, so the first handler (GET) answers.
    assert app.rest_do_request(Request("HEAD", "/demo/v1/items")).data == "get"


def test_async_callback_and_permission(app: App) -> None:
    async def permission(request: Request) -> bool:
        await asyncio.sleep(0)
        return True

    async def callback(request: Request) -> dict[str, int]:
        await asyncio.sleep(0)
        return {"n": 1}

    app.register_rest_route(
        "demo/v1", "/a", {"callback": callback, "permission_callback": permission}
    )
    response = app.rest_do_request("/demo/v1/a")
    assert (response.status, response.data) == (200, {"n": 1})


def test_rest_do_request_async(app: App) -> None:
    app.register_rest_route(
        "demo/v1", "/a", {"permission_callback": public, "callback": lambda r: "x"}
    )
    response = asyncio.run(app.rest_do_request_async("/demo/v1/a"))
    assert response.data == "x"


def test_rest_do_request_from_inside_a_running_loop(app: App) -> None:
    app.register_rest_route(
        "demo/v1", "/a", {"permission_callback": public, "callback": lambda r: "x"}
    )

    async def main() -> Response:
        return app.rest_do_request("/demo/v1/a")

    assert asyncio.run(main()).data == "x"


@pytest.mark.parametrize(
    ("returned", "status", "data"),
    [
        ({"a": 1}, 200, {"a": 1}),
        (Response({"b": 2}, 201, {"X-Y": "z"}), 201, {"b": 2}),
        (
            RestError("my_error", "Nope.", {"status": 418}),
            418,
            {"code": "my_error", "message": "Nope.", "data": {"status": 418}},
        ),
        (
            RestError("no_status", "No status."),
            500,
            {"code": "no_status", "message": "No status.", "data": None},
        ),
        (None, 200, None),
    ],
    ids=["data", "response", "error", "error-without-status", "none"],
)
def test_callback_results(app: App, returned: Any, status: int, data: Any) -> None:
    app.register_rest_route(
        "demo/v1", "/r", {"permission_callback": public, "callback": lambda r: returned}
    )
    response = app.rest_do_request("/demo/v1/r")
    assert (response.status, response.data) == (status, data)
    assert response.matched_route == "/demo/v1/r"


def test_raised_rest_error_is_the_response(app: App) -> None:
    def callback(request: Request) -> None:
        raise RestError("bad_thing", "Bad thing.", {"status": 409})

    app.register_rest_route("demo/v1", "/r", {"permission_callback": public, "callback": callback})
    response = app.rest_do_request("/demo/v1/r")
    assert response.status == 409
    assert response.data == {"code": "bad_thing", "message": "Bad thing.", "data": {"status": 409}}


def test_unexpected_exception_is_500_without_internals(
    app: App, caplog: pytest.LogCaptureFixture
) -> None:
    def callback(request: Request) -> None:
        raise ValueError("secret database password")

    app.register_rest_route("demo/v1", "/r", {"permission_callback": public, "callback": callback})
    with caplog.at_level(logging.ERROR, logger="svcrest"):
        response = app.rest_do_request("/demo/v1/r")
    assert response.status == 500
    assert response.data == {
        "code": "rest_internal_error",
        "message": "Internal server error.",
        "data": {"status": 500},
    }
    assert "secret database password" in caplog.text  # logged with the traceback
    assert "Traceback" in caplog.text


@pytest.mark.parametrize(
    ("verdict", "user", "status", "code"),
    [
        (True, User(0), 200, None),
        (False, User(0), 401, "rest_forbidden"),
        (False, User(5, "ed", ("editor",)), 403, "rest_forbidden"),
        (1, User(0), 401, "rest_forbidden"),
        ("yes", User(0), 401, "rest_forbidden"),
        (None, User(0), 401, "rest_forbidden"),
        (RestError("custom", "Custom.", {"status": 402}), User(0), 402, "custom"),
    ],
    ids=["true", "false-anon", "false-user", "one", "string", "none", "error"],
)
def test_permission_only_true_allows(
    app: App, verdict: Any, user: User, status: int, code: str | None
) -> None:
    called: list[bool] = []

    def callback(request: Request) -> str:
        called.append(True)
        return "done"

    app.register_rest_route(
        "demo/v1", "/p", {"callback": callback, "permission_callback": lambda r: verdict}
    )
    request = Request("GET", "/demo/v1/p")
    request.user = user
    response = app.rest_do_request(request)
    assert response.status == status
    if code is None:
        assert called == [True]
    else:
        assert response.data["code"] == code
        assert called == []
    if code == "rest_forbidden":
        assert response.data["message"] == "Sorry, you are not allowed to do that."


ARGS = {
    "count": {"type": "integer", "minimum": 1, "maximum": 10, "default": 5},
    "flag": {"type": "boolean"},
    "name": {"type": "string", "required": True, "minLength": 2},
    "kind": {"type": "string", "enum": ["a", "b"]},
}


def _typed(request: Request) -> dict[str, Any]:
    return {k: request[k] for k in ("count", "flag", "name", "kind")}


def test_query_strings_coerce_to_declared_types(app: App) -> None:
    app.register_rest_route(
        "demo/v1", "/t", {"permission_callback": public, "callback": _typed, "args": ARGS}
    )
    response = app.rest_do_request(
        Request("GET", "/demo/v1/t", query={"count": "7", "flag": "true", "name": "xy"})
    )
    assert response.status == 200
    assert response.data == {"count": 7, "flag": True, "name": "xy", "kind": None}


def test_default_applies_and_satisfies_required(app: App) -> None:
    app.register_rest_route(
        "demo/v1",
        "/d",
        {
            "permission_callback": public,
            "callback": _typed,
            "args": {**ARGS, "name": {"type": "string", "required": True, "default": "zz"}},
        },
    )
    response = app.rest_do_request("/demo/v1/d")
    assert response.status == 200
    assert response.data == {"count": 5, "flag": None, "name": "zz", "kind": None}


def test_missing_required_param(app: App) -> None:
    app.register_rest_route(
        "demo/v1",
        "/t",
        {
            "permission_callback": public,
            "callback": _typed,
            "args": {**ARGS, "other": {"required": True}},
        },
    )
    response = app.rest_do_request("/demo/v1/t")
    assert response.status == 400
    assert response.data == {
        "code": "rest_missing_callback_param",
        "message": "Missing parameter(s): name, other",
        "data": {"status": 400, "params": ["name", "other"]},
    }


def test_invalid_params_are_listed_with_details(app: App) -> None:
    called: list[bool] = []

    def permission(request: Request) -> bool:
        called.append(True)
        return True

    app.register_rest_route(
        "demo/v1", "/t", {"callback": _typed, "args": ARGS, "permission_callback": permission}
    )
    response = app.rest_do_request(
        Request("GET", "/demo/v1/t", query={"count": "99", "name": "x", "kind": "c"})
    )
    assert response.status == 400
    data = response.data
    assert data["code"] == "rest_invalid_param"
    assert data["message"] == "Invalid parameter(s): count, name, kind"
    assert set(data["data"]["params"]) == {"count", "name", "kind"}
    assert data["data"]["details"]["count"]["code"] == "rest_out_of_bounds"
    assert data["data"]["details"]["kind"]["code"] == "rest_not_in_enum"
    assert data["data"]["params"]["count"] == data["data"]["details"]["count"]["message"]
    assert called == []  # validation runs before permission


@pytest.mark.parametrize(
    ("outcome", "status", "message"),
    [
        (True, 200, None),
        (False, 400, "Invalid parameter."),
        (RestError("too_odd", "Must be even."), 400, "Must be even."),
    ],
    ids=["true", "false", "error"],
)
def test_validate_callback(app: App, outcome: Any, status: int, message: str | None) -> None:
    seen: list[tuple[Any, str]] = []

    def validate(value: Any, request: Request, key: str) -> Any:
        seen.append((value, key))
        return outcome

    app.register_rest_route(
        "demo/v1",
        "/v",
        {
            "permission_callback": public,
            "callback": lambda r: r["n"],
            "args": {"n": {"validate_callback": validate}},
        },
    )
    response = app.rest_do_request(Request("GET", "/demo/v1/v", query={"n": "3"}))
    assert response.status == status
    assert seen == [("3", "n")]
    if message is not None:
        assert response.data["data"]["params"] == {"n": message}


def test_async_validate_and_sanitize_callbacks(app: App) -> None:
    async def validate(value: Any, request: Request, key: str) -> bool:
        return bool(value != "bad")

    async def sanitize(value: Any, request: Request, key: str) -> str:
        return str(value).upper()

    app.register_rest_route(
        "demo/v1",
        "/s",
        {
            "permission_callback": public,
            "callback": lambda r: r["w"],
            "args": {"w": {"validate_callback": validate, "sanitize_callback": sanitize}},
        },
    )
    assert app.rest_do_request(Request("GET", "/demo/v1/s", query={"w": "abc"})).data == "ABC"
    assert app.rest_do_request(Request("GET", "/demo/v1/s", query={"w": "bad"})).status == 400


def test_param_precedence_url_json_body_query_defaults(app: App) -> None:
    app.register_rest_route(
        "demo/v1",
        r"/p/(?P<id>\d+)",
        {
            "permission_callback": public,
            "methods": "POST",
            "callback": lambda r: r.get_params(),
            "args": {"id": {}, "d": {"default": "default"}, "q": {}},
        },
    )
    request = Request(
        "POST",
        "/demo/v1/p/7",
        query={"id": "q", "q": "query", "d": "query-d"},
        body={"id": "b", "q": "body"},
        json={"id": "j", "q": "json"},
    )
    data = app.rest_do_request(request).data
    assert data["id"] == "7"
    assert data["q"] == "json"
    assert data["d"] == "query-d"


def test_invalid_json_body_stops_everything(app: App) -> None:
    ran: list[str] = []

    def callback(request: Request) -> None:
        ran.append("callback")

    def permission(request: Request) -> bool:
        ran.append("permission")
        return True

    app.register_rest_route(
        "demo/v1",
        "/j",
        {"methods": "POST", "callback": callback, "permission_callback": permission},
    )
    request = Request(
        "POST", "/demo/v1/j", headers={"Content-Type": "application/json"}, raw_body=b"{bad"
    )
    response = app.rest_do_request(request)
    assert response.status == 400
    assert response.data["code"] == "rest_invalid_json"
    assert ran == []


def test_hook_order(app: App) -> None:
    order: list[str] = []

    def make(name: str) -> Any:
        def hook(value: Any, *args: Any) -> Any:
            order.append(name)
            return value

        return hook

    for name in (
        "rest_pre_dispatch",
        "rest_request_before_callbacks",
        "rest_dispatch_request",
        "rest_request_after_callbacks",
    ):
        app.hooks.add_filter(name, make(name))

    def callback(request: Request) -> None:
        order.append("callback")

    def permission(request: Request) -> bool:
        order.append("permission")
        return True

    app.register_rest_route(
        "demo/v1", "/h", {"callback": callback, "permission_callback": permission}
    )
    app.rest_do_request("/demo/v1/h")
    assert order == [
        "rest_pre_dispatch",
        "rest_request_before_callbacks",
        "permission",
        "rest_dispatch_request",
        "callback",
        "rest_request_after_callbacks",
    ]


def test_pre_dispatch_short_circuits(app: App) -> None:
    app.register_rest_route(
        "demo/v1", "/h", {"permission_callback": public, "callback": lambda r: "real"}
    )
    app.hooks.add_filter("rest_pre_dispatch", lambda result, server, request: "short")
    assert app.rest_do_request("/demo/v1/h").data == "short"


def test_dispatch_request_filter_replaces_callback(app: App) -> None:
    app.register_rest_route(
        "demo/v1", "/h", {"permission_callback": public, "callback": lambda r: "real"}
    )
    app.hooks.add_filter(
        "rest_dispatch_request", lambda result, request, route, handler: f"via {route}"
    )
    assert app.rest_do_request("/demo/v1/h").data == "via /demo/v1/h"


def test_rest_ensure_request_inputs(app: App) -> None:
    request = Request("POST", "/x")
    assert app.rest_ensure_request(request) is request
    from_mapping = app.rest_ensure_request({"a": "1"})
    assert (from_mapping.method, from_mapping.route, from_mapping.query_params) == (
        "GET",
        "",
        {"a": "1"},
    )
    from_string = app.rest_ensure_request("/demo/v1/x")
    assert (from_string.method, from_string.route) == ("GET", "/demo/v1/x")


def test_a_route_string_s_query_string_becomes_query_params(app: App) -> None:
    request = app.rest_ensure_request("/demo/v1/x?done=true&tag[]=a&tag[]=b&who[id]=3#top")
    assert (request.method, request.route) == ("GET", "/demo/v1/x")
    assert request.query_params == {"done": "true", "tag": ["a", "b"], "who": {"id": "3"}}
    assert app.rest_ensure_request("/demo/v1/x?").query_params == {}
    assert app.rest_ensure_request("/demo/v1/x?q=a%20b+c").query_params == {"q": "a b c"}


def test_rest_do_request_reads_a_route_string_s_query(app: App) -> None:
    app.register_rest_route(
        "demo/v1",
        "/todos",
        {
            "permission_callback": public,
            "args": {"done": {"type": "boolean"}, "page": {"type": "integer", "default": 1}},
            "callback": lambda request: {"done": request["done"], "page": request["page"]},
        },
    )
    response = app.rest_do_request("/demo/v1/todos?done=true&page=2")
    assert (response.status, response.data) == (200, {"done": True, "page": 2})
    refused = app.rest_do_request("/demo/v1/todos?page=zero")
    assert (refused.status, refused.data["code"]) == (400, "rest_invalid_param")


def test_rest_do_request_of_a_mapping_is_404(app: App) -> None:
    assert app.rest_do_request({"a": "1"}).status == 404


def test_rest_ensure_response() -> None:
    response = Response(1)
    error = RestError("x")
    assert rest_ensure_response(response) is response
    assert rest_ensure_response(error) is error
    wrapped = rest_ensure_response([1, 2])
    assert isinstance(wrapped, Response)
    assert (wrapped.data, wrapped.status) == ([1, 2], 200)


def test_no_callback_is_invalid_handler(app: App) -> None:
    app.register_rest_route(
        "demo/v1", "/n", {"permission_callback": public, "methods": "GET", "callback": None}
    )
    response = app.rest_do_request("/demo/v1/n")
    assert response.status == 500
    assert response.data["code"] == "rest_invalid_handler"


def test_sync_dispatch_of_callbacks_that_really_wait(app: App) -> None:
    async def slow(request: Request) -> dict[str, Any]:
        await asyncio.sleep(0.001)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[int] = loop.create_future()
        loop.call_soon(future.set_result, 5)
        return {"value": await future}

    async def failing(request: Request) -> None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[int] = loop.create_future()
        loop.call_soon(future.set_exception, RestError("late", "Late.", {"status": 409}))
        await future

    app.register_rest_route("demo/v1", "/slow", {"permission_callback": public, "callback": slow})
    app.register_rest_route(
        "demo/v1", "/failing", {"permission_callback": public, "callback": failing}
    )
    for _ in range(3):  # the thread's loop is reused between calls
        assert app.rest_do_request("/demo/v1/slow").data == {"value": 5}
        failed = app.rest_do_request("/demo/v1/failing")
        assert (failed.status, failed.data["code"]) == (409, "late")


def test_waiting_http_request_over_wsgi_leaks_no_context() -> None:
    from svcrest.http.context import current_context

    app = App()

    async def slow(request: Request) -> str:
        await asyncio.sleep(0.001)
        return "done"

    app.register_rest_route("demo/v1", "/slow", {"permission_callback": public, "callback": slow})
    import httpx

    with httpx.Client(transport=httpx.WSGITransport(app=app.wsgi), base_url=app.home) as client:
        assert client.get("/svc-json/demo/v1/slow").json() == "done"
    assert current_context() is None


def test_405_allow_sees_url_params(app: App) -> None:
    seen: list[Any] = []

    def permission(request: Request) -> bool:
        seen.append(request.get_param("id"))
        return True

    app.register_rest_route(
        "demo/v1",
        r"/things/(?P<id>\d+)",
        {"methods": "DELETE", "callback": lambda r: "x", "permission_callback": permission},
    )
    response = app.rest_do_request(Request("POST", "/demo/v1/things/4"))
    assert (response.status, response.headers["Allow"]) == (405, "DELETE")
    assert seen == ["4"]


def test_server_dispatch_sync_and_async(app: App) -> None:
    app.register_rest_route(
        "demo/v1", "/s", {"permission_callback": public, "callback": lambda r: "sync"}
    )
    server = app.rest_get_server()
    assert server.dispatch(Request("GET", "/demo/v1/s")).data == "sync"
    assert asyncio.run(server.dispatch_async(Request("GET", "/demo/v1/s"))).data == "sync"


def test_callbacks_may_take_fewer_arguments(app: App) -> None:
    app.register_rest_route(
        "demo/v1",
        "/few",
        {
            "callback": lambda: "no request needed",
            "permission_callback": lambda: True,
            "args": {
                "n": {
                    "validate_callback": lambda value: value != "bad",
                    "sanitize_callback": lambda value: value.upper(),
                }
            },
        },
    )
    ok = app.rest_do_request(Request("GET", "/demo/v1/few", query={"n": "x"}))
    assert (ok.status, ok.data) == (200, "no request needed")
    assert app.rest_do_request(Request("DELETE", "/demo/v1/few")).headers["Allow"] == "GET"
    refused = app.rest_do_request(Request("GET", "/demo/v1/few", query={"n": "bad"}))
    assert refused.status == 400


def test_internal_dispatch_runs_a_server_class_own_dispatch_async(app: App) -> None:
    from svcrest.rest.server import RestServer

    seen: list[tuple[str, int]] = []

    class NotingServer(RestServer):
        async def dispatch_async(self, request: Request) -> Response:
            seen.append((request.route, request.user.id))
            return await super().dispatch_async(request)

    app.hooks.add_filter("svc_rest_server_class", lambda cls: NotingServer)
    app.register_rest_route("t/v1", "/x", {"callback": echo, "permission_callback": public})
    response = app.rest_do_request(Request("GET", "/t/v1/x", query={"a": "1"}))
    assert response.status == 200
    assert response.data == {"params": {"a": "1"}, "url": {}}
    assert app.rest_do_request("/t/v1/x?b=2").data == {"params": {"b": "2"}, "url": {}}
    assert seen == [("/t/v1/x", 0), ("/t/v1/x", 0)]
