"""The lease of the session cache on PostgreSQL: a ``SELECT 1`` round trip on the listener
connection, after which every notification committed before it has been received. It costs
no transaction id, and an idle process keeps its listener drained."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from svcrest import App
from svcrest.auth.session_cache import CHANNEL, SessionCache
from svcrest.store.pg_listen import ListenerState, PostgresListener
from svcrest.store.pg_relay import RelayListener
from svcrest.store.postgres import PostgresStore
from tests.auth.test_auth_hosts import cache_on, make_host
from tests.pg import PostgresServer


@pytest.fixture
def store(postgres: PostgresServer) -> Iterator[PostgresStore]:
    with PostgresStore(postgres.new_schema()) as store:
        yield store


def revoke_then_ping(store: PostgresStore, rounds: int) -> None:
    listener = store.listen("svc_order_test")
    received: list[str] = []
    for number in range(1, rounds + 1):
        store.publish("svc_order_test", str(number))  # committed when this returns
        assert listener.ping(number)
        assert listener.answered == number
        got = listener.poll()
        assert got is not None
        received += got
        # SECURITY: the lease's premise: the notification is here before the ping's answer.
        assert received[-1:] == [str(number)], f"round {number}: {received[-3:]}"
    assert received == [str(n) for n in range(1, rounds + 1)]


def test_a_notification_committed_before_a_ping_arrives_before_its_answer(
    store: PostgresStore,
) -> None:
    revoke_then_ping(store, 3_000)


@pytest.mark.slow
def test_a_notification_committed_before_a_ping_arrives_before_its_answer_100k(
    store: PostgresStore,
) -> None:
    revoke_then_ping(store, 100_000)


def test_a_notification_from_another_process_arrives_before_the_answer(
    postgres: PostgresServer,
) -> None:
    """The notifying transaction on another host's pool, the ping on this host's listener."""
    url = postgres.new_schema()
    with PostgresStore(url) as here, PostgresStore(url) as there:
        listener = here.listen("svc_order_test")
        for number in range(1, 1_001):
            with there.transaction() as conn:
                there.notify(conn, "svc_order_test", str(number))
            assert listener.ping(number)
            assert listener.poll() == [str(number)]


def test_a_ping_on_a_closed_listener_is_not_answered(store: PostgresStore) -> None:
    listener = store.listen("svc_order_test")
    listener.close()
    assert listener.ping(1) is False
    assert listener.answered == 0


def txid(server: PostgresServer) -> int:
    import psycopg

    with psycopg.connect(server.url(), autocommit=True) as conn:
        row = conn.execute("SELECT txid_current()").fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def three(postgres: PostgresServer) -> Iterator[tuple[App, App, App]]:
    url = postgres.new_schema()
    hosts = (make_host(url), make_host(url), make_host(url))
    hosts[0].users.create("alice", "alice-pw", roles=("editor",))
    yield hosts
    for host in hosts:
        host.store.close()


def issue(app: App) -> str:
    user = app.users.get(1)
    assert user is not None
    return app.auth.log_in(user, remember=False, ip="ip", user_agent="ua", secure=False).value


def test_cookie_checks_on_three_hosts_consume_no_transaction_id(
    three: tuple[App, App, App], postgres: PostgresServer
) -> None:
    cookie = issue(three[0])
    for host in three:
        cache_on(host, cookie)
    # An automatic ANALYZE (of the tables earlier tests of the session wrote) would spend
    # ids of the cluster within the count: none runs while it is taken.
    with postgres.autovacuum_paused():
        before = txid(postgres)
        deadline = time.monotonic() + 1.5
        checks = 0
        while time.monotonic() < deadline:
            for host in three:
                assert host.auth.validate_cookie(cookie) is not None
                checks += 1
        # Read before the second measurement opens its connection (which may outlast a
        # lease).
        caches = [host.auth.session_cache for host in three]
        assert all(cache is not None and cache.trusted for cache in caches)
        after = txid(postgres)
    assert checks > 300
    # The second measurement takes one id itself; nothing else took any.
    assert after - before == 1


def test_a_revocation_on_one_of_three_hosts_applies_on_the_others(
    three: tuple[App, App, App],
) -> None:
    first, second, third = three
    cookie = issue(first)
    for host in three:
        cache_on(host, cookie)
    third.auth.sessions.destroy_all(1)
    assert [host.auth.validate_cookie(cookie) for host in three] == [None, None, None]
    cookie = issue(second)
    for host in three:
        cache_on(host, cookie)
    first.users.set_password(1, "new-pw")
    assert [host.auth.validate_cookie(cookie) for host in three] == [None, None, None]


def test_an_idle_process_keeps_its_listener_drained(
    three: tuple[App, App, App],
) -> None:
    first, second, _third = three
    cookie = issue(first)
    cache_on(second, cookie)
    cache = second.auth.session_cache
    assert isinstance(cache, SessionCache)
    listener: Any = second.store._listeners[0]  # type: ignore[attr-defined]
    cache._last_used = float("-inf")  # idle from now on: no look-up below
    generation = cache._generation
    for number in range(500):
        first.store.publish(CHANNEL, str(1000 + number))  # type: ignore[attr-defined]
    deadline = time.monotonic() + 10
    while cache._generation < generation + 500:
        assert time.monotonic() < deadline, "the idle listener was not drained"
        time.sleep(0.05)
    assert listener._received == []


def test_a_direct_and_a_relayed_listener_keep_their_state_alike() -> None:
    """Epoch, answered ping and closed: one :class:`ListenerState` for both kinds."""
    assert issubclass(PostgresListener, ListenerState)
    assert issubclass(RelayListener, ListenerState)
    state = ListenerState()
    assert (state.epoch, state.answered, state.closed) == (0, 0, False)
    state._received.append("7")
    state._answered = 3
    state._new_epoch()  # listening anew: what the epoch before held is gone
    assert (state.epoch, state.answered, state._received) == (1, 0, [])
