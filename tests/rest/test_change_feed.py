"""The change feed of a ``StoreCollection`` (``GET /<ns>/<rest_base>/changes``), long-polling,
on both adapters and both store engines: opaque cursors, the feed starting at the log's end,
entries as the subscriber's GET shows the item, read permission per item, retention (an
injected clock), 410 past it, 400 for a malformed cursor, a change committed during a wait,
and nothing for a rolled-back atomic batch."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest

from svcrest.http.user import User
from svcrest.store.change_waker import ChangeWaker
from svcrest.store.changes import changes_after, decode_cursor, encode_cursor
from tests.conftest import SiteClient
from tests.rest.conftest import T0, Clock, cursor
from tests.rest.test_store_collection import BATCH, TASKS, ClientFor, Site, view

CHANGES = f"{TASKS}/changes"


def test_cursors_are_opaque_and_checked() -> None:
    assert encode_cursor(1, T0) == "MS4xMDAwMDAwMDAw"  # base64url of "1.1000000000"
    assert decode_cursor("MS4xMDAwMDAwMDAw") == (1, T0)
    assert decode_cursor(encode_cursor(42, 1.5)) == (42, 1.5)
    for bad in ("", "1", "zz!", "MS4x=", "YWJj", "MDEuMQ", "LTEuMQ", "MS4xLjE", "x" * 65):
        assert decode_cursor(bad) is None, bad


def test_the_feed_starts_at_the_logs_end(site: Site, client_for: ClientFor) -> None:
    site.seed("a", "b")
    client = client_for(site.app)
    start = client.get(CHANGES)
    assert start.status_code == 200
    assert start.json() == {"changes": [], "cursor": cursor(2)}


def test_changes_after_a_cursor_as_the_subscribers_get(
    site: Site, client_for: ClientFor, clock: Clock
) -> None:
    site.seed("a")
    client = client_for(site.app)
    since = client.get(CHANGES).json()["cursor"]
    headers = site.headers["ed"]
    client.post(TASKS, json={"title": "b"}, headers=headers)
    client.request("PATCH", f"{TASKS}/1", json={"done": True}, headers=headers)
    client.request("DELETE", f"{TASKS}/2", headers=headers)
    clock.now = T0 + 5
    answer = client.get(CHANGES, params={"since": since})
    assert answer.status_code == 200
    at = T0 + 5  # read to the end: cursors issued now
    assert answer.json() == {
        "changes": [
            # task 2 created, then deleted: its creation is left out
            {"id": cursor(3, at), "event": "updated", "data": view(1, "a", done=True)},
            {"id": cursor(4, at), "event": "deleted", "data": {"id": 2}},
        ],
        "cursor": cursor(4, at),
    }
    # the answer's cursor resumes after its last change
    again = client.get(CHANGES, params={"since": answer.json()["cursor"]})
    assert again.json() == {"changes": [], "cursor": cursor(4, at)}


def test_streaming_accept_types_get_the_long_poll_on_wsgi(site: Site) -> None:
    # On WSGI a stream would hold a server thread: every Accept gets the long-poll JSON.
    # (Under ASGI they get streams: tests/rest/test_change_streams.py.)
    client = SiteClient(site.app, "wsgi")
    since = cursor(0)
    site.seed("a")
    for accept in ("text/event-stream", "application/jsonl"):
        answer = client.get(CHANGES, params={"since": since}, headers={"Accept": accept})
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("application/json")
        assert answer.json() == {
            "changes": [{"id": cursor(1), "event": "created", "data": view(1, "a")}],
            "cursor": cursor(1),
        }


def test_each_event_only_when_the_subscriber_may_read_the_item_now(
    store_location: str | None, client_for: ClientFor, clock: Clock
) -> None:
    def read(user: User, item: Mapping[str, Any] | None) -> bool:
        return item is None or not item["title"].startswith("secret") or user.id == item["author"]

    site = Site(store_location, read=read, clock=clock)
    try:
        client = client_for(site.app)
        site.seed("open", "secret plan", login="al")
        site.tasks.table.delete(1)
        since = cursor(0)
        author = client.get(CHANGES, params={"since": since}, headers=site.headers["al"])
        assert author.json() == {
            "changes": [
                {"id": cursor(2), "event": "created", "data": view(2, "secret plan", 1, author=2)},
                {"id": cursor(3), "event": "deleted", "data": {"id": 1}},
            ],
            "cursor": cursor(3),
        }
        other = client.get(CHANGES, params={"since": since}, headers=site.headers["ann"])
        assert other.json() == {
            "changes": [{"id": cursor(3), "event": "deleted", "data": {"id": 1}}],
            "cursor": cursor(3),
        }
        # the permission as it is now: the item made public shows it to everyone
        site.tasks.table.update(2, {"title": "plan"})
        now = client.get(CHANGES, params={"since": cursor(3)})
        plan = view(2, "plan", 1, author=2)
        assert now.json() == {
            "changes": [{"id": cursor(4), "event": "updated", "data": plan}],
            "cursor": cursor(4),
        }
    finally:
        site.app.store.close()


def test_the_read_capability_guards_the_feed(
    store_location: str | None, client_for: ClientFor
) -> None:
    site = Site(store_location, read="edit_posts")
    try:
        client = client_for(site.app)
        anonymous = client.get(CHANGES)
        assert anonymous.status_code == 401
        assert anonymous.json()["code"] == "rest_forbidden"
        assert client.get(CHANGES, headers=site.headers["sue"]).status_code == 403
        assert client.get(CHANGES, headers=site.headers["al"]).status_code == 200
    finally:
        site.app.store.close()


def test_a_malformed_cursor_is_400(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    for bad in ("zz!", "12", "MS4x=", "YWJj"):
        answer = client.get(CHANGES, params={"since": bad})
        assert answer.status_code == 400
        assert answer.json() == {
            "code": "rest_invalid_param",
            "message": "Invalid parameter(s): since",
            "data": {"status": 400, "params": {"since": "Invalid cursor."}},
        }
    too_long = client.get(CHANGES, params={"wait": 31})
    assert too_long.status_code == 400
    assert too_long.json()["code"] == "rest_invalid_param"
    assert too_long.json()["data"]["params"] == {
        "wait": "wait must be between 0 (inclusive) and 30 (inclusive)"
    }


def test_retention_purges_and_an_old_cursor_is_410(
    site: Site, client_for: ClientFor, clock: Clock
) -> None:
    gone = {
        "code": "rest_changes_expired",
        "message": "The changes after this cursor are no longer kept: read the collection"
        " again and follow its changes from now on.",
        "data": {"status": 410},
    }
    client = client_for(site.app)
    site.seed("a")
    since = client.get(CHANGES).json()["cursor"]  # purges (nothing yet) at T0
    assert since == cursor(1)
    site.app.hooks.add_filter("svc_changes_retention", lambda seconds: 10)
    clock.now = T0 + 10
    assert client.get(CHANGES, params={"since": since}).json() == {
        "changes": [],
        "cursor": cursor(1, T0 + 10),
    }
    clock.now = T0 + 11
    expired = client.get(CHANGES, params={"since": since})
    assert expired.status_code == 410
    assert expired.json() == gone
    # not purged yet (at most once a minute): 410 all the same
    assert [change.seq for change in changes_after(site.app.store, "task")] == [1]
    clock.now = T0 + 60
    assert client.get(CHANGES, params={"since": since}).status_code == 410
    assert changes_after(site.app.store, "task") == []  # purged: older than 10 s
    # the default retention is a day
    site.app.hooks.remove_all_filters("svc_changes_retention")
    fresh = cursor(1, T0 + 60)
    clock.now = T0 + 60 + 86_400
    assert client.get(CHANGES, params={"since": fresh}).status_code == 200
    clock.now = T0 + 60 + 86_401
    assert client.get(CHANGES, params={"since": fresh}).json() == gone


def test_a_wait_answers_after_wait_seconds_without_changes(
    site: Site, client_for: ClientFor
) -> None:
    client = client_for(site.app)
    began = time.monotonic()
    answer = client.get(CHANGES, params={"since": cursor(0), "wait": 0.6})
    elapsed = time.monotonic() - began
    assert answer.json() == {"changes": [], "cursor": cursor(0)}
    assert 0.6 <= elapsed < 1.5


def test_a_change_committed_during_a_wait_answers_within_a_second(
    site: Site, client_for: ClientFor
) -> None:
    client = client_for(site.app)
    site.seed("a")
    since = client.get(CHANGES).json()["cursor"]

    def write() -> None:
        time.sleep(0.3)
        site.tasks.table.insert({"title": "b", "author": 1})

    writer = threading.Thread(target=write)
    began = time.monotonic()
    writer.start()
    try:
        answer = client.get(CHANGES, params={"since": since, "wait": 20})
    finally:
        writer.join()
    elapsed = time.monotonic() - began
    assert answer.json() == {
        "changes": [{"id": cursor(2), "event": "created", "data": view(2, "b")}],
        "cursor": cursor(2),
    }
    assert elapsed < 1.3  # 0.3 s before the commit, then under a second


def test_a_rolled_back_atomic_batch_records_no_change(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    headers = site.headers["ed"]
    site.seed("a")
    since = client.get(CHANGES).json()["cursor"]
    failed = client.post(
        BATCH,
        json={"validation": "atomic", "requests": [
            {"path": "/todo/v1/tasks", "body": {"title": "b"}},
            {"method": "PATCH", "path": "/todo/v1/tasks/1", "body": {"title": "a2"}},
            {"method": "DELETE", "path": "/todo/v1/tasks/1", "headers": {"If-Match": ['"1"']}},
        ]},
        headers=headers,
    )  # fmt: skip
    assert failed.json()["failed"] == "atomic"
    assert client.get(CHANGES, params={"since": since}).json() == {
        "changes": [],
        "cursor": since,
    }
    committed = client.post(
        BATCH,
        json={"validation": "atomic", "requests": [
            {"method": "PATCH", "path": "/todo/v1/tasks/1", "body": {"title": "a2"}},
        ]},
        headers=headers,
    )  # fmt: skip
    assert [slot["status"] for slot in committed.json()["responses"]] == [200]
    answer = client.get(CHANGES, params={"since": since}).json()
    assert [(entry["event"], entry["data"]["title"]) for entry in answer["changes"]] == [
        ("updated", "a2")
    ]
    assert decode_cursor(answer["cursor"]) is not None


def test_an_answer_holds_a_hundred_changes_at_most(
    site: Site, client_for: ClientFor, clock: Clock
) -> None:
    client = client_for(site.app)
    site.seed(*(f"t{n}" for n in range(100)))
    clock.now = T0 + 1
    site.seed("last")
    clock.now = T0 + 5
    first = client.get(CHANGES, params={"since": cursor(0)}).json()
    # more left to read: cursors issued at the time of the first change left (T0 + 1)
    assert len(first["changes"]) == 100
    assert first["changes"][0] == {
        "id": cursor(1, T0 + 1),
        "event": "created",
        "data": view(1, "t0"),
    }
    assert first["cursor"] == first["changes"][-1]["id"] == cursor(100, T0 + 1)
    rest = client.get(CHANGES, params={"since": first["cursor"]}).json()
    assert rest == {
        "changes": [{"id": cursor(101, T0 + 5), "event": "created", "data": view(101, "last", 0)}],
        "cursor": cursor(101, T0 + 5),
    }


def test_a_wait_reads_past_pages_of_changes_the_subscriber_may_not_see(
    store_location: str | None, client_for: ClientFor, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def never_woken(self: ChangeWaker, object_type: str, token: int, timeout: float) -> bool:
        await asyncio.sleep(timeout)
        return False

    # a wait between the pages would last the whole ``wait``
    monkeypatch.setattr(ChangeWaker, "wait", never_woken)

    def read(user: User, item: Mapping[str, Any] | None) -> bool:
        return item is None or not item["title"].startswith("secret") or user.id == item["author"]

    site = Site(store_location, read=read, clock=clock)
    try:
        client = client_for(site.app)
        site.seed(*(f"secret {n}" for n in range(250)), login="al")
        site.seed("open", login="al")
        began = time.monotonic()
        answer = client.get(
            CHANGES, params={"since": cursor(0), "wait": 10}, headers=site.headers["ann"]
        )
        assert time.monotonic() - began < 4.0  # no sleep between the pages
        assert answer.json() == {
            "changes": [
                {"id": cursor(251), "event": "created", "data": view(251, "open", author=2)}
            ],
            "cursor": cursor(251),
        }
    finally:
        site.app.store.close()
