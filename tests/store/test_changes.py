"""The change log (``svcrest.store.changes``): one row per write, in the writing transaction;
cursors over it."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest

from svcrest.store import open_store
from svcrest.store.base import Store
from svcrest.store.changes import (
    Change,
    changes_after,
    decode_cursor,
    encode_cursor,
    ensure_change_log,
    last_change,
    purge_changes,
    record_change,
)


@pytest.fixture
def store() -> Iterator[Store]:
    made = open_store(None)
    ensure_change_log(made)
    ensure_change_log(made)  # idempotent
    yield made
    made.close()


def record(store: Store, object_type: str, item_id: int, event: str, now: float) -> int:
    with store.transaction() as conn:
        return record_change(store, conn, object_type, item_id, event, now)  # type: ignore[arg-type]


def test_changes_in_order_per_object_type(store: Store) -> None:
    assert last_change(store, "note") == 0
    first = record(store, "note", 1, "created", 100.0)
    record(store, "book", 9, "created", 101.0)
    third = record(store, "note", 1, "updated", 102.5)
    assert first < third
    assert changes_after(store, "note") == [
        Change(first, "note", 1, "created", 100.0),
        Change(third, "note", 1, "updated", 102.5),
    ]
    assert changes_after(store, "note", after=first) == [Change(third, "note", 1, "updated", 102.5)]
    assert [change.seq for change in changes_after(store, "note", limit=1)] == [first]
    assert last_change(store, "note") == third


def test_a_rolled_back_write_leaves_no_change(store: Store) -> None:
    with pytest.raises(RuntimeError), store.transaction() as conn:
        record_change(store, conn, "note", 1, "deleted", 100.0)
        raise RuntimeError("the write fails")
    assert changes_after(store, "note") == []


def test_bad_values_raise(store: Store) -> None:
    with (
        pytest.raises(ValueError, match="unknown change event 'renamed'"),
        store.transaction() as conn,
    ):
        record_change(store, conn, "note", 1, "renamed", 100.0)  # type: ignore[arg-type]
    for limit in (0, 1001):
        with pytest.raises(ValueError, match="limit must be between 1 and 1000"):
            changes_after(store, "note", limit=limit)


def test_purge_deletes_what_is_older(store: Store) -> None:
    record(store, "note", 1, "created", 100.0)
    kept = record(store, "note", 2, "created", 200.0)
    assert purge_changes(store, 150.0) == 1
    assert [change.seq for change in changes_after(store, "note")] == [kept]
    assert purge_changes(store, 150.0) == 0


def test_cursors_round_trip() -> None:
    cursor = encode_cursor(42, 1_700_000_000.1234)
    assert cursor == base64.urlsafe_b64encode(b"42.1700000000123").rstrip(b"=").decode()
    assert "=" not in cursor
    assert decode_cursor(cursor) == (42, 1_700_000_000.123)
    with pytest.raises(ValueError, match="not negative"):
        encode_cursor(-1, 0.0)


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "!!!",
        base64.urlsafe_b64encode(b"42").decode(),
        base64.urlsafe_b64encode(b"042.5").rstrip(b"=").decode(),  # not as it was issued
        encode_cursor(42, 5.0) + "==",
        "A" * 1000,
    ],
    ids=["empty", "not-base64", "no-time", "leading-zero", "padded", "long"],
)
def test_what_is_not_a_cursor(cursor: str) -> None:
    assert decode_cursor(cursor) is None
