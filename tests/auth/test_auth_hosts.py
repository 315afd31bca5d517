"""One site across hosts: two Apps sharing one store act as one site (DESIGN §6).

Each App here is a host: its own store object (its own connections or pool), its own auth
service, over one database (a SQLite file, or a PostgreSQL schema). Nothing a host remembers
may outlive a logout, a password change, a role change or a deleted user on the other: on
PostgreSQL the second host has cached the session (``svcrest.auth.session_cache``) before the
first one revokes it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx
import pytest

from svcrest import App, Request, public
from svcrest.auth.passwords import ScryptParams
from tests.conftest import SiteClient
from tests.pg import PostgresServer

FAST = ScryptParams(n=16, r=1, p=1)
HOME = "http://site.test"
ME = "/svc-json/hosts/v1/me"
ClientFor = Callable[..., SiteClient]


def make_host(store: str, **options: Any) -> App:
    app = App(HOME, store=store, **options)
    app.users.password_params = FAST

    def me(request: Request) -> dict[str, Any]:
        return {"id": request.user.id}

    app.register_rest_route(
        "hosts/v1", "/me", {"permission_callback": public, "methods": "GET, POST", "callback": me}
    )
    return app


@pytest.fixture
def shared(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A database two hosts open: a SQLite file, or a fresh PostgreSQL schema."""
    if engine == "sqlite":
        return str(tmp_path / "site.db")
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.new_schema()


@pytest.fixture
def hosts(shared: str) -> Iterator[tuple[App, App]]:
    first, second = make_host(shared), make_host(shared)
    first.users.create("alice", "alice-pw", roles=("editor",))
    yield first, second
    first.store.close()
    second.store.close()


def log_in(client: SiteClient, password: str = "alice-pw") -> str:
    """Log alice in through ``client``; her cookie value."""
    response = client.post("/login", data={"log": "alice", "pwd": password})
    assert response.status_code == 303
    return str(client.cookies["svc_logged_in"])


def nonce_of(client: SiteClient) -> str:
    response = client.get("/auth/nonce")
    assert response.status_code == 200
    return str(response.json()["nonce"])


def on_other_host(client_for: ClientFor, app: App, cookie: str) -> SiteClient:
    other = client_for(app)
    other.cookies.set("svc_logged_in", cookie, domain="site.test", path="/")
    return other


def behind_svcrest(app: App, sql: str) -> None:
    """Change the database without telling any host (no notification)."""
    with app.store.transaction() as conn:
        conn.execute(sql)


def cache_on(app: App, cookie: str) -> None:
    """On PostgreSQL: check ``cookie`` on ``app`` until a check is answered from its cache
    (a change made behind svcrest's back does not show). On SQLite: there is no cache."""
    cache = app.auth.session_cache
    if app.store.dialect == "sqlite":
        assert cache is None
        return
    assert cache is not None
    deadline = time.monotonic() + 5
    while True:
        assert time.monotonic() < deadline, "the cache never answered"
        cache.clear()
        while not cache.trusted:  # the first check starts the heartbeats
            assert app.auth.validate_cookie(cookie) is not None
            time.sleep(0.002)
        assert app.auth.validate_cookie(cookie) is not None  # cached, unless the lease ran out
        behind_svcrest(app, "UPDATE users SET display_name = 'changed' WHERE id = 1")
        found = app.auth.validate_cookie(cookie)
        behind_svcrest(app, "UPDATE users SET display_name = 'alice' WHERE id = 1")
        assert found is not None
        if found[0].display_name == "alice":
            return


def test_hosts_share_the_secret_and_a_login(hosts: tuple[App, App], client_for: ClientFor) -> None:
    first, second = hosts
    assert first.secret_key == second.secret_key
    assert len(first.secret_key) == 64
    a = client_for(first)
    cookie = log_in(a)
    nonce = nonce_of(a)
    b = on_other_host(client_for, second, cookie)
    response = b.post(ME, headers={"X-SVC-Nonce": nonce})
    assert (response.status_code, response.json()) == (200, {"id": 1})
    assert second.auth.verify_nonce(nonce, "svc_rest", 1, unquote(cookie).split("|")[2]) == 1


@pytest.mark.parametrize("revocation", ["logout", "password", "delete"])
def test_a_revocation_on_one_host_applies_on_the_other_at_once(
    hosts: tuple[App, App], client_for: ClientFor, revocation: str
) -> None:
    first, second = hosts
    a = client_for(first)
    cookie = log_in(a)
    nonce = nonce_of(a)
    b = on_other_host(client_for, second, cookie)
    for _ in range(3):
        assert b.get(ME, headers={"X-SVC-Nonce": nonce}).json() == {"id": 1}
    cache_on(second, cookie)
    if revocation == "logout":
        logout_nonce = first.auth.create_nonce("log-out", 1, unquote(cookie).split("|")[2])
        assert a.post("/logout", data={"_wpnonce": logout_nonce}).status_code == 303
    elif revocation == "password":
        first.users.set_password(1, "new-pw")
    else:
        assert first.users.delete(1) is True
        assert second.users.get(1) is None
    assert second.auth.validate_cookie(cookie) is None
    response = b.get(ME, headers={"X-SVC-Nonce": nonce})
    assert (response.status_code, response.json()["code"]) == (403, "rest_cookie_invalid_nonce")
    assert b.get(ME).json() == {"id": 0}


def test_a_role_change_on_one_host_applies_on_the_other_at_once(
    hosts: tuple[App, App], client_for: ClientFor
) -> None:
    first, second = hosts
    cookie = log_in(client_for(first))
    cache_on(second, cookie)
    assert first.users.set_roles(1, ["subscriber"]).roles == ("subscriber",)
    found = second.auth.validate_cookie(cookie)
    assert found is not None
    assert (found[0].roles, found[0].can("edit_notes")) == (("subscriber",), False)
    cache_on(second, cookie)
    assert first.users.set_roles(1, "administrator").roles == ("administrator",)
    found = second.auth.validate_cookie(cookie)
    assert found is not None
    assert found[0].roles == ("administrator",)


def test_every_session_ended_on_one_host_is_refused_on_the_other(
    hosts: tuple[App, App], client_for: ClientFor
) -> None:
    first, second = hosts
    cookies = [log_in(client_for(first)) for _ in range(2)]
    for cookie in cookies:
        assert second.auth.validate_cookie(cookie) is not None
    cache_on(second, cookies[1])
    first.auth.sessions.destroy_all(1)
    assert [second.auth.validate_cookie(cookie) for cookie in cookies] == [None, None]


def test_secret_key_fallbacks_verify_old_cookies_and_nonces(shared: str) -> None:
    old = make_host(shared, secret_key="old-secret")
    old.users.create("alice", "alice-pw")
    user = old.users.get(1)
    assert user is not None
    issued = old.auth.log_in(user, remember=False, ip="ip", user_agent="ua", secure=False)
    old_nonce = old.auth.create_nonce("svc_rest", 1, issued.token)
    rotated = make_host(shared, secret_key="new-secret", secret_key_fallbacks=["old-secret"])
    assert rotated.auth.validate_cookie(issued.value) == (user, issued.token)
    assert rotated.auth.verify_nonce(old_nonce, "svc_rest", 1, issued.token) == 1
    new_nonce = rotated.auth.create_nonce("svc_rest", 1, issued.token)
    assert new_nonce != old_nonce
    assert old.auth.verify_nonce(new_nonce, "svc_rest", 1, issued.token) is False
    new_cookie = rotated.auth.log_in(user, remember=False, ip="ip", user_agent="ua", secure=False)
    assert old.auth.validate_cookie(new_cookie.value) is None
    dropped = make_host(shared, secret_key="new-secret")
    assert dropped.auth.validate_cookie(issued.value) is None
    assert dropped.auth.verify_nonce(old_nonce, "svc_rest", 1, issued.token) is False
    assert dropped.auth.validate_cookie(new_cookie.value) == (user, new_cookie.token)
    for app in (old, rotated, dropped):
        app.store.close()


def test_bad_secret_key_fallbacks_are_refused() -> None:
    with pytest.raises(ValueError, match="secret_key_fallbacks must be non-empty"):
        App(HOME, secret_key_fallbacks=[""])


@pytest.mark.parametrize(
    ("client_ip", "secure"), [("10.0.0.5", True), ("192.0.2.9", False)], ids=["trusted", "other"]
)
def test_https_forwarded_by_a_trusted_proxy(client_ip: str, secure: bool) -> None:
    """What ``svcrest serve --proxy-headers --forwarded-allow-ips 10.0.0.5`` runs: uvicorn's
    proxy-headers middleware in front of the App."""
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    app = make_host(":memory:")
    app.users.create("alice", "alice-pw")
    # uvicorn types its scopes more narrowly than httpx's transport: Any bridges the two.
    asgi_app: Any = app
    proxied: Any = ProxyHeadersMiddleware(asgi_app, trusted_hosts="10.0.0.5")

    async def send() -> tuple[httpx.Response, httpx.Response]:
        transport = httpx.ASGITransport(app=proxied, client=(client_ip, 4000))
        headers = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.1"}
        async with httpx.AsyncClient(transport=transport, base_url=HOME) as client:
            login = await client.post(
                "/login", data={"log": "alice", "pwd": "alice-pw"}, headers=headers
            )
            index = await client.get("/svc-json/", headers=headers)
        return login, index

    login, index = asyncio.run(send())
    scheme = "https" if secure else "http"
    assert login.headers["set-cookie"].endswith("; Secure") is secure
    assert index.headers["link"] == f'<{scheme}://site.test/svc-json/>; rel="https://api.w.org/"'
    assert app.get_rest_url() == "http://site.test/svc-json/"  # outside a request
    app.store.close()
