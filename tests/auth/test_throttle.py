"""Login throttling (DESIGN §10): per login and per address, in the store, /login and Basic."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from svcrest import App, Request, public
from svcrest.auth.passwords import ScryptParams
from svcrest.auth.throttle import MAX_FAILURES, WINDOW, LoginThrottle
from svcrest.store.locations import open_store
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
FAST = ScryptParams(n=16, r=1, p=1)
HOME = "http://127.0.0.1:8000"
ME = "/svc-json/demo/v1/me"
NOW = 1_700_000_000.0
THROTTLED = {
    "code": "svc_too_many_login_attempts",
    "message": "Too many failed login attempts. Try again later.",
    "data": {"status": 429},
}


class Site:
    def __init__(self, store: str | None) -> None:
        self.now = [NOW]
        self.app = App(HOME, clock=lambda: self.now[0], secret_key="test-secret", store=store)
        self.app.users.password_params = FAST
        self.alice = self.app.users.create("alice", "alice-pw", roles=("editor",))
        self.bob = self.app.users.create("bob", "bob-pw")

        def me(request: Request) -> dict[str, Any]:
            return {"id": request.user.id}

        self.app.register_rest_route(
            "demo/v1", "/me", {"permission_callback": public, "methods": "GET", "callback": me}
        )


@pytest.fixture
def site(store_location: str | None) -> Iterator[Site]:
    made = Site(store_location)
    yield made
    made.app.store.close()


def basic(login: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode()}


def test_the_throttle_counts_per_login_and_per_address(site: Site) -> None:
    throttle = site.app.throttle
    for _ in range(MAX_FAILURES - 1):
        throttle.record_failure("alice", "10.0.0.1")
    assert throttle.retry_after("alice", "10.0.0.2") is None
    site.now[0] += 10
    throttle.record_failure("ALICE", "10.0.0.1")
    assert throttle.retry_after("alice", "10.0.0.9") == WINDOW - 10
    assert throttle.retry_after("bob", "10.0.0.1") == WINDOW - 10
    assert throttle.retry_after("bob", "10.0.0.2") is None
    site.now[0] += WINDOW - 10 - 1
    assert throttle.retry_after("alice", "") == 1
    site.now[0] += 1  # the first nine left the window: one failure is left
    assert throttle.retry_after("alice", "10.0.0.1") is None


def test_the_form_login_answers_429_after_ten_failures(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    for _ in range(MAX_FAILURES):
        response = client.post("/login", data={"log": "alice", "pwd": "wrong"})
        assert response.status_code == 403
    response = client.post("/login", data={"log": "alice", "pwd": "alice-pw"})
    assert response.status_code == 429
    assert response.headers["retry-after"] == str(WINDOW)
    assert "Too many failed login attempts. Try again later." in response.text
    assert "svc_logged_in" not in client.cookies
    json = client.post("/login", json={"log": "alice", "pwd": "alice-pw"})
    assert (json.status_code, json.json(), json.headers["retry-after"]) == (
        429,
        THROTTLED,
        str(WINDOW),
    )
    site.now[0] += WINDOW
    response = client.post("/login", data={"log": "alice", "pwd": "alice-pw"})
    assert response.status_code == 303


def test_basic_auth_is_throttled_too(site: Site, client_for: ClientFor) -> None:
    password, _ = site.app.users.create_application_password(site.alice.id, "phpunit")
    client = client_for(site.app)
    for _ in range(MAX_FAILURES):
        assert client.get(ME, headers=basic("alice", "wrong")).status_code == 401
    response = client.get(ME, headers=basic("alice", password))
    assert (response.status_code, response.json()) == (429, THROTTLED)
    assert response.headers["retry-after"] == str(WINDOW)
    site.now[0] += 60
    response = client.post("/login", data={"log": "alice", "pwd": "alice-pw"})
    assert (response.status_code, response.headers["retry-after"]) == (429, str(WINDOW - 60))
    site.now[0] += WINDOW - 60
    assert client.get(ME, headers=basic("alice", password)).json() == {"id": site.alice.id}


def test_hosts_share_the_counts(engine: str, tmp_path: Any, request: pytest.FixtureRequest) -> None:
    if engine == "sqlite":
        location = str(tmp_path / "site.db")
    else:
        location = request.getfixturevalue("postgres").new_schema()
    first, second = open_store(location), open_store(location)
    try:
        one, two = LoginThrottle(first, lambda: NOW), LoginThrottle(second, lambda: NOW)
        for _ in range(MAX_FAILURES):
            one.record_failure("carol", "")
        assert two.retry_after("carol", "") == WINDOW
        assert two.retry_after("dave", "") is None
    finally:
        first.close()
        second.close()
