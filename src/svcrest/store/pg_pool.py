"""The connection pool of :class:`svcrest.store.postgres.PostgresStore`: bounded, with
deadlines, and quick to notice a database that went away or came back.

- At most ``max_size`` connections; a caller finding none free waits up to ``timeout``
  seconds, then gets :class:`StoreBusyError` (503 ``svc_store_busy``). A caller on a shared
  event loop's thread (uvicorn's) never waits: holding that thread would hold every request of
  the process, so it gets the 503 at once.
- A connection is opened by the caller that needs it, never in the background: when the
  database cannot be reached the caller gets :class:`StoreUnavailableError` (503
  ``svc_store_unavailable``) at once, and for the next ``RETRY_AFTER_SECONDS`` every caller
  that needs a new connection gets it without trying again (no connection storm against a
  server that is down, no wait on a host that does not answer). The first caller after that
  tries again: a process recovers within a second of the database's return.
- An idle connection whose socket holds anything is dropped when it is taken: an idle
  autocommit connection is told nothing but the error the server sends before it closes the
  connection (shutdown, termination, restart), so PERF: a working idle connection costs one
  ``select`` of timeout 0 (3.9 µs measured on a local socket), not a round trip (56.8 µs for
  an empty query).
- A connection given back broken or inside a transaction is closed, not kept.

Behind PgBouncer the pool's connections end at PgBouncer, which keeps them open while the
server side is gone: nothing here can tell a statement waiting in PgBouncer's queue from one
running on the server, so PgBouncer's own ``query_wait_timeout`` bounds that wait, and its
``server_login_retry`` paces its reconnection (docs/guides/many-hosts.md). What PgBouncer
answers meanwhile (a refused login, a queue time-out, which close the connection) is
:class:`StoreUnavailableError` like a direct server's.
"""

from __future__ import annotations

import contextlib
import select
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.pq import ConnStatus, TransactionStatus

from svcrest.store.base import StoreError
from svcrest.store.errors import RETRY_AFTER_SECONDS, StoreBusyError, StoreUnavailableError
from svcrest.syncrun import on_shared_loop

__all__ = ["ConnectionPool"]

Raw = psycopg.Connection[Any]


def _usable(raw: Raw) -> bool:
    """Whether an idle connection can be handed out (see the module docstring)."""
    pgconn = raw.pgconn
    if raw.closed or pgconn.status != ConnStatus.OK:
        return False
    try:
        readable, _, _ = select.select([pgconn.socket], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable


def _close(raw: Raw) -> None:
    with contextlib.suppress(Exception):  # closing a broken connection
        raw.close()


class ConnectionPool:
    """Up to ``max_size`` connections made by ``connect()``; see the module docstring."""

    def __init__(self, connect: Callable[[], Raw], max_size: int, timeout: float) -> None:
        self._connect = connect
        self.max_size = max_size
        self.timeout = timeout
        self._idle: list[Raw] = []
        self._size = 0  # connections open: idle and handed out
        self._cond = threading.Condition(threading.Lock())
        self._down_until = 0.0
        self._closed = False
        #: Callers waiting for a connection now, and the waits that ended in
        #: StoreBusyError since the pool was made (read by the admin port's metrics).
        self.waiting = 0
        self.timeouts = 0

    @property
    def size(self) -> int:
        """The connections open now (idle and handed out)."""
        return self._size

    @property
    def idle(self) -> int:
        """The idle connections now."""
        return len(self._idle)

    def get(self) -> Raw:
        """A connection; StoreBusyError, StoreUnavailableError or StoreError (closed)."""
        with self._cond:
            raw = self._take_or_reserve()
        if raw is not None:
            return raw
        try:
            if time.monotonic() < self._down_until:
                raise StoreUnavailableError()
            try:
                return self._connect()
            except psycopg.Error as exc:
                self._down_until = time.monotonic() + RETRY_AFTER_SECONDS
                raise StoreUnavailableError() from exc
        except BaseException:
            with self._cond:
                self._size -= 1
                self._cond.notify()
            raise

    def _take_or_reserve(self) -> Raw | None:
        """Under the lock: an idle connection that works, or None with a place reserved for a
        new one; waits for either up to the time-out."""
        deadline = 0.0
        while True:
            if self._closed:
                raise StoreError("the store is closed")
            while self._idle:
                raw = self._idle.pop()
                if _usable(raw):
                    return raw
                _close(raw)
                self._size -= 1
            if self._size < self.max_size:
                self._size += 1
                return None
            now = time.monotonic()
            if not deadline:
                # A wait on a shared event loop would stall every request of the process.
                deadline = now + (0.0 if on_shared_loop() else self.timeout)
            if now >= deadline:
                self.timeouts += 1
                raise StoreBusyError()
            self.waiting += 1
            try:
                self._cond.wait(deadline - now)
            finally:
                self.waiting -= 1

    def put(self, raw: Raw) -> None:
        """Give ``raw`` back: kept when it works and is outside any transaction."""
        keep = (
            not raw.closed
            and raw.pgconn.status == ConnStatus.OK
            and raw.info.transaction_status == TransactionStatus.IDLE
        )
        with self._cond:
            kept = keep and not self._closed
            if kept:
                self._idle.append(raw)
            else:
                self._size -= 1
            self._cond.notify()
        if not kept:
            _close(raw)

    def close(self) -> None:
        """Close the idle connections; the ones handed out close when given back."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._size -= len(idle)
            self._cond.notify_all()
        for raw in idle:
            _close(raw)
