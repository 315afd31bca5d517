"""The change log (``svcrest.store.changes``): one row per write, in the writing transaction;
cursors over it."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import FrozenInstanceError

import pytest

from svcrest.store import open_store
from svcrest.store.base import Store
from svcrest.store.changes import (
    Change,
    changes_after,
    cursor_encoder,
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


def test_a_cursor_encoder_gives_encode_cursors_text() -> None:
    """One encoder for the cursors of one time: each exactly ``encode_cursor``'s, at
    every length of the text (base64's padding), times rounded to the millisecond as it
    rounds them; negative positions and times refused as it refuses them."""
    encode = cursor_encoder(1_700_000_000.1234)
    assert encode(42) == "NDIuMTcwMDAwMDAwMDEyMw"  # base64url of b"42.1700000000123"
    assert encode(7) == "Ny4xNzAwMDAwMDAwMTIz"
    assert encode(0) == "MC4xNzAwMDAwMDAwMTIz"
    for when in (0.0, 0.0004, 0.0005, 0.0015, 2.5, 1_700_000_000.1235, 1e12 + 0.5):
        made = cursor_encoder(when)
        for seq in (*range(0, 1200), 2**31, 2**62 + 12345, 2**63 - 1):
            assert made(seq) == encode_cursor(seq, when), (seq, when)
    with pytest.raises(ValueError, match="not negative"):
        encode(-1)
    with pytest.raises(ValueError, match="not negative"):
        cursor_encoder(-0.5)


def test_changes_read_are_frozen_changes_of_the_type_asked(store: Store) -> None:
    """The changes ``changes_after`` makes without the dataclass's ``__init__`` are the
    same ``Change`` objects: equal, hashed and frozen as made by it, each of every event,
    their object type the one asked for; an unknown event in the log is refused."""
    first = record(store, "note", 3, "created", 100.0)
    second = record(store, "note", 3, "updated", 100.25)
    third = record(store, "note", 3, "deleted", 101.0)
    read = changes_after(store, "note")
    assert read == [
        Change(first, "note", 3, "created", 100.0),
        Change(second, "note", 3, "updated", 100.25),
        Change(third, "note", 3, "deleted", 101.0),
    ]
    assert [type(change) for change in read] == [Change] * 3
    assert [type(change.seq) for change in read] == [int] * 3
    assert [type(change.time) for change in read] == [float] * 3
    assert hash(read[1]) == hash(Change(second, "note", 3, "updated", 100.25))
    assert repr(read[0]) == (
        f"Change(seq={first}, object_type='note', item_id=3, event='created', time=100.0)"
    )
    with pytest.raises(FrozenInstanceError):
        read[0].seq = 5  # type: ignore[misc]
    with store.transaction() as conn:
        conn.execute("UPDATE svc_changes SET event = 'renamed' WHERE seq = ?", (second,))
    with pytest.raises(ValueError, match="unknown change event 'renamed' in the change log"):
        changes_after(store, "note")


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
