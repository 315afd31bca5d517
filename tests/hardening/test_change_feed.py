"""Hostile input to a change feed (``GET /<ns>/<rest_base>/changes``), long-polling on both
adapters: cursors out of the log's range or forged, ``wait`` values that are not a number of
seconds, odd ``Accept`` lines, and ``context`` / ``_fields`` that must not show a subscriber
more than its view of an item. (Well-formed but malformed cursors, ``wait`` above 30 and an
expired cursor are in tests/rest/test_change_feed.py; streams in test_change_streams.py.)"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from tests.rest.conftest import T0, Clock, cursor
from tests.rest.test_change_streams import Stream
from tests.rest.test_store_collection import TASKS, ClientFor, Site

CHANGES = f"{TASKS}/changes"


def forged(text: str) -> str:
    """A cursor made by hand: base64url, unpadded, of ``text`` (``<seq>.<ms>``)."""
    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()


def invalid(name: str) -> dict[str, Any]:
    return {
        "code": "rest_invalid_param",
        "message": f"Invalid parameter(s): {name}",
        "data": {"status": 400, "params": {name: "Invalid cursor."}},
    }


@pytest.fixture
def site(store_location: str | None) -> Iterator[Site]:
    made = Site(store_location, clock=Clock())
    made.seed("a", "b")
    yield made
    made.app.store.close()


@pytest.mark.parametrize(
    "since",
    [
        forged("9223372036854775808.1000000000"),  # one past the log's largest position
        forged("9999999999999999999.1000000000"),
        forged("99999999999999999999.1000000000"),  # too many digits
        forged("1.99999999999999999"),  # a time of more digits than any cursor issued
        forged("-1.1000000000"),
        forged("1.-1000000000"),
        forged("1.1000000000\n"),
        forged("1 .1000000000"),
        "MS4xMDAwMDAwMDAw\x00",
        "MS4xMDAwMDAwMDAw ",
        "é",
    ],
    ids=[
        "seq-2**63",
        "seq-19-nines",
        "seq-20-digits",
        "time-17-digits",
        "seq-negative",
        "time-negative",
        "newline",
        "space",
        "nul-after",
        "space-after",
        "non-ascii",
    ],
)
def test_a_cursor_out_of_range_or_forged_is_400_invalid_cursor(
    site: Site, client_for: ClientFor, since: str
) -> None:
    answer = client_for(site.app).get(CHANGES, params={"since": since})
    assert answer.status_code == 400
    assert answer.json() == invalid("since")


def test_the_largest_position_is_a_cursor_past_the_logs_end(
    site: Site, client_for: ClientFor
) -> None:
    # A position no write has reached yet is the client's to keep: nothing after it yet.
    largest = forged(f"{2**63 - 1}.1000000000")
    answer = client_for(site.app).get(CHANGES, params={"since": largest})
    assert answer.status_code == 200
    assert answer.json() == {"changes": [], "cursor": largest}


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("since[]=x", "since"),
        ("since[a]=x", "since"),
        ("wait=nan", "wait"),
        ("wait=inf", "wait"),
        ("wait=-inf", "wait"),
        ("wait=-1", "wait"),
        ("wait=30.001", "wait"),
        ("wait=1e400", "wait"),
        ("wait=abc", "wait"),
        ("wait=0x10", "wait"),
        ("wait[]=1", "wait"),
        ("wait=", "wait"),
    ],
)
def test_bad_since_and_wait_values_are_400_invalid_param(
    site: Site, client_for: ClientFor, query: str, name: str
) -> None:
    answer = client_for(site.app).get(f"{CHANGES}?{query}")
    assert answer.status_code == 400
    body = answer.json()
    assert body["code"] == "rest_invalid_param"
    assert body["message"] == f"Invalid parameter(s): {name}"
    assert body["data"]["status"] == 400
    assert list(body["data"]["params"]) == [name]


@pytest.mark.parametrize(
    "accept",
    [
        "text/event-stream;q=0",
        "text/event-stream;q=abc",
        "text/event-stream;q=-1",
        "application/jsonl;q=0, application/json",
        "text/event-stream;q=nan, application/json;q=0.5",
        "," * 5000,
        "text/event-stream;" + "a=b;" * 2000 + "q=0",
    ],
    ids=["sse-q0", "q-abc", "q-negative", "jsonl-q0", "q-nan", "commas", "params"],
)
def test_an_accept_that_refuses_or_garbles_streams_gets_the_long_poll(
    site: Site, client_for: ClientFor, accept: str
) -> None:
    answer = client_for(site.app).get(
        CHANGES, params={"since": cursor(1)}, headers={"Accept": accept}
    )
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json; charset=UTF-8"
    assert [entry["id"] for entry in answer.json()["changes"]] == [cursor(2)]


@pytest.mark.parametrize(
    "query",
    [
        {"context": "edit"},
        {"context": "evil"},
        {"context[]": "edit"},
        {"_fields": "notes"},
        {"_fields": "notes,title", "context": "edit"},
        {"_fields[]": "notes"},
        {"_fields[a][b]": "notes"},
        {"_embed": "1"},
    ],
)
@pytest.mark.parametrize("who", ["sue", None])
def test_context_and_fields_never_show_more_than_the_view(
    site: Site, client_for: ClientFor, query: dict[str, str], who: str | None
) -> None:
    headers = site.headers[who] if who else {}
    answer = client_for(site.app).get(
        CHANGES, params={"since": cursor(0), **query}, headers=headers
    )
    assert answer.status_code == 200
    entries = answer.json()["changes"]
    assert [entry["id"] for entry in entries] == [cursor(1), cursor(2)]
    for entry in entries:
        assert "notes" not in entry["data"]  # an edit-context property


def test_a_last_event_id_does_not_steer_a_long_poll(site: Site, client_for: ClientFor) -> None:
    # A long-poll reads ``since`` alone: the header of a reconnecting EventSource is for
    # streams, so a garbled one is no error here.
    answer = client_for(site.app).get(
        CHANGES, params={"since": cursor(1)}, headers={"Last-Event-ID": "x" * 10_000}
    )
    assert answer.status_code == 200
    assert [entry["id"] for entry in answer.json()["changes"]] == [cursor(2)]


def test_a_cursor_of_another_time_still_reads_from_its_position(
    site: Site, client_for: ClientFor
) -> None:
    issued_later = cursor(1, T0 + 5)
    answer = client_for(site.app).get(CHANGES, params={"since": issued_later})
    assert answer.status_code == 200
    assert [entry["id"] for entry in answer.json()["changes"]] == [cursor(2)]


@pytest.mark.parametrize(
    ("headers", "query", "name"),
    [
        ({"Last-Event-ID": forged("9223372036854775808.1000000000")}, "", "Last-Event-ID"),
        ({}, "since=" + forged("9223372036854775808.1000000000"), "since"),
        ({"Last-Event-ID": "x" * 10_000}, "", "Last-Event-ID"),
    ],
    ids=["last-event-id-2**63", "since-2**63", "last-event-id-long"],
)
@pytest.mark.parametrize("accept", ["text/event-stream", "application/jsonl"])
def test_a_stream_from_a_forged_cursor_is_400_before_it_starts(
    site: Site, headers: dict[str, str], query: str, name: str, accept: str
) -> None:
    async def check() -> None:
        opened = Stream(site.app, CHANGES, {"Accept": accept, **headers}, query)
        await opened.start()
        assert opened.status == 400
        assert orjson.loads(await opened.body()) == invalid(name)

    asyncio.run(check())
