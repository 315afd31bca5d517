"""Hostile ``?rest_route=`` (plain permalinks, WordPress's ``rest_api_loaded``) and pretty
paths on both adapters: encoded slashes, NUL, invalid UTF-8, a trailing newline, very long
routes, the prefix or a whole URL inside the parameter, a query string or fragment inside
it, the parameter repeated or sent as a PHP array, and the pretty path and the parameter
together. Each answers the route the parameter names or 404 ``rest_no_route`` (400
``rest_invalid_route`` for an array), never a 500 and never another route. (The ordinary
cases are in tests/test_serving.py and tests/test_urls.py.)"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from svcrest import App, Request, public
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
NO_ROUTE = {
    "code": "rest_no_route",
    "message": "No route was found matching the URL and request method.",
    "data": {"status": 404},
}
ECHO = {"route": "/t/v1/echo", "method": "GET"}


def make_app() -> App:
    app = App("http://127.0.0.1:8000")

    def echo(request: Request) -> dict[str, str]:
        return {"route": request.route, "method": request.method}

    def item(request: Request) -> dict[str, str]:
        return {"route": request.route, "id": request["id"]}

    app.register_rest_route(
        "t/v1",
        "/echo",
        {"methods": "GET, POST, DELETE", "callback": echo, "permission_callback": public},
    )
    app.register_rest_route(
        "t/v1", r"/items/(?P<id>\d+)", {"callback": item, "permission_callback": public}
    )
    return app


@pytest.mark.parametrize(
    ("url", "body"),
    [
        ("/?rest_route=%2Ft%2Fv1%2Fecho", ECHO),  # the query string is decoded
        ("/?rest_route=/t/v1%2Fecho", ECHO),
        ("/index.php?rest_route=/t/v1/echo", ECHO),
        ("/?rest_route[]=x&rest_route=/t/v1/echo", ECHO),  # the last plain key wins (PHP)
        ("/?rest_route=/t/v1/items/2&rest_route=/t/v1/echo", ECHO),
        ("/svc-json/t/v1/echo?rest_route=/t/v1/items/1", ECHO),  # the pretty path wins
        ("/svc-json/t%2Fv1%2Fecho", ECHO),
        ("/?rest_route=/t/v1/items/7", {"route": "/t/v1/items/7", "id": "7"}),
    ],
    ids=[
        "encoded-slashes",
        "one-encoded-slash",
        "index-php",
        "array-then-string",
        "repeated",
        "pretty-path-and-parameter",
        "pretty-encoded-slashes",
        "captured",
    ],
)
def test_routes_the_parameter_names(client_for: ClientFor, url: str, body: object) -> None:
    response = client_for(make_app()).get(url)
    assert (response.status_code, response.json()) == (200, body)


@pytest.mark.parametrize(
    "url",
    [
        "/?rest_route=%00",
        "/?rest_route=/t/v1/echo%00",
        "/?rest_route=/t/v1/items/1%0A",  # ``$`` must not match before a final newline
        "/?rest_route=/t/v1/items/1%0D%0A",
        "/?rest_route=%ff",
        "/?rest_route=%C0%AF",  # an overlong ``/``
        "/?rest_route=/" + "a" * 60_000,
        "/?rest_route=/t/v1/echo//",
        "/?rest_route=/svc-json/t/v1/echo",
        "/?rest_route=http://evil.example/t/v1/echo",
        "/?rest_route=//evil.example/t/v1/echo",
        "/?rest_route=/t/v1/echo?x=1",
        "/?rest_route=/t/v1/echo%3Fx=1",
        "/?rest_route=/t/v1/echo%23x",
        "/?rest_route=+/t/v1/echo",  # a plus is a blank
        "/?rest_route=/t/v1/../v1/echo",
        "/?rest_route=/t/v1/items/-1",
        "/svc-json/t/v1/echo%00",
        "/svc-json//t/v1/echo",
        "/svc-json/%2e%2e/t/v1/echo",
    ],
    ids=[
        "nul",
        "nul-after",
        "newline-after",
        "crlf-after",
        "invalid-utf-8",
        "overlong-slash",
        "60000-characters",
        "two-trailing-slashes",
        "prefix-inside",
        "absolute-url",
        "protocol-relative",
        "query-inside",
        "encoded-query-inside",
        "encoded-fragment",
        "leading-plus",
        "dot-dot",
        "negative-id",
        "pretty-nul",
        "pretty-double-slash",
        "pretty-dot-dot",
    ],
)
def test_anything_else_is_no_route(client_for: ClientFor, url: str) -> None:
    response = client_for(make_app()).get(url)
    assert (response.status_code, response.json()) == (404, NO_ROUTE)


@pytest.mark.parametrize(
    "url",
    ["/?rest_route[]=/t/v1/echo", "/?rest_route[a]=x", "/?rest_route=/t/v1/echo&rest_route[]=x"],
    ids=["list", "map", "string-then-array"],
)
def test_an_array_is_rest_invalid_route(client_for: ClientFor, url: str) -> None:
    response = client_for(make_app()).get(url)
    assert response.status_code == 400
    assert response.json() == {
        "code": "rest_invalid_route",
        "message": "The rest_route parameter must be a string.",
        "data": {"status": 400},
    }


def test_head_of_a_nul_route_is_a_bodiless_404(client_for: ClientFor) -> None:
    response = client_for(make_app()).request("HEAD", "/?rest_route=%00")
    assert (response.status_code, response.content) == (404, b"")


@pytest.mark.parametrize(
    "digits", ["%EF%BC%91", "%D9%A1"], ids=["fullwidth-one", "arabic-indic-one"]
)
@pytest.mark.parametrize("prefix", ["/?rest_route=", "/svc-json"], ids=["rest_route", "pretty"])
def test_digits_of_other_scripts_are_no_route(
    client_for: ClientFor, prefix: str, digits: str
) -> None:
    # WordPress's route regexes are PCRE without the ``u`` modifier: ``\d`` is 0-9 only.
    client = client_for(make_app())
    response = client.get(prefix + "/t/v1/items/" + digits)
    assert (response.status_code, response.json()) == (404, NO_ROUTE)
    response = client.get(prefix + "/t/v1/items/1" + digits)
    assert (response.status_code, response.json()) == (404, NO_ROUTE)


def test_ascii_digits_still_route_and_the_index_shows_the_pattern_as_registered(
    client_for: ClientFor,
) -> None:
    client = client_for(make_app())
    response = client.get("/svc-json/t/v1/items/0123456789")
    assert (response.status_code, response.json()) == (
        200,
        {"route": "/t/v1/items/0123456789", "id": "0123456789"},
    )
    for url in ("/svc-json/", "/svc-json/t/v1"):
        routes = client.get(url).json()["routes"]
        assert [route for route in routes if "items" in route] == ["/t/v1/items/(?P<id>\\d+)"]
