"""``app.changes.record(object_type, id, event)`` and the change feed of a plain
``RestController`` with ``changes = True``, on both store engines (and, over HTTP, both
adapters): a rolled-back transaction records nothing, a bad event is a ValueError, and a
controller over a dict is followed by long-polling with ``since``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, cast

import pytest

from svcrest import App, RestController
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.store.changes import Change, changes_after, encode_cursor
from tests.rest.conftest import T0, Clock
from tests.rest.test_store_collection import ClientFor

BOOKS = "/svc-json/shelf/v1/books"
CHANGES = f"{BOOKS}/changes"


class Books(RestController):
    """Books kept in a dict; book titles starting with "secret" are nobody's to read."""

    namespace = "shelf/v1"
    rest_base = "books"
    changes = True
    schema: ClassVar[Mapping[str, Any]] = {
        "title": "book",
        "type": "object",
        "properties": {
            "id": {"type": "integer", "readonly": True, "context": ["view", "edit"]},
            "title": {"type": "string", "context": ["view", "edit"]},
        },
    }

    def __init__(self) -> None:
        super().__init__()
        self.books: dict[int, str] = {}

    def _changes(self) -> Any:
        return cast(App, self.app).changes

    def add(self, title: str) -> int:
        book_id = len(self.books) + 1
        self.books[book_id] = title
        self._changes().record("book", book_id, "created")
        return book_id

    def rename(self, book_id: int, title: str) -> None:
        self.books[book_id] = title
        self._changes().record("book", book_id, "updated")

    def remove(self, book_id: int) -> None:
        del self.books[book_id]
        self._changes().record("book", book_id, "deleted")

    def get_items_permissions_check(self, request: Request) -> bool:
        return True

    def get_item_permissions_check(self, request: Request) -> bool:
        return not self.books.get(request["id"], "").startswith("secret")

    def get_item(self, request: Request) -> Response | RestError:
        title = self.books.get(request["id"])
        if title is None:
            return RestError("rest_book_invalid_id", "Invalid book ID.", {"status": 404})
        return Response({"id": request["id"], "title": title})


@pytest.fixture
def app(store_location: str | None, clock: Clock) -> Iterator[App]:
    made = App(secret_key="k" * 32, store=store_location, clock=clock)
    yield made
    made.store.close()


def test_a_rolled_back_transaction_records_nothing(app: App) -> None:
    with pytest.raises(RuntimeError), app.store.transaction():
        app.changes.record("book", 7, "created")  # first use: the log is made in the block
        raise RuntimeError("the write fails")
    first = app.changes.record("book", 1, "created")
    with pytest.raises(RuntimeError), app.store.transaction():
        app.changes.record("book", 1, "updated")
        assert [change.event for change in changes_after(app.store, "book")] == [
            "created",
            "updated",
        ]
        raise RuntimeError("the write fails")
    with app.store.transaction():
        kept = app.changes.record("book", 2, "deleted")
    assert changes_after(app.store, "book") == [
        Change(first, "book", 1, "created", T0),
        Change(kept, "book", 2, "deleted", T0),
    ]
    assert kept > first


def test_a_bad_event_is_a_value_error(app: App) -> None:
    with pytest.raises(
        ValueError, match=r"^event must be one of created, updated, deleted, not 'renamed'$"
    ):
        app.changes.record("book", 1, "renamed")
    with pytest.raises(ValueError, match=r"^object_type must be a non-empty string, not ''$"):
        app.changes.record("", 1, "created")
    with pytest.raises(ValueError, match=r"^id must be a non-negative integer, not -1$"):
        app.changes.record("book", -1, "created")
    assert changes_after(app.changes.store, "book") == []


def test_a_controller_over_a_dict_is_followed_with_since(
    app: App, client_for: ClientFor, clock: Clock
) -> None:
    books = app.register_controller(Books())
    client = client_for(app)
    start = client.get(CHANGES)
    assert start.status_code == 200
    assert start.json() == {"changes": [], "cursor": encode_cursor(0, T0)}
    books.add("Dune")
    books.add("secret diary")
    books.rename(1, "Dune Messiah")
    books.remove(2)
    clock.now = T0 + 5
    answer = client.get(CHANGES, params={"since": start.json()["cursor"]})
    assert answer.status_code == 200
    at = T0 + 5  # read to the log's end: cursors issued now
    dune = {"id": 1, "title": "Dune Messiah"}  # rendered when sent
    assert answer.json() == {
        "changes": [
            {"id": encode_cursor(1, at), "event": "created", "data": dune},
            # book 2's creation: its get_item_permissions_check refuses it
            {"id": encode_cursor(3, at), "event": "updated", "data": dune},
            {"id": encode_cursor(4, at), "event": "deleted", "data": {"id": 2}},
        ],
        "cursor": encode_cursor(4, at),
    }
    again = client.get(CHANGES, params={"since": answer.json()["cursor"], "wait": 0})
    assert again.json() == {"changes": [], "cursor": encode_cursor(4, at)}


def test_without_changes_there_is_no_feed(app: App, client_for: ClientFor) -> None:
    class Quiet(Books):
        changes = False

    app.register_controller(Quiet())
    answer = client_for(app).get(CHANGES)
    assert answer.status_code == 404
    assert answer.json()["code"] == "rest_no_route"


def test_a_feed_needs_what_it_renders_with(app: App) -> None:
    class Untitled(Books):
        schema: ClassVar[Mapping[str, Any]] = {"type": "object", "properties": {}}

    class Blind(RestController):
        namespace = "shelf/v1"
        rest_base = "blind"
        changes = True
        schema: ClassVar[Mapping[str, Any]] = {
            "title": "blind",
            "type": "object",
            "properties": {},
        }

        def get_items_permissions_check(self, request: Request) -> bool:
            return True

    with pytest.raises(TypeError, match=r"^Untitled's change feed needs a schema with a title$"):
        app.register_controller(Untitled())
    with pytest.raises(TypeError, match=r"^Blind's change feed needs get_item_permissions_check$"):
        app.register_controller(Blind())
