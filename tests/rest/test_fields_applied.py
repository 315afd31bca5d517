"""The handler option ``fields_applied=True``: the handler's answer already shows the
request's ``_fields`` (it applied them to the parts they name, as a change feed does to each
entry's ``data``), so the site's ``_fields`` filter (WordPress's
``rest_filter_response_fields`` on ``rest_post_dispatch``) leaves that answer whole. A
handler without it is filtered as in WordPress; a value other than True or False, or the
option beside the handlers (where it would name no handler), is refused at registration."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pytest

from svcrest import App, Request, Response, public
from svcrest.app import DoingItWrong
from svcrest.rest.defaults import ServerView, rest_filter_response_fields
from svcrest.rest.definition_errors import RouteDefinitionError
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
ROUTE = "/svc-json/live/v1/feed"
#: The answer of both routes: a wrapper whose entries a ``_fields`` of ``id,title`` shaped.
ANSWER: dict[str, Any] = {
    "changes": [{"id": 1, "title": "a"}, {"id": 2, "title": "b"}],
    "cursor": "c2",
}


def shaped(request: Request) -> dict[str, Any]:
    """An answer around entries it shaped by the request's ``_fields`` itself."""
    return ANSWER


def site(**options: Any) -> App:
    """A site with ``/live/v1/feed`` (the handler's ``options`` added) and ``/live/v1/plain``
    (the same callback, no option)."""
    app = App()
    handler = {"methods": "GET", "callback": shaped, "permission_callback": public}
    assert app.register_rest_route("live/v1", "/feed", {**handler, **options}) is True
    assert app.register_rest_route("live/v1", "/plain", handler) is True
    return app


def test_a_handler_whose_answer_applied_its_fields_is_answered_whole(
    client_for: ClientFor,
) -> None:
    client = client_for(site(fields_applied=True))
    for query in ("?_fields=id,title", "?_fields[]=id&_fields[]=title", ""):
        answer = client.get(f"{ROUTE}{query}")
        assert answer.status_code == 200, query
        assert answer.json() == ANSWER, query


def test_a_handler_without_the_option_is_filtered_as_before(client_for: ClientFor) -> None:
    client = client_for(site(fields_applied=True))
    assert client.get("/svc-json/live/v1/plain?_fields=cursor").json() == {"cursor": "c2"}
    assert client.get("/svc-json/live/v1/plain?_fields=id,title").json() == {}
    assert client.get("/svc-json/live/v1/plain").json() == ANSWER
    # False is the default, said aloud.
    plain = client_for(site(fields_applied=False))
    assert plain.get(f"{ROUTE}?_fields=cursor").json() == {"cursor": "c2"}


def test_the_option_is_kept_on_the_matched_handler() -> None:
    app = site(fields_applied=True)
    routes = app.rest_get_server().get_routes("live/v1")
    assert [handler.get("fields_applied") for handler in routes["/live/v1/feed"]] == [True]
    assert ["fields_applied" in handler for handler in routes["/live/v1/plain"]] == [False]


@pytest.mark.parametrize("value", ["yes", 1, 0, None, {"v1": True}])
def test_a_value_other_than_true_or_false_is_refused_at_registration(value: Any) -> None:
    app = App()
    handler = {"callback": shaped, "permission_callback": public, "fields_applied": value}
    with pytest.warns(DoingItWrong, match="fields_applied must be True or False"):
        assert app.register_rest_route("live/v1", "/feed", handler) is False
    assert app.rest_get_server().table.get("/live/v1/feed") is None


def test_the_option_beside_the_handlers_is_refused_at_registration() -> None:
    app = App()
    handler = {"callback": shaped, "permission_callback": public}
    with pytest.warns(DoingItWrong, match="'fields_applied' is an option of a handler"):
        assert (
            app.register_rest_route("live/v1", "/feed", {0: handler, "fields_applied": True})
            is False
        )
    with pytest.raises(RouteDefinitionError, match="inside the handler definition"):
        app.rest_get_server().register_route(
            "live/v1", "/live/v1/feed", {0: handler, "fields_applied": True}
        )


def test_the_filter_reads_the_option_from_the_answers_matched_handler() -> None:
    """Called as WordPress's filter is, on an answer whose handler carries the option."""
    server = cast(ServerView, None)
    request = Request("GET", "/live/v1/feed", query={"_fields": "id"})
    marked = Response(dict(ANSWER))
    marked.matched_handler = {"methods": {"GET": True}, "fields_applied": True}
    assert rest_filter_response_fields(marked, server, request).data == ANSWER
    unmarked = Response(dict(ANSWER))
    unmarked.matched_handler = {"methods": {"GET": True}}
    assert rest_filter_response_fields(unmarked, server, request).data == {}
    assert rest_filter_response_fields(Response(dict(ANSWER)), server, request).data == {}


def test_the_decorator_gives_the_option_to_its_handler(client_for: ClientFor) -> None:
    app = App()
    app.route("live/v1", "/feed", permission_callback=public, fields_applied=True)(shaped)
    assert client_for(app).get(f"{ROUTE}?_fields=id").json() == ANSWER
    with pytest.warns(DoingItWrong, match="fields_applied must be True or False: 'on'"):
        app.route("live/v1", "/other", permission_callback=public, fields_applied="on")(shaped)
    assert app.rest_get_server().table.get("/live/v1/other") is None
