"""The host's notification relay: a process of its own holding the one PostgreSQL ``LISTEN``
connection of the host's processes and serving them over a unix socket.

Started by :mod:`svcrest.store.pg_relay` (the first process of the host that finds none
running, which takes the relay's lock and hands it over) as a fresh interpreter that imports
nothing of svcrest but this file, with its settings on its standard input (the connection
string holds a password: never on the command line, which other users can read). It ends
when no process has been connected for :data:`LINGER` seconds (:data:`FIRST_CLIENT` before
the first one), or when the process that started it is gone; its socket and lock go with
it, and the next process that finds no relay starts another.

The relay sends each client the notifications of its channel in batches: the first after a
quiet spell at once, those that follow within :data:`HOLD` seconds of it together at the end
of the hold, a repeat of a notification still waiting in the batch merged into it; a
client's ping's answer, ``up`` and ``down`` are never held, and take what waits for the
client along, ahead of them (nothing is merged across them). It answers a
client's ping with a ``SELECT 1`` of its own, sent after the ping reached it, whose answer it
relays only after every notification that arrived before it (pings of several clients
waiting at the same time share one ``SELECT 1``); it tells its clients ``down`` when its
connection is lost and ``up`` when it listens again. One message a line, a JSON array:
``["listen", channel]`` and ``["ping", n]`` from a client; ``["n", payload]``, ``["a", n]``,
``["up"]`` and ``["down"]`` to it.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import selectors
import socket
import sys
import time
from typing import Any, Final

import orjson
import psycopg
from psycopg import sql
from psycopg.pq import ConnStatus, ExecStatus

__all__ = [
    "FIRST_CLIENT",
    "HOLD",
    "LINGER",
    "MAX_LINE",
    "RelayProcess",
    "main",
    "message",
    "run_relay",
]

_log = logging.getLogger("svcrest.relay")

#: Seconds the relay lives on once its last client left (one coming back meanwhile keeps
#: it), and before its first client came.
LINGER: Final = 0.5
FIRST_CLIENT: Final = 10.0
#: Seconds a client's notifications wait, after a batch of them was sent to it, before the
#: next batch goes (the first after a quiet spell goes at once; an answer, ``up`` or
#: ``down`` takes them along at once).
# PERF: each batch wakes the client's reading thread, which takes its worker's interpreter
# lock from the event loop and the pool's threads. At 1,000 NOTIFYs/s a listener read
# 0.91-0.99 times a notification, its thread 7.2-25.1 us of CPU a notification; with the
# hold 0.095 reads, 1.1-5.1 us; the relay serving 8 clients 48-88 -> 26-46 us a
# notification (bench/relay_batches.py). bench/feed_latency.py (--raw, 5 pairs): host A's
# listener thread 2.5-5.1 % of a core -> under 1 %, host B (one stream) 4-8 % -> 3-5 %;
# the latency's p50 unchanged (18.6-24.1 ms before, 19.1-24.0 after). Bounded: at 10,000
# notifications/s a hold queues at most 100 lines (an object type's ~13-30 bytes; the
# longest payload, 8,000 bytes, escaped at most 6 times over: 48 KB), ~3 KB and at worst
# 4.8 MB, under the 8 MiB a client may have queued before it is dropped; repeats merged.
HOLD: Final = 0.01
#: Bounds: bytes the relay queues for a client before dropping it; a message's length;
#: clients of one relay.
_MAX_QUEUED: Final = 8 * 1024 * 1024
MAX_LINE: Final = 64 * 1024
_MAX_CLIENTS: Final = 4096
#: Seconds a relayed ping may take before the relay's connection counts as broken.
_PING_TIMEOUT: Final = 5.0


def message(*parts: object) -> bytes:
    """One line of the relay's protocol."""
    return orjson.dumps(parts) + b"\n"


class _Peer:
    """A client connection of the relay."""

    __slots__ = ("channel", "due", "inbox", "merged", "notified_at", "outbox", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.channel: str | None = None
        self.inbox = b""
        self.outbox = bytearray()
        #: The notification lines in the outbox since the last send and the last line of
        #: another kind (a repeat of one of them is merged into it); when the held
        #: notifications are due (None: none held); when a batch of them was last sent.
        self.merged: set[bytes] = set()
        self.due: float | None = None
        self.notified_at = float("-inf")


class RelayProcess:
    """The host's listening connection and the socket its processes connect to, served by
    :meth:`run` in this process's main thread until nobody uses it (see the module
    docstring). ``lock_fd``: the relay's lock, taken by the process that started this one
    and held as long as this process runs; ``parent``: that process's id; ``hold``: the
    seconds a client's notifications wait after a batch was sent to it (:data:`HOLD`)."""

    def __init__(
        self,
        url: str,
        path: str,
        lock_fd: int,
        retry_interval: float,
        *,
        connect_options: dict[str, Any],
        parent: int | None = None,
        hold: float = HOLD,
    ) -> None:
        self._url = url
        self._hold = hold
        self._path = path
        self.lock_fd = lock_fd
        self._retry_interval = retry_interval
        self._connect_options = connect_options
        self._parent = parent
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a dead relay's (this process holds the lock now)
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(path)
        os.chmod(path, 0o600)
        self._server.listen(128)
        self._server.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._server, selectors.EVENT_READ)
        self._peers: dict[socket.socket, _Peer] = {}
        #: The clients with notifications held.
        self._holding: set[_Peer] = set()
        #: Since when no process is connected, and whether one ever was.
        self._empty_since: float | None = time.monotonic()
        self._served = False
        self._conn: psycopg.Connection[Any] | None = None
        self._pg_socket: int | None = None
        self._noticed = False
        self._listened: set[str] = set()
        self._wanted: set[str] = set()
        self._queued_listens: collections.deque[str] = collections.deque()
        self._pending_pings: list[tuple[_Peer, int]] = []
        self._in_flight: tuple[str, Any] | None = None
        self._in_flight_ok = True
        self._in_flight_since = 0.0
        self._next_attempt = 0.0
        self._stopping = False

    # -- the loop --------------------------------------------------------------------------------

    def run(self) -> None:
        """Serve until nobody uses the relay or the process that started it is gone; then
        close every connection, remove the socket and release the lock."""
        try:
            while not self._stopping:
                self._turn()
        except Exception:
            _log.exception("the notification relay stopped")
        finally:
            self._shut()

    def _turn(self) -> None:
        now = time.monotonic()
        if self._done(now):
            self._stopping = True
            return
        if self._conn is None and now >= self._next_attempt:
            self._connect()
        self._send_next()
        timeout = self._timeout(now)
        if timeout is None:
            self._drop("a query went unanswered")
            return
        for key, events in self._selector.select(timeout):
            target = key.fileobj
            if target is self._server:
                self._accept()
            elif target == self._pg_socket:
                self._read_pg()
            elif isinstance(target, socket.socket):
                peer = self._peers.get(target)
                if peer is not None:
                    self._serve_peer(peer, events)
        if self._holding:
            self._send_due(time.monotonic())

    def _timeout(self, now: float) -> float | None:
        """Seconds until something is due (at most one); None when a query in flight went
        unanswered too long."""
        if self._conn is None:  # looked at again every second at least
            timeout = min(1.0, max(0.0, self._next_attempt - time.monotonic()))
        elif self._in_flight is not None:
            timeout = max(0.0, self._in_flight_since + _PING_TIMEOUT - time.monotonic())
            if timeout == 0.0:
                return None
        else:
            timeout = 1.0
        if self._empty_since is not None:  # look again when it may be time to end
            timeout = min(timeout, max(0.0, self._empty_since + self._linger() - now))
        if self._holding:  # look again when the first held batch is due
            due = min(peer.due for peer in self._holding if peer.due is not None)
            timeout = min(timeout, max(0.0, due - now))
        return min(timeout, 1.0)

    def _linger(self) -> float:
        return LINGER if self._served else FIRST_CLIENT

    def _done(self, now: float) -> bool:
        """Whether to end: nobody connected for a while, or the parent process is gone
        (this process was handed to another parent)."""
        if self._parent is not None and os.getppid() != self._parent:
            return True
        return self._empty_since is not None and now - self._empty_since >= self._linger()

    def _shut(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()
        for peer in list(self._peers.values()):
            self._forget(peer)
        # Removed while the lock is still held: a new relay binds only after taking it.
        with contextlib.suppress(OSError):
            os.unlink(self._path)
        with contextlib.suppress(OSError):
            self._server.close()
        self._selector.close()
        os.close(self.lock_fd)

    # -- PostgreSQL ------------------------------------------------------------------------------

    def _connect(self) -> None:
        self._next_attempt = time.monotonic() + self._retry_interval
        try:
            conn = psycopg.connect(self._url, **self._connect_options)
        except Exception as exc:
            _log.warning("notification relay cannot connect: %s", exc)
            return
        try:
            conn.add_notice_handler(self._on_notice)
            for channel in sorted(self._wanted):
                conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
        except Exception as exc:
            _log.warning("notification relay cannot listen: %s", exc)
            conn.close()
            return
        self._conn = conn
        self._noticed = False
        self._listened = set(self._wanted)
        self._pg_socket = conn.pgconn.socket
        self._selector.register(self._pg_socket, selectors.EVENT_READ)
        for peer in list(self._peers.values()):  # _queue may forget one
            if peer.channel in self._listened:
                self._queue(peer, message("up"))

    def _on_notice(self, diagnostic: psycopg.errors.Diagnostic) -> None:
        """Any message but a notification on the idle connection means it is going away."""
        self._noticed = True

    def _drop(self, reason: str) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        _log.warning("notification relay lost its connection: %s", reason)
        if self._pg_socket is not None:
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(self._pg_socket)
            self._pg_socket = None
        with contextlib.suppress(Exception):
            conn.close()
        self._listened.clear()
        self._queued_listens.clear()
        self._pending_pings.clear()
        self._in_flight = None
        self._next_attempt = max(self._next_attempt, time.monotonic() + self._retry_interval)
        down = message("down")
        for peer in list(self._peers.values()):  # _queue may forget one
            self._queue(peer, down)

    def _send_next(self) -> None:
        """Send the next query (a LISTEN, else one ping for every client waiting) when none
        is in flight."""
        conn = self._conn
        if conn is None or self._in_flight is not None:
            return
        if self._queued_listens:
            channel = self._queued_listens.popleft()
            query = sql.SQL("LISTEN {}").format(sql.Identifier(channel)).as_bytes(conn)
            operation: tuple[str, Any] = ("listen", channel)
        elif self._pending_pings:
            query = b"SELECT 1"
            operation = ("ping", self._pending_pings)
            self._pending_pings = []
        else:
            return
        pgconn = conn.pgconn
        started = time.monotonic()
        try:
            pgconn.send_query(query)
            while pgconn.flush():  # the socket's buffer is full: the network is stuck
                time.sleep(0.001)
                if time.monotonic() - started > _PING_TIMEOUT:
                    raise TimeoutError("cannot send")
        except Exception as exc:
            self._drop(str(exc))
            return
        self._in_flight = operation
        self._in_flight_ok = True
        self._in_flight_since = time.monotonic()

    def _read_pg(self) -> None:
        conn = self._conn
        if conn is None:
            return
        pgconn = conn.pgconn
        try:
            pgconn.consume_input()  # what the socket holds (non-blocking)
            self._relay_notifies(pgconn)
            if self._noticed or pgconn.status != ConnStatus.OK:
                raise ConnectionError("the server is closing the connection")
            if self._in_flight is None:
                return
            # Never a blocking get_result: only what libpq has parsed already.
            while not pgconn.is_busy():
                result = pgconn.get_result()
                if result is None:
                    break  # ReadyForQuery read: the answer is complete
                if result.status not in (ExecStatus.TUPLES_OK, ExecStatus.COMMAND_OK):
                    self._in_flight_ok = False
            else:
                return  # the rest of the answer is still on its way
            # SECURITY: the notifications libpq parsed along with the answer (the server
            # sends those committed before the query ahead of its ReadyForQuery) go out
            # before the answer does.
            self._relay_notifies(pgconn)
        except Exception as exc:
            self._drop(str(exc))
            return
        if not self._in_flight_ok:
            self._drop("a query failed")
            return
        operation, self._in_flight = self._in_flight, None
        self._finish(operation)

    def _relay_notifies(self, pgconn: Any) -> None:
        while (notify := pgconn.notifies()) is not None:
            self._relay(
                notify.relname.decode("utf-8", "replace"), notify.extra.decode("utf-8", "replace")
            )

    def _relay(self, channel: str, payload: str) -> None:
        line = message("n", payload)
        now = time.monotonic()
        for peer in list(self._peers.values()):
            if peer.channel == channel:
                self._notify(peer, line, now)

    def _finish(self, operation: tuple[str, Any]) -> None:
        kind, value = operation
        if kind == "listen":
            self._listened.add(value)
            up = message("up")
            for peer in list(self._peers.values()):  # _queue may forget one
                if peer.channel == value:
                    self._queue(peer, up)
            return
        # SECURITY: queued after every notification read before the answer.
        for peer, number in value:
            if peer.sock in self._peers:
                self._queue(peer, message("a", number))

    # -- clients ---------------------------------------------------------------------------------

    def _accept(self) -> None:
        try:
            sock, _address = self._server.accept()
        except OSError:
            return
        if len(self._peers) >= _MAX_CLIENTS:
            sock.close()
            return
        sock.setblocking(False)
        self._peers[sock] = _Peer(sock)
        self._selector.register(sock, selectors.EVENT_READ)
        self._empty_since = None
        self._served = True

    def _serve_peer(self, peer: _Peer, events: int) -> None:
        if events & selectors.EVENT_WRITE:
            self._flush(peer)
        if not events & selectors.EVENT_READ or peer.sock not in self._peers:
            return
        try:
            data = peer.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._forget(peer)
            return
        peer.inbox += data
        *lines, peer.inbox = peer.inbox.split(b"\n")
        if len(peer.inbox) > MAX_LINE:
            self._forget(peer)
            return
        for line in lines:
            try:
                request = orjson.loads(line)
                self._request(peer, request[0], request[1])
            except (orjson.JSONDecodeError, IndexError, TypeError, KeyError):
                self._forget(peer)
                return

    def _request(self, peer: _Peer, kind: str, value: Any) -> None:
        if kind == "listen" and peer.channel is None and isinstance(value, str) and value:
            peer.channel = value
            if value in self._listened and self._conn is not None:
                self._queue(peer, message("up"))
            elif value not in self._wanted:
                self._wanted.add(value)
                if self._conn is not None:
                    self._queued_listens.append(value)
        elif kind == "ping" and isinstance(value, int):
            # Not listening on the channel: the client is told down, or up later.
            if self._conn is not None and peer.channel in self._listened:
                self._pending_pings.append((peer, value))
        else:
            raise KeyError(kind)

    def _notify(self, peer: _Peer, line: bytes, now: float) -> None:
        """Queue the notification ``line`` for ``peer``: sent at once after a quiet spell,
        else held until :data:`HOLD` seconds after the last batch; merged into the same
        line still waiting."""
        if line in peer.merged:
            return
        if len(peer.outbox) + len(line) > _MAX_QUEUED:
            self._forget(peer)  # it stopped reading: it listens anew when it comes back
            return
        was_empty = not peer.outbox
        peer.outbox += line
        peer.merged.add(line)
        if not was_empty:
            return  # held already, or waiting for the socket to take more
        if now - peer.notified_at >= self._hold:
            peer.notified_at = now
            self._flush(peer)
        else:
            peer.due = peer.notified_at + self._hold
            self._holding.add(peer)

    def _send_due(self, now: float) -> None:
        """Send the held notifications whose hold ended."""
        for peer in [peer for peer in self._holding if peer.due is not None and peer.due <= now]:
            peer.notified_at = now
            self._flush(peer)

    def _queue(self, peer: _Peer, message: bytes) -> None:
        """Queue ``message`` (not a notification) for ``peer`` and send it at once, with
        the notifications held ahead of it."""
        if len(peer.outbox) + len(message) > _MAX_QUEUED:
            self._forget(peer)  # it stopped reading: it listens anew when it comes back
            return
        # Nothing merges across it: a notification after it is sent after it.
        peer.merged.clear()
        was_held = peer.due is not None
        was_empty = not peer.outbox
        peer.outbox += message
        if was_held:
            peer.notified_at = time.monotonic()
        if was_empty or was_held:
            self._flush(peer)

    def _flush(self, peer: _Peer) -> None:
        # What the outbox holds is on its way: a repeat of it is a notification anew.
        peer.merged.clear()
        if peer.due is not None:
            peer.due = None
            self._holding.discard(peer)
        try:
            sent = peer.sock.send(peer.outbox)
        except BlockingIOError:
            sent = 0
        except OSError:
            self._forget(peer)
            return
        del peer.outbox[:sent]
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if peer.outbox else 0)
        self._selector.modify(peer.sock, events)

    def _forget(self, peer: _Peer) -> None:
        self._holding.discard(peer)
        if self._peers.pop(peer.sock, None) is None:
            return
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(peer.sock)
        with contextlib.suppress(OSError):
            peer.sock.close()
        if not self._peers and not self._stopping:
            self._empty_since = time.monotonic()


def run_relay(settings: dict[str, Any]) -> None:
    """Run the relay of ``settings`` (``url``, ``path``, ``lock_fd``, ``retry_interval``,
    ``connect_options``, ``parent``, optionally ``hold``) in this process until it ends;
    its log lines go to standard error."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter("svcrest notification relay (pid %(process)d): %(message)s")
    )
    _log.handlers = [handler]
    _log.propagate = False
    relay = RelayProcess(
        settings["url"],
        settings["path"],
        int(settings["lock_fd"]),
        float(settings["retry_interval"]),
        connect_options=settings["connect_options"],
        parent=settings.get("parent"),
        hold=float(settings.get("hold", HOLD)),
    )
    relay.run()


def main() -> None:
    """Run the relay whose settings (a JSON object, see :func:`run_relay`) come on
    standard input."""
    run_relay(orjson.loads(sys.stdin.buffer.read()))


if __name__ == "__main__":
    main()
