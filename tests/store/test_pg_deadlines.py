"""PostgreSQL URL options, pool deadlines, statement time-outs and lost connections: each
is answered 503 with ``Retry-After`` in the error shape, never a 500 or a hang."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from svcrest import App, Request, public
from svcrest.app import DoingItWrong
from svcrest.store.base import StoreError
from svcrest.store.errors import StoreBusyError, StoreTimeoutError, StoreUnavailableError
from svcrest.store.pg_url import PoolOptions, split_url, with_url_options
from svcrest.store.postgres import PostgresStore
from tests.conftest import SiteClient
from tests.pg import PostgresServer

ClientFor = Callable[..., SiteClient]
BASE = "postgresql://svc:secret@db.internal:5432/site"
BUSY = {
    "code": "svc_store_busy",
    "message": "The database is busy; please try again shortly.",
    "data": {"status": 503},
}
TIMEOUT = {
    "code": "svc_store_timeout",
    "message": "The database took too long to answer; please try again shortly.",
    "data": {"status": 503},
}
UNAVAILABLE = {
    "code": "svc_store_unavailable",
    "message": "The database is unavailable; please try again shortly.",
    "data": {"status": 503},
}


@pytest.mark.parametrize(
    ("url", "rest", "options"),
    [
        (BASE, BASE, PoolOptions()),
        (f"{BASE}?pool_size=2", BASE, PoolOptions(pool_size=2)),
        (
            f"{BASE}?sslmode=disable&pool_size=3&acquire_timeout=0.5&pgbouncer=1",
            f"{BASE}?sslmode=disable",
            PoolOptions(pool_size=3, acquire_timeout=0.5, pgbouncer=True),
        ),
        (
            "postgresql:///site?host=%2Ftmp%2Fx&options=-c%20search_path%3Dt1&pgbouncer=0",
            "postgresql:///site?host=%2Ftmp%2Fx&options=-c%20search_path%3Dt1",
            PoolOptions(),
        ),
        (
            f"{BASE}?listen=postgresql%3A%2F%2Fsvc%40db%3A5432%2Fsite",
            BASE,
            PoolOptions(listen="postgresql://svc@db:5432/site"),
        ),
    ],
    ids=["none", "pool-size", "all-and-libpq", "socket", "listen"],
)
def test_svcrest_options_are_taken_out_of_the_url(
    url: str, rest: str, options: PoolOptions
) -> None:
    pytest.importorskip("psycopg")
    assert split_url(url) == (rest, options)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("pool_size=0", "pool_size must be a whole number from 1 to 1000"),
        ("pool_size=ten", "pool_size must be a whole number from 1 to 1000"),
        ("pool_size=1001", "pool_size must be a whole number from 1 to 1000"),
        ("acquire_timeout=-1", "acquire_timeout must be seconds from 0 to 3600"),
        ("acquire_timeout=nan", "acquire_timeout must be seconds from 0 to 3600"),
        ("pgbouncer=maybe", "pgbouncer must be 1 or 0"),
        ("listen=mysql%3A%2F%2Fx", "listen must be a postgresql:// URL (percent-encoded)"),
        ("poolsize=2", "unknown PostgreSQL URL option 'poolsize'"),
    ],
)
def test_bad_url_options_are_refused_by_name(query: str, message: str) -> None:
    pytest.importorskip("psycopg")
    with pytest.raises(StoreError) as caught:
        split_url(f"{BASE}?{query}")
    assert str(caught.value) == message


def test_url_options_set_by_the_command_line_replace_the_urls() -> None:
    assert (
        with_url_options(f"{BASE}?pool_size=3&sslmode=require", pool_size="7")
        == f"{BASE}?sslmode=require&pool_size=7"
    )
    assert (
        with_url_options(BASE, listen="postgresql://a:b@c/d")
        == f"{BASE}?listen=postgresql%3A%2F%2Fa%3Ab%40c%2Fd"
    )


def test_a_pool_size_in_the_url_opens_the_store(postgres: PostgresServer) -> None:
    """libpq refuses a query option it does not know (``invalid URI query parameter``):
    svcrest's own never reach it."""
    url = postgres.new_schema() + "&pool_size=2&acquire_timeout=1.5&pgbouncer=0"
    with PostgresStore(url) as store:
        assert store.options == PoolOptions(pool_size=2, acquire_timeout=1.5)
        assert store.read_one("SELECT 41 + 1")[0] == 42
        assert "pool_size" not in repr(store)


def test_prepared_statements_are_off_behind_pgbouncer(postgres: PostgresServer) -> None:
    url = postgres.new_schema()
    with PostgresStore(url + "&pgbouncer=1") as bouncer, PostgresStore(url) as direct:
        for _ in range(8):  # psycopg prepares a statement on its 5th run by default
            bouncer.read_one("SELECT ?::int + 1", (1,))
            direct.read_one("SELECT ?::int + 1", (1,))
        assert bouncer.read_one("SELECT count(*) FROM pg_prepared_statements")[0] == 0
        assert direct.read_one("SELECT count(*) FROM pg_prepared_statements")[0] == 1


def test_behind_pgbouncer_a_listener_needs_its_own_url(postgres: PostgresServer) -> None:
    url = postgres.new_schema()
    with (
        PostgresStore(url + "&pgbouncer=1") as store,
        pytest.raises(StoreError, match="LISTEN does not work through PgBouncer"),
    ):
        store.listen("svcrest_auth")
    with PostgresStore(url + "&pgbouncer=1", listen=url) as store:
        listener = store.listen("svcrest_auth")
        store.publish("svcrest_auth", "7")
        deadline = time.monotonic() + 5
        received: list[str] = []
        while not received and time.monotonic() < deadline:
            received += listener.poll() or []
            time.sleep(0.005)
        assert received == ["7"]


class Holder:
    """A thread holding one of the store's connections in a transaction until released."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self._held = threading.Event()
        self._release = threading.Event()
        self._thread = threading.Thread(target=self._run)
        self._thread.start()
        assert self._held.wait(10)

    def _run(self) -> None:
        with self._store.transaction() as conn:
            conn.execute("SELECT 1")
            self._held.set()
            self._release.wait(30)

    def release(self) -> None:
        self._release.set()
        self._thread.join(10)


def test_a_pool_wait_past_acquire_timeout_is_store_busy(postgres: PostgresServer) -> None:
    with PostgresStore(postgres.new_schema() + "&pool_size=1&acquire_timeout=0.2") as store:
        holder = Holder(store)
        try:
            started = time.monotonic()
            with pytest.raises(StoreBusyError):
                store.read_one("SELECT 1")
            assert 0.2 <= time.monotonic() - started < 5
        finally:
            holder.release()
        assert store.read_one("SELECT 1")[0] == 1


def test_a_shared_event_loop_never_waits_for_the_pool(postgres: PostgresServer) -> None:
    """uvicorn's loop thread would hold every request while it waits: it is refused at once."""
    with PostgresStore(postgres.new_schema() + "&pool_size=1&acquire_timeout=60") as store:
        holder = Holder(store)

        async def on_the_loop() -> float:
            started = time.monotonic()
            with pytest.raises(StoreBusyError):
                store.read_one("SELECT 1")
            return time.monotonic() - started

        try:
            assert asyncio.run(on_the_loop()) < 30
        finally:
            holder.release()


def site(url: str) -> App:
    app = App("http://site.test", store=url)
    app.store.migrate("t", ["CREATE TABLE t_items (id SERIAL PRIMARY KEY, name TEXT)"])

    def read(request: Request) -> dict[str, Any]:
        return {"one": app.store.read_one("SELECT 1")[0]}

    def write(request: Request) -> dict[str, Any]:
        with app.store.transaction() as conn:
            row = conn.execute("INSERT INTO t_items (name) VALUES ('x') RETURNING id").fetchone()
        return {"id": row[0]}

    def slow(request: Request) -> dict[str, Any]:
        return {"slept": app.store.read_one("SELECT pg_sleep(5)::text")[0]}

    def slow_write(request: Request) -> dict[str, Any]:
        with app.store.transaction() as conn:
            conn.execute("INSERT INTO t_items (name) VALUES ('slow')")
            conn.execute("SELECT pg_sleep(5)")
        return {}

    def routes(path: str, callback: Callable[..., Any], **options: Any) -> None:
        app.register_rest_route(
            "t/v1", path, {"methods": "GET, POST", "callback": callback,
                           "permission_callback": public, **options},
        )  # fmt: skip

    routes("/read", read)
    routes("/write", write)
    routes("/slow", slow, db_timeout=0.2)
    routes("/slow-write", slow_write, db_timeout=0.2, blocking=True)
    return app


@pytest.fixture
def app(postgres: PostgresServer) -> Iterator[App]:
    app = site(postgres.new_schema() + "&pool_size=1&acquire_timeout=0.2")
    yield app
    app.store.close()


def test_busy_pool_is_answered_503_with_retry_after(app: App, client_for: ClientFor) -> None:
    client = client_for(app)
    holder = Holder(app.store)
    try:
        response = client.get("/svc-json/t/v1/read")
    finally:
        holder.release()
    assert (response.status_code, response.headers["Retry-After"]) == (503, "1")
    assert response.json() == BUSY
    assert client.get("/svc-json/t/v1/read").json() == {"one": 1}


@pytest.mark.parametrize("path", ["/svc-json/t/v1/slow", "/svc-json/t/v1/slow-write"])
def test_a_statement_past_db_timeout_is_cancelled(
    app: App, client_for: ClientFor, path: str
) -> None:
    client = client_for(app)
    started = time.monotonic()
    response = client.post(path)
    assert time.monotonic() - started < 4  # cancelled, not slept out
    assert (response.status_code, response.headers["Retry-After"]) == (503, "1")
    assert response.json() == TIMEOUT
    assert app.store.read_one("SELECT count(*) FROM t_items WHERE name = 'slow'")[0] == 0
    # The time-out was local to the route's transaction: the connection is as it was.
    assert app.store.read_one("SHOW statement_timeout")[0] == "0"


@pytest.mark.parametrize("value", [0, -1, "5", True, 3601])
def test_bad_db_timeouts_are_refused_at_registration(value: Any) -> None:
    app = App()
    with pytest.warns(DoingItWrong, match="db_timeout must be seconds above 0, at most 3600"):
        registered = app.register_rest_route(
            "t/v1", "/x", {"callback": lambda r: 1, "permission_callback": public,
                           "db_timeout": value},
        )  # fmt: skip
    assert registered is False


def test_connections_killed_are_unavailable_then_replaced(
    app: App, client_for: ClientFor, postgres: PostgresServer
) -> None:
    """The connection is ended inside the write's transaction, so its COMMIT is cut off:
    503 ``svc_store_unavailable`` (a 500 before), and the pool replaces the connection."""
    client = client_for(app)
    assert client.get("/svc-json/t/v1/read").json() == {"one": 1}
    killed = threading.Event()

    def kill_during(request: Request) -> dict[str, Any]:
        with app.store.transaction() as conn:
            conn.execute("INSERT INTO t_items (name) VALUES ('killed')")
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            postgres.psql(f"SELECT pg_terminate_backend({pid}, 5000)")
            killed.set()
        return {}

    app.register_rest_route(
        "t/v1", "/kill", {"methods": "POST", "callback": kill_during,
                          "permission_callback": public},
    )  # fmt: skip
    response = client.post("/svc-json/t/v1/kill")
    assert killed.is_set()
    assert (response.status_code, response.headers["Retry-After"]) == (503, "1")
    assert response.json() == UNAVAILABLE
    # The pool's connection was replaced: the next requests work, nothing was half-written.
    assert client.get("/svc-json/t/v1/read").json() == {"one": 1}
    assert app.store.read_one("SELECT count(*) FROM t_items WHERE name = 'killed'")[0] == 0
    # An idle connection killed between requests is replaced before use.
    pids = postgres_pids(postgres)
    for pid in pids:
        postgres.psql(f"SELECT pg_terminate_backend({pid}, 5000)")
    assert client.post("/svc-json/t/v1/write").status_code == 200


def postgres_pids(server: PostgresServer) -> list[int]:
    import psycopg

    with psycopg.connect(server.url(), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND application_name <> 'svcrest-listen'"
        ).fetchall()
    return [int(row[0]) for row in rows]


def test_store_errors_are_store_errors_and_rest_errors() -> None:
    for error in (StoreBusyError(), StoreTimeoutError(), StoreUnavailableError()):
        assert isinstance(error, StoreError)
        assert error.status == 503
        assert error.headers == (("Retry-After", "1"),)
