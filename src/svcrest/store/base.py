"""The store interface every engine implements, and what engines share.

Users, sessions, options and plugins (the demo's notes) talk to the database only through
:class:`Store`: ``transaction()`` and ``read()`` yield a :class:`Connection` whose ``execute``
takes ``?`` placeholders on every engine and returns a :class:`Cursor`. A schema step is SQL
text, or a mapping ``{"sqlite": sql, "postgresql": sql}`` when the engines need different DDL.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Literal, Protocol, Self, cast, runtime_checkable

__all__ = [
    "BOOTSTRAP_SQL",
    "STORE_SCHEMA",
    "BlockState",
    "ChangeMarkingStore",
    "Connection",
    "Cursor",
    "Dialect",
    "Listener",
    "NotifyingStore",
    "Step",
    "Store",
    "StoreBase",
    "StoreError",
    "check_component",
    "refuse_write_in_read",
    "savepoint",
    "step_sql",
    "to_pyformat",
]

Dialect = Literal["sqlite", "postgresql"]
#: One migration step: portable SQL, or the SQL of each dialect.
Step = str | Mapping[str, str]
#: The table of each component's schema version, created before any migration (both engines).
BOOTSTRAP_SQL = (
    "CREATE TABLE IF NOT EXISTS schema_versions ("
    " component TEXT PRIMARY KEY,"
    " version INTEGER NOT NULL)"
)
#: The schema of the store's own component, ``store``: the options.
STORE_SCHEMA: tuple[Step, ...] = (
    "CREATE TABLE options (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
)


class StoreError(ValueError):
    """The store cannot be opened or used (bad location, unreadable file, closed store…).

    ``reason``: why, without the store's name (the message names it once; a caller that
    names the store itself says ``reason`` after it)."""

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = message if reason is None else reason


class Cursor(Protocol):
    """What ``Connection.execute`` returns (a DB-API cursor's reading part)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """The connection a store block yields: ``?`` placeholders on every engine."""

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Cursor: ...


@runtime_checkable
class Store(Protocol):
    """The one interface to the database (docs/guides/many-hosts.md).

    ``transaction()``: a write transaction (a SAVEPOINT when nested in another block of the
    same thread); ``read()``: one consistent snapshot. Neither may be held across an
    ``await``. ``read_one(sql, params)``: the first row (or None) of one read statement,
    which is its own snapshot (PERF: on PostgreSQL one round trip, where a ``read()`` block
    takes three); inside a block of the same thread it runs in that block.
    ``migrate(component, steps)`` applies the steps not applied yet, once per database, and
    returns the component's version. ``add_option`` inserts unless the option
    exists and returns the stored value (race-safe across processes and hosts).
    ``in_block()`` and ``close()`` serve lazy migrations and the command line.
    """

    @property
    def dialect(self) -> Dialect: ...

    def transaction(self) -> AbstractContextManager[Connection]: ...

    def read(self) -> AbstractContextManager[Connection]: ...

    def read_one(self, sql: str, params: Sequence[Any] = (), /) -> Any: ...

    def migrate(self, component: str, steps: Sequence[Step]) -> int: ...

    def get_option(self, name: str) -> str | None: ...

    def add_option(self, name: str, value: str) -> str: ...

    def in_block(self) -> bool: ...

    def close(self) -> None: ...

    def __enter__(self) -> Store: ...

    def __exit__(self, *exc_info: object) -> None: ...


class Listener(Protocol):
    """A connection listening on one notification channel (see :class:`NotifyingStore`).

    ``poll()`` never blocks and makes no round trip: it returns the payloads received since
    the last call, or None while the listener is not listening (its connection broke; it
    reconnects on a later call). ``epoch`` counts the times it started listening: anything
    sent while it was not listening is lost, so a caller that sees ``epoch`` change (or gets
    None) must forget whatever the notifications protect. ``closed``: after ``close()``.
    ``ping(number)`` makes one round trip on the listening connection (no commit): once it
    returns True, ``answered`` is ``number`` and every notification committed before the
    call is among what ``poll()`` returns next (or returned already); False when not
    listening or the round trip failed. A payload says what changed, not how many times:
    repeats of a payload received close together may come merged into one.
    """

    @property
    def epoch(self) -> int: ...

    @property
    def answered(self) -> int: ...

    def ping(self, number: int) -> bool: ...

    @property
    def closed(self) -> bool: ...

    def poll(self) -> list[str] | None: ...

    def close(self) -> None: ...


@runtime_checkable
class NotifyingStore(Protocol):
    """A store that can tell every process and host sharing the database that something
    changed (PostgreSQL's ``NOTIFY``/``LISTEN``). SQLite offers no such channel.

    ``notify(conn, channel, payload)`` inside a :meth:`Store.transaction` block sends the
    payload when (and only if) the transaction commits; ``publish(channel, payload)`` sends
    it at once, in a statement of its own (inside a block of the thread: at that block's
    commit); ``listen(channel)`` opens a :class:`Listener`, closed with the store;
    ``after_commit(callback)`` calls ``callback`` once the outermost block of the calling
    thread has committed, so that what a notification must be followed by (a wait) comes after
    the commit that sends it (never when that block fails; outside a block, at once).
    """

    def notify(self, conn: Connection, channel: str, payload: str) -> None: ...

    def after_commit(self, callback: Callable[[], None]) -> None: ...

    def publish(self, channel: str, payload: str) -> None: ...

    def listen(self, channel: str) -> Listener: ...


@runtime_checkable
class ChangeMarkingStore(Protocol):
    """A store that can tell cheaply whether anything was written to its database since an
    earlier moment (SQLite's wal-index header, or ``PRAGMA data_version``).

    ``change_mark()`` returns the same number at two calls only if no write was committed in
    between, by this store, another connection or another process; it returns None when it
    cannot tell (inside a ``read()`` or ``transaction()`` block of the calling thread, whose
    snapshot may be older than the database). A reader takes the mark *before* it reads, so
    whatever it derives from the read is current for as long as the mark stays the same.
    """

    def change_mark(self) -> int | None: ...


def step_sql(step: Step, dialect: Dialect, component: str, number: int) -> str:
    """The SQL of migration ``step`` for ``dialect``; StoreError when it has none."""
    if isinstance(step, str):
        return step
    if isinstance(step, Mapping):
        sql = step.get(dialect)
        if isinstance(sql, str):
            return sql
    raise StoreError(f"step {number} of {component!r} has no SQL for {dialect}")


def to_pyformat(sql: str) -> str:
    """``sql`` with its ``?`` placeholders as ``%s`` (and ``%`` as ``%%``), for psycopg.

    A ``?`` inside a string literal (``'…'``), a quoted identifier (``"…"``) or a comment is
    left alone; ``%`` is doubled everywhere, since psycopg reads every ``%`` of a query that
    has parameters.
    """
    if len(sql) > 4096:  # SECURITY: only short (code-written) statements are remembered
        return _to_pyformat.__wrapped__(sql)
    return _to_pyformat(sql)


# PERF: statements are fixed strings of the code; translating each once saves a scan a query.
@functools.lru_cache(maxsize=1024)
def _to_pyformat(sql: str) -> str:
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        char = sql[i]
        if char in "'\"":
            end = sql.find(char, i + 1)
            while end != -1 and sql[end + 1 : end + 2] == char:  # '' or "" escapes itself
                end = sql.find(char, end + 2)
            end = n if end == -1 else end + 1
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            end = n if end == -1 else end
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            end = n if end == -1 else end + 2
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        else:
            out.append("%s" if char == "?" else "%%" if char == "%" else char)
            i += 1
    return "".join(out)


def apply_steps(
    conn: Connection,
    component: str,
    steps: Sequence[Step],
    dialect: Dialect,
    run: Callable[[Connection, str], None],
) -> int:
    """The versioning both engines share, inside their migration transaction: read the
    component's version, apply each step not applied yet with ``run(conn, sql)``, record the
    new version; returns it. StoreError when the database is newer than the code."""
    row = conn.execute(
        "SELECT version FROM schema_versions WHERE component = ?", (component,)
    ).fetchone()
    current = int(row[0]) if row is not None else 0
    if current > len(steps):
        raise StoreError(
            f"schema of {component!r} is at version {current}, newer than the"
            f" {len(steps)} steps this code knows"
        )
    for version in range(current + 1, len(steps) + 1):
        run(conn, step_sql(steps[version - 1], dialect, component, version))
    if len(steps) > current:
        conn.execute(
            "INSERT INTO schema_versions (component, version) VALUES (?, ?)"
            " ON CONFLICT (component) DO UPDATE SET version = excluded.version",
            (component, len(steps)),
        )
    return max(current, len(steps))


def read_option(store: Store, name: str) -> str | None:
    """``Store.get_option`` on either engine."""
    with store.read() as conn:
        row = conn.execute("SELECT value FROM options WHERE name = ?", (name,)).fetchone()
    return None if row is None else str(row[0])


def add_option_once(store: Store, name: str, value: str) -> str:
    """``Store.add_option`` on either engine: insert unless present, then read back, in one
    transaction (hosts adding the same option at once all get the first insert's value)."""
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO options (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
            (name, value),
        )
        row = conn.execute("SELECT value FROM options WHERE name = ?", (name,)).fetchone()
    return str(row[0])


def check_component(component: object) -> None:
    """ValueError unless ``component`` (of ``Store.migrate``) is a non-empty string."""
    if not isinstance(component, str) or not component:
        raise ValueError("migrate() needs a non-empty component name")


class BlockState(threading.local):
    """One thread's open block of a store: its checked-out connection (None outside any
    ``read()`` or ``transaction()`` block), the nesting depth, whether the block only reads,
    and (PostgreSQL) the callbacks waiting for its commit.

    PERF: the class holds the values of a thread that never opened a block, so asking one
    raises nothing: ``getattr`` of a missing thread-local attribute creates and drops an
    AttributeError (~0.4 µs), which each server thread that only answers from memory (a
    remembered cookie) would pay on every request.
    """

    conn: Any = None
    depth: int = 0
    reading: bool = False
    after_commit: dict[Callable[[], None], None] | None = None


def refuse_write_in_read(local: BlockState, depth: int) -> None:
    """StoreError when a ``transaction()`` block opens inside a ``read()`` block of the same
    thread: a read snapshot cannot safely become a write transaction once another connection
    has written."""
    if depth and local.reading:
        raise StoreError("transaction() inside read(): open the transaction first")


@contextlib.contextmanager
def savepoint(conn: Connection, depth: int) -> Iterator[None]:
    """A nested ``transaction()`` block on both engines: ``SAVEPOINT svc_sp<depth>``, released
    at the end, rolled back to (and released) when the block raises."""
    name = f"svc_sp{depth}"
    conn.execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
        conn.execute(f"RELEASE SAVEPOINT {name}")
        raise
    conn.execute(f"RELEASE SAVEPOINT {name}")


class StoreBase:
    """What both engines share: options, the in-block test, ``closed`` and use as a context
    manager. An engine sets ``_closed`` and ``_local`` (its thread's block connection as
    ``conn``) and implements the rest of :class:`Store`."""

    _closed: bool
    _local: BlockState

    def close(self) -> None:
        raise NotImplementedError

    def in_block(self) -> bool:
        """Whether this thread is inside a ``read()`` or ``transaction()`` block (work done
        now joins that block: a schema change made in it is undone by its rollback)."""
        return self._local.conn is not None

    def get_option(self, name: str) -> str | None:
        """The stored value of option ``name``, or None."""
        return read_option(cast(Store, self), name)

    def add_option(self, name: str, value: str) -> str:
        """Store ``value`` under ``name`` unless the option exists; return the stored value.

        Race-safe: when several processes or hosts add the same option at once, every one of
        them gets the value of the first insert (used for the site's secret key).
        """
        return add_option_once(cast(Store, self), name, value)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has been called."""
        return self._closed

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
