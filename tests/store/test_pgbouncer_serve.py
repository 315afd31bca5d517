"""Two real ``svcrest serve`` hosts whose ``--db`` goes through PgBouncer in transaction mode
(``?pgbouncer=1``) and whose listeners connect directly (``--db-listen`` and
``--db-pool-size`` on one, ``SVCREST_DB_LISTEN`` and ``SVCREST_DB_POOL_SIZE`` on the other):
one site, a logout on one refusing the cookie on the other at once."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.test_many_hosts import (
    NOTES,
    Host,
    admin_password,
    log_in,
    nonce_of,
    serving,
)
from tests.pg import PostgresServer
from tests.pgbouncer import PgBouncer
from tests.store.test_pgbouncer import bouncer  # noqa: F401 - the module's PgBouncer fixture


@pytest.fixture(scope="module")
def hosts(postgres: PostgresServer, bouncer: PgBouncer) -> Iterator[tuple[Host, Host]]:  # noqa: F811
    direct = postgres.new_database()
    through = bouncer.url(direct.split("/")[3].split("?")[0])
    by_env = dict(os.environ, SVCREST_DB_LISTEN=direct, SVCREST_DB_POOL_SIZE="2")
    launches = [
        ("127.0.0.2", ["--db", through, "--db-listen", direct, "--db-pool-size", "2"], None),
        ("127.0.0.3", ["--db", through], by_env),
    ]
    with serving(launches) as found:
        yield found[0], found[1]


def test_one_site_through_pgbouncer(hosts: tuple[Host, Host]) -> None:
    first, second = hosts
    password = admin_password(first, second)
    with httpx.Client(base_url=first.url) as a, httpx.Client(base_url=second.url) as b:
        cookie = log_in(a, password)
        nonce = nonce_of(a)
        headers = {"Cookie": f"svc_logged_in={cookie}", "X-SVC-Nonce": nonce}
        for number in range(12):  # more than psycopg's 5 runs before it prepares a statement
            created = b.post(NOTES, json={"title": f"n{number}"}, headers=headers)
            assert created.status_code == 201
            assert a.get(f"{NOTES}/{created.json()['id']}").status_code == 200
        for _ in range(10):  # the second host's cache holds the session
            seen = b.get(f"{NOTES}/1", headers=headers)
            assert (seen.status_code, seen.headers.get("X-SVC-Nonce")) == (200, nonce)
            time.sleep(0.02)
        home = a.get("/").text
        logout_nonce = home.split('name="_wpnonce" value="')[1].split('"')[0]
        assert a.post("/logout", data={"_wpnonce": logout_nonce}).status_code == 303
        refused = b.get(f"{NOTES}/1", headers=headers)
        assert (refused.status_code, refused.json()["code"]) == (403, "rest_cookie_invalid_nonce")
