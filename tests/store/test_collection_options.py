"""``StoreCollection``'s options for collections shaped their own way, on both engines:
``steps`` (adopting a table made by hand), ``wordpress_dates``, ``version_tag``,
``prepare_links``, stored properties never shown (``context: []``), and permission checks
that see the route's raw id."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from svcrest import App, Request, Response, StoreCollection
from svcrest.auth.passwords import ScryptParams
from svcrest.http.user import User

HOME = "http://options.test"
ROOT = f"{HOME}/svc-json"
BOOKS = "/shelf/v1/books"
SCHEMA: dict[str, Any] = {
    "title": "book",
    "properties": {
        "title": {"type": "string", "required": True, "context": ["view", "edit"]},
        "read_at": {"type": "string", "format": "date-time", "context": ["view", "edit"]},
        "title_key": {"type": "string", "default": "", "context": [], "readonly": True},
    },
}


@pytest.fixture
def app(store_location: str | None) -> Iterator[App]:
    app = App(HOME, store=store_location)
    app.users.password_params = ScryptParams(n=16, r=1, p=1)
    yield app
    app.store.close()


@pytest.fixture
def editor(app: App) -> User:
    return app.users.create("ed", "pw", roles=("editor",))


def call(app: App, method: str, route: str, user: User | None = None, **kwargs: Any) -> Response:
    if "json" in kwargs:
        kwargs["headers"] = {"Content-Type": "application/json", **kwargs.get("headers", {})}
    request = Request(method, route, **kwargs)
    if user is not None:
        request.user = user
    return app.rest_do_request(request)


def test_wordpress_dates_answer_without_a_zone_and_still_filter_and_sort(
    app: App, editor: User
) -> None:
    app.register_controller(
        StoreCollection("shelf/v1", "books", SCHEMA, wordpress_dates=True, filterable=("read_at",))
    )
    sent = {"title": "A", "read_at": "2024-01-02T03:04:05+02:00"}
    created = call(app, "POST", BOOKS, editor, json=sent)
    assert created.status == 201, created.data
    assert created.data["read_at"] == "2024-01-02T01:04:05"
    assert call(app, "GET", f"{BOOKS}/1").data["read_at"] == "2024-01-02T01:04:05"
    found = call(
        app,
        "GET",
        BOOKS,
        query={"filter": '[{"property":"read_at","operator":">=","value":"2024-01-02T01:04:05"}]'},
    )
    assert [book["id"] for book in found.data] == [1]


def test_dates_end_in_z_by_default(app: App, editor: User) -> None:
    app.register_controller(StoreCollection("shelf/v1", "books", SCHEMA))
    sent = {"title": "A", "read_at": "2024-01-02T03:04:05+02:00"}
    assert call(app, "POST", BOOKS, editor, json=sent).data["read_at"] == "2024-01-02T01:04:05Z"


def test_a_property_without_context_is_stored_never_shown(app: App, editor: User) -> None:
    class Books(StoreCollection):
        def prepare_item_for_database(self, request: Request) -> Any:
            values = dict(super().prepare_item_for_database(request))
            if "title" in values:
                values["title_key"] = str(values["title"]).lower()
            if "id" not in request.url_params:
                values["shelf"] = 1
            return values

    shelf = {"type": "integer", "readonly": True, "required": True}
    schema = {**SCHEMA, "properties": {**SCHEMA["properties"], "shelf": shelf}}
    books = app.register_controller(Books("shelf/v1", "books", schema, sortable=("title_key",)))
    for title in ("b", "C", "a"):
        assert call(app, "POST", BOOKS, editor, json={"title": title}).status == 201
    listed = call(app, "GET", BOOKS, query={"orderby": "title_key"})
    assert [book["title"] for book in listed.data] == ["a", "b", "C"]
    assert all("title_key" not in book for book in listed.data)
    assert "title_key" not in call(app, "GET", f"{BOOKS}/2", query={"context": "edit"}).data
    assert books.table.get(2) is not None and books.table.get(2)["title_key"] == "c"  # type: ignore[index]
    schema = call(app, "OPTIONS", BOOKS).data["schema"]
    assert list(schema["properties"]) == ["id", "title", "read_at", "shelf"]
    # A readonly property's required keeps its column from null; no client sends it.
    assert schema["properties"]["shelf"] == {"type": "integer", "readonly": True}
    assert schema["properties"]["title"]["required"] is True


class _Tagged(StoreCollection):
    def version_tag(self, item_id: int, version: int) -> str:
        return f"b{item_id}v{version}"

    def prepare_links(self, item: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
        links = super().prepare_links(item)
        links["shelf"] = [{"href": f"{HOME}/shelf", "embeddable": True}]
        return links


def test_version_tag_names_the_etag_and_if_match(app: App, editor: User) -> None:
    app.register_controller(_Tagged("shelf/v1", "books", SCHEMA))
    created = call(app, "POST", BOOKS, editor, json={"title": "A"})
    assert created.headers["ETag"] == '"b1v1"'
    assert call(app, "GET", f"{BOOKS}/1").headers["ETag"] == '"b1v1"'
    stale = call(
        app, "PATCH", f"{BOOKS}/1", editor, json={"title": "B"}, headers={"If-Match": '"b1v0"'}
    )
    assert (stale.status, stale.data["code"]) == (412, "rest_precondition_failed")
    changed = call(
        app, "PATCH", f"{BOOKS}/1", editor, json={"title": "B"}, headers={"If-Match": '"b1v1"'}
    )
    assert (changed.status, changed.headers["ETag"]) == (200, '"b1v2"')


def test_prepare_links_adds_links_to_items_and_lists(app: App, editor: User) -> None:
    app.register_controller(_Tagged("shelf/v1", "books", SCHEMA))
    call(app, "POST", BOOKS, editor, json={"title": "A"})
    expected = {
        "self": [{"href": f"{ROOT}{BOOKS}/1"}],
        "collection": [{"href": f"{ROOT}{BOOKS}"}],
        "shelf": [{"href": f"{HOME}/shelf", "embeddable": True}],
    }
    assert call(app, "GET", f"{BOOKS}/1").links == expected
    assert call(app, "GET", BOOKS).data[0]["_links"] == expected
    # A registered field takes the general path: the links are the same.
    app.register_rest_field("book", "shelved", get_callback=lambda *_: True)
    assert call(app, "GET", f"{BOOKS}/1").links == expected
    assert call(app, "GET", BOOKS).data[0]["_links"] == expected


@pytest.mark.parametrize(("raw", "allowed"), [("0003", True), ("9" * 4301, False), ("3x", False)])
def test_permission_checks_read_the_raw_id(app: App, editor: User, raw: str, allowed: bool) -> None:
    books = app.register_controller(StoreCollection("shelf/v1", "books", SCHEMA))
    for title in ("a", "b", "c"):
        call(app, "POST", BOOKS, editor, json={"title": title})
    request = Request("PUT", f"{BOOKS}/{raw}")
    request.url_params = {"id": raw}
    request.user = editor
    outcome = books.update_item_permissions_check(request)
    if allowed:
        assert outcome is True
    else:
        assert not isinstance(outcome, bool)
        assert (outcome.code, outcome.data) == ("rest_book_invalid_id", {"status": 404})


def test_steps_adopt_a_table_made_by_hand(app: App, editor: User) -> None:
    app.store.migrate(
        "old_books",
        [
            "CREATE TABLE old_books (id INTEGER PRIMARY KEY, title TEXT NOT NULL,"
            " rev INTEGER NOT NULL DEFAULT 1)"
        ],
    )
    with app.store.transaction() as conn:
        conn.execute("INSERT INTO old_books (id, title, rev) VALUES (7, 'Kept', 4)")
    steps = (
        "CREATE TABLE IF NOT EXISTS old_books (id INTEGER PRIMARY KEY, title TEXT NOT NULL,"
        " rev INTEGER NOT NULL DEFAULT 1)",
        "ALTER TABLE old_books RENAME COLUMN rev TO version",
    )
    schema = {"title": "book", "properties": {"title": {"type": "string", "required": True}}}
    app.register_controller(
        StoreCollection("shelf/v1", "books", schema, table="old_books", steps=steps)
    )
    kept = call(app, "GET", f"{BOOKS}/7")
    assert (kept.status, kept.data["title"], kept.headers["ETag"]) == (200, "Kept", '"4"')
    assert app.store.migrate("old_books", steps) == 2


def test_the_table_reads_an_items_version_alone(app: App, editor: User) -> None:
    books = app.register_controller(StoreCollection("shelf/v1", "books", SCHEMA))
    call(app, "POST", BOOKS, editor, json={"title": "A"})
    assert books.table.version(1) == 1
    call(app, "PATCH", f"{BOOKS}/1", editor, json={"title": "B"})
    assert books.table.version(1) == 2
    assert [books.table.version(other) for other in (2, 0, 2**63)] == [None, None, None]
