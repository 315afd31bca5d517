"""``svcrest.StoreCollection`` over HTTP, on both adapters and both store engines: the five
operations with WordPress's permissions, codes and answers, the owner rule of
``map_meta_cap``, contexts and ``_fields``, WordPress's and Ext JS's collection parameters
(JSON strings and PHP-style brackets, as Ext JS's Rest proxy sends them), totals and ``Link``
headers, cursors, ``ETag`` / ``If-Match``, ``Idempotency-Key``, registered fields, batches
and atomic batches."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import quote

import psycopg
import pytest

from svcrest import App, RestError, StoreCollection
from svcrest.auth.passwords import ScryptParams
from svcrest.http.user import User
from tests.conftest import SiteClient
from tests.pg import PostgresServer

ClientFor = Callable[..., SiteClient]
ROOT = "http://127.0.0.1:8000/svc-json"
TASKS = "/svc-json/todo/v1/tasks"
BATCH = "/svc-json/batch/v1"
SCHEMA: dict[str, Any] = {
    "title": "task",
    "type": "object",
    "properties": {
        "title": {
            "description": "What to do.",
            "type": "string",
            "required": True,
            "minLength": 1,
            "context": ["view", "edit", "embed"],
        },
        "priority": {"type": "integer", "default": 0, "context": ["view", "edit"]},
        "done": {"type": "boolean", "default": False, "context": ["view", "edit"]},
        "notes": {"type": "string", "default": "", "context": ["edit"]},
    },
}


def links(task_id: int) -> dict[str, Any]:
    return {
        "self": [{"href": f"{ROOT}/todo/v1/tasks/{task_id}"}],
        "collection": [{"href": f"{ROOT}/todo/v1/tasks"}],
    }


def view(task_id: int, title: str, priority: int = 0, done: bool = False, author: int = 1) -> Any:
    return {
        "id": task_id,
        "title": title,
        "priority": priority,
        "done": done,
        "author": author,
        "_links": links(task_id),
    }


def edit(task_id: int, title: str, priority: int = 0, notes: str = "", author: int = 1) -> Any:
    return {
        "id": task_id,
        "title": title,
        "priority": priority,
        "done": False,
        "notes": notes,
        "author": author,
        "_links": links(task_id),
    }


def collection(app: App, **options: Any) -> StoreCollection:
    declared: dict[str, Any] = {
        "owner_field": "author",
        "sortable": ("title", "priority"),
        "filterable": ("title", "priority", "done", "author"),
        "searchable": ("title",),
    }
    declared.update(options)
    return app.register_controller(StoreCollection("todo/v1", "tasks", SCHEMA, **declared))


def auth(app: App, login: str) -> dict[str, str]:
    user = app.users.get_by_login(login)
    assert user is not None
    password, _ = app.users.create_application_password(user.id, "tests")
    return {"Authorization": "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode()}


class Site:
    """A site with the tasks collection, an editor ``ed`` (user 1), authors ``al`` (2) and
    ``ann`` (3), a subscriber ``sue`` (4), and their Basic-auth headers."""

    def __init__(self, store_location: str | None, **options: Any) -> None:
        self.app = App(secret_key="k" * 32, store=store_location, **options.pop("app", {}))
        self.app.users.password_params = ScryptParams(n=16, r=1, p=1)
        self.tasks = collection(self.app, **options)
        self.headers: dict[str, dict[str, str]] = {}
        for login, role in (
            ("ed", "editor"),
            ("al", "author"),
            ("ann", "author"),
            ("sue", "subscriber"),
        ):
            self.app.users.create(login, f"{login}-password", roles=(role,))
            self.headers[login] = auth(self.app, login)

    def seed(self, *titles: str, login: str = "ed") -> None:
        """Create tasks of ``titles`` (priority = position) as ``login``."""
        user = self.app.users.get_by_login(login)
        assert user is not None
        for priority, title in enumerate(titles):
            self.tasks.table.insert({"title": title, "priority": priority, "author": user.id})


@pytest.fixture
def site(store_location: str | None) -> Iterator[Site]:
    made = Site(store_location)
    yield made
    made.app.store.close()


def titles(answer: Any) -> list[str]:
    return [task["title"] for task in answer.json()]


def next_link(answer: Any) -> str | None:
    for line in answer.headers.get_list("link"):
        if line.endswith('rel="next"'):
            return str(line[1 : line.index(">")])
    return None


# -- declaration -------------------------------------------------------------------------------


def test_routes_schema_and_collection_params(site: Site) -> None:
    routes = site.app.rest_get_server().get_routes("todo/v1")
    assert list(routes) == [
        "/todo/v1",
        "/todo/v1/tasks",
        r"/todo/v1/tasks/(?P<id>[\d]+)",
        "/todo/v1/tasks/changes",
    ]
    assert routes["/todo/v1/tasks/changes"][0]["methods"] == {"GET": True}
    schema = site.tasks.get_public_item_schema()
    assert list(schema["properties"]) == ["id", "title", "priority", "done", "notes", "author"]
    assert schema["properties"]["id"] == {
        "description": "Unique identifier for the item.",
        "type": "integer",
        "context": ["view", "edit", "embed"],
        "readonly": True,
    }
    assert schema["properties"]["author"]["readonly"] is True
    params = site.tasks.get_collection_params()
    assert list(params) == [
        "context", "page", "per_page", "search", "offset", "order", "orderby", "include",
        "exclude", "start", "limit", "sort", "filter",
    ]  # fmt: skip
    assert params["order"] == {
        "description": "Order sort attribute ascending or descending.",
        "type": "string",
        "default": "asc",
        "enum": ["asc", "desc"],
    }
    assert params["orderby"] == {
        "description": "Sort collection by object attribute.",
        "type": "string",
        "default": "id",
        "enum": ["id", "title", "priority", "include"],
    }
    assert params["sort"]["type"] == params["filter"]["type"] == ["string", "array", "object"]
    assert params["context"]["enum"] == ["view", "embed", "edit"]  # WordPress: reverse sorted
    creatable = site.tasks.get_endpoint_args_for_item_schema("POST")
    assert sorted(creatable) == ["done", "notes", "priority", "title"]


def test_options_and_openapi_show_the_collection_defaults(
    site: Site, client_for: ClientFor
) -> None:
    client = client_for(site.app)
    args = client.request("OPTIONS", TASKS).json()["endpoints"][0]["args"]
    assert (args["order"]["default"], args["orderby"]["default"]) == ("asc", "id")
    assert (args["page"]["default"], args["per_page"]["default"]) == (1, 10)
    listed = site.app.openapi()["paths"]["/todo/v1/tasks"]["get"]["parameters"]
    shown = {one["name"]: one["schema"].get("default") for one in listed}
    assert (shown["order"], shown["orderby"]) == ("asc", "id")


def test_declaration_mistakes_are_refused_at_once() -> None:
    with pytest.raises(ValueError, match="edit_<type>"):
        StoreCollection("a/v1", "x", SCHEMA, owner_field="author", write="manage_options")
    with pytest.raises(ValueError, match="not a property"):
        StoreCollection("a/v1", "x", SCHEMA, sortable=("nope",))
    with pytest.raises(ValueError, match="needs a default"):
        StoreCollection("a/v1", "x", SCHEMA, sortable=("author",), owner_field="author")
    with pytest.raises(ValueError, match="version"):
        StoreCollection("a/v1", "x", {"title": "t", "properties": {"version": {"type": "integer"}}})
    with pytest.raises(ValueError, match="integer"):
        StoreCollection(
            "a/v1",
            "x",
            SCHEMA | {"properties": {"author": {"type": "string"}}},
            owner_field="author",
        )
    with pytest.raises(TypeError, match="capability name"):
        StoreCollection("a/v1", "x", SCHEMA, read=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="namespace"):
        StoreCollection("", "x", SCHEMA)


# -- create ----------------------------------------------------------------------------------


def test_create_answers_201_with_location_and_etag_in_the_edit_context(
    site: Site, client_for: ClientFor
) -> None:
    client = client_for(site.app)
    answer = client.post(
        TASKS, json={"title": "Milk", "author": 4, "id": 9}, headers=site.headers["al"]
    )
    assert answer.status_code == 201
    assert answer.headers["location"] == f"{ROOT}/todo/v1/tasks/1"
    assert answer.headers["etag"] == '"1"'
    assert answer.json() == edit(1, "Milk", author=2)  # the owner is the creating user
    assert site.tasks.table.get(1) == {
        "id": 1, "title": "Milk", "priority": 0, "done": False, "notes": "", "author": 2,
        "version": 1,
    }  # fmt: skip


def test_create_needs_the_write_capability(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    anonymous = client.post(TASKS, json={"title": "Milk"})
    assert anonymous.status_code == 401
    assert anonymous.json() == {
        "code": "rest_cannot_create",
        "message": "Sorry, you are not allowed to create task items as this user.",
        "data": {"status": 401},
    }
    subscriber = client.post(TASKS, json={"title": "Milk"}, headers=site.headers["sue"])
    assert subscriber.status_code == 403
    assert subscriber.json()["code"] == "rest_cannot_create"
    assert site.tasks.table.get(1) is None


def test_create_is_validated_by_the_schema(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    headers = site.headers["ed"]
    missing = client.post(TASKS, json={"priority": 1}, headers=headers)
    assert missing.status_code == 400
    assert missing.json()["code"] == "rest_missing_callback_param"
    assert missing.json()["data"]["params"] == ["title"]
    wrong = client.post(TASKS, json={"title": "A", "priority": "high"}, headers=headers)
    assert wrong.status_code == 400
    assert wrong.json()["code"] == "rest_invalid_param"
    assert wrong.json()["data"]["params"] == {"priority": "priority is not of type integer."}
    empty = client.post(TASKS, json={"title": ""}, headers=headers)
    assert empty.status_code == 400
    assert list(empty.json()["data"]["params"]) == ["title"]


# -- read -------------------------------------------------------------------------------------


def test_get_item_by_context_and_fields(site: Site, client_for: ClientFor) -> None:
    site.seed("Milk", "Bread", login="al")
    client = client_for(site.app)
    answer = client.get(f"{TASKS}/2")
    assert answer.status_code == 200
    assert answer.json() == view(2, "Bread", priority=1, author=2)
    assert answer.headers["etag"] == '"1"'
    assert client.get(f"{TASKS}/2", headers={"If-None-Match": '"1"'}).status_code == 304
    embed = client.get(f"{TASKS}/2", params={"context": "embed"}).json()
    assert embed == {"id": 2, "title": "Bread", "author": 2, "_links": links(2)}
    fields = client.get(f"{TASKS}/2", params={"_fields": "title,done"}).json()
    assert fields == {"title": "Bread", "done": False}
    bracketed = client.get(f"{TASKS}/2?_fields[0]=priority").json()
    assert bracketed == {"priority": 1}
    own = client.get(f"{TASKS}/2", params={"context": "edit"}, headers=site.headers["al"])
    assert own.json() == edit(2, "Bread", priority=1, author=2)


def test_edit_context_needs_the_right_to_edit(site: Site, client_for: ClientFor) -> None:
    site.seed("Milk", login="al")
    client = client_for(site.app)
    expected = {
        "code": "rest_forbidden_context",
        "message": "Sorry, you are not allowed to edit task items.",
    }
    for login, status in ((None, 401), ("sue", 403), ("ann", 403)):
        headers = site.headers[login] if login else {}
        answer = client.get(f"{TASKS}/1", params={"context": "edit"}, headers=headers)
        assert answer.status_code == status, login
        assert answer.json() == {**expected, "data": {"status": status}}
    listed = client.get(TASKS, params={"context": "edit"}, headers=site.headers["sue"])
    assert listed.status_code == 403
    assert listed.json()["code"] == "rest_forbidden_context"
    editor = client.get(TASKS, params={"context": "edit"}, headers=site.headers["ann"])
    assert editor.json() == [{k: v for k, v in edit(1, "Milk", author=2).items()}]


def test_unknown_id_is_404_invalid_id(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    expected = {
        "code": "rest_task_invalid_id",
        "message": "Invalid task ID.",
        "data": {"status": 404},
    }
    headers = site.headers["ed"]
    assert client.get(f"{TASKS}/7").json() == expected
    assert client.get(f"{TASKS}/7").status_code == 404
    assert (
        client.request("PATCH", f"{TASKS}/7", json={"done": True}, headers=headers).json()
        == expected
    )
    assert client.request("DELETE", f"{TASKS}/7", headers=headers).json() == expected
    assert client.get(f"{TASKS}/99999999999999999999").status_code == 404


# -- update and delete: the owner rule, If-Match ---------------------------------------------


def test_authors_change_only_their_own_items(site: Site, client_for: ClientFor) -> None:
    site.seed("Mine", login="al")
    client = client_for(site.app)
    other = client.request("PATCH", f"{TASKS}/1", json={"done": True}, headers=site.headers["ann"])
    assert other.status_code == 403
    assert other.json() == {
        "code": "rest_cannot_edit",
        "message": "Sorry, you are not allowed to edit this task.",
        "data": {"status": 403},
    }
    deleted = client.request("DELETE", f"{TASKS}/1", headers=site.headers["ann"])
    assert deleted.status_code == 403
    assert deleted.json() == {
        "code": "rest_cannot_delete",
        "message": "Sorry, you are not allowed to delete this task.",
        "data": {"status": 403},
    }
    anonymous = client.request("PUT", f"{TASKS}/1", json={"done": True})
    assert anonymous.status_code == 401
    assert anonymous.json()["code"] == "rest_cannot_edit"
    own = client.request(
        "PATCH", f"{TASKS}/1", json={"notes": "n", "author": 3}, headers=site.headers["al"]
    )
    assert own.status_code == 200
    assert own.json() == edit(1, "Mine", notes="n", author=2)  # the owner field is readonly
    assert own.headers["etag"] == '"2"'
    # edit_others_posts: the editor edits anyone's item; delete_others_posts: and deletes it
    ed = client.request("POST", f"{TASKS}/1", json={"title": "Edited"}, headers=site.headers["ed"])
    assert ed.status_code == 200
    assert ed.json()["title"] == "Edited"
    assert ed.json()["author"] == 2
    gone = client.request("DELETE", f"{TASKS}/1", headers=site.headers["ed"])
    assert gone.status_code == 200


def test_delete_answers_the_previous_item(site: Site, client_for: ClientFor) -> None:
    site.seed("Milk", "Bread")
    client = client_for(site.app)
    answer = client.request("DELETE", f"{TASKS}/2", headers=site.headers["ed"])
    assert answer.status_code == 200
    assert answer.json() == {
        "deleted": True,
        "previous": {
            "id": 2,
            "title": "Bread",
            "priority": 1,
            "done": False,
            "notes": "",
            "author": 1,
        },
    }
    forced = client.request("DELETE", f"{TASKS}/1?force=true", headers=site.headers["ed"])
    assert forced.json()["deleted"] is True
    assert client.get(f"{TASKS}/2").status_code == 404
    assert client.get(TASKS).json() == []


def test_if_match_guards_updates_and_deletes(site: Site, client_for: ClientFor) -> None:
    site.seed("Milk")
    client = client_for(site.app)
    headers = site.headers["ed"]
    first = client.request(
        "PUT", f"{TASKS}/1", json={"done": True}, headers={**headers, "If-Match": '"1"'}
    )
    assert first.status_code == 200
    assert first.headers["etag"] == '"2"'
    stale = client.request(
        "PATCH", f"{TASKS}/1", json={"done": False}, headers={**headers, "If-Match": '"1"'}
    )
    assert stale.status_code == 412
    assert stale.headers["etag"] == '"2"'
    assert stale.json() == {
        "code": "rest_precondition_failed",
        "message": "The resource has changed since it was read (If-Match does not match).",
        "data": {"status": 412},
    }
    stale_post = client.post(
        f"{TASKS}/1", json={"done": False}, headers={**headers, "If-Match": '"1"'}
    )
    assert stale_post.status_code == 412
    assert stale_post.headers["etag"] == '"2"'
    stale_delete = client.request("DELETE", f"{TASKS}/1", headers={**headers, "If-Match": '"1"'})
    assert stale_delete.status_code == 412
    assert site.tasks.table.get(1)["version"] == 2  # type: ignore[index]
    matching = client.request("DELETE", f"{TASKS}/1", headers={**headers, "If-Match": '"2"'})
    assert matching.status_code == 200


# -- collections: WordPress's params ----------------------------------------------------------


def test_pages_totals_and_links(site: Site, client_for: ClientFor) -> None:
    site.seed("a", "b", "c", "d", "e")
    client = client_for(site.app)
    answer = client.get(TASKS, params={"per_page": 2, "page": 2})
    assert answer.json() == [view(3, "c", 2), view(4, "d", 3)]
    assert answer.headers["x-svc-total"] == "5"
    assert answer.headers["x-svc-totalpages"] == "3"
    assert answer.headers.get_list("link")[1:] == [
        f'<{ROOT}/todo/v1/tasks?per_page=2&page=1>; rel="prev"',
        f'<{ROOT}/todo/v1/tasks?per_page=2&page=3>; rel="next"',
    ]
    beyond = client.get(TASKS, params={"per_page": 2, "page": 4})
    assert beyond.status_code == 400
    assert beyond.json()["code"] == "rest_invalid_page_number"
    offset = client.get(TASKS, params={"per_page": 2, "offset": 3})
    assert titles(offset) == ["d", "e"]
    assert offset.headers.get_list("link")[1:] == [
        f'<{ROOT}/todo/v1/tasks?per_page=2&offset=1>; rel="prev"',
    ]
    assert client.get(TASKS, params={"per_page": 101}).status_code == 400


def test_search_order_include_exclude(site: Site, client_for: ClientFor) -> None:
    site.seed("Buy milk", "Walk dog", "Buy bread", "Call mum")
    client = client_for(site.app)
    assert titles(client.get(TASKS, params={"search": "buy"})) == ["Buy milk", "Buy bread"]
    assert titles(client.get(TASKS, params={"orderby": "title"})) == [
        "Buy bread", "Buy milk", "Call mum", "Walk dog",
    ]  # fmt: skip
    assert titles(client.get(TASKS, params={"orderby": "priority", "order": "desc"})) == [
        "Call mum", "Buy bread", "Walk dog", "Buy milk",
    ]  # fmt: skip
    assert titles(client.get(f"{TASKS}?include[]=4&include[]=2")) == ["Walk dog", "Call mum"]
    assert titles(client.get(TASKS, params={"include": "1,3"})) == ["Buy milk", "Buy bread"]
    assert titles(client.get(TASKS, params={"exclude": "1,3"})) == ["Walk dog", "Call mum"]
    answer = client.get(TASKS, params={"search": "buy", "per_page": 1})
    assert answer.headers["x-svc-total"] == "2"


def test_orderby_include_answers_in_the_order_of_include(site: Site, client_for: ClientFor) -> None:
    site.seed("a", "b", "c", "d")
    client = client_for(site.app)
    assert titles(client.get(TASKS, params={"orderby": "include", "include": "3,1,4"})) == [
        "c", "a", "d",
    ]  # fmt: skip
    assert titles(client.get(f"{TASKS}?orderby=include&include[]=4&include[]=2")) == ["d", "b"]
    # As WordPress's ``post__in`` order: ``order`` does not reverse it.
    answer = client.get(TASKS, params={"orderby": "include", "include": "2,4,1", "order": "desc"})
    assert titles(answer) == ["b", "d", "a"]
    paged = client.get(
        TASKS, params={"orderby": "include", "include": "4,3,2,1", "per_page": 2, "page": 2}
    )
    assert titles(paged) == ["b", "a"]
    assert paged.headers["x-svc-total"] == "4"
    missing = client.get(TASKS, params={"orderby": "include"})
    assert missing.status_code == 400
    assert missing.json() == {
        "code": "rest_orderby_include_missing_include",
        "message": "You need to define an include parameter to order by include.",
        "data": {"status": 400},
    }
    empty = client.get(f"{TASKS}?orderby=include&include=")
    assert empty.status_code == 400
    assert empty.json()["code"] == "rest_orderby_include_missing_include"


def test_sort_and_filter_only_on_declared_properties(site: Site, client_for: ClientFor) -> None:
    site.seed("a")
    client = client_for(site.app)
    orderby = client.get(TASKS, params={"orderby": "notes"})
    assert orderby.status_code == 400
    assert orderby.json()["code"] == "rest_invalid_param"
    assert list(orderby.json()["data"]["params"]) == ["orderby"]
    sort = client.get(TASKS, params={"sort": json.dumps([{"property": "notes"}])})
    assert sort.status_code == 400
    assert sort.json() == {
        "code": "rest_invalid_param",
        "message": "Invalid parameter(s): sort",
        "data": {
            "status": 400,
            "params": {"sort": "sort cannot sort by 'notes': use one of id, priority, title."},
            "details": {
                "sort": {
                    "code": "rest_invalid_param",
                    "message": "sort cannot sort by 'notes': use one of id, priority, title.",
                    "data": None,
                }
            },
        },
    }
    bracket = client.get(f"{TASKS}?filter[0][property]=notes&filter[0][value]=x")
    assert bracket.status_code == 400
    assert list(bracket.json()["data"]["params"]) == ["filter"]
    malformed = client.get(TASKS, params={"filter": "[{"})
    assert malformed.status_code == 400
    assert malformed.json()["data"]["params"] == {"filter": "filter is not valid JSON."}


# -- collections: Ext JS's Rest proxy ---------------------------------------------------------

EXT_SORT = '[{"property":"title","direction":"ASC"}]'
EXT_FILTER = (
    '[{"property":"done","value":false,"operator":"="},'
    '{"property":"priority","value":1,"operator":">="}]'
)


def test_ext_js_rest_proxy_request_with_json_strings(site: Site, client_for: ClientFor) -> None:
    site.seed("e", "d", "c", "b", "a")
    site.tasks.table.update(5, {"done": True})
    client = client_for(site.app)
    url = (
        f"{TASKS}?_dc=1700000000000&page=1&start=0&limit=2"
        f"&sort={quote(EXT_SORT)}&filter={quote(EXT_FILTER)}"
    )
    answer = client.get(url)
    assert answer.status_code == 200
    assert answer.json() == [view(4, "b", 3), view(3, "c", 2)]  # "a" is done, "e" priority 0
    assert answer.headers["x-svc-total"] == "3"
    assert answer.headers["x-svc-totalpages"] == "2"
    sort, filters = quote(EXT_SORT, safe=""), quote(EXT_FILTER, safe="")
    assert next_link(answer) == (
        f"{ROOT}/todo/v1/tasks?_dc=1700000000000&page=2&start=2&limit=2"
        f"&sort={sort}&filter={filters}"
    )
    second = client.get(next_link(answer).removeprefix("http://127.0.0.1:8000"))  # type: ignore[union-attr]
    assert titles(second) == ["d"]
    assert second.headers.get_list("link")[1:] == [
        f"<{ROOT}/todo/v1/tasks?_dc=1700000000000&page=1&start=0&limit=2"
        f'&sort={sort}&filter={filters}>; rel="prev"'
    ]


def test_ext_js_rest_proxy_request_with_php_brackets(site: Site, client_for: ClientFor) -> None:
    site.seed("e", "d", "c", "b", "a")
    site.tasks.table.update(5, {"done": True})
    client = client_for(site.app)
    url = (
        f"{TASKS}?page=1&start=0&limit=25"
        "&sort[0][property]=priority&sort[0][direction]=DESC"
        "&filter[0][property]=done&filter[0][value]=false&filter[0][operator]=%3D"
        "&filter[1][property]=title&filter[1][value]=c&filter[1][operator]=%21%3D"
    )
    answer = client.get(url)
    assert answer.status_code == 200
    assert titles(answer) == ["b", "d", "e"]
    assert answer.headers["x-svc-total"] == "3"
    assert answer.headers["x-svc-totalpages"] == "1"
    like = client.get(f"{TASKS}?filter[0][property]=title&filter[0][value]=B")
    assert titles(like) == ["b"]  # a string without an operator: like, ignoring case


# -- cursors ----------------------------------------------------------------------------------


def link_cursor(answer: Any) -> str:
    link = next_link(answer)
    assert link is not None
    return link.rpartition("cursor=")[2]


def test_cursor_pages_follow_link_next(store_location: str | None, client_for: ClientFor) -> None:
    site = Site(store_location, cursor=True)
    try:
        site.seed(*(f"t{n:02}" for n in range(7)))
        client = client_for(site.app)
        first = client.get(TASKS, params={"per_page": 3, "orderby": "priority", "order": "desc"})
        assert titles(first) == ["t06", "t05", "t04"]
        assert first.headers["x-svc-total"] == "7"
        seen, link = titles(first), next_link(first)
        assert link is not None
        assert link.startswith(
            f"{ROOT}/todo/v1/tasks?per_page=3&orderby=priority&order=desc&cursor="
        )
        pages = 1
        while link is not None:
            page = client.get(link.removeprefix("http://127.0.0.1:8000"))
            assert page.status_code == 200
            assert isinstance(page.json(), list)
            assert "x-svc-total" not in page.headers  # nothing counted: the same cost at any depth
            seen += titles(page)
            link, pages = next_link(page), pages + 1
        assert seen == [f"t{n:02}" for n in range(6, -1, -1)]
        assert pages == 3
        forged = client.get(TASKS, params={"cursor": "bm9wZQ"})
        assert forged.status_code == 400
        assert list(forged.json()["data"]["params"]) == ["cursor"]
        assert "cursor" in site.tasks.get_collection_params()
        # The order of include has no cursor: its pages are numbered.
        ranked = client.get(TASKS, params={"orderby": "include", "include": "5,1,3", "per_page": 2})
        assert titles(ranked) == ["t04", "t00"]
        second = f"{ROOT}/todo/v1/tasks?orderby=include&include=5%2C1%2C3&per_page=2&page=2"
        assert next_link(ranked) == second
        assert titles(client.get(second.removeprefix("http://127.0.0.1:8000"))) == ["t02"]
        with_cursor = client.get(
            TASKS, params={"orderby": "include", "include": "5,1", "cursor": link_cursor(first)}
        )
        assert with_cursor.status_code == 400
        assert with_cursor.json()["data"]["params"] == {
            "cursor": "A cursor cannot be combined with orderby=include."
        }
    finally:
        site.app.store.close()


def test_no_cursor_param_without_cursor(site: Site, client_for: ClientFor) -> None:
    site.seed("a", "b")
    answer = client_for(site.app).get(TASKS, params={"per_page": 1, "cursor": "x"})
    assert titles(answer) == ["a"]  # an unknown parameter, ignored as WordPress ignores them
    assert next_link(answer) == f"{ROOT}/todo/v1/tasks?per_page=1&cursor=x&page=2"


# -- permissions as callables, and a read capability ------------------------------------------


def test_per_item_callables(store_location: str | None, client_for: ClientFor) -> None:
    def read(user: User, item: Mapping[str, Any] | None) -> bool:
        return item is None or not item["title"].startswith("secret") or user.id == item["author"]

    def write(user: User, item: Mapping[str, Any] | None) -> bool:
        return user.id != 0 and (item is None or item["priority"] < 5)

    site = Site(store_location, read=read, write=write)
    try:
        site.seed("open", "secret plan", login="al")
        site.tasks.table.update(1, {"priority": 9})
        client = client_for(site.app)
        assert titles(client.get(TASKS)) == ["open"]  # left out, as WordPress's get_items does
        assert client.get(TASKS).headers["x-svc-total"] == "2"
        assert titles(client.get(TASKS, headers=site.headers["al"])) == ["open", "secret plan"]
        hidden = client.get(f"{TASKS}/2", headers=site.headers["ann"])
        assert hidden.status_code == 403
        assert hidden.json() == {
            "code": "rest_forbidden",
            "message": "Sorry, you are not allowed to do that.",
            "data": {"status": 403},
        }
        created = client.post(TASKS, json={"title": "x"}, headers=site.headers["sue"])
        assert created.status_code == 201  # the callable allows any logged-in user
        assert client.post(TASKS, json={"title": "x"}).status_code == 401
        refused = client.request(
            "PATCH", f"{TASKS}/1", json={"done": True}, headers=site.headers["al"]
        )
        assert refused.status_code == 403  # priority 9
        allowed = client.request(
            "PATCH", f"{TASKS}/2", json={"done": True}, headers=site.headers["sue"]
        )
        assert allowed.status_code == 200  # the callable decides: no owner rule of its own
    finally:
        site.app.store.close()


def test_read_capability(store_location: str | None, client_for: ClientFor) -> None:
    site = Site(store_location, read="edit_posts")
    try:
        site.seed("a")
        client = client_for(site.app)
        for path in (TASKS, f"{TASKS}/1"):
            anonymous = client.get(path)
            assert anonymous.status_code == 401
            assert anonymous.json()["code"] == "rest_forbidden"
            assert client.get(path, headers=site.headers["sue"]).status_code == 403
            assert client.get(path, headers=site.headers["al"]).status_code == 200
    finally:
        site.app.store.close()


def test_wordpress_compat_sends_x_wp_totals(
    store_location: str | None, client_for: ClientFor
) -> None:
    site = Site(store_location, app={"wordpress_compat": True})
    try:
        site.seed("a", "b", "c")
        answer = client_for(site.app).get(TASKS, params={"per_page": 2})
        assert answer.headers["x-wp-total"] == "3"
        assert answer.headers["x-wp-totalpages"] == "2"
        assert answer.headers["x-svc-total"] == "3"
    finally:
        site.app.store.close()


# -- Idempotency-Key, registered fields, batches ----------------------------------------------


def test_idempotency_key_replays_a_creation(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    headers = {**site.headers["ed"], "Idempotency-Key": "create-milk-1"}
    first = client.post(TASKS, json={"title": "Milk"}, headers=headers)
    again = client.post(TASKS, json={"title": "Milk"}, headers=headers)
    assert first.status_code == again.status_code == 201
    assert again.headers["idempotent-replayed"] == "true"
    assert again.json() == first.json() == edit(1, "Milk")
    assert titles(client.get(TASKS)) == ["Milk"]
    other = client.post(TASKS, json={"title": "Bread"}, headers=headers)
    assert other.status_code == 422
    assert other.json()["code"] == "rest_idempotency_mismatch"


def test_registered_fields_are_shown_and_written_in_the_transaction(
    site: Site, client_for: ClientFor
) -> None:
    labels: dict[int, str] = {}

    def get_label(data: dict[str, Any], attribute: str, request: Any, object_type: str) -> Any:
        return labels.get(data["id"], "")

    def update_label(value: Any, item: Any, attribute: str, request: Any, object_type: str) -> Any:
        if value == "bad":
            return RestError("rest_bad_label", "No.", {"status": 400})
        labels[item["id"]] = value
        return True

    site.app.register_rest_field(
        "task",
        "label",
        get_callback=get_label,
        update_callback=update_label,
        schema={"type": "string", "context": ["view", "edit"]},
    )
    client = client_for(site.app)
    headers = site.headers["ed"]
    created = client.post(TASKS, json={"title": "Milk", "label": "home"}, headers=headers)
    assert created.status_code == 201
    assert created.json()["label"] == "home"
    refused = client.post(TASKS, json={"title": "Bread", "label": "bad"}, headers=headers)
    assert refused.status_code == 400
    assert refused.json()["code"] == "rest_bad_label"
    assert titles(client.get(TASKS)) == ["Milk"]  # the refused creation was rolled back
    updated = client.request(
        "PATCH", f"{TASKS}/1", json={"title": "Oat milk", "label": "bad"}, headers=headers
    )
    assert updated.status_code == 400
    assert client.get(f"{TASKS}/1").json() == {**view(1, "Milk"), "label": "home"}
    options = client.request("OPTIONS", TASKS).json()
    assert options["schema"]["properties"]["label"] == {
        "type": "string",
        "context": ["view", "edit"],
    }


def test_batch_and_atomic_batch(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    headers = site.headers["ed"]
    plain = client.post(
        BATCH,
        json={"requests": [
            {"path": "/todo/v1/tasks", "body": {"title": "A"}},
            {"path": "/todo/v1/tasks", "body": {"title": ""}},
        ]},
        headers=headers,
    )  # fmt: skip
    assert plain.status_code == 207
    assert [slot["status"] for slot in plain.json()["responses"]] == [201, 400]
    assert plain.json()["responses"][0]["body"] == edit(1, "A")
    atomic = client.post(
        BATCH,
        json={"validation": "atomic", "requests": [
            {"path": "/todo/v1/tasks", "body": {"title": "B"}},
            {"method": "PATCH", "path": "/todo/v1/tasks/1", "body": {"title": "A2"}},
            {"method": "DELETE", "path": "/todo/v1/tasks/1", "headers": {"If-Match": ['"1"']}},
            {"path": "/todo/v1/tasks", "body": {"title": "never"}},
        ]},
        headers=headers,
    )  # fmt: skip
    assert atomic.status_code == 207
    data = atomic.json()
    assert data["failed"] == "atomic"
    assert [slot["status"] for slot in data["responses"]] == [201, 200, 412, 424]
    # every write of the batch rolled back: the table as before it
    assert site.tasks.table.get(1) == {
        "id": 1, "title": "A", "priority": 0, "done": False, "notes": "", "author": 1,
        "version": 1,
    }  # fmt: skip
    assert titles(client.get(TASKS)) == ["A"]
    committed = client.post(
        BATCH,
        json={"validation": "atomic", "requests": [
            {"path": "/todo/v1/tasks", "body": {"title": "C"}},
            {"method": "DELETE", "path": "/todo/v1/tasks/1"},
        ]},
        headers=headers,
    )  # fmt: skip
    assert [slot["status"] for slot in committed.json()["responses"]] == [201, 200]
    assert titles(client.get(TASKS)) == ["C"]


def test_deadlocked_atomic_batches_answer_503_store_busy(
    postgres: PostgresServer, client_for: ClientFor
) -> None:
    """Two atomic batches updating tasks 1 and 2 in opposite orders on PostgreSQL: one waits
    for the other's row, the other for the change log's lock the first holds. PostgreSQL
    rolls one back (``DeadlockDetected``): its slot answers 503 ``svc_store_busy`` with
    ``Retry-After``, the other batch commits."""
    site = Site(postgres.new_schema())
    try:
        site.seed("one", "two")
        headers = site.headers["ed"]
        first_write = threading.Event()
        calls: list[int] = []

        def hold_until_the_other_waits(item: Any, request: Any, creating: bool) -> None:
            calls.append(item["id"])
            if len(calls) > 1:
                return
            first_write.set()  # batch "up" holds row 1 and the change log's lock
            waiting = "SELECT count(*) FROM pg_locks WHERE NOT granted"
            with psycopg.connect(postgres.url(), autocommit=True) as watcher:
                deadline = time.monotonic() + 20
                while watcher.execute(waiting).fetchone() == (0,):
                    assert time.monotonic() < deadline, "the other batch never waited"
                    time.sleep(0.02)

        site.app.hooks.add_action("rest_insert_task", hold_until_the_other_waits)
        answers: dict[str, Any] = {}
        path = "/todo/v1/tasks"

        def batch(name: str, first: int, second: int) -> None:
            client = client_for(site.app)
            answers[name] = client.post(
                BATCH,
                json={"validation": "atomic", "requests": [
                    {"method": "PATCH", "path": f"{path}/{first}", "body": {"priority": 7}},
                    {"method": "PATCH", "path": f"{path}/{second}", "body": {"priority": 7}},
                ]},
                headers=headers,
            )  # fmt: skip

        up = threading.Thread(target=batch, args=("up", 1, 2))
        up.start()
        assert first_write.wait(20)
        down = threading.Thread(target=batch, args=("down", 2, 1))
        down.start()
        up.join(60)
        down.join(60)
        statuses = {name: [slot["status"] for slot in answer.json()["responses"]]
                    for name, answer in answers.items()}  # fmt: skip
        assert statuses in (
            {"up": [200, 200], "down": [503, 424]},
            {"up": [200, 503], "down": [200, 200]},
        )
        loser = "down" if statuses["up"] == [200, 200] else "up"
        assert answers[loser].status_code == 207
        assert answers[loser].json()["failed"] == "atomic"
        busy = answers[loser].json()["responses"][statuses[loser].index(503)]
        assert busy["body"] == {
            "code": "svc_store_busy",
            "message": "The database is busy; please try again shortly.",
            "data": {"status": 503},
        }
        assert busy["headers"]["Retry-After"] == "1"
        assert "failed" not in answers["up" if loser == "down" else "down"].json()
        assert [task["priority"] for task in client_for(site.app).get(TASKS).json()] == [7, 7]
        stored = [site.tasks.table.get(1), site.tasks.table.get(2)]
        assert [(task or {}).get("version") for task in stored] == [2, 2]  # written once each
    finally:
        site.app.store.close()


def test_every_write_is_in_the_change_log(site: Site, client_for: ClientFor) -> None:
    from svcrest.store.changes import changes_after

    client = client_for(site.app)
    headers = site.headers["ed"]
    client.post(TASKS, json={"title": "A"}, headers=headers)
    client.request("PATCH", f"{TASKS}/1", json={"done": True}, headers=headers)
    client.request("DELETE", f"{TASKS}/1", headers=headers)
    events = [(change.item_id, change.event) for change in changes_after(site.app.store, "task")]
    assert events == [(1, "created"), (1, "updated"), (1, "deleted")]


def test_wordpress_hooks_of_the_collection(site: Site, client_for: ClientFor) -> None:
    site.seed("a", "b", "c")
    hooks = site.app.hooks
    seen: list[tuple[str, Any]] = []

    def only_done(query: dict[str, Any], request: Any) -> dict[str, Any]:
        return {**query, "filter": [{"property": "priority", "value": 1, "operator": ">="}]}

    def starred(response: Any, item: Any, request: Any) -> Any:
        response.data["starred"] = item["priority"] == 2
        return response

    hooks.add_filter("rest_task_query", only_done)
    hooks.add_filter("rest_prepare_task", starred)
    hooks.add_action(
        "rest_insert_task", lambda item, request, creating: seen.append(("insert", creating))
    )
    hooks.add_action(
        "rest_delete_task",
        lambda item, response, request: seen.append(("delete", item["id"])),
    )
    client = client_for(site.app)
    listed = client.get(TASKS)
    assert [(task["title"], task["starred"]) for task in listed.json()] == [
        ("b", False),
        ("c", True),
    ]
    assert listed.json()[1]["_links"] == links(3)
    assert client.get(f"{TASKS}/3").json() == {**view(3, "c", 2), "starred": True}
    headers = site.headers["ed"]
    client.post(TASKS, json={"title": "d"}, headers=headers)
    client.request("PATCH", f"{TASKS}/4", json={"done": True}, headers=headers)
    client.request("DELETE", f"{TASKS}/4", headers=headers)
    assert seen == [("insert", True), ("insert", False), ("delete", 4)]


def test_nested_contexts_dates_and_values_the_store_refuses(
    store_location: str | None, client_for: ClientFor
) -> None:
    app = App(secret_key="k" * 32, store=store_location)
    app.register_controller(
        StoreCollection(
            "t/v1",
            "things",
            {
                "title": "thing",
                "properties": {
                    "name": {"type": "string", "default": ""},
                    "when": {"type": "string", "format": "date-time"},
                    "meta": {
                        "type": "object",
                        "context": ["view", "edit"],
                        "properties": {
                            "secret": {"type": "string", "context": ["edit"]},
                            "shown": {"type": "string", "context": ["view", "edit"]},
                        },
                    },
                },
            },
            write=lambda user, item: True,
        )
    )
    try:
        client = client_for(app)
        things = "/svc-json/t/v1/things"
        created = client.post(
            things,
            json={
                "name": "x",
                "when": "2024-01-02T03:04:05+02:00",
                "meta": {"secret": "s", "shown": "v"},
            },
        )
        assert created.status_code == 201
        assert {key: created.json()[key] for key in ("when", "meta")} == {
            "when": "2024-01-02T01:04:05Z",
            "meta": {"secret": "s", "shown": "v"},
        }
        assert client.get(f"{things}/1").json()["meta"] == {"shown": "v"}
        assert client.get(things).json()[0]["meta"] == {"shown": "v"}
        nul = client.post(things, json={"name": "a\u0000b"})
        assert nul.status_code == 400
        assert nul.json()["data"]["params"] == {
            "name": "name must not contain a NUL character or a lone surrogate."
        }
        assert client.get(things, params={"search": "x"}).json()["data"]["params"] == {
            "search": "This collection cannot be searched."
        }
    finally:
        app.store.close()


class Shouting(StoreCollection):
    """A subclass preparing items its own way: its answers are used everywhere."""

    def prepare_item_for_response(self, item: Any, request: Any) -> Any:
        response = super().prepare_item_for_response(item, request)
        response.data["title"] = response.data["title"].upper()
        return response


def test_a_subclass_prepares_items_its_own_way(
    store_location: str | None, client_for: ClientFor
) -> None:
    app = App(secret_key="k" * 32, store=store_location)
    shouting = app.register_controller(Shouting("todo/v1", "tasks", SCHEMA, sortable=("title",)))
    try:
        shouting.table.insert({"title": "quiet"})
        client = client_for(app)
        assert client.get(f"{TASKS}/1").json()["title"] == "QUIET"
        assert client.get(TASKS).json() == [
            {"id": 1, "title": "QUIET", "priority": 0, "done": False, "_links": links(1)}
        ]
    finally:
        app.store.close()


def test_allow_header_follows_the_owner_rule(site: Site, client_for: ClientFor) -> None:
    site.seed("Mine", login="al")
    client = client_for(site.app)
    everything = "GET, POST, PUT, PATCH, DELETE"
    for login, allowed in (
        (None, "GET"),
        ("sue", "GET"),
        ("ann", "GET"),
        ("al", everything),
        ("ed", everything),
    ):
        headers = site.headers[login] if login else {}
        assert client.get(f"{TASKS}/1", headers=headers).headers["allow"] == allowed, login
    assert client.get(TASKS).headers["allow"] == "GET"
    assert client.get(TASKS, headers=site.headers["ann"]).headers["allow"] == "GET, POST"
