"""The login page and ``POST /login`` (issue 19), on both adapters: the page's look and
messages, the username kept after a failure, the logged-out notice, and the JSON login.

The security rules of the login (cross-origin refusal, redirect on this site, session
rotation, no-store) are tested for the form in ``tests/auth/test_auth_rest.py``; here they are
checked again for the JSON body.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import httpx
import pytest

from svcrest import App, public
from svcrest.site.pages import LOGOUT_ACTION
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
HOME = "http://127.0.0.1:8000"
ME = "/svc-json/t/v1/me"
LOGIN_FAILED = {
    "code": "svc_login_failed",
    "message": "Unknown username or incorrect password.",
    "data": {"status": 403},
}
INVALID_BODY = {
    "code": "svc_login_invalid_body",
    "message": 'Send a JSON object {"log": "…", "pwd": "…"} ("rememberme": true is optional).',
    "data": {"status": 400},
}
JSON_HEADERS = [
    ("Content-Type", "application/json; charset=UTF-8"),
    ("X-Content-Type-Options", "nosniff"),
    ("Cache-Control", "no-store"),
]


@pytest.fixture
def app() -> App:
    made = App(HOME, name="Notes & Co", secret_key="test-secret")
    made.users.create("ed", "ed-pw", roles=("editor",), display_name="Ed Itor")
    made.register_rest_route(
        "t/v1",
        "/me",
        {"permission_callback": public, "callback": lambda request: {"login": request.user.login}},
    )
    return made


def lines(response: httpx.Response) -> list[tuple[str, str]]:
    """The response's header lines without the Content-Length, the discovery Link and the
    made ``X-Request-Id`` (checked: 32 hexadecimal digits) every site page has."""
    assert re.fullmatch("[0-9a-f]{32}", response.headers["x-request-id"])
    return [
        (name.decode(), value.decode())
        for name, value in response.headers.raw
        if name.lower() not in (b"content-length", b"link", b"x-request-id")
    ]


def form_login(client: SiteClient, login: str, password: str, **extra: str) -> httpx.Response:
    return client.post("/login", data={"log": login, "pwd": password, **extra})


def json_login(client: SiteClient, body: object, **headers: str) -> httpx.Response:
    return client.post(
        "/login",
        content=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **headers},
    )


def whoami(client: SiteClient) -> str:
    nonce = client.get("/auth/nonce").json()["nonce"]
    return str(client.get(ME, headers={"X-SVC-Nonce": nonce}).json()["login"])


# -- the page ----------------------------------------------------------------------------------


def test_login_page(app: App, client_for: ClientFor) -> None:
    response = client_for(app).get("/login?redirect_to=/x%22y")
    assert response.status_code == 200
    assert lines(response) == [
        ("Content-Type", "text/html; charset=UTF-8"),
        ("X-Content-Type-Options", "nosniff"),
        ("Cache-Control", "no-store"),
        ("X-Frame-Options", "DENY"),
        ("Content-Security-Policy", "frame-ancestors 'none'"),
    ]
    page = response.text
    assert '<link rel="stylesheet" href="/static/site.css">' in page
    assert "<style>" not in page
    assert "<h1>Log in to Notes &amp; Co</h1>" in page
    assert (
        '<input name="log" autocomplete="username" autocapitalize="none" spellcheck="false"'
        ' required value="" autofocus>' in page
    )
    assert '<input type="hidden" name="redirect_to" value="/x&quot;y">' in page
    assert f'<p class="back"><a href="{HOME}/">&larr; Back to Notes &amp; Co</a></p>' in page
    assert 'class="notice"' not in page
    assert 'class="error"' not in page


def test_site_stylesheet_is_served(app: App, client_for: ClientFor) -> None:
    response = client_for(app).get("/static/site.css")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/css; charset=UTF-8"
    assert ".auth {" in response.text


@pytest.mark.parametrize(
    ("query", "shown"),
    [("loggedout=true", True), ("loggedout=1", False), ("", False)],
    ids=["loggedout", "other-value", "none"],
)
def test_logged_out_notice(app: App, client_for: ClientFor, query: str, shown: bool) -> None:
    page = client_for(app).get(f"/login?{query}").text
    notice = '<p class="notice" role="status">You are now logged out.</p>'
    assert (notice in page) is shown


def test_logout_lands_on_the_notice(app: App, client_for: ClientFor) -> None:
    client = client_for(app)
    assert form_login(client, "ed", "ed-pw").status_code == 303
    token = str(client.cookies["svc_logged_in"]).split("|")[2]
    user = app.users.get_by_login("ed")
    assert user is not None
    nonce = app.auth.create_nonce(LOGOUT_ACTION, user.id, token)
    response = client.post("/logout", data={"_wpnonce": nonce})
    assert (response.status_code, response.headers["location"]) == (
        303,
        HOME + "/login?loggedout=true",
    )
    page = client.get(response.headers["location"]).text
    assert '<p class="notice" role="status">You are now logged out.</p>' in page


def test_failed_login_keeps_the_username_escaped(app: App, client_for: ClientFor) -> None:
    client = client_for(app)
    response = form_login(client, '<b>"ed"&', "wrong", redirect_to="/back")
    assert response.status_code == 403
    assert lines(response) == [
        ("Content-Type", "text/html; charset=UTF-8"),
        ("X-Content-Type-Options", "nosniff"),
        ("Cache-Control", "no-store"),
        ("X-Frame-Options", "DENY"),
        ("Content-Security-Policy", "frame-ancestors 'none'"),
    ]
    page = response.text
    assert '<p class="error" role="alert">Unknown username or incorrect password.</p>' in page
    assert (
        ' required value="&lt;b&gt;&quot;ed&quot;&amp;">' in page  # no autofocus: kept
    )
    assert '<input name="pwd" type="password" autocomplete="current-password" required' in page
    assert 'required autofocus></label>\n<label class="check">' in page  # the password's
    assert '<input type="hidden" name="redirect_to" value="/back">' in page
    assert '<b>"ed"' not in page


# -- POST /login with a JSON body --------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "application/json; charset=UTF-8", "application/vnd.api+json"],
)
def test_json_login(app: App, client_for: ClientFor, content_type: str) -> None:
    client = client_for(app)
    response = json_login(client, {"log": "ed", "pwd": "ed-pw"}, **{"Content-Type": content_type})
    assert response.status_code == 200
    cookie = response.headers["set-cookie"]
    assert lines(response) == [*JSON_HEADERS, ("Set-Cookie", cookie)]
    assert cookie.startswith("svc_logged_in=ed|")
    assert cookie.endswith("; Path=/; HttpOnly; SameSite=Lax")
    assert "Max-Age" not in cookie
    user = app.users.get_by_login("ed")
    assert user is not None
    assert response.json() == {
        "user": {"id": user.id, "login": "ed", "display_name": "Ed Itor", "roles": ["editor"]}
    }
    assert whoami(client) == "ed"


def test_json_login_remember_me(app: App, client_for: ClientFor) -> None:
    response = json_login(client_for(app), {"log": "ed", "pwd": "ed-pw", "rememberme": True})
    assert response.status_code == 200
    assert "; Max-Age=1209600" in response.headers["set-cookie"]


@pytest.mark.parametrize(
    "body",
    [{"log": "ed", "pwd": "wrong"}, {"log": "nobody", "pwd": "x"}, {"log": "", "pwd": ""}],
    ids=["bad-password", "unknown-user", "empty"],
)
def test_failed_json_login(app: App, client_for: ClientFor, body: dict[str, str]) -> None:
    response = json_login(client_for(app), body)
    assert response.status_code == 403
    assert lines(response) == JSON_HEADERS
    assert response.json() == LOGIN_FAILED


@pytest.mark.parametrize(
    "content",
    [
        b"{",
        b"",
        b"[]",
        b'"ed"',
        b'{"log": "ed"}',
        b'{"log": 1, "pwd": "ed-pw"}',
        b'{"log": "ed", "pwd": "ed-pw", "rememberme": "forever"}',
        b'{"log": "ed", "pwd": NaN}',
    ],
    ids=[
        "not-json",
        "empty",
        "array",
        "string",
        "no-password",
        "number",
        "rememberme-string",
        "nan",
    ],
)
def test_json_login_with_a_bad_body(app: App, client_for: ClientFor, content: bytes) -> None:
    response = client_for(app).post(
        "/login", content=content, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert lines(response) == JSON_HEADERS
    assert response.json() == INVALID_BODY


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
    ],
    ids=["foreign-origin", "null-origin", "sec-fetch-site"],
)
def test_cross_origin_json_login_is_refused(
    app: App, client_for: ClientFor, headers: dict[str, str]
) -> None:
    response = json_login(client_for(app), {"log": "ed", "pwd": "ed-pw"}, **headers)
    assert response.status_code == 403
    assert lines(response) == JSON_HEADERS
    assert response.json() == {
        "code": "svc_login_cross_origin",
        "message": "Cross-origin login refused.",
        "data": {"status": 403},
    }


def test_same_origin_json_login(app: App, client_for: ClientFor) -> None:
    same = {"Origin": HOME, "Sec-Fetch-Site": "same-origin"}
    assert json_login(client_for(app), {"log": "ed", "pwd": "ed-pw"}, **same).status_code == 200


def test_json_login_rotates_the_session(app: App, client_for: ClientFor) -> None:
    client = client_for(app)
    json_login(client, {"log": "ed", "pwd": "ed-pw"})
    first = str(client.cookies["svc_logged_in"])
    json_login(client, {"log": "ed", "pwd": "ed-pw"})
    assert str(client.cookies["svc_logged_in"]) != first
    user = app.users.get_by_login("ed")
    assert user is not None
    nonce = app.auth.create_nonce("svc_rest", user.id, first.split("|")[2])
    old = client_for(app).get(
        ME, headers={"Cookie": f"svc_logged_in={first}", "X-SVC-Nonce": nonce}
    )
    assert old.status_code == 403  # the old session is gone: anonymous with a user nonce


@pytest.mark.parametrize(
    ("content_type", "media"),
    [
        ("text/plain", "text/plain"),
        ("multipart/form-data; boundary=x", "multipart/form-data"),
        ("application/xml", "application/xml"),
    ],
)
def test_other_body_types_are_415(
    app: App, client_for: ClientFor, content_type: str, media: str
) -> None:
    response = client_for(app).post(
        "/login", content=b"log=ed&pwd=ed-pw", headers={"Content-Type": content_type}
    )
    assert response.status_code == 415
    assert lines(response) == [
        *JSON_HEADERS,
        ("Accept-Post", "application/x-www-form-urlencoded, application/json"),
    ]
    assert response.json() == {
        "code": "svc_login_unsupported_media_type",
        "message": "POST /login reads application/x-www-form-urlencoded, application/json"
        f" bodies, not {media}.",
        "data": {"status": 415},
    }


def test_form_login_without_a_content_type(app: App, client_for: ClientFor) -> None:
    client = client_for(app)
    response = client.post("/login", content=b"log=ed&pwd=ed-pw")
    assert response.status_code == 303
    assert whoami(client) == "ed"
