"""The PostgreSQL engine of :class:`svcrest.store.Store`, through psycopg 3 and a pool.

``PostgresStore("postgresql://user:password@host:port/dbname")`` (any libpq URL, also
``postgresql:///dbname?host=/socket/dir``) serves every host that shares the database: one
site. Statements are written with ``?`` placeholders, translated once to psycopg's ``%s``.

Writes go through :meth:`PostgresStore.transaction` (``BEGIN`` … ``COMMIT``, READ COMMITTED),
reads through :meth:`PostgresStore.read` (``REPEATABLE READ``: one snapshot). A block nested in
another of the same thread reuses its connection (a nested transaction is a SAVEPOINT). Neither
may be held across an ``await``. Migrations run under a transaction-scoped advisory lock, so
hosts starting together against an empty database create one schema.
"""

from __future__ import annotations

import contextlib
import select
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from svcrest.store.base import (
    BOOTSTRAP_SQL,
    STORE_SCHEMA,
    BlockState,
    Connection,
    Cursor,
    Dialect,
    Step,
    StoreBase,
    StoreError,
    apply_steps,
    check_component,
    refuse_write_in_read,
    savepoint,
    to_pyformat,
)

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

    from svcrest.store.pg_listen import PostgresListener

__all__ = ["POSTGRES_EXTRA", "PostgresStore", "is_postgres_url", "redact_url"]

#: What to install for PostgreSQL URLs.
POSTGRES_EXTRA = "svcrest[postgres]"
_SCHEMES = ("postgresql://", "postgres://")
#: The advisory lock key of migrations (any fixed 64-bit number; this one spells svcrest).
_MIGRATION_LOCK = zlib.crc32(b"svcrest-migrate")
_OPEN_TIMEOUT = 10.0


def is_postgres_url(location: object) -> bool:
    """Whether ``location`` is a PostgreSQL URL."""
    return isinstance(location, str) and location.startswith(_SCHEMES)


def redact_url(url: str) -> str:
    """``url`` without the password of its credentials (for messages and logs)."""
    head, at, tail = url.partition("@")
    if not at or "://" not in head:
        return url
    scheme, _, credentials = head.partition("://")
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user}@{tail}"


def _run_step(conn: Connection, sql: str) -> None:
    """Run a migration step (psycopg runs several statements in one ``execute``)."""
    conn.execute(sql)


def _check_connection(raw: psycopg.Connection[Any]) -> None:
    """The pool's check of a connection it hands out. PERF: a round trip (psycopg_pool's
    ``check_connection``) only when the idle connection's socket holds something: a server
    that ends a connection (shutdown, termination, restart) says so or closes the socket,
    which makes it readable; an idle connection that works is told nothing."""
    from psycopg.pq import ConnStatus
    from psycopg_pool import ConnectionPool

    pgconn = raw.pgconn
    if not raw.closed and pgconn.status == ConnStatus.OK:
        readable, _, _ = select.select([pgconn.socket], [], [], 0)
        if not readable:
            return
    ConnectionPool.check_connection(raw)


class _Connection:
    """A psycopg connection that takes ``?`` placeholders."""

    __slots__ = ("raw",)

    def __init__(self, raw: psycopg.Connection[Any]) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Cursor:
        if not params:
            return self.raw.execute(sql)
        return self.raw.execute(to_pyformat(sql), params)


class PostgresStore(StoreBase):
    """A PostgreSQL database shared by any number of hosts and processes.

    ``pool_size``: the most connections this process opens (one per thread in a block).
    """

    #: The SQL dialect of this engine.
    dialect: Dialect = "postgresql"

    def __init__(self, url: str, *, pool_size: int = 10) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise StoreError(
                f"a PostgreSQL store needs the psycopg driver: pip install '{POSTGRES_EXTRA}'"
            ) from None
        if not is_postgres_url(url):
            raise StoreError(f"not a PostgreSQL URL: {url!r}")
        self.url = url
        self._errors: tuple[type[BaseException], ...] = (psycopg.Error,)
        self._local = BlockState()
        self._closed = False
        self._listeners: list[PostgresListener] = []
        self._pool: psycopg_pool.ConnectionPool[Any] = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True},
            check=_check_connection,
            open=False,
            name="svcrest",
        )
        try:
            # One direct connection first: a bad URL or server fails at once with its reason
            # (the pool would retry in the background until its time-out).
            psycopg.connect(url, connect_timeout=int(_OPEN_TIMEOUT)).close()
            self._pool.open(wait=True, timeout=_OPEN_TIMEOUT)
            self.migrate("store", STORE_SCHEMA)
        except Exception as exc:
            self._pool.close()
            self._closed = True
            raise StoreError(f"cannot open store {self._shown()}: {exc}") from exc

    def _shown(self) -> str:
        # SECURITY: never repeat a password in an error message.
        return repr(redact_url(self.url))

    # -- connections ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def _checkout(self) -> Iterator[tuple[_Connection, int]]:
        local = self._local
        conn: _Connection | None = local.conn
        if conn is not None:
            local.depth += 1
            try:
                yield conn, local.depth
            finally:
                local.depth -= 1
            return
        if self._closed:
            raise StoreError("the store is closed")
        with self._pool.connection() as raw:
            conn = _Connection(raw)
            local.conn, local.depth, local.after_commit = conn, 0, None
            try:
                yield conn, 0
            finally:
                local.conn = None
                callbacks: dict[Callable[[], None], None] | None = local.after_commit
                local.after_commit = None
        # Reached only when the outermost block ended without an exception: it committed.
        # The connection is back in the pool, so a callback may open blocks of its own.
        if callbacks:
            for callback in callbacks:
                callback()

    @staticmethod
    def _in_transaction(conn: _Connection) -> bool:
        from psycopg.pq import TransactionStatus

        return conn.raw.info.transaction_status != TransactionStatus.IDLE

    # -- public API ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[_Connection]:
        """A connection inside ``BEGIN`` … ``COMMIT`` (``ROLLBACK`` on an exception); nested
        in another block of this thread, a SAVEPOINT. Not allowed inside :meth:`read`."""
        with self._checkout() as (conn, depth):
            refuse_write_in_read(self._local, depth)
            if depth:
                with savepoint(conn, depth):
                    yield conn
                return
            conn.execute("BEGIN")
            try:
                yield conn
                if self._in_transaction(conn):
                    conn.execute("COMMIT")
            except BaseException:
                if self._in_transaction(conn) and not conn.raw.closed:
                    conn.execute("ROLLBACK")
                raise

    @contextlib.contextmanager
    def read(self) -> Iterator[_Connection]:
        """A connection for reads; every query in the block sees one snapshot."""
        with self._checkout() as (conn, depth):
            if depth:
                yield conn
                return
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            self._local.reading = True
            try:
                yield conn
            finally:
                self._local.reading = False
                if self._in_transaction(conn) and not conn.raw.closed:
                    conn.execute("COMMIT")

    def read_one(self, sql: str, params: Sequence[Any] = (), /) -> Any:
        """The first row of the read statement ``sql`` (None when there is none): one round
        trip, the statement alone in autocommit (one statement is one snapshot); inside a
        block of this thread, in that block."""
        with self._checkout() as (conn, _depth):
            return conn.execute(sql, params).fetchone()

    def migrate(self, component: str, steps: Sequence[Step]) -> int:
        """Apply the steps of ``component`` not applied yet, in one transaction under an
        advisory lock (hosts starting at once apply each step exactly once); its version."""
        check_component(component)
        with self.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(?)", (_MIGRATION_LOCK,))
            conn.execute(BOOTSTRAP_SQL)
            return apply_steps(conn, component, steps, "postgresql", _run_step)

    # -- notifications (svcrest.store.NotifyingStore) --------------------------------------------

    def notify(self, conn: Connection, channel: str, payload: str) -> None:
        """Send ``payload`` on ``channel`` to every listener of the database when the
        transaction ``conn`` belongs to commits (nothing is sent on a rollback)."""
        conn.execute("SELECT pg_notify(?, ?)", (channel, payload))

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the outermost block of this thread has committed, after
        its connection went back to the pool (never, when that block ends in an exception);
        outside a block, at once. A callback equal to one already waiting is not added
        twice."""
        if not self.in_block():
            callback()
            return
        local = self._local
        if local.after_commit is None:
            local.after_commit = {}
        local.after_commit[callback] = None

    def publish(self, channel: str, payload: str) -> None:
        """Send ``payload`` on ``channel`` now: one statement in autocommit, one round trip
        (inside a block of this thread, when that block commits)."""
        with self._checkout() as (conn, _depth):
            self.notify(conn, channel, payload)

    def listen(self, channel: str) -> PostgresListener:
        """A :class:`~svcrest.store.Listener` of ``channel`` on its own connection (not one of
        the pool's), closed by :meth:`close`."""
        from svcrest.store.pg_listen import PostgresListener

        if self._closed:
            raise StoreError("the store is closed")
        listener = PostgresListener(self.url, channel)
        self._listeners.append(listener)
        return listener

    def close(self) -> None:
        """Close the pool and the listeners; using the store afterwards raises StoreError."""
        if self._local.conn is not None:
            raise StoreError("close() called inside a read() or transaction() block")
        if not self._closed:
            self._closed = True
            for listener in self._listeners:
                listener.close()
            self._pool.close()

    def __repr__(self) -> str:
        return f"PostgresStore({self._shown()})"
