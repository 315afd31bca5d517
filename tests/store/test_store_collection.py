"""``svcrest.store.store_collection``'s own parts: the site a collection reads on the request
path, decided once (the HTTP behaviour is in tests/rest/test_store_collection.py)."""

from __future__ import annotations

import pytest

from svcrest import App, StoreCollection
from svcrest.http.request import Request

SCHEMA = {"title": "task", "type": "object", "properties": {"title": {"type": "string"}}}
NOT_BOUND = "StoreCollection is not bound to a site: use app.register_controller"


def test_an_unbound_collection_names_the_missing_binding_wherever_it_needs_the_site() -> None:
    """What :attr:`RestController.app` raises, from each reader of the site."""
    tasks = StoreCollection("todo/v1", "tasks", SCHEMA)
    with pytest.raises(RuntimeError, match=NOT_BOUND):
        tasks.app  # noqa: B018
    with pytest.raises(RuntimeError, match=NOT_BOUND):
        tasks._store()
    with pytest.raises(RuntimeError, match=NOT_BOUND):
        tasks._secret()
    with pytest.raises(RuntimeError, match=NOT_BOUND):
        tasks._collection_url()
    with pytest.raises(RuntimeError, match=NOT_BOUND):
        tasks._shape(Request("GET", "/todo/v1/tasks/1"))


def test_a_bound_collection_reads_the_site_it_was_bound_to() -> None:
    app = App()
    tasks = app.register_controller(StoreCollection("todo/v1", "tasks", SCHEMA))
    assert tasks._bound_site is app is tasks.app
    assert tasks._store() is app.store
    assert tasks._collection_url() == app.rest_url("/todo/v1/tasks")
    app.store.close()
