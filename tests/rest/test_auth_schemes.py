"""Authentication schemes declare themselves once; the REST layer builds the rest from them."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest

from svcrest import App, Request, public
from svcrest.auth.passwords import ScryptParams
from svcrest.hooks import Hooks
from svcrest.http.headers import Headers
from svcrest.http.user import ANONYMOUS
from svcrest.rest.auth_schemes import CHOSEN_ONE_BY_ONE, AuthScheme, AuthSchemes, adopt_user
from svcrest.rest.plan import PipelinePlan
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


@pytest.mark.parametrize(
    ("lines", "query", "expected"),
    [
        ([], "", False),
        ([], None, False),
        ([("Accept", "*/*")], "page=2", False),
        ([("Cookie", "a=b")], "", True),
        ([("authorization", "Basic x")], "", True),
        ([("X-SVC-Nonce", "n")], "", True),
        ([("X-WP-Nonce", "n")], "", True),
        ([], "_wpnonce=1", True),
        ([], "a=%5Fwpnonce", True),
    ],
    ids=[
        "nothing",
        "no-query",
        "plain",
        "cookie",
        "basic",
        "nonce",
        "wp-nonce",
        "query",
        "encoded",
    ],
)
def test_lines_carry_credentials_as_a_request_without_a_body(
    lines: list[tuple[str, str]], query: str | None, expected: bool
) -> None:
    schemes = App().auth_schemes
    assert schemes.lines_carry_credentials(Headers(lines), query) is expected
    request = Request.from_http("POST", "/mcp", query or "", Headers(lines), b"")
    assert schemes.carries_credentials(request) is expected


COOKIE_BIT, BASIC_BIT = 1, 2  # an App adds the cookie's scheme first, then Basic


@pytest.mark.parametrize(
    ("lines", "query", "body", "expected"),
    [
        ([], "", b"", 0),
        ([("Accept", "*/*")], "page=2", b"", 0),
        ([("Cookie", "a=b")], "", b"", COOKIE_BIT),
        ([("X-SVC-Nonce", "n")], None, b"", COOKIE_BIT),
        ([("X-WP-Nonce", "n")], "", b"", COOKIE_BIT),
        ([("authorization", "Basic x")], "", b"", BASIC_BIT),
        ([("Cookie", "a=b"), ("Authorization", "Basic x")], "", b"", COOKIE_BIT | BASIC_BIT),
        ([("X-SVC-Nonce", "n"), ("Authorization", "x")], "", b"", COOKIE_BIT | BASIC_BIT),
        ([("Authorization", "Basic x")], "_wpnonce=1", b"", COOKIE_BIT | BASIC_BIT),
        ([], "_wpnonce=1", b"", COOKIE_BIT),
        ([], "a=%5Fwpnonce", b"", COOKIE_BIT),
        ([], "", b"_wpnonce=1", COOKIE_BIT),
    ],
    ids=[
        "nothing",
        "plain",
        "cookie",
        "nonce",
        "wp-nonce",
        "basic",
        "cookie-and-basic",
        "nonce-and-basic",
        "basic-and-query",
        "query",
        "encoded",
        "body",
    ],
)
def test_the_rule_names_the_schemes_whose_credentials_a_request_carries(
    lines: list[tuple[str, str]], query: str | None, body: bytes, expected: int
) -> None:
    schemes = App().auth_schemes
    assert [scheme.name for scheme in schemes.schemes] == ["cookie", "application-passwords"]
    assert schemes.rule.carried(Headers(lines), query, body) == expected
    request = Request.from_http("GET", "/x", query or "", Headers(lines), body)
    assert schemes.carries_credentials(request) is (expected != 0)


def test_a_cookie_request_skips_the_application_password_callbacks() -> None:
    app = App()
    plan = app.rest_get_server().plan()
    basic = [callback for _, callback, _ in app.auth_schemes.schemes[1].callbacks]
    cookie = [callback for _, callback, _ in app.auth_schemes.schemes[0].callbacks]
    chains = plan.authentication_by_carried
    assert len(chains) == 4
    assert chains[0] is None and plan.authentication_anonymous is None
    assert chains[COOKIE_BIT] == (cookie[0], adopt_user, cookie[1])
    assert chains[BASIC_BIT] == (basic[0], adopt_user, basic[1])
    # Both: every callback, in the hooks' order (the cookie's user first, Basic's errors
    # before the cookie check's), as the whole chain.
    both = chains[COOKIE_BIT | BASIC_BIT]
    assert both == (cookie[0], basic[0], adopt_user, basic[1], cookie[1]) == plan.authentication


def test_a_cookie_request_runs_the_cookie_schemes_alone_function() -> None:
    app = App()
    cookie = app.auth_schemes.schemes[0]
    assert cookie.alone is not None
    plan = app.rest_get_server().plan()
    assert plan.authenticate_by_carried[0] is None
    assert plan.authenticate_by_carried[COOKIE_BIT] == cookie.alone
    # Basic's callbacks have no alone function: their chain runs through the runner.
    assert plan.authenticate_by_carried[BASIC_BIT] != cookie.alone
    assert plan.authenticate_by_carried[COOKIE_BIT | BASIC_BIT] != cookie.alone


def test_another_callback_or_a_removed_one_turns_the_alone_function_off() -> None:
    app = App()
    cookie = app.auth_schemes.schemes[0]
    ran: list[str] = []

    def plugin(result: Any, request: Request) -> Any:
        ran.append("plugin")
        return result

    app.hooks.add_filter("rest_authentication_errors", plugin, 50)
    plan = app.rest_get_server().plan()
    authenticate = plan.authenticate_by_carried[COOKIE_BIT]
    assert authenticate is not None and authenticate != cookie.alone
    request = Request.from_http("GET", "/x", "", Headers([("Cookie", "a=b")]), b"")
    authenticate(ANONYMOUS, request)
    assert ran == ["plugin"]
    app.hooks.remove_filter("rest_authentication_errors", plugin, 50)
    assert app.rest_get_server().plan().authenticate_by_carried[COOKIE_BIT] == cookie.alone
    _, check_errors, _ = cookie.callbacks[1]
    app.hooks.remove_filter("rest_authentication_errors", check_errors, 100)
    assert app.rest_get_server().plan().authenticate_by_carried[COOKIE_BIT] != cookie.alone


def test_a_scheme_without_carriers_runs_with_any_credentials() -> None:
    hooks = Hooks()
    schemes = AuthSchemes(hooks)
    schemes.add(key_scheme([]))
    ran: list[str] = []

    def loose(user: Any, request: Request) -> Any:
        ran.append("loose")
        return user

    schemes.add(AuthScheme(name="loose", callbacks=(("determine_current_user", loose, 10),)))
    rule = schemes.rule
    assert rule.carried(Headers([]), "", b"") == 0
    assert rule.carried(Headers([("X-Api-Key", "k")]), "", b"") == 0b11
    plan = PipelinePlan(hooks, schemes)
    assert plan.authentication_by_carried[0] is None
    assert loose in (plan.authentication_by_carried[0b11] or ())


def test_schemes_past_the_sixth_share_one_choice() -> None:
    hooks = Hooks()
    schemes = AuthSchemes(hooks)
    for index in range(CHOSEN_ONE_BY_ONE + 3):
        schemes.add(
            AuthScheme(
                name=f"s{index}",
                headers=(f"X-Key-{index}",),
                callbacks=(("determine_current_user", lambda user, request: user, 10),),
            )
        )
    rule = schemes.rule
    assert rule.width == CHOSEN_ONE_BY_ONE + 1
    last = f"X-Key-{CHOSEN_ONE_BY_ONE + 2}"
    assert rule.carried(Headers([(last, "k")]), "", b"") == 1 << CHOSEN_ONE_BY_ONE
    assert rule.carried(Headers([("X-Key-0", "k")]), "", b"") == 1
    plan = PipelinePlan(hooks, schemes)
    assert len(plan.authentication_by_carried) == 1 << (CHOSEN_ONE_BY_ONE + 1)
    shared = plan.authentication_by_carried[1 << CHOSEN_ONE_BY_ONE]
    assert shared is not None and len(shared) == 3 + 1  # the three later schemes, adoption


def test_lines_carry_no_query_credentials_without_field_schemes() -> None:
    schemes = AuthSchemes(Hooks())
    schemes.add(key_scheme([]))
    assert schemes.lines_carry_credentials(Headers([]), "_wpnonce=1") is False
    assert schemes.lines_carry_credentials(Headers([("X-Api-Key", "k")]), "") is True


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


#: A plugin's tokens: token → (user login, the token's id).
ROBOT_TOKENS = {"tok-one": ("robot", "t1"), "tok-two": ("robot", "t2")}
BIG = {"text": "svcrest " * 300}


def robot_scheme(app: App) -> AuthScheme:
    """A bearer scheme of a plugin: tokens in ``X-Robot-Token``, each token a credential of
    its own for rate limits."""

    def token_of(request: Request) -> tuple[str, str] | None:
        return ROBOT_TOKENS.get(request.get_header("X-Robot-Token") or "")

    def robot_user(user: Any, request: Request) -> Any:
        found = token_of(request)
        return app.users.get_by_login(found[0]) if found is not None else user

    def token_id(request: Request) -> str | None:
        found = token_of(request)
        return None if found is None else "robot-" + found[1]

    return AuthScheme(
        name="robot",
        headers=("X-Robot-Token",),
        secret_headers=("X-Robot-Token",),
        rate_key=token_id,
        callbacks=(("determine_current_user", robot_user, 30),),
    )


def robot_app(rate_limit: dict[str, Any] | None = None) -> App:
    app = App()
    app.users.create("robot", "unused-password-1234", roles=("author",))
    app.auth_schemes.add(robot_scheme(app))
    app.register_rest_route(
        "t/v1",
        "/big",
        {
            0: {
                "methods": "GET",
                "permission_callback": public,
                "callback": lambda request: {**BIG, "user": request.user.id},
            },
            "rate_limit": rate_limit,
        },
    )
    return app


def test_the_registry_gathers_the_secret_lines_once() -> None:
    schemes = App().auth_schemes
    assert schemes.secret_lines == frozenset({"set-cookie", "x-svc-nonce", "x-wp-nonce"})
    assert schemes.secret_request_lines == frozenset()
    assert len(schemes.rate_keys) == 1  # application passwords'
    schemes.add(robot_scheme(App()))
    assert schemes.secret_lines == frozenset({"set-cookie", "x-svc-nonce", "x-wp-nonce"})
    assert schemes.secret_request_lines == frozenset({"x-robot-token"})
    assert len(schemes.rate_keys) == 2


def test_an_answer_to_a_request_with_a_schemes_secret_header_is_not_compressed(
    client_for: ClientFor,
) -> None:
    client = client_for(robot_app())
    gzip = {"Accept-Encoding": "gzip"}
    anonymous = client.get("/svc-json/t/v1/big", headers=gzip)
    assert anonymous.status_code == 200
    assert anonymous.headers["content-encoding"] == "gzip"
    assert anonymous.json()["user"] == 0
    robot = client.get("/svc-json/t/v1/big", headers={**gzip, "X-Robot-Token": "tok-one"})
    assert robot.status_code == 200
    assert "content-encoding" not in robot.headers
    assert robot.json()["user"] != 0
    # An unknown token is a secret header line all the same.
    unknown = client.get("/svc-json/t/v1/big", headers={**gzip, "x-robot-token": "nope"})
    assert (unknown.json()["user"], "content-encoding" in unknown.headers) == (0, False)


def test_a_basic_request_is_compressed_as_before(client_for: ClientFor) -> None:
    app = robot_app()
    app.users.password_params = ScryptParams(n=16, r=1, p=1)
    user = app.users.create("kim", "kim-password-1234")
    password, _ = app.users.create_application_password(user.id, "cli")
    basic = base64.b64encode(f"kim:{password}".encode()).decode()
    response = client_for(app).get(
        "/svc-json/t/v1/big", headers={"Accept-Encoding": "gzip", "Authorization": "Basic " + basic}
    )
    assert (response.json()["user"], response.headers["content-encoding"]) == (user.id, "gzip")


@pytest.mark.parametrize(
    ("per", "expected"),
    [
        ("credential", [200, 429, 200, 429]),
        ("application_password", [200, 429, 200, 429]),
        ("user", [200, 429, 429, 429]),
    ],
)
def test_a_schemes_rate_key_counts_each_credential_apart(
    client_for: ClientFor, per: str, expected: list[int]
) -> None:
    client = client_for(robot_app({"limit": 1, "window": 60, "per": per}))
    statuses = [
        client.get("/svc-json/t/v1/big", headers={"X-Robot-Token": token}).status_code
        for token in ("tok-one", "tok-one", "tok-two", "tok-two")
    ]
    assert statuses == expected
