"""PostgreSQL stopped and started again under a site: every REST request that needs it is
answered 503 ``svc_store_unavailable`` with ``Retry-After`` at once (never a 500 or a hang),
the session cache trusts nothing meanwhile, and the site recovers by itself.

A server of its own, so the stop does not disturb the other tests."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from svcrest import App, Request, public
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
        # Pages: what needs no store is served; what needs it is a plain 503, not a 500.
        assert client.get("/static/svc-rest.mjs").status_code == 200
        started = time.monotonic()
        login = cookie_client.post("/login", data={"log": "alice", "pwd": "alice-pw"})
        assert time.monotonic() - started < 3
        assert (login.status_code, login.headers["Retry-After"]) == (503, "1")
        assert login.text == "The database is unavailable; please try again shortly."
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


def test_a_stop_and_start_under_load_loses_and_doubles_no_acknowledged_write(
    own_server: PostgresServer, client_for: Callable[..., SiteClient]
) -> None:
    app = site(own_server.new_schema())

    def put(request: Request) -> dict[str, Any]:
        with app.store.transaction() as conn:
            conn.execute("INSERT INTO t_items (name) VALUES (?)", (request["key"],))
        return {"key": request["key"]}

    app.register_rest_route(
        "t/v1", "/put", {"methods": "POST", "callback": put, "permission_callback": public,
                         "args": {"key": {"type": "string", "required": True}}},
    )  # fmt: skip
    answers: dict[str, int] = {}
    slowest = [0.0]
    stop = threading.Event()

    def write(writer: int) -> None:
        client = client_for(app)
        number = 0
        while not stop.is_set():
            key = f"w{writer}-{number}"
            number += 1
            started = time.monotonic()
            answers[key] = client.post("/svc-json/t/v1/put", params={"key": key}).status_code
            slowest[0] = max(slowest[0], time.monotonic() - started)

    writers = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    try:
        for thread in writers:
            thread.start()
        time.sleep(0.5)
        own_server.stop_server("fast")
        time.sleep(1.0)
        own_server.start_server()
        deadline = time.monotonic() + 10
        while not any(status == 200 for status in list(answers.values())[-8:]):
            assert time.monotonic() < deadline, "the writes did not recover"
            time.sleep(0.1)
        time.sleep(0.3)
    finally:
        stop.set()
        for thread in writers:
            thread.join(30)
    rows = app.store.read_one("SELECT count(*), count(DISTINCT name) FROM t_items")
    stored = {row[0] for row in _rows(app, "SELECT name FROM t_items")}
    app.store.close()
    assert set(answers.values()) <= {200, 503}
    assert 503 in answers.values()
    assert rows[0] == rows[1]  # nothing applied twice
    acknowledged = {key for key, status in answers.items() if status == 200}
    assert acknowledged <= stored  # nothing acknowledged lost
    assert slowest[0] < 6  # the pool's deadline (5 s) at worst, never a hang


def _rows(app: App, sql: str) -> list[Any]:
    with app.store.read() as conn:
        return conn.execute(sql).fetchall()
