"""``show_in_index: False`` on a handler or, WordPress's form, as a route option beside the
handlers: left out of the root index, the namespace index and ``/openapi.json`` (both
adapters); the route itself keeps answering, and OPTIONS still describes it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from svcrest import App, Request, public
from tests.conftest import SiteClient

HOME = "http://index.test"
ClientFor = Callable[[App], SiteClient]


def ok(request: Request) -> dict[str, Any]:
    return {"ok": True}


HANDLER = {"permission_callback": public, "callback": ok}


def _app() -> App:
    app = App(HOME)
    app.register_rest_route("shop/v1", "/shown", HANDLER)
    # WordPress's form: integer-keyed handlers and the route option beside them.
    app.register_rest_route("shop/v1", "/route-hidden", {0: HANDLER, "show_in_index": False})
    app.register_rest_route(
        "shop/v1",
        "/route-hidden-many",
        {
            0: {**HANDLER, "methods": "GET"},
            1: {**HANDLER, "methods": "POST"},
            "show_in_index": False,
            "args": {"q": {"type": "string"}},
        },
    )
    app.register_rest_route("shop/v1", "/handler-hidden", {**HANDLER, "show_in_index": False})
    app.register_rest_route(
        "shop/v1", "/route-shown", {0: HANDLER, "show_in_index": True, "schema": None}
    )
    return app


SHOWN = ["/shop/v1", "/shop/v1/shown", "/shop/v1/route-shown"]


def test_route_option_hides_the_route_from_both_indexes(client_for: ClientFor) -> None:
    client = client_for(_app())
    root = client.get("/svc-json/").json()["routes"]
    assert [route for route in root if route.startswith("/shop")] == SHOWN
    namespace = client.get("/svc-json/shop/v1").json()
    assert list(namespace["routes"]) == SHOWN
    assert namespace["routes"]["/shop/v1/shown"] == {
        "namespace": "shop/v1",
        "methods": ["GET"],
        "endpoints": [{"methods": ["GET"], "args": {}}],
        "_links": {"self": [{"href": f"{HOME}/svc-json/shop/v1/shown"}]},
    }


def test_route_option_hides_the_route_from_openapi_json(client_for: ClientFor) -> None:
    paths = client_for(_app()).get("/openapi.json").json()["paths"]
    assert [path for path in paths if path.startswith("/shop")] == [
        "/shop/v1",
        "/shop/v1/shown",
        "/shop/v1/route-shown",
    ]


@pytest.mark.parametrize(
    "route", ["/shop/v1/route-hidden", "/shop/v1/route-hidden-many", "/shop/v1/handler-hidden"]
)
def test_a_hidden_route_still_answers_and_describes_itself(
    client_for: ClientFor, route: str
) -> None:
    client = client_for(_app())
    response = client.get(f"/svc-json{route}")
    assert (response.status_code, response.json()) == (200, {"ok": True})
    help_data = client.request("OPTIONS", f"/svc-json{route}").json()
    assert help_data["namespace"] == "shop/v1"
    assert help_data["methods"][0] == "GET"


def test_server_route_data_in_view_and_help_context() -> None:
    server = _app().rest_get_server()
    handlers = server.get_routes()["/shop/v1/route-hidden-many"]
    assert server.get_data_for_route("/shop/v1/route-hidden-many", handlers, "view") is None
    data = server.get_data_for_route("/shop/v1/route-hidden-many", handlers, "help")
    assert data is not None
    assert data["methods"] == ["GET", "POST"]
    assert server.get_route_options("/shop/v1/route-hidden-many") == {
        "namespace": "shop/v1",
        "show_in_index": False,
    }
