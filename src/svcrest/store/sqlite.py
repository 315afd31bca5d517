"""The embedded SQLite engine of :class:`svcrest.store.Store`: users, sessions, options (the
site secret) and plugin tables.

``SqliteStore(None)`` (or ``":memory:"``) is a private in-memory database shared by every thread
of the process; a path or a ``sqlite:///relative.db`` / ``sqlite:////absolute.db`` URL is a file
in WAL mode that several worker processes on one host may open at once.

Writes go through :meth:`SqliteStore.transaction` (``BEGIN IMMEDIATE`` … ``COMMIT``), reads
through :meth:`SqliteStore.read` (one consistent snapshot). Both may be nested in one thread: the
inner block reuses the outer connection (a nested transaction is a SAVEPOINT). Neither may be
held across an ``await``: the store is synchronous and a block belongs to the thread that
opened it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from svcrest.store.base import (
    BOOTSTRAP_SQL,
    STORE_SCHEMA,
    BlockState,
    Connection,
    Dialect,
    Step,
    StoreBase,
    StoreError,
    apply_steps,
    check_component,
    refuse_write_in_read,
    savepoint,
)
from svcrest.store.errors import RETRY_AFTER_SECONDS, StoreBusyError
from svcrest.store.wal_index import HEADER_BYTES, WalIndex, attach, detach, forget_after_fork

__all__ = [
    "RETRY_AFTER_SECONDS",
    "SqliteStore",
    "StoreBusyError",
    "StoreError",
    "retry_while_locked",
]

_MEMORY = ":memory:"
_URL_PREFIX = "sqlite://"
_BUSY_TIMEOUT_MS = 5000
# PERF: idle file connections kept for reuse; more concurrent threads than this still work,
# their extra connections are closed when released.
_MAX_IDLE = 16


class _MarkedConnection(sqlite3.Connection):
    """A connection that remembers what :meth:`SqliteStore.change_mark` last saw through it:
    the database's ``PRAGMA data_version`` (which moves when another connection commits) and
    its own ``total_changes`` (which moves when it writes itself)."""

    seen_version: int = -1
    seen_changes: int = -1


def _resolve_location(location: str | None) -> str | None:
    """The file path of ``location``, or None for an in-memory database."""
    if location is None or location in ("", _MEMORY):
        return None
    if not isinstance(location, str):
        raise StoreError(f"store location must be a string or None, not {type(location).__name__}")
    path = location
    if location.startswith("sqlite:") and not location.startswith(_URL_PREFIX):
        raise StoreError(
            f"malformed store URL {location!r}"
            " (use sqlite:///relative/path.db or sqlite:////absolute/path.db)"
        )
    if "://" in location:
        if not location.startswith(_URL_PREFIX):
            scheme = location.split("://", 1)[0]
            raise StoreError(f"unsupported store URL scheme {scheme!r} (only sqlite:// is known)")
        rest = location[len(_URL_PREFIX) :]
        if rest in ("", "/" + _MEMORY):
            return None
        if not rest.startswith("/") or rest == "/":
            raise StoreError(
                f"store URL {location!r} has no database path"
                " (use sqlite:///relative/path.db or sqlite:////absolute/path.db)"
            )
        # sqlite:///rel.db -> "rel.db"; sqlite:////abs.db -> "/abs.db" (the SQLAlchemy rule).
        path = rest[1:]
    if "\x00" in path:
        raise StoreError("store path contains a NUL character")
    parent = Path(path).parent
    if not parent.is_dir():
        raise StoreError(f"store directory {str(parent)!r} does not exist (for {location!r})")
    return path


def _run_statements(conn: Connection, sql: str) -> None:
    """Run a migration step, statement by statement (sqlite3 runs one per ``execute``)."""
    for statement in _split_statements(sql):
        conn.execute(statement)


def _split_statements(script: str) -> list[str]:
    """Split a schema step into complete SQL statements (semicolons in literals are kept)."""
    statements: list[str] = []
    buffer = ""
    for piece in script.split(";"):
        buffer = f"{buffer};{piece}" if buffer else piece
        if sqlite3.complete_statement(buffer + ";"):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements


class SqliteStore(StoreBase):
    """An embedded SQLite database (in memory, or a WAL-mode file).

    PERF: a file store hands each thread its own connection from a small pool instead of
    serialising every thread on one connection behind a lock: in WAL mode readers on separate
    connections proceed while a writer commits, and opening a connection (plus its PRAGMAs) per
    operation would cost more than the queries. An in-memory database exists only inside its
    one connection, so that connection is shared and guarded by a lock.
    """

    #: The SQL dialect of this engine.
    dialect: Dialect = "sqlite"

    def __init__(self, location: str | None = None) -> None:
        self.path: str | None = _resolve_location(location)
        self._lock = threading.Lock()  # guards the pool and the closed flag
        self._memory_lock = threading.Lock()  # held while a thread uses the memory connection
        self._local = BlockState()  # per thread: the checked-out connection and its depth
        self._idle: list[_MarkedConnection] = []
        self._memory: _MarkedConnection | None = None
        self._closed = False
        self._pid = os.getpid()
        self._mark = 0  # see change_mark
        # Where change marks come from (:class:`_MarkSource`), chosen at open: the one memory
        # connection, or ``PRAGMA data_version`` until _watch_wal maps the wal-index.
        self._marks: _MarkSource = _DATA_VERSION_MARKS
        self._use_marks(_MemoryMarks(self) if self.path is None else _DATA_VERSION_MARKS)
        # File connections of this store still open, idle or in use (the wal-index mapping is
        # let go only once none is: svcrest.store.wal_index says why).
        self._open_connections = 0
        # A connection held open only to keep the wal-index file in use (see _watch_wal).
        self._anchor: _MarkedConnection | None = None
        self._wal_index: WalIndex | None = None  # attached: detached when the store closes
        if self.path is None:
            self._memory = self._connect(_MEMORY)
        else:
            first = self._connect(self.path)
            self._open_connections = 1
            try:
                self._enable_wal(first)
            except sqlite3.Error as exc:
                first.close()
                raise StoreError(
                    f"cannot open store {self.path!r}: {exc}", reason=str(exc)
                ) from exc
            self._idle.append(first)
        try:
            self.migrate("store", STORE_SCHEMA)
        except sqlite3.Error as exc:
            self.close()
            raise StoreError(
                f"cannot open store {self.path or _MEMORY!r}: {exc}", reason=str(exc)
            ) from exc
        except BaseException:
            self.close()
            raise
        if self.path is not None:
            self._watch_wal(self.path)

    # -- connections ---------------------------------------------------------------------------

    def _connect(self, target: str) -> _MarkedConnection:
        try:
            # isolation_level=None: no implicit transactions, we issue BEGIN/COMMIT ourselves.
            conn = sqlite3.connect(
                target,
                timeout=_BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,
                check_same_thread=False,
                factory=_MarkedConnection,
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open store {target!r}: {exc}", reason=str(exc)) from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA foreign_keys = ON")
            if target != _MEMORY:
                # Durable at every checkpoint, and safe against corruption, in WAL mode.
                conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.Error as exc:
            conn.close()
            raise StoreError(f"cannot open store {target!r}: {exc}", reason=str(exc)) from exc
        return conn

    @staticmethod
    def _enable_wal(conn: sqlite3.Connection) -> None:
        # The journal mode is stored in the file: set once, every later connection gets it.
        # Processes opening a new file at once can get "database is locked" here at once:
        # SQLite does not always wait on its busy handler for this lock, so we do.
        def switch() -> None:
            row = conn.execute("PRAGMA journal_mode").fetchone()
            if row is None or str(row[0]).lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")

        retry_while_locked(switch, _BUSY_TIMEOUT_MS / 1000)

    def _take(self) -> _MarkedConnection:
        """A connection for this thread (memory: after taking the lock)."""
        if self._memory is not None:
            self._memory_lock.acquire()
            if self._closed:
                self._memory_lock.release()
                raise StoreError("the store is closed")
            return self._memory
        assert self.path is not None
        with self._lock:
            if self._closed:
                raise StoreError("the store is closed")
            if os.getpid() != self._pid:
                # SECURITY: connections opened before a fork must never be used (or closed) in
                # the child: SQLite's file locks would be shared. Drop them and start afresh.
                self._idle = []
                self._open_connections = 0
                self._pid = os.getpid()
            if self._idle:
                return self._idle.pop()
            self._open_connections += 1
        try:
            return self._connect(self.path)
        except BaseException:
            self._closed_one()
            raise

    def _give_back(self, conn: _MarkedConnection) -> None:
        if self._memory is not None:
            self._memory_lock.release()
            return
        with self._lock:
            if not self._closed and len(self._idle) < _MAX_IDLE and not conn.in_transaction:
                self._idle.append(conn)
                return
        conn.close()
        self._closed_one()

    def _closed_one(self) -> None:
        """A file connection of this store was closed (or failed to open); the last one of a
        closed store lets the wal-index go."""
        with self._lock:
            self._open_connections -= 1
            last = self._closed and self._open_connections == 0
        if last:
            self._release_wal()

    # -- change marks from the wal-index ---------------------------------------------------------

    def _watch_wal(self, path: str) -> None:
        """Take change marks from the wal-index header (``svcrest.store.wal_index``) when it
        can be mapped safely; otherwise ``PRAGMA data_version`` stays.

        SECURITY: an anchor connection, opened here and used for nothing else, has read once
        (which opens the wal-index) and stays open until the store closes: while it is open
        SQLite never deletes or truncates the ``-shm`` file being read.
        """
        try:
            anchor = self._connect(path)
        except StoreError:
            return
        try:
            anchor.execute("SELECT count(*) FROM sqlite_master").fetchone()
            index = attach(path)
        except (sqlite3.Error, OSError, ValueError):  # ValueError: mmap refused the file
            index = None
        if index is None:
            anchor.close()
            return
        self._anchor, self._wal_index = anchor, index
        _watching.add(self)
        if index.is_initialised():
            self._use_marks(_WalIndexMarks(self, index.mapping))

    def _use_marks(self, source: _MarkSource) -> None:
        """Take change marks from ``source`` from now on. PERF: a source of this store's own
        answers :meth:`change_mark` itself, as the store's attribute (one Python call a mark
        instead of two, bench/instructions.py); ``PRAGMA data_version`` goes through the
        method. A source's ``mark`` taken earlier (``f = store.change_mark``) hands over to
        the method once its source is replaced."""
        self._marks = source
        own = getattr(source, "mark", None)
        if own is not None:
            self.change_mark = own  # type: ignore[method-assign]
        else:
            vars(self).pop("change_mark", None)

    def _release_wal(self) -> None:
        """Close the anchor, then let the wal-index go (after every other connection of the
        store: see ``svcrest.store.wal_index``)."""
        self._marks = _DATA_VERSION_MARKS
        anchor, self._anchor = self._anchor, None
        index, self._wal_index = self._wal_index, None
        if anchor is not None:
            anchor.close()
        if index is not None:
            detach(index)

    def _forget_wal_after_fork(self) -> None:
        """In a forked child: the parent's anchor and mapping are not this process's to use
        or close; change marks come from ``PRAGMA data_version`` again."""
        self._use_marks(_DATA_VERSION_MARKS)
        self._anchor = None
        self._wal_index = None

    @contextlib.contextmanager
    def _checkout(self) -> Iterator[tuple[sqlite3.Connection, int]]:
        """This thread's connection and the nesting depth (0 for the outermost block)."""
        local = self._local
        conn: sqlite3.Connection | None = local.conn
        if conn is not None:
            local.depth += 1
            try:
                yield conn, local.depth
            finally:
                local.depth -= 1
            return
        conn = self._take()
        local.conn, local.depth = conn, 0
        try:
            yield conn, 0
        finally:
            local.conn = None
            self._give_back(conn)

    # -- public API ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A connection inside ``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on an exception).

        ``BEGIN IMMEDIATE`` takes the write lock up front, so two processes never deadlock
        upgrading read transactions; a busy database is waited for up to 5 s. Nested in another
        block of the same thread it is a SAVEPOINT of the outer transaction; it may not be
        nested in :meth:`read` (StoreError), because a read snapshot cannot safely become a
        write transaction once another connection has written.
        """
        with self._checkout() as (conn, depth):
            refuse_write_in_read(self._local, depth)
            if conn.in_transaction:
                with savepoint(conn, depth):
                    yield conn
                return
            _begin_immediate(conn)
            try:
                yield conn
                if conn.in_transaction:  # the block may have ended it itself
                    conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def read(self) -> _ReadBlock:
        """A connection for reads; every query in the block sees one consistent snapshot.

        Writes belong in :meth:`transaction`.
        """
        return _ReadBlock(self)

    def read_one(self, sql: str, params: Sequence[Any] = (), /) -> Any:
        """The first row of the read statement ``sql`` (None when there is none).

        A single statement reads one consistent snapshot by itself; inside a :meth:`read` or
        :meth:`transaction` block of this thread it reads that block's. PERF: no
        ``BEGIN``/``COMMIT`` round for a one-query read.
        """
        # PERF: :meth:`_checkout`'s steps written out with ``try``/``finally`` (the
        # ``contextmanager`` is five Python calls a read: its helper, ``__init__``,
        # ``__enter__``, ``__exit__`` and the generator twice): a StoreCollection item GET
        # 201,567 → 191,063 instructions (bench/budget.py).
        local = self._local
        conn: sqlite3.Connection | None = local.conn
        if conn is not None:  # inside a block of this thread: its connection
            local.depth += 1
            try:
                return conn.execute(sql, params).fetchone()
            finally:
                local.depth -= 1
        conn = self._take()
        local.conn, local.depth = conn, 0
        try:
            return conn.execute(sql, params).fetchone()
        finally:
            local.conn = None
            self._give_back(conn)

    @property
    def change_mark_source(self) -> str:
        """Where :meth:`change_mark` looks: ``"wal-index"`` (the header of the database's
        shared wal-index, read from memory: a file store on Linux), ``"data_version"``
        (``PRAGMA data_version``: a file store where the wal-index cannot be mapped safely,
        or in a process forked from the one that opened the store) or ``"memory"`` (the one
        connection of an in-memory store)."""
        return self._marks.name

    def change_mark(self) -> int | None:
        """A number that stays the same between two calls only if nothing was written to the
        database in between: by this store, another connection or another process; None
        inside a :meth:`read` or :meth:`transaction` block of this thread.

        SECURITY: what a reader derived from the database (a verified login session) may be
        reused for as long as the mark it took *before* reading is still the mark. The
        store's source of marks (:attr:`change_mark_source`) is chosen when it opens: a file
        store reads the wal-index header, which every commit rewrites; without it, each
        connection notices others' commits through ``PRAGMA data_version`` and its own writes
        through ``total_changes``, and the first connection to notice either moves the mark
        for every connection (a connection seen for the first time moves it too). PERF:
        ~0.15 µs from the wal-index; ~3 µs for the ``PRAGMA`` and its pooled connection; a
        query plus parsing and HMACs for a cookie without a mark. The source is one call
        (a cookie + nonce GET: 191,535 instructions against 192,028 before the split, within
        the ±1,000 that case moves between runs; bench/instructions.py).
        """
        if self._local.conn is not None:
            return None
        return self._marks.read(self)

    def migrate(self, component: str, steps: Sequence[Step]) -> int:
        """Apply the schema ``steps`` of ``component`` not applied yet; returns its version.

        Step ``i`` (1-based) moves the component from version ``i - 1`` to ``i``; a step may hold
        several statements separated by ``;``, and is SQL text or a mapping
        ``{"sqlite": sql, "postgresql": sql}``. The check and the steps run in one write
        transaction, so two processes starting at once apply each step exactly once. Steps are
        append-only: never edit or remove a step that has shipped.
        """
        check_component(component)
        with self.transaction() as conn:
            conn.execute(BOOTSTRAP_SQL)
            return apply_steps(conn, component, steps, "sqlite", _run_statements)

    def close(self) -> None:
        """Close the store's connections; using the store afterwards raises StoreError.

        File connections in use by other threads are closed when those threads release them;
        an in-memory store waits until the thread using it is done.
        """
        if self._local.conn is not None:
            raise StoreError("close() called inside a read() or transaction() block")
        memory = self._memory
        if memory is not None:
            with self._memory_lock, self._lock:
                if not self._closed:
                    self._closed = True
                    memory.close()
            return
        with self._lock:
            if self._closed:
                return
            self._closed = True
            idle, self._idle = self._idle, []
            # Connections in use by other threads are closed as they come back (_give_back).
            self._open_connections -= len(idle)
            last = self._open_connections == 0
        for conn in idle:
            conn.close()
        if last:
            self._release_wal()

    def __repr__(self) -> str:
        return f"SqliteStore({self.path or _MEMORY!r})"


class _MarkSource(Protocol):
    """One source of :meth:`SqliteStore.change_mark` (outside a block of the calling thread):
    ``read`` moves the store's mark when the database changed since it last looked."""

    name: str

    def read(self, store: SqliteStore) -> int | None:
        """The store's change mark, moved first when the source shows a change (asked
        outside a block of the calling thread)."""
        ...


class _WalIndexMarks:
    """The wal-index header (``svcrest.store.wal_index``), read from shared memory: it
    changes with every commit of any connection of any process. ``mark`` is the store's
    :meth:`~SqliteStore.change_mark` (see ``SqliteStore._use_marks``)."""

    __slots__ = ("mapping", "seen", "store")
    name = "wal-index"

    def __init__(self, store: SqliteStore, mapping: Any) -> None:
        self.store = store
        self.mapping = mapping
        self.seen = b""  # the header last read

    def read(self, store: SqliteStore) -> int | None:
        return self.mark()

    def mark(self) -> int | None:
        store = self.store
        if store._marks is not self:  # replaced (closed, forked) since this was taken
            return SqliteStore.change_mark(store)
        if store._local.conn is not None:  # inside a block of this thread
            return None
        if store._closed:  # as the PRAGMA, also while a thread still holds a connection
            raise StoreError("the store is closed")
        # PERF: ~0.15 µs. SECURITY: the mark moves *before* the header is recorded as seen,
        # so a thread that finds the record current also finds the mark moved.
        try:
            header = self.mapping[:HEADER_BYTES]
        except ValueError:  # the mapping was closed by close() meanwhile
            raise StoreError("the store is closed") from None
        if header != self.seen:
            with store._lock:
                store._mark += 1
                self.seen = header
        return store._mark


class _DataVersionMarks:
    """``PRAGMA data_version`` (others' commits) and ``total_changes`` (its own writes) of a
    pooled connection: a file store without a mapped wal-index (~3 µs)."""

    __slots__ = ()
    name = "data_version"

    def read(self, store: SqliteStore) -> int | None:
        conn = store._take()
        try:
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            changes = conn.total_changes
            # The mark moves first when the connection sees a version or a change count it
            # has not seen before. SECURITY: it moves *before* the connection records what
            # it saw, so a thread that finds the record current also finds the mark moved.
            if version != conn.seen_version or changes != conn.seen_changes:
                with store._lock:
                    store._mark += 1
                conn.seen_version, conn.seen_changes = version, changes
            return store._mark
        finally:
            store._give_back(conn)


class _MemoryMarks:
    """The one connection of an in-memory database makes every write there, so its own
    count of changed rows is enough (no lock, no PRAGMA). A write still in flight in another
    thread counts already: a reader waits for its commit anyway. ``mark`` is the store's
    :meth:`~SqliteStore.change_mark` (see ``SqliteStore._use_marks``)."""

    __slots__ = ("store",)
    name = "memory"

    def __init__(self, store: SqliteStore) -> None:
        self.store = store

    def read(self, store: SqliteStore) -> int | None:
        return self.mark()

    def mark(self) -> int | None:
        store = self.store
        if store._marks is not self:  # replaced (closed, forked) since this was taken
            return SqliteStore.change_mark(store)
        if store._local.conn is not None:  # inside a block of this thread
            return None
        memory = store._memory
        if store._closed or memory is None:
            raise StoreError("the store is closed")
        # The rule of _DataVersionMarks with a version that never moves, written out (PERF:
        # a function of its own cost ~500 instructions a cookie check). SECURITY: the mark
        # moves before the shared connection records the count: a thread that finds the
        # record current also finds the mark moved, never the old mark after a write.
        changes = memory.total_changes
        if changes != memory.seen_changes:
            with store._lock:
                store._mark += 1
            memory.seen_changes = changes
        return store._mark


_DATA_VERSION_MARKS = _DataVersionMarks()

#: File stores reading change marks from a wal-index mapping (for the fork handler below).
_watching: weakref.WeakSet[SqliteStore] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for store in list(_watching):
        store._forget_wal_after_fork()
    _watching.clear()
    forget_after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _is_lock_error(exc: sqlite3.OperationalError) -> bool:
    message = str(exc).lower()
    return "locked" in message or "busy" in message


def _begin_immediate(conn: sqlite3.Connection) -> None:
    """``BEGIN IMMEDIATE``, waited for up to the busy time-out; StoreBusyError after it."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if _is_lock_error(exc):
            raise StoreBusyError() from exc
        raise


class _ReadBlock:
    """The context manager of :meth:`SqliteStore.read`.

    PERF: a class rather than nested generator context managers: every cookie check opens
    one read block, and this saves ~5 µs of a ~70 µs cookie + nonce request (bench/stores.py).
    """

    __slots__ = ("_conn", "_outer", "_store")

    def __init__(self, store: SqliteStore) -> None:
        self._store = store
        self._outer = False

    def __enter__(self) -> sqlite3.Connection:
        store = self._store
        local = store._local
        conn: _MarkedConnection | None = local.conn
        if conn is not None:  # nested: the outer block's connection and snapshot
            local.depth += 1
            self._conn = conn
            return conn
        conn = store._take()
        local.conn, local.depth = conn, 0
        try:
            conn.execute("BEGIN")
        except BaseException:
            local.conn = None
            store._give_back(conn)
            raise
        self._conn, self._outer = conn, True
        local.reading = True
        return conn

    def __exit__(self, *exc_info: object) -> None:
        local = self._store._local
        if not self._outer:
            local.depth -= 1
            return
        local.reading = False
        conn = self._conn
        try:
            if conn.in_transaction:
                conn.execute("COMMIT")
        finally:
            local.conn = None
            self._store._give_back(conn)


def retry_while_locked(
    action: Callable[[], None],
    timeout: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Run ``action``, again every 10 ms while SQLite says the database is locked or busy,
    for up to ``timeout`` seconds; then the last error propagates."""
    deadline = clock() + timeout
    while True:
        try:
            action()
            return
        except sqlite3.OperationalError as exc:
            if not _is_lock_error(exc) or clock() >= deadline:
                raise
        sleep(0.01)
