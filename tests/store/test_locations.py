"""Where the store lives (``svcrest.store.locations``): the forms ``App(store=...)``, ``--db``
and ``SVCREST_DB`` accept."""

from __future__ import annotations

from pathlib import Path

import pytest

from svcrest.store.base import StoreError
from svcrest.store.locations import STORE_FORMS, is_memory, is_postgres_url, open_store
from svcrest.store.sqlite import SqliteStore


@pytest.mark.parametrize(
    ("spec", "memory"),
    [
        (None, True),
        ("", True),
        (":memory:", True),
        ("sqlite://", True),
        ("sqlite:///:memory:", True),
        ("var/svcrest.db", False),
        ("sqlite:///var/svcrest.db", False),
        ("postgresql:///site", False),
    ],
)
def test_is_memory(spec: str | None, memory: bool) -> None:
    assert is_memory(spec) is memory


@pytest.mark.parametrize(
    ("spec", "postgres"),
    [
        ("postgresql://u:p@h:5432/d", True),
        ("postgres://u@h/d", True),
        ("postgresql:///d?host=/run/postgresql", True),
        ("sqlite:///x.db", False),
        ("x.db", False),
        (None, False),
    ],
)
def test_is_postgres_url(spec: str | None, postgres: bool) -> None:
    assert is_postgres_url(spec) is postgres


def test_an_existing_store_is_used_as_it_is(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "site.db"))
    try:
        assert isinstance(store, SqliteStore)
        assert open_store(store) is store
    finally:
        store.close()


def test_another_scheme_names_every_accepted_form() -> None:
    with pytest.raises(StoreError) as raised:
        open_store("mysql://u@h/d")
    assert str(raised.value) == f"unsupported database URL scheme 'mysql': use {STORE_FORMS}"
