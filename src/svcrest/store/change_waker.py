"""Waking the readers of the change log when a change is committed, on any host.

The rule: one :class:`ChangeWaker` per store in a process (:func:`change_waker`), with one
thread, however many readers wait (long-polls and streams of every collection). A reader
takes a :meth:`~ChangeWaker.token` of its object type *before* it reads the log, then
:meth:`~ChangeWaker.wait`\\ s with it: the wait returns at once when a change of that type
may have been committed since the token was taken, else when one is, else at its time-out.
A wake that finds nothing new costs the reader one read of the log; a change is never missed
(every source below wakes everyone whenever it may have lost track).

- PostgreSQL: :func:`~svcrest.store.changes.record_change` sends ``NOTIFY svcrest_changes,
  '<object type>'`` in the writing transaction, so a rolled-back write notifies nobody. The
  waker listens on that channel through the store's listener (:meth:`listen`, opened by its
  thread when the first reader waits) and reads it without a round trip: no statement and no
  transaction id while nobody writes. While the listener is not listening (its connection
  broke) the waker wakes everyone every ``fallback`` seconds; when it listens anew (a new
  epoch: notifications may have been lost), everyone once.
- SQLite: the store's change mark (:class:`~svcrest.store.base.ChangeMarkingStore`, the
  wal-index header or ``PRAGMA data_version``) moves with any commit of any process; when it
  moved, one query names the object types with changes past the last one seen.
- Any other store: everyone every ``fallback`` seconds.

The thread looks every ``interval`` seconds while someone waits (PERF: a non-blocking read of
the listener's socket, or a read of the wal-index header: microseconds); while nobody does,
it drains a PostgreSQL listener once a second (SECURITY: an unread listener holds back the
server's notification queue) and otherwise ends, to start again with the next reader.
Readers on any event loop (an ASGI server's, a WSGI thread's own) are woken with one
``call_soon_threadsafe`` per loop, a slice of them a turn of the loop, as many as the last
slice's steps say fit in :data:`SLICE_TIME` of its CPU (at most :data:`WAKE_SLICE`: the
requests it serves meanwhile are not held up by a thousand streams' steps); their time-outs
share one timer per loop.

Coalescing: while changes of an object type keep coming, its readers are woken at most once
every ``coalesce`` seconds (change feeds set it, :data:`COALESCE` by default), so that each
wake carries every change committed since the last one; the first change after a quieter
spell (no wake of its type in the last ``coalesce`` seconds) wakes them at once. A change is
never held back longer than ``coalesce`` seconds after the previous wake (and the thread's
next look), unless the readers' work on a wake is long: the feeds report how long their
readers of a type kept their event loop busy after its last wake (:meth:`ChangeWaker.spent`),
and while changes keep coming the next wake waits until that work is at most ``share``
(:data:`FAN_OUT_SHARE`, a twenty-fifth) of the time since the last wake, and at most
:data:`LONGEST_HOLD` seconds (the work is the CPU time of the loop's thread, from a wake's
first reader's step to its last one's, what the loop ran between two slices included: the
bytes of the readers' sends it writes as their sockets take them, and the other requests'
turns the slices let through). A handful of readers never reach it; a thousand streams on
one worker do, and are then woken less often, each wake carrying more changes: the writes
served by the same worker keep the rest of its time. The loop's time is the wall time less
the time its thread waited for a core (Linux: the thread's ``schedstat``): on a busy
machine, where the worker gets a fraction of a core, the wakes' work stays that share of
what the worker gets, not of the wall clock.

PERF: a wake's work is counted as its whole stretch, not as its slices' steps alone: on the
writing worker of bench/feed_latency.py with 1,000 streams under sustained writes, 52-141 ms
a wake counted with the steps alone, 74-108 ms with the stretches between the slices (the
loop's thread ~0.3 s of CPU a second either way). Both are past the twenty-fifth of
:data:`LONGEST_HOLD`: those streams wake once a second in both counts (the waker's own
wakes, a second apart; the subscribers' bursts of bytes, 1.2-1.4 a second, split a wake's
send in two now and then).
"""

from __future__ import annotations

import asyncio
import contextvars
import heapq
import logging
import math
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

from svcrest.store.base import ChangeMarkingStore, Listener, NotifyingStore, Store, StoreError
from svcrest.store.changes import CHANGES_CHANNEL

__all__ = [
    "CHANNEL",
    "FAN_OUT_SHARE",
    "LONGEST_HOLD",
    "SLICE_TIME",
    "WAKE_SLICE",
    "ChangeWaker",
    "change_waker",
    "count_steps",
    "wake_in_slices",
]

_log = logging.getLogger("svcrest.store")

#: The notification channel of the change log; a payload is an object type.
CHANNEL: Final = CHANGES_CHANNEL
#: Seconds between two looks of the thread while someone waits.
INTERVAL: Final = 0.02
#: Seconds between two wakes of everyone when changes cannot be told apart (no channel).
FALLBACK: Final = 0.25
#: The shortest time, in seconds, between two wakes of an object type's readers while its
#: changes keep coming, as change feeds set it by default (0: every change wakes them at
#: its look).
# PERF: 1,000 SSE streams on the writing worker cost ~7 µs each a wake; at 0.05 s a
# collection's streams wake at most 20 times a second however fast the writes come
# (bench/feed_latency.py, bench/idle_streams.py); latency p99 stays under 100 ms.
COALESCE: Final = 0.05
#: The most of an event loop's time that the wakes of one object type's readers may take
#: while its changes keep coming (the CPU time of the readers' steps after a wake, over the
#: time between two wakes).
# PERF: 1,000 SSE streams on the writing worker of bench/feed_latency.py (PostgreSQL) cost
# it 9.5 ms of CPU a write at a coalescing of 0.05 s; with their work held to a tenth of the
# loop's wall time, 2.4 ms. A small share of its CPU time leaves room for the work a wake
# costs outside its streams' steps (the waker's thread, timers, the pool's threads waiting
# for the interpreter lock). A twenty-fifth since each stream's step a wake costs less (one
# step, not two; its viewer key kept): 1,000 streams in process 14.0-18.4 -> 11.3-13.5 µs a
# stream a wake, the write to its event on the first stream p50 180-214 ms at a twentieth
# before, 184-193 ms at a twenty-fifth now (bench/idle_streams.py --uvloop).
FAN_OUT_SHARE: Final = 0.04
#: The longest, in seconds, a wake is held back for its readers' work.
LONGEST_HOLD: Final = 1.0
#: Seconds between two drains of an idle listener; seconds an idle thread without a
#: listener lives on.
_IDLE: Final = 1.0
_LINGER: Final = 5.0
#: The most object types whose wakes are counted apart (a payload comes from the database:
#: bounded); past it the counts are forgotten and everyone is woken.
_MAX_TYPES: Final = 1024

#: The most readers a wake resolves in one turn of their event loop.
# PERF: a wake of 1,000 streams ran their steps in one turn of their loop, in which no
# request's data was read nor answered: the loop's longest stretch of CPU between two
# turns of a 2 ms timer during a fan-out 12.9-15.3 ms, with slices of 64 4.1-4.5 ms
# (bench/idle_streams.py --uvloop, 1,000 streams, 400 writes 2 ms apart).
WAKE_SLICE: Final = 64
#: The CPU seconds of its readers' steps a slice of a wake aims at (the next slice's size
#: is worked out from the last one's steps).
# PERF: on a server a stream's step a wake also sends its chunk (uvicorn's send and a TCP
# write: ~60 µs in all, against ~12 µs in process), so 64 of them kept the loop from a
# request's data for ~4 ms; a POST's answer crosses the loop several times (its body
# read, its write's end from the blocking pool, its answer sent). 1,000 streams in process
# with a send of 46 µs: the loop's longest stretch 20.8-23.8 ms with slices of 64, 11.9-14.4
# sized (bench/idle_streams.py --posters 4 --post-pause 4 --send-cost 46).
SLICE_TIME: Final = 0.001

_Futures = dict[asyncio.AbstractEventLoop, set["asyncio.Future[bool]"]]
_T = TypeVar("_T")


def _resolve(
    futures: list[asyncio.Future[bool]], spent: Callable[[float], None], pace: list[int]
) -> None:
    """On the futures' loop: wake each one still waiting; ``spent`` is told how long the
    readers woken took until each waited again (``pace``: see :func:`wake_in_slices`)."""
    wake_in_slices(futures, True, spent, pace=pace)


def wake_in_slices(
    futures: Sequence[asyncio.Future[_T]],
    result: _T,
    spent: Callable[[float], None],
    start: int = 0,
    *,
    pace: list[int] | None = None,
) -> None:
    """On the futures' event loop: resolve those of ``futures`` not done yet with
    ``result``, a slice at a time from ``start``: the next slice is resolved once the
    steps of the tasks the last one woke have run, so that what the loop queued meanwhile
    (the data of other requests read off their sockets) runs between two slices. The
    first slice is :data:`WAKE_SLICE` readers (or ``pace[0]``: the size the last wake
    ended with, which this one updates), each next one as many as the last one's steps
    say fit in :data:`SLICE_TIME` of the loop (at least one, at most :data:`WAKE_SLICE`).

    ``spent`` is told the CPU time of the loop's thread each slice took: the first one's
    wake and steps (:func:`count_steps`), each next one's from the end of the slice before
    to its own end. So the wake's whole stretch is counted, from its first reader's step to
    its last one's, what the loop ran between two slices included: the bytes of the
    readers' sends that the loop writes as their sockets take them, and the turns of other
    requests that the slices let through (PERF: see the module's docstring)."""
    size = WAKE_SLICE if pace is None else pace[0]
    _wake_slice(futures, result, spent, start, size, pace, None)


def _wake_slice(
    futures: Sequence[asyncio.Future[_T]],
    result: _T,
    spent: Callable[[float], None],
    start: int,
    size: int,
    pace: list[int] | None,
    since: float | None,
) -> None:
    """Resolve ``futures[start:start + size]`` and count their steps; ``since``: the loop
    thread's CPU clock at the end of the slice before (None: the first)."""
    end = start + size
    took = [0.0, 0.0]  # the slice's wake and steps (CPU seconds), the clock at their end

    def counted(seconds: float) -> None:
        now = time.thread_time()
        took[0], took[1] = seconds, now
        spent(seconds if since is None else max(seconds, now - since))

    count_steps(lambda: _resolve_each(futures, result, start, end), counted)
    if end < len(futures):
        asyncio.get_running_loop().call_soon(
            _next_slice, futures, result, spent, end, size, took, pace
        )


def _next_slice(
    futures: Sequence[asyncio.Future[_T]],
    result: _T,
    spent: Callable[[float], None],
    start: int,
    size: int,
    took: list[float],
    pace: list[int] | None,
) -> None:
    """The last slice's steps ran (``took``: their CPU time and the clock at their end,
    counted just before this call): the next slice, sized by its steps alone."""
    if took[0] > 0:
        size = max(1, min(WAKE_SLICE, int(size * SLICE_TIME / took[0])))
        if pace is not None:
            pace[0] = size
    _wake_slice(futures, result, spent, start, size, pace, took[1])


def _resolve_each(futures: Sequence[asyncio.Future[_T]], result: _T, start: int, end: int) -> None:
    for future in futures[start:end]:
        if not future.done():
            future.set_result(result)


class _Span:
    """The CPU time of the loop's thread from :meth:`begin` to :meth:`end`, plus
    :attr:`woke` (the wake's own call), told to ``spent`` (not the time the process waited
    for a core on a busy machine)."""

    __slots__ = ("spent", "started", "woke")

    def __init__(self, spent: Callable[[float], None]) -> None:
        self.spent = spent
        self.started = 0.0
        self.woke = 0.0

    def begin(self) -> None:
        self.started = time.thread_time()

    def end(self) -> None:
        self.spent(time.thread_time() - self.started + self.woke)


def count_steps(wake: Callable[[], None], spent: Callable[[float], None]) -> None:
    """On the running event loop: call ``wake``, which resolves futures (scheduling the
    next steps of the tasks awaiting them), and tell ``spent`` the CPU seconds ``wake``
    and those steps take, the steps from just before the first to just after the last (a
    loop runs its callbacks in the order they were scheduled: one scheduled before
    ``wake`` and one after enclose them; a task's step runs until it awaits something not
    ready)."""
    loop = asyncio.get_running_loop()
    span = _Span(spent)
    loop.call_soon(span.begin)
    began = time.thread_time()
    wake()
    # PERF: resolving a thousand futures (and scheduling their tasks' steps) is part of
    # the wake's work: ~1 ms of the loop's thread a wake of 1,000 streams, a tenth of
    # their steps' time that was not held to the share (bench/idle_streams.py).
    span.woke = time.thread_time() - began
    loop.call_soon(span.end)


class _RunQueue:
    """The seconds a thread of this process has waited for a core so far (Linux: the
    second field of its ``schedstat``, in nanoseconds; 0.0 where there is none). The file
    stays open while the thread is the same (PERF: a ``pread``, ~2 µs)."""

    __slots__ = ("_fd", "_tid")

    def __init__(self) -> None:
        self._tid = 0
        self._fd = -1

    def __call__(self, tid: int) -> float:
        if tid != self._tid:
            self.close()
            self._tid = tid
            try:
                self._fd = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY)
            except OSError:  # not Linux, or no scheduler statistics: no wait counted
                self._fd = -1
        if self._fd < 0:
            return 0.0
        try:
            return int(os.pread(self._fd, 128, 0).split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            return 0.0

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        self.close()


#: How many deadlines of readers no longer waiting a loop's heap keeps at most beyond twice
#: its waiting readers' (then it is rebuilt without them).
_SLACK: Final = 64


class _Deadlines:
    """The deadlines of the readers waiting on one event loop: a heap of ``[when, number,
    future]`` and one timer, at the earliest. A reader woken (or gone) before its deadline
    leaves its entry empty (its future no longer held); the timer resolves the futures
    whose deadline came with False and moves to the next. Used on its loop's thread only.

    PERF: a timer of its own per waiting reader was made and cancelled again by every wake
    (1,000 streams woken a few times a second on the writing worker); here a wait costs a
    push on a heap and its end clearing one field, and the timer moves only when a reader
    waits with an earlier deadline than the earliest (a stream's next wait is later than
    the others': rarely). A wake and the next wait of 1,000 readers: 4.2-4.8 µs a reader
    on uvloop against 5.6-6.1 with a timer each (asyncio's loop: 5.1-5.3 against 6.6-7.3);
    13.8 KiB of Python heap an idle stream on uvloop against 14.1 (bench/idle_streams.py)."""

    __slots__ = ("_armed", "_context", "_heap", "_loop", "_number", "_timer", "live", "thread")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        #: The native id of the thread running the loop (PERF: a system call each time it
        #: is asked, ~0.2 µs: asked once a loop, not once a wait).
        self.thread = threading.get_native_id()
        self._heap: list[list[Any]] = []
        self._timer: asyncio.TimerHandle | None = None
        #: When the timer fires (infinity: none).
        self._armed = math.inf
        self._number = 0
        # The timer runs in a context of its own, not the first reader's (a request's).
        self._context = contextvars.Context()
        #: How many readers wait.
        self.live = 0

    def add(self, when: float, future: asyncio.Future[bool]) -> list[Any]:
        """Resolve ``future`` with False at ``when`` (the loop's time) unless it is done
        or :meth:`drop`\\ ped first; the entry to drop."""
        self._number += 1
        entry = [when, self._number, future]
        heapq.heappush(self._heap, entry)
        self.live += 1
        if when < self._armed:
            self._arm(when)
        return entry

    def drop(self, entry: list[Any]) -> bool:
        """The reader of ``entry`` no longer waits; whether nobody waits any more (the
        timer is cancelled)."""
        if entry[2] is None:
            return self.live == 0
        entry[2] = None
        self.live -= 1
        heap = self._heap
        if self.live == 0:
            heap.clear()
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._armed = math.inf
            return True
        if len(heap) > 2 * self.live + _SLACK:  # the woken readers' entries, dropped in bulk
            heap[:] = [kept for kept in heap if kept[2] is not None]
            heapq.heapify(heap)
        return False

    def _arm(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._armed = when
        self._timer = self._loop.call_at(when, self._fire, context=self._context)

    def _fire(self) -> None:
        """The earliest deadline came: resolve the futures whose deadline came, with
        False, and move the timer to the next deadline."""
        self._timer = None
        # (A loop may run a timer up to its clock's resolution early: its own time.)
        limit = max(self._armed, self._loop.time())
        self._armed = math.inf
        heap = self._heap
        while heap and (heap[0][2] is None or heap[0][0] <= limit):
            entry = heapq.heappop(heap)
            future = entry[2]
            if future is not None:
                entry[2] = None
                self.live -= 1
                if not future.done():
                    future.set_result(False)
        if heap:
            self._arm(heap[0][0])


class ChangeWaker:
    """Wakes the readers of ``store``'s change log; see the module docstring. ``interval``
    and ``fallback``: seconds (tests shorten or lengthen them); ``coalesce``: the shortest
    time between two wakes of an object type's readers while its changes keep coming (0:
    none; the attribute may be changed while readers wait: a change feed sets it to its
    site's ``svc_changes_coalesce``, :data:`COALESCE` by default); ``share``: the most of
    an event loop's time a type's wakes may take while its changes keep coming (see
    :meth:`spent`); ``waited``: returns the seconds the readers' event loop thread has
    waited for a core so far (None: :meth:`queued` reads it from the system)."""

    def __init__(
        self,
        store: Store,
        *,
        interval: float = INTERVAL,
        fallback: float = FALLBACK,
        coalesce: float = 0.0,
        share: float = FAN_OUT_SHARE,
        waited: Callable[[], float] | None = None,
    ) -> None:
        # Weak: the process's table of wakers must not keep a store alive.
        self._store = weakref.ref(store)
        self.interval = interval
        self.fallback = fallback
        self.coalesce = coalesce
        self.share = share
        self._lock = threading.Lock()
        #: Object type → how many times its readers were woken; ``_everyone``: how many
        #: times every reader was.
        self._counts: dict[str, int] = {}
        self._everyone = 0
        #: Object type → when its readers were last woken (monotonic); the types whose
        #: wake is held back → when it is due.
        self._woken_at: dict[str, float] = {}
        self._deferred: dict[str, float] = {}
        #: Object type → the seconds of event loop time its readers took after its last
        #: wake (as reported, :meth:`spent`).
        self._spent: dict[str, float] = {}
        #: Object type → :meth:`queued` when its readers were last woken; the thread of
        #: the loop the last reader waited on (its native id) and its run queue's reader.
        self._queued_at: dict[str, float] = {}
        self._waited = waited
        self._loop_thread = 0
        self._run_queue = _RunQueue()
        #: How many times readers were woken, and the seconds of their loops' time reported
        #: by :meth:`spent` in all (tests and benchmarks).
        self.wakes = 0
        self.counted = 0.0
        self._waiting: dict[str, _Futures] = {}
        self._waiters = 0
        #: How many readers the next wake resolves in its first slice: the size its last
        #: slice ended with (:func:`wake_in_slices`).
        self.pace = [WAKE_SLICE]
        #: Per event loop, its waiting readers' deadlines (one timer a loop).
        self._deadlines: dict[asyncio.AbstractEventLoop, _Deadlines] = {}
        self._thread: threading.Thread | None = None
        self._nudge = threading.Event()
        #: Whether the thread waits ``_IDLE`` seconds (nobody waited): a reader hurries it.
        self._idling = False
        self._listener: Listener | None = None
        self._epoch = -1
        self._mark: int | None = None
        self._seq = 0
        self._woken_all = 0.0
        #: Object type → what reads the log ahead of its readers' wake (weak: a feed's
        #: shared reader of this store; bounded by the feeds of the process).
        self._ahead: dict[str, list[weakref.WeakMethod[Callable[[int], object]]]] = {}

    def read_ahead(self, object_type: str, read: Callable[[int], object]) -> None:
        """Call ``read`` (a bound method, held weakly) with ``object_type``'s new
        :meth:`token` whenever the waker's thread wakes that type's readers, before their
        event loops are told: a change feed reads the log once there, so that each reader
        is woken once, with the changes ready (not once to find a read under way and again
        when it ends). ``read`` blocks the waker's thread meanwhile; an error it raises is
        logged and the readers are woken as usual."""
        with self._lock:
            kept = [ref for ref in self._ahead.get(object_type, ()) if ref() is not None]
            kept.append(weakref.WeakMethod(read))
            self._ahead[object_type] = kept

    def _read_ahead(self, kinds: list[str]) -> None:
        """(The waker's thread, before a wake of ``kinds``.) Call their :meth:`read_ahead`
        readers."""
        for kind in kinds:
            for ref in self._ahead.get(kind, ()):
                read = ref()
                if read is None:
                    continue
                try:
                    read(self.token(kind))
                except Exception as exc:  # the readers read the log themselves
                    _log.warning("change waker: reading ahead of a wake: %s", exc)

    @property
    def waiters(self) -> int:
        """How many readers wait now."""
        return self._waiters

    def token(self, object_type: str) -> int:
        """The wake count of ``object_type``'s readers: take it before reading the log. It
        never goes down: a read begun when the token was ``n`` saw every change whose wake
        made it ``n`` or less."""
        return self._counts.get(object_type, 0) + self._everyone

    def spent(self, object_type: str, seconds: float) -> None:
        """Count ``seconds`` of an event loop's time that readers of ``object_type`` took
        after its last wake (the waker counts their first steps; a change feed adds its
        readers' work after the shared read of the log it woke them to). While changes of
        the type keep coming, its next wake waits until the time since the last one is at
        least the time counted over :attr:`share` (at most :data:`LONGEST_HOLD` seconds);
        only while :attr:`coalesce` is on."""
        with self._lock:
            spent = self._spent
            if object_type not in spent and len(spent) >= _MAX_TYPES:
                spent.clear()  # (forgotten: a type's wakes are held back by coalesce alone)
            spent[object_type] = spent.get(object_type, 0.0) + seconds
            self.counted += seconds

    def hold(self, object_type: str) -> float:
        """The shortest time, in seconds, between two wakes of ``object_type``'s readers
        while its changes keep coming: :attr:`coalesce`, or longer when its readers' work
        after the last wake (:meth:`spent`) over :attr:`share` is longer (at most
        :data:`LONGEST_HOLD`, or :attr:`coalesce` when that is longer)."""
        coalesce = self.coalesce
        work = self._spent.get(object_type, 0.0) / self.share if self.share > 0 else 0.0
        return max(coalesce, min(work, LONGEST_HOLD))

    def queued(self) -> float:
        """The seconds the thread of the readers' event loop (the loop the last reader
        waited on) has waited for a core so far: time that was not the loop's."""
        if self._waited is not None:
            return self._waited()
        thread = self._loop_thread
        return self._run_queue(thread) if thread else 0.0

    def _due(self, object_type: str, last: float) -> float:
        """(Under the lock.) When the next wake of ``object_type``'s readers, last woken
        at ``last``, is due while its changes keep coming: :meth:`hold` after ``last``,
        plus the time their loop waited for a core since when their work holds it back
        (at most :data:`LONGEST_HOLD` after ``last``, or :attr:`coalesce`)."""
        hold = self.hold(object_type)
        if hold > self.coalesce and hold < LONGEST_HOLD:
            # PERF: on a busy machine the worker gets a fraction of a core, and a share of
            # the wall time would be a larger share of the worker's time: 1,000 streams
            # on the writing worker of bench/feed_latency.py took 14 % of a core beyond
            # its writes (0.54 of its writes a second) where it got a third of one.
            since = self._queued_at.get(object_type)
            waited = 0.0 if since is None else max(self.queued() - since, 0.0)
            hold = max(self.coalesce, min(hold + waited, LONGEST_HOLD))
        return last + hold

    async def wait(self, object_type: str, token: int, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a change of ``object_type`` committed after
        ``token`` (:meth:`token`) was taken; whether one may have been (False: timed out)."""
        if timeout <= 0:
            return self.token(object_type) != token
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        deadlines = self._deadlines.get(loop)
        thread = threading.get_native_id() if deadlines is None else deadlines.thread
        with self._lock:
            if self._counts.get(object_type, 0) + self._everyone != token:  # (token, inlined)
                return True
            loops = self._waiting.get(object_type)
            if loops is None:
                loops = self._waiting[object_type] = {}
            futures = loops.get(loop)
            if futures is None:
                futures = loops[loop] = set()
            futures.add(future)
            self._waiters += 1
            self._loop_thread = thread
            if self._thread is None or self._idling:
                self._start()
        # PERF: a future and a place in the loop's deadlines (one timer a loop), not a timer
        # of its own nor asyncio.wait (a waiter, a set and callbacks more): 1,000 streams
        # wait again after every wake.
        if deadlines is None:
            deadlines = self._deadlines[loop] = _Deadlines(loop)
        entry = deadlines.add(loop.time() + timeout, future)
        try:
            return await future
        finally:
            if deadlines.drop(entry) and self._deadlines.get(loop) is deadlines:
                del self._deadlines[loop]  # nobody waits on this loop
            with self._lock:
                self._forget(object_type, loop, future)

    def _forget(
        self, object_type: str, loop: asyncio.AbstractEventLoop, future: asyncio.Future[bool]
    ) -> None:
        """(Under the lock.) The reader of ``future`` no longer waits."""
        loops = self._waiting.get(object_type)
        futures = loops.get(loop) if loops is not None else None
        if futures is None or future not in futures:
            return
        futures.discard(future)
        self._waiters -= 1
        if not futures:
            del loops[loop]  # type: ignore[union-attr]
            if not loops:
                del self._waiting[object_type]

    def _start(self) -> None:
        """(Under the lock.) Start the thread unless it runs; hurry it when it idles."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="svcrest-change-waker", daemon=True
            )
            self._thread.start()
        elif self._idling:  # PERF: not once per reader (1,000 wait again after every wake)
            self._idling = False
            self._nudge.set()

    # -- the thread ------------------------------------------------------------------------------

    def _run(self) -> None:
        idle_since = time.monotonic()
        while True:
            try:
                busy = self._look()
            except Exception as exc:  # never let the thread die: wake everyone instead
                _log.warning("change waker: %s", exc)
                self._wake(None)
                busy = bool(self._waiting)
            now = time.monotonic()
            if self._deferred:
                self._wake_due(now)
            if busy:
                idle_since = now
            with self._lock:
                deferred = self._deferred
                if not self._waiting and not deferred and self._may_end(now - idle_since):
                    self._thread = None
                    return
                self._idling = not self._waiting and not deferred
                pause = _IDLE if self._idling else self.interval
                if deferred:
                    pause = min(pause, max(min(deferred.values()) - now, 0.0))
            self._nudge.wait(pause)
            self._nudge.clear()

    def _may_end(self, idle: float) -> bool:
        """(Under the lock.) Whether the idle thread ends: never while it holds an open
        listener (it drains it), else after ``_LINGER`` seconds."""
        listener = self._listener
        if listener is not None and listener is not _NOT_LISTENING:
            return listener.closed
        return idle >= _LINGER

    def _look(self) -> bool:
        """Look for changes and wake their readers; whether anyone waits."""
        store = self._store()
        waiting = bool(self._waiting)
        if store is None:  # gone: its readers are woken to find it so
            self._wake(None)
            return False
        if isinstance(store, NotifyingStore):
            return self._look_listener(store, waiting)
        if not waiting:
            return False
        if isinstance(store, ChangeMarkingStore):
            self._look_mark(store, store)
        else:
            self._wake_everyone_now_and_then()
        return True

    def _look_listener(self, store: NotifyingStore, waiting: bool) -> bool:
        listener = self._listener
        if listener is None:
            if not waiting:
                return False
            try:
                listener = self._listener = store.listen(CHANNEL)
            except StoreError as exc:  # no way to listen (PgBouncer without a listen URL)
                _log.warning("change feeds poll the change log: %s", exc)
                self._listener = _NOT_LISTENING
                listener = _NOT_LISTENING
        payloads = listener.poll()
        if payloads is None:
            if waiting:
                self._wake_everyone_now_and_then()
            return waiting
        if listener.epoch != self._epoch:  # listening anew: notifications may have been lost
            self._epoch = listener.epoch
            self._wake(None)
            return waiting
        if payloads:
            self._wake(set(payloads))
        return waiting

    def _look_mark(self, marks: ChangeMarkingStore, store: Store) -> None:
        mark = marks.change_mark()
        if mark is not None and mark == self._mark:
            return
        if self._mark is None:  # first look: whatever came before is read by the readers
            row = store.read_one("SELECT MAX(seq) FROM svc_changes")
            self._seq = 0 if row is None or row[0] is None else int(row[0])
            self._mark = mark
            self._wake(None)
            return
        self._mark = mark
        with store.read() as conn:
            rows = conn.execute(
                "SELECT object_type, MAX(seq) FROM svc_changes WHERE seq > ? GROUP BY object_type",
                (self._seq,),
            ).fetchall()
        if rows:
            self._seq = max(self._seq, *(int(row[1]) for row in rows))
            self._wake({str(row[0]) for row in rows})

    def _wake_everyone_now_and_then(self) -> None:
        now = time.monotonic()
        if now - self._woken_all >= self.fallback:
            self._woken_all = now
            self._wake(None)

    def _wake_due(self, now: float) -> None:
        """Wake the readers of the types whose held-back wake is due."""
        with self._lock:
            deferred, woken_at = self._deferred, self._woken_at
            due: set[str] = set()
            for kind, at in deferred.items():
                last = woken_at.get(kind)
                if last is not None:  # the readers' work reported since may hold it longer
                    at = deferred[kind] = max(at, self._due(kind, last))
                if at <= now:
                    due.add(kind)
            for kind in due:
                del deferred[kind]
        if due:
            self._wake(due, held=False)

    def _hold_back(self, object_types: set[str], now: float) -> set[str]:
        """(Under the lock.) Of ``object_types``, those whose readers are woken now: the
        others were woken less than ``coalesce`` seconds ago (their wake is held back
        until then) or wait for a wake held back already."""
        woken_at, deferred = self._woken_at, self._deferred
        now_woken: set[str] = set()
        for kind in object_types:
            if kind in deferred:
                continue
            last = woken_at.get(kind)
            due = self._due(kind, last) if last is not None else now
            if due > now:
                deferred[kind] = due
            else:
                now_woken.add(kind)
        return now_woken

    def _wake(self, object_types: set[str] | None, *, held: bool = True) -> None:
        """Wake the readers of ``object_types`` (None: everyone; ``held``: a type's wake
        may be held back, see :attr:`coalesce`)."""
        now = time.monotonic()
        with self._lock:
            counts = self._counts
            if object_types is not None and held and self.coalesce > 0:
                object_types = self._hold_back(object_types, now)
                if not object_types:
                    return
            self.wakes += 1
            if object_types is None or len(counts) + len(object_types) > _MAX_TYPES:
                if len(counts) >= _MAX_TYPES:
                    # The counts forgotten are folded into everyone's: no token goes down.
                    self._everyone += max(counts.values())
                    counts.clear()
                    self._woken_at.clear()
                    self._queued_at.clear()
                self._everyone += 1
                # Everyone's wake carries the wakes held back.
                self._deferred.clear()
                self._spent.clear()  # a new wake: its readers' work is counted anew
                kinds = list(self._waiting)
            else:
                woken_at, queued_at = self._woken_at, self._queued_at
                if len(woken_at) + len(object_types) > _MAX_TYPES:
                    woken_at.clear()  # (forgotten: a type's next wake is not held back)
                    queued_at.clear()
                spent = self._spent
                queued = self.queued()
                for kind in object_types:
                    counts[kind] = counts.get(kind, 0) + 1
                    woken_at[kind] = now
                    queued_at[kind] = queued
                    spent.pop(kind, None)  # a new wake: its readers' work is counted anew
                kinds = [kind for kind in object_types if kind in self._waiting]
            by_loop = self._waiting_for(kinds)
        if not by_loop:
            return
        if self._ahead and threading.current_thread() is self._thread:
            # PERF: a thousand streams woken once a wake, not twice (bench/idle_streams.py).
            self._read_ahead(kinds)
        count = _Counter(self, kinds)
        for loop, woken in by_loop.items():
            try:
                loop.call_soon_threadsafe(_resolve, woken, count, self.pace)
            except RuntimeError:  # the loop was closed: its readers are gone
                continue

    def _waiting_for(
        self, kinds: list[str]
    ) -> dict[asyncio.AbstractEventLoop, list[asyncio.Future[bool]]]:
        """(Under the lock.) The futures of the readers of ``kinds``, per loop."""
        by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[bool]]] = {}
        for kind in kinds:
            for loop, waiting in self._waiting[kind].items():
                by_loop.setdefault(loop, []).extend(waiting)
        return by_loop


class _Counter:
    """Counts the time the readers of ``kinds`` took after a wake (:meth:`ChangeWaker.spent`)."""

    __slots__ = ("kinds", "waker")

    def __init__(self, waker: ChangeWaker, kinds: list[str]) -> None:
        self.waker = waker
        self.kinds = kinds

    def __call__(self, seconds: float) -> None:
        for kind in self.kinds:
            self.waker.spent(kind, seconds)


class _NotListening:
    """A listener that never listens (the store has no way to): everyone is woken every
    ``fallback`` seconds."""

    epoch = 0
    answered = 0
    closed = False

    def ping(self, number: int) -> bool:
        return False

    def poll(self) -> list[str] | None:
        return None

    def close(self) -> None:
        return None


_NOT_LISTENING: Final = _NotListening()

_wakers: weakref.WeakKeyDictionary[Store, ChangeWaker] = weakref.WeakKeyDictionary()
_wakers_lock = threading.Lock()


def change_waker(store: Store, make: Callable[[Store], ChangeWaker] = ChangeWaker) -> ChangeWaker:
    """The one waker of ``store`` in this process (made on first use)."""
    waker = _wakers.get(store)
    if waker is None:
        with _wakers_lock:
            waker = _wakers.get(store)
            if waker is None:
                waker = _wakers[store] = make(store)
    return waker
