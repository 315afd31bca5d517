"""The demo notes plugin: CRUD, paging, sorting, filtering, permissions, dates and HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from svcrest import App, Request, Response, RestError
from svcrest.auth.passwords import ScryptParams
from svcrest.demo import NotesController, register
from svcrest.http.user import User
from tests.conftest import SiteClient

FAST = ScryptParams(n=16, r=1, p=1)
NOW = 1_700_000_000  # 2023-11-14T22:13:20Z
HOME = "http://notes.test"
ROOT = f"{HOME}/svc-json"
NOTES = "/demo/v1/notes"

# title, content, date (UTC): ids 1..5 in this order; newest first is 3, 5, 1, 4, 2.
SEED: list[tuple[str, str, str]] = [
    ("Banana bread", "Flour and bananas", "2024-01-03T10:00:00Z"),
    ("apple pie", "Apples, butter", "2024-01-01T10:00:00Z"),
    ("Cherry jam", "Cherries and sugar", "2024-01-05T10:00:00Z"),
    ("Date loaf", "Dates, flour", "2024-01-02T10:00:00Z"),
    ("Elderflower cordial", "Flowers", "2024-01-04T10:00:00Z"),
]


def make_app(timezone: str = "UTC", store: str | None = None) -> App:
    app = App(HOME, timezone=timezone, clock=lambda: NOW, store=store)
    register(app)
    app.users.password_params = FAST
    return app


@pytest.fixture
def app(store_location: str | None) -> Iterator[App]:
    """The demo site on each engine."""
    app = make_app(store=store_location)
    yield app
    app.store.close()


@pytest.fixture
def editor(app: App) -> User:
    return app.users.create("ed", "pw", roles=("editor",))


@pytest.fixture
def seeded(app: App, editor: User) -> App:
    for title, content, date in SEED:
        response = call(
            app, "POST", NOTES, editor, json={"title": title, "content": content, "date": date}
        )
        assert response.status == 201
    return app


def call(
    app: App,
    method: str,
    route: str,
    user: User | None = None,
    *,
    query: dict[str, Any] | None = None,
    json: Any = None,
) -> Response:
    request = (
        Request(method, route, query=query)
        if json is None
        else Request(
            method, route, query=query, json=json, headers={"Content-Type": "application/json"}
        )
    )
    if user is not None:
        request.user = user
    return app.rest_do_request(request)


def ids(response: Response) -> list[int]:
    assert response.status == 200, response.data
    return [item["id"] for item in response.data]


def note(note_id: int, title: str, content: str, date: str, author: int = 1) -> dict[str, Any]:
    return {
        "id": note_id,
        "title": title,
        "content": content,
        "author": author,
        "date": date,
        "date_gmt": date,
    }


def links(note_id: int, author: int = 1) -> dict[str, list[dict[str, Any]]]:
    return {
        "self": [{"href": f"{ROOT}{NOTES}/{note_id}"}],
        "collection": [{"href": f"{ROOT}{NOTES}"}],
        "author": [{"href": f"{ROOT}/demo/v1/users/{author}", "embeddable": True}],
    }


# -- routes and schema -------------------------------------------------------------------------


def test_routes_are_registered(app: App) -> None:
    routes = app.rest_get_server().get_routes("demo/v1")
    methods = {
        route: [method for handler in handlers for method in handler["methods"]]
        for route, handlers in routes.items()
    }
    assert methods == {
        "/demo/v1": ["GET"],
        "/demo/v1/notes": ["GET", "POST"],
        r"/demo/v1/notes/(?P<id>\d+)": ["GET", "PUT", "PATCH", "DELETE"],
        "/demo/v1/notes/changes": ["GET"],
        r"/demo/v1/users/(?P<id>\d+)": ["GET"],
    }


def test_options_help_has_schema_and_args(app: App) -> None:
    response = call(app, "OPTIONS", NOTES)
    assert response.status == 200
    schema = response.data["schema"]
    assert schema["$schema"] == "http://json-schema.org/draft-04/schema#"
    assert (schema["title"], schema["type"]) == ("note", "object")
    assert {name: prop["type"] for name, prop in schema["properties"].items()} == {
        "id": "integer",
        "title": "string",
        "content": "string",
        "author": "integer",
        "date": "string",
        "date_gmt": "string",
    }
    readonly = sorted(name for name, prop in schema["properties"].items() if prop.get("readonly"))
    assert readonly == ["author", "date_gmt", "id"]
    get_endpoint, post_endpoint = response.data["endpoints"]
    assert list(get_endpoint["args"]) == [
        "page",
        "per_page",
        "start",
        "limit",
        "search",
        "sort",
        "dir",
        "filter",
    ]
    assert get_endpoint["args"]["per_page"] == {
        "required": False,
        "description": "Maximum number of notes to be returned in result set.",
        "type": "integer",
        "default": 10,
        "minimum": 1,
        "maximum": 100,
    }
    assert post_endpoint["methods"] == ["POST"]
    assert post_endpoint["args"]["title"] == {
        "required": True,
        "description": "The title of the note.",
        "type": "string",
        "minLength": 1,
        "maxLength": 255,
    }
    assert post_endpoint["args"]["content"]["default"] == ""
    assert post_endpoint["args"]["date"]["format"] == "date-time"


def test_item_route_help_lists_its_methods(app: App) -> None:
    response = call(app, "OPTIONS", f"{NOTES}/1")
    assert response.data["methods"] == ["GET", "PUT", "PATCH", "DELETE"]
    assert response.data["schema"]["title"] == "note"
    assert response.data["endpoints"][0]["args"]["id"] == {
        "required": False,
        "description": "Unique identifier for the note.",
        "type": "integer",
    }


def test_update_arguments_show_their_type_with_null_in_route_help(app: App) -> None:
    endpoints = call(app, "OPTIONS", f"{NOTES}/1").data["endpoints"]
    (update,) = [endpoint for endpoint in endpoints if "PUT" in endpoint["methods"]]
    assert update["args"]["title"] == {
        "required": False,
        "description": "The title of the note.",
        "type": ["string", "null"],
        "minLength": 1,
        "maxLength": 255,
    }
    assert update["args"]["date"]["type"] == ["string", "null"]
    assert update["args"]["date"]["format"] == "date-time"


# -- create and read ---------------------------------------------------------------------------


def test_create_returns_201_with_location_and_links(app: App, editor: User) -> None:
    body = {"title": "First", "content": "Body", "date": "2024-03-01T12:00:00Z"}
    response = call(app, "POST", NOTES, editor, json=body)
    assert response.status == 201
    assert response.data == note(1, "First", "Body", "2024-03-01T12:00:00", author=editor.id)
    assert response.headers["Location"] == f"{ROOT}{NOTES}/1"
    assert response.links == links(1)


def test_create_defaults_content_and_date(app: App, editor: User) -> None:
    response = call(app, "POST", NOTES, editor, json={"title": "Only a title"})
    assert response.status == 201
    assert response.data == note(1, "Only a title", "", "2023-11-14T22:13:20", author=editor.id)


def test_create_from_form_style_params(app: App, editor: User) -> None:
    request = Request("POST", NOTES, body={"title": "Form", "content": "posted"})
    request.user = editor
    response = app.rest_do_request(request)
    assert response.status == 201
    assert (response.data["title"], response.data["content"]) == ("Form", "posted")


def test_create_ignores_readonly_fields(app: App, editor: User) -> None:
    body = {"title": "T", "id": 77, "author": 99, "date_gmt": "2001-01-01T00:00:00"}
    response = call(app, "POST", NOTES, editor, json=body)
    assert response.status == 201
    assert (response.data["id"], response.data["author"]) == (1, editor.id)
    assert response.data["date_gmt"] == "2023-11-14T22:13:20"


@pytest.mark.parametrize(
    ("timezone", "sent", "date", "date_gmt"),
    [
        ("UTC", "2024-01-02T03:04:05Z", "2024-01-02T03:04:05", "2024-01-02T03:04:05"),
        ("UTC", "2024-01-02T03:04:05+02:00", "2024-01-02T01:04:05", "2024-01-02T01:04:05"),
        ("UTC", "2024-01-02 03:04:05.999Z", "2024-01-02T03:04:05", "2024-01-02T03:04:05"),
        ("+05:30", "2024-01-02T03:04:05-05:30", "2024-01-02T14:04:05", "2024-01-02T08:34:05"),
        ("+05:30", "2024-01-02T03:04:05", "2024-01-02T08:34:05", "2024-01-02T03:04:05"),
        ("Europe/Paris", "2024-07-01T12:00:00Z", "2024-07-01T14:00:00", "2024-07-01T12:00:00"),
        ("Europe/Paris", "2024-01-01T00:30:00+01:00", "2024-01-01T00:30:00", "2023-12-31T23:30:00"),
    ],
    ids=[
        "utc-z",
        "utc-offset",
        "fraction-space",
        "fixed-offset-site",
        "naive-is-utc",
        "paris-summer",
        "paris-year-end",
    ],
)
def test_dates_with_offsets(timezone: str, sent: str, date: str, date_gmt: str) -> None:
    app = make_app(timezone)
    editor = app.users.create("ed", "pw", roles=("editor",))
    response = call(app, "POST", NOTES, editor, json={"title": "T", "date": sent})
    assert response.status == 201
    assert (response.data["date"], response.data["date_gmt"]) == (date, date_gmt)
    stored = call(app, "GET", f"{NOTES}/1")
    assert (stored.data["date"], stored.data["date_gmt"]) == (date, date_gmt)
    app.store.close()


@pytest.mark.parametrize(
    ("body", "code", "params"),
    [
        ({"content": "no title"}, "rest_missing_callback_param", ["title"]),
        ({"title": None}, "rest_missing_callback_param", ["title"]),
        ({"title": 5}, "rest_invalid_param", {"title": "title is not of type string."}),
        ({"title": ["a"]}, "rest_invalid_param", {"title": "title is not of type string."}),
        (
            {"title": ""},
            "rest_invalid_param",
            {"title": "title must be at least 1 character long."},
        ),
        (
            {"title": "x" * 256},
            "rest_invalid_param",
            {"title": "title must be at most 255 characters long."},
        ),
        (
            {"title": "T", "content": {"a": 1}},
            "rest_invalid_param",
            {"content": "content is not of type string."},
        ),
        ({"title": "T", "date": "yesterday"}, "rest_invalid_param", {"date": "Invalid date."}),
        (
            {"title": "T", "date": "2024-13-01T00:00:00Z"},
            "rest_invalid_param",
            {"date": "Invalid date."},
        ),
        (
            {"title": "T", "date": "1970-01-01T00:00:00Z"},
            "rest_invalid_param",
            {"date": "Invalid date."},
        ),
        (
            {"title": "T", "date": "2024-01-01T00:00:00+0100"},
            "rest_invalid_param",
            {"date": "Invalid date."},
        ),
    ],
    ids=[
        "missing-title",
        "null-title",
        "integer-title",
        "array-title",
        "empty-title",
        "long-title",
        "object-content",
        "date-words",
        "date-month-13",
        "date-epoch-zero",
        "date-offset-without-colon",
    ],
)
def test_create_invalid_params(
    app: App, editor: User, body: dict[str, Any], code: str, params: Any
) -> None:
    response = call(app, "POST", NOTES, editor, json=body)
    assert response.status == 400
    assert response.data["code"] == code
    assert response.data["data"]["params"] == params
    assert call(app, "GET", NOTES).headers["X-SVC-Total"] == "0"


def test_read_one(seeded: App) -> None:
    response = call(seeded, "GET", f"{NOTES}/3")
    assert response.status == 200
    assert response.data == note(3, "Cherry jam", "Cherries and sugar", "2024-01-05T10:00:00")
    assert response.links == links(3)


@pytest.mark.parametrize(
    "note_id", ["999", "0", "99999999999999999999999"], ids=["unknown", "zero", "huge"]
)
def test_read_unknown_id_is_404(seeded: App, note_id: str) -> None:
    response = call(seeded, "GET", f"{NOTES}/{note_id}")
    assert response.status == 404
    assert response.data == {
        "code": "rest_note_invalid_id",
        "message": "Invalid note ID.",
        "data": {"status": 404},
    }


# -- the list ----------------------------------------------------------------------------------


def test_list_default_order_headers_and_item_links(seeded: App) -> None:
    response = call(seeded, "GET", NOTES)
    assert ids(response) == [3, 5, 1, 4, 2]
    assert response.headers["X-SVC-Total"] == "5"
    assert response.headers["X-SVC-TotalPages"] == "1"
    assert response.data[0] == {
        **note(3, "Cherry jam", "Cherries and sugar", "2024-01-05T10:00:00"),
        "_links": links(3),
    }
    assert "Link" not in response.headers


def test_empty_list(app: App) -> None:
    response = call(app, "GET", NOTES, query={"page": "7"})
    assert response.status == 200
    assert response.data == []
    assert (response.headers["X-SVC-Total"], response.headers["X-SVC-TotalPages"]) == ("0", "0")


def test_a_start_window_of_an_empty_list_has_no_links(app: App) -> None:
    # Found by schemathesis: the window's Link header was deleted even when there was none.
    response = call(app, "GET", NOTES, query={"start": "0", "per_page": "1"})
    assert response.status == 200
    assert response.data == []
    assert (response.headers["X-SVC-Total"], response.headers["X-SVC-TotalPages"]) == ("0", "0")
    assert "Link" not in response.headers


@pytest.mark.parametrize(
    ("query", "expected", "pages"),
    [
        ({"per_page": "2"}, [3, 5], "3"),
        ({"per_page": "2", "page": "2"}, [1, 4], "3"),
        ({"per_page": "2", "page": "3"}, [2], "3"),
        ({"start": "1", "limit": "2"}, [5, 1], "3"),
        ({"start": "4", "limit": "2"}, [2], "3"),
        ({"start": "5", "limit": "2"}, [], "3"),
        ({"start": "0", "limit": "3", "page": "9", "per_page": "1"}, [3, 5, 1], "2"),
        ({"start": "2"}, [1, 4, 2], "1"),
        ({"limit": "2", "page": "2"}, [1, 4], "3"),
        ({"per_page": 2, "page": 2}, [1, 4], "3"),
    ],
    ids=[
        "first-page",
        "middle-page",
        "last-page",
        "start-limit",
        "start-limit-tail",
        "start-past-end",
        "start-limit-win",
        "start-with-per-page",
        "limit-with-page",
        "integer-params",
    ],
)
def test_paging(seeded: App, query: dict[str, Any], expected: list[int], pages: str) -> None:
    response = call(seeded, "GET", NOTES, query=query)
    assert ids(response) == expected
    assert response.headers["X-SVC-Total"] == "5"
    assert response.headers["X-SVC-TotalPages"] == pages


@pytest.mark.parametrize(
    "query", [{"page": "4", "per_page": "2"}, {"page": "2"}], ids=["past-last", "one-page"]
)
def test_page_out_of_range(seeded: App, query: dict[str, str]) -> None:
    response = call(seeded, "GET", NOTES, query=query)
    assert response.status == 400
    assert response.data == {
        "code": "rest_invalid_page_number",
        "message": "The page number requested is larger than the number of pages available.",
        "data": {"status": 400},
    }


def test_page_links(seeded: App) -> None:
    query = {"per_page": "2", "page": "2", "filter": '[{"property":"title","value":"E"}]'}
    response = call(seeded, "GET", NOTES, query=query)
    assert ids(response) == [1, 4]
    encoded = "filter=%5B%7B%22property%22%3A%22title%22%2C%22value%22%3A%22E%22%7D%5D"
    assert response.headers.get_list("Link") == [
        f'<{ROOT}{NOTES}?per_page=2&page=1&{encoded}>; rel="prev"',
        f'<{ROOT}{NOTES}?per_page=2&page=3&{encoded}>; rel="next"',
    ]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"sort": '[{"property":"title","direction":"ASC"}]'}, [2, 1, 3, 4, 5]),
        ({"sort": '[{"property":"title","direction":"desc"}]'}, [5, 4, 3, 1, 2]),
        ({"sort": '[{"property":"date"}]'}, [2, 4, 1, 5, 3]),
        ({"sort": '{"property":"date","direction":"DESC"}'}, [3, 5, 1, 4, 2]),
        ({"sort": '[{"property":"id","direction":"DESC"}]'}, [5, 4, 3, 2, 1]),
        (
            {"sort": '[{"property":"author"},{"property":"title","direction":"DESC"}]'},
            [5, 4, 3, 1, 2],
        ),
        ({"sort": "title"}, [2, 1, 3, 4, 5]),
        ({"sort": "title", "dir": "DESC"}, [5, 4, 3, 1, 2]),
        ({"sort": "[]"}, [3, 5, 1, 4, 2]),
        ({"sort": '[{"property":"title","direction":"ASC"}]', "start": "1", "limit": "2"}, [1, 3]),
    ],
    ids=[
        "title-asc-case-insensitive",
        "title-desc-lower-direction",
        "date-default-asc",
        "single-object",
        "id-desc",
        "two-sorters",
        "simple-mode",
        "simple-mode-dir",
        "empty",
        "sorted-window",
    ],
)
def test_sort(seeded: App, query: dict[str, str], expected: list[int]) -> None:
    assert ids(call(seeded, "GET", NOTES, query=query)) == expected


def test_sort_as_decoded_list(seeded: App) -> None:
    query = {"sort": [{"property": "title", "direction": "DESC"}]}
    assert ids(call(seeded, "GET", NOTES, query=query)) == [5, 4, 3, 1, 2]


@pytest.mark.parametrize(
    ("query", "expected", "total"),
    [
        ({"filter": '[{"property":"title","value":"AN"}]'}, [1], "1"),
        ({"filter": '[{"property":"content","value":"flour"}]'}, [1, 4], "2"),
        (
            {
                "filter": '[{"property":"content","value":"flour"},'
                '{"property":"title","value":"date"}]'
            },
            [4],
            "1",
        ),
        ({"filter": '[{"property":"id","value":4}]'}, [4], "1"),
        ({"filter": '[{"property":"id","value":"4"}]'}, [4], "1"),
        ({"filter": '[{"property":"author","value":1}]'}, [3, 5, 1, 4, 2], "5"),
        ({"filter": '[{"property":"author","value":2}]'}, [], "0"),
        ({"filter": '[{"property":"title","value":"Date","operator":"="}]'}, [], "0"),
        ({"filter": '[{"property":"title","value":"Date loaf","operator":"="}]'}, [4], "1"),
        ({"filter": '[{"property":"title","value":"e","operator":"like"}]'}, [3, 5, 1, 4, 2], "5"),
        ({"filter": '[{"property":"title","value":"\'; DROP TABLE demo_notes; --"}]'}, [], "0"),
        ({"search": "FLOUR"}, [1, 4], "2"),
        ({"search": "cherr"}, [3], "1"),
        ({"search": "flour", "filter": '[{"property":"title","value":"bread"}]'}, [1], "1"),
        ({"filter": '[{"property":"content","value":"a"}]', "per_page": "2"}, [3, 1], "4"),
    ],
    ids=[
        "title-substring-any-case",
        "content-substring",
        "two-filters-and",
        "id-exact",
        "id-as-string",
        "author-exact",
        "author-none",
        "title-exact-miss",
        "title-exact-hit",
        "like-operator",
        "sql-in-value-is-text",
        "search-any-case",
        "search-title",
        "search-and-filter",
        "filtered-total-and-paging",
    ],
)
def test_filter_and_search(
    seeded: App, query: dict[str, str], expected: list[int], total: str
) -> None:
    response = call(seeded, "GET", NOTES, query=query)
    assert ids(response) == expected
    assert response.headers["X-SVC-Total"] == total
    assert call(seeded, "GET", NOTES).headers["X-SVC-Total"] == "5"


@pytest.mark.parametrize(
    ("query", "params"),
    [
        (
            {"per_page": "101"},
            {"per_page": "per_page must be between 1 (inclusive) and 100 (inclusive)"},
        ),
        (
            {"per_page": "0"},
            {"per_page": "per_page must be between 1 (inclusive) and 100 (inclusive)"},
        ),
        ({"page": "0"}, {"page": "page must be greater than or equal to 1"}),
        ({"page": "two"}, {"page": "page is not of type integer."}),
        ({"start": "-1"}, {"start": "start must be greater than or equal to 0"}),
        ({"limit": "500"}, {"limit": "limit must be between 1 (inclusive) and 100 (inclusive)"}),
        ({"dir": "up"}, {"dir": "dir is not one of ASC and DESC."}),
        ({"sort": "[{"}, {"sort": "sort is not valid JSON."}),
        ({"sort": "[1]"}, {"sort": "sort[0] must be an object with property and direction."}),
        ({"sort": "42"}, {"sort": "sort[0].property must be one of id, title, date, author."}),
        ({"sort": "content"}, {"sort": "sort[0].property must be one of id, title, date, author."}),
        (
            {"sort": "title; DROP TABLE demo_notes"},
            {"sort": "sort[0].property must be one of id, title, date, author."},
        ),
        (
            {"sort": '[{"property":"title","direction":"UP"}]'},
            {"sort": "sort[0].direction must be ASC or DESC."},
        ),
        (
            {"sort": "[" + "{},".join([""] * 12) + '{"property":"id"}]'},
            {"sort": "sort must not have more than 10 entries."},
        ),
        ({"filter": '"title"'}, {"filter": "filter must be a JSON array of objects."}),
        (
            {"filter": '[{"property":"date","value":"x"}]'},
            {"filter": "filter[0].property must be one of title, content, id, author."},
        ),
        (
            {"filter": '[{"property":"title","value":null}]'},
            {"filter": "filter[0].value must be a string."},
        ),
        (
            {"filter": '[{"property":"id","value":"four"}]'},
            {"filter": "filter[0].value must be an integer."},
        ),
        (
            {"filter": '[{"property":"id","value":true}]'},
            {"filter": "filter[0].value must be an integer."},
        ),
        (
            {"filter": '[{"property":"id","value":99999999999999999999}]'},
            {"filter": "filter[0].value must be an integer."},
        ),
        (
            {"filter": '[{"property":"title","value":"a","operator":">"}]'},
            {"filter": "filter[0].operator must be like or =."},
        ),
    ],
    ids=[
        "per-page-too-big",
        "per-page-zero",
        "page-zero",
        "page-not-integer",
        "start-negative",
        "limit-too-big",
        "dir-unknown",
        "sort-bad-json",
        "sort-not-object",
        "sort-number",
        "sort-unknown-property",
        "sort-injection",
        "sort-bad-direction",
        "sort-too-many",
        "filter-not-array",
        "filter-unknown-property",
        "filter-null-text",
        "filter-id-not-integer",
        "filter-id-boolean",
        "filter-id-too-big",
        "filter-unknown-operator",
    ],
)
def test_invalid_list_params(seeded: App, query: dict[str, str], params: dict[str, str]) -> None:
    response = call(seeded, "GET", NOTES, query=query)
    assert response.status == 400
    assert response.data["code"] == "rest_invalid_param"
    assert response.data["data"]["params"] == params


# -- update and delete -------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["PUT", "PATCH"])
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"title": "Rye bread"}, note(1, "Rye bread", "Flour and bananas", "2024-01-03T10:00:00")),
        ({"content": ""}, note(1, "Banana bread", "", "2024-01-03T10:00:00")),
        (
            {"date": "2024-02-01T08:00:00+01:00"},
            note(1, "Banana bread", "Flour and bananas", "2024-02-01T07:00:00"),
        ),
        ({"title": "T", "content": "C"}, note(1, "T", "C", "2024-01-03T10:00:00")),
        ({"content": None}, note(1, "Banana bread", "Flour and bananas", "2024-01-03T10:00:00")),
        ({}, note(1, "Banana bread", "Flour and bananas", "2024-01-03T10:00:00")),
        (
            {"id": 2, "author": 42, "date_gmt": "2000-01-01T00:00:00", "title": "Kept id"},
            note(1, "Kept id", "Flour and bananas", "2024-01-03T10:00:00"),
        ),
    ],
    ids=[
        "title-only",
        "empty-content",
        "date-only",
        "two-fields",
        "null-is-not-sent",
        "nothing",
        "readonly-ignored",
    ],
)
def test_update_changes_only_the_fields_sent(
    seeded: App, editor: User, method: str, body: dict[str, Any], expected: dict[str, Any]
) -> None:
    response = call(seeded, method, f"{NOTES}/1", editor, json=body)
    assert response.status == 200, response.data
    assert response.data == expected
    assert response.links == links(1)
    assert call(seeded, "GET", f"{NOTES}/1").data == expected
    assert call(seeded, "GET", f"{NOTES}/2").data == note(
        2, "apple pie", "Apples, butter", "2024-01-01T10:00:00"
    )


@pytest.mark.parametrize(
    ("body", "params"),
    [
        # The update arguments also take null (leave unchanged): WordPress names both types.
        ({"title": 5}, {"title": "title is not of type string,null."}),
        ({"title": ""}, {"title": "title must be at least 1 character long."}),
        ({"date": "soon"}, {"date": "Invalid date."}),
    ],
    ids=["title-type", "empty-title", "bad-date"],
)
def test_update_invalid_params(
    seeded: App, editor: User, body: dict[str, Any], params: dict[str, str]
) -> None:
    response = call(seeded, "PATCH", f"{NOTES}/1", editor, json=body)
    assert response.status == 400
    assert (response.data["code"], response.data["data"]["params"]) == (
        "rest_invalid_param",
        params,
    )
    assert call(seeded, "GET", f"{NOTES}/1").data["title"] == "Banana bread"


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize("as_editor", [True, False], ids=["editor", "anonymous"])
def test_write_to_missing_note_is_404(
    seeded: App, editor: User, method: str, as_editor: bool
) -> None:
    response = call(
        seeded, method, f"{NOTES}/999", editor if as_editor else None, json={"title": "x"}
    )
    assert response.status == 404
    assert response.data["code"] == "rest_note_invalid_id"


def test_delete(seeded: App, editor: User) -> None:
    response = call(seeded, "DELETE", f"{NOTES}/2", editor)
    assert response.status == 200
    assert response.data == {
        "deleted": True,
        "previous": note(2, "apple pie", "Apples, butter", "2024-01-01T10:00:00"),
    }
    assert call(seeded, "GET", f"{NOTES}/2").status == 404
    assert call(seeded, "DELETE", f"{NOTES}/2", editor).status == 404
    listed = call(seeded, "GET", NOTES)
    assert ids(listed) == [3, 5, 1, 4]
    assert listed.headers["X-SVC-Total"] == "4"


# -- permissions -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "route", "code"),
    [
        ("POST", NOTES, "rest_cannot_create"),
        ("PUT", f"{NOTES}/1", "rest_cannot_edit"),
        ("PATCH", f"{NOTES}/1", "rest_cannot_edit"),
        ("DELETE", f"{NOTES}/1", "rest_cannot_delete"),
    ],
    ids=["create", "put", "patch", "delete"],
)
@pytest.mark.parametrize(
    ("role", "status"),
    [(None, 401), ("subscriber", 403), ("author", 403)],
    ids=["anonymous", "subscriber", "author"],
)
def test_writes_need_edit_notes(
    seeded: App, method: str, route: str, code: str, role: str | None, status: int
) -> None:
    user = None if role is None else seeded.users.create(f"user-{role}", "pw", roles=(role,))
    response = call(seeded, method, route, user, json={"title": "Hijacked"})
    assert response.status == status
    assert response.data["code"] == code
    assert response.data["data"] == {"status": status}
    assert call(seeded, "GET", f"{NOTES}/1").data["title"] == "Banana bread"
    assert call(seeded, "GET", NOTES).headers["X-SVC-Total"] == "5"


@pytest.mark.parametrize("role", ["editor", "administrator"])
def test_writers(app: App, role: str) -> None:
    user = app.users.create("writer", "pw", roles=(role,))
    created = call(app, "POST", NOTES, user, json={"title": "Mine"})
    assert (created.status, created.data["author"]) == (201, user.id)
    assert call(app, "PATCH", f"{NOTES}/1", user, json={"content": "x"}).status == 200
    assert call(app, "DELETE", f"{NOTES}/1", user).status == 200


def test_reads_are_public(seeded: App) -> None:
    assert call(seeded, "GET", NOTES).status == 200
    assert call(seeded, "GET", f"{NOTES}/1").status == 200


# -- over HTTP ---------------------------------------------------------------------------------


async def _http_reads(app: App) -> list[httpx.Response]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=app.home) as client:
        return [
            await client.get(f"/svc-json{NOTES}", params={"per_page": "2", "page": "2"}),
            await client.get(f"/svc-json{NOTES}/3"),
            await client.get(f"/svc-json{NOTES}/999"),
            await client.get(f"/svc-json{NOTES}", params={"sort": "nope"}),
            await client.get("/", params={"rest_route": f"{NOTES}/4", "_fields": "id,title"}),
        ]


def test_http_reads_and_headers(seeded: App) -> None:
    listing, item, missing, invalid, fields = asyncio.run(_http_reads(seeded))
    assert listing.status_code == 200
    assert [entry["id"] for entry in listing.json()] == [1, 4]
    assert listing.json()[0]["_links"] == links(1)
    assert listing.headers["X-SVC-Total"] == "5"
    assert listing.headers["X-SVC-TotalPages"] == "3"
    assert listing.headers["Content-Type"] == "application/json; charset=UTF-8"
    assert "X-SVC-Total" in listing.headers["Access-Control-Expose-Headers"]
    assert listing.headers.get_list("Link") == [
        f'<{ROOT}/>; rel="https://api.w.org/"',
        f'<{ROOT}{NOTES}?per_page=2&page=1>; rel="prev"',
        f'<{ROOT}{NOTES}?per_page=2&page=3>; rel="next"',
    ]
    assert item.status_code == 200
    assert item.json() == {
        **note(3, "Cherry jam", "Cherries and sugar", "2024-01-05T10:00:00"),
        "_links": links(3),
    }
    assert missing.status_code == 404
    assert missing.json() == {
        "code": "rest_note_invalid_id",
        "message": "Invalid note ID.",
        "data": {"status": 404},
    }
    assert invalid.status_code == 400
    assert invalid.json()["data"]["params"] == {
        "sort": "sort[0].property must be one of id, title, date, author."
    }
    assert fields.status_code == 200
    assert fields.json() == {"id": 4, "title": "Date loaf"}


async def _http_anonymous_write(app: App) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=app.home) as client:
        return await client.post(f"/svc-json{NOTES}", json={"title": "Nope"})


def test_http_anonymous_write_is_401(app: App) -> None:
    response = asyncio.run(_http_anonymous_write(app))
    assert response.status_code == 401
    assert response.json()["code"] == "rest_cannot_create"


# -- ids of any length (issue 18): never an int() of thousands of digits -------------------------

_HUGE_ID = "9" * 4301  # one digit over Python's int-string conversion limit
_NOT_AN_INTEGER = {
    "code": "rest_invalid_param",
    "message": "Invalid parameter(s): id",
    "data": {
        "status": 400,
        "params": {"id": "id is not of type integer."},
        "details": {
            "id": {
                "code": "rest_invalid_type",
                "message": "id is not of type integer.",
                "data": {"param": "id"},
            }
        },
    },
}
_INVALID_ID = {
    "code": "rest_note_invalid_id",
    "message": "Invalid note ID.",
    "data": {"status": 404},
}


@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize(
    ("note_id", "status", "body"),
    [
        (_HUGE_ID, 400, _NOT_AN_INTEGER),
        ("0" * 5000 + "3", 400, _NOT_AN_INTEGER),
        ("9223372036854775808", 404, _INVALID_ID),
        ("9" * 4300, 404, _INVALID_ID),
    ],
    ids=["4301-digits", "5001-digits-leading-zeros", "above-max-id", "4300-digits"],
)
def test_http_an_id_of_any_length_is_a_4xx(
    seeded: App,
    client_for: Callable[..., SiteClient],
    method: str,
    note_id: str,
    status: int,
    body: dict[str, Any],
) -> None:
    client = client_for(seeded)
    response = client.request(method, f"/svc-json{NOTES}/{note_id}", json={"title": "New"})
    assert response.status_code == status
    assert response.json() == body


@pytest.mark.parametrize(
    "check", ["update_item_permissions_check", "delete_item_permissions_check"]
)
@pytest.mark.parametrize("note_id", [_HUGE_ID, "0" * 5000 + "9" * 20, "٣", "12x"])
def test_permission_checks_answer_404_for_an_unsanitised_id(
    seeded: App, editor: User, check: str, note_id: str
) -> None:
    # A permission check may see the raw URL capture (the Allow header asks every handler).
    request = Request("PUT", f"{NOTES}/{note_id}")
    request.url_params = {"id": note_id}
    request.user = editor
    outcome = getattr(NotesController(seeded), check)(request)
    assert isinstance(outcome, RestError)
    assert (outcome.code, outcome.message, outcome.data) == (
        "rest_note_invalid_id",
        "Invalid note ID.",
        {"status": 404},
    )


def test_permission_checks_read_leading_zeros_as_the_id(seeded: App, editor: User) -> None:
    request = Request("PUT", f"{NOTES}/0003")
    request.url_params = {"id": "0" * 5000 + "3"}
    request.user = editor
    assert NotesController(seeded).update_item_permissions_check(request) is True


# -- whitespace-only titles (issue 18) -----------------------------------------------------------

_TITLE_TOO_SHORT = {
    "code": "rest_invalid_param",
    "message": "Invalid parameter(s): title",
    "data": {
        "status": 400,
        "params": {"title": "title must be at least 1 character long."},
        "details": {
            "title": {
                "code": "rest_too_short",
                "message": "title must be at least 1 character long.",
                "data": {"param": "title"},
            }
        },
    },
}
_BLANK_TITLES = ["   ", "\t\n", "\u00a0\u3000"]


@pytest.mark.parametrize("title", _BLANK_TITLES, ids=["spaces", "tab-newline", "unicode-spaces"])
@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH"])
def test_http_a_blank_title_is_refused(
    seeded: App,
    client_for: Callable[..., SiteClient],
    editor: User,
    method: str,
    title: str,
) -> None:
    client = client_for(seeded)
    route = f"/svc-json{NOTES}" + ("" if method == "POST" else "/1")
    response = client.request(method, route, json={"title": title})
    assert response.status_code == 400
    assert response.json() == _TITLE_TOO_SHORT
    assert call(seeded, "GET", f"{NOTES}/1").data["title"] == "Banana bread"
    assert call(seeded, "GET", NOTES, query={"per_page": "100"}).status == 200
    assert len(call(seeded, "GET", NOTES, query={"per_page": "100"}).data) == len(SEED)


def test_a_title_with_text_is_stored_trimmed(app: App, editor: User) -> None:
    created = call(app, "POST", NOTES, editor, json={"title": "  a ", "content": "  kept  "})
    assert created.status == 201
    assert (created.data["title"], created.data["content"]) == ("a", "  kept  ")
    updated = call(app, "PATCH", f"{NOTES}/1", editor, json={"title": "\tNew title\n"})
    assert updated.status == 200
    assert updated.data["title"] == "New title"
    assert call(app, "GET", f"{NOTES}/1").data["title"] == "New title"
    untouched = call(app, "PUT", f"{NOTES}/1", editor, json={"content": "c"})
    assert untouched.data["title"] == "New title"


def test_sort_and_filter_say_what_a_query_string_may_hold(app: App) -> None:
    args = app.rest_get_server().get_routes()["/demo/v1/notes"][0]["args"]
    assert args["sort"]["description"] == (
        'A JSON array of sorters in one query value, e.g. [{"property":"title","direction":'
        '"DESC"}] (URL-encoded; direction ASC or DESC, ASC when left out; at most 10), one such'
        " JSON object, the same array in indexed keys"
        " (sort[0][property]=title&sort[0][direction]=DESC, as qs and WordPress's clients write"
        " it), or one property name with dir. Properties: id, title, date, author."
    )
    assert args["filter"]["description"] == (
        'A JSON array of filters in one query value, e.g. [{"property":"title","value":"abc"}]'
        " (URL-encoded; at most 10), one such JSON object, or the same array in indexed keys"
        " (filter[0][property]=title&filter[0][value]=abc). A substring match on title,"
        ' content ("operator":"=" for an exact one), exact on id, author.'
    )


@pytest.mark.parametrize(
    ("query", "status", "expected"),
    [
        ('sort=[{"property":"title","direction":"DESC"}]', 200, [5, 4, 3, 1, 2]),
        ('sort={"property":"title","direction":"DESC"}', 200, [5, 4, 3, 1, 2]),
        ("sort=title&dir=DESC", 200, [5, 4, 3, 1, 2]),
        ("sort[0][property]=title&sort[0][direction]=DESC", 200, [5, 4, 3, 1, 2]),
        (
            "sort[0][property]=author&sort[1][property]=title&sort[1][direction]=DESC",
            200,
            [5, 4, 3, 1, 2],
        ),
        ("sort[]=title", 400, None),
        ("sort[property]=title", 400, None),
        ('filter=[{"property":"title","value":"date"}]', 200, [4]),
        ('filter={"property":"title","value":"date"}', 200, [4]),
        ("filter[0][property]=title&filter[0][value]=date", 200, [4]),
        ("filter[property]=title&filter[value]=date", 400, None),
        ("filter=title", 400, None),
    ],
)
def test_http_sort_and_filter_forms(
    seeded: App,
    client_for: Callable[..., SiteClient],
    query: str,
    status: int,
    expected: list[int] | None,
) -> None:
    response = client_for(seeded).get(f"/svc-json{NOTES}?{query}")
    assert response.status_code == status, response.text
    if expected is not None:
        assert [note["id"] for note in response.json()] == expected
    else:
        assert response.json()["code"] == "rest_invalid_param"
