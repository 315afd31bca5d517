"""``POST /logout`` as JSON (what ``RestProxy.logout`` sends): the session's REST nonce in
``X-SVC-Nonce`` ends the session and clears the cookie; a missing or wrong nonce, or another
origin, is refused in the REST error shape and the session stays."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from svcrest import App
from svcrest.auth.passwords import ScryptParams
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
HOME = "http://127.0.0.1:8000"


def logged_in(client_for: ClientFor) -> tuple[App, SiteClient, str]:
    app = App(HOME)
    app.users.password_params = ScryptParams(n=16, r=1, p=1)
    app.users.create("ed", "ed-password", roles=("editor",))
    client = client_for(app)
    answer = client.post("/login", json={"log": "ed", "pwd": "ed-password"})
    assert answer.status_code == 200
    nonce = client.get("/auth/nonce").json()["nonce"]
    return app, client, nonce


def is_logged_in(client: SiteClient) -> bool:
    return "Logged in as" in client.get("/").text


def test_the_rest_nonce_ends_the_session(client_for: ClientFor) -> None:
    _, client, nonce = logged_in(client_for)
    answer = client.post("/logout", json={}, headers={"X-SVC-Nonce": nonce})
    assert (answer.status_code, answer.json()) == (200, {"logged_out": True})
    assert answer.headers["cache-control"] == "no-store"
    assert "svc_logged_in=;" in answer.headers["set-cookie"]
    assert not is_logged_in(client)


@pytest.mark.parametrize("nonce", [None, "", "0" * 32])
def test_a_missing_or_wrong_nonce_is_refused(client_for: ClientFor, nonce: str | None) -> None:
    _, client, _ = logged_in(client_for)
    headers = {} if nonce is None else {"X-SVC-Nonce": nonce}
    answer = client.post("/logout", json={}, headers=headers)
    assert answer.status_code == 403
    assert answer.json() == {
        "code": "rest_cookie_invalid_nonce",
        "message": "Cookie nonce is invalid",
        "data": {"status": 403},
    }
    assert "set-cookie" not in answer.headers
    assert is_logged_in(client)


def test_another_origin_is_refused(client_for: ClientFor) -> None:
    _, client, nonce = logged_in(client_for)
    answer = client.post(
        "/logout", json={}, headers={"X-SVC-Nonce": nonce, "Origin": "https://evil.example"}
    )
    assert (answer.status_code, answer.json()["code"]) == (403, "svc_logout_cross_origin")
    assert is_logged_in(client)


def test_without_a_session(client_for: ClientFor) -> None:
    client = client_for(App(HOME))
    answer = client.post("/logout", json={})
    assert (answer.status_code, answer.json()) == (200, {"logged_out": False})


def test_the_form_log_out_still_needs_its_log_out_nonce(client_for: ClientFor) -> None:
    _, client, nonce = logged_in(client_for)
    # The REST nonce is not the form's log-out nonce: the form keeps WordPress's rule.
    answer = client.post("/logout", data={"_wpnonce": nonce})
    assert answer.status_code == 403
    assert is_logged_in(client)
