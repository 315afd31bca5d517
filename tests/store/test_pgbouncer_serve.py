"""Two real ``svcrest serve`` hosts whose ``--db`` goes through PgBouncer in transaction mode
(``?pgbouncer=1``) and whose listeners connect directly (``--db-listen`` and
``--db-pool-size`` on one, ``SVCREST_DB_LISTEN`` and ``SVCREST_DB_POOL_SIZE`` on the other):
one site, a logout on one refusing the cookie on the other at once."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.test_e2e_server import free_port
from tests.e2e.test_many_hosts import (
    NOTES,
    Host,
    _read_banner,
    _wait_for,
    admin_password,
    log_in,
    nonce_of,
)
from tests.pg import PostgresServer
from tests.pgbouncer import PgBouncer
from tests.store.test_pgbouncer import bouncer  # noqa: F401 - the module's PgBouncer fixture


@pytest.fixture(scope="module")
def hosts(postgres: PostgresServer, bouncer: PgBouncer) -> Iterator[tuple[Host, Host]]:  # noqa: F811
    direct = postgres.new_database()
    through = bouncer.url(direct.split("/")[3].split("?")[0])
    processes: list[tuple[str, int, subprocess.Popen[str]]] = []
    for address, by_flags in (("127.0.0.2", True), ("127.0.0.3", False)):
        port = free_port()
        command = [sys.executable, "-m", "svcrest", "serve", "--host", address]
        command += ["--port", str(port), "--db", through]
        env = dict(os.environ)
        if by_flags:
            command += ["--db-listen", direct, "--db-pool-size", "2"]
        else:
            env.update(SVCREST_DB_LISTEN=direct, SVCREST_DB_POOL_SIZE="2")
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
        processes.append((address, port, process))
    try:
        found: list[Host] = []
        for address, port, process in processes:
            banner = _read_banner(process)
            _wait_for(address, port, process)
            found.append(Host(f"http://{address}:{port}", banner))
        yield found[0], found[1]
    finally:
        for _address, _port, process in processes:
            process.terminate()
        for _address, _port, process in processes:
            try:
                process.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()


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
