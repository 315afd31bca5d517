"""Authentication schemes declare themselves once; the REST layer builds the rest from them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from svcrest import App, Request, public
from svcrest.hooks import Hooks
from svcrest.http.headers import Headers
from svcrest.rest.auth_schemes import AuthScheme, AuthSchemes
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
#: The request headers every REST answer allows besides the schemes' own ones.
CONTENT = "Content-Disposition, Content-MD5, Content-Type, If-Match, If-None-Match, Idempotency-Key"
DEFAULT_ALLOW = "Authorization, X-SVC-Nonce, " + CONTENT


def app_with_route() -> App:
    app = App()
    app.register_rest_route(
        "t/v1",
        "/who",
        {
            "methods": "GET",
            "permission_callback": public,
            "callback": lambda r: {"id": r.user.id},
        },
    )
    return app


def key_scheme(calls: list[str]) -> AuthScheme:
    """A scheme reading ``X-Api-Key``; its callbacks note each call in ``calls``."""

    def key_user(user: Any, request: Request) -> Any:
        calls.append("user")
        return user

    def key_errors(result: Any, request: Request) -> Any:
        calls.append("errors")
        return result

    return AuthScheme(
        name="api-key",
        headers=("X-Api-Key",),
        openapi={"apiKey": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}},
        requirements=({"apiKey": []},),
        index=lambda: {"header": "X-Api-Key"},
        callbacks=(
            ("determine_current_user", key_user, 30),
            ("rest_authentication_errors", key_errors, 80),
        ),
    )


def test_the_default_schemes_give_the_default_cors_and_index(client_for: ClientFor) -> None:
    app = app_with_route()
    client = client_for(app)
    response = client.get("/svc-json/t/v1/who")
    assert response.headers["access-control-allow-headers"] == DEFAULT_ALLOW
    assert [s.name for s in app.auth_schemes.schemes] == ["cookie", "application-passwords"]
    assert client.get("/svc-json/").json()["authentication"] == {
        "application-passwords": {
            "endpoints": {"authorization": app.home + "/authorize-application"}
        }
    }
    compat = client_for(App(wordpress_compat=True)).get("/svc-json/")
    assert compat.headers["access-control-allow-headers"] == DEFAULT_ALLOW + ", X-WP-Nonce"


def test_an_added_scheme_is_in_cors_openapi_and_the_index(client_for: ClientFor) -> None:
    app = app_with_route()
    app.auth_schemes.add(key_scheme([]))
    client = client_for(app)
    response = client.get("/svc-json/t/v1/who")
    assert response.headers["access-control-allow-headers"] == (
        "Authorization, X-Api-Key, X-SVC-Nonce, " + CONTENT
    )
    assert client.get("/svc-json/").json()["authentication"]["api-key"] == {"header": "X-Api-Key"}
    document = app.openapi()
    assert document["components"]["securitySchemes"]["apiKey"] == {
        "type": "apiKey",
        "in": "header",
        "name": "X-Api-Key",
    }
    assert document["security"][-1] == {"apiKey": []}
    assert document["security"][0] == {}


def test_a_request_without_a_schemes_credentials_skips_its_callbacks(
    client_for: ClientFor,
) -> None:
    app = app_with_route()
    calls: list[str] = []
    app.auth_schemes.add(key_scheme(calls))
    client = client_for(app)
    assert client.get("/svc-json/t/v1/who").json() == {"id": 0}
    assert calls == []
    client.get("/svc-json/t/v1/who", headers={"X-Api-Key": "k"})
    assert calls == ["user", "errors"]


def test_an_unrelated_callback_costs_its_own_call_only(
    client_for: ClientFor, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = app_with_route()
    scheme_calls: list[str] = []
    app.auth_schemes.add(key_scheme(scheme_calls))
    seen: list[int] = []
    robot = app.users.create("robot", "unused-password-1234")

    def everyone_is_robot(user: Any, request: Request) -> Any:
        seen.append(1)
        return robot

    app.hooks.add_filter("determine_current_user", everyone_is_robot)
    plan = app.rest_get_server().plan()
    assert plan.authentication_anonymous is not None
    # The anonymous chain: the extra callback, the user's adoption, no scheme's callback.
    assert len(plan.authentication_anonymous) == 2
    assert plan.authentication_anonymous[0] is everyone_is_robot
    client = client_for(app)
    assert client.get("/svc-json/t/v1/who").json() == {"id": robot.id}
    assert seen == [1]
    assert scheme_calls == []


def test_without_extra_callbacks_an_anonymous_request_runs_no_chain() -> None:
    plan = App().rest_get_server().plan()
    assert plan.authentication_anonymous is None


@pytest.mark.parametrize(
    ("lines", "query", "body", "expected"),
    [
        ([], "", b"", False),
        ([("Accept", "*/*")], "page=2", b"", False),
        ([("Cookie", "a=b")], "", b"", True),
        ([("authorization", "Basic x")], "", b"", True),
        ([("X-SVC-Nonce", "n")], "", b"", True),
        ([("X-WP-Nonce", "n")], "", b"", True),
        ([], "_wpnonce=1", b"", True),
        ([], "a=%5Fwpnonce", b"", True),
        ([], "", b"_wpnonce=1", True),
    ],
    ids=["nothing", "plain", "cookie", "basic", "nonce", "wp-nonce", "query", "encoded", "body"],
)
def test_carries_credentials(
    lines: list[tuple[str, str]], query: str, body: bytes, expected: bool
) -> None:
    schemes = App().auth_schemes
    request = Request.from_http("GET", "/x", query, Headers(lines), body)
    assert schemes.carries_credentials(request) is expected


def test_a_registry_without_field_schemes_ignores_bodies() -> None:
    schemes = AuthSchemes(Hooks())
    schemes.add(key_scheme([]))
    request = Request.from_http("POST", "/x", "_wpnonce=1", Headers([]), b"_wpnonce=1")
    assert schemes.carries_credentials(request) is False
    assert schemes.allow_headers == "X-Api-Key, " + CONTENT


def test_registration_mistakes_raise() -> None:
    schemes = AuthSchemes(Hooks())
    schemes.add(key_scheme([]))
    with pytest.raises(ValueError, match="already added"):
        schemes.add(key_scheme([]))
    with pytest.raises(ValueError, match="no callbacks"):
        schemes.add(AuthScheme(name="empty"))
    with pytest.raises(ValueError, match="cannot be on 'rest_pre_dispatch'"):
        schemes.add(AuthScheme(name="odd", callbacks=(("rest_pre_dispatch", lambda *a: None, 10),)))
