"""A PostgreSQL ``LISTEN`` connection polled without blocking (:class:`svcrest.store.Listener`).

Imported only by :meth:`svcrest.store.postgres.PostgresStore.listen` (psycopg is installed),
which shares one such connection among the processes of a host (:mod:`svcrest.store.pg_relay`)
where it can, and opens a :class:`PostgresListener` per listener where it cannot.
One dedicated connection per listener, outside the pool, in autocommit mode and idle: the
server writes each notification to its socket as soon as the notifying transaction commits.
:meth:`PostgresListener.poll` reads what is already in the socket (one non-blocking
``recv``, no round trip). When the connection breaks, ``poll`` answers None and a background
thread reconnects (at most once per ``retry_interval`` seconds); ``epoch`` then grows, telling
callers that notifications may have been lost in between.

:meth:`PostgresListener.ping` sends ``SELECT 1`` on the same connection and waits for its
answer: a read-only statement, so it consumes no transaction id and notifies nobody. Every
notification whose transaction committed before the ping was sent reaches the socket before
the ping's answer: the committing backend signals each listening backend before its client
is told of the commit, and a listening backend sends the notifications it has been signalled
about before it reports ready for the next query (PostgreSQL's ``ProcessNotifyInterrupt``,
called in ``PostgresMain`` before ``ReadyForQuery``); libpq parses the messages in order.
tests/store/test_pg_listen.py checks it over many revoke-then-ping rounds.
"""

from __future__ import annotations

import contextlib
import logging
import select
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql
from psycopg.pq import ConnStatus, ExecStatus

__all__ = ["CONNECT_OPTIONS", "ListenerCallback", "ListenerState", "PostgresListener"]

_log = logging.getLogger("svcrest.store")
#: libpq settings of a listening connection: TCP keepalives notice a silent network break
#: (unix sockets ignore them).
CONNECT_OPTIONS: dict[str, Any] = {
    "autocommit": True,
    "application_name": "svcrest-listen",
    "connect_timeout": 5,
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
}

#: What a listener's ``add_callback`` takes: called with the payloads received, or with None
#: when notifications may have been lost (the listener stopped listening or listens anew),
#: so that whoever waits on them reads what they announce again.
ListenerCallback = Callable[[list[str] | None], None]


class ListenerState:
    """What a listener tells of itself (:class:`PostgresListener`, and the relayed
    :class:`svcrest.store.pg_relay.RelayListener`): its epoch, the newest ping answered in
    it, and whether it was closed; with the payloads it holds for the next poll. Changed
    by the listener under its own lock."""

    def __init__(self) -> None:
        self._epoch = 0
        self._answered = 0
        self._closed = False
        self._received: list[str] = []

    @property
    def epoch(self) -> int:
        """How many times this listener has started listening."""
        return self._epoch

    @property
    def answered(self) -> int:
        """The number of the newest ping answered in this epoch (0: none)."""
        return self._answered

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has been called."""
        return self._closed

    def _new_epoch(self) -> None:
        """Listening anew: what was held and the pings answered belong to the epoch before."""
        self._received = []
        self._answered = 0
        self._epoch += 1


class PostgresListener(ListenerState):
    """``LISTEN channel`` on its own connection to ``url``; see the module docstring."""

    def __init__(self, url: str, channel: str, *, retry_interval: float = 1.0) -> None:
        super().__init__()
        self._url = url
        self._channel = channel
        self._retry_interval = retry_interval
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._noticed = False
        self._reconnecting = False
        self._next_attempt = 0.0
        self._ping_lock = threading.Lock()
        self._callbacks: list[ListenerCallback] = []
        self._called_epoch = 0
        self._connect()

    def add_callback(self, callback: ListenerCallback) -> None:
        """Call ``callback`` from :meth:`poll` (on the polling thread) with what each poll
        receives, and with None when it finds the listener not listening or listening anew;
        it must be quick and must not raise."""
        with self._lock:
            self._callbacks.append(callback)

    def poll(self) -> list[str] | None:
        """The payloads received since the last call, or None when not listening."""
        with self._lock:
            conn = self._conn
            if conn is None:
                self._start_reconnect()
                payloads = None
            elif not self._read(conn):
                self._drop()
                payloads = None
            else:
                payloads, self._received = self._received, []
            callbacks = list(self._callbacks)
            # A change of epoch (0: not listening) since the last poll: tell the callbacks.
            now = 0 if payloads is None else self._epoch
            lost, self._called_epoch = now != self._called_epoch, now
        for callback in callbacks:
            if lost:
                callback(None)
            if payloads:
                callback(payloads)
        return payloads

    def _read(self, conn: psycopg.Connection[Any]) -> bool:
        """Move what the socket holds into the received payloads (under the lock); False
        when the connection is broken."""
        pgconn = conn.pgconn
        try:
            # Reads only what the socket holds (libpq's socket is non-blocking).
            pgconn.consume_input()
            while (notify := pgconn.notifies()) is not None:
                self._received.append(notify.extra.decode("utf-8", "replace"))
            # An idle connection is told nothing but notifications and the answers of its
            # pings, except the error a server sends before it closes the connection
            # (shutdown, termination): libpq hands that error to the notice handler, often
            # before the close is read.
            return not self._noticed and pgconn.status == ConnStatus.OK
        except Exception:
            return False

    def ping(self, number: int, timeout: float = 5.0) -> bool:
        """Send ``SELECT 1`` and wait (up to ``timeout`` seconds) for its answer; then
        :attr:`answered` is ``number`` and every notification committed before the call is
        in what :meth:`poll` returns next. False when not listening or the round trip failed
        (the connection is then dropped and rebuilt)."""
        with self._ping_lock:  # one ping at a time on the connection
            with self._lock:
                conn = self._conn
                if conn is None:
                    return False
                pgconn = conn.pgconn
                try:
                    pgconn.send_query(b"SELECT 1")
                    while pgconn.flush():
                        select.select([], [pgconn.socket], [], timeout)
                except Exception:
                    self._drop()
                    return False
            deadline = time.monotonic() + timeout
            while True:
                with self._lock:
                    if self._conn is not conn:
                        return False
                    if not self._read(conn):
                        self._drop()
                        return False
                    if not pgconn.is_busy():
                        return self._finish_ping(conn, number)
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:  # the network went silent
                        self._drop()
                        return False
                # A poll() on another thread may read the answer first: look again soon.
                with contextlib.suppress(OSError, ValueError):
                    select.select([pgconn.socket], [], [], min(remaining, 0.01))

    def _finish_ping(self, conn: psycopg.Connection[Any], number: int) -> bool:
        """Collect the ping's result (under the lock, the answer fully read)."""
        pgconn = conn.pgconn
        ok = True
        while (result := pgconn.get_result()) is not None:
            ok = ok and result.status == ExecStatus.TUPLES_OK
        if not ok:
            self._drop()
            return False
        self._answered = number
        return True

    def _drop(self) -> None:
        """Forget the broken connection (under the lock) and start reconnecting."""
        conn, self._conn = self._conn, None
        if conn is not None:
            _log.warning("notification listener on %r lost its connection", self._channel)
            with contextlib.suppress(Exception):  # closing a broken connection
                conn.close()
        self._start_reconnect()

    def _start_reconnect(self) -> None:
        """Reconnect in a background thread, at most once per retry interval (under the lock)."""
        if self._closed or self._reconnecting or time.monotonic() < self._next_attempt:
            return
        self._reconnecting = True
        self._next_attempt = time.monotonic() + self._retry_interval
        threading.Thread(target=self._connect, name="svcrest-listen", daemon=True).start()

    def _connect(self) -> None:
        try:
            conn = psycopg.connect(self._url, **CONNECT_OPTIONS)
        except Exception as exc:
            _log.warning("notification listener on %r cannot connect: %s", self._channel, exc)
            with self._lock:
                self._reconnecting = False
            return
        try:
            conn.add_notice_handler(self._on_notice)
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
        except Exception as exc:
            _log.warning("notification listener on %r cannot listen: %s", self._channel, exc)
            conn.close()
            with self._lock:
                self._reconnecting = False
            return
        with self._lock:
            self._reconnecting = False
            if self._closed:
                conn.close()
                return
            self._conn = conn
            self._noticed = False
            self._new_epoch()

    def _on_notice(self, diagnostic: psycopg.errors.Diagnostic) -> None:
        """Any message but a notification on the idle connection means it is going away."""
        self._noticed = True

    def close(self) -> None:
        """Stop listening; ``poll`` answers None from now on."""
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
