"""Opening the store ``App(store=...)``, ``--db`` and ``SVCREST_DB`` name
(docs/guides/many-hosts.md).

Nothing (an in-memory SQLite database), a path or ``sqlite:///relative.db`` /
``sqlite:////absolute.db`` (a SQLite file), or a PostgreSQL URL
``postgresql://user:password@host:port/dbname`` (``postgresql:///dbname?host=/socket/dir``).
"""

from __future__ import annotations

from svcrest.store.base import Store
from svcrest.store.postgres import PostgresStore, is_postgres_url
from svcrest.store.sqlite import SqliteStore

__all__ = ["is_memory", "is_postgres_url", "open_store"]

_MEMORY_FORMS = frozenset({"", ":memory:", "sqlite://", "sqlite:///:memory:"})


def is_memory(spec: object) -> bool:
    """Whether ``spec`` names a private in-memory database (one process only)."""
    return spec is None or spec in _MEMORY_FORMS


def open_store(spec: str | Store | None) -> Store:
    """The store for ``spec``: an existing store as is, a PostgreSQL URL through psycopg
    (StoreError naming ``svcrest[postgres]`` when the driver is missing), else SQLite."""
    if isinstance(spec, Store):
        return spec
    if is_postgres_url(spec):
        assert isinstance(spec, str)
        return PostgresStore(spec)
    return SqliteStore(spec)
