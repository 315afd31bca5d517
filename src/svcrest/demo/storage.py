"""Storage of the demo notes in the app's SQLite store.

Every query is built from fixed SQL fragments chosen through whitelists (sort columns, filter
columns, update columns); user input only ever reaches SQLite as a bound parameter.
Dates are stored as WordPress stores them, ``YYYY-MM-DD HH:MM:SS`` (``date`` in the site's
timezone, ``date_gmt`` in UTC).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from svcrest.store.sqlite import SqliteStore

__all__ = [
    "EXACT_FILTER_PROPERTIES",
    "MAX_ID",
    "NOTES_COMPONENT",
    "NOTES_SCHEMA",
    "SORT_PROPERTIES",
    "TEXT_FILTER_PROPERTIES",
    "NoteFilter",
    "NoteQuery",
    "NoteSorter",
    "NoteStore",
]

#: The component name of the notes table in ``SqliteStore.migrate``.
NOTES_COMPONENT: Final = "demo_notes"
#: Schema steps of the notes table (append-only; see ``SqliteStore.migrate``).
NOTES_SCHEMA: Final[tuple[str, ...]] = (
    """
    CREATE TABLE demo_notes (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        title TEXT NOT NULL,
        content TEXT NOT NULL,
        author INTEGER NOT NULL,
        date TEXT NOT NULL,
        date_gmt TEXT NOT NULL
    );
    CREATE INDEX demo_notes_date_gmt ON demo_notes (date_gmt);
    CREATE INDEX demo_notes_author ON demo_notes (author)
    """,
)

#: The largest id SQLite can hold (a signed 64-bit integer).
MAX_ID: Final = 2**63 - 1

#: Sortable property → its ORDER BY expression (``date`` sorts by the UTC instant).
_SORT_SQL: Final[Mapping[str, str]] = {
    "id": "id",
    "title": "title COLLATE NOCASE",
    "date": "date_gmt",
    "author": "author",
}
SORT_PROPERTIES: Final = tuple(_SORT_SQL)
#: Properties filtered by substring (case-insensitive for ASCII) unless asked for exactly.
TEXT_FILTER_PROPERTIES: Final = ("title", "content")
#: Properties filtered by exact value.
EXACT_FILTER_PROPERTIES: Final = ("id", "author")
_FILTER_COLUMNS: Final[Mapping[str, str]] = {
    name: name for name in TEXT_FILTER_PROPERTIES + EXACT_FILTER_PROPERTIES
}
_UPDATE_COLUMNS: Final = frozenset({"title", "content", "date", "date_gmt"})
_COLUMNS: Final = "id, title, content, author, date, date_gmt"
_DEFAULT_ORDER: Final = "date_gmt DESC, id DESC"


@dataclass(frozen=True, slots=True)
class NoteSorter:
    """Sort by ``property`` (one of ``SORT_PROPERTIES``)."""

    property: str
    descending: bool = False


@dataclass(frozen=True, slots=True)
class NoteFilter:
    """Keep notes whose ``property`` contains ``value`` (or equals it when ``exact``)."""

    property: str
    value: str | int
    exact: bool = False


@dataclass(frozen=True, slots=True)
class NoteQuery:
    """One page of a filtered, sorted list of notes."""

    offset: int = 0
    limit: int = 10
    sorters: tuple[NoteSorter, ...] = ()
    filters: tuple[NoteFilter, ...] = ()
    search: str | None = None


def _valid_id(note_id: int) -> bool:
    return isinstance(note_id, int) and not isinstance(note_id, bool) and 0 < note_id <= MAX_ID


def _row_to_note(row: tuple[Any, ...]) -> dict[str, Any]:
    note_id, title, content, author, date, date_gmt = row
    return {
        "id": int(note_id),
        "title": str(title),
        "content": str(content),
        "author": int(author),
        "date": str(date),
        "date_gmt": str(date_gmt),
    }


def _where(query: NoteQuery) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    for item in query.filters:
        column = _FILTER_COLUMNS[item.property]
        if item.exact:
            clauses.append(f"{column} = ?")
        else:
            clauses.append(f"instr(lower({column}), lower(?)) > 0")
        params.append(item.value)
    if query.search:
        clauses.append("(instr(lower(title), lower(?)) > 0 OR instr(lower(content), lower(?)) > 0)")
        params.extend((query.search, query.search))
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def _order_by(sorters: tuple[NoteSorter, ...]) -> str:
    if not sorters:
        return _DEFAULT_ORDER
    parts = [
        f"{_SORT_SQL[item.property]} {'DESC' if item.descending else 'ASC'}" for item in sorters
    ]
    if all(item.property != "id" for item in sorters):
        parts.append("id ASC")  # a stable order for equal keys, so pages never overlap
    return ", ".join(parts)


class NoteStore:
    """The notes of one App, in its store. The table is created on first use."""

    def __init__(self, store: Callable[[], SqliteStore]) -> None:
        self._get_store = store
        self._ready = False
        self._lock = threading.Lock()

    @property
    def store(self) -> SqliteStore:
        """The store, with the notes table migrated."""
        store = self._get_store()
        if not self._ready:
            if store.in_block():
                # Inside another block (an atomic batch's transaction) a rollback would undo
                # the table: migrate (idempotent) without remembering it.
                store.migrate(NOTES_COMPONENT, NOTES_SCHEMA)
                return store
            with self._lock:
                if not self._ready:
                    store.migrate(NOTES_COMPONENT, NOTES_SCHEMA)
                    self._ready = True
        return store

    def list(self, query: NoteQuery) -> tuple[list[dict[str, Any]], int]:
        """The notes of ``query``'s page and the total number of matching notes (one
        consistent snapshot)."""
        where, params = _where(query)
        with self.store.read() as conn:
            total = int(
                conn.execute(f"SELECT COUNT(*) FROM demo_notes{where}", params).fetchone()[0]
            )
            if query.offset >= total or query.limit <= 0:
                return [], total
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM demo_notes{where}"
                f" ORDER BY {_order_by(query.sorters)} LIMIT ? OFFSET ?",
                [*params, query.limit, query.offset],
            ).fetchall()
        return [_row_to_note(row) for row in rows], total

    def has_author(self, user_id: int) -> bool:
        """Whether user ``user_id`` wrote at least one note."""
        if not _valid_id(user_id):
            return False
        with self.store.read() as conn:
            row = conn.execute("SELECT 1 FROM demo_notes WHERE author = ? LIMIT 1", (user_id,))
            return row.fetchone() is not None

    def get(self, note_id: int) -> dict[str, Any] | None:
        """The note ``note_id``, or None."""
        if not _valid_id(note_id):
            return None
        with self.store.read() as conn:
            return self._select(conn, note_id)

    def create(
        self, *, title: str, content: str, author: int, date: str, date_gmt: str
    ) -> dict[str, Any]:
        """Insert a note and return it as stored."""
        with self.store.transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO demo_notes (title, content, author, date, date_gmt)"
                " VALUES (?, ?, ?, ?, ?)",
                (title, content, author, date, date_gmt),
            )
            note_id = cursor.lastrowid
            assert note_id is not None
            note = self._select(conn, note_id)
        assert note is not None
        return note

    def update(self, note_id: int, changes: Mapping[str, Any]) -> dict[str, Any] | None:
        """Set the given columns of note ``note_id``; the note as stored, or None when it does
        not exist. Only ``title``, ``content``, ``date`` and ``date_gmt`` can change."""
        unknown = set(changes) - _UPDATE_COLUMNS
        if unknown:
            raise ValueError(f"cannot update note columns {sorted(unknown)}")
        if not _valid_id(note_id):
            return None
        with self.store.transaction() as conn:
            if changes:
                names = sorted(changes)
                assignments = ", ".join(f"{name} = ?" for name in names)
                conn.execute(
                    f"UPDATE demo_notes SET {assignments} WHERE id = ?",
                    [*(changes[name] for name in names), note_id],
                )
            return self._select(conn, note_id)

    def delete(self, note_id: int) -> dict[str, Any] | None:
        """Delete note ``note_id``; the deleted note, or None when it did not exist."""
        if not _valid_id(note_id):
            return None
        with self.store.transaction() as conn:
            note = self._select(conn, note_id)
            if note is not None:
                conn.execute("DELETE FROM demo_notes WHERE id = ?", (note_id,))
        return note

    @staticmethod
    def _select(conn: sqlite3.Connection, note_id: int) -> dict[str, Any] | None:
        row = conn.execute(f"SELECT {_COLUMNS} FROM demo_notes WHERE id = ?", (note_id,)).fetchone()
        return None if row is None else _row_to_note(tuple(row))
