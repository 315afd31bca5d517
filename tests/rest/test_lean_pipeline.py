"""What the pipeline prepares ahead leaves every answer as WordPress gives it.

The plan skips the default OPTIONS filter for other methods, the finishing hooks run without
a coroutine while their callbacks answer plainly, and an answer's header lines are encoded
once per shape: each test here pins a case where a shortcut could have changed an answer.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from svcrest import App, Request, Response, RestError, public
from svcrest.bounded import Memo
from svcrest.http import exchange, headers
from svcrest.http.exchange import HttpRequest, HttpResponse, host_name, remembered_host_name
from svcrest.http.headers import Headers, asgi_header_lines
from svcrest.rest import wire
from svcrest.rest.defaults import (
    StepWithCallbacks,
    default_own_lines,
    rest_filter_response_fields,
    rest_handle_options_request,
    rest_send_allow_header,
)
from svcrest.rest.plan import PipelinePlan
from svcrest.site.respond import respond
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
ITEM = "/svc-json/demo/v1/items/7"


def make_app() -> App:
    app = App()
    app.register_rest_route(
        "demo/v1",
        r"/items/(?P<id>\d+)",
        {
            "methods": "GET",
            "permission_callback": public,
            "callback": lambda r: {"id": int(r["id"]), "title": "t", "extra": True},
        },
    )
    return app


def test_the_plan_leaves_out_a_leading_options_filter_for_other_methods() -> None:
    app = make_app()
    server = app.rest_get_server()
    plan = server.plan()
    assert plan.pre_dispatch == (rest_handle_options_request,)
    assert plan.pre_dispatch_no_options == ()


def test_a_callback_before_the_options_filter_keeps_it_for_every_method() -> None:
    app = make_app()
    server = app.rest_get_server()

    def early(result: Any, server: Any, request: Request) -> Any:
        return result

    app.hooks.add_filter("rest_pre_dispatch", early, 5)
    plan = server.plan()
    assert plan.pre_dispatch_no_options == (early, rest_handle_options_request)
    app.hooks.add_filter("rest_pre_dispatch", early, 20)
    assert PipelinePlan(app.hooks).pre_dispatch_no_options[-1] is early


def test_the_plan_leaves_out_the_fields_filter_for_a_request_without_a_query() -> None:
    app = make_app()
    plan = app.rest_get_server().plan()
    assert plan.post_dispatch == (rest_send_allow_header, rest_filter_response_fields)
    assert plan.post_dispatch_no_query == (rest_send_allow_header,)


def test_a_callback_before_the_fields_filter_keeps_it_without_a_query() -> None:
    app = make_app()

    def early(result: Any, server: Any, request: Request) -> Any:
        return result

    app.hooks.add_filter("rest_post_dispatch", early, 5)
    plan = app.rest_get_server().plan()
    kept = (early, rest_send_allow_header, rest_filter_response_fields)
    assert plan.post_dispatch_no_query == kept


def test_fields_set_by_an_earlier_filter_still_filter_a_request_without_a_query(
    client_for: ClientFor,
) -> None:
    app = make_app()

    def only_id(result: Any, server: Any, request: Request) -> Any:
        request.set_param("_fields", "id")
        return result

    app.hooks.add_filter("rest_post_dispatch", only_id, 5)
    assert client_for(app).get(ITEM).json() == {"id": 7}


def test_a_method_changed_to_options_by_an_earlier_filter_gets_the_help(
    client_for: ClientFor,
) -> None:
    app = make_app()

    def to_options(result: Any, server: Any, request: Request) -> Any:
        request.method = "OPTIONS"
        return result

    app.hooks.add_filter("rest_pre_dispatch", to_options, 5)
    data = client_for(app).get(ITEM).json()
    assert data["namespace"] == "demo/v1"
    assert data["methods"] == ["GET"]


def test_options_answers_help_and_a_get_does_not(client_for: ClientFor) -> None:
    client = client_for(make_app())
    assert client.request("OPTIONS", ITEM).json()["namespace"] == "demo/v1"
    assert client.get(ITEM).json() == {"id": 7, "title": "t", "extra": True}


def test_removing_the_options_filter_takes_effect(client_for: ClientFor) -> None:
    app = make_app()
    app.rest_get_server()
    assert app.hooks.remove_filter("rest_pre_dispatch", rest_handle_options_request)
    response = client_for(app).request("OPTIONS", ITEM)
    assert response.status_code == 405
    assert response.headers["allow"] == "GET"


def test_a_users_pre_dispatch_filter_runs_on_a_get(client_for: ClientFor) -> None:
    app = make_app()
    seen: list[str] = []

    def answer(result: Any, server: Any, request: Request) -> Any:
        seen.append(request.method)
        return {"short": "circuit"}

    app.hooks.add_filter("rest_pre_dispatch", answer)
    assert client_for(app).get(ITEM).json() == {"short": "circuit"}
    assert seen == ["GET"]


def test_fields_and_envelope_still_apply(client_for: ClientFor) -> None:
    client = client_for(make_app())
    assert client.get(ITEM + "?_fields=id").json() == {"id": 7}
    enveloped = client.get(ITEM + "?_envelope&_fields=title").json()
    assert enveloped["status"] == 200
    assert enveloped["body"] == {"title": "t"}
    assert enveloped["headers"]["Allow"] == "GET"


@pytest.mark.parametrize(
    "add",
    [
        lambda request: request.set_param("_fields", "id"),
        lambda request: request.query_params.update({"_fields": "id"}),
        lambda request: setattr(request, "query_params", {"_fields": "id"}),
    ],
    ids=["set_param", "bucket-changed", "bucket-replaced"],
)
def test_query_parameters_set_by_a_callback_apply_without_a_query_string(
    client_for: ClientFor, add: Callable[[Request], object]
) -> None:
    app = make_app()

    def before(result: Any, handler: Any, request: Request) -> Any:
        add(request)
        return result

    app.hooks.add_filter("rest_request_before_callbacks", before)
    assert client_for(app).get(ITEM).json() == {"id": 7}


def test_removing_the_fields_filter_takes_effect(client_for: ClientFor) -> None:
    app = make_app()
    app.rest_get_server()
    assert app.hooks.remove_filter("rest_post_dispatch", rest_filter_response_fields)
    assert client_for(app).get(ITEM + "?_fields=id").json() == {
        "id": 7,
        "title": "t",
        "extra": True,
    }


def test_async_finishing_callbacks_run_in_order(client_for: ClientFor) -> None:
    app = make_app()
    order: list[str] = []

    async def posted_async(response: Any, server: Any, request: Request) -> Any:
        order.append("post async")
        response.header("X-Async", "1")
        return response

    def posted_after(response: Any, server: Any, request: Request) -> Any:
        order.append("post after")
        assert response.headers["X-Async"] == "1"
        return response

    async def served_async(served: Any, result: Any, request: Request, server: Any) -> Any:
        order.append("serve async")
        return served

    def served_after(served: Any, result: Any, request: Request, server: Any) -> Any:
        order.append("serve after")
        return served

    app.hooks.add_filter("rest_post_dispatch", posted_async, 5)
    app.hooks.add_filter("rest_post_dispatch", posted_after, 20)
    app.hooks.add_filter("rest_pre_serve_request", served_async, 5)
    app.hooks.add_filter("rest_pre_serve_request", served_after, 20)
    response = client_for(app).get(ITEM + "?_fields=id")
    assert response.json() == {"id": 7}
    assert response.headers["x-async"] == "1"
    assert response.headers["allow"] == "GET"
    assert order == ["post async", "post after", "serve async", "serve after"]


def test_an_async_pre_serve_callback_answering_true_drops_the_body(
    client_for: ClientFor,
) -> None:
    app = make_app()

    async def served(served: Any, result: Any, request: Request, server: Any) -> Any:
        return True

    app.hooks.add_filter("rest_pre_serve_request", served)
    response = client_for(app).get(ITEM)
    assert response.status_code == 200
    assert response.content == b""


def test_a_non_public_permission_callback_is_still_asked(client_for: ClientFor) -> None:
    app = App()
    asked: list[int] = []

    def permission(request: Request) -> bool:
        asked.append(1)
        return False

    app.register_rest_route(
        "demo/v1", "/closed", {"callback": lambda r: "x", "permission_callback": permission}
    )
    response = client_for(app).get("/svc-json/demo/v1/closed")
    assert response.status_code == 401
    assert response.json()["code"] == "rest_forbidden"
    assert asked  # for the dispatch (and again for Allow)


def test_own_header_lines_are_sent_safe_and_per_response(client_for: ClientFor) -> None:
    app = App()
    app.register_rest_route(
        "demo/v1",
        r"/echo/(?P<word>\w+)",
        {
            "permission_callback": public,
            "callback": lambda r: Response({"w": r["word"]}, 200, {"X-Word": r["word"] + "\r\nX"}),
        },
    )
    client = client_for(app)
    for word in ("one", "two", "one"):
        response = client.get(f"/svc-json/demo/v1/echo/{word}")
        assert response.headers["x-word"] == word + "X"
        assert response.json() == {"w": word}


def test_the_answer_templates_are_bounded(monkeypatch: Any) -> None:
    templates: Memo[Any, wire.AnswerLines] = Memo(
        wire._TEMPLATES_MAX, wire._TEMPLATE_LINES, wire._own_lines_length
    )
    monkeypatch.setattr(wire, "_TEMPLATES", templates)
    monkeypatch.setattr(wire, "_template_of", templates.get)
    for number in range(wire._TEMPLATES_MAX + 10):
        lines, wire_form, own_tag = wire._template(None, False, False, (("X-N", str(number)),))
        assert own_tag == -1
        assert lines[-1] == ("X-N", str(number))
        assert wire_form[-1] == (b"X-N", str(number).encode())
    assert 0 < len(templates) <= wire._TEMPLATES_MAX
    long_line = (("X-Long", "v" * (wire._TEMPLATE_LINES + 1)),)
    wire._template(None, False, False, long_line)
    assert all(key[3] != long_line for key in templates)
    paging = (("Link", '<http://example.com/svc-json/demo/v1/notes?page=2>; rel="next"'),)
    lines, _wire, _tag = wire._template(None, False, False, paging)
    assert lines[-1] == paging[0]
    assert all(key[3] != paging for key in templates)


def test_an_own_content_type_replaces_the_block_one() -> None:
    lines, encoded, _tag = wire._template(None, False, False, (("Content-Type", "text/plain"),))
    assert [value for name, value in lines if name == "Content-Type"] == ["text/plain"]
    assert len(lines) == len(encoded)


def test_the_template_knows_where_an_own_etag_line_is() -> None:
    own = (("Allow", "GET"), ("etag", '"v1"'), ("ETag", '"v2"'))
    lines, encoded, own_tag = wire._template(None, False, False, own)
    assert lines[own_tag] == ("etag", '"v1"')
    assert own_tag == len(lines) - 2
    assert len(lines) == len(encoded)


def test_host_names_and_header_names_are_remembered_within_bounds(monkeypatch: Any) -> None:
    monkeypatch.setattr(exchange, "_HOST_NAMES", Memo(exchange._HOSTS_MAX, exchange._HOST_LENGTH))
    for number in range(exchange._HOSTS_MAX + 5):
        assert remembered_host_name(f"h{number}.example:80") == f"h{number}.example"
    assert len(exchange._HOST_NAMES) <= exchange._HOSTS_MAX
    long_host = "a" * (exchange._HOST_LENGTH + 1)
    assert remembered_host_name(long_host) == host_name(long_host)
    assert long_host not in exchange._HOST_NAMES
    monkeypatch.setattr(headers, "_NAMES", Memo(headers._NAMES_MAX, headers._NAME_LENGTH))
    for number in range(headers._NAMES_MAX + 5):
        parsed = Headers.from_lines(*asgi_header_lines([(f"x-h{number}".encode(), b"v")]))
        assert parsed.get(f"x-h{number}") == "v"
    assert len(headers._NAMES) <= headers._NAMES_MAX
    long_name = b"x" * (headers._NAME_LENGTH + 1)
    assert (
        Headers.from_lines(*asgi_header_lines([(long_name, b"v")])).get(long_name.decode()) == "v"
    )
    assert long_name not in headers._NAMES


def test_content_length_lines() -> None:
    for body in (b"", b"x" * 5, b"y" * (exchange._LENGTH_LINES_UNDER + 3)):
        for _ in range(2):
            wire = HttpResponse(200, [], body).wire_headers()
            assert wire == [(b"Content-Length", str(len(body)).encode())]
    assert HttpResponse(204, [], b"").wire_headers() == []
    assert len(exchange._LENGTH_LINES) <= exchange._LENGTH_LINES_UNDER


def test_a_compiled_default_options_filter_is_still_recognised() -> None:
    """The compiled build's functions take no attributes; ``options_only`` keeps them aside."""
    from svcrest.rest import plan

    compiled_like = len  # a builtin, as mypyc makes the default filter
    try:
        assert plan.options_only(compiled_like) is compiled_like
        assert plan._marked(compiled_like, plan._OPTIONS_ONLY)

        class Unhashable:
            __hash__ = None  # type: ignore[assignment]

            def __call__(self, *args: object) -> None:
                return None

        assert not plan._marked(Unhashable(), plan._OPTIONS_ONLY)
    finally:
        plan._COMPILED_MARKS[plan._OPTIONS_ONLY].discard(compiled_like)


def test_a_pre_serve_callback_after_the_defaults_sees_their_lines(
    client_for: ClientFor,
) -> None:
    app = make_app()
    seen: list[tuple[str | None, str | None]] = []

    def served(served: Any, result: Any, request: Request, server: Any) -> Any:
        seen.append(
            (result.headers.get("Allow"), result.headers.get("Access-Control-Allow-Origin"))
        )
        result.header("X-Served", "late")
        return served

    app.hooks.add_filter("rest_pre_serve_request", served)
    response = client_for(app).get(ITEM, headers={"Origin": "http://example.com"})
    assert seen == [("GET", "http://example.com")]
    assert response.json() == {"id": 7, "title": "t", "extra": True}
    assert response.headers["allow"] == "GET"
    assert response.headers["access-control-allow-origin"] == "http://example.com"
    assert response.headers["access-control-allow-credentials"] == "true"
    assert response.headers["x-served"] == "late"


def _seeing_app(seen: list[Any]) -> App:
    """The demo app with one plain extra filter on each finishing hook: each records what it
    sees (status, data, the response's own lines) and changes all three."""
    app = make_app()

    def posted(response: Any, server: Any, request: Request) -> Any:
        seen.append(("post", response.status, dict(response.data), response.header_tuple()))
        response.set_status(203)
        response.data = {**response.data, "posted": True}
        response.header("X-Posted", "1")
        return response

    def served(served: Any, result: Any, request: Request, server: Any) -> Any:
        seen.append(("serve", result.status, dict(result.data), result.header_tuple()))
        result.data = {**result.data, "served": True}
        result.header("Allow", "GET, HEAD")
        return served

    app.hooks.add_filter("rest_post_dispatch", posted)
    app.hooks.add_filter("rest_pre_serve_request", served)
    return app


def test_extra_finishing_filters_see_and_change_what_the_general_chains_give_them(
    client_for: ClientFor,
) -> None:
    # A request without a query string takes the default step with the extra filters around
    # it; one with a query string takes the general chains: both see and send the same.
    origin = {"Origin": "http://example.com"}
    answers = []
    for path in (ITEM, ITEM + "?unused=1"):
        seen: list[Any] = []
        response = client_for(_seeing_app(seen)).get(path, headers=origin)
        data = {"id": 7, "title": "t", "extra": True}
        cors = (
            ("Access-Control-Allow-Origin", "http://example.com"),
            ("Access-Control-Allow-Methods", "POST, GET, OPTIONS, PUT, DELETE"),
            ("Access-Control-Allow-Credentials", "true"),
        )
        assert seen == [
            ("post", 200, data, (("Allow", "GET"),)),
            ("serve", 203, {**data, "posted": True}, (("Allow", "GET"), ("X-Posted", "1"), *cors)),
        ]
        assert response.status_code == 203
        assert response.json() == {**data, "posted": True, "served": True}
        assert response.headers["allow"] == "GET, HEAD"
        assert response.headers["x-posted"] == "1"
        assert response.headers["access-control-allow-origin"] == "http://example.com"
        answers.append((response.status_code, response.json(), response.headers["allow"]))
    assert answers[0] == answers[1]


def test_the_default_step_stays_with_extra_filters_on_the_finishing_hooks() -> None:
    app = make_app()
    server = app.rest_get_server()
    assert server.plan().default_finish
    assert not server.plan().after_default
    assert server.plan().default_step is default_own_lines
    app.hooks.add_filter("rest_pre_serve_request", lambda served, *args: served)
    step = server.plan().default_step
    assert isinstance(getattr(step, "__self__", None), StepWithCallbacks)
    assert (len(step.__self__.post), len(step.__self__.pre)) == (0, 1)  # type: ignore[union-attr]
    app.hooks.add_filter("rest_post_dispatch", lambda response, *args: response)
    plan = server.plan()
    assert plan.default_finish
    assert plan.after_default
    with_callbacks = getattr(plan.default_step, "__self__", None)
    assert isinstance(with_callbacks, StepWithCallbacks)
    assert with_callbacks.post == plan.post_dispatch_after_default
    assert with_callbacks.pre == plan.pre_serve_after_default
    assert len(plan.post_dispatch_after_default) == 1
    assert len(plan.pre_serve_after_default) == 1


def test_an_extra_post_dispatch_filter_may_answer_another_response_or_an_error(
    client_for: ClientFor,
) -> None:
    app = make_app()
    app.hooks.add_filter(
        "rest_post_dispatch",
        lambda response, server, request: RestError("svc_gone", "Gone.", {"status": 410}),
    )
    response = client_for(app).get(ITEM, headers={"Origin": "http://example.com"})
    assert response.status_code == 410
    assert response.json() == {"code": "svc_gone", "message": "Gone.", "data": {"status": 410}}
    assert "allow" not in response.headers
    assert response.headers["access-control-allow-origin"] == "http://example.com"


def test_an_async_post_dispatch_filter_after_the_default_one(client_for: ClientFor) -> None:
    app = make_app()
    order: list[str] = []

    async def posted(response: Any, server: Any, request: Request) -> Any:
        order.append("post")
        assert response.header_tuple() == (("Allow", "GET"),)
        response.header("X-Async", "1")
        return response

    def served(served: Any, result: Any, request: Request, server: Any) -> Any:
        order.append("serve")
        return True

    app.hooks.add_filter("rest_post_dispatch", posted)
    app.hooks.add_filter("rest_pre_serve_request", served)
    response = client_for(app).get(ITEM, headers={"Origin": "http://example.com"})
    assert order == ["post", "serve"]
    assert response.status_code == 200
    assert response.content == b""
    assert response.headers["x-async"] == "1"
    assert response.headers["allow"] == "GET"
    assert response.headers["access-control-allow-credentials"] == "true"


def test_dispatch_and_the_answer_step_set_every_slot_their_constructors_set() -> None:
    """A callback's dict becomes its Response, and the answer step makes its HttpResponse,
    without calling the class (for speed): each must come out as the constructor makes it
    (a slot left unset would raise AttributeError when read)."""
    app = make_app()
    response = app.rest_do_request("/demo/v1/items/7")
    made = Response(response.data)
    for name in Response.__slots__:
        if name not in ("matched_route", "matched_handler"):
            assert getattr(response, name) == getattr(made, name), name
    assert response.matched_route == "/demo/v1/items/(?P<id>\\d+)"
    assert response.matched_handler is not None

    answered = asyncio.run(respond(app, HttpRequest("GET", ITEM), None))
    assert type(answered) is HttpResponse
    fields = {field.name: getattr(answered, field.name) for field in dataclasses.fields(answered)}
    assert fields["status"] == 200 and fields["content_length"] is None
    assert fields["body"] == b'{"id":7,"title":"t","extra":true}'
    assert answered == HttpResponse(**fields)
    assert len(answered.wire_prefix) == len(answered.headers)
