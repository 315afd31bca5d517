"""PostgreSQL stopped and started again under a site: every REST request that needs it is
answered 503 ``svc_store_unavailable`` with ``Retry-After`` at once (never a 500 or a hang),
the session cache trusts nothing meanwhile, and the site recovers by itself.

A server of its own, so the stop does not disturb the other tests."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

import pytest

from svcrest import App
from tests.auth.test_auth_hosts import ME, cache_on, make_host
from tests.conftest import SiteClient
from tests.pg import PostgresServer
from tests.store.test_pg_deadlines import UNAVAILABLE, site


@pytest.fixture(scope="module")
def own_server() -> Iterator[PostgresServer]:
    try:
        server = PostgresServer()
    except Exception as exc:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL cannot start: {exc}")
        pytest.skip(f"PostgreSQL cannot start: {exc}")
    yield server
    server.stop()


def answered_within(client: SiteClient, method: str, path: str, seconds: float) -> int:
    started = time.monotonic()
    response = client.request(method, path)
    assert time.monotonic() - started < seconds
    if response.status_code == 503:
        assert response.headers["Retry-After"] == "1"
        assert response.json() == UNAVAILABLE
    return response.status_code


def test_a_stopped_database_is_503_and_the_site_recovers(
    own_server: PostgresServer, client_for: Callable[..., SiteClient]
) -> None:
    url = own_server.new_schema()
    app = site(url)
    host: App = make_host(url)
    host.users.create("alice", "alice-pw", roles=("editor",))
    user = host.users.get(1)
    assert user is not None
    cookie = host.auth.log_in(user, remember=False, ip="i", user_agent="u", secure=False).value
    cache_on(host, cookie)
    client, cookie_client = client_for(app), client_for(host)
    cookie_client.cookies.set("svc_logged_in", cookie, domain="site.test", path="/")
    try:
        assert client.post("/svc-json/t/v1/write").status_code == 200
        own_server.stop_server("fast")
        for _ in range(3):
            assert answered_within(client, "GET", "/svc-json/t/v1/read", 3) == 503
            assert answered_within(client, "POST", "/svc-json/t/v1/write", 3) == 503
            # The cache trusts nothing while its listener is down: the check needs the store.
            assert answered_within(cookie_client, "GET", ME, 3) == 503
        cache = host.auth.session_cache
        assert cache is not None and not cache.trusted
        own_server.start_server()
        deadline = time.monotonic() + 10
        while answered_within(client, "GET", "/svc-json/t/v1/read", 3) != 200:
            assert time.monotonic() < deadline, "the site did not recover"
            time.sleep(0.1)
        assert client.post("/svc-json/t/v1/write").status_code == 200
        while cookie_client.get(ME).status_code != 200:
            assert time.monotonic() < deadline, "the cookie checks did not recover"
            time.sleep(0.1)
        assert host.auth.validate_cookie(cookie) is not None
        cache_on(host, cookie)  # the listener is back: the cache serves again
        written = app.store.read_one("SELECT count(*) FROM t_items")[0]
        assert written == 2  # the writes answered 503 were not applied
    finally:
        app.store.close()
        host.store.close()
