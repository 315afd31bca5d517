"""Application passwords and Basic authentication (DESIGN §10; WordPress 5.6 semantics).

Ports the application password cases of WordPress's ``tests/phpunit/tests/auth.php``; on both
adapters and both store engines.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import svcrest.auth.users as users_module
from svcrest import App, Request, public
from svcrest.auth.app_passwords import (
    basic_credentials,
    is_loopback_address,
    is_loopback_host,
)
from svcrest.auth.passwords import ScryptParams, hash_application_password, verify_password
from svcrest.auth.users import UnknownUserError
from tests.auth.peers import PeerClient
from tests.conftest import SiteClient
from tests.pg import PostgresServer

ClientFor = Callable[..., SiteClient]
FAST = ScryptParams(n=16, r=1, p=1)
HOME = "http://127.0.0.1:8000"
ME = "/svc-json/demo/v1/me"
WRITE = "/svc-json/demo/v1/write"
NOW = 1_700_000_000.0
INCORRECT = {
    "code": "incorrect_password",
    "message": "The provided password is an invalid application password.",
    "data": {"status": 401},
}
DISABLED = {
    "code": "application_passwords_disabled",
    "message": "Application passwords are not available.",
    "data": {"status": 401},
}


class Site:
    """An App (one host) with alice (editor) and bob (subscriber), a whoami and a write route."""

    def __init__(self, store: str | None, home: str = HOME, create: bool = True) -> None:
        self.now = [NOW]
        self.app = App(home, clock=lambda: self.now[0], secret_key="test-secret", store=store)
        self.app.users.password_params = FAST
        if create:
            self.alice = self.app.users.create("alice", "alice-pw", roles=("editor",))
            self.bob = self.app.users.create("bob", "bob-pw")
        self.app.register_rest_route(
            "demo/v1",
            "/me",
            {"permission_callback": public, "methods": "GET, POST", "callback": self.me},
        )
        self.app.register_rest_route(
            "demo/v1",
            "/write",
            {
                "methods": "POST",
                "callback": lambda r: {"written": r.user.id},
                "permission_callback": lambda r: r.user.can("edit_notes"),
            },
        )

    @staticmethod
    def me(request: Request) -> dict[str, Any]:
        return {"id": request.user.id, "login": request.user.login}


def basic(login: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{login}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


@pytest.fixture
def site(store_location: str | None) -> Iterator[Site]:
    made = Site(store_location)
    yield made
    made.app.store.close()


# -- the store API --------------------------------------------------------------------------


def test_create_returns_the_password_once_and_stores_only_its_hash(site: Site) -> None:
    password, item = site.app.users.create_application_password(site.alice.id, " phpunit ")
    assert re.fullmatch(r"[A-Za-z0-9]{24}", password)
    assert set(item) == {"uuid", "name", "created", "last_used", "last_ip", "scope", "read_only"}
    assert (item["scope"], item["read_only"]) == (None, False)
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", item["uuid"]
    )
    assert (item["name"], item["created"], item["last_used"], item["last_ip"]) == (
        "phpunit",
        int(NOW),
        None,
        None,
    )
    assert site.app.users.list_application_passwords(site.alice.id) == [item]
    assert site.app.users.get_application_password(site.alice.id, item["uuid"]) == item
    with site.app.store.read() as conn:
        rows = conn.execute("SELECT password_hash FROM application_passwords").fetchall()
    assert [row[0] for row in rows] == [hash_application_password(password)]
    assert password not in str(rows)


def test_passwords_differ_and_lists_are_per_user(site: Site) -> None:
    users = site.app.users
    first, a1 = users.create_application_password(site.alice.id, "one")
    site.now[0] += 1
    second, a2 = users.create_application_password(site.alice.id, "two")
    _, b1 = users.create_application_password(site.bob.id, "bob's")
    assert first != second
    assert users.list_application_passwords(site.alice.id) == [a1, a2]
    assert users.list_application_passwords(site.bob.id) == [b1]
    assert users.get_application_password(site.bob.id, a1["uuid"]) is None
    assert users.delete_application_password(site.bob.id, a1["uuid"]) is False
    assert users.delete_application_password(site.alice.id, a1["uuid"]) is True
    assert users.delete_application_password(site.alice.id, a1["uuid"]) is False
    assert users.list_application_passwords(site.alice.id) == [a2]
    users.create_application_password(site.alice.id, "three")
    assert users.delete_all_application_passwords(site.alice.id) == 2
    assert users.delete_all_application_passwords(site.alice.id) == 0
    assert users.list_application_passwords(site.alice.id) == []
    assert users.list_application_passwords(site.bob.id) == [b1]


@pytest.mark.parametrize("name", ["", "   ", 7, "a\u200bb", "x" * 201])
def test_create_refuses_a_bad_name(site: Site, name: Any) -> None:
    with pytest.raises(ValueError):
        site.app.users.create_application_password(site.alice.id, name)
    assert site.app.users.list_application_passwords(site.alice.id) == []


@pytest.mark.parametrize("user_id", [0, 99, -1, True])
def test_create_refuses_an_unknown_user(site: Site, user_id: Any) -> None:
    with pytest.raises(UnknownUserError):
        site.app.users.create_application_password(user_id, "name")


def test_deleting_a_user_deletes_their_application_passwords(site: Site) -> None:
    password, _ = site.app.users.create_application_password(site.bob.id, "app")
    assert site.app.users.delete(site.bob.id) is True
    with site.app.store.read() as conn:
        assert conn.execute("SELECT COUNT(*) FROM application_passwords").fetchone()[0] == 0
    assert site.app.users.authenticate_application_password("bob", password) is None


def test_authenticate_by_login_case_insensitively_and_chunked(site: Site) -> None:
    users = site.app.users
    password, _ = users.create_application_password(site.alice.id, "phpunit")
    chunked = " ".join(password[i : i + 4] for i in range(0, 24, 4))
    assert users.authenticate_application_password("alice", password) == site.alice
    assert users.authenticate_application_password("ALICE", chunked) == site.alice
    assert users.authenticate_application_password("bob", password) is None
    assert users.authenticate_application_password("alice", "alice-pw") is None
    assert users.authenticate_application_password("nobody", password) is None
    assert users.authenticate_application_password("alice", password.lower()) is None


def test_an_unknown_login_costs_the_same_hash_work(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    password, _ = site.app.users.create_application_password(site.alice.id, "phpunit")
    calls: list[str] = []

    def counting(value: str) -> str:
        calls.append("hash")
        return hash_application_password(value)

    monkeypatch.setattr(users_module, "hash_application_password", counting)
    scrypt_calls: list[str] = []
    real_verify = verify_password

    def counting_verify(value: str, encoded: str) -> bool:
        scrypt_calls.append("verify")
        return real_verify(value, encoded)

    monkeypatch.setattr(users_module, "verify_password", counting_verify)
    counts = []
    for login, secret in [
        ("alice", password),
        ("alice", "wrong"),
        ("nobody", password),
        ("nobody", "wrong"),
        ("", ""),
    ]:
        calls.clear()
        site.app.users.authenticate_application_password(login, secret)
        counts.append((len(calls), len(scrypt_calls)))
    assert counts == [(1, 0)] * 5


def test_last_used_is_recorded_at_most_once_a_minute_per_address(site: Site) -> None:
    users = site.app.users
    password, item = users.create_application_password(site.alice.id, "phpunit")

    def used() -> tuple[Any, Any]:
        found = users.get_application_password(site.alice.id, item["uuid"])
        assert found is not None
        return found["last_used"], found["last_ip"]

    users.authenticate_application_password("alice", password, "10.0.0.1")
    assert used() == (int(NOW), "10.0.0.1")
    site.now[0] += 59
    users.authenticate_application_password("alice", password, "10.0.0.1")
    assert used() == (int(NOW), "10.0.0.1")
    users.authenticate_application_password("alice", password, "10.0.0.2")
    assert used() == (int(NOW) + 59, "10.0.0.2")
    site.now[0] += 60
    users.authenticate_application_password("alice", password, "10.0.0.2")
    assert used() == (int(NOW) + 119, "10.0.0.2")
    users.authenticate_application_password("alice", "wrong", "10.0.0.3")
    assert used() == (int(NOW) + 119, "10.0.0.2")


# -- helpers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("", None),
        ("Bearer abc", None),
        ("Basic !!!", None),
        ("Basic " + base64.b64encode(b"alice").decode(), None),
        ("Basic " + base64.b64encode(b"alice:").decode(), ("alice", "")),
        ("basic " + base64.b64encode(b"al:ice:pw d").decode(), ("al", "ice:pw d")),
        ("Basic " + base64.b64encode(b"\xff:x").decode(), None),
    ],
)
def test_basic_credentials(header: str | None, expected: tuple[str, str] | None) -> None:
    assert basic_credentials(header) == expected


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1", True),
        ("127.0.0.1:8000", True),
        ("127.9.9.9", True),
        ("localhost", True),
        ("LOCALHOST:80", True),
        ("app.localhost", True),
        ("[::1]:8000", True),
        ("[::1]", True),
        ("::1", True),
        ("site.test", False),
        ("10.0.0.1:8000", False),
        ("localhost.example.com", False),
        ("", False),
    ],
)
def test_is_loopback_host(host: str, expected: bool) -> None:
    assert is_loopback_host(host) is expected


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("127.0.0.1", True),
        ("127.3.2.1", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        (" 127.0.0.1 ", True),
        ("192.168.1.50", False),
        ("::ffff:192.168.1.50", False),
        ("10.0.0.1", False),
        ("localhost", False),
        ("", False),
    ],
)
def test_is_loopback_address(address: str, expected: bool) -> None:
    assert is_loopback_address(address) is expected


# -- over HTTP ------------------------------------------------------------------------------


def test_basic_auth_is_the_user_without_a_nonce(site: Site, client_for: ClientFor) -> None:
    password, item = site.app.users.create_application_password(site.alice.id, "phpunit")
    client = client_for(site.app)
    response = client.get(ME, headers=basic("alice", password))
    assert response.status_code == 200
    assert response.json() == {"id": site.alice.id, "login": "alice"}
    assert "x-svc-nonce" not in response.headers
    response = client.post(WRITE, headers=basic("alice", password))
    assert (response.status_code, response.json()) == (200, {"written": site.alice.id})
    chunked = " ".join(password[i : i + 4] for i in range(0, 24, 4))
    assert client.get(ME, headers=basic("Alice", chunked)).json()["id"] == site.alice.id
    found = site.app.users.get_application_password(site.alice.id, item["uuid"])
    assert found is not None and found["last_used"] == int(NOW)


def test_the_account_password_is_not_an_application_password(
    site: Site, client_for: ClientFor
) -> None:
    site.app.users.create_application_password(site.alice.id, "phpunit")
    response = client_for(site.app).get(ME, headers=basic("alice", "alice-pw"))
    assert (response.status_code, response.json()) == (401, INCORRECT)


@pytest.mark.parametrize("login", ["alice", "nobody", ""])
def test_wrong_credentials_answer_401_whether_or_not_the_login_exists(
    site: Site, client_for: ClientFor, login: str
) -> None:
    password, _ = site.app.users.create_application_password(site.bob.id, "bob's")
    client = client_for(site.app)
    for secret in ("wrong", password, ""):
        response = client.get(ME, headers=basic(login, secret))
        assert (response.status_code, response.json()) == (401, INCORRECT)
        response = client.post(WRITE, headers=basic(login, secret))
        assert (response.status_code, response.json()) == (401, INCORRECT)


@pytest.mark.parametrize(
    "header", ["Bearer token", "Basic ???", "Basic " + base64.b64encode(b"alice").decode()]
)
def test_other_authorization_headers_leave_the_request_anonymous(
    site: Site, client_for: ClientFor, header: str
) -> None:
    response = client_for(site.app).get(ME, headers={"Authorization": header})
    assert (response.status_code, response.json()) == (200, {"id": 0, "login": ""})


def test_plain_http_to_another_host_disables_application_passwords(
    store_location: str | None, client_for: ClientFor
) -> None:
    made = Site(store_location, home="http://site.test")
    password, _ = made.app.users.create_application_password(made.alice.id, "phpunit")
    client = client_for(made.app)
    for secret in (password, "wrong"):
        response = client.get(ME, headers=basic("alice", secret))
        assert (response.status_code, response.json()) == (401, DISABLED)
    secure = client_for(made.app, base_url="https://site.test")
    response = secure.get(ME, headers=basic("alice", password))
    assert (response.status_code, response.json()) == (200, {"id": made.alice.id, "login": "alice"})
    response = secure.get(ME, headers=basic("alice", "wrong"))
    assert (response.status_code, response.json()) == (401, INCORRECT)
    loopback = client_for(made.app, base_url="http://localhost:8000")
    response = loopback.get(ME, headers=basic("alice", password))
    assert (response.status_code, response.json()["id"]) == (200, made.alice.id)
    made.app.store.close()


def test_a_cookie_user_is_kept_over_basic_credentials(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    assert client.post("/login", data={"log": "bob", "pwd": "bob-pw"}).status_code == 303
    nonce = client.get("/auth/nonce").json()["nonce"]
    password, _ = site.app.users.create_application_password(site.alice.id, "phpunit")
    headers = {**basic("alice", password), "X-SVC-Nonce": nonce}
    response = client.get(ME, headers=headers)
    assert (response.status_code, response.json()) == (200, {"id": site.bob.id, "login": "bob"})


def test_a_cookie_without_nonce_still_is_anonymous(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    assert client.post("/login", data={"log": "alice", "pwd": "alice-pw"}).status_code == 303
    response = client.post(WRITE)
    assert response.status_code == 401
    assert response.json()["code"] == "rest_forbidden"


def test_basic_auth_is_ignored_outside_the_rest_api(site: Site, client_for: ClientFor) -> None:
    password, _ = site.app.users.create_application_password(site.alice.id, "phpunit")
    client = client_for(site.app)
    anonymous = client.get("/auth/nonce")
    response = client.get("/auth/nonce", headers=basic("alice", password))
    assert (response.status_code, response.json()) == (200, anonymous.json())
    assert "set-cookie" not in response.headers


# -- across hosts ---------------------------------------------------------------------------


@pytest.fixture
def shared(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if engine == "sqlite":
        return str(tmp_path / "site.db")
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.new_schema()


def test_a_revocation_is_seen_by_every_host_at_once(shared: str, client_for: ClientFor) -> None:
    first = Site(shared)
    second = Site(shared, create=False)
    password, item = first.app.users.create_application_password(first.alice.id, "phpunit")
    other = client_for(second.app)
    assert other.get(ME, headers=basic("alice", password)).json()["id"] == first.alice.id
    assert first.app.users.delete_application_password(first.alice.id, item["uuid"]) is True
    response = other.get(ME, headers=basic("alice", password))
    assert (response.status_code, response.json()) == (401, INCORRECT)
    first.app.store.close()
    second.app.store.close()


def test_httpx_basic_auth_works(site: Site, client_for: ClientFor) -> None:
    password, _ = site.app.users.create_application_password(site.alice.id, "phpunit")
    header = httpx.BasicAuth("alice", password)._auth_header
    response = client_for(site.app).get(ME, headers={"Authorization": header})
    assert response.json()["id"] == site.alice.id


# -- where application passwords work: the peer and the home decide, never Host alone ---------

LAN_HOME = "http://192.168.1.10:8000"
LAN_PEER = "192.168.1.50"


@pytest.fixture
def lan_site(store_location: str | None) -> Iterator[Site]:
    """A site served over plain http on a LAN address."""
    made = Site(store_location, home=LAN_HOME)
    yield made
    made.app.store.close()


@pytest.mark.parametrize(
    "base_url",
    ["http://localhost:8000", "http://evil.localhost", "http://127.0.0.1:8000", "http://[::1]"],
)
def test_a_loopback_host_from_another_machine_is_refused(
    lan_site: Site, adapter: str, base_url: str
) -> None:
    password, _ = lan_site.app.users.create_application_password(lan_site.alice.id, "phpunit")
    client = PeerClient(lan_site.app, adapter, LAN_PEER, base_url=base_url)
    try:
        for secret in (password, "wrong"):
            response = client.get(ME, headers=basic("alice", secret))
            assert (response.status_code, response.json()) == (401, DISABLED)
        response = client.get(ME, headers={**basic("alice", password), "Host": "localhost"})
        assert (response.status_code, response.json()) == (401, DISABLED)
    finally:
        client.close()
    assert lan_site.app.users.list_application_passwords(lan_site.alice.id)[0]["last_used"] is None


@pytest.mark.parametrize(
    ("peer", "base_url"),
    [
        ("127.0.0.1", "http://localhost:8000"),
        ("127.0.0.1", "http://evil.localhost"),
        ("::1", "http://[::1]:8000"),
        ("::ffff:127.0.0.1", "http://127.0.0.1:8000"),
    ],
)
def test_a_loopback_peer_to_a_loopback_host_is_accepted(
    lan_site: Site, adapter: str, peer: str, base_url: str
) -> None:
    password, _ = lan_site.app.users.create_application_password(lan_site.alice.id, "phpunit")
    client = PeerClient(lan_site.app, adapter, peer, base_url=base_url)
    try:
        response = client.get(ME, headers=basic("alice", password))
        assert (response.status_code, response.json()) == (
            200,
            {"id": lan_site.alice.id, "login": "alice"},
        )
        response = client.get(ME, headers=basic("alice", "wrong"))
        assert (response.status_code, response.json()) == (401, INCORRECT)
    finally:
        client.close()


def test_a_loopback_peer_naming_another_host_is_refused(lan_site: Site, adapter: str) -> None:
    """A proxy on this machine relaying outside traffic connects from the loopback."""
    password, _ = lan_site.app.users.create_application_password(lan_site.alice.id, "phpunit")
    client = PeerClient(lan_site.app, adapter, "127.0.0.1", base_url=LAN_HOME)
    try:
        response = client.get(ME, headers=basic("alice", password))
        assert (response.status_code, response.json()) == (401, DISABLED)
    finally:
        client.close()


def test_an_https_home_accepts_them_from_any_peer(store_location: str | None, adapter: str) -> None:
    """TLS ends at a proxy whose forwarded headers the server does not trust."""
    made = Site(store_location, home="https://site.test")
    password, _ = made.app.users.create_application_password(made.alice.id, "phpunit")
    client = PeerClient(made.app, adapter, LAN_PEER, base_url="http://site.test")
    try:
        response = client.get(ME, headers=basic("alice", password))
        assert (response.status_code, response.json()) == (
            200,
            {"id": made.alice.id, "login": "alice"},
        )
        response = client.get(ME, headers=basic("alice", "wrong"))
        assert (response.status_code, response.json()) == (401, INCORRECT)
    finally:
        client.close()
        made.app.store.close()


def test_an_https_request_accepts_them_from_any_peer(lan_site: Site, adapter: str) -> None:
    password, _ = lan_site.app.users.create_application_password(lan_site.alice.id, "phpunit")
    client = PeerClient(lan_site.app, adapter, LAN_PEER, base_url="https://192.168.1.10:8000")
    try:
        response = client.get(ME, headers=basic("alice", password))
        assert (response.status_code, response.json()["id"]) == (200, lan_site.alice.id)
    finally:
        client.close()
