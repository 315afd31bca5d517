"""A site whose ``--db`` goes through PgBouncer in transaction mode (``?pgbouncer=1``) and
whose listener connects directly (``--db-listen``): it works, revocations included."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from svcrest import App
from svcrest.store.postgres import PostgresStore
from tests.auth.test_auth_hosts import cache_on, make_host
from tests.pg import PostgresServer
from tests.pgbouncer import PgBouncer
from tests.store.test_pg_sql_comments import OWN_QUERY, seen_site


@pytest.fixture(scope="module")
def bouncer(postgres: PostgresServer) -> Iterator[PgBouncer]:
    try:
        pooler = PgBouncer(postgres)
    except Exception as exc:
        if os.environ.get("CI"):
            pytest.fail(f"PgBouncer cannot start: {exc}")
        pytest.skip(f"PgBouncer cannot start: {exc}")
    yield pooler
    assert pooler.stop()


@pytest.fixture
def urls(postgres: PostgresServer, bouncer: PgBouncer) -> tuple[str, str]:
    """The URL through PgBouncer with a direct listener, and the direct URL."""
    direct = postgres.new_database()
    database = direct.split("/")[3].split("?")[0]
    return f"{bouncer.url(database)}&listen={quote(direct, safe='')}", direct


def test_statements_through_pgbouncer_are_never_prepared(urls: tuple[str, str]) -> None:
    through, _direct = urls
    with PostgresStore(through) as store:
        for number in range(50):  # psycopg would prepare from the 5th run on
            assert store.read_one("SELECT ?::int + 1", (number,))[0] == number + 1
            with store.transaction() as conn:
                conn.execute("SELECT ?::int", (number,))
        assert store.options.pgbouncer is True


def test_hosts_through_pgbouncer_revoke_on_each_other(urls: tuple[str, str]) -> None:
    through, _direct = urls
    first, second = make_host(through), make_host(through)
    try:
        first.users.create("alice", "alice-pw", roles=("editor",))
        user = first.users.get(1)
        assert user is not None
        cookie = first.auth.log_in(user, remember=False, ip="i", user_agent="u", secure=False)
        for host in (first, second):
            cache_on(host, cookie.value)  # the listener works: the cache is trusted
        first.auth.sessions.destroy_all(1)
        assert [h.auth.validate_cookie(cookie.value) for h in (first, second)] == [None, None]
    finally:
        first.store.close()
        second.store.close()


def test_without_a_listen_url_behind_pgbouncer_the_cache_is_off(
    urls: tuple[str, str],
) -> None:
    through, _direct = urls
    app: App = make_host(through.split("&listen=")[0])
    try:
        app.users.create("alice", "alice-pw")
        assert app.auth.session_cache is None
        user = app.users.get(1)
        assert user is not None
        cookie = app.auth.log_in(user, remember=False, ip="i", user_agent="u", secure=False)
        assert app.auth.validate_cookie(cookie.value) is not None
    finally:
        app.store.close()


def test_request_ids_in_sql_through_pgbouncer(urls: tuple[str, str], client_for: Any) -> None:
    """``sql_comments=1`` behind PgBouncer in transaction mode: the same statement, run by
    many requests (and many times by one), works and names its request."""
    through, _direct = urls
    app = seen_site(through + "&sql_comments=1")
    client = client_for(app)
    try:
        for number in range(8):
            request_id = f"bouncer-{number % 2}"
            answer = client.get("/svc-json/t/v1/seen", headers={"X-Request-Id": request_id})
            assert answer.status_code == 200
            assert answer.json()["alone"] == f"/* request_id={request_id} */ {OWN_QUERY}"
    finally:
        app.store.close()
