"""The default filters: OPTIONS (spec 4.4), Allow (4.5), CORS (4.6), deprecation (6)."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from svcrest import App, Request, RestError, public
from svcrest.rest.defaults import sanitize_origin
from tests.conftest import SiteClient, raw_request

ClientFor = Callable[..., SiteClient]
CORS = (
    "access-control-allow-origin",
    "access-control-allow-methods",
    "access-control-allow-credentials",
)


def schema() -> dict[str, Any]:
    return {"title": "item", "type": "object"}


def make_app() -> App:
    app = App()
    app.register_rest_route(
        "demo/v1",
        r"/items/(?P<id>\d+)",
        {
            0: {
                "permission_callback": public,
                "methods": "GET",
                "callback": lambda r: {"id": r["id"]},
                "args": {
                    "id": {
                        "type": "integer",
                        "description": "Item id.",
                        "validate_callback": lambda v, r, k: True,
                        "x-private": 1,
                    },
                    "context": {"type": "string", "enum": ["view", "edit"], "default": "view"},
                },
            },
            1: {
                "permission_callback": public,
                "methods": "PUT, PATCH",
                "callback": lambda r: "updated",
                "args": {"title": {"type": "string", "required": True, "minLength": 1}},
            },
            "schema": schema,
        },
    )
    app.register_rest_route(
        "demo/v1", "/plain", {"permission_callback": public, "callback": lambda r: "plain"}
    )
    return app


def test_options_answers_help_data(client_for: ClientFor) -> None:
    response = client_for(make_app()).request("OPTIONS", "/svc-json/demo/v1/items/5")
    assert response.status_code == 200
    assert response.json() == {
        "namespace": "demo/v1",
        "methods": ["GET", "PUT", "PATCH"],
        "endpoints": [
            {
                "methods": ["GET"],
                "args": {
                    "id": {"required": False, "type": "integer", "description": "Item id."},
                    "context": {
                        "required": False,
                        "type": "string",
                        "enum": ["view", "edit"],
                        "default": "view",
                    },
                },
            },
            {
                "methods": ["PUT", "PATCH"],
                "args": {"title": {"required": True, "type": "string", "minLength": 1}},
            },
        ],
        "schema": {"title": "item", "type": "object"},
    }
    assert response.headers["allow"] == "GET, PUT, PATCH"


def test_options_links_self_for_routes_without_placeholders(client_for: ClientFor) -> None:
    data = client_for(make_app()).request("OPTIONS", "/svc-json/demo/v1/plain").json()
    assert data["_links"] == {"self": [{"href": "http://127.0.0.1:8000/svc-json/demo/v1/plain"}]}
    assert data["endpoints"] == [{"methods": ["GET"], "args": {}}]


def test_options_matches_case_insensitively(client_for: ClientFor) -> None:
    data = client_for(make_app()).request("OPTIONS", "/svc-json/DEMO/V1/PLAIN").json()
    assert data["namespace"] == "demo/v1"


def test_options_without_a_match_is_empty(client_for: ClientFor) -> None:
    response = client_for(make_app()).request("OPTIONS", "/svc-json/nothing/here")
    assert response.status_code == 200
    assert response.json() == []
    assert "allow" not in response.headers


def test_options_keeps_an_earlier_response() -> None:
    app = make_app()
    app.hooks.add_filter("rest_pre_dispatch", lambda result, server, request: "earlier", 5)
    assert app.rest_do_request(Request("OPTIONS", "/demo/v1/plain")).data == "earlier"


def test_options_internal_dispatch_records_matched_route() -> None:
    response = make_app().rest_do_request(Request("OPTIONS", "/demo/v1/items/3"))
    assert response.matched_route == "/demo/v1/items/(?P<id>\\d+)"


def test_preflight_gets_cors_headers(client_for: ClientFor) -> None:
    response = client_for(make_app()).request(
        "OPTIONS",
        "/svc-json/demo/v1/items/5",
        headers={"Origin": "https://app.example", "Access-Control-Request-Method": "PUT"},
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "https://app.example"
    assert response.headers["access-control-allow-methods"] == "POST, GET, OPTIONS, PUT, DELETE"
    assert response.headers["access-control-allow-credentials"] == "true"


def test_allow_uses_permission_callbacks_last_handler_wins() -> None:
    app = App()
    calls: list[str] = []

    def deny(request: Request) -> bool:
        calls.append("deny")
        return False

    async def allow(request: Request) -> bool:
        calls.append("allow")
        return True

    app.register_rest_route(
        "demo/v1",
        "/r",
        [
            {"permission_callback": public, "methods": "GET", "callback": lambda r: "x"},
            {"methods": "POST, PUT", "callback": lambda r: "x", "permission_callback": deny},
            {"methods": "PUT", "callback": lambda r: "x", "permission_callback": allow},
            {"methods": "DELETE", "callback": lambda r: "x", "permission_callback": lambda r: 1},
        ],
    )

    async def main() -> httpx.Response:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url=app.home
        ) as client:
            return await client.get("/svc-json/demo/v1/r")

    response = asyncio.run(main())
    assert response.headers["allow"] == "GET, PUT"
    assert calls == ["deny", "allow"]


def test_allow_absent_when_nothing_allowed(client_for: ClientFor) -> None:
    app = App()
    app.register_rest_route(
        "demo/v1", "/r", {"callback": lambda r: "x", "permission_callback": lambda r: False}
    )
    response = client_for(app).get("/svc-json/demo/v1/r")
    assert response.status_code == 401
    assert "allow" not in response.headers


def test_allow_absent_without_matched_route(client_for: ClientFor) -> None:
    assert "allow" not in client_for(make_app()).get("/svc-json/none").headers


def test_no_cors_without_origin(client_for: ClientFor) -> None:
    response = client_for(make_app()).get("/svc-json/demo/v1/plain")
    for name in CORS:
        assert name not in response.headers
    assert response.headers["vary"] == "Origin"


@pytest.mark.parametrize(
    ("origin", "echoed"),
    [
        ("http://example.com", "http://example.com"),
        ("https://a.b.example:8443", "https://a.b.example:8443"),
        ("http://[::1]:3000", "http://[::1]:3000"),
        ("null", "null"),
        ("javascript:alert(1)", None),
        ("ftp://example.com", None),
        ("http://example.com/path", None),
        ("http://user:pw@example.com", None),
        ("http://exa mple.com", None),
        ("http://ex\u00e4mple.com", None),
        ("", None),
    ],
)
def test_sanitize_origin(origin: str, echoed: str | None) -> None:
    assert sanitize_origin(origin) == echoed


def test_error_responses_get_cors_too(client_for: ClientFor) -> None:
    response = client_for(make_app()).get("/svc-json/none", headers={"Origin": "http://a.test"})
    assert response.status_code == 404
    assert response.headers["access-control-allow-origin"] == "http://a.test"


@pytest.mark.parametrize(
    "raw_origin",
    [
        b"http://a.test\r\nSet-Cookie: x=1",
        b"http://a.test\x00",
        b"http://\xff\xfe.test",
        b"http://a.test\x7f",
        b"http://a.test, http://b.test",
    ],
    ids=["crlf", "nul", "binary", "del", "list"],
)
def test_malicious_origin_bytes_never_echoed(raw_origin: bytes, adapter: str) -> None:
    status, headers, _ = raw_request(
        make_app(), adapter, "GET", "/svc-json/demo/v1/plain", [(b"origin", raw_origin)]
    )
    assert status == 200
    names = [name.lower() for name, _ in headers]
    assert "access-control-allow-origin" not in names
    assert "set-cookie" not in names
    for _, value in headers:
        assert "\r" not in value and "\n" not in value


def test_deprecation_headers_during_rest_request(client_for: ClientFor) -> None:
    app = App()

    def old(request: Request) -> str:
        app.deprecated_function("old_fn", "1.2", "new_fn")
        app.deprecated_function("older_fn", "1.0")
        app.deprecated_argument("some_fn", "2.0", "The $x argument is ignored.")
        app.deprecated_argument("other_fn", "2.1")
        return "done"

    app.register_rest_route("demo/v1", "/old", {"permission_callback": public, "callback": old})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        response = client_for(app).get("/svc-json/demo/v1/old")
    assert response.status_code == 200
    assert response.headers.get_list("x-svc-deprecatedfunction") == [
        "old_fn (since 1.2; use new_fn instead)",
        "older_fn (since 1.0; no alternative available)",
    ]
    assert response.headers.get_list("x-svc-deprecatedparam") == [
        "some_fn (since 2.0; The $x argument is ignored.)",
        "other_fn (since 2.1; no alternative available)",
    ]


def test_deprecation_outside_rest_warns() -> None:
    app = App()
    app.rest_get_server()
    with pytest.warns(DeprecationWarning, match="old_fn is deprecated since version 1.2"):
        app.deprecated_function("old_fn", "1.2", "new_fn")
    with pytest.warns(DeprecationWarning, match="some_fn was called with an argument"):
        app.deprecated_argument("some_fn", "2.0")


def test_deprecated_decorator_and_non_ascii(client_for: ClientFor) -> None:
    app = App()

    @app.deprecated("3.0", replacement="ñew")
    def legacy() -> int:
        return 7

    app.register_rest_route(
        "demo/v1", "/legacy", {"permission_callback": public, "callback": lambda r: legacy()}
    )
    response = client_for(app).get("/svc-json/demo/v1/legacy")
    assert response.json() == 7
    value = response.headers["x-svc-deprecatedfunction"]
    assert value.isascii()
    assert value.endswith("legacy (since 3.0; use \\xf1ew instead)")


def test_trigger_error_filters_can_be_overridden() -> None:
    app = App()
    app.rest_get_server()
    app.hooks.add_filter("deprecated_function_trigger_error", lambda flag: False, 20)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        app.deprecated_function("quiet", "1.0")


def test_options_sets_url_params_for_permission_callbacks(client_for: ClientFor) -> None:
    app = App()
    seen: list[Any] = []

    def permission(request: Request) -> bool:
        seen.append(request.url_params)
        return int(request.get_param("id")) < 10

    app.register_rest_route(
        "demo/v1",
        r"/things/(?P<id>\d+)",
        [
            {"permission_callback": public, "methods": "GET", "callback": lambda r: "x"},
            {"methods": "DELETE", "callback": lambda r: "x", "permission_callback": permission},
        ],
    )
    client = client_for(app)
    assert client.request("OPTIONS", "/svc-json/demo/v1/things/3").headers["allow"] == (
        "GET, DELETE"
    )
    assert client.request("OPTIONS", "/svc-json/demo/v1/things/30").headers["allow"] == "GET"
    assert seen == [{"id": "3"}, {"id": "30"}]


async def _async_true(request: Request) -> bool:
    return True


async def _async_false(request: Request) -> bool:
    return False


def _refuses(request: Request) -> bool:
    raise RestError("nope", "Refused.", {"status": 403})


@pytest.mark.parametrize(
    ("permission", "status", "allow"),
    [
        (lambda request: True, 200, "GET, POST"),
        (_async_true, 200, "GET, POST"),
        (lambda request: 1, 401, None),
        (_async_false, 401, None),
        (_refuses, 403, None),
    ],
)
def test_allow_of_a_route_with_one_handler(
    client_for: ClientFor, permission: Any, status: int, allow: str | None
) -> None:
    app = App()
    app.register_rest_route(
        "demo/v1",
        "/one",
        {"methods": "GET, POST", "callback": lambda r: "x", "permission_callback": permission},
    )
    response = client_for(app).get("/svc-json/demo/v1/one")
    assert (response.status_code, response.headers.get("allow")) == (status, allow)
