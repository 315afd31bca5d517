"""The session cache on its own: a fake listener whose pings are answered at once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from svcrest.auth.session_cache import LEASE, CachedSession, SessionCache, settle, wait_settled
from svcrest.http.user import User


class FakeListener:
    """A listener whose notifications are what ``send`` queued (a loop-back channel)."""

    def __init__(self) -> None:
        self.queue: list[str] = []
        self.epoch = 1
        self.closed = False
        self.broken = False
        self.answered = 0

    def ping(self, number: int) -> bool:
        if self.broken:
            return False
        self.answered = number  # what was queued before is polled with it
        return True

    def send(self, payload: str) -> None:
        self.queue.append(payload)

    def poll(self) -> list[str] | None:
        if self.broken:
            return None
        payloads, self.queue = self.queue, []
        return payloads

    def close(self) -> None:
        self.closed = True


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def session(user_id: int, login: str = "alice", expiration: int = 2_000_000_000) -> CachedSession:
    return CachedSession(User(id=user_id, login=login, roles=("editor",)), "frag", expiration)


def make_cache(**bounds: int) -> tuple[SessionCache, FakeListener, Clock]:
    listener, clock = FakeListener(), Clock()
    cache = SessionCache(listener, monotonic=clock, heartbeat_thread=False, **bounds)
    return cache, listener, clock


def fill(cache: SessionCache, key: tuple[str, str], value: CachedSession) -> None:
    """Look ``key`` up (a miss) and store what the 'read' found, as the cookie check does."""
    found, ticket = cache.lookup(key)
    assert found is None
    cache.put(key, ticket, value)


def trusted(cache: SessionCache) -> SessionCache:
    cache.send_heartbeat()
    cache.lookup(("", ""))  # drains the heartbeat
    assert cache.trusted
    return cache


def test_nothing_is_trusted_before_a_heartbeat_comes_back() -> None:
    cache, _listener, _clock = make_cache()
    fill(cache, ("alice", "h1"), session(1))
    assert (len(cache), cache.trusted) == (1, False)
    assert cache.lookup(("alice", "h1"))[0] is None
    trusted(cache)
    assert cache.lookup(("alice", "h1"))[0] == session(1)


def test_the_lease_runs_out_without_heartbeats() -> None:
    cache, _listener, clock = make_cache()
    trusted(cache)
    fill(cache, ("alice", "h1"), session(1))
    clock.now += 0.05
    assert cache.lookup(("alice", "h1"))[0] == session(1)
    clock.now += 0.001
    assert cache.lookup(("alice", "h1"))[0] is None
    assert cache.trusted is False
    trusted(cache)
    assert cache.lookup(("alice", "h1"))[0] == session(1)


def test_a_heartbeat_counts_from_when_it_was_sent() -> None:
    cache, listener, clock = make_cache()
    cache.send_heartbeat()
    clock.now += 0.04  # the heartbeat took 40 ms to come back
    assert cache.lookup(("x", "y")) == (None, cache._generation)
    clock.now += 0.011
    assert cache.trusted is False
    assert listener.queue == []


def test_a_user_id_notification_drops_that_users_entries_only() -> None:
    cache, listener, _clock = make_cache()
    trusted(cache)
    fill(cache, ("alice", "h1"), session(1))
    fill(cache, ("alice", "h2"), session(1))
    fill(cache, ("bob", "h3"), session(2, "bob"))
    listener.queue.append("1")
    assert cache.lookup(("alice", "h1"))[0] is None
    assert cache.lookup(("alice", "h2"))[0] is None
    assert cache.lookup(("bob", "h3"))[0] == session(2, "bob")
    assert len(cache) == 1
    listener.queue.append("*")
    assert cache.lookup(("bob", "h3"))[0] is None
    assert (len(cache), cache.size_bytes) == (0, 0)


def test_another_processes_heartbeat_invalidates_nothing() -> None:
    cache, listener, _clock = make_cache()
    trusted(cache)
    fill(cache, ("alice", "h1"), session(1))
    listener.queue.append("hb:0123456789abcdef:1")
    assert cache.lookup(("alice", "h1"))[0] == session(1)


def test_a_read_older_than_an_invalidation_is_not_cached() -> None:
    cache, listener, _clock = make_cache()
    trusted(cache)
    found, ticket = cache.lookup(("alice", "h1"))
    assert found is None
    listener.queue.append("2")  # any invalidation arriving while the read runs
    cache.put(("alice", "h1"), ticket, session(1))
    assert len(cache) == 0
    fill(cache, ("alice", "h1"), session(1))
    assert len(cache) == 1


def test_a_broken_listener_forgets_everything_and_trusts_nothing() -> None:
    cache, listener, _clock = make_cache()
    trusted(cache)
    fill(cache, ("alice", "h1"), session(1))
    listener.broken = True
    assert cache.lookup(("alice", "h1")) == (None, -1)
    assert (len(cache), cache.listening, cache.trusted) == (0, False, False)
    cache.put(("alice", "h1"), -1, session(1))
    assert len(cache) == 0
    listener.broken = False
    listener.epoch = 2
    assert cache.lookup(("alice", "h1"))[0] is None
    assert (cache.listening, cache.trusted) == (True, False)  # earlier heartbeats prove nothing
    trusted(cache)
    fill(cache, ("alice", "h1"), session(1))
    assert cache.lookup(("alice", "h1"))[0] == session(1)


def test_a_new_epoch_forgets_what_was_cached() -> None:
    cache, listener, _clock = make_cache()
    trusted(cache)
    fill(cache, ("alice", "h1"), session(1))
    listener.epoch = 2
    assert cache.lookup(("alice", "h1"))[0] is None
    assert len(cache) == 0


def test_entries_are_bounded_least_recently_used_first() -> None:
    cache, _listener, _clock = make_cache(max_entries=3)
    trusted(cache)
    for n in range(1, 4):
        fill(cache, (f"u{n}", "h"), session(n, f"u{n}"))
    assert cache.lookup(("u1", "h"))[0] == session(1, "u1")  # u1 is now the most recent
    fill(cache, ("u4", "h"), session(4, "u4"))
    assert len(cache) == 3
    assert cache.lookup(("u2", "h"))[0] is None
    assert [cache.lookup((f"u{n}", "h"))[0] is not None for n in (1, 3, 4)] == [True] * 3


def test_bytes_are_bounded() -> None:
    cache, _listener, _clock = make_cache(max_bytes=1500)
    trusted(cache)
    for n in range(1, 4):
        fill(cache, (f"u{n}", "h"), session(n, f"u{n}"))
    # Each entry: 600 of overhead + "u1" + "h" (the key) + "u1" (login) + "" (display name)
    # + "frag" + "editor" = 615 bytes; two fit in 1500.
    assert (len(cache), cache.size_bytes) == (2, 1230)
    huge = CachedSession(User(id=9, login="x", display_name="d" * 2000), "frag", 0)
    _found, ticket = cache.lookup(("x", "h"))
    cache.put(("x", "h"), ticket, huge)
    assert (len(cache), cache.size_bytes) == (2, 1230)


def test_entries_are_forgotten_after_max_age() -> None:
    listener, clock = FakeListener(), Clock()
    cache = SessionCache(
        listener,
        monotonic=clock,
        heartbeat_thread=False,
        max_age=10,
    )
    trusted(cache)
    fill(cache, ("alice", "h1"), session(1))
    clock.now += 10.01
    trusted(cache)
    assert cache.lookup(("alice", "h1"))[0] is None
    assert len(cache) == 0


@pytest.mark.parametrize("bounds", [{"max_entries": 0}, {"max_bytes": 0}, {"lease": 0}])
def test_bounds_must_be_positive(bounds: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="positive bounds"):
        SessionCache(FakeListener(), **bounds)  # type: ignore[arg-type]


# -- the wait of a revoking write ---------------------------------------------------------------


class ChannelStore:
    """Just enough of a store with a notification channel for ``settle``."""

    def __init__(self, in_block: bool = False) -> None:
        self.block = in_block
        self.after: list[Callable[[], None]] = []

    def after_commit(self, callback: Callable[[], None]) -> None:
        if callback not in self.after:
            self.after.append(callback)

    def notify(self, conn: object, channel: str, payload: str) -> None:
        raise AssertionError("not used")

    def publish(self, channel: str, payload: str) -> None:
        raise AssertionError("not used")

    def listen(self, channel: str) -> FakeListener:
        return FakeListener()

    def in_block(self) -> bool:
        return self.block


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[float]]:
    """Every ``time.sleep`` and ``asyncio.sleep``, recorded instead of slept (at monotonic
    time 0)."""
    recorded: dict[str, list[float]] = {"sleep": [], "await": []}

    async def fake_async_sleep(delay: float) -> None:
        recorded["await"].append(delay)

    monkeypatch.setattr(time, "sleep", recorded["sleep"].append)
    monkeypatch.setattr(time, "monotonic", lambda: 0.0)
    monkeypatch.setattr(asyncio, "sleep", fake_async_sleep)
    return recorded


def test_a_revoking_write_off_an_event_loop_sleeps_the_lease(waits: dict[str, list[float]]) -> None:
    settle(ChannelStore())  # type: ignore[arg-type]
    assert waits == {"sleep": [LEASE], "await": []}


def test_inside_a_transaction_the_wait_follows_the_outer_commit(
    waits: dict[str, list[float]],
) -> None:
    store = ChannelStore(in_block=True)
    settle(store)  # type: ignore[arg-type]
    settle(store)  # type: ignore[arg-type]  # two revocations in one transaction: one wait
    assert waits == {"sleep": [], "await": []}  # nothing is sent before the commit
    assert len(store.after) == 1
    other = ChannelStore(in_block=True)
    settle(other)  # type: ignore[arg-type]
    assert len(other.after) == 1 and other.after[0] != store.after[0]
    store.block = False  # the outermost block has committed and let its connection go
    store.after[0]()
    assert waits == {"sleep": [LEASE], "await": []}


def test_on_an_event_loop_the_answer_waits_instead_of_the_loop(
    waits: dict[str, list[float]],
) -> None:
    async def request() -> None:
        settle(ChannelStore())  # type: ignore[arg-type]
        settle(ChannelStore())  # type: ignore[arg-type]  # two writes: one wait
        assert waits == {"sleep": [], "await": []}  # the loop was not held
        await wait_settled()

    asyncio.run(request())
    assert waits == {"sleep": [], "await": [LEASE]}

    async def another_request() -> None:
        await wait_settled()

    asyncio.run(another_request())  # its own context: nothing deferred, nothing awaited
    assert waits == {"sleep": [], "await": [LEASE]}
