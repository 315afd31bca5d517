"""Callbacks after the default filters of ``rest_post_dispatch`` and ``rest_pre_serve_request``.

A request without a query string runs the default filters as one step with these callbacks
around it (``StepWithCallbacks``); a request with one runs the general chains. Each test
sends both and checks that every callback sees, and the client gets, exactly the same.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from svcrest import App, Request, Response, RestError, public
from svcrest.rest.defaults import StepWithCallbacks, default_own_lines
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
ITEM = "/svc-json/demo/v1/items/7"
DATA: dict[str, Any] = {"id": 7, "title": "t"}
ORIGIN = {"Origin": "http://example.com"}
CORS = (
    ("Access-Control-Allow-Origin", "http://example.com"),
    ("Access-Control-Allow-Methods", "POST, GET, OPTIONS, PUT, DELETE"),
    ("Access-Control-Allow-Credentials", "true"),
)
#: Lines every answer has that say nothing of the finishing hooks.
_OTHER = {"date", "x-request-id", "server"}


def make_app(callback: Callable[[Request], Any] | None = None, permission: Any = public) -> App:
    app = App()
    app.register_rest_route(
        "demo/v1",
        r"/items/(?P<id>\d+)",
        {
            "methods": "GET",
            "permission_callback": permission,
            "callback": callback or (lambda r: dict(DATA)),
        },
    )
    return app


def post_recorder(seen: list[Any]) -> Callable[..., Any]:
    """A ``rest_post_dispatch`` callback that records the response's own lines."""

    def posted(response: Response, server: Any, request: Request) -> Any:
        seen.append(response.header_tuple())
        return response

    return posted


def serve_recorder(seen: list[Any], name: str | None = None) -> Callable[..., Any]:
    """A ``rest_pre_serve_request`` callback that records the response's own lines (after
    ``name`` when given)."""

    def served(served: Any, result: Response, request: Request, server: Any) -> Any:
        seen.append(result.header_tuple() if name is None else (name, result.header_tuple()))
        return served

    return served


def _answer(response: httpx.Response) -> tuple[int, bytes, list[tuple[str, str]]]:
    lines = [(k, v) for k, v in response.headers.multi_items() if k not in _OTHER]
    return response.status_code, response.content, lines


def both(
    client_for: ClientFor,
    make: Callable[[list[Any]], App],
    headers: dict[str, str] | None = None,
) -> tuple[httpx.Response, list[Any]]:
    """The answer to ``ITEM`` without a query string and what the callbacks saw, after
    checking that ``ITEM?unused=1`` (the general chains) gives the same."""
    answers = []
    for path in (ITEM, ITEM + "?unused=1"):
        seen: list[Any] = []
        response = client_for(make(seen)).get(path, headers=headers)
        answers.append((response, seen))
    (fast, fast_seen), (general, general_seen) = answers
    assert fast_seen == general_seen
    assert _answer(fast) == _answer(general)
    return fast, fast_seen


def _step_of(app: App) -> Any:
    return app.rest_get_server().plan().default_step


def test_the_step_with_callbacks_runs_only_when_a_hook_has_callbacks_after_its_default() -> None:
    app = make_app()
    assert _step_of(app) is default_own_lines
    app.hooks.add_filter("rest_pre_serve_request", lambda served, *args: served, 5)
    assert _step_of(app) is None  # before the default: the general chains
    app = make_app()
    app.hooks.add_filter("rest_post_dispatch", lambda response, *args: response, 20)
    app.hooks.add_filter("rest_pre_serve_request", lambda served, *args: served, 20)
    step = _step_of(app)
    assert isinstance(step.__self__, StepWithCallbacks)
    assert (len(step.__self__.post), len(step.__self__.pre)) == (1, 1)


def test_a_pre_serve_filter_that_removes_and_changes_the_default_lines(
    client_for: ClientFor,
) -> None:
    def make(seen: list[Any]) -> App:
        app = make_app()

        def served(served: Any, result: Response, request: Request, server: Any) -> Any:
            seen.append(result.header_tuple())
            del result.headers["Access-Control-Allow-Credentials"]
            result.header("Allow", "GET, HEAD")
            return served

        app.hooks.add_filter("rest_pre_serve_request", served)
        return app

    response, seen = both(client_for, make, ORIGIN)
    assert seen == [(("Allow", "GET"), *CORS)]
    assert response.headers["allow"] == "GET, HEAD"
    assert "access-control-allow-credentials" not in response.headers
    assert response.headers["access-control-allow-origin"] == "http://example.com"
    assert response.json() == DATA


def test_a_post_dispatch_filter_that_removes_allow_still_gets_the_cors_lines(
    client_for: ClientFor,
) -> None:
    def make(seen: list[Any]) -> App:
        app = make_app()

        def posted(response: Response, server: Any, request: Request) -> Any:
            seen.append(response.header_tuple())
            del response.headers["Allow"]
            return response

        def served(served: Any, result: Response, request: Request, server: Any) -> Any:
            seen.append(result.header_tuple())
            return served

        app.hooks.add_filter("rest_post_dispatch", posted)
        app.hooks.add_filter("rest_pre_serve_request", served)
        return app

    response, seen = both(client_for, make, ORIGIN)
    assert seen == [(("Allow", "GET"),), CORS]
    assert "allow" not in response.headers
    assert response.headers["access-control-allow-methods"] == "POST, GET, OPTIONS, PUT, DELETE"


def test_a_post_dispatch_filter_that_leaves_the_lines_alone(client_for: ClientFor) -> None:
    # The step's CORS lines are added to the untouched lines; with and without an Origin.
    def make(seen: list[Any]) -> App:
        app = make_app()

        def posted(response: Response, server: Any, request: Request) -> Any:
            seen.append(("post", response.header_tuple(), response.status))
            response.set_status(203)
            return response

        def served(served: Any, result: Response, request: Request, server: Any) -> Any:
            seen.append(("serve", result.header_tuple()))
            return served

        app.hooks.add_filter("rest_post_dispatch", posted)
        app.hooks.add_filter("rest_pre_serve_request", served)
        return app

    response, seen = both(client_for, make, ORIGIN)
    assert seen == [("post", (("Allow", "GET"),), 200), ("serve", (("Allow", "GET"), *CORS))]
    assert response.status_code == 203
    response, seen = both(client_for, make)
    assert seen == [("post", (("Allow", "GET"),), 200), ("serve", (("Allow", "GET"),))]
    assert "access-control-allow-origin" not in response.headers


@pytest.mark.parametrize("post", [True, False])
def test_a_response_with_lines_of_its_own_keeps_them_around_the_callbacks(
    client_for: ClientFor, post: bool
) -> None:
    # The handler's own CORS line is replaced by the CORS filter, as WordPress's headers are.
    def handler(request: Request) -> Response:
        return Response(
            dict(DATA), headers={"X-Own": "1", "Access-Control-Allow-Origin": "http://other"}
        )

    def make(seen: list[Any]) -> App:
        app = make_app(handler)
        if post:
            app.hooks.add_filter("rest_post_dispatch", post_recorder(seen))
        app.hooks.add_filter("rest_pre_serve_request", serve_recorder(seen))
        return app

    response, seen = both(client_for, make, ORIGIN)
    own = (("X-Own", "1"), ("Access-Control-Allow-Origin", "http://other"), ("Allow", "GET"))
    assert seen[:-1] == ([own] if post else [])
    assert seen[-1] == (("X-Own", "1"), ("Allow", "GET"), *CORS)
    assert response.headers["access-control-allow-origin"] == "http://example.com"
    assert response.headers["x-own"] == "1"


def test_a_post_dispatch_filter_that_answers_a_new_response(client_for: ClientFor) -> None:
    def make(seen: list[Any]) -> App:
        app = make_app()

        def posted(response: Response, server: Any, request: Request) -> Any:
            return Response({"replaced": True}, 201, {"X-New": "yes"})

        def served(served: Any, result: Response, request: Request, server: Any) -> Any:
            seen.append((result.status, result.data, result.header_tuple()))
            return served

        app.hooks.add_filter("rest_post_dispatch", posted)
        app.hooks.add_filter("rest_pre_serve_request", served)
        return app

    response, seen = both(client_for, make, ORIGIN)
    assert seen == [(201, {"replaced": True}, (("X-New", "yes"), *CORS))]
    assert response.status_code == 201
    assert response.json() == {"replaced": True}
    assert "allow" not in response.headers
    response, seen = both(client_for, make)
    assert seen == [(201, {"replaced": True}, (("X-New", "yes"),))]


def test_a_post_dispatch_filter_that_answers_data_or_an_error(client_for: ClientFor) -> None:
    def make_data(seen: list[Any]) -> App:
        app = make_app()
        app.hooks.add_filter("rest_post_dispatch", lambda response, *args: {"plain": 1})
        return app

    response, _ = both(client_for, make_data, ORIGIN)
    assert (response.status_code, response.json()) == (200, {"plain": 1})
    assert "allow" not in response.headers
    assert response.headers["access-control-allow-credentials"] == "true"

    def make_error(seen: list[Any]) -> App:
        app = make_app()
        app.hooks.add_filter(
            "rest_post_dispatch",
            lambda response, *args: RestError("svc_gone", "Gone.", {"status": 410}),
        )
        return app

    response, _ = both(client_for, make_error)
    assert response.status_code == 410
    assert response.json() == {"code": "svc_gone", "message": "Gone.", "data": {"status": 410}}


def test_async_filters_after_the_default_ones(client_for: ClientFor) -> None:
    def make(seen: list[Any]) -> App:
        app = make_app()

        async def posted(response: Response, server: Any, request: Request) -> Any:
            await asyncio.sleep(0)
            seen.append(("post", response.header_tuple()))
            response.header("X-Posted", "1")
            return response

        async def served(served: Any, result: Response, request: Request, server: Any) -> Any:
            await asyncio.sleep(0)
            seen.append(("serve", result.header_tuple()))
            return served

        app.hooks.add_filter("rest_post_dispatch", posted)
        app.hooks.add_filter("rest_pre_serve_request", served)
        return app

    response, seen = both(client_for, make, ORIGIN)
    assert seen == [
        ("post", (("Allow", "GET"),)),
        ("serve", (("Allow", "GET"), ("X-Posted", "1"), *CORS)),
    ]
    assert response.json() == DATA
    assert response.headers["x-posted"] == "1"


def test_an_async_pre_serve_filter_that_serves_the_body_itself(client_for: ClientFor) -> None:
    def make(seen: list[Any]) -> App:
        app = make_app()

        async def served(served: Any, result: Response, request: Request, server: Any) -> Any:
            seen.append(result.header_tuple())
            return True

        app.hooks.add_filter("rest_pre_serve_request", served)
        return app

    response, seen = both(client_for, make, ORIGIN)
    assert seen == [(("Allow", "GET"), *CORS)]
    assert response.status_code == 200
    assert response.content == b""
    assert response.headers["allow"] == "GET"


def test_an_async_permission_callback_with_callbacks_after_the_defaults(
    client_for: ClientFor,
) -> None:
    # The Allow value waits on the permission callback; the callbacks run after it.
    async def allowed(request: Request) -> bool:
        await asyncio.sleep(0)
        return True

    for post in (False, True):

        def make(seen: list[Any], post: bool = post) -> App:
            app = make_app(permission=allowed)
            if post:
                app.hooks.add_filter("rest_post_dispatch", post_recorder(seen))
            app.hooks.add_filter("rest_pre_serve_request", serve_recorder(seen))
            return app

        response, seen = both(client_for, make, ORIGIN)
        assert seen == ([(("Allow", "GET"),)] if post else []) + [(("Allow", "GET"), *CORS)]
        assert response.json() == DATA


def test_several_callbacks_on_each_hook_around_the_default_ones(client_for: ClientFor) -> None:
    # Before the defaults (priority 5), after them (10, 20), plain and async in one chain.
    def make(seen: list[Any]) -> App:
        app = make_app()

        def record(name: str) -> Callable[..., Any]:
            def posted(response: Response, server: Any, request: Request) -> Any:
                seen.append((name, response.header_tuple()))
                response.header(f"X-{name}", "1", replace=False)
                return response

            return posted

        async def later(response: Response, server: Any, request: Request) -> Any:
            seen.append(("async", response.header_tuple()))
            return response

        def serve(name: str, answer: Any) -> Callable[..., Any]:
            def served(served: Any, result: Response, request: Request, server: Any) -> Any:
                seen.append((name, served, result.header_tuple()))
                return answer

            return served

        app.hooks.add_filter("rest_post_dispatch", record("p10"))
        app.hooks.add_filter("rest_post_dispatch", later, 15)
        app.hooks.add_filter("rest_post_dispatch", record("p20"), 20)
        app.hooks.add_filter("rest_pre_serve_request", serve("s10", 0))
        app.hooks.add_filter("rest_pre_serve_request", serve("s20", False), 20)
        return app

    response, seen = both(client_for, make, ORIGIN)
    allow = ("Allow", "GET")
    lines = (allow, ("X-p10", "1"), ("X-p20", "1"), *CORS)
    assert seen == [
        ("p10", (allow,)),
        ("async", (allow, ("X-p10", "1"))),
        ("p20", (allow, ("X-p10", "1"))),
        ("s10", False, lines),
        ("s20", 0, lines),
    ]
    assert response.json() == DATA

    def make_before(seen: list[Any]) -> App:
        app = make(seen)
        app.hooks.add_filter("rest_pre_serve_request", serve_recorder(seen, "s5"), 5)
        return app

    response, seen = both(client_for, make_before, ORIGIN)
    assert seen[3] == ("s5", (allow, ("X-p10", "1"), ("X-p20", "1")))
    assert response.headers["x-p20"] == "1"


def test_a_pre_serve_filter_that_reads_the_headers_changes_nothing(
    client_for: ClientFor,
) -> None:
    def make(seen: list[Any]) -> App:
        app = make_app()

        def served(served: Any, result: Response, request: Request, server: Any) -> Any:
            seen.append(dict(result.headers.items()))
            return served

        app.hooks.add_filter("rest_pre_serve_request", served)
        return app

    response, seen = both(client_for, make, ORIGIN)
    assert seen == [{"Allow": "GET", **dict(CORS)}]
    assert response.headers["allow"] == "GET"


@pytest.mark.parametrize("change", [False, True])
def test_a_post_dispatch_filter_alone(client_for: ClientFor, change: bool) -> None:
    # No rest_pre_serve_request callback: the lines the client gets are the step's, the
    # filter's change, and the CORS lines after them.
    def make(seen: list[Any]) -> App:
        app = make_app()

        def posted(response: Response, server: Any, request: Request) -> Any:
            seen.append(response.header_tuple())
            if change:
                response.header("Allow", "GET, HEAD")
                response.header("X-Posted", "1", replace=False)
            return response

        app.hooks.add_filter("rest_post_dispatch", posted)
        return app

    allow = "GET, HEAD" if change else "GET"
    for headers in (ORIGIN, None):
        response, seen = both(client_for, make, headers)
        assert seen == [(("Allow", "GET"),)]
        assert response.headers["allow"] == allow
        assert ("x-posted" in response.headers) is change
        cors = response.headers.get("access-control-allow-origin")
        assert cors == ("http://example.com" if headers else None)
        assert response.json() == DATA
