"""Hostile input to a ``StoreCollection`` on both adapters: ids out of range, ``per_page`` /
``page`` / ``offset`` / ``orderby`` / ``search`` / ``include`` values of the wrong type or
size, Ext JS's ``sort`` / ``filter`` in odd shapes, tampered cursors, and writes that name
read-only properties or hold values the store cannot keep. Each gets WordPress's status and
code; nothing is written by a refused request. (The collection's own behaviour is in
tests/rest/test_store_collection.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.rest.test_store_collection import TASKS, ClientFor, Site, link_cursor

INVALID_ID = (404, "rest_task_invalid_id")
NO_ROUTE = (404, "rest_no_route")


def stored(site: Site) -> list[str]:
    """The titles of the tasks in the store, by id."""
    rows = site.tasks.table.get_many(range(1, 10))
    return [rows[task_id]["title"] for task_id in sorted(rows)]


def invalid(name: str) -> tuple[int, str, str]:
    return 400, "rest_invalid_param", f"Invalid parameter(s): {name}"


@pytest.fixture
def site(store_location: str | None) -> Iterator[Site]:
    made = Site(store_location, cursor=True)
    made.seed("a", "b", "c")
    yield made
    made.app.store.close()


@pytest.fixture
def sqlite_site() -> Iterator[Site]:
    made = Site(None, cursor=True)
    made.seed("a", "b", "c")
    yield made
    made.app.store.close()


@pytest.mark.parametrize(
    ("method", "item", "expected"),
    [
        ("GET", "0", INVALID_ID),
        ("GET", "9223372036854775807", INVALID_ID),
        ("GET", "9223372036854775808", INVALID_ID),
        ("GET", "99999999999999999999999", INVALID_ID),
        # more digits than make a number (PHP's is_numeric reads it as INF): not an integer
        ("GET", "9" * 5000, (400, "rest_invalid_param")),
        ("GET", "-1", NO_ROUTE),
        ("GET", "1.0", NO_ROUTE),
        ("GET", "%31", (200, "")),  # "1" escaped is task 1 itself
        ("PUT", "99999999999999999999999", INVALID_ID),
        ("PATCH", "9223372036854775808", INVALID_ID),
        ("DELETE", "99999999999999999999999", INVALID_ID),
    ],
    ids=[
        "zero",
        "int64-max",
        "int64-max+1",
        "23-digits",
        "5000-digits",
        "negative",
        "decimal",
        "escaped",
        "put",
        "patch",
        "delete",
    ],
)
def test_ids_out_of_range_are_4xx_on_every_engine(
    site: Site, client_for: ClientFor, method: str, item: str, expected: tuple[int, str]
) -> None:
    kwargs: dict[str, Any] = {"headers": site.headers["ed"]}
    if method in ("PUT", "PATCH"):
        kwargs["json"] = {"title": "x"}
    if method == "DELETE":
        kwargs["params"] = {"force": "true"}
    response = client_for(site.app).request(method, f"{TASKS}/{item}", **kwargs)
    assert response.status_code == expected[0]
    if expected[0] != 200:
        assert response.json()["code"] == expected[1]
        assert response.json()["data"]["status"] == expected[0]
    assert stored(site) == ["a", "b", "c"]


QUERIES = [
    ("per_page=0", invalid("per_page")),
    ("per_page=101", invalid("per_page")),
    ("per_page=abc", invalid("per_page")),
    ("per_page=1e400", invalid("per_page")),
    ("per_page=99999999999999999999999", invalid("per_page")),
    ("per_page[]=1", invalid("per_page")),
    ("page=0", invalid("page")),
    ("page=-1", invalid("page")),
    ("page=99999999999999999999999", invalid("page")),
    ("page=9223372036854775807", invalid("page")),
    (
        "page=100000000",
        (
            400,
            "rest_invalid_page_number",
            "The page number requested is larger than the number of pages available.",
        ),
    ),
    ("offset=-1", invalid("offset")),
    ("offset=99999999999999999999999", invalid("offset")),
    ("start=-5", invalid("start")),
    ("limit=-1", invalid("limit")),
    ("limit=99999999999999999999999", invalid("limit")),
    ("orderby=notes", invalid("orderby")),
    ("orderby=title;DROP TABLE tasks", invalid("orderby")),
    ("orderby=title%20desc", invalid("orderby")),
    ("orderby[]=title", invalid("orderby")),
    ("order=sideways", invalid("order")),
    ("order[]=asc", invalid("order")),
    ("search=%00", invalid("search")),
    ("search[]=a", invalid("search")),
    ("search[a][b]=a", invalid("search")),
    ("include=99999999999999999999999", invalid("include")),
    ("include[]=abc", invalid("include")),
    ("exclude=-1", invalid("exclude")),
    ("context=evil", invalid("context")),
    ("sort=notjson", invalid("sort")),
    ('sort=[{"property":"title","direction":"UP"}]', invalid("sort")),
    ('sort={"a":1}', invalid("sort")),
    ("sort=[1,2]", invalid("sort")),
    ('sort=[{"property":["x"]}]', invalid("sort")),
    ('sort=[{"property":"notes"}]', invalid("sort")),
    ('filter=[{"property":"priority","value":"abc"}]', invalid("filter")),
    ('filter=[{"property":"priority","value":99999999999999999999999}]', invalid("filter")),
    ('filter=[{"property":"priority","value":1e400}]', invalid("filter")),
    ('filter=[{"property":"priority","value":1,"operator":"evil"}]', invalid("filter")),
    ('filter=[{"property":"title","value":{"a":1}}]', invalid("filter")),
    ('filter=[{"property":"done","value":"maybe"}]', invalid("filter")),
    ('filter=[{"property":"notes","value":"x"}]', invalid("filter")),
    ("filter[0][property]=priority&filter[0][value]=x", invalid("filter")),
    ("cursor=garbage", invalid("cursor")),
    ("cursor=%00%ff", invalid("cursor")),
    ("cursor=eyJ4IjoxfQ", invalid("cursor")),
    ("cursor=" + "A" * 5000, invalid("cursor")),
    ("cursor[]=x", invalid("cursor")),
]


@pytest.mark.parametrize(("query", "expected"), QUERIES, ids=[query for query, _ in QUERIES])
def test_hostile_collection_params_are_400(
    sqlite_site: Site, client_for: ClientFor, query: str, expected: tuple[int, str, str]
) -> None:
    response = client_for(sqlite_site.app).get(
        f"{TASKS}?{query}", headers=sqlite_site.headers["ed"]
    )
    body = response.json()
    assert (response.status_code, body["code"], body["message"]) == expected
    assert body["data"]["status"] == expected[0]


@pytest.mark.parametrize(
    ("query", "titles"),
    [
        ("search=%25", []),
        ("search=_", []),
        ("search=%5C", []),
        ("search='", []),
        ("search=a'--", []),
        ("search=" + "a" * 5000, []),
        ('filter=[{"property":"title","value":"%","operator":"like"}]', []),
        ('filter=[{"property":"title","value":"a","operator":"like"}]', ["a"]),
        ("cursor=", ["a", "b", "c"]),
        ("_fields[]=title&_fields[x]=y", ["a", "b", "c"]),
    ],
    ids=[
        "percent",
        "underscore",
        "backslash",
        "quote",
        "sql-comment",
        "long",
        "like-percent",
        "like",
        "empty-cursor",
        "fields-shapes",
    ],
)
def test_wildcards_and_quotes_are_matched_as_text(
    sqlite_site: Site, client_for: ClientFor, query: str, titles: list[str]
) -> None:
    response = client_for(sqlite_site.app).get(
        f"{TASKS}?{query}", headers=sqlite_site.headers["ed"]
    )
    assert response.status_code == 200
    assert [item.get("title") for item in response.json()] == titles


def test_a_tampered_or_foreign_cursor_is_400(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    first = client.get(TASKS, params={"per_page": 1, "orderby": "title"})
    cursor = link_cursor(first)
    assert client.get(TASKS, params={"cursor": cursor, "orderby": "title"}).status_code == 200
    text, _, mac = cursor.partition(".")
    other_mac = text + "." + ("B" if mac[0] == "A" else "A") + mac[1:]
    other_text = ("B" if text[0] == "A" else "A") + text[1:] + "." + mac
    for tampered in (other_mac, other_text, cursor + "A", "." + cursor, text + ".." + mac):
        answer = client.get(TASKS, params={"cursor": tampered, "orderby": "title"})
        assert answer.status_code == 400
        assert answer.json()["data"]["params"] == {"cursor": "Invalid cursor."}
    other_order = client.get(TASKS, params={"cursor": cursor, "orderby": "priority"})
    assert other_order.status_code == 400
    assert other_order.json()["data"]["params"] == {
        "cursor": "The cursor was made for another sort order."
    }


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"title": "x", "priority": 1e308}, invalid("priority")),
        ({"title": "x", "priority": 1e20}, invalid("priority")),
        ({"title": "x", "priority": "99999999999999999999999"}, invalid("priority")),
        ({"title": "x\u0000y"}, invalid("title")),
        ({"title": ["x"]}, invalid("title")),
        ({"title": {"a": 1}}, invalid("title")),
        ({"title": ""}, invalid("title")),
        ({"title": "x", "done": "maybe"}, invalid("done")),
        ([1, 2], (400, "rest_missing_callback_param", "Missing parameter(s): title")),
        ("title", (400, "rest_missing_callback_param", "Missing parameter(s): title")),
    ],
    ids=[
        "priority-1e308",
        "priority-1e20",
        "priority-string-past-64-bits",
        "nul",
        "title-list",
        "title-object",
        "title-empty",
        "done-maybe",
        "body-list",
        "body-string",
    ],
)
def test_hostile_writes_are_400_and_write_nothing(
    sqlite_site: Site, client_for: ClientFor, body: Any, expected: tuple[int, str, str]
) -> None:
    client = client_for(sqlite_site.app)
    created = client.post(TASKS, json=body, headers=sqlite_site.headers["ed"])
    answer = created.json()
    assert (created.status_code, answer["code"], answer["message"]) == expected
    updated = client.request("PUT", f"{TASKS}/1", json=body, headers=sqlite_site.headers["ed"])
    if (isinstance(body, dict) and "title" in body) or "priority" in str(body):
        assert updated.status_code == 400
    assert stored(sqlite_site) == ["a", "b", "c"]


@pytest.mark.parametrize(
    "body",
    [
        b'{"title":"x","priority":99999999999999999999999}',
        b'{"title":"x","priority":-9223372036854775809e0',
        b'{"title":"\\ud800"}',
        b'{"title":"x"}{"title":"y"}',
        b'{"title":"x",}',
    ],
    ids=["integer-past-64-bits", "truncated", "lone-surrogate", "two-values", "trailing-comma"],
)
def test_malformed_json_writes_are_400_invalid_json(
    sqlite_site: Site, client_for: ClientFor, body: bytes
) -> None:
    response = client_for(sqlite_site.app).post(
        TASKS,
        content=body,
        headers={"Content-Type": "application/json", **sqlite_site.headers["ed"]},
    )
    assert response.status_code == 400
    assert response.json()["code"] == "rest_invalid_json"
    assert stored(sqlite_site) == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("body", "key", "kept"),
    [
        ({"title": "x", "id": 77}, "id", 4),
        ({"title": "x", "version": 99}, "version", 1),
        ({"title": "x", "author": 2}, "author", 1),
    ],
)
def test_read_only_properties_sent_are_not_written(
    sqlite_site: Site, client_for: ClientFor, body: dict[str, Any], key: str, kept: int
) -> None:
    created = client_for(sqlite_site.app).post(TASKS, json=body, headers=sqlite_site.headers["ed"])
    assert created.status_code == 201
    row = sqlite_site.tasks.table.get(4)
    assert row is not None
    assert row[key] == kept
