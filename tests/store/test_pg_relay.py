"""One listening connection per host: the processes of a host share it through the relay
of their run directory; when the relay's process dies another takes over, and a listener
without a relay is not listening (its session cache trusts nothing)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from svcrest.auth.session_cache import CHANNEL, SessionCache
from svcrest.store.base import StoreError
from svcrest.store.pg_listen import PostgresListener
from svcrest.store.pg_relay import RelayListener, relay_paths
from svcrest.store.postgres import PostgresStore
from tests.pg import PostgresServer

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture
def run_dir() -> Iterator[Path]:
    # Short: a unix socket's path is at most about 100 bytes.
    with tempfile.TemporaryDirectory(prefix="svr-", dir="/tmp") as name:
        yield Path(name)


def listening_connections(server: PostgresServer, database: str) -> int:
    """The listener connections to ``database`` (``application_name`` ``svcrest-listen``)."""
    import psycopg

    with psycopg.connect(server.url(), autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE application_name = 'svcrest-listen' AND datname = %s",
            (database,),
        ).fetchone()
    assert row is not None
    return int(row[0])


def database_of(url: str) -> str:
    return url.split("?")[0].rsplit("/", 1)[1]


def lock_holder(lock_path: str) -> int | None:
    """The pid holding the ``flock`` of ``lock_path`` (from /proc/locks), or None."""
    inode = os.stat(lock_path).st_ino
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields:
            continue  # a waiter, not a holder
        if fields[1] == "FLOCK" and fields[5].rsplit(":", 1)[1] == str(inode):
            return int(fields[4])
    return None


def eventually(check: Callable[[], Any], timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.02)


def receive(listener: Any, count: int, timeout: float = 5) -> list[str]:
    got: list[str] = []

    def enough() -> bool:
        got.extend(listener.poll() or [])
        return len(got) >= count

    eventually(enough, timeout)
    return got


def test_the_stores_of_a_host_share_one_listening_connection(
    postgres: PostgresServer, run_dir: Path, tmp_path: Path
) -> None:
    url = postgres.new_database()
    database = database_of(url)
    stores = [PostgresStore(url, run_dir=run_dir) for _ in range(4)]
    try:
        listeners = [store.listen(CHANNEL) for store in stores]
        assert all(isinstance(listener, RelayListener) for listener in listeners)
        assert [listener.epoch for listener in listeners] == [1, 1, 1, 1]
        assert listening_connections(postgres, database) == 1
        stores[3].publish(CHANNEL, "7")
        for listener in listeners:
            assert receive(listener, 1) == ["7"]
        # Another host (another run directory): a connection of its own.
        with PostgresStore(url, run_dir=tmp_path / "h2") as other:
            elsewhere = other.listen(CHANNEL)
            assert listening_connections(postgres, database) == 2
            stores[0].publish(CHANNEL, "8")
            assert receive(elsewhere, 1) == ["8"]
            assert receive(listeners[2], 1) == ["8"]
    finally:
        for store in stores:
            store.close()
    eventually(lambda: listening_connections(postgres, database) == 0, 5)


def test_channels_of_a_host_share_its_connection(postgres: PostgresServer, run_dir: Path) -> None:
    url = postgres.new_database()
    with PostgresStore(url, run_dir=run_dir) as store:
        auth = store.listen(CHANNEL)
        feed = store.listen("svc_changes_test")
        assert listening_connections(postgres, database_of(url)) == 1
        store.publish("svc_changes_test", "a")
        store.publish(CHANNEL, "1")
        assert receive(feed, 1) == ["a"]
        assert receive(auth, 1) == ["1"]
        assert feed.ping(5) and feed.answered == 5
        assert feed.poll() == [] and auth.poll() == []


def test_a_relayed_ping_answers_after_every_notification_committed_before_it(
    postgres: PostgresServer, run_dir: Path
) -> None:
    url = postgres.new_schema()
    with PostgresStore(url, run_dir=run_dir) as here, PostgresStore(url) as there:
        first = here.listen("svc_order_test")
        second = here.listen("svc_order_test")
        for number in range(1, 1_001):
            with there.transaction() as conn:
                there.notify(conn, "svc_order_test", str(number))
            listener = (first, second)[number % 2]
            assert listener.ping(number)
            assert listener.answered == number
            assert listener.poll() == [str(number)]
            # The other has it too, though maybe not yet read (its own socket).
            assert receive((first, second)[1 - number % 2], 1) == [str(number)]


def test_callbacks_get_each_batch_and_none_when_notifications_may_be_lost(
    postgres: PostgresServer, run_dir: Path
) -> None:
    url = postgres.new_schema()
    seen: list[list[str] | None] = []
    with PostgresStore(url, run_dir=run_dir) as store:
        listener = store.listen("svc_feed_test")
        listener.add_callback(seen.append)
        store.publish("svc_feed_test", "1")
        store.publish("svc_feed_test", "2")
        eventually(lambda: sum(len(batch or ()) for batch in seen) == 2, 5)
        assert [payload for batch in seen for payload in batch or ()] == ["1", "2"]
        assert None not in seen
        postgres.psql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name = 'svcrest-listen'"
        )
        eventually(lambda: None in seen, 5)
        eventually(lambda: listener.epoch == 2, 10)
        store.publish("svc_feed_test", "3")
        eventually(lambda: seen[-1] == ["3"], 5)


def test_a_direct_listener_calls_back_from_poll(postgres: PostgresServer) -> None:
    url = postgres.new_schema()
    seen: list[list[str] | None] = []
    with PostgresStore(url) as store:
        listener = PostgresListener(store._conninfo, "svc_feed_test")
        try:
            listener.add_callback(seen.append)
            assert listener.poll() == []
            assert seen == [None]  # the first epoch begins
            store.publish("svc_feed_test", "1")
            assert receive(listener, 1) == ["1"]
            assert seen == [None, ["1"]]
        finally:
            listener.close()
        assert listener.poll() is None
        assert seen == [None, ["1"], None]


def test_without_a_relay_a_listener_is_not_listening_until_it_becomes_one(
    postgres: PostgresServer, run_dir: Path
) -> None:
    """The lock held by a process that serves no socket (a relay starting, or hung): the
    listener's session cache trusts nothing; once the lock is free it takes over."""
    import fcntl

    url = postgres.new_schema()
    with PostgresStore(url, run_dir=run_dir) as store:
        _path, lock_path = relay_paths(run_dir, store._conninfo)
        holder = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(holder, fcntl.LOCK_EX)
        try:
            listener = RelayListener(
                store._conninfo, CHANNEL, _path, lock_path, connect_timeout=0.3
            )
            cache = SessionCache(listener, heartbeat_thread=False)
            assert (listener.epoch, listener.poll(), listener.ping(1)) == (0, None, False)
            assert cache.lookup(("alice", "token"))[1] == -1  # not listening: untrusted
            assert not cache.trusted
        finally:
            os.close(holder)  # releases the lock
        eventually(lambda: listener.epoch == 1, 5)
        assert cache.lookup(("alice", "token"))[1] >= 0  # listening now
        assert cache.send_heartbeat()
        cache.lookup(("alice", "token"))
        assert cache.trusted
        listener.close()
        assert listener.poll() is None


HOLDER = textwrap.dedent(
    """
    import sys, time
    from svcrest.store.postgres import PostgresStore
    store = PostgresStore(sys.argv[1], run_dir=sys.argv[2])
    store.listen("svcrest_auth")
    print("listening", flush=True)
    time.sleep(600)
    """
)


def test_when_the_relay_process_dies_another_process_takes_over(
    postgres: PostgresServer, run_dir: Path
) -> None:
    url = postgres.new_database()
    database = database_of(url)
    first = subprocess.Popen(
        [sys.executable, "-c", HOLDER, url, str(run_dir)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert first.stdout is not None
        assert first.stdout.readline() == "listening\n"
        with PostgresStore(url, run_dir=run_dir) as store:
            listener = store.listen(CHANNEL)
            assert isinstance(listener, RelayListener)
            _path, lock_path = relay_paths(run_dir, store._conninfo)
            assert lock_holder(lock_path) == first.pid
            assert listening_connections(postgres, database) == 1
            cache = SessionCache(listener, heartbeat_thread=False)
            assert cache.send_heartbeat()
            cache.lookup(("alice", "token"))
            assert cache.trusted
            store.publish(CHANNEL, "1")
            assert receive(listener, 1) == ["1"]
            os.kill(first.pid, signal.SIGKILL)
            first.wait()
            # From the relay's death until this process relays: untrusted, then a new epoch.
            eventually(lambda: listener.epoch == 2, 10)
            assert lock_holder(lock_path) == os.getpid()
            eventually(lambda: listening_connections(postgres, database) == 1, 10)
            assert cache.lookup(("alice", "token"))[0] is None
            assert not cache.trusted  # the old pings prove nothing in the new epoch
            store.publish(CHANNEL, "2")
            assert cache.send_heartbeat()
            assert listener.poll() == ["2"]
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
        if first.stdout is not None:
            first.stdout.close()


def test_a_run_directory_others_may_write_to_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    with pytest.raises(StoreError, match="no one else may write to"):
        relay_paths(shared, "dbname=site")
    private = tmp_path / "private"
    socket_path, lock_path = relay_paths(private, "dbname=site")
    assert private.stat().st_mode & 0o777 == 0o700
    assert socket_path.startswith(str(private / "listen-")) and socket_path.endswith(".sock")
    assert lock_path == socket_path[: -len(".sock")] + ".lock"
    assert relay_paths(private, "dbname=other")[0] != socket_path


def test_a_store_whose_run_directory_cannot_be_used_listens_on_its_own(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    url = postgres.new_schema()
    with PostgresStore(url, run_dir=shared) as store:
        listener = store.listen(CHANNEL)
        assert isinstance(listener, PostgresListener)
        store.publish(CHANNEL, "3")
        assert receive(listener, 1) == ["3"]


def test_a_listener_nobody_polls_holds_a_bounded_backlog(
    postgres: PostgresServer, run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the bound what it held is dropped and a new epoch begins (a session cache then
    forgets everything, as when notifications are lost)."""
    import svcrest.store.pg_relay as relay

    monkeypatch.setattr(relay, "_MAX_HELD", 3)
    url = postgres.new_schema()
    with PostgresStore(url, run_dir=run_dir) as store:
        listener = store.listen("svc_feed_test")
        assert listener.epoch == 1
        for number in range(5):
            store.publish("svc_feed_test", str(number))
        eventually(lambda: listener.epoch == 2, 5)
        assert listener.ping(1)  # every notification is in: nothing more is dropped
        assert (listener.epoch, listener.poll()) == (2, ["3", "4"])


def test_a_client_that_speaks_nonsense_is_dropped(postgres: PostgresServer, run_dir: Path) -> None:
    import socket

    url = postgres.new_schema()
    with PostgresStore(url, run_dir=run_dir) as store:
        listener = store.listen("svc_feed_test")
        path, _lock = relay_paths(run_dir, store._conninfo)
        with socket.socket(socket.AF_UNIX) as rogue:
            rogue.connect(path)
            rogue.sendall(b'["shout", 1]\n')
            rogue.settimeout(5)
            assert rogue.recv(100) == b""  # closed by the relay
        store.publish("svc_feed_test", "1")
        assert listener.ping(1) and listener.poll() == ["1"]


def test_a_forked_child_does_not_keep_the_relays_lock(
    postgres: PostgresServer, run_dir: Path
) -> None:
    url = postgres.new_schema()
    store = PostgresStore(url, run_dir=run_dir)
    store.listen(CHANNEL)
    _path, lock_path = relay_paths(run_dir, store._conninfo)
    assert lock_holder(lock_path) == os.getpid()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child only waits
        time.sleep(10)
        os._exit(0)
    try:
        store.close()  # the relay stops: its lock is free though the child lives on
        eventually(lambda: lock_holder(lock_path) is None, 3)
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)


def test_the_relay_is_a_process_of_its_own_and_a_killed_one_is_started_again(
    postgres: PostgresServer, run_dir: Path
) -> None:
    """Its starter's threads never delay it (a CPU-bound worker's GIL); killed, the host's
    processes start another, with a new epoch."""
    import svcrest.store.pg_relay as relay

    url = postgres.new_database()
    database = database_of(url)
    with PostgresStore(url, run_dir=run_dir) as store, PostgresStore(url, run_dir=run_dir) as two:
        first, second = store.listen(CHANNEL), two.listen(CHANNEL)
        path, lock_path = relay_paths(run_dir, store._conninfo)
        started = relay._STARTED[path]
        assert started != os.getpid()
        assert lock_holder(lock_path) == os.getpid()  # it took the lock and handed it over
        assert listening_connections(postgres, database) == 1
        os.kill(started, signal.SIGKILL)
        eventually(lambda: first.epoch == 2 and second.epoch == 2, 10)
        again = relay._STARTED[path]
        assert again != started
        eventually(lambda: listening_connections(postgres, database) == 1, 10)
        store.publish(CHANNEL, "9")
        assert first.ping(1) and first.poll() == ["9"]
        assert second.ping(1) and second.poll() == ["9"]


# -- batches: a relayed notification does not wake the reading thread each time --------------


def holding(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """The relays started from now on hold their clients' notifications ``seconds``."""
    import svcrest.store.pg_relay_process as relay_process

    monkeypatch.setattr(relay_process, "HOLD", seconds)


def test_a_burst_reaches_poll_complete_in_a_few_reads(
    postgres: PostgresServer, run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """500 notifications committed a millisecond apart (as ~1,000 writes a second send
    them): the relay sends the first at once and then one batch a hold at most, so the
    listener reads them in at most one read a hold (and one more should the kernel split
    a batch), far fewer than 500 (one read each without the hold)."""
    hold = 0.25
    holding(monkeypatch, hold)
    url = postgres.new_schema()
    with PostgresStore(url, run_dir=run_dir) as store:
        listener = store.listen("svc_feed_test")
        assert isinstance(listener, RelayListener)
        before = listener._reads
        began = time.monotonic()
        for number in range(500):
            store.publish("svc_feed_test", str(number))
            time.sleep(0.001)
        got = receive(listener, 500)
        elapsed = time.monotonic() - began
        assert got == [str(number) for number in range(500)]  # none lost, none merged
        reads = listener._reads - before
        assert reads <= 2 + elapsed / hold
        assert reads <= 50
        store.publish("svc_feed_test", "after")
        assert receive(listener, 1) == ["after"]


def test_repeats_waiting_in_a_batch_are_merged_but_never_across_an_answer(
    postgres: PostgresServer, run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    holding(monkeypatch, 30.0)
    url = postgres.new_schema()
    with PostgresStore(url, run_dir=run_dir) as store:
        listener = store.listen("svc_feed_test")
        assert isinstance(listener, RelayListener)
        before = listener._reads
        for _ in range(500):
            store.publish("svc_feed_test", "post")
        store.publish("svc_feed_test", "page")
        # The first at once (a quiet spell before it); the 499 repeats held as one line,
        # sent with the ping's answer, which comes in the same read.
        assert listener.ping(1, timeout=2)
        assert listener.poll() == ["post", "post", "page"]
        assert listener._reads - before <= 3
        # A repeat after the answer is not merged into one sent before it.
        store.publish("svc_feed_test", "post")
        assert listener.ping(2, timeout=2)
        assert listener.poll() == ["post"]


def test_a_ping_during_a_hold_is_answered_with_what_was_held(
    postgres: PostgresServer, run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    holding(monkeypatch, 30.0)
    url = postgres.new_schema()
    with PostgresStore(url, run_dir=run_dir) as store:
        listener = store.listen(CHANNEL)
        store.publish(CHANNEL, "1")
        assert receive(listener, 1) == ["1"]  # at once: the first after a quiet spell
        store.publish(CHANNEL, "2")
        time.sleep(0.2)
        assert listener.poll() == []  # held: its batch is due in 30 s
        assert listener.ping(1, timeout=2)  # long before that
        assert listener.poll() == ["2"]


def test_a_single_notification_after_a_quiet_spell_is_read_at_once(
    postgres: PostgresServer, run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    holding(monkeypatch, 30.0)
    url = postgres.new_schema()
    with PostgresStore(url, run_dir=run_dir) as store:
        listener = store.listen("svc_feed_test")
        store.publish("svc_feed_test", "lone")
        assert receive(listener, 1, timeout=2) == ["lone"]


def test_closing_a_listener_during_a_hold_returns_at_once(
    postgres: PostgresServer, run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    holding(monkeypatch, 30.0)
    url = postgres.new_schema()
    with PostgresStore(url, run_dir=run_dir) as store:
        listener = store.listen("svc_feed_test")
        assert isinstance(listener, RelayListener)
        store.publish("svc_feed_test", "1")
        assert receive(listener, 1) == ["1"]
        store.publish("svc_feed_test", "2")  # held
        began = time.monotonic()
        listener.close()
        assert time.monotonic() - began < 2
        assert not listener._thread.is_alive()
        assert listener.poll() is None


def test_a_hold_does_not_delay_down_nor_up(
    postgres: PostgresServer, run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The relay's connection killed while notifications are held: the client is told at
    once (not 30 s later), and listens anew with a new epoch."""
    holding(monkeypatch, 30.0)
    url = postgres.new_schema()
    with PostgresStore(url, run_dir=run_dir) as store:
        listener = store.listen("svc_feed_test")
        assert isinstance(listener, RelayListener)
        store.publish("svc_feed_test", "1")
        assert receive(listener, 1) == ["1"]
        store.publish("svc_feed_test", "2")  # held
        postgres.psql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name = 'svcrest-listen'"
        )
        eventually(lambda: listener.epoch == 2 and listener.listening, 5)
