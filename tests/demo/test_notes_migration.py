"""A site whose store has the hand-written notes' table keeps its notes: the collection adopts
``demo_notes`` (its revision becomes the version, its dates the collection's), on both
engines."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from svcrest import App, Request
from svcrest.auth.passwords import ScryptParams
from svcrest.demo import register
from svcrest.demo.notes import NOTES_STEPS

HOME = "http://notes.test"
NOTES = "/demo/v1/notes"
OLD_ROWS = [
    ("banana", "Old one", 1, "2024-01-03 11:00:00", "2024-01-03 10:00:00", 3),
    ("Apple", "Old two", 1, "2024-01-01 11:00:00", "2024-01-01 10:00:00", 1),
]


@pytest.fixture
def old_site(store_location: str | None) -> Iterator[App]:
    """A site whose store the hand-written notes (schema steps 1 and 2) wrote to."""
    app = App(HOME, timezone="+01:00", clock=lambda: 1_700_000_000, store=store_location)
    app.users.password_params = ScryptParams(n=16, r=1, p=1)
    app.users.create("ed", "pw", roles=("editor",))
    assert app.store.migrate("demo_notes", NOTES_STEPS[:2]) == 2
    with app.store.transaction() as conn:
        for row in OLD_ROWS:
            conn.execute(
                "INSERT INTO demo_notes (title, content, author, date, date_gmt, revision)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                row,
            )
    register(app)
    yield app
    app.store.close()


def test_old_notes_are_kept_with_their_dates_and_revisions(old_site: App) -> None:
    one = old_site.rest_do_request(Request("GET", f"{NOTES}/1"))
    assert one.status == 200
    assert one.data == {
        "id": 1,
        "title": "banana",
        "content": "Old one",
        "author": 1,
        "date": "2024-01-03T11:00:00",
        "date_gmt": "2024-01-03T10:00:00",
    }
    assert one.headers["ETag"] == '"1-3"'
    listed = old_site.rest_do_request(Request("GET", NOTES))
    assert [note["id"] for note in listed.data] == [1, 2]  # newest first
    by_title = old_site.rest_do_request(Request("GET", NOTES, query={"sort": "title"}))
    assert [note["title"] for note in by_title.data] == ["Apple", "banana"]
    assert old_site.store.migrate("demo_notes", NOTES_STEPS) == 3


def test_new_notes_follow_the_old_ones(old_site: App) -> None:
    request = Request("POST", NOTES, json={"title": "New"})
    request.user = old_site.users.get_by_login("ed")  # type: ignore[assignment]
    created = old_site.rest_do_request(request)
    assert created.status == 201, created.data
    assert (created.data["id"], created.data["date_gmt"]) == (3, "2023-11-14T22:13:20")
    edited = Request("PATCH", f"{NOTES}/1", json={"content": "Changed"})
    edited.user = request.user
    assert old_site.rest_do_request(edited).headers["ETag"] == '"1-4"'
