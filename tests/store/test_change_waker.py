"""The change log's waker: one thread per store in a process however many readers wait;
a commit wakes the readers of its object type (and only them), on this host or another
(PostgreSQL: ``NOTIFY`` in the writing transaction; SQLite: the change mark); a rolled-back
write wakes nobody; and waiting readers cost PostgreSQL no transaction id while nobody
writes."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from svcrest.store.base import Store
from svcrest.store.change_waker import ChangeWaker, change_waker
from svcrest.store.changes import ensure_change_log, record_change
from svcrest.store.postgres import PostgresStore
from svcrest.store.sqlite import SqliteStore
from tests.pg import PostgresServer
from tests.store.test_pg_listen import txid


@pytest.fixture(params=["sqlite", "postgresql"])
def two_stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    """Two stores of one database: two hosts (two processes) of one site."""
    here: Store
    there: Store
    if request.param == "sqlite":
        path = str(tmp_path / "site.db")
        here, there = SqliteStore(path), SqliteStore(path)
    else:
        server: PostgresServer = request.getfixturevalue("postgres")
        url = server.new_schema()
        here, there = PostgresStore(url), PostgresStore(url)
    ensure_change_log(here)
    yield here, there
    here.close()
    there.close()


def write(store: Store, object_type: str, *, fail: bool = False) -> None:
    try:
        with store.transaction() as conn:
            record_change(store, conn, object_type, 1, "created", time.time())
            if fail:
                raise RuntimeError("rolled back")
    except RuntimeError:
        pass


def waker_threads() -> int:
    return sum(thread.name == "svcrest-change-waker" for thread in threading.enumerate())


def test_a_commit_on_another_host_wakes_the_readers_of_its_type_only(
    two_stores: tuple[Store, Store],
) -> None:
    here, there = two_stores
    waker = change_waker(here)
    assert change_waker(here) is waker

    async def check() -> None:
        before = waker_threads()
        notes, books = waker.token("note"), waker.token("book")
        note_readers = [asyncio.ensure_future(waker.wait("note", notes, 10)) for _ in range(50)]
        book_reader = asyncio.ensure_future(waker.wait("book", books, 1.5))
        # The first look (once the listener listens, or the change mark is read) wakes
        # everyone once: wait for it, then take fresh tokens.
        first = await asyncio.wait_for(asyncio.gather(*note_readers), 10)
        assert first == [True] * 50
        await book_reader
        notes, books = waker.token("note"), waker.token("book")
        note_readers = [asyncio.ensure_future(waker.wait("note", notes, 10)) for _ in range(50)]
        book_reader = asyncio.ensure_future(waker.wait("book", books, 1.0))
        await asyncio.sleep(0.1)
        assert waker.waiters == 51
        assert waker_threads() - before <= 1  # one thread, however many readers
        began = time.monotonic()
        await asyncio.to_thread(write, there, "note")
        assert await asyncio.gather(*note_readers) == [True] * 50
        assert time.monotonic() - began < 1.0
        assert await book_reader is False  # timed out: no book was written
        assert waker.waiters == 0

    asyncio.run(check())


def test_a_rolled_back_write_wakes_nobody(two_stores: tuple[Store, Store]) -> None:
    here, there = two_stores
    waker = change_waker(here)

    async def check() -> None:
        warm = waker.token("note")
        await waker.wait("note", warm, 10)  # the first look wakes everyone (a relay may start)
        token = waker.token("note")
        reader = asyncio.ensure_future(waker.wait("note", token, 1.0))
        await asyncio.sleep(0.1)
        await asyncio.to_thread(write, there, "note", fail=True)
        assert await reader is False
        assert waker.token("note") == token

    asyncio.run(check())


def test_a_token_taken_before_a_commit_returns_at_once() -> None:
    store = SqliteStore(":memory:")
    ensure_change_log(store)
    waker = ChangeWaker(store)
    token = waker.token("note")
    waker._wake({"note"})  # as the thread does when it sees a commit
    began = time.monotonic()
    assert asyncio.run(waker.wait("note", token, 5)) is True
    assert time.monotonic() - began < 0.1
    store.close()


def test_waiting_readers_consume_no_transaction_id(postgres: PostgresServer) -> None:
    url = postgres.new_schema()
    with PostgresStore(url) as store:
        ensure_change_log(store)
        waker = change_waker(store)

        async def idle() -> None:
            token = waker.token("note")
            await waker.wait("note", token, 10)  # the listener opens (a relay may be starting)
            token = waker.token("note")
            readers = [asyncio.ensure_future(waker.wait("note", token, 1.5)) for _ in range(20)]
            before = await asyncio.to_thread(txid, postgres)
            assert await asyncio.gather(*readers) == [False] * 20
            after = await asyncio.to_thread(txid, postgres)
            # The second measurement takes one id itself; nothing else took any.
            assert after - before == 1

        # An automatic ANALYZE (of the tables earlier tests of the session wrote) would
        # spend ids of the cluster within the count: none runs while it is taken.
        with postgres.autovacuum_paused():
            asyncio.run(idle())


def test_a_token_never_goes_down_when_the_counts_are_forgotten(tmp_path: Path) -> None:
    # A reader compares tokens to tell whether a read of the log began after a wake.
    store = SqliteStore(str(tmp_path / "site.db"))
    try:
        waker = ChangeWaker(store)
        for _ in range(3):
            waker._wake({"note"})
        seen = waker.token("note")
        assert seen == 3
        for number in range(1100):  # past the bound: the counts are forgotten
            waker._wake({f"type{number}"})
            assert waker.token("note") >= seen
            seen = waker.token("note")
        waker._wake({"note"})
        assert waker.token("note") > seen
    finally:
        store.close()
