"""One PostgreSQL ``LISTEN`` connection per host, shared by its processes over a unix socket.

A ``LISTEN`` needs a direct connection to PostgreSQL (a pooler in transaction mode cannot
carry one), and a site of 16 hosts of 8 worker processes with one listener per process holds
128 of them, more than PostgreSQL's default ``max_connections`` of 100. Here the processes
of a host that listen on the same database share one connection:

- The first process whose :class:`RelayListener` finds no relay running takes an exclusive
  ``flock`` on ``<run dir>/listen-<hash>.lock`` and starts the host's relay
  (:mod:`svcrest.store.pg_relay_process`), a small process of its own to which it hands the
  lock: it holds the one listening connection (``application_name`` ``svcrest-listen``) and
  serves the socket ``<run dir>/listen-<hash>.sock`` (``hash``: of the listener's connection
  string, so each database has its own relay). Every process, the starter included,
  connects to that socket as a client. The relay is a fresh interpreter importing nothing
  of svcrest but its module (not a fork of the worker: the child's interpreter would
  finalize the worker's other threads' event loops, whose closing unregisters their
  descriptors from the epoll instance it shares with its parent, whose loop then waits
  forever).
- The relay sends each client the notifications of its channel in batches (the first after a
  quiet spell at once, the next at most every
  :data:`~svcrest.store.pg_relay_process.HOLD` seconds, repeats of a payload waiting in a
  batch merged), so that a client's reading thread wakes at most about a hundred times a
  second however fast the writes come; it answers
  a client's ping with a ``SELECT 1`` of its own, sent after the ping reached it, whose
  answer it relays only after every notification that arrived before it: the client's
  ping keeps the promise of :meth:`svcrest.store.pg_listen.PostgresListener.ping` (every
  notification committed before the ping was sent arrives before its answer), as the unix
  socket keeps the order of what the relay writes. Pings of several clients waiting at
  the same time share one ``SELECT 1``. A ping is a read: no transaction id is spent.
- The relay tells its clients when its connection is lost (``down``) and when it listens
  again (``up``); a client counts a new epoch at each ``up``, and is not listening while
  down or while it has no relay, so a session cache stops trusting its entries then.
- The relay ends half a second after its last client left, and within a second of the end
  of the process that started it. When it ends (or is killed), the kernel closes its
  sockets and releases its lock: each client sees the end of its connection (not listening
  from that moment), one of them takes the lock and starts another relay, and the others
  connect to it.

PERF: a relay of its own answers pings whatever its starter does: 200 pings 17 ms apart
through a relay whose starter spins on a second thread took 0.3 / 8.1 / 12.2 ms (p50 / p99 /
max) on a loaded 2-core machine, against 10.7 / 28.2 / 41.5 when the relay was a thread of
the starter, waiting for its GIL (``bench/relay_ping.py``). A ping's answer is never held
back by a batch: it takes the held notifications along. It costs a process per host and
database and, when the first worker listens, the start of an interpreter (about half a
second; a fork would be at once, but see above).

SECURITY: the run directory is created with mode ``0700`` and used only when it belongs to
this user and nobody else may write to it: a process of another user could otherwise
impersonate the relay and answer pings it never made. Where no such directory can be
had (or the platform has no unix sockets or ``flock``), each process listens on its own
connection (:class:`svcrest.store.pg_listen.PostgresListener`).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import socket
import stat
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from svcrest.store import pg_relay_process
from svcrest.store.base import StoreError
from svcrest.store.pg_listen import CONNECT_OPTIONS, ListenerCallback, ListenerState
from svcrest.store.pg_relay_process import MAX_LINE, message

__all__ = ["ENV_RUN_DIR", "RelayListener", "default_run_dir", "relay_paths"]

_log = logging.getLogger("svcrest.store")

#: The environment variable naming the directory of the host's relay socket and lock.
ENV_RUN_DIR = "SVCREST_RUN_DIR"
#: Payloads a client holds before its caller polls (past it a new epoch begins, as when
#: notifications are lost).
_MAX_HELD = 100_000
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


# -- the relay's process (one per host and database) ----------------------------------------

#: The relays this process started (their process ids), by socket path, and how many of
#: this process's listeners use each path.
_STARTED: dict[str, int] = {}
_USERS: dict[str, int] = {}
_HOSTED_LOCK = threading.Lock()
#: Lock descriptors being handed to a relay starting now, and the live listeners.
_HANDING: set[int] = set()
_LISTENERS: weakref.WeakSet[RelayListener] = weakref.WeakSet()
#: A spawned relay runs its module by its file, importing nothing of svcrest but it (the
#: whole package would take over a second to import).
_BOOT = (
    "import importlib.util as u, sys; s = u.spec_from_file_location('svcrest_relay', sys.argv[1]);"
    " m = u.module_from_spec(s); s.loader.exec_module(m); m.main()"
)
#: The descriptor a spawned relay finds its lock at.
_SPAWNED_LOCK_FD = 3


def _forget_relays_after_fork() -> None:
    """In a child made by ``fork``: its copies of the listeners' connections to the relay
    (a relay lives as long as one is open) and of a lock being handed over are closed, and
    the relays started are the parent's, not its own (the listeners' threads did not come
    along). No lock is taken here: another thread of the parent may have held it."""
    for fd in list(_HANDING):
        with contextlib.suppress(OSError):
            os.close(fd)
    _HANDING.clear()
    for listener in list(_LISTENERS):
        listener._forget_after_fork()
    _STARTED.clear()
    _USERS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_relays_after_fork)


def _use(path: str, delta: int) -> None:
    with _HOSTED_LOCK:
        count = _USERS.get(path, 0) + delta
        if count > 0:
            _USERS[path] = count
        else:
            _USERS.pop(path, None)


def _reap(pid: int) -> None:
    """Wait for the relay process ``pid`` to end, so that it leaves no zombie."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _running(pid: int) -> bool:
    """Whether the relay process ``pid`` (a child of this one) runs; reaps it when not."""
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return done == 0


def _lead(url: str, path: str, lock_path: str, retry_interval: float) -> bool:
    """Start the host's relay of ``path`` unless a process runs it (or is starting it);
    whether this process started it and it has not ended."""
    with _HOSTED_LOCK:
        started = _STARTED.get(path)
        if started is not None:
            if _running(started):
                return True  # still starting: connect again shortly
            del _STARTED[path]  # it ended: start another
        if path not in _USERS or _flock is None:
            return False  # every listener of this process closed meanwhile
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        if not _flock(fd):
            os.close(fd)
            return False
        _HANDING.add(fd)
        try:
            pid = _STARTED[path] = _spawn_relay(url, path, fd, retry_interval)
        except OSError as exc:
            _log.warning("cannot start the notification relay at %r: %s", path, exc)
            return False
        finally:  # the relay holds the lock now (or nobody does)
            _HANDING.discard(fd)
            os.close(fd)
        _log.info("started the host's notification relay (pid %d, %s)", pid, path)
        threading.Thread(
            target=_reap, args=(pid,), name="svcrest-relay-reaper", daemon=True
        ).start()
        return True


def _settings(url: str, path: str, lock_fd: int, retry_interval: float) -> dict[str, Any]:
    return {
        "url": url,
        "path": path,
        "lock_fd": lock_fd,
        "retry_interval": retry_interval,
        "connect_options": CONNECT_OPTIONS,
        "parent": os.getpid(),
        "hold": pg_relay_process.HOLD,
    }


def _spawn_relay(url: str, path: str, lock_fd: int, retry_interval: float) -> int:
    """The relay as a fresh interpreter holding the lock ``lock_fd`` (at descriptor 3), its
    settings on its standard input (SECURITY: the connection string holds a password,
    never on a command line); its process id."""
    settings = _settings(url, path, _SPAWNED_LOCK_FD, retry_interval)
    read_end, write_end = os.pipe()
    try:
        pid = os.posix_spawn(
            sys.executable,
            [sys.executable, "-c", _BOOT, str(pg_relay_process.__file__)],
            os.environ,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, read_end, 0),
                (os.POSIX_SPAWN_DUP2, lock_fd, _SPAWNED_LOCK_FD),
            ],
            setsid=True,
        )
    finally:
        os.close(read_end)
    with os.fdopen(write_end, "wb") as pipe:
        pipe.write(orjson.dumps(settings))
    return pid


# -- the client (one per listener) -----------------------------------------------------------


class RelayListener(ListenerState):
    """A :class:`svcrest.store.Listener` of ``channel`` fed by the host's relay at ``path``
    (started in this process when none runs; see the module docstring).

    A thread reads what the relay sends: notifications are held for :meth:`poll` (at most
    100,000: past it they are dropped and a new epoch begins) and passed to the callbacks
    added with :meth:`add_callback`, in that thread, as they arrive. The relay sends them
    in batches (the first after a quiet spell at once; a ping's answer, ``up`` and ``down``
    at once, with what was held), merging repeats of a payload within a batch."""

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
        #: The reads of the relay's socket that brought data (a test counts the batches).
        self._reads = 0
        _use(path, +1)
        _LISTENERS.add(self)
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
        """The payloads received since the last call, or None when not listening. Repeats of
        a payload received in one batch of the relay may come merged into one (a payload
        says what changed, not how many times)."""
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
                sock.sendall(message("ping", number))
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
                sock.sendall(message("listen", self._channel))
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
            self._reads += 1
            pending += data
            *lines, pending = pending.split(b"\n")
            if len(pending) > MAX_LINE:
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

    def _forget_after_fork(self) -> None:
        """In a child made by ``fork`` (no thread of this listener came along): close its
        copy of the connection to the relay, without a lock (another thread may have held
        it at the fork), so that the parent's closing still ends the relay's client."""
        sock, self._sock = self._sock, None
        self._listening = False
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.close()

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
