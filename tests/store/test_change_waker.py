"""The change log's waker: one thread per store in a process however many readers wait;
a commit wakes the readers of its object type (and only them), on this host or another
(PostgreSQL: ``NOTIFY`` in the writing transaction; SQLite: the change mark); a rolled-back
write wakes nobody; and waiting readers cost PostgreSQL no transaction id while nobody
writes."""

from __future__ import annotations

import asyncio
import gc
import itertools
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from svcrest.store.base import Store
from svcrest.store.change_waker import (
    FAN_OUT_SHARE,
    LONGEST_HOLD,
    SLICE_TIME,
    WAKE_SLICE,
    ChangeWaker,
    change_waker,
    count_steps,
    wake_in_slices,
)
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


def busy(seconds: float) -> None:
    """Use the CPU for ``seconds`` (of this thread's CPU time)."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
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


def test_the_readers_work_after_a_wake_holds_the_next_wakes_back() -> None:
    store = SqliteStore(":memory:")
    ensure_change_log(store)
    try:
        waker = ChangeWaker(store, coalesce=0.05)  # a twenty-fifth of the loop's time at most
        assert waker.share == FAN_OUT_SHARE == 0.04
        assert waker.hold("note") == 0.05
        waker._wake({"note"})  # as the thread does when it sees a commit
        woken = waker._woken_at["note"]
        waker.spent("note", 0.02)  # the readers' first steps
        waker.spent("note", 0.01)  # their chunks and sends after the shared read
        assert waker.hold("note") == pytest.approx(0.75)
        assert waker.hold("task") == 0.05  # another type's readers: their own work
        waker._wake({"note"})  # a commit soon after: held back
        assert waker.token("note") == 1
        waker._wake_due(woken + 0.1)  # past the coalescing interval, not past the hold
        assert waker.token("note") == 1
        waker._wake_due(woken + 0.74)
        assert waker.token("note") == 1
        waker._wake_due(woken + 0.76)
        assert waker.token("note") == 2
        assert waker.hold("note") == 0.05  # a new wake: its readers' work counted anew
        waker.spent("note", 60.0)
        assert waker.hold("note") == LONGEST_HOLD == 1.0
    finally:
        store.close()


def test_work_reported_after_a_wake_was_held_back_holds_it_longer() -> None:
    store = SqliteStore(":memory:")
    ensure_change_log(store)
    try:
        waker = ChangeWaker(store, coalesce=0.05)
        waker._wake({"note"})
        woken = waker._woken_at["note"]
        waker._wake({"note"})  # held back to the coalescing interval: no work reported yet
        waker.spent("note", 0.02)  # the readers' work comes in meanwhile
        waker._wake_due(woken + 0.06)
        assert waker.token("note") == 1
        waker._wake_due(woken + 0.49)
        assert waker.token("note") == 1
        waker._wake_due(woken + 0.51)
        assert waker.token("note") == 2
    finally:
        store.close()


def test_without_coalescing_no_work_holds_a_wake_back() -> None:
    store = SqliteStore(":memory:")
    ensure_change_log(store)
    try:
        waker = ChangeWaker(store, coalesce=0.0)
        waker._wake({"note"})
        waker.spent("note", 0.5)
        waker._wake({"note"})
        assert waker.token("note") == 2
    finally:
        store.close()


def test_a_wake_counts_the_time_its_readers_take_on_their_loop() -> None:
    store = SqliteStore(":memory:")
    ensure_change_log(store)
    waker = ChangeWaker(store, coalesce=0.05)

    async def reader(token: int) -> None:
        await waker.wait("note", token, 5)
        busy(0.01)  # its work after the wake, on the loop

    async def check() -> None:
        while waker.wakes == 0:  # the thread's first look wakes everyone: not counted here
            await waker.wait("note", waker.token("note"), 0.05)
        waker._spent.clear()
        token = waker.token("note")
        readers = [asyncio.ensure_future(reader(token)) for _ in range(5)]
        while waker.waiters < 5:
            await asyncio.sleep(0.01)
        waker._wake({"note"})
        await asyncio.gather(*readers)
        await asyncio.sleep(0.05)  # (the count comes after the last reader's step)

    try:
        asyncio.run(check())
        assert 0.05 <= waker._spent["note"] < 1.0
        assert waker.hold("note") >= 1.0
    finally:
        store.close()


def test_the_steps_counted_are_those_of_the_tasks_woken_not_work_queued_before() -> None:
    counted: list[float] = []

    async def check() -> None:
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[None]] = [loop.create_future() for _ in range(3)]

        async def reader(future: asyncio.Future[None]) -> None:
            await future
            busy(0.02)  # its step after the wake

        readers = [asyncio.ensure_future(reader(future)) for future in futures]
        await asyncio.sleep(0)  # each waits
        loop.call_soon(busy, 0.1)  # other work, scheduled before the wake

        def wake() -> None:
            for future in futures:
                future.set_result(None)

        count_steps(wake, counted.append)
        await asyncio.gather(*readers)
        await asyncio.sleep(0.01)

    asyncio.run(check())
    assert len(counted) == 1
    assert 0.06 <= counted[0] < 0.15


def test_the_wake_itself_counts_with_the_steps_of_the_tasks_it_wakes() -> None:
    counted: list[float] = []

    async def check() -> None:
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[None]] = [loop.create_future() for _ in range(2)]

        async def reader(future: asyncio.Future[None]) -> None:
            await future
            busy(0.02)  # its step after the wake

        readers = [asyncio.ensure_future(reader(future)) for future in futures]
        await asyncio.sleep(0)  # each waits

        def wake() -> None:  # resolving a thousand futures takes time of its own
            busy(0.1)
            for future in futures:
                future.set_result(None)

        count_steps(wake, counted.append)
        await asyncio.gather(*readers)
        await asyncio.sleep(0.01)

    asyncio.run(check())
    assert len(counted) == 1
    assert 0.14 <= counted[0] < 0.25


def test_the_time_the_readers_loop_waited_for_a_core_does_not_count_as_its_time() -> None:
    store = SqliteStore(":memory:")
    ensure_change_log(store)
    queued = [3.0]  # seconds the loop's thread has waited for a core so far
    try:
        waker = ChangeWaker(store, coalesce=0.05, waited=lambda: queued[0])
        waker._wake({"note"})
        woken = waker._woken_at["note"]
        waker.spent("note", 0.01)  # a twenty-fifth: 0.25 s of the loop's own time
        waker._wake({"note"})  # a commit soon after: held back
        queued[0] += 0.3  # a busy machine kept the loop off its core that long meanwhile
        waker._wake_due(woken + 0.26)  # past the work's twenty-fifth of the wall time
        assert waker.token("note") == 1
        waker._wake_due(woken + 0.54)
        assert waker.token("note") == 1
        waker._wake_due(woken + 0.56)  # 0.25 s of the loop's own time and 0.3 s waited
        assert waker.token("note") == 2
        queued[0] += 60.0  # never longer than the longest hold
        waker.spent("note", 0.01)
        waker._wake({"note"})
        waker._wake_due(woken + 0.56 + LONGEST_HOLD)
        assert waker.token("note") == 3
    finally:
        store.close()


def test_a_wait_for_a_core_holds_back_no_wake_without_work() -> None:
    store = SqliteStore(":memory:")
    ensure_change_log(store)
    queued = [0.0]
    try:
        waker = ChangeWaker(store, coalesce=0.05, waited=lambda: queued[0])
        waker._wake({"note"})
        woken = waker._woken_at["note"]
        waker._wake({"note"})
        queued[0] += 0.5  # no work reported: the coalescing interval alone holds it
        waker._wake_due(woken + 0.06)
        assert waker.token("note") == 2
    finally:
        store.close()


def test_the_waker_reads_how_long_its_readers_loop_waited_for_a_core() -> None:
    store = SqliteStore(":memory:")
    ensure_change_log(store)
    waker = ChangeWaker(store, coalesce=0.05)
    schedstat = Path(f"/proc/self/task/{threading.get_native_id()}/schedstat")

    async def main() -> tuple[float, float, float]:
        assert waker.queued() == 0.0  # no reader waited yet: no loop known
        await waker.wait("note", waker.token("note"), 0.01)
        direct = int(schedstat.read_text().split()[1]) / 1e9 if schedstat.exists() else 0.0
        # Read by another thread (the waker's does): still this loop's thread's figure.
        queued = await asyncio.to_thread(waker.queued)
        return direct, queued, await asyncio.to_thread(waker.queued)

    try:
        direct, queued, again = asyncio.run(main())
        if schedstat.exists():  # Linux: the thread's wait on a run queue, in nanoseconds
            assert direct <= queued <= again < direct + 1.0
        else:
            assert queued == again == 0.0
    finally:
        store.close()


# -- the waits' deadlines: one timer per event loop ----------------------------------------------


def _loops() -> list[str]:
    return ["asyncio", "uvloop"]


def _run(kind: str, main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    if kind == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main())
    else:
        asyncio.run(main())


@pytest.mark.parametrize("kind", _loops())
def test_each_wait_ends_at_its_own_deadline(kind: str) -> None:
    store = SqliteStore(":memory:")
    ensure_change_log(store)
    waker = ChangeWaker(store)
    ended: dict[float, tuple[bool, float, float]] = {}

    async def reader(timeout: float) -> None:
        loop = asyncio.get_running_loop()
        began = loop.time()
        timed = await waker.wait("note", waker.token("note"), timeout)
        ended[timeout] = (timed, loop.time(), began + timeout)

    async def check() -> None:
        while waker.wakes == 0:  # the thread's first look wakes everyone
            await waker.wait("note", waker.token("note"), 0.05)
        # Each its own deadline, the latest first: the shared timer moves to the earliest.
        await asyncio.gather(*(reader(timeout) for timeout in (0.3, 0.2, 0.1, 0.25, 0.15)))

    try:
        _run(kind, check)
        order = sorted(ended, key=lambda timeout: ended[timeout][1])
        assert order == [0.1, 0.15, 0.2, 0.25, 0.3]
        for timeout, (timed, at, deadline) in ended.items():
            assert timed is False, timeout  # timed out, not woken
            assert deadline - 1e-6 <= at < deadline + 0.04, timeout  # never early
        assert waker.waiters == 0
        assert waker._deadlines == {}  # nobody waits: the loop's deadlines are gone
    finally:
        store.close()


def test_one_timer_a_loop_however_many_readers_wait() -> None:
    store = SqliteStore(":memory:")
    ensure_change_log(store)
    waker = ChangeWaker(store)
    timers: list[asyncio.TimerHandle] = []
    readers = 1000

    def live() -> int:
        return sum(not timer.cancelled() for timer in timers)

    async def reader(number: int, rounds: int) -> int:
        woken = 0
        for _ in range(rounds):
            woken += await waker.wait("note", waker.token("note"), 30 + number / readers)
        return woken

    async def check() -> None:
        while waker.wakes == 0:  # the thread's first look wakes everyone
            await waker.wait("note", waker.token("note"), 0.05)
        loop = asyncio.get_running_loop()
        call_at = loop.call_at

        def counted(when: float, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
            timer = call_at(when, *args, **kwargs)
            if getattr(args[0], "__name__", "") != "_set_result_unless_cancelled":
                timers.append(timer)  # not the test's own sleeps
            return timer

        loop.call_at = counted  # type: ignore[method-assign,assignment]  # (call_later calls it too)
        tasks = [asyncio.ensure_future(reader(number, 3)) for number in range(readers)]
        for woken in range(3):
            while waker.waiters < readers:
                await asyncio.sleep(0.01)
            assert live() == 1  # one timer for all of them
            assert len(timers) <= woken + 1  # later deadlines than the first: no new timer
            waker._wake({"note"})
            while waker.waiters and waker.token("note") == woken:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)
        assert await asyncio.gather(*tasks) == [3] * readers
        assert live() == 0  # nobody waits: the timer is cancelled

    try:
        asyncio.run(check())
    finally:
        store.close()


def test_a_reader_that_leaves_leaves_the_loops_deadlines() -> None:
    store = SqliteStore(":memory:")
    ensure_change_log(store)
    waker = ChangeWaker(store)

    async def check() -> None:
        while waker.wakes == 0:  # the thread's first look wakes everyone
            await waker.wait("note", waker.token("note"), 0.05)
        loop = asyncio.get_running_loop()
        token = waker.token("note")
        tasks = [asyncio.ensure_future(waker.wait("note", token, 5 + n)) for n in range(3)]
        await asyncio.sleep(0.01)
        deadlines = waker._deadlines[loop]
        assert deadlines.live == 3
        tasks[0].cancel()  # the reader with the earliest deadline leaves
        await asyncio.sleep(0.01)
        assert tasks[0].cancelled()
        assert (waker.waiters, deadlines.live) == (2, 2)
        # Its future is no longer held (the shared timer holds no reader).
        assert sum(entry[2] is not None for entry in deadlines._heap) == 2
        for task in tasks[1:]:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert (waker.waiters, deadlines.live) == (0, 0)
        assert loop not in waker._deadlines
        assert deadlines._timer is None

    try:
        asyncio.run(check())
    finally:
        store.close()


def test_the_deadlines_of_woken_readers_do_not_pile_up() -> None:
    store = SqliteStore(":memory:")
    ensure_change_log(store)
    waker = ChangeWaker(store)
    readers = 200
    heaps: list[int] = []

    async def reader() -> None:
        for _ in range(20):
            await waker.wait("note", waker.token("note"), 30)

    async def check() -> None:
        while waker.wakes == 0:
            await waker.wait("note", waker.token("note"), 0.05)
        loop = asyncio.get_running_loop()
        tasks = [asyncio.ensure_future(reader()) for _ in range(readers)]
        for woken in range(20):
            while waker.waiters < readers:
                await asyncio.sleep(0.005)
            heaps.append(len(waker._deadlines[loop]._heap))
            waker._wake({"note"})
            while waker.token("note") == woken:
                await asyncio.sleep(0.005)
            await asyncio.sleep(0.01)
        await asyncio.gather(*tasks)

    try:
        asyncio.run(check())
        # Each wake's readers wait again with a later deadline than the timer's; the
        # deadlines of the woken are dropped in bulk, not kept until their time.
        assert max(heaps) <= 2 * readers + 64
    finally:
        store.close()


# -- a wake of many readers, a slice at a time ---------------------------------------------------


@pytest.mark.parametrize("kind", _loops())
def test_a_wake_of_many_readers_lets_other_callbacks_run_between_its_slices(kind: str) -> None:
    log: list[object] = []
    counted: list[float] = []
    readers = 3 * WAKE_SLICE + 10

    async def reader(number: int, future: asyncio.Future[bool]) -> None:
        assert await future is True
        log.append(number)

    async def check() -> None:
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in range(readers)]
        tasks = [asyncio.ensure_future(reader(n, f)) for n, f in enumerate(futures)]
        await asyncio.sleep(0)  # every reader awaits its future
        futures[1].cancel()  # one left meanwhile: skipped
        wake_in_slices(futures, True, counted.append)
        loop.call_soon(log.append, "other")  # e.g. a request's data read by the loop
        await asyncio.gather(*tasks, return_exceptions=True)

    _run(kind, check)
    # The first slice's readers, then what was queued after the wake, then the rest.
    assert log.index("other") == WAKE_SLICE - 1
    assert [entry for entry in log if entry != "other"] == [n for n in range(readers) if n != 1]
    assert len(counted) == 4  # each slice's wake and steps counted
    assert all(seconds >= 0 for seconds in counted)


def _burn(seconds: float) -> None:
    """Keep this thread's CPU busy for ``seconds``."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


@pytest.mark.parametrize("kind", _loops())
def test_the_slices_of_a_wake_of_costly_readers_hold_the_loop_a_millisecond(kind: str) -> None:
    # Each reader's step costs 0.2 ms of CPU (a stream's chunk and its send on a server):
    # after the first slice, a slice holds as many readers as fit in SLICE_TIME (1 ms):
    # 5, so what the loop has to do meanwhile (a request's data, a write's end) waits for
    # at most ~1 ms of them.
    step = 0.0002
    readers = 3 * WAKE_SLICE
    log: list[int] = []
    turns: list[int] = []
    pace = [WAKE_SLICE]

    async def reader(number: int, future: asyncio.Future[bool]) -> None:
        assert await future is True
        _burn(step)
        log.append(number)

    async def check() -> None:
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in range(readers)]
        tasks = [asyncio.ensure_future(reader(n, f)) for n, f in enumerate(futures)]
        await asyncio.sleep(0)  # every reader awaits its future

        def poll() -> None:  # once a turn of the loop, as the loop polls its sockets
            turns.append(len(log))
            if len(log) < readers:
                loop.call_soon(poll)

        wake_in_slices(futures, True, lambda seconds: None, pace=pace)
        loop.call_soon(poll)
        await asyncio.gather(*tasks)

    _run(kind, check)
    assert log == list(range(readers))  # every reader woken, once, in order
    between = [after - before for before, after in itertools.pairwise(turns)]
    fit = round(SLICE_TIME / step)
    assert turns[0] == WAKE_SLICE  # the first slice: the size the last wake ended with
    assert all(1 <= count <= fit + 1 for count in between), (turns, between)
    assert fit - 1 <= pace[0] <= fit + 1  # the next wake's first slice


def test_a_wake_of_more_readers_than_a_slice_wakes_them_all() -> None:
    store = SqliteStore(":memory:")
    ensure_change_log(store)
    waker = ChangeWaker(store, coalesce=0.05)
    readers = 2 * WAKE_SLICE + 1

    async def check() -> list[bool]:
        while waker.wakes == 0:  # the thread's first look wakes everyone
            await waker.wait("note", waker.token("note"), 0.05)
        waker._spent.clear()
        token = waker.token("note")
        tasks = [asyncio.ensure_future(waker.wait("note", token, 5)) for _ in range(readers)]
        while waker.waiters < readers:
            await asyncio.sleep(0.01)
        began = time.monotonic()
        waker._wake({"note"})
        woken = await asyncio.gather(*tasks)
        assert time.monotonic() - began < 1.0
        await asyncio.sleep(0.05)  # (the last slice's count comes after its steps)
        return woken

    try:
        assert asyncio.run(check()) == [True] * readers
        assert "note" in waker._spent  # the slices' steps counted
        assert waker.waiters == 0
    finally:
        store.close()


class Ahead:
    """A reader ahead of a waker's wakes: what it was told, on which thread, and whether
    the reader it reads for was woken already."""

    def __init__(self, waker: ChangeWaker, fail: bool = False) -> None:
        self.waker = waker
        self.fail = fail
        self.seen: list[tuple[int, bool, bool]] = []
        self.reader: asyncio.Future[bool] | None = None

    def read(self, token: int) -> None:
        reader = self.reader
        on_thread = threading.current_thread() is self.waker._thread
        self.seen.append((token, on_thread, reader is not None and reader.done()))
        if self.fail:
            raise RuntimeError("the store went away")


@pytest.mark.parametrize("fail", [False, True])
def test_a_wake_reads_ahead_on_the_waker_thread_before_its_readers_are_told(
    two_stores: tuple[Store, Store], fail: bool, caplog: pytest.LogCaptureFixture
) -> None:
    here, there = two_stores
    waker = change_waker(here)
    ahead = Ahead(waker, fail)
    waker.read_ahead("note", ahead.read)

    async def check() -> None:
        warm = waker.token("note")
        await waker.wait("note", warm, 10)  # the first look wakes everyone (a relay may start)
        token = waker.token("note")
        reader = ahead.reader = asyncio.ensure_future(waker.wait("note", token, 5))
        await asyncio.sleep(0.1)
        ahead.seen.clear()
        await asyncio.to_thread(write, there, "note")
        assert await reader is True  # woken, the read ahead failing or not
        assert ahead.seen == [(token + 1, True, False)]

    asyncio.run(check())
    assert ("reading ahead of a wake: the store went away" in caplog.text) is fail


def test_a_read_ahead_is_held_weakly_and_never_from_another_thread() -> None:
    store = SqliteStore(":memory:")
    ensure_change_log(store)
    waker = ChangeWaker(store)
    waker._start = lambda: None  # type: ignore[method-assign]  # no thread: the test wakes
    kept, dropped = Ahead(waker), Ahead(waker)
    waker.read_ahead("note", kept.read)
    waker.read_ahead("note", dropped.read)
    seen = dropped.seen
    del dropped
    gc.collect()

    async def check() -> None:
        token = waker.token("note")
        reader = asyncio.ensure_future(waker.wait("note", token, 5))
        await asyncio.sleep(0.05)
        waker._wake({"note"})  # not the waker's thread: its readers read the log themselves
        assert await reader is True
        assert kept.seen == []
        waker._thread = threading.current_thread()  # as the thread does
        reader = asyncio.ensure_future(waker.wait("note", token + 1, 5))
        await asyncio.sleep(0.05)
        waker._wake({"note"})
        waker._thread = None
        assert await reader is True
        assert kept.seen == [(token + 2, True, False)]
        assert seen == []
        assert len(waker._ahead["note"]) == 2  # the dead one goes with the next one added
        waker.read_ahead("note", kept.read)
        assert len(waker._ahead["note"]) == 2

    asyncio.run(check())
    store.close()


def test_the_slices_of_a_wake_count_what_the_loop_ran_between_them() -> None:
    # A wake's stretch is its whole work: after the first slice, each one counts the loop's
    # CPU from the end of the slice before, so the work the loop does between two slices
    # (a socket's buffered bytes written, other requests let through) counts too.
    counted: list[float] = []
    readers = WAKE_SLICE + 1

    async def reader(future: asyncio.Future[bool]) -> None:
        await future

    async def check() -> None:
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in range(readers)]
        tasks = [asyncio.ensure_future(reader(future)) for future in futures]
        await asyncio.sleep(0)
        wake_in_slices(futures, True, counted.append)
        loop.call_soon(busy, 0.05)  # between the first slice and the second
        await asyncio.gather(*tasks)
        await asyncio.sleep(0.01)

    asyncio.run(check())
    assert len(counted) == 2
    assert counted[0] < 0.02  # the first slice's readers: nothing of their own
    assert 0.05 <= counted[1] < 0.1  # the stretch between the slices and the last one
