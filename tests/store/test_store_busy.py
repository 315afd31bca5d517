"""Transactions the database gives up on are answered 503 ``svc_store_busy`` with
``Retry-After``, as a busy pool or write lock is: on PostgreSQL a deadlock between two
transactions (``DeadlockDetected``) or a serialization failure (``SerializationFailure``),
both ``TransactionRollback``, each provoked for real with two connections in two threads.
(SQLite's "database is locked" surfaces at ``BEGIN IMMEDIATE``, answered so already:
tests/test_blocking.py; an open store's idle connections keep any other from taking the
database in exclusive mode, so no read can meet it.)"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from svcrest.store import Store, open_store
from svcrest.store.errors import StoreBusyError
from tests.pg import PostgresServer

BUSY = {
    "code": "svc_store_busy",
    "message": "The database is busy; please try again shortly.",
    "data": {"status": 503},
}


@pytest.fixture
def pg_store(postgres: PostgresServer) -> Iterator[Store]:
    store = open_store(postgres.new_schema())
    with store.transaction() as conn:
        conn.execute("CREATE TABLE pair (id integer PRIMARY KEY, n integer NOT NULL)")
        conn.execute("INSERT INTO pair (id, n) VALUES (1, 0), (2, 0)")
    yield store
    store.close()


def counts(store: Store) -> list[int]:
    with store.read() as conn:
        return [int(row[0]) for row in conn.execute("SELECT n FROM pair ORDER BY id").fetchall()]


def assert_busy(error: BaseException) -> None:
    assert isinstance(error, StoreBusyError)
    assert error.to_dict() == BUSY
    assert error.status == 503
    assert dict(error.headers) == {"Retry-After": "1"}


def test_a_deadlock_is_503_store_busy(pg_store: Store) -> None:
    from psycopg import errors

    barrier = threading.Barrier(2, timeout=30)
    outcomes: dict[str, BaseException | None] = {}

    def bump(name: str, first: int, second: int) -> None:
        try:
            with pg_store.transaction() as conn:
                conn.execute("UPDATE pair SET n = n + 1 WHERE id = ?", (first,))
                barrier.wait()  # each holds one row: the second UPDATEs wait for each other
                conn.execute("UPDATE pair SET n = n + 1 WHERE id = ?", (second,))
            outcomes[name] = None
        except BaseException as exc:
            outcomes[name] = exc

    threads = [
        threading.Thread(target=bump, args=("up", 1, 2)),
        threading.Thread(target=bump, args=("down", 2, 1)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    failed = [error for error in outcomes.values() if error is not None]
    assert len(outcomes) == 2
    assert len(failed) == 1
    assert_busy(failed[0])
    assert isinstance(failed[0].__cause__, errors.DeadlockDetected)
    assert counts(pg_store) == [1, 1]  # the loser's first UPDATE rolled back
    with pg_store.transaction() as conn:  # its pooled connection is usable again
        conn.execute("UPDATE pair SET n = n + 1 WHERE id = ?", (1,))
    assert counts(pg_store) == [2, 1]


def test_a_serialization_failure_is_503_store_busy(pg_store: Store) -> None:
    from psycopg import errors

    def bump_elsewhere() -> None:
        with pg_store.transaction() as conn:
            conn.execute("UPDATE pair SET n = n + 10 WHERE id = 1")

    with pytest.raises(StoreBusyError) as caught, pg_store.transaction() as conn:
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        assert conn.execute("SELECT n FROM pair WHERE id = 1").fetchone()[0] == 0
        other = threading.Thread(target=bump_elsewhere)
        other.start()
        other.join(30)
        conn.execute("UPDATE pair SET n = n + 1 WHERE id = 1")
    assert_busy(caught.value)
    assert isinstance(caught.value.__cause__, errors.SerializationFailure)
    assert counts(pg_store) == [10, 0]
