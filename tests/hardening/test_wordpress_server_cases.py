"""WordPress's own PHPUnit cases about route matching, registration, HEAD, OPTIONS, ``Allow``
and the answer for no route or a wrong method, ported to HTTP on both adapters. Each test's
docstring names the PHPUnit method it ports (class ``Tests_REST_Server`` unless it says
``Tests_REST_API``); the inputs and expected answers are WordPress's. (The in-process cases
are in tests/test_dispatch.py, tests/test_defaults.py and tests/test_registration.py;
hostile overrides and ``?rest_route=`` in the other hardening modules.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from svcrest import App, DoingItWrong, Request, Response, RestError, public
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
NO_ROUTE = {
    "code": "rest_no_route",
    "message": "No route was found matching the URL and request method.",
    "data": {"status": 404},
}
NOT_ALLOWED = {
    "code": "rest_no_route",
    "message": "No route was found matching the URL and request method.",
    "data": {"status": 405},
}
FORBIDDEN = {
    "code": "forbidden",
    "message": "You are not allowed to do this",
    "data": {"status": 403},
}


def permission_denied(request: Request) -> RestError:
    """The cases' ``permission_denied``: a 403 error of its own."""
    return RestError("forbidden", "You are not allowed to do this", {"status": 403})


def null_permission(request: Request) -> None:
    """A permission callback answering None (WordPress's ``__return_null``): not allowed."""
    return None


def test_head_request_handled_by_get(client_for: ClientFor) -> None:
    """Ports ``test_head_request_handled_by_get``: a route with a GET handler only answers
    HEAD with 200 (and, over HTTP, no body)."""
    app = App()
    app.register_rest_route(
        "head-request",
        "/test",
        {"methods": ["GET"], "callback": lambda r: True, "permission_callback": public},
    )
    response = client_for(app).request("HEAD", "/svc-json/head-request/test")
    assert (response.status_code, response.content) == (200, b"")


def test_explicit_head_callback(client_for: ClientFor) -> None:
    """Ports ``test_explicit_head_callback``: a HEAD handler registered before a GET handler
    whose permission callback refuses answers HEAD with 200 from the HEAD handler (the
    GET callback never runs)."""
    app = App()
    ran: list[str] = []

    def head(request: Request) -> bool:
        ran.append("head")
        return True

    def get(request: Request) -> bool:
        ran.append("get")
        return False

    app.register_rest_route(
        "head-request",
        "/test",
        [
            {"methods": ["HEAD"], "callback": head, "permission_callback": public},
            {"methods": ["GET"], "callback": get, "permission_callback": permission_denied},
        ],
    )
    response = client_for(app).request("HEAD", "/svc-json/head-request/test")
    assert (response.status_code, ran) == (200, ["head"])


def test_url_params_no_numeric_keys(client_for: ClientFor) -> None:
    """Ports ``test_url_params_no_numeric_keys``: ``/test/(?P<data>.*)`` on ``/test/some-value``
    gives the parameters ``{"data": "some-value"}`` only (no numbered groups)."""
    app = App()

    def params(request: Request) -> dict[str, Any]:
        return {"params": request.get_params(), "url": request.url_params}

    app.register_rest_route(
        "test",
        "/(?P<data>.*)",
        {"methods": "GET", "callback": params, "permission_callback": public, "args": {"data": {}}},
    )
    response = client_for(app).get("/svc-json/test/some-value")
    assert (response.status_code, response.json()) == (
        200,
        {"params": {"data": "some-value"}, "url": {"data": "some-value"}},
    )


def test_serve_request_url_params_are_unslashed(client_for: ClientFor) -> None:
    """Ports ``test_serve_request_url_params_are_unslashed``: backslashes in the path reach the
    URL parameter as they were sent (``data\\with\\slashes``), none added or removed."""
    app = App()
    app.register_rest_route(
        "test",
        "/(?P<data>.*)",
        {"methods": "GET", "callback": lambda r: r.url_params, "permission_callback": public},
    )
    response = client_for(app).get("/svc-json/test/data%5Cwith%5Cslashes")
    assert (response.status_code, response.json()) == (200, {"data": "data\\with\\slashes"})


def test_rest_route_capability_authorization_fails(client_for: ClientFor) -> None:
    """Ports ``test_rest_route_capability_authorization_fails``: a permission callback's error
    is the answer, 403 with its code and message."""
    app = App()
    app.register_rest_route(
        "test-ns",
        "/test",
        {"methods": "GET", "callback": lambda r: None, "permission_callback": permission_denied},
    )
    response = client_for(app).get("/svc-json/test-ns/test")
    assert (response.status_code, response.json()) == (403, FORBIDDEN)


def test_allow_header_sent(client_for: ClientFor) -> None:
    """Ports ``test_allow_header_sent``: a GET route's answer carries ``Allow: GET``."""
    app = App()
    app.register_rest_route(
        "test-ns",
        "/test",
        {"methods": "GET", "callback": lambda r: None, "permission_callback": public},
    )
    response = client_for(app).get("/svc-json/test-ns/test")
    assert (response.status_code, response.headers["allow"]) == (200, "GET")


def test_allow_header_sent_with_multiple_methods(client_for: ClientFor) -> None:
    """Ports ``test_allow_header_sent_with_multiple_methods``: the same route registered twice,
    GET then POST (WordPress merges the handlers), answers GET with ``Allow: GET, POST``."""
    app = App()
    for method in ("GET", "POST"):
        app.register_rest_route(
            "test-ns",
            "/test",
            {"methods": method, "callback": lambda r: None, "permission_callback": public},
        )
    client = client_for(app)
    response = client.get("/svc-json/test-ns/test")
    assert (response.status_code, response.headers["allow"]) == (200, "GET, POST")
    posted = client.post("/svc-json/test-ns/test")
    assert (posted.status_code, posted.headers["allow"]) == (200, "GET, POST")


def test_allow_header_send_only_permitted_methods(client_for: ClientFor) -> None:
    """Ports ``test_allow_header_send_only_permitted_methods``: GET refused by its permission
    callback, POST public: GET answers 403 with ``Allow: POST`` only."""
    app = App()
    app.register_rest_route(
        "test-ns",
        "/test",
        {"methods": "GET", "callback": lambda r: None, "permission_callback": permission_denied},
    )
    app.register_rest_route(
        "test-ns",
        "/test",
        {"methods": "POST", "callback": lambda r: None, "permission_callback": public},
    )
    response = client_for(app).get("/svc-json/test-ns/test")
    assert (response.status_code, response.json(), response.headers["allow"]) == (
        403,
        FORBIDDEN,
        "POST",
    )


def test_allow_header_sent_on_options_request(client_for: ClientFor) -> None:
    """Ports ``test_allow_header_sent_on_options_request``: OPTIONS on a route whose GET is
    public and whose POST permission callback answers None sends ``Allow: GET``."""
    app = App()
    app.register_rest_route(
        "test-ns",
        "/test",
        [
            {"methods": ["GET"], "callback": lambda r: None, "permission_callback": public},
            {
                "methods": ["POST"],
                "callback": lambda r: None,
                "permission_callback": null_permission,
            },
        ],
    )
    response = client_for(app).request("OPTIONS", "/svc-json/test-ns/test")
    assert (response.status_code, response.headers["allow"]) == (200, "GET")
    assert [endpoint["methods"] for endpoint in response.json()["endpoints"]] == [["GET"], ["POST"]]


def test_get_routes_no_namespace_overriding(client_for: ClientFor) -> None:
    """Ports ``test_get_routes_no_namespace_overriding``: ``/test`` in namespace ``test-ns``
    and ``/test`` in ``test-ns/v1`` are two routes; ``/test-ns/v1/test`` runs the second
    (its 204 with no body), and ``/test-ns/test`` the first."""
    app = App()
    app.register_rest_route(
        "test-ns",
        "/test",
        {"methods": ["GET"], "callback": lambda r: "first", "permission_callback": public},
    )
    app.register_rest_route(
        "test-ns/v1",
        "/test",
        {
            "methods": ["GET"],
            "callback": lambda r: Response("data", 204),
            "permission_callback": public,
        },
    )
    client = client_for(app)
    response = client.get("/svc-json/test-ns/v1/test")
    assert (response.status_code, response.content) == (204, b"")
    first = client.get("/svc-json/test-ns/test")
    assert (first.status_code, first.json()) == (200, "first")


def answers_after_callbacks(app: App) -> list[object]:
    """The answers ``app``'s ``rest_request_after_callbacks`` filter is given, as a list
    that fills as requests run (the filter returns each unchanged)."""
    seen: list[object] = []

    def after(response: object, *rest: object) -> object:
        seen.append(response)
        return response

    app.hooks.add_filter("rest_request_after_callbacks", after)
    return seen


def test_no_route(client_for: ClientFor) -> None:
    """Ports ``test_no_route``: a path no route matches answers 404 ``rest_no_route``, and the
    ``rest_request_after_callbacks`` filter is not run for it (it is for a route that
    matches)."""
    app = App()
    seen = answers_after_callbacks(app)
    app.register_rest_route(
        "test-ns/v1", "/other", {"callback": lambda r: "other", "permission_callback": public}
    )
    client = client_for(app)
    response = client.get("/svc-json/test-ns/v1/test")
    assert (response.status_code, response.json(), seen) == (404, NO_ROUTE, [])
    assert (client.get("/svc-json/test-ns/v1/other").status_code, seen) == (200, ["other"])


def test_route_override(client_for: ClientFor) -> None:
    """Ports ``test_route_override`` (``Tests_REST_API``): registering the same route again
    with ``override`` replaces its handlers: the first handler's GET answers 405
    ``rest_no_route`` with ``Allow: POST``, the second's POST runs."""
    app = App()
    app.register_rest_route(
        "test-ns",
        "/test",
        {"methods": ["GET"], "callback": lambda r: "get", "permission_callback": public},
    )
    app.register_rest_route(
        "test-ns",
        "/test",
        {"methods": ["POST"], "callback": lambda r: "post", "permission_callback": public},
        override=True,
    )
    client = client_for(app)
    response = client.get("/svc-json/test-ns/test")
    assert (response.status_code, response.json(), response.headers["allow"]) == (
        405,
        NOT_ALLOWED,
        "POST",
    )
    posted = client.post("/svc-json/test-ns/test")
    assert (posted.status_code, posted.json()) == (200, "post")


def test_route_method_comma_separated_and_options_request(client_for: ClientFor) -> None:
    """Ports ``test_route_method_comma_separated``, ``test_options_request`` and
    ``test_options_request_not_options`` (``Tests_REST_API``): ``"GET,POST"`` (no space)
    declares both methods; OPTIONS answers ``Allow: GET, POST`` with the route's help, while
    GET and POST run the callback."""
    app = App()
    app.register_rest_route(
        "test-ns",
        "/test",
        {"methods": "GET,POST", "callback": lambda r: True, "permission_callback": public},
    )
    client = client_for(app)
    options = client.request("OPTIONS", "/svc-json/test-ns/test")
    assert (options.status_code, options.headers["allow"]) == (200, "GET, POST")
    assert options.json()["endpoints"][0]["methods"] == ["GET", "POST"]
    for method in ("GET", "POST"):
        response = client.request(method, "/svc-json/test-ns/test")
        assert (response.status_code, response.json(), response.headers["allow"]) == (
            200,
            True,
            "GET, POST",
        )


@pytest.mark.parametrize(
    ("namespace", "route", "path"),
    [
        ("", "/test-empty-namespace", "/test-empty-namespace"),
        ("/test-empty-route", "", "/test-empty-route"),
    ],
    ids=["test_route_reject_empty_namespace", "test_route_reject_empty_route"],
)
def test_route_reject_empty_namespace_or_route(
    client_for: ClientFor, namespace: str, route: str, path: str
) -> None:
    """Ports ``test_route_reject_empty_namespace`` and ``test_route_reject_empty_route``
    (``Tests_REST_API``): registering with an empty namespace or route is refused with a
    "doing it wrong" notice, and nothing answers at that path (404 ``rest_no_route``)."""
    app = App()
    with pytest.warns(DoingItWrong):
        registered = app.register_rest_route(
            namespace,
            route,
            {"methods": ["POST"], "callback": lambda r: None, "permission_callback": public},
        )
    response = client_for(app).post("/svc-json" + path)
    assert (registered, response.status_code, response.json()) == (False, 404, NO_ROUTE)


def test_invalid_handler(client_for: ClientFor) -> None:
    """Ports ``test_invalid_handler``: a handler without a callback answers 500
    ``rest_invalid_handler``, and ``rest_request_after_callbacks`` receives that error once."""
    app = App()
    seen = answers_after_callbacks(app)
    app.register_rest_route(
        "test-ns/v1", "/test", {"callback": None, "permission_callback": public}
    )
    response = client_for(app).get("/svc-json/test-ns/v1/test")
    assert (response.status_code, response.json()) == (
        500,
        {
            "code": "rest_invalid_handler",
            "message": "The handler for the route is invalid.",
            "data": {"status": 500},
        },
    )
    assert [error.code for error in seen if isinstance(error, RestError)] == [
        "rest_invalid_handler"
    ]
    assert len(seen) == 1


def test_invalid_handler_of_a_name_that_is_not_callable(client_for: ClientFor) -> None:
    """``test_invalid_handler`` as WordPress writes it registers a callback given as the name
    of a function that does not exist, and answers 500 ``rest_invalid_handler`` at request
    time. svcrest differs on purpose: the mistake surfaces when it is registered (False and
    ``DoingItWrong``, as the routes guide says), so no route is served at that path."""
    app = App()
    with pytest.warns(DoingItWrong):
        registered = app.register_rest_route(
            "test-ns/v1", "/test", {"callback": "invalid_callback", "permission_callback": public}
        )
    assert registered is False
    response = client_for(app).get("/svc-json/test-ns/v1/test")
    assert (response.status_code, response.json()) == (
        404,
        {
            "code": "rest_no_route",
            "message": "No route was found matching the URL and request method.",
            "data": {"status": 404},
        },
    )


@pytest.mark.parametrize(
    "query", ["rest_route[]=invalid", "rest_route[a]=invalid"], ids=["list", "map"]
)
def test_should_return_error_if_rest_route_not_string(client_for: ClientFor, query: str) -> None:
    """Ports ``test_should_return_error_if_rest_route_not_string`` (``Tests_REST_API``,
    ticket 62932): a ``rest_route`` query variable that is an array is refused with 400
    ``rest_path_invalid_type``, "The REST route parameter must be a string.", before any
    route is looked up."""
    app = App()
    app.register_rest_route(
        "t/v1", "/echo", {"callback": lambda r: "echo", "permission_callback": public}
    )
    response = client_for(app).get("/?" + query)
    assert (response.status_code, response.json()) == (
        400,
        {
            "code": "rest_path_invalid_type",
            "message": "The REST route parameter must be a string.",
            "data": {"status": 400},
        },
    )
