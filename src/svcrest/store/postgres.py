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
import logging
import math
import os
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from svcrest.http.context import REQUEST_CONTEXT
from svcrest.rest.deadlines import DB_TIMEOUT
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
from svcrest.store.errors import StoreBusyError, StoreTimeoutError, StoreUnavailableError
from svcrest.store.pg_url import PoolOptions, split_url

if TYPE_CHECKING:
    import psycopg

    from svcrest.store.pg_listen import PostgresListener
    from svcrest.store.pg_pool import ConnectionPool
    from svcrest.store.pg_relay import RelayListener

__all__ = ["POSTGRES_EXTRA", "PostgresStore", "is_postgres_url", "redact_url"]

_log = logging.getLogger("svcrest.store")
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


def _settings_of(timeout: float | None) -> str | None:
    """The ``SET LOCAL`` of a block begun under the route option ``db_timeout``."""
    if timeout is None:
        return None
    return f"SET LOCAL statement_timeout = {max(1, round(timeout * 1000))}"


def _commented(sql: str) -> str:
    """``sql`` begun with the current request's id as a comment (``sql_comments=1``)."""
    ctx = REQUEST_CONTEXT.get()
    if ctx is None or not ctx.request_id:
        return sql
    # SECURITY: a request id is 1 to 128 of [A-Za-z0-9._:-] (svcrest.http.request_id): it
    # cannot end the comment.
    return f"/* request_id={ctx.request_id} */ {sql}"


class _Connection:
    """A psycopg connection that takes ``?`` placeholders, and whose failures the client
    is answered: a cancelled statement is :class:`StoreTimeoutError`, a transaction the
    server rolled back (a deadlock, a serialization failure) :class:`StoreBusyError`, a
    connection lost (the server stopped or ended it, the network broke)
    :class:`StoreUnavailableError`, all 503 with ``Retry-After``."""

    __slots__ = ("comments", "raw")

    def __init__(self, raw: psycopg.Connection[Any], comments: bool = False) -> None:
        self.raw = raw
        #: Begin each statement run in a request with ``/* request_id=… */``.
        self.comments = comments

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Cursor:
        from psycopg import OperationalError, errors

        if params:
            sql = to_pyformat(sql)
        if self.comments:  # after the translation, which is remembered per statement
            sql = _commented(sql)
        try:
            return self.raw.execute(sql, params or None)
        except errors.QueryCanceled as exc:
            raise StoreTimeoutError() from exc
        except (
            errors.DeadlockDetected,
            errors.SerializationFailure,
            errors.TransactionRollback,
        ) as exc:
            # SQLSTATE 40P01, 40001, 40000: the server rolled this transaction back, and the
            # same request sent again can succeed. (psycopg makes the first two siblings of
            # TransactionRollback, not its subclasses: all three are named.)
            raise StoreBusyError() from exc
        except OperationalError as exc:
            if self.raw.closed or self.raw.broken:
                # A COMMIT cut off here may have been applied: see docs/guides/many-hosts.md.
                raise StoreUnavailableError() from exc
            raise


class PostgresStore(StoreBase):
    """A PostgreSQL database shared by any number of hosts and processes.

    The URL's own options (``pool_size``, ``acquire_timeout``, ``pgbouncer``, ``listen``:
    :mod:`svcrest.store.pg_url`) are read by svcrest and never passed to libpq; the keyword
    arguments of the same names, when given, win over them. ``run_dir`` is the directory of
    the socket through which the processes of a host share one listening connection
    (default: ``$SVCREST_RUN_DIR``, else ``$XDG_RUNTIME_DIR/svcrest``, else
    ``svcrest-<uid>`` in the temporary directory; :mod:`svcrest.store.pg_relay`).
    """

    #: The SQL dialect of this engine.
    dialect: Dialect = "postgresql"

    def __init__(
        self,
        url: str,
        *,
        pool_size: int | None = None,
        acquire_timeout: float | None = None,
        pgbouncer: bool | None = None,
        listen: str | None = None,
        run_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        try:
            import psycopg  # noqa: F401 - the driver, checked before anything else
        except ImportError:
            raise StoreError(
                f"a PostgreSQL store needs the psycopg driver: pip install '{POSTGRES_EXTRA}'"
            ) from None
        if not is_postgres_url(url):
            raise StoreError(f"not a PostgreSQL URL: {url!r}")
        from svcrest.store.pg_pool import ConnectionPool

        self.url = url
        conninfo, options = split_url(url)
        self._conninfo = conninfo
        self.options = PoolOptions(
            pool_size=options.pool_size if pool_size is None else pool_size,
            acquire_timeout=(
                options.acquire_timeout if acquire_timeout is None else acquire_timeout
            ),
            pgbouncer=options.pgbouncer if pgbouncer is None else pgbouncer,
            listen=options.listen if listen is None else listen,
            sql_comments=options.sql_comments,
        )
        self._local = BlockState()
        self._closed = False
        #: Where the host's listener relay keeps its socket and lock (None: the default).
        self._run_dir = run_dir
        self._listeners: list[PostgresListener | RelayListener] = []
        self._pool: ConnectionPool = ConnectionPool(
            self._connect, self.options.pool_size, self.options.acquire_timeout
        )
        try:
            self._pool.put(self._pool.get())
            self.migrate("store", STORE_SCHEMA)
        except Exception as exc:
            self._pool.close()
            self._closed = True
            reason = exc.__cause__ if isinstance(exc, StoreUnavailableError) else exc
            raise StoreError(
                f"cannot open store {self._shown()}: {reason}", reason=str(reason)
            ) from exc

    def _connect(self) -> psycopg.Connection[Any]:
        """A new connection of the pool: autocommit; prepared statements off behind
        PgBouncer (a statement prepared on one server connection is unknown on the next)."""
        import psycopg

        extra: dict[str, Any] = {"prepare_threshold": None} if self.options.pgbouncer else {}
        return psycopg.connect(
            self._conninfo,
            autocommit=True,
            # libpq waits at least 2 s (whole seconds) for a connection.
            connect_timeout=max(2, math.ceil(self.options.acquire_timeout)),
            **extra,
        )

    def _shown(self) -> str:
        # SECURITY: never repeat a password in an error message (nor the listen URL's).
        return repr(redact_url(self._conninfo))

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
        pool = self._pool
        raw = pool.get()
        try:
            conn = _Connection(raw, self.options.sql_comments)
            local.conn, local.depth, local.after_commit = conn, 0, None
            try:
                yield conn, 0
            finally:
                local.conn = None
                callbacks: dict[Callable[[], None], None] | None = local.after_commit
                local.after_commit = None
        finally:
            pool.put(raw)
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
                settings = _settings_of(DB_TIMEOUT.get())
                if settings is not None:
                    conn.execute(settings)
                yield conn
                if self._in_transaction(conn):
                    conn.execute("COMMIT")
            except BaseException:
                _roll_back(conn)
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
                settings = _settings_of(DB_TIMEOUT.get())
                if settings is not None:
                    conn.execute(settings)
                yield conn
            except BaseException:
                _roll_back(conn)
                raise
            finally:
                self._local.reading = False
            if self._in_transaction(conn):
                conn.execute("COMMIT")

    def read_one(self, sql: str, params: Sequence[Any] = (), /) -> Any:
        """The first row of the read statement ``sql`` (None when there is none): one round
        trip, the statement alone in autocommit (one statement is one snapshot); inside a
        block of this thread, in that block; under a route's ``db_timeout``, in a block of
        its own (the time-out is a ``SET LOCAL``)."""
        local = self._local
        conn: _Connection | None = local.conn
        if conn is not None:  # inside a block of this thread: its connection
            local.depth += 1
            try:
                return conn.execute(sql, params).fetchone()
            finally:
                local.depth -= 1
        if DB_TIMEOUT.get() is not None:
            with self.read() as conn:
                return conn.execute(sql, params).fetchone()
        # PERF: :meth:`_checkout`'s steps written out with ``try``/``finally``, as
        # ``SqliteStore.read_one`` has them (the ``contextmanager`` is five Python calls a
        # read: 75 → 70 calls, best 25.8 → 24.8 µs a one-row SELECT on a local server);
        # no after-commit callback can wait here: one statement registers none.
        if self._closed:
            raise StoreError("the store is closed")
        pool = self._pool
        raw = pool.get()
        try:
            conn = _Connection(raw, self.options.sql_comments)
            local.conn, local.depth, local.after_commit = conn, 0, None
            try:
                return conn.execute(sql, params).fetchone()
            finally:
                local.conn = local.after_commit = None
        finally:
            pool.put(raw)

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

    def listen(self, channel: str) -> PostgresListener | RelayListener:
        """A :class:`~svcrest.store.Listener` of ``channel``, closed by :meth:`close`: fed by
        the one listening connection of this host (not one of the pool's), which the first
        process to listen opens and relays to the others over a unix socket in the run
        directory (:mod:`svcrest.store.pg_relay`); on a connection of its own where no
        such directory can be used."""
        from svcrest.store.pg_listen import PostgresListener
        from svcrest.store.pg_relay import RelayListener, default_run_dir, relay_paths

        if self._closed:
            raise StoreError("the store is closed")
        url = self.options.listen
        if url is None:
            if self.options.pgbouncer:
                raise StoreError(
                    "LISTEN does not work through PgBouncer in transaction mode:"
                    " give the listener a direct URL (svcrest serve --db-listen URL)"
                )
            url = self._conninfo
        else:
            url = split_url(url)[0]
        listener: PostgresListener | RelayListener
        try:
            path, lock_path = relay_paths(self._run_dir or default_run_dir(), url)
        except StoreError as exc:
            _log.warning("each process listens on its own connection: %s", exc)
            listener = PostgresListener(url, channel)
        else:
            listener = RelayListener(url, channel, path, lock_path)
        self._listeners.append(listener)
        if self._closed:  # closed while the listener connected (from another thread)
            listener.close()
            raise StoreError("the store is closed")
        return listener

    @property
    def pool(self) -> ConnectionPool:
        """The connection pool (its figures are the admin port's pool metrics)."""
        return self._pool

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


def _roll_back(conn: _Connection) -> None:
    """Roll back a block that failed (nothing to do when its connection is gone: the server
    rolled the transaction back when it lost it)."""
    if not conn.raw.closed and PostgresStore._in_transaction(conn):
        with contextlib.suppress(StoreUnavailableError):
            conn.execute("ROLLBACK")
