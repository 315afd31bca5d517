"""One PostgreSQL ``LISTEN`` connection per host, shared by its processes over a unix socket.

A ``LISTEN`` needs a direct connection to PostgreSQL (a pooler in transaction mode cannot
carry one), and a site of 16 hosts of 8 worker processes with one listener per process holds
128 of them, more than PostgreSQL's default ``max_connections`` of 100. Here the processes
of a host that listen on the same database share one connection:

- The first process whose :class:`RelayListener` finds no relay running takes an exclusive
  ``flock`` on ``<run dir>/listen-<hash>.lock`` and becomes the host's relay: a thread that
  holds the one listening connection (``application_name`` ``svcrest-listen``) and serves
  the socket ``<run dir>/listen-<hash>.sock`` (``hash``: of the listener's connection
  string, so each database has its own relay). Every process, the relay's own included,
  connects to that socket as a client.
- The relay sends each client the notifications of its channel as they arrive, and answers
  a client's ping with a ``SELECT 1`` of its own, sent after the ping reached it, whose
  answer it relays only after every notification that arrived before it: the client's
  ping keeps the promise of :meth:`svcrest.store.pg_listen.PostgresListener.ping` (every
  notification committed before the ping was sent arrives before its answer), as the unix
  socket keeps the order of what the relay writes. Pings of several clients waiting at
  the same time share one ``SELECT 1``. A ping is a read: no transaction id is spent.
- The relay tells its clients when its connection is lost (``down``) and when it listens
  again (``up``); a client counts a new epoch at each ``up``, and is not listening while
  down or while it has no relay, so a session cache stops trusting its entries then.
- When the relay's process exits (or is killed), the kernel closes its sockets and releases
  its lock: each client sees the end of its connection (not listening from that moment),
  one of them takes the lock and becomes the relay, and the others connect to it.

PERF: the relay is a thread of one of the host's worker processes, so it answers pings only
as fast as that process lets go of the GIL: through a relay whose process spins on another
thread, pings took 58 ms at the median on a loaded 2-core machine (7 ms through an idle one,
5 ms straight to PostgreSQL); a late answer makes the caches read the store, never trust
longer.

SECURITY: the run directory is created with mode ``0700`` and used only when it belongs to
this user and nobody else may write to it: a process of another user could otherwise
impersonate the relay and answer pings it never made. Where no such directory can be
had (or the platform has no unix sockets or ``flock``), each process listens on its own
connection (:class:`svcrest.store.pg_listen.PostgresListener`).
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import logging
import os
import selectors
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import psycopg
from psycopg import sql
from psycopg.pq import ConnStatus, ExecStatus

from svcrest.store.base import StoreError
from svcrest.store.pg_listen import CONNECT_OPTIONS, ListenerCallback, ListenerState

__all__ = ["ENV_RUN_DIR", "RelayListener", "default_run_dir", "relay_paths"]

_log = logging.getLogger("svcrest.store")

#: The environment variable naming the directory of the host's relay socket and lock.
ENV_RUN_DIR = "SVCREST_RUN_DIR"
#: Bounds: payloads a client holds before its caller polls (past it a new epoch begins, as
#: when notifications are lost); bytes the relay queues for a client before dropping it; a
#: message's length; clients of one relay.
_MAX_HELD = 100_000
_MAX_QUEUED = 8 * 1024 * 1024
_MAX_LINE = 64 * 1024
_MAX_CLIENTS = 4096
#: Seconds a relayed ping may take before the relay's connection counts as broken.
_PING_TIMEOUT = 5.0
#: The longest unix socket path (``sun_path`` holds 108 bytes on Linux, 104 elsewhere).
_MAX_SOCKET_PATH = 100


def default_run_dir() -> Path:
    """``$SVCREST_RUN_DIR``, else ``$XDG_RUNTIME_DIR/svcrest``, else ``svcrest-<uid>`` in
    the temporary directory."""
    named = os.environ.get(ENV_RUN_DIR)
    if named:
        return Path(named)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "svcrest"
    return Path(tempfile.gettempdir()) / f"svcrest-{os.getuid()}"


def relay_paths(run_dir: str | os.PathLike[str], conninfo: str) -> tuple[str, str]:
    """The socket and lock paths of the relay of ``conninfo`` in ``run_dir`` (created
    private when missing); StoreError when it cannot be used safely."""
    if not hasattr(socket, "AF_UNIX") or _flock is None:
        raise StoreError("no unix sockets or flock on this platform")
    directory = Path(run_dir)
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = directory.lstat()
    except OSError as exc:
        raise StoreError(f"cannot use run directory {str(directory)!r}: {exc}") from exc
    # SECURITY: another user able to write here could stand in for the relay.
    if (
        not stat.S_ISDIR(info.st_mode)
        or info.st_uid != os.getuid()
        or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    ):
        raise StoreError(
            f"run directory {str(directory)!r} must be a directory of this user"
            " that no one else may write to"
        )
    name = hashlib.sha256(conninfo.encode("utf-8")).hexdigest()[:16]
    path = str(directory / f"listen-{name}.sock")
    if len(path.encode("utf-8")) > _MAX_SOCKET_PATH:
        raise StoreError(f"run directory {str(directory)!r} is too long a path for a socket")
    return path, str(directory / f"listen-{name}.lock")


def _load_flock() -> Callable[[int], bool] | None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on POSIX
        return None

    def flock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        return True

    return flock


_flock = _load_flock()


def _message(*parts: object) -> bytes:
    return orjson.dumps(parts) + b"\n"


# -- the relay (one per host and database) ---------------------------------------------------


class _Peer:
    """A client connection of the relay."""

    __slots__ = ("channel", "inbox", "outbox", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.channel: str | None = None
        self.inbox = b""
        self.outbox = bytearray()


class _Relay:
    """The host's listening connection and the socket its processes connect to; one thread."""

    def __init__(self, url: str, path: str, lock_fd: int, retry_interval: float) -> None:
        self._url = url
        self._path = path
        self.lock_fd = lock_fd
        self._retry_interval = retry_interval
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a dead relay's (this process holds the lock now)
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(path)
        os.chmod(path, 0o600)
        self._server.listen(128)
        self._server.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._server, selectors.EVENT_READ)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._peers: dict[socket.socket, _Peer] = {}
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
        self._thread = threading.Thread(target=self._run, name="svcrest-listen-relay", daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        """Whether the relay's thread runs."""
        return self._thread.is_alive()

    def stop(self) -> None:
        """Close every connection, remove the socket and release the lock."""
        self._stopping = True
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        if threading.current_thread() is not self._thread:
            self._thread.join(10)

    # -- the loop --------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._stopping:
                self._turn()
        except Exception:
            _log.exception("the notification relay stopped")
        finally:
            self._shut()

    def _turn(self) -> None:
        now = time.monotonic()
        if self._conn is None and now >= self._next_attempt:
            self._connect()
        self._send_next()
        if self._conn is None:  # looked at again every second at least
            timeout = min(1.0, max(0.0, self._next_attempt - time.monotonic()))
        elif self._in_flight is not None:
            timeout = max(0.0, self._in_flight_since + _PING_TIMEOUT - time.monotonic())
            if timeout == 0.0:
                self._drop("a query went unanswered")
                return
        else:
            timeout = 1.0
        for key, events in self._selector.select(timeout):
            target = key.fileobj
            if target is self._server:
                self._accept()
            elif target is self._wake_r:
                with contextlib.suppress(OSError):
                    self._wake_r.recv(64)
            elif target == self._pg_socket:
                self._read_pg()
            elif isinstance(target, socket.socket):
                peer = self._peers.get(target)
                if peer is not None:
                    self._serve_peer(peer, events)

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
        for closing in (self._server, self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                closing.close()
        self._selector.close()
        os.close(self.lock_fd)

    # -- PostgreSQL ------------------------------------------------------------------------------

    def _connect(self) -> None:
        self._next_attempt = time.monotonic() + self._retry_interval
        try:
            conn = psycopg.connect(self._url, **CONNECT_OPTIONS)
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
                self._queue(peer, _message("up"))

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
        down = _message("down")
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
        message = _message("n", payload)
        for peer in list(self._peers.values()):
            if peer.channel == channel:
                self._queue(peer, message)

    def _finish(self, operation: tuple[str, Any]) -> None:
        kind, value = operation
        if kind == "listen":
            self._listened.add(value)
            up = _message("up")
            for peer in list(self._peers.values()):  # _queue may forget one
                if peer.channel == value:
                    self._queue(peer, up)
            return
        # SECURITY: queued after every notification read before the answer.
        for peer, number in value:
            if peer.sock in self._peers:
                self._queue(peer, _message("a", number))

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
        if len(peer.inbox) > _MAX_LINE:
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
                self._queue(peer, _message("up"))
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

    def _queue(self, peer: _Peer, message: bytes) -> None:
        if len(peer.outbox) + len(message) > _MAX_QUEUED:
            self._forget(peer)  # it stopped reading: it listens anew when it comes back
            return
        was_empty = not peer.outbox
        peer.outbox += message
        if was_empty:
            self._flush(peer)

    def _flush(self, peer: _Peer) -> None:
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
        if self._peers.pop(peer.sock, None) is None:
            return
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(peer.sock)
        with contextlib.suppress(OSError):
            peer.sock.close()


#: The relays this process runs, by socket path, and how many of this process's listeners
#: use each path (a relay stops when the last of them closes).
_HOSTED: dict[str, _Relay] = {}
_USERS: dict[str, int] = {}
_HOSTED_LOCK = threading.Lock()


def _forget_relays_after_fork() -> None:
    """In a child made by ``fork``: the relays' threads did not come along; close the copies
    of their lock descriptors, or the lock would outlive the parent and no process of the
    host could take over."""
    for relay in _HOSTED.values():
        with contextlib.suppress(OSError):
            os.close(relay.lock_fd)
    _HOSTED.clear()
    _USERS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_relays_after_fork)


def _use(path: str, delta: int) -> None:
    relay = None
    with _HOSTED_LOCK:
        count = _USERS.get(path, 0) + delta
        if count > 0:
            _USERS[path] = count
        else:
            _USERS.pop(path, None)
            relay = _HOSTED.pop(path, None)
    if relay is not None:
        relay.stop()


def _lead(url: str, path: str, lock_path: str, retry_interval: float) -> bool:
    """Become the host's relay of ``path`` unless another process is; whether this process
    now runs it."""
    with _HOSTED_LOCK:
        hosted = _HOSTED.get(path)
        if hosted is not None:
            if hosted.alive:
                return True
            del _HOSTED[path]  # its thread ended (logged): start another
        if path not in _USERS or _flock is None:
            return False  # every listener of this process closed meanwhile
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        if not _flock(fd):
            os.close(fd)
            return False
        try:
            _HOSTED[path] = _Relay(url, path, fd, retry_interval)
        except OSError as exc:
            os.close(fd)
            _log.warning("cannot start the notification relay at %r: %s", path, exc)
            return False
        _log.info("this process relays notifications to the host's processes (%s)", path)
        return True


# -- the client (one per listener) -----------------------------------------------------------


class RelayListener(ListenerState):
    """A :class:`svcrest.store.Listener` of ``channel`` fed by the host's relay at ``path``
    (started in this process when none runs; see the module docstring).

    A thread reads what the relay sends: notifications are held for :meth:`poll` (at most
    100,000: past it they are dropped and a new epoch begins) and passed to the callbacks
    added with :meth:`add_callback`, in that thread, as they arrive."""

    def __init__(
        self,
        url: str,
        channel: str,
        path: str,
        lock_path: str,
        *,
        retry_interval: float = 1.0,
        connect_timeout: float = 5.0,
    ) -> None:
        super().__init__()
        self._url = url
        self._channel = channel
        self._path = path
        self._lock_path = lock_path
        self._retry_interval = retry_interval
        self._cond = threading.Condition()
        self._send_lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._listening = False
        self._callbacks: list[ListenerCallback] = []
        self._stop = threading.Event()
        _use(path, +1)
        self._thread = threading.Thread(target=self._run, name="svcrest-listen", daemon=True)
        self._thread.start()
        # As a listener on its own connection does, start out listening when it can.
        with self._cond:
            self._cond.wait_for(lambda: self._epoch > 0, connect_timeout)

    @property
    def listening(self) -> bool:
        """Whether the relay listens for this listener now."""
        return self._listening and not self._closed

    def add_callback(self, callback: ListenerCallback) -> None:
        """Call ``callback(payloads)`` with the payloads of each batch as it arrives, and
        ``callback(None)`` when notifications may have been lost (not listening, or a new
        epoch); from the listener's thread, so it must be quick and must not raise."""
        with self._cond:
            self._callbacks.append(callback)

    def poll(self) -> list[str] | None:
        """The payloads received since the last call, or None when not listening."""
        with self._cond:
            if self._closed or not self._listening:
                return None
            payloads, self._received = self._received, []
            return payloads

    def ping(self, number: int, timeout: float = 5.0) -> bool:
        """Have the relay send ``SELECT 1`` after this call and wait (up to ``timeout``
        seconds) for its answer; then :attr:`answered` is ``number`` and every notification
        committed before the call is in what :meth:`poll` returns next. False when not
        listening, when the relay changed epoch, or when no answer came in time."""
        with self._cond:
            sock = self._sock
            if self._closed or not self._listening or sock is None:
                return False
            epoch = self._epoch
        try:
            with self._send_lock:
                sock.sendall(_message("ping", number))
        except OSError:
            return False
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._epoch == epoch and self._listening and not self._closed:
                if self._answered >= number:
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return False

    def close(self) -> None:
        """Stop listening; ``poll`` answers None from now on. The last listener of this
        process to close stops the relay it runs (another process takes over)."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            sock, self._sock = self._sock, None
            self._cond.notify_all()
        self._stop.set()
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)
        _use(self._path, -1)

    # -- the reading thread ----------------------------------------------------------------------

    def _run(self) -> None:
        pause = 0.0
        while not self._stop.wait(pause):
            sock = self._open()
            if sock is None:
                pause = 0.02  # the new relay is starting: try again soon
                continue
            pause = 0.0
            try:
                self._read(sock)
            finally:
                with contextlib.suppress(OSError):
                    sock.close()
                self._lost(sock)

    def _open(self) -> socket.socket | None:
        """A connection to the host's relay, which this process starts when none runs."""
        for _attempt in range(2):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.settimeout(1.0)
                sock.connect(self._path)
                sock.sendall(_message("listen", self._channel))
            except OSError:
                sock.close()
                if not _lead(self._url, self._path, self._lock_path, self._retry_interval):
                    return None
                continue
            with self._cond:
                if self._closed:
                    sock.close()
                    return None
                self._sock = sock
            return sock
        return None

    def _read(self, sock: socket.socket) -> None:
        pending = b""
        while not self._closed:
            try:
                data = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not data:
                return
            pending += data
            *lines, pending = pending.split(b"\n")
            if len(pending) > _MAX_LINE:
                return
            try:
                self._handle(lines)
            except (ValueError, TypeError, IndexError):  # not the relay's protocol: reconnect
                _log.warning("the notification relay sent something unexpected")
                return

    def _handle(self, lines: list[bytes]) -> None:
        payloads: list[str] = []
        lost = False
        with self._cond:
            for line in lines:
                kind, *rest = orjson.loads(line)
                if kind == "n":
                    if len(self._received) >= _MAX_HELD:
                        # Nobody polls: drop what is held and begin a new epoch.
                        self._received = []
                        self._new_epoch()
                        lost = True
                    self._received.append(rest[0])
                    payloads.append(rest[0])
                elif kind == "a":
                    self._answered = max(self._answered, int(rest[0]))
                elif kind == "up":
                    self._new_epoch()
                    self._listening = True
                    lost = True
                elif kind == "down":
                    self._listening = False
                    lost = True
            self._cond.notify_all()
            callbacks = list(self._callbacks)
        for callback in callbacks:
            if lost:
                self._call(callback, None)
            if payloads:
                self._call(callback, payloads)

    def _call(self, callback: ListenerCallback, payloads: list[str] | None) -> None:
        try:
            callback(payloads)
        except Exception:
            _log.exception("a notification callback of %r failed", self._channel)

    def _lost(self, sock: socket.socket) -> None:
        with self._cond:
            if self._sock is sock:
                self._sock = None
            was = self._listening
            self._listening = False
            self._cond.notify_all()
            callbacks = list(self._callbacks) if was else []
        for callback in callbacks:
            self._call(callback, None)
