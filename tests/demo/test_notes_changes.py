"""The demo notes' change feed: ``GET /demo/v1/notes/changes`` (public, as the notes' reads),
fed by every create, update and delete in its own transaction: nothing for a write that is
rolled back (an atomic batch that fails) or an update that sends no field."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from svcrest import App, Response
from svcrest.http.user import User
from svcrest.store.changes import decode_cursor
from tests.demo.test_notes import NOTES, call, links, make_app

CHANGES = NOTES + "/changes"


@pytest.fixture
def app(store_location: str | None) -> Iterator[App]:
    """The demo site on each engine."""
    app = make_app(store=store_location)
    yield app
    app.store.close()


@pytest.fixture
def editor(app: App) -> User:
    return app.users.create("ed", "pw", roles=("editor",))


def feed(app: App, since: str | None = None) -> Response:
    query: dict[str, Any] = {} if since is None else {"since": since}
    response = call(app, "GET", CHANGES, query=query)
    assert response.status == 200, response.data
    return response


def events(response: Response) -> list[tuple[str, Any]]:
    return [(entry["event"], entry["data"]) for entry in response.data["changes"]]


def test_the_feed_is_public_and_starts_at_the_log_end(app: App, editor: User) -> None:
    assert call(app, "POST", NOTES, editor, json={"title": "Old"}).status == 201
    response = feed(app)  # anonymous
    assert response.data["changes"] == []
    assert decode_cursor(response.data["cursor"]) is not None


def test_creations_updates_and_deletions_are_followed_in_order(app: App, editor: User) -> None:
    start = feed(app).data["cursor"]
    created = call(
        app, "POST", NOTES, editor, json={"title": "One", "date": "2024-01-01T10:00:00Z"}
    )
    assert created.status == 201
    note_id = created.data["id"]
    other = call(app, "POST", NOTES, editor, json={"title": "Two"}).data["id"]
    assert call(app, "PATCH", f"{NOTES}/{note_id}", editor, json={"title": "One!"}).status == 200
    assert call(app, "DELETE", f"{NOTES}/{other}", editor).status == 200

    response = feed(app, start)
    shown = {
        "id": note_id,
        "title": "One!",
        "content": "",
        "author": editor.id,
        "date": "2024-01-01T10:00:00",
        "date_gmt": "2024-01-01T10:00:00",
        "_links": links(note_id, editor.id),
    }
    # Two's creation is left out: Two was deleted before the feed showed it.
    assert events(response) == [
        ("created", shown),
        ("updated", shown),
        ("deleted", {"id": other}),
    ]
    assert response.data["cursor"] == response.data["changes"][-1]["id"]
    assert feed(app, response.data["cursor"]).data["changes"] == []


def test_an_update_without_fields_records_nothing(app: App, editor: User) -> None:
    note_id = call(app, "POST", NOTES, editor, json={"title": "Same"}).data["id"]
    start = feed(app).data["cursor"]
    assert call(app, "PUT", f"{NOTES}/{note_id}", editor, json={}).status == 200
    assert feed(app, start).data["changes"] == []


def test_a_failed_atomic_batch_records_nothing(app: App, editor: User) -> None:
    kept = call(app, "POST", NOTES, editor, json={"title": "Kept"}).data["id"]
    start = feed(app).data["cursor"]
    body = {
        "validation": "atomic",
        "requests": [
            {"method": "POST", "path": NOTES, "body": {"title": "A"}},
            {"method": "PATCH", "path": f"{NOTES}/{kept}", "body": {"title": "Changed"}},
            {"method": "DELETE", "path": f"{NOTES}/99"},
        ],
    }
    response = call(app, "POST", "/batch/v1", editor, json=body)
    assert response.status == 207
    assert response.data["failed"] == "atomic"
    assert feed(app, start).data["changes"] == []
    # The same batch without the failing request commits, and each of its writes is followed.
    body["requests"] = body["requests"][:2]
    assert call(app, "POST", "/batch/v1", editor, json=body).status == 207
    assert [event for event, _ in events(feed(app, start))] == ["created", "updated"]
