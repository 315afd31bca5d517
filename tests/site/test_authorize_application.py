"""``/authorize-application`` (DESIGN §10): a logged-in user approves a third-party app."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from svcrest import App
from svcrest.auth.passwords import ScryptParams
from svcrest.site.authorize_app import valid_success_url
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
FAST = ScryptParams(n=16, r=1, p=1)
HOME = "http://127.0.0.1:8000"
PAGE = "/authorize-application"


@pytest.fixture
def app() -> Iterator[App]:
    made = App(HOME, secret_key="test-secret")
    made.users.password_params = FAST
    made.users.create("alice", "alice-pw", roles=("editor",))
    yield made
    made.store.close()


def logged_in(client_for: ClientFor, app: App) -> SiteClient:
    client = client_for(app)
    assert client.post("/login", data={"log": "alice", "pwd": "alice-pw"}).status_code == 303
    return client


def form_nonce(text: str) -> str:
    match = re.search(r'name="_wpnonce" value="([0-9a-f]+)"', text)
    assert match is not None
    return match.group(1)


@pytest.mark.parametrize(
    ("url", "valid"),
    [
        ("https://app.example/cb", True),
        ("https://app.example:8443/cb?x=1", True),
        ("http://127.0.0.1:9000/cb", True),
        ("http://localhost/cb", True),
        ("http://app.example/cb", False),
        ("javascript:alert(1)", False),
        ("/relative", False),
        ("https://", False),
        ("https://app.example:99999/", False),
        ("https://app.example/\n", False),
    ],
)
def test_valid_success_url(url: str, valid: bool) -> None:
    assert valid_success_url(url) is valid


def test_anonymous_visitors_log_in_first(app: App, client_for: ClientFor) -> None:
    query = "app_name=My+App&success_url=https%3A%2F%2Fapp.example%2Fcb"
    response = client_for(app).get(f"{PAGE}?{query}")
    assert response.status_code == 303
    assert response.headers["location"] == (
        f"{HOME}/login?redirect_to=" + quote(f"{PAGE}?{query}", safe="")
    )


def test_approving_redirects_with_the_password(app: App, client_for: ClientFor) -> None:
    client = logged_in(client_for, app)
    params = {"app_name": "My <App>", "success_url": "https://app.example/cb?state=1"}
    page = client.get(PAGE, params=params)
    assert page.status_code == 200
    assert "My &lt;App&gt;" in page.text and "My <App>" not in page.text
    form = {**params, "_wpnonce": form_nonce(page.text), "approve": "1"}
    response = client.post(PAGE, data=form)
    assert response.status_code == 303
    location = urlsplit(response.headers["location"])
    assert (location.scheme, location.netloc, location.path) == ("https", "app.example", "/cb")
    query = parse_qs(location.query)
    assert set(query) == {"state", "site_url", "user_login", "password"}
    assert (query["state"], query["site_url"], query["user_login"]) == (["1"], [HOME], ["alice"])
    [password] = query["password"]
    assert re.fullmatch(r"[A-Za-z0-9]{24}", password)
    user = app.users.authenticate_application_password("alice", password)
    assert user is not None and user.login == "alice"
    [item] = app.users.list_application_passwords(user.id)
    assert item["name"] == "My <App>"


def test_approving_without_success_url_shows_the_password(app: App, client_for: ClientFor) -> None:
    client = logged_in(client_for, app)
    page = client.get(PAGE, params={"app_name": "CLI"})
    response = client.post(
        PAGE, data={"app_name": "CLI", "_wpnonce": form_nonce(page.text), "approve": "1"}
    )
    assert response.status_code == 200
    match = re.search(
        r'<kbd class="new-application-password">([A-Za-z0-9]{24})</kbd>', response.text
    )
    assert match is not None
    assert app.users.authenticate_application_password("alice", match.group(1)) is not None


def test_rejecting_redirects_with_success_false(app: App, client_for: ClientFor) -> None:
    client = logged_in(client_for, app)
    params = {"app_name": "My App", "success_url": "http://127.0.0.1:9000/cb"}
    page = client.get(PAGE, params=params)
    form = {**params, "_wpnonce": form_nonce(page.text), "reject": "1"}
    response = client.post(PAGE, data=form)
    assert (response.status_code, response.headers["location"]) == (
        303,
        "http://127.0.0.1:9000/cb?success=false",
    )
    user = app.users.get_by_login("alice")
    assert user is not None and app.users.list_application_passwords(user.id) == []


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"app_name": "x", "success_url": "http://app.example/cb"},
         "The success URL must be served over a secure connection."),
        ({"success_url": "https://app.example/cb"},
         "An application name is required to authorize an application."),
    ],
)  # fmt: skip
def test_bad_requests_are_400(
    app: App, client_for: ClientFor, params: dict[str, str], message: str
) -> None:
    response = logged_in(client_for, app).get(PAGE, params=params)
    assert response.status_code == 400
    assert message in response.text


def test_a_post_needs_the_nonce_and_the_same_origin(app: App, client_for: ClientFor) -> None:
    client = logged_in(client_for, app)
    form = {"app_name": "x", "approve": "1", "_wpnonce": "0" * 32}
    response = client.post(PAGE, data=form)
    assert response.status_code == 403
    assert "The link you followed has expired. Please try again." in response.text
    page = client.get(PAGE, params={"app_name": "x"})
    form["_wpnonce"] = form_nonce(page.text)
    response = client.post(PAGE, data=form, headers={"Origin": "https://evil.example"})
    assert response.status_code == 403
    assert client_for(app).post(PAGE, data=form).status_code == 401
    user = app.users.get_by_login("alice")
    assert user is not None and app.users.list_application_passwords(user.id) == []


def test_an_app_name_with_control_characters_is_a_400_not_a_500(
    app: App, client_for: ClientFor
) -> None:
    client = logged_in(client_for, app)
    page = client.get(PAGE, params={"app_name": "x"})
    form = {"app_name": "bad\x01name", "approve": "1", "_wpnonce": form_nonce(page.text)}
    response = client.post(PAGE, data=form)
    assert response.status_code == 400
    assert "name must not contain control or invisible characters" in response.text
    user = app.users.get_by_login("alice")
    assert user is not None and app.users.list_application_passwords(user.id) == []


def test_approving_past_the_bound_of_passwords_is_a_409(app: App, client_for: ClientFor) -> None:
    alice = app.users.get_by_login("alice")
    assert alice is not None
    for number in range(50):
        app.users.create_application_password(alice.id, f"app {number}")
    client = logged_in(client_for, app)
    page = client.get(PAGE, params={"app_name": "CLI"})
    response = client.post(
        PAGE, data={"app_name": "CLI", "_wpnonce": form_nonce(page.text), "approve": "1"}
    )
    assert response.status_code == 409
    assert "A user may have at most 50 application passwords." in response.text
    assert "new-application-password" not in response.text
    assert len(app.users.list_application_passwords(alice.id)) == 50


def test_an_app_may_ask_for_a_scoped_password(app: App, client_for: ClientFor) -> None:
    client = logged_in(client_for, app)
    params = {
        "app_name": "Agent",
        "success_url": "https://app.example/cb",
        "scope": "notes/v1, <x>/v1",
        "read_only": "1",
    }
    refused = client.get(PAGE, params=params)
    assert refused.status_code == 400
    assert "&#x27;&lt;x&gt;/v1&#x27; is not a REST namespace" in refused.text
    params["scope"] = "notes/v1, other/v1"
    page = client.get(PAGE, params=params)
    assert page.status_code == 200
    assert (
        '<p class="scope">It may be used only for: <code>notes/v1</code>, <code>other/v1</code>.'
        "</p>\n"
        '<p class="scope">It may only read, never change anything.</p>\n'
    ) in page.text
    assert '<input type="hidden" name="scope" value="notes/v1,other/v1">' in page.text
    assert '<input type="hidden" name="read_only" value="1">' in page.text
    form = {
        "app_name": "Agent",
        "success_url": "https://app.example/cb",
        "scope": "notes/v1,other/v1",
        "read_only": "1",
        "_wpnonce": form_nonce(page.text),
        "approve": "1",
    }
    response = client.post(PAGE, data=form)
    assert response.status_code == 303
    [item] = app.users.list_application_passwords(1)
    assert (item["name"], item["scope"], item["read_only"]) == (
        "Agent",
        ["notes/v1", "other/v1"],
        True,
    )


def test_a_request_without_scope_says_nothing_of_one(app: App, client_for: ClientFor) -> None:
    client = logged_in(client_for, app)
    page = client.get(PAGE, params={"app_name": "CLI", "scope[]": ["a/v1", "b/v1"]})
    assert "<code>a/v1</code>, <code>b/v1</code>" in page.text
    plain = client.get(PAGE, params={"app_name": "CLI"})
    assert 'class="scope"' not in plain.text and 'name="scope"' not in plain.text
    client.post(PAGE, data={"app_name": "CLI", "_wpnonce": form_nonce(plain.text), "approve": "1"})
    [item] = app.users.list_application_passwords(1)
    assert (item["scope"], item["read_only"]) == (None, False)
