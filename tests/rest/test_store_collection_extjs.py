"""The requests an Ext JS 8 store with a Rest proxy sends to a ``StoreCollection``, exactly as
``docs/guides/extjs.md`` configures it (``_dc``, ``page`` / ``start`` / ``limit``, ``sort`` and
``filter`` as JSON text without spaces, the JSON writer's bodies, ``_envelope``, the CORS
preflight), and the answers that page describes, on both adapters and both store engines."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

import pytest

from svcrest import App, StoreCollection
from tests.conftest import SiteClient

HOME = "http://127.0.0.1:8000"
TASKS = "/svc-json/todo/v1/tasks"
SCHEMA: dict[str, Any] = {
    "title": "task",
    "type": "object",
    "properties": {
        "title": {"type": "string", "required": True, "context": ["view", "edit"]},
        "due": {
            "type": "string",
            "format": "date-time",
            "required": True,
            "context": ["view", "edit"],
        },
        "done": {"type": "boolean", "default": False, "context": ["view", "edit"]},
    },
}
RECORDS = [
    {"title": "Buy milk", "due": "2026-11-28T10:30:00+01:00", "done": False},
    {"title": "Walk the dog", "due": "2026-11-29T08:00:00Z", "done": False},
    {"title": "Call mum", "due": "2026-11-27T18:00:00+00:00", "done": True},
]
MILK = {"id": 1, "title": "Buy milk", "due": "2026-11-28T09:30:00Z", "done": False}
DOG = {"id": 2, "title": "Walk the dog", "due": "2026-11-29T08:00:00Z", "done": False}
MUM = {"id": 3, "title": "Call mum", "due": "2026-11-27T18:00:00Z", "done": True}


def ext_json(value: object) -> str:
    """JSON as ``Ext.encode`` writes it: no spaces."""
    return json.dumps(value, separators=(",", ":"))


def fields(item: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in item.items() if key != "_links"}


def anyone(user: Any, item: Any) -> bool:
    return True


@pytest.fixture(params=[False, True], ids=["svcrest", "wordpress-compat"])
def compat(request: pytest.FixtureRequest) -> bool:
    """Whether the site runs with ``wordpress_compat``."""
    return bool(request.param)


@pytest.fixture
def http(
    compat: bool, store_location: str | None, client_for: Callable[..., SiteClient]
) -> Iterator[SiteClient]:
    app = App(HOME, store=store_location, wordpress_compat=compat)
    app.register_controller(
        StoreCollection(
            "todo/v1",
            "tasks",
            SCHEMA,
            write=anyone,
            sortable=("title", "due"),
            filterable=("title", "done"),
            searchable=("title",),
        )
    )
    client = client_for(app)
    for record in RECORDS:
        assert client.post(f"{TASKS}?_dc=1700000000000", json=record).status_code == 201
    yield client
    app.store.close()


LOAD = {
    "_dc": "1700000000000",
    "page": "1",
    "start": "0",
    "limit": "1",
    "sort": ext_json([{"property": "title", "direction": "ASC"}]),
    "filter": ext_json([{"operator": "=", "value": False, "property": "done"}]),
}


def test_a_store_load_is_a_page_with_the_total_and_links(http: SiteClient, compat: bool) -> None:
    first = http.get(f"{TASKS}?{urlencode(LOAD)}")
    assert (first.status_code, [fields(task) for task in first.json()]) == (200, [MILK])
    assert (first.headers["X-SVC-Total"], first.headers["X-SVC-TotalPages"]) == ("2", "2")
    assert first.headers.get("X-WP-Total") == ("2" if compat else None)
    following = {**LOAD, "page": "2", "start": "1"}
    assert f'<{HOME}{TASKS}?{urlencode(following)}>; rel="next"' in first.headers["Link"]
    second = http.get(f"{TASKS}?{urlencode(following)}")
    assert [fields(task) for task in second.json()] == [DOG]
    assert f'<{HOME}{TASKS}?{urlencode(LOAD)}>; rel="prev"' in second.headers["Link"]
    assert 'rel="next"' not in second.headers["Link"]


def test_sort_and_filter_as_json_text_and_as_php_brackets(http: SiteClient) -> None:
    like = http.get(TASKS, params={"filter": ext_json([{"property": "title", "value": "MUM"}])})
    assert [fields(task) for task in like.json()] == [MUM]
    brackets = http.get(
        f"{TASKS}?sort[0][property]=due&sort[0][direction]=DESC"
        "&filter[0][property]=done&filter[0][value]=false"
    )
    assert [task["id"] for task in brackets.json()] == [2, 1]
    assert brackets.headers["X-SVC-Total"] == "2"
    refused = http.get(TASKS, params={"sort": ext_json([{"property": "notes"}])})
    assert (refused.status_code, refused.json()["code"]) == (400, "rest_invalid_param")


def test_the_envelope_carries_status_and_headers_in_the_body(http: SiteClient) -> None:
    wrapped = http.get(f"{TASKS}?{urlencode({**LOAD, '_envelope': '1'})}")
    envelope = wrapped.json()
    assert (wrapped.status_code, sorted(envelope)) == (200, ["body", "headers", "status"])
    assert (envelope["status"], [fields(task) for task in envelope["body"]]) == (200, [MILK])
    headers = envelope["headers"]
    assert (headers["X-SVC-Total"], headers["X-SVC-TotalPages"]) == ("2", "2")
    failed = http.request("PUT", f"{TASKS}/1?_dc=1&_envelope=1", json={"id": 1, "done": "maybe"})
    assert failed.status_code == 200
    assert (failed.json()["status"], failed.json()["body"]["code"]) == (400, "rest_invalid_param")
    created = http.post(f"{TASKS}?_envelope=1", json={"title": "Read", "due": MILK["due"]}).json()
    assert (created["status"], fields(created["body"])["id"]) == (201, 4)


def test_the_writers_requests(http: SiteClient) -> None:
    partial = http.request("PUT", f"{TASKS}/1?_dc=1700000000001", json={"id": 1, "done": True})
    assert (partial.status_code, fields(partial.json())) == (200, {**MILK, "done": True})
    every = {"id": 2, "title": "Walk the cat", "due": "2026-11-29T09:00:00+01:00", "done": True}
    whole = http.request("PUT", f"{TASKS}/2?_dc=1700000000002", json=every)
    assert fields(whole.json()) == {**every, "due": "2026-11-29T08:00:00Z"}
    deleted = http.request("DELETE", f"{TASKS}/3?_dc=1700000000003")
    assert (deleted.status_code, deleted.json()) == (200, {"deleted": True, "previous": MUM})
    missing = http.request("DELETE", f"{TASKS}/3?_dc=1700000000004")
    assert (missing.status_code, missing.json()["data"]) == (404, {"status": 404})


def test_cross_origin_preflight_and_read(http: SiteClient, compat: bool) -> None:
    preflight = http.request(
        "OPTIONS",
        f"{TASKS}/1",
        headers={
            "Origin": "https://app.example",
            "Access-Control-Request-Method": "PUT",
            "Access-Control-Request-Headers": "authorization,content-type",
        },
    )
    methods = preflight.headers["Access-Control-Allow-Methods"]
    assert methods == (
        "OPTIONS, GET, POST, PUT, PATCH, DELETE" if compat else "POST, GET, OPTIONS, PUT, DELETE"
    )
    allowed = preflight.headers["Access-Control-Allow-Headers"].lower().split(", ")
    assert {"authorization", "content-type", "x-svc-nonce"} <= set(allowed)
    assert "x-requested-with" not in allowed
    read = http.get(TASKS, headers={"Origin": "https://app.example"})
    assert read.headers["Access-Control-Allow-Origin"] == "https://app.example"
    assert read.headers["Access-Control-Allow-Credentials"] == "true"
    exposed = read.headers["Access-Control-Expose-Headers"].split(", ")
    assert {"X-SVC-Total", "X-SVC-TotalPages"} <= set(exposed)
