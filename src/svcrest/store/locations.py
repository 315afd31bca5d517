"""Opening the store ``App(store=...)``, ``--db`` and ``SVCREST_DB`` name
(docs/guides/many-hosts.md).

Nothing (an in-memory SQLite database), a path or ``sqlite:///relative.db`` /
``sqlite:////absolute.db`` (a SQLite file), or a PostgreSQL URL
``postgresql://user:password@host:port/dbname`` (``postgresql:///dbname?host=/socket/dir``).
"""

from __future__ import annotations

from typing import Final

from svcrest.store.base import Store, StoreError
from svcrest.store.postgres import PostgresStore, is_postgres_url
from svcrest.store.sqlite import SqliteStore

__all__ = ["STORE_FORMS", "is_memory", "is_postgres_url", "open_store"]

#: Every form of a store location, as messages name them.
STORE_FORMS: Final = (
    "a SQLite file path (var/svcrest.db), sqlite:///relative/path.db,"
    " sqlite:////absolute/path.db, :memory: (an in-memory SQLite database), or a PostgreSQL URL"
    " (postgresql://user:password@host:port/dbname or postgres://user:password@host:port/dbname)"
)

_MEMORY_FORMS = frozenset({"", ":memory:", "sqlite://", "sqlite:///:memory:"})


def is_memory(spec: object) -> bool:
    """Whether ``spec`` names a private in-memory database (one process only)."""
    return spec is None or spec in _MEMORY_FORMS


def open_store(spec: str | Store | None) -> Store:
    """The store for ``spec``: an existing store as is, a PostgreSQL URL through psycopg
    (StoreError naming ``svcrest[postgres]`` when the driver is missing), else SQLite; a
    StoreError naming every accepted form for a URL of another scheme (``mysql://``)."""
    if isinstance(spec, Store):
        return spec
    if is_postgres_url(spec):
        assert isinstance(spec, str)
        return PostgresStore(spec)
    if isinstance(spec, str) and "://" in spec and not spec.startswith("sqlite:"):
        scheme = spec.partition("://")[0]
        raise StoreError(f"unsupported database URL scheme {scheme!r}: use {STORE_FORMS}")
    return SqliteStore(spec)
