"""A component's tables made on first use: once per object, not before the store is asked
for, and again after a rolled-back block that made them."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from svcrest.store.base import Store
from svcrest.store.lazy_tables import LazyTables
from svcrest.store.sqlite import SqliteStore


class Maker:
    """An ``ensure`` that makes one table and counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, store: Store) -> None:
        self.calls += 1
        with store.transaction() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS parts (id INTEGER PRIMARY KEY)")


def has_table(store: Store) -> bool:
    with store.transaction() as conn:
        row = conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'parts'"
        ).fetchone()
    return bool(row[0])


@pytest.fixture
def store() -> Iterator[SqliteStore]:
    store = SqliteStore(":memory:")
    yield store
    store.close()


def test_the_tables_are_made_on_first_use_and_once(store: SqliteStore) -> None:
    maker = Maker()
    tables = LazyTables(store, maker)
    assert maker.calls == 0
    assert not has_table(store)
    assert tables.store() is store
    assert tables.store() is store
    assert maker.calls == 1
    assert has_table(store)


def test_a_getter_is_asked_on_every_use_and_not_before(store: SqliteStore) -> None:
    asked: list[Store] = []

    def get() -> Store:
        asked.append(store)
        return store

    maker = Maker()
    tables = LazyTables(get, maker)
    assert asked == []
    assert tables.store() is store
    assert tables.store() is store
    assert len(asked) == 2
    assert maker.calls == 1


def test_tables_made_in_a_rolled_back_block_are_made_again(store: SqliteStore) -> None:
    maker = Maker()
    tables = LazyTables(store, maker)
    with pytest.raises(RuntimeError), store.transaction():
        assert tables.store() is store
        assert has_table(store)
        raise RuntimeError("roll back")
    assert not has_table(store)
    assert tables.store() is store
    assert has_table(store)
    assert maker.calls == 2
    tables.store()
    assert maker.calls == 2


def test_threads_make_the_tables_once(tmp_path: Path) -> None:
    store = SqliteStore(str(tmp_path / "site.db"))
    maker = Maker()
    tables = LazyTables(store, maker)
    start = threading.Barrier(8)

    def use() -> None:
        start.wait()
        tables.store()

    threads = [threading.Thread(target=use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert maker.calls == 1
    store.close()


def test_make_makes_the_tables_now_and_remembers_them_outside_a_block(
    store: SqliteStore,
) -> None:
    maker = Maker()
    tables = LazyTables(store, maker)
    tables.make()
    assert has_table(store)
    tables.make()  # again: a migration asked for runs
    assert maker.calls == 2
    tables.store()
    assert maker.calls == 2


def test_make_inside_a_block_is_not_remembered(store: SqliteStore) -> None:
    maker = Maker()
    tables = LazyTables(store, maker)
    with pytest.raises(RuntimeError), store.transaction():
        tables.make()
        raise RuntimeError("roll back")
    assert not has_table(store)
    tables.store()
    assert has_table(store)
    assert maker.calls == 2


def test_a_getter_followed_later_is_asked_from_then_on(store: SqliteStore) -> None:
    """``follow`` before the first use: the tables are made on the new getter's store, once;
    after it: the getter is the new one itself (asked on every use), nothing made again."""
    maker, other = Maker(), SqliteStore(":memory:")
    tables = LazyTables(lambda: other, maker)
    asked: list[int] = []

    def get() -> Store:
        asked.append(1)
        return store

    tables.follow(get)
    assert tables.store() is store and tables.store() is store
    assert maker.calls == 1 and has_table(store) and not has_table(other)
    assert tables.store is get and len(asked) == 2  # once a use
    again: list[Store] = []

    def then() -> Store:
        again.append(other)
        return other

    tables.follow(then)
    assert tables.store is then and tables.store() is other and maker.calls == 1
    assert again == [other]
    other.close()
