"""Hostile ``?rest_route=`` (plain permalinks, WordPress's ``rest_api_loaded``) and pretty
paths on both adapters: encoded slashes, NUL, invalid UTF-8, a trailing newline, very long
routes, the prefix or a whole URL inside the parameter, a query string or fragment inside
it, the parameter repeated or sent as a PHP array, and the pretty path and the parameter
together. Each answers the route the parameter names or 404 ``rest_no_route`` (400
``rest_path_invalid_type`` for an array), never a 500 and never another route. (The ordinary
cases are in tests/test_serving.py and tests/test_urls.py.)"""

from __future__ import annotations

import json
from collections.abc import Callable
from urllib.parse import unquote

import pytest

from svcrest import App, Request, public
from tests.conftest import SiteClient, raw_request

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
def test_an_array_is_rest_path_invalid_type(client_for: ClientFor, url: str) -> None:
    response = client_for(make_app()).get(url)
    assert response.status_code == 400
    assert response.json() == {
        "code": "rest_path_invalid_type",
        "message": "The REST route parameter must be a string.",
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


def make_class_app() -> App:
    app = App("http://127.0.0.1:8000")

    def params(request: Request) -> dict[str, str]:
        return dict(request.url_params)

    for route in (
        r"/word/(?P<w>\w+)",
        r"/nonword/(?P<w>\W+)",
        r"/space/(?P<s>\s+)",
        r"/nonspace/(?P<s>\S+)",
        r"/bound/x\b(?P<rest>.*)",
        r"/nobound/x\B(?P<rest>.*)",
        "/caf\u00e9",
        r"/tags/(?P<slug>[\w-]+)",
        "/key",
    ):
        app.register_rest_route("t/v1", route, {"callback": params, "permission_callback": public})
    return app


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/word/abc_9", {"w": "abc_9"}),
        ("/word/%C3%A9t%C3%A9", None),  # été: é is no word character without PCRE's u
        ("/word/%EF%BC%A1", None),  # FULLWIDTH LATIN CAPITAL LETTER A
        ("/nonword/%C3%A9", {"w": "\u00e9"}),
        ("/nonword/a", None),
        ("/space/%20%09%0B%0C", {"s": " \t\x0b\x0c"}),  # space, tab, VT, FF
        ("/space/%C2%A0", None),  # NO-BREAK SPACE
        ("/space/%1C", None),  # FILE SEPARATOR: Python's Unicode \s, not PCRE's
        ("/space/%C2%85", None),  # NEXT LINE
        ("/nonspace/%C2%A0", {"s": "\u00a0"}),
        ("/nonspace/a%20", None),
        ("/bound/x%C3%A9", {"rest": "\u00e9"}),  # a boundary between x and é
        ("/bound/xa", None),
        ("/nobound/xa", {"rest": "a"}),
        ("/nobound/x%C3%A9", None),
        ("/caf%C3%A9", {}),
        ("/CAF%C3%A9", {}),  # ASCII letters match their other case
        ("/CAF%C3%89", None),  # É is not é: only ASCII letters fold
        ("/tags/ete-1", {"slug": "ete-1"}),
        ("/tags/%C3%A9t%C3%A9", None),
        ("/KEY", {}),
        ("/%E2%84%AAey", None),  # KELVIN SIGN is not k
    ],
)
def test_classes_and_case_are_pcre_without_u(
    adapter: str, client_for: ClientFor, path: str, expected: dict[str, str] | None
) -> None:
    # WordPress matches ``@^route$@i`` on the decoded UTF-8 path: no ``u`` modifier, so
    # ``\w \s \b`` and their negations are ASCII classes and ``i`` folds ASCII letters only.
    app = make_class_app()
    response = client_for(app).get("/?rest_route=/t/v1" + path)
    # The pretty path as a server hands it over: ASGI's ``path`` decoded UTF-8, WSGI's
    # ``PATH_INFO`` the bytes as Latin-1 (PEP 3333; httpx's WSGITransport decodes it as UTF-8).
    decoded = unquote("/svc-json/t/v1" + path)
    status, _, body = raw_request(
        app,
        adapter,
        "GET",
        decoded if adapter == "asgi" else decoded.encode().decode("latin-1"),
        [],
    )
    if expected is None:
        assert (response.status_code, response.json()) == (404, NO_ROUTE)
        assert (status, json.loads(body)) == (404, NO_ROUTE)
    else:
        assert (response.status_code, response.json()) == (200, expected)
        assert (status, json.loads(body)) == (200, expected)
