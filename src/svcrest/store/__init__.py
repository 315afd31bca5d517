"""Persistence: the :class:`Store` interface and its engines (SQLite, PostgreSQL)."""

from __future__ import annotations

from svcrest.store.base import Connection, Cursor, Dialect, Step, Store, StoreError
from svcrest.store.locations import open_store

__all__ = ["Connection", "Cursor", "Dialect", "Step", "Store", "StoreError", "open_store"]
