"""A table of the site's store holding the items of one collection, made from their schema.

:class:`CollectionTable` is the storage of a WordPress-style collection (a REST controller's
items): it creates its table from the item schema (``id`` and ``version`` added) and adds the
columns of properties added later; inserts, reads, updates and deletes single items, with an
optional expected ``version`` (an ``If-Match`` precondition); and lists pages of items with
WordPress's and Ext JS's collection parameters (:class:`~svcrest.store.collection_query.Query`).

Every write runs in ``store.transaction()``: inside a block of the same thread (an atomic
batch's transaction) that is a savepoint, so the outer rollback undoes it. Every write
records its change in the change log (:mod:`svcrest.store.changes`) in the same transaction,
and with it the webhook deliveries of the event, whose ``data`` is the item as written.

Example::

    table = CollectionTable(store, {"title": "note", "properties": {
        "title": {"type": "string", "default": ""},
        "done": {"type": "boolean", "default": False},
    }}, sortable=("title",), filterable=("done",), searchable=("title",))
    note = table.insert({"title": "Milk"})        # {"id": 1, "title": "Milk", ..., "version": 1}
    table.update(note["id"], {"done": True}, expected_version=1)
    page = table.query(Query(sort=(Sort("title"),), per_page=20))
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from svcrest.store.base import Connection, Step, Store, StoreError
from svcrest.store.changes import Event, ensure_change_log, record_change
from svcrest.store.collection_columns import (
    MAX_INT,
    CollectionError,
    Column,
    check_identifier,
    columns_of_schema,
    quote,
)
from svcrest.store.collection_query import Page, Query, QueryPlan, Sort
from svcrest.store.lazy_tables import LazyTables

__all__ = ["CollectionTable", "VersionMismatch"]

#: Tables of the site itself, which no collection may take.
RESERVED_TABLES: Final = frozenset(
    {
        "options", "schema_versions", "users", "sessions", "application_passwords",
        "login_failures", "idempotency_keys", "rate_limit_counts", "svc_changes",
        "svc_webhooks", "svc_webhook_events", "svc_webhook_deliveries",
    }
)  # fmt: skip
#: The advisory lock of a table's migration on PostgreSQL: this prefix (high 32 bits) and
#: the CRC-32 of the table's name.
_LOCK_PREFIX: Final = zlib.crc32(b"svcrest-collection") & 0x7FFFFFFF
#: The type each kind's column shows in the catalogue (SQLite's declared type, PostgreSQL's
#: ``information_schema`` data type).
_CATALOGUE_TYPES: Final[Mapping[str, Mapping[str, str]]] = {
    "sqlite": {"integer": "INTEGER", "number": "REAL", "boolean": "INTEGER"},
    "postgresql": {"integer": "bigint", "number": "double precision", "boolean": "boolean"},
}
_DEFAULT_MAX_PER_PAGE: Final = 100
#: The order after the order of ``include`` (its ids are unique: a formality for the SQL).
_BY_ID: Final = Query(sort=(Sort("id"),))


@dataclass(frozen=True, slots=True)
class VersionMismatch:
    """What an update or delete answers when the item's ``version`` is not the expected one
    (an ``If-Match`` precondition failed: 412): the item ``id`` and its current
    ``version``. Nothing was written."""

    id: int
    version: int


def _expected(version: object) -> int:
    """An expected version as a bound value: one no item has (-1) when it is not a version
    (not an integer within the column's range), so the precondition fails as it should."""
    if isinstance(version, int) and not isinstance(version, bool) and 0 < version <= MAX_INT:
        return version
    return -1


#: The most ids one query of :meth:`CollectionTable.get_many` asks for.
_MANY: Final = 100


def _valid_id(item_id: object) -> bool:
    return isinstance(item_id, int) and not isinstance(item_id, bool) and 0 < item_id <= MAX_INT


def _bare(read: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``read``, its text answers without a final "Z" (WordPress's dates, which name no
    zone)."""

    def bare(value: Any) -> Any:
        value = read(value)
        if isinstance(value, str) and value.endswith("Z"):
            return value[:-1]
        return value

    return bare


class CollectionTable:
    """The items of one collection, as rows of a table in the site's store.

    ``store``: the store, or a callable returning it (an App's store opens lazily).
    ``schema``: the item schema (WordPress's: ``title``, ``properties`` with ``type``,
    ``format``, ``default``, ``enum``, ``required``, ``readonly``); every property but
    ``id`` and ``version`` becomes a column (``readonly`` is the controller's concern: the
    table writes what it is given). ``table``: the table's name (default: the schema's
    ``title``). ``sortable``, ``filterable``, ``searchable``: the properties a query may sort
    by, filter by, and search in (strings); ``id`` is always sortable and filterable. A
    sortable property needs a ``default`` or ``required``, so that it is never NULL.
    ``default_sort``: the order of a query that names none (by ``id``, ascending).
    ``indexes``: the multi-key orders to index (each a sequence of :class:`Sort`, say
    ``(Sort("priority", descending=True), Sort("title"))``): an order of several keys is
    read from an index only when one matches it, key for key and direction for direction
    (or all reversed); without it, every page of that order sorts the matching rows.
    ``secret``: the key that signs cursors (the site's secret key), or a callable returning
    it (asked once, at the first query); without it, cursors are checked but not signed.
    ``clock``: the time of change records. ``max_per_page``: the
    largest page (WordPress: 100). ``steps``: schema steps run before the table is made or
    checked (``Store.migrate``'s, the table's name as the component): to adopt a table made
    by hand earlier, renaming its version column to ``version`` or converting stored values.
    ``wordpress_dates``: ``date-time`` properties read as WordPress answers dates,
    ``YYYY-MM-DDTHH:MM:SS`` without a zone (stored and compared as before: UTC, or a site's
    wall time as WordPress stores ``post_date``).

    Attributes: ``table``; ``object_type`` (the schema's ``title``: the type of its change
    records); ``columns`` (name → :class:`~svcrest.store.collection_columns.Column`);
    ``sortable``, ``filterable``, ``searchable`` (as declared, ``id`` left out);
    ``max_per_page``.

    Items are dicts ``{"id": …, <properties>…, "version": …}``: ``version`` is 1 when the
    item is created and one more after each update (its ``ETag``). Errors in what a client
    sent (an unknown sort or filter property, a value of the wrong type, a bad cursor) raise
    :class:`~svcrest.store.collection_columns.CollectionError`, a 400
    ``rest_invalid_param``; a mistake in the declaration raises ValueError at once.
    """

    def __init__(
        self,
        store: Store | Callable[[], Store],
        schema: Mapping[str, Any],
        *,
        table: str | None = None,
        sortable: Iterable[str] = (),
        filterable: Iterable[str] = (),
        searchable: Iterable[str] = (),
        default_sort: Sequence[Sort] = (),
        indexes: Iterable[Sequence[Sort]] = (),
        secret: bytes | Callable[[], bytes] | None = None,
        clock: Callable[[], float] = time.time,
        max_per_page: int = _DEFAULT_MAX_PER_PAGE,
        steps: Sequence[Step] = (),
        wordpress_dates: bool = False,
    ) -> None:
        # Inside another block (an atomic batch's) a rollback would undo the table: it is
        # migrated there (idempotent) without being remembered.
        self._tables = LazyTables(store, self._migrate)
        title = schema.get("title")
        self.object_type: str = title if isinstance(title, str) and title else (table or "")
        self.table = check_identifier(table if table is not None else title, "table")
        if self.table.lower() in RESERVED_TABLES or self.table.lower().startswith(
            ("sqlite_", "pg_")
        ):
            raise ValueError(f"table {self.table!r} is the site's own: choose another name")
        if not self.object_type:
            raise ValueError("the item schema needs a title (its object type)")
        self.columns: dict[str, Column] = columns_of_schema(schema)
        self.sortable = self._declared(sortable, "sortable", self._check_sortable)
        self.filterable = self._declared(filterable, "filterable", self._check_filterable)
        self.searchable = self._declared(searchable, "searchable", self._check_searchable)
        self.max_per_page = max_per_page
        self._secret = secret
        self._clock = clock
        self._default_sort = tuple(default_sort)
        self._plans: dict[str, QueryPlan] = {}
        self._names = ", ".join(quote(name) for name in ("id", *self.columns, "version"))
        #: The statement reading one item (PERF: made once, not at each read).
        self._select_one = f'SELECT {self._names} FROM {quote(self.table)} WHERE "id" = ?'
        #: Each column's name and :attr:`Column.db_reader`, in row order (PERF: ``_item``
        #: calls no ``from_db`` per value; with the statement above, an item GET of three
        #: properties 208,267 → 203,676 instructions, bench/budget.py).
        #: The date-time columns' readers answer without the "Z" under ``wordpress_dates``.
        self._readers = tuple(
            (
                column.name,
                _bare(column.db_reader)
                if wordpress_dates and column.kind == "date-time"
                else column.db_reader,
            )
            for column in self.columns.values()
        )
        self._steps = tuple(steps)
        self._indexes = [self._check_order(order, "indexes") for order in indexes]
        self._check_order(self._default_sort, "default_sort")

    def _check_order(self, order: Sequence[Sort], what: str) -> tuple[Sort, ...]:
        for key in order:
            if not isinstance(key, Sort) or key.property not in ("id", *self.sortable):
                raise ValueError(f"{what} names {key!r}, which is not a sortable property")
        return tuple(order)

    # -- declaration ---------------------------------------------------------------------------

    def _declared(
        self, names: Iterable[str], what: str, check: Callable[[Column], str | None]
    ) -> tuple[str, ...]:
        declared: list[str] = []
        for name in names:
            if name == "id" and what != "searchable":
                continue
            column = self.columns.get(name)
            if column is None:
                raise ValueError(f"{what} names {name!r}, which is not a property of the schema")
            problem = check(column)
            if problem:
                raise ValueError(f"{what} property {name!r} {problem}")
            declared.append(name)
        return tuple(declared)

    @staticmethod
    def _check_sortable(column: Column) -> str | None:
        if not column.scalar:
            return "is an object or array"
        if column.nullable:
            return "needs a default or required: true (a sort key is never null)"
        return None

    @staticmethod
    def _check_filterable(column: Column) -> str | None:
        return None if column.scalar else "is an object or array"

    @staticmethod
    def _check_searchable(column: Column) -> str | None:
        return None if column.kind == "string" else "is not a string"

    # -- migration -----------------------------------------------------------------------------

    @property
    def store(self) -> Store:
        """The store, with this table (and the change log) migrated."""
        # PERF: the tables' getter is a callable they hold: read, then called (called as a
        # method, a generic look-up each time).
        store = self._tables.store
        return store()

    def follow_store(self, get: Callable[[], Store]) -> None:
        """Take the store from ``get`` from now on (asked on every use, as the store or
        getter given at first); the table made or not as before."""
        self._tables.follow(get)

    def migrate(self) -> None:
        """Create the table, or add the columns of properties it lacks, and the indexes of
        the sortable properties; idempotent, and safe when several processes start at once
        (SQLite: one write transaction at a time; PostgreSQL: an advisory lock of the table).
        A column whose type changed raises StoreError (columns are never dropped or
        retyped: add a new property instead)."""
        self._tables.make()

    def _migrate(self, store: Store) -> None:
        if self._steps:
            store.migrate(self.table, self._steps)
        ensure_change_log(store)
        table = quote(self.table)
        with store.transaction() as conn:
            if store.dialect == "postgresql":
                key = (_LOCK_PREFIX << 32) | zlib.crc32(self.table.encode())
                conn.execute("SELECT pg_advisory_xact_lock(?)", (key,))
                primary = "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
                version = "BIGINT NOT NULL DEFAULT 1"
            else:
                primary, version = "INTEGER PRIMARY KEY AUTOINCREMENT", "INTEGER NOT NULL DEFAULT 1"
            conn.execute(
                f'CREATE TABLE IF NOT EXISTS {table} ("id" {primary}, "version" {version})'
            )
            existing = self._existing_columns(store, conn)
            for column in self.columns.values():
                found = existing.get(column.name)
                if found is None:
                    self._add_column(store, conn, column)
                else:
                    self._check_type(store, column, found)
            for name in self.sortable:
                self._create_index(conn, (Sort(name),))
            for order in self._indexes:
                self._create_index(conn, order)

    def _existing_columns(self, store: Store, conn: Connection) -> dict[str, str]:
        if store.dialect == "sqlite":
            rows = conn.execute("SELECT name, type FROM pragma_table_info(?)", (self.table,))
        else:
            rows = conn.execute(
                "SELECT column_name, data_type FROM information_schema.columns"
                " WHERE table_schema = current_schema() AND table_name = ?",
                (self.table,),
            )
        return {str(name): str(kind) for name, kind in rows.fetchall()}

    def _add_column(self, store: Store, conn: Connection, column: Column) -> None:
        table, name = quote(self.table), quote(column.name)
        conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {column.sql_type(store.dialect)}")
        if column.has_default:
            # SECURITY: the default is a bound value, never written into the DDL.
            conn.execute(f"UPDATE {table} SET {name} = ? WHERE {name} IS NULL", (column.default,))
        elif not column.nullable and conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone():
            raise StoreError(
                f"cannot add required property {column.name!r} to table {self.table!r}, which"
                " has rows: give the property a default"
            )

    def _check_type(self, store: Store, column: Column, found: str) -> None:
        expected = _CATALOGUE_TYPES[store.dialect].get(column.kind, "TEXT")
        if store.dialect == "postgresql" and expected == "TEXT":
            expected = "text"
        if found != expected:
            raise StoreError(
                f"column {column.name!r} of table {self.table!r} is {found}, but the schema"
                f" now says {column.kind}: a column's type never changes (add a new property)"
            )

    def _create_index(self, conn: Connection, order: tuple[Sort, ...]) -> None:
        """The index of the sort ``order`` (``id`` last, as queries sort)."""
        keys = [key for key in order if key.property != "id"]
        descending = keys[-1].descending if keys else False
        parts = [f"{quote(key.property)} {'DESC' if key.descending else 'ASC'}" for key in keys]
        parts.append(f'"id" {"DESC" if descending else "ASC"}')
        columns = ", ".join(parts)
        if len(keys) == 1 and not descending:
            name = f"{self.table}_{keys[0].property}_idx"
        else:
            name = f"{self.table}_{zlib.crc32(columns.encode()):08x}_idx"
        if len(name) > 63:
            name = f"{self.table[:40]}_{zlib.crc32(columns.encode()):08x}_idx"
        conn.execute(f"CREATE INDEX IF NOT EXISTS {quote(name)} ON {quote(self.table)} ({columns})")

    # -- single items --------------------------------------------------------------------------

    def _item(self, row: Sequence[Any]) -> dict[str, Any]:
        item: dict[str, Any] = {"id": int(row[0])}
        for (name, read), value in zip(self._readers, row[1:-1], strict=True):
            item[name] = None if value is None else read(value)  # Column.from_db's answer
        item["version"] = int(row[-1])
        return item

    def _stored(self, values: Mapping[str, Any], creating: bool) -> dict[str, Any]:
        """``values`` as the columns store them (defaults added when ``creating``)."""
        stored: dict[str, Any] = {}
        for name, value in values.items():
            column = self.columns.get(name)
            if column is None:
                raise CollectionError(name, f"{name} is not a property of {self.object_type}.")
            stored[name] = column.to_db(value)
        if creating:
            for column in self.columns.values():
                if column.name in stored:
                    continue
                if column.has_default:
                    stored[column.name] = column.default
                elif column.required:
                    raise CollectionError(column.name, f"{column.name} is a required property.")
        return stored

    def _record(self, store: Store, conn: Connection, item: dict[str, Any], event: Event) -> None:
        """Record ``event`` of ``item`` (as the write left it: the webhooks' ``data``)."""
        record_change(store, conn, self.object_type, item["id"], event, self._clock(), data=item)

    def get(self, item_id: int) -> dict[str, Any] | None:
        """The item ``item_id``, or None when there is none."""
        # PERF: ``_valid_id`` written out (its Python call on every item read before).
        if isinstance(item_id, bool) or not isinstance(item_id, int) or not 0 < item_id <= MAX_INT:
            return None
        # PERF: :attr:`store` written out (a property read is not specialised by CPython
        # 3.11: a generic look-up and a Python call each item GET).
        migrated = self._tables.store
        store = migrated()
        row = store.read_one(self._select_one, (item_id,))
        if row is None:
            return None
        # PERF: :meth:`_item` written out (its Python call each item read: an item GET
        # 174,154 → 173,492 instructions, bench/budget.py).
        item: dict[str, Any] = {"id": int(row[0])}
        for (name, read), value in zip(self._readers, row[1:-1], strict=True):
            item[name] = None if value is None else read(value)
        item["version"] = int(row[-1])
        return item

    def get_many(self, item_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
        """The items of ``item_ids`` that exist, by id: one query for up to a hundred ids
        (one id: :meth:`get`)."""
        wanted = sorted({item_id for item_id in item_ids if _valid_id(item_id)})
        if len(wanted) == 1:
            item = self.get(wanted[0])
            return {} if item is None else {wanted[0]: item}
        found: dict[int, dict[str, Any]] = {}
        if not wanted:
            return found
        with self.store.read() as conn:
            for start in range(0, len(wanted), _MANY):
                some = wanted[start : start + _MANY]
                marks = ", ".join("?" * len(some))
                sql = f'SELECT {self._names} FROM {quote(self.table)} WHERE "id" IN ({marks})'
                for row in conn.execute(sql, some).fetchall():
                    item = self._item(row)
                    found[item["id"]] = item
        return found

    def version(self, item_id: int) -> int | None:
        """The ``version`` of item ``item_id`` (one column of one row: an ``ETag`` check
        reads no more), or None when there is none."""
        if not _valid_id(item_id):
            return None
        row = self.store.read_one(
            f'SELECT "version" FROM {quote(self.table)} WHERE "id" = ?', (item_id,)
        )
        return None if row is None else int(row[0])

    def insert(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Insert an item of ``values`` (properties; missing ones take their ``default``);
        returns it as stored, with its new ``id`` and ``version`` 1, and records
        ``created``."""
        stored = self._stored(values, creating=True)
        names = ", ".join([*(quote(name) for name in stored), '"version"'])
        marks = "".join("?, " for _ in stored)
        store = self.store
        with store.transaction() as conn:
            row = conn.execute(
                f"INSERT INTO {quote(self.table)} ({names}) VALUES ({marks}1)"
                f" RETURNING {self._names}",
                list(stored.values()),
            ).fetchone()
            item = self._item(row)
            self._record(store, conn, item, "created")
        return item

    def update(
        self, item_id: int, changes: Mapping[str, Any], *, expected_version: int | None = None
    ) -> dict[str, Any] | VersionMismatch | None:
        """Set ``changes`` (properties) of item ``item_id`` and count its ``version`` up;
        returns the item as stored, None when there is no such item, or
        :class:`VersionMismatch` (nothing written) when ``expected_version`` is given and is
        not the item's. Records ``updated``. Empty ``changes`` write nothing: the item is
        returned as it is."""
        stored = self._stored(changes, creating=False)
        if not _valid_id(item_id):
            return None
        store = self.store
        with store.transaction() as conn:
            if not stored:
                return self._unchanged(conn, item_id, expected_version)
            assignments = ", ".join(f"{quote(name)} = ?" for name in stored)
            statement = f'UPDATE {quote(self.table)} SET {assignments}, "version" = "version" + 1'
            return self._write_one(
                store, conn, statement, stored.values(), item_id, expected_version, "updated"
            )

    def _unchanged(
        self, conn: Connection, item_id: int, expected_version: int | None
    ) -> dict[str, Any] | VersionMismatch | None:
        row = conn.execute(self._select_one, (item_id,)).fetchone()
        if row is None:
            return None
        item = self._item(row)
        if expected_version is not None and item["version"] != _expected(expected_version):
            return VersionMismatch(item_id, item["version"])
        return item

    def _missing_or_mismatch(self, conn: Connection, item_id: int) -> VersionMismatch | None:
        row = conn.execute(
            f'SELECT "version" FROM {quote(self.table)} WHERE "id" = ?', (item_id,)
        ).fetchone()
        return None if row is None else VersionMismatch(item_id, int(row[0]))

    def delete(
        self, item_id: int, *, expected_version: int | None = None
    ) -> dict[str, Any] | VersionMismatch | None:
        """Delete item ``item_id``; returns the item as it was, None when there is no such
        item, or :class:`VersionMismatch` (nothing deleted) when ``expected_version`` is
        given and is not the item's. Records ``deleted``."""
        if not _valid_id(item_id):
            return None
        store = self.store
        with store.transaction() as conn:
            statement = f"DELETE FROM {quote(self.table)}"
            return self._write_one(store, conn, statement, (), item_id, expected_version, "deleted")

    def _write_one(
        self,
        store: Store,
        conn: Connection,
        statement: str,
        values: Iterable[Any],
        item_id: int,
        expected_version: int | None,
        event: Event,
    ) -> dict[str, Any] | VersionMismatch | None:
        """Run ``statement`` (``UPDATE … SET …`` with ``values``, or ``DELETE FROM …``) on
        item ``item_id``, and only at ``expected_version`` when one is given: the item as the
        statement left it, recorded as ``event``; else None (no such item) or the
        :class:`VersionMismatch` (nothing written)."""
        sql = f'{statement} WHERE "id" = ?'
        params = [*values, item_id]
        if expected_version is not None:
            sql += ' AND "version" = ?'
            params.append(_expected(expected_version))
        row = conn.execute(f"{sql} RETURNING {self._names}", params).fetchone()
        if row is None:
            return self._missing_or_mismatch(conn, item_id)
        item = self._item(row)
        self._record(store, conn, item, event)
        return item

    # -- lists ---------------------------------------------------------------------------------

    def _plan(self, store: Store) -> QueryPlan:
        plan = self._plans.get(store.dialect)
        if plan is None:
            plan = QueryPlan(
                table=self.table,
                dialect=store.dialect,
                columns=self.columns,
                sortable=self.sortable,
                filterable=self.filterable,
                searchable=self.searchable,
                default_sort=self._default_sort,
                secret=self._secret() if callable(self._secret) else self._secret,
            )
            self._plans[store.dialect] = plan
        return plan

    def _check_paging(self, query: Query) -> int:
        """The offset of ``query``'s first item (0 with a cursor)."""
        if not 1 <= query.per_page <= self.max_per_page:
            raise CollectionError(
                "per_page", f"per_page must be between 1 and {self.max_per_page}."
            )
        if not 1 <= query.page <= MAX_INT // self.max_per_page:
            raise CollectionError("page", "page must be 1 or more (and not beyond the largest).")
        if query.offset is not None and not 0 <= query.offset <= MAX_INT:
            raise CollectionError("offset", "offset must be 0 or more.")
        if query.cursor is not None:
            if query.page != 1 or query.offset:
                raise CollectionError("cursor", "A cursor cannot be combined with page or offset.")
            return 0
        if query.offset is not None:
            return query.offset
        return (query.page - 1) * query.per_page

    def query(self, query: Query) -> Page:
        """One page of the items ``query`` selects, in one consistent snapshot: the items,
        the number of matching items (when ``query.count``), and the cursor of the next page
        (when there is a next item). CollectionError for a property not declared sortable,
        filterable or searchable, a value of the wrong type, or a bad cursor."""
        offset = self._check_paging(query)
        store = self.store
        plan = self._plan(store)
        clauses, params = plan.where(query)
        ranked = plan.ranked(query)
        keys = plan.keys(_BY_ID if ranked else query)
        limit = query.per_page + 1  # one more: whether there is a next page
        if query.cursor is None:
            statements = [
                plan.select(self._names, clauses, params, keys, limit, offset, ranked=ranked)
            ]
        else:
            values = plan.read_cursor(keys, query.cursor)
            statements = plan.select_after(self._names, clauses, params, keys, values, limit)
        where = " WHERE " + " AND ".join(clauses) if clauses else ""
        rows: list[Any] = []
        with store.read() as conn:
            total = None
            if query.count:
                counted = conn.execute(f"SELECT COUNT(*) FROM {quote(self.table)}{where}", params)
                total = int(counted.fetchone()[0])
            if query.cursor is None:
                sql, page_params = statements[0]
                rows = conn.execute(sql, page_params).fetchall()
            else:
                for sql, page_params in statements:
                    rows.extend(conn.execute(sql, [*page_params, limit - len(rows)]).fetchall())
                    if len(rows) >= limit:
                        break
        items = [self._item(row) for row in rows[: query.per_page]]
        more = len(rows) > query.per_page
        next_cursor = None
        if more and items and not ranked:
            next_cursor = plan.make_cursor(keys, items[-1])
        return Page(items, total, next_cursor)
