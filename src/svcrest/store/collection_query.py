"""The list query of a stored collection: what may be asked (:class:`Query`), and the SQL of it.

SECURITY, the rule of this module: SQL text is made only from fixed fragments and the quoted
names of declared columns, chosen through the allow-lists of a :class:`QueryPlan` (sortable,
filterable, searchable); every value a client sends is a bound parameter. A property that is
not on the list is a :class:`CollectionError` (400 ``rest_invalid_param``), never a column.

Sorting appends ``id`` to the sort keys (in the last key's direction) so the order is total:
offset pages and cursor pages list the same rows in the same order. A cursor holds the last
row's sort keys and id, base64url JSON, signed with HMAC-SHA256 when the table has a secret;
the next page is read from there by index ranges on those keys
(:meth:`QueryPlan.select_after`), never reading the rows before it, so its cost does not grow
with the page's depth (given an index on the keys: the table makes one per sortable property
and one per multi-key order it declares). Sortable columns are never NULL (the table refuses
a sortable property without ``default`` or ``required``), which keeps the ranges exact.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from svcrest.store.base import Dialect
from svcrest.store.collection_columns import (
    MAX_INT,
    CollectionError,
    Column,
    quote,
    storable_text,
)

__all__ = [
    "MAX_LIST",
    "OPERATORS",
    "Filter",
    "Page",
    "Query",
    "QueryPlan",
    "Sort",
    "parse_filters",
    "parse_sort",
    "search_terms",
]

#: The most values an ``in`` / ``notin`` filter, ``include`` or ``exclude`` may list.
MAX_LIST: Final = 100
#: The most sort keys or filters of one query.
MAX_CRITERIA: Final = 10
_MAX_CURSOR: Final = 2048
#: Ext JS's ``Ext.util.Filter`` operators (and WordPress-style names) → this module's.
OPERATORS: Final[Mapping[str, str]] = {
    "=": "=", "==": "=", "===": "=", "eq": "=",
    "!=": "!=", "!==": "!=", "ne": "!=", "<>": "!=",
    "<": "<", "lt": "<", "<=": "<=", "le": "<=",
    ">": ">", "gt": ">", ">=": ">=", "ge": ">=",
    "in": "in", "notin": "notin", "like": "like",
}  # fmt: skip
_TERMS: Final = re.compile(r'"([^"]*)"|([^\s"]+)')
_UPPER: Final = "'ABCDEFGHIJKLMNOPQRSTUVWXYZ'"
_LOWER: Final = "'abcdefghijklmnopqrstuvwxyz'"
_ID = Column("id", "integer", required=True)


@dataclass(frozen=True, slots=True)
class Sort:
    """Sort by ``property`` (a sortable property, or ``id``)."""

    property: str
    descending: bool = False


@dataclass(frozen=True, slots=True)
class Filter:
    """Keep the items whose ``property`` compares to ``value`` by ``operator`` (a key of
    :data:`OPERATORS`). ``=`` / ``!=`` with ``None`` test for a missing value; ``in`` and
    ``notin`` take a list (or a comma-separated text); ``like`` finds ``value`` inside a
    string, ignoring ASCII case, with ``%`` and ``_`` matching themselves. ``operator=None``
    is ``like`` for a string property and ``=`` for any other."""

    property: str
    value: Any
    operator: str | None = None


@dataclass(frozen=True, slots=True)
class Query:
    """One page of a collection.

    ``per_page`` items from ``offset`` (when given) or from page ``page`` (1-based), or, with
    ``cursor`` (a page's ``next_cursor``), after the cursor's row (``page`` and ``offset``
    must then be left alone). ``include`` / ``exclude``: ids to keep only / to leave out;
    ``search``: words (or ``"quoted phrases"``) each found, ignoring ASCII case, in some
    searchable property (:func:`search_terms`); ``sort``: the
    keys (the table's default order when empty); ``filters``: all must hold. ``count``:
    whether to count the matching items (``Page.total``). ``include_order``: list the items
    in the order of the ids in ``include`` (WordPress's ``orderby=include``, whose ``order``
    does not reverse it), ``sort`` ignored; it needs ``include`` and offset or page paging.
    """

    per_page: int = 10
    page: int = 1
    offset: int | None = None
    include: tuple[int, ...] = ()
    exclude: tuple[int, ...] = ()
    search: str | None = None
    sort: tuple[Sort, ...] = ()
    filters: tuple[Filter, ...] = ()
    cursor: str | None = None
    count: bool = True
    include_order: bool = False


@dataclass(frozen=True, slots=True)
class Page:
    """The items of one page; ``total`` items match (None when not counted); ``next_cursor``
    continues after the last item (None on the last page)."""

    items: list[dict[str, Any]] = field(default_factory=list)
    total: int | None = None
    next_cursor: str | None = None


def _load(value: Any, param: str) -> list[Any]:
    """The list of a JSON text, a decoded list, or one decoded object."""
    if isinstance(value, str | bytes):
        try:
            value = orjson.loads(value) if value.strip() else []
        except orjson.JSONDecodeError:
            raise CollectionError(param, f"{param} is not valid JSON.") from None
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list | tuple):
        raise CollectionError(param, f"{param} must be a JSON array of objects.")
    if len(value) > MAX_CRITERIA:
        raise CollectionError(param, f"{param} must not have more than {MAX_CRITERIA} entries.")
    return list(value)


def parse_sort(value: Any, param: str = "sort") -> tuple[Sort, ...]:
    """Ext JS's ``sort`` (``[{"property": "title", "direction": "DESC"}, ...]``: JSON text,
    decoded list or one object) as sort keys; CollectionError when malformed. Property names
    are checked when the query runs."""
    keys: list[Sort] = []
    for index, item in enumerate(_load(value, param)):
        where = f"{param}[{index}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("property"), str):
            raise CollectionError(param, f"{where} must be an object with a property.")
        direction = item.get("direction") or "ASC"
        if not isinstance(direction, str) or direction.upper() not in ("ASC", "DESC"):
            raise CollectionError(param, f"{where}.direction must be ASC or DESC.")
        keys.append(Sort(item["property"], direction.upper() == "DESC"))
    return tuple(keys)


def parse_filters(value: Any, param: str = "filter") -> tuple[Filter, ...]:
    """Ext JS's ``filter`` (``[{"property": "n", "value": 3, "operator": ">"}, ...]``: JSON
    text, decoded list or one object) as filters; CollectionError when malformed. Property
    names and values are checked when the query runs."""
    filters: list[Filter] = []
    for index, item in enumerate(_load(value, param)):
        where = f"{param}[{index}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("property"), str):
            raise CollectionError(param, f"{where} must be an object with a property.")
        operator = item.get("operator")
        if operator is not None and not isinstance(operator, str):
            raise CollectionError(param, f"{where}.operator must be a string.")
        filters.append(Filter(item["property"], item.get("value"), operator))
    return tuple(filters)


def escape_like(text: str) -> str:
    """``text`` as a LIKE pattern matching itself (``\\`` escapes ``\\``, ``%`` and ``_``)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def search_terms(search: str) -> list[str]:
    """The terms of a ``search`` as WordPress's ``WP_Query`` splits them: words separated by
    white space, a ``"quoted phrase"`` kept whole; each term must be found (in any
    searchable property). At most :data:`MAX_CRITERIA` terms; the rest are ignored."""
    terms: list[str] = []
    for quoted, word in _TERMS.findall(search):
        term = quoted or word
        if term.strip() and term not in terms:
            terms.append(term)
    return terms[:MAX_CRITERIA]


def _listed(value: Any, param: str) -> list[Any]:
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list | tuple):
        raise CollectionError(param, f"{param} must be a list.")
    if len(value) > MAX_LIST:
        raise CollectionError(param, f"{param} must not list more than {MAX_LIST} values.")
    return list(value)


class QueryPlan:
    """The SQL of a table's list queries, fixed when the table is declared.

    ``columns``: every column (``id`` included); ``sortable``, ``filterable``,
    ``searchable``: the allow-lists (``id`` is always sortable and filterable);
    ``default_sort``: the order when a query names none; ``secret``: the key that signs
    cursors (None: cursors are checked, not signed; a forged one can only move the page).
    """

    def __init__(
        self,
        *,
        table: str,
        dialect: Dialect,
        columns: Mapping[str, Column],
        sortable: Sequence[str],
        filterable: Sequence[str],
        searchable: Sequence[str],
        default_sort: tuple[Sort, ...],
        secret: bytes | None,
    ) -> None:
        self.table = table
        self.dialect: Dialect = dialect
        self.columns = {"id": _ID, **columns}
        self.sortable = frozenset(("id", *sortable))
        self.filterable = frozenset(("id", *filterable))
        self.searchable = tuple(searchable)
        self.default_sort = default_sort
        self._secret = secret
        self._keyed = (
            None if secret is None else hmac.new(secret, table.encode() + b"\x00", hashlib.sha256)
        )

    # -- WHERE ---------------------------------------------------------------------------------

    def where(self, query: Query) -> tuple[list[str], list[Any]]:
        """The conditions (to join with AND) and their parameters of ``query``'s include,
        exclude, search and filters."""
        clauses: list[str] = []
        params: list[Any] = []
        for name, negate in (("include", False), ("exclude", True)):
            ids = getattr(query, name)
            if ids:
                values = [_ID.to_db(one, name) for one in _listed(list(ids), name)]
                if any(value < 1 for value in values):
                    raise CollectionError(name, f"{name} must list ids (1 or more).")
                clauses.append(self._in('"id"', len(values), negate, nullable=False))
                params.extend(values)
        if query.search and not storable_text(query.search):
            raise CollectionError(
                "search", "search must not contain a NUL character or a lone surrogate."
            )
        terms = search_terms(query.search or "")
        if terms and not self.searchable:
            raise CollectionError("search", "This collection cannot be searched.")
        for term in terms:
            pattern = f"%{escape_like(term)}%"
            tests = [self._like(quote(name)) for name in self.searchable]
            clauses.append("(" + " OR ".join(tests) + ")")
            params.extend([pattern] * len(tests))
        for index, one in enumerate(query.filters):
            clause, values = self._filter(one, f"filter[{index}]")
            clauses.append(clause)
            params.extend(values)
        return clauses, params

    def _like(self, column: str) -> str:
        if self.dialect == "sqlite":  # SQLite's LIKE ignores ASCII case by itself
            return f"{column} LIKE ? ESCAPE '\\'"
        return f"translate({column}, {_UPPER}, {_LOWER}) LIKE translate(?, {_UPPER}, {_LOWER})" + (
            " ESCAPE '\\'"
        )

    @staticmethod
    def _in(column: str, count: int, negate: bool, *, nullable: bool) -> str:
        if count == 0:
            return "1 = 1" if negate else "1 = 0"
        marks = ", ".join("?" * count)
        if not negate:
            return f"{column} IN ({marks})"
        return (
            f"({column} NOT IN ({marks}) OR {column} IS NULL)"
            if nullable
            else (f"{column} NOT IN ({marks})")
        )

    def _column(self, name: Any, allowed: frozenset[str], param: str, what: str) -> Column:
        if not isinstance(name, str) or name not in allowed:
            names = ", ".join(sorted(allowed))
            shown = repr(name)
            if len(shown) > 40:  # SECURITY: an answer never repeats a long input in full
                shown = shown[:37] + "..."
            raise CollectionError(param, f"{param} cannot {what} {shown}: use one of {names}.")
        return self.columns[name]

    def _filter(self, one: Filter, param: str) -> tuple[str, list[Any]]:
        column = self._column(one.property, self.filterable, "filter", "filter by")
        name = quote(column.name)
        if one.operator is None:
            operator = "like" if column.kind == "string" else "="
        elif one.operator in OPERATORS:
            operator = OPERATORS[one.operator]
        else:
            known = ", ".join(OPERATORS)
            shown = repr(one.operator)
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            raise CollectionError(
                "filter", f"{param}.operator {shown} is not supported: use one of {known}."
            )
        value = one.value
        if operator in ("in", "notin"):
            values = [column.to_db(item, "filter") for item in _listed(value, "filter")]
            return self._in(name, len(values), operator == "notin", nullable=column.nullable), (
                values
            )
        if operator == "like":
            if column.kind != "string":
                raise CollectionError("filter", f"{param}: like needs a string property.")
            if isinstance(value, int | float) and not isinstance(value, bool):
                value = str(value)
            if not isinstance(value, str) or not storable_text(value):
                raise CollectionError("filter", f"{param}.value must be a string (without NUL).")
            return self._like(name), [f"%{escape_like(value)}%"]
        return self._compare(column, operator, value, param)

    @staticmethod
    def _compare(column: Column, operator: str, value: Any, param: str) -> tuple[str, list[Any]]:
        name = quote(column.name)
        if value is None:
            if operator == "=":
                return f"{name} IS NULL", []
            if operator == "!=":
                return f"{name} IS NOT NULL", []
            raise CollectionError("filter", f"{param}.value must not be null for {operator}.")
        if not column.scalar:
            raise CollectionError("filter", f"{param}: {column.name} cannot be compared.")
        stored = column.to_db(value, "filter")
        if operator == "!=":
            clause = f"({name} <> ? OR {name} IS NULL)" if column.nullable else f"{name} <> ?"
            return clause, [stored]
        return f"{name} {operator} ?", [stored]

    # -- ORDER BY and cursors ------------------------------------------------------------------

    def keys(self, query: Query) -> list[tuple[Column, bool]]:
        """The sort keys of ``query`` (columns and whether descending), ``id`` last."""
        keys: list[tuple[Column, bool]] = []
        for one in query.sort or self.default_sort:
            column = self._column(one.property, self.sortable, "sort", "sort by")
            if all(column.name != seen.name for seen, _ in keys):
                keys.append((column, one.descending))
            if column.name == "id":
                break  # id is unique: later keys never matter
        if not keys:
            keys.append((_ID, False))
        elif keys[-1][0].name != "id":
            keys.append((_ID, keys[-1][1]))
        return keys

    @staticmethod
    def ranked(query: Query) -> tuple[int, ...]:
        """The ids of ``query.include`` in the order given, each once, when the query lists
        its items in that order (``include_order``); else ``()``."""
        if not query.include_order:
            return ()
        if not query.include:
            raise CollectionError("orderby", "orderby=include needs include.")
        if query.cursor is not None:
            raise CollectionError("cursor", "A cursor cannot be combined with orderby=include.")
        values = [_ID.to_db(one, "include") for one in _listed(list(query.include), "include")]
        return tuple(dict.fromkeys(values))

    @staticmethod
    def order_by(keys: list[tuple[Column, bool]]) -> str:
        """The ORDER BY list of ``keys``."""
        return ", ".join(
            f"{quote(column.name)} {'DESC' if desc else 'ASC'}" for column, desc in keys
        )

    def select(
        self,
        names: str,
        clauses: list[str],
        params: list[Any],
        keys: list[tuple[Column, bool]],
        limit: int,
        offset: int,
        *,
        ranked: Sequence[int] = (),
    ) -> tuple[str, list[Any]]:
        """The statement (and its parameters) of ``limit`` rows (the columns ``names``) from
        ``offset``, in the order ``keys``, of the rows that meet ``clauses``; with ``ranked``
        (ids, :meth:`ranked`), in the order of those ids first."""
        where = " WHERE " + " AND ".join(clauses) if clauses else ""
        order = self.order_by(keys)
        rank: list[Any] = []
        if ranked:
            # SECURITY: each id is a bound parameter; only its position (our own counter)
            # is written into the SQL.
            whens = " ".join(f"WHEN ? THEN {position}" for position in range(len(ranked)))
            order = f'CASE "id" {whens} END, {order}'
            rank = list(ranked)
        sql = f"SELECT {names} FROM {quote(self.table)}{where} ORDER BY {order} LIMIT ? OFFSET ?"
        return sql, [*params, *rank, limit, offset]

    def select_after(
        self,
        names: str,
        clauses: list[str],
        params: list[Any],
        keys: list[tuple[Column, bool]],
        values: list[Any],
        limit: int,
    ) -> list[tuple[str, list[Any]]]:
        """The statements (and their parameters, but for the final ``LIMIT ?``: the rows
        still wanted, at most ``limit``) whose rows, one statement's after the other's,
        follow the row whose sort keys are ``values`` (stored form) in the order ``keys``:
        run them in turn until a page is full.

        The rows after the cursor are, last key first, those equal to ``values`` on the keys
        before one key and after it on that key: each a range of an index on the keys.
        PERF: SQLite reads a row-value comparison ``(a, id) > (?, ?)`` as a range of its
        first column only, so a page deep in a run of ties read the run from its start (16x
        page 1's time at page 1,000 of 100,000 rows with 10 distinct values): there each
        range is a statement of its own, read for at most the rows still wanted.
        PostgreSQL reads a row value as one exact range, and a round trip costs more than a
        statement: there a single statement, the row value when every key has one
        direction, else a UNION ALL of the ranges (bench/collection_paging.py).
        """
        order = self.order_by(keys)
        table = quote(self.table)
        columns = [quote(column.name) for column, _ in keys]
        if self.dialect == "postgresql" and len({desc for _, desc in keys}) == 1:
            operator = "<" if keys[0][1] else ">"
            where = " AND ".join(
                [*clauses, f"({', '.join(columns)}) {operator} ({', '.join('?' * len(keys))})"]
            )
            sql = f"SELECT {names} FROM {table} WHERE {where} ORDER BY {order} LIMIT ?"
            return [(sql, [*params, *values])]
        statements: list[tuple[str, list[Any]]] = []
        for index in reversed(range(len(keys))):
            tests = [f"{name} = ?" for name in columns[:index]]
            tests.append(f"{columns[index]} {'<' if keys[index][1] else '>'} ?")
            where = " AND ".join([*clauses, *tests])
            statements.append(
                (
                    f"SELECT {names} FROM {table} WHERE {where} ORDER BY {order} LIMIT ?",
                    [*params, *values[: index + 1]],
                )
            )
        if self.dialect == "sqlite":
            return statements
        union = " UNION ALL ".join(
            f"SELECT * FROM ({sql}) AS range{number}"
            for number, (sql, _params) in enumerate(statements)
        )
        bound = [value for _sql, part in statements for value in (*part, limit)]
        return [(f"SELECT * FROM ({union}) AS page ORDER BY {order} LIMIT ?", bound)]

    def _signature(self, keys: list[tuple[Column, bool]]) -> str:
        return ",".join(f"{column.name}:{'d' if desc else 'a'}" for column, desc in keys)

    def _mac(self, payload: bytes) -> bytes:
        """The first 16 bytes of HMAC-SHA256(secret, table name, NUL, payload)."""
        assert self._keyed is not None
        mac = self._keyed.copy()  # PERF: the key's pads are computed once, not per cursor
        mac.update(payload)
        return mac.digest()[:16]

    def make_cursor(self, keys: list[tuple[Column, bool]], row: Mapping[str, Any]) -> str:
        """The cursor continuing after ``row`` (an item as answered) in the order ``keys``."""
        payload = orjson.dumps([self._signature(keys), [row[c.name] for c, _ in keys]])
        text = base64.urlsafe_b64encode(payload).rstrip(b"=").decode()
        if self._secret is None:
            return text
        mac = base64.urlsafe_b64encode(self._mac(payload)).rstrip(b"=").decode()
        return f"{text}.{mac}"

    def read_cursor(self, keys: list[tuple[Column, bool]], cursor: str) -> list[Any]:
        """The stored sort-key values of ``cursor``; CollectionError (``cursor``) when it is
        malformed, forged, or made for another order."""
        if not isinstance(cursor, str) or len(cursor) > _MAX_CURSOR or not cursor.isascii():
            raise _invalid_cursor()
        text, _, mac = cursor.partition(".")
        try:
            payload = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            if self._secret is not None:
                given = base64.urlsafe_b64decode(mac + "=" * (-len(mac) % 4))
                if not hmac.compare_digest(given, self._mac(payload)):
                    raise _invalid_cursor()
            signature, values = orjson.loads(payload)
        except (binascii.Error, ValueError, TypeError):
            raise _invalid_cursor() from None
        if signature != self._signature(keys):
            raise CollectionError("cursor", "The cursor was made for another sort order.")
        if not isinstance(values, list) or len(values) != len(keys) or None in values:
            raise _invalid_cursor()
        stored = [
            column.to_db(value, "cursor") for (column, _), value in zip(keys, values, strict=True)
        ]
        if not 0 < stored[-1] <= MAX_INT:
            raise _invalid_cursor()
        return stored


def _invalid_cursor() -> CollectionError:
    return CollectionError("cursor", "Invalid cursor.")
