"""Hostile ``Authorization: Basic`` and cookie nonces on both adapters (WordPress 5.6's
application passwords, ``rest_cookie_check_errors``). A Basic header that is not
``Basic <base64 of login:password>`` (bad base64, no colon, a tab, two credentials, bytes no
client sends, another scheme) leaves the request anonymous, as PHP reads no credentials from
it; any spelling of the scheme counts; credentials that decode but do not match (empty,
NUL, 90,000 characters) answer 401 ``incorrect_password``. A Basic request never reads a
nonce. With a login cookie, a nonce that is empty, padded, doubled, an array, or refused
in ``_wpnonce`` while the header holds a good one answers 403 ``rest_cookie_invalid_nonce``;
the last of repeated ``_wpnonce`` counts; a nonce in a JSON body is not read. (The ordinary
cases are in tests/auth/.)"""

from __future__ import annotations

import base64
from collections.abc import Callable

import pytest

from svcrest import App, Request, public
from svcrest.auth.passwords import ScryptParams
from tests.conftest import SiteClient, raw_request

ClientFor = Callable[..., SiteClient]
ME = "/svc-json/t/v1/me"
INCORRECT = {
    "code": "incorrect_password",
    "message": "The provided password is an invalid application password.",
    "data": {"status": 401},
}
INVALID_NONCE = {
    "code": "rest_cookie_invalid_nonce",
    "message": "Cookie nonce is invalid",
    "data": {"status": 403},
}


def make_app() -> tuple[App, str]:
    """The site and ``ed``'s application password."""
    app = App("http://127.0.0.1:8000")
    app.users.password_params = ScryptParams(n=16, r=1, p=1)
    user = app.users.create("ed", "pw", roles=("editor",))
    password, _ = app.users.create_application_password(user.id, "cli")

    def me(request: Request) -> dict[str, int]:
        return {"id": request.user.id}

    app.register_rest_route(
        "t/v1", "/me", {"methods": "GET, POST", "callback": me, "permission_callback": public}
    )
    return app, password


def _b64(text: str | bytes) -> str:
    return base64.b64encode(text.encode() if isinstance(text, str) else text).decode()


@pytest.mark.parametrize(
    ("header", "user_id"),
    [
        ("Basic {good}", 1),
        ("BASIC {good}", 1),
        ("bAsIc {good}", 1),
        ("Basic    {good}   ", 1),
        ("Basic {unpadded}", 1),
        ("Basic {spaced}", 1),  # blanks in an application password are ignored
        ("Basic", 0),
        ("Basic ", 0),
        ("Basic\t{good}", 0),
        ("Basic {good} {good}", 0),
        ("Basic !!!!", 0),
        ("Basic " + _b64("ed"), 0),  # no colon
        ("Basic " + _b64(b"\xff\xfe:\xff"), 0),  # not UTF-8
        ("Bearer {good}", 0),
        ("Digest username=ed", 0),
        ("{good}", 0),
    ],
    ids=[
        "exact",
        "upper-case",
        "mixed-case",
        "blanks",
        "unpadded",
        "password-with-blanks",
        "scheme-only",
        "scheme-and-blank",
        "tab",
        "two-credentials",
        "bad-base64",
        "no-colon",
        "not-utf-8",
        "bearer",
        "digest",
        "no-scheme",
    ],
)
def test_basic_header_forms(client_for: ClientFor, header: str, user_id: int) -> None:
    app, password = make_app()
    good = _b64(f"ed:{password}")
    spaced = _b64("ed:" + " ".join(password[n : n + 4] for n in range(0, 24, 4)))
    value = header.format(good=good, unpadded=good.rstrip("="), spaced=spaced)
    response = client_for(app).get(ME, headers={"Authorization": value})
    assert (response.status_code, response.json()) == (200, {"id": user_id})


@pytest.mark.parametrize(
    "credentials",
    [
        ":{password}",
        "ed:",
        "ed\x00:{password}",
        "ed:{password}\x00",
        "ed:{password}:",
        "ed:" + "x" * 90_000,
        "x" * 90_000 + ":{password}",
        "\u00e9d:{password}",
    ],
    ids=[
        "empty-login",
        "empty-password",
        "nul-in-login",
        "nul-after-password",
        "colon-after-password",
        "90000-password",
        "90000-login",
        "non-ascii-login",
    ],
)
def test_credentials_that_do_not_match_are_401(client_for: ClientFor, credentials: str) -> None:
    app, password = make_app()
    value = "Basic " + _b64(credentials.format(password=password))
    response = client_for(app).get(ME, headers={"Authorization": value})
    assert (response.status_code, response.json()) == (401, INCORRECT)


@pytest.mark.parametrize(
    "value",
    [b"Basic \xff\xfe", b"Basic \xc3\xa9\xc3\xa9", b"Basic \x00", b"\xffBasic x"],
    ids=["latin-1", "utf-8", "nul", "before-scheme"],
)
def test_basic_header_bytes_no_client_sends_are_anonymous(adapter: str, value: bytes) -> None:
    app, _ = make_app()
    status, _, body = raw_request(app, adapter, "GET", ME, [(b"authorization", value)])
    assert (status, body) == (200, b'{"id":0}')


@pytest.mark.parametrize(
    ("query", "headers"),
    [("?_wpnonce=forged", {}), ("", {"X-SVC-Nonce": "forged"}), ("?_wpnonce=", {})],
    ids=["parameter", "header", "empty-parameter"],
)
def test_a_basic_request_never_reads_a_nonce(
    client_for: ClientFor, query: str, headers: dict[str, str]
) -> None:
    app, password = make_app()
    value = "Basic " + _b64(f"ed:{password}")
    response = client_for(app).get(ME + query, headers={"Authorization": value, **headers})
    assert (response.status_code, response.json()) == (200, {"id": 1})


# -- cookie + nonce ----------------------------------------------------------------------------


def _logged_in(client_for: ClientFor) -> tuple[SiteClient, str]:
    app, _ = make_app()
    client = client_for(app)
    assert client.post("/login", data={"log": "ed", "pwd": "pw"}).status_code == 303
    return client, client.get("/auth/nonce").json()["nonce"]


@pytest.mark.parametrize(
    ("query", "headers"),
    [
        ("", {"X-SVC-Nonce": ""}),
        ("?_wpnonce=", {}),
        ("?_wpnonce=", {"X-SVC-Nonce": "{nonce}"}),  # the parameter wins, even empty
        ("?_wpnonce=%00", {}),
        ("?_wpnonce[]={nonce}", {}),
        ("?_wpnonce[a]={nonce}", {}),
        ("?_wpnonce={nonce}%00", {}),
        ("?_wpnonce=%20{nonce}", {}),
        ("", {"X-SVC-Nonce": "{nonce}, {nonce}"}),
        ("?_wpnonce={nonce}&_wpnonce=forged", {}),  # the last plain key (PHP)
    ],
    ids=[
        "empty-header",
        "empty-parameter",
        "empty-parameter-good-header",
        "nul",
        "list",
        "map",
        "nul-after",
        "blank-before",
        "doubled-header",
        "good-then-forged",
    ],
)
def test_a_malformed_nonce_is_403(
    client_for: ClientFor, query: str, headers: dict[str, str]
) -> None:
    client, nonce = _logged_in(client_for)
    sent = {name: value.format(nonce=nonce) for name, value in headers.items()}
    response = client.get(ME + query.format(nonce=nonce), headers=sent)
    assert (response.status_code, response.json()) == (403, INVALID_NONCE)
    assert "x-svc-nonce" not in response.headers


def test_the_last_of_repeated_nonce_parameters_counts(client_for: ClientFor) -> None:
    client, nonce = _logged_in(client_for)
    response = client.get(f"{ME}?_wpnonce=forged&_wpnonce={nonce}")
    assert (response.status_code, response.json()) == (200, {"id": 1})


def test_a_nonce_in_a_json_body_is_not_read(client_for: ClientFor) -> None:
    client, nonce = _logged_in(client_for)
    response = client.post(ME, json={"_wpnonce": nonce})
    assert (response.status_code, response.json()) == (200, {"id": 0})
    assert "x-svc-nonce" not in response.headers


@pytest.mark.parametrize(
    ("query", "form", "status"),
    [("forged", "{nonce}", 200), ("{nonce}", "forged", 403), ("{nonce}", "", 403)],
    ids=["good-form", "forged-form", "empty-form"],
)
def test_a_form_bodys_nonce_wins_over_the_query_strings(
    client_for: ClientFor, query: str, form: str, status: int
) -> None:
    """WordPress reads ``$_REQUEST``, the query string's fields merged under the POST body's."""
    client, nonce = _logged_in(client_for)
    response = client.post(
        f"{ME}?_wpnonce={query.format(nonce=nonce)}", data={"_wpnonce": form.format(nonce=nonce)}
    )
    assert response.status_code == status
    assert response.json() == ({"id": 1} if status == 200 else INVALID_NONCE)
