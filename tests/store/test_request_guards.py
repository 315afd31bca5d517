"""The store's idempotency records and rate-limit counts, on both engines."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from svcrest.store.base import Store
from svcrest.store.locations import open_store
from svcrest.store.request_guards import CLEANUP_BATCH, IN_FLIGHT_LEASE, KEY_LIFETIME, StoredGuards
from tests.conftest import Clock

NOW = 2_000_000.0


@pytest.fixture
def store(store_location: str | None) -> Iterator[Store]:
    opened = open_store(store_location)
    yield opened
    opened.close()


def test_a_key_is_reserved_once_then_replayed(store: Store) -> None:
    guards = StoredGuards(store, Clock(NOW))
    assert guards.reserve_key("u1", "k", "POST /a x") == ("reserved", None)
    assert guards.reserve_key("u1", "k", "POST /a x") == ("in_flight", None)
    assert guards.reserve_key("u1", "k", "POST /a y") == ("mismatch", None)
    assert guards.reserve_key("u2", "k", "POST /a x") == ("reserved", None)
    guards.store_answer("u1", "k", '{"s":201}')
    assert guards.reserve_key("u1", "k", "POST /a x") == ("done", '{"s":201}')
    guards.release_key("u1", "k")  # a finished answer is not released
    assert guards.reserve_key("u1", "k", "POST /a x") == ("done", '{"s":201}')
    guards.release_key("u2", "k")
    assert guards.reserve_key("u2", "k", "POST /a x") == ("reserved", None)


def test_keys_lapse(store: Store) -> None:
    clock = Clock(NOW)
    guards = StoredGuards(store, clock)
    assert guards.reserve_key("u1", "stuck", "f")[0] == "reserved"
    assert guards.reserve_key("u1", "kept", "f")[0] == "reserved"
    guards.store_answer("u1", "kept", "{}")
    clock.now += IN_FLIGHT_LEASE
    assert guards.reserve_key("u1", "stuck", "f")[0] == "reserved"  # its host died
    assert guards.reserve_key("u1", "kept", "f") == ("done", "{}")
    clock.now = NOW + KEY_LIFETIME
    assert guards.reserve_key("u1", "kept", "f")[0] == "reserved"


def test_expired_rows_are_cleaned_a_bounded_number_at_a_time(store: Store) -> None:
    clock = Clock(NOW)
    guards = StoredGuards(store, clock)
    for number in range(CLEANUP_BATCH + 5):
        guards.reserve_key("u", f"k{number}", "f")
    clock.now += IN_FLIGHT_LEASE
    guards.reserve_key("u", "fresh", "f")
    assert store.read_one("SELECT COUNT(*) FROM idempotency_keys")[0] == 6
    guards.reserve_key("u", "fresh2", "f")
    assert store.read_one("SELECT COUNT(*) FROM idempotency_keys")[0] == 2


def test_counts_per_window_and_bucket(store: Store) -> None:
    clock = Clock(NOW + 15)  # 2,000,015 is 35 s into a 60 s window (2,000,000 % 60 == 20)
    guards = StoredGuards(store, clock)
    assert [guards.count_request("a", 60) for _ in range(3)] == [(1, 25), (2, 25), (3, 25)]
    assert guards.count_request("b", 60) == (1, 25)
    clock.now += 25
    assert guards.count_request("a", 60) == (1, 60)
    # The old windows went when the new one started.
    assert store.read_one("SELECT COUNT(*) FROM rate_limit_counts")[0] == 1


def test_counts_are_exact_under_concurrency(store: Store) -> None:
    guards = StoredGuards(store, Clock(NOW))
    seen: list[int] = []
    lock = threading.Lock()

    def hit() -> None:
        for _ in range(10):
            count, _ = guards.count_request("shared", 3600)
            with lock:
                seen.append(count)

    threads = [threading.Thread(target=hit) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(seen) == list(range(1, 61))


def _rows(store: Store, owner: str) -> list[str]:
    with store.read() as conn:
        rows = conn.execute(
            "SELECT idem_key FROM idempotency_keys WHERE owner = ? ORDER BY idem_key", (owner,)
        ).fetchall()
    return [str(row[0]) for row in rows]


def test_an_owner_keeps_a_bounded_number_of_keys(store: Store) -> None:
    clock = Clock(NOW)
    guards = StoredGuards(store, clock)
    assert guards.keys_per_owner == 1000
    guards.keys_per_owner = 3
    for n in range(5):
        clock.now = NOW + n  # finished one after another: k0 is the oldest
        assert guards.reserve_key("a1", f"k{n}", "f") == ("reserved", None)
        guards.store_answer("a1", f"k{n}", f'{{"n":{n}}}')
    # The oldest finished keys went; the newest three are kept (and replayed).
    assert _rows(store, "a1") == ["k2", "k3", "k4"]
    assert guards.reserve_key("a1", "k4", "f") == ("done", '{"n":4}')
    # Other owners are not touched.
    assert guards.reserve_key("a2", "k0", "f") == ("reserved", None)
    assert _rows(store, "a2") == ["k0"]


def test_an_owner_with_every_key_in_flight_is_refused(store: Store) -> None:
    guards = StoredGuards(store, Clock(NOW))
    guards.keys_per_owner = 3
    for n in range(3):
        assert guards.reserve_key("a1", f"k{n}", "f") == ("reserved", None)
    assert guards.reserve_key("a1", "k3", "f") == ("full", None)
    assert _rows(store, "a1") == ["k0", "k1", "k2"]
    guards.store_answer("a1", "k0", "{}")  # one finished: it may go for a new key
    assert guards.reserve_key("a1", "k3", "f") == ("reserved", None)
    assert _rows(store, "a1") == ["k1", "k2", "k3"]
