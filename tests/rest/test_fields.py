"""``_fields`` filtering (``svcrest.rest.fields``), as WordPress's
``rest_filter_response_fields``."""

from __future__ import annotations

from typing import Any, cast

import pytest

from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.rest.defaults import ServerView, rest_filter_response_fields
from svcrest.rest.fields import filter_response_fields, links_wanted, parse_fields

#: WordPress's tests pass no server (the filter reads none).
SERVER = cast(ServerView, None)

ITEM = {"id": 7, "title": {"raw": "R", "rendered": "<p>R</p>"}, "meta": {"a": 1, "b": 2}}


@pytest.mark.parametrize(
    ("fields", "parsed"),
    [
        ("id,title", ["id", "title"]),
        (" id , , title.raw ", ["id", "title.raw"]),
        (["id", " meta.a "], ["id", "meta.a"]),
        ({"0": "id", "k": "title"}, ["id", "title"]),
        ("", []),
        (5, ["5"]),
    ],
)
def test_parse_fields(fields: Any, parsed: list[str]) -> None:
    assert parse_fields(fields) == parsed


@pytest.mark.parametrize(
    ("fields", "filtered"),
    [
        ("id", {"id": 7}),
        ("id,title.raw", {"id": 7, "title": {"raw": "R"}}),
        ("meta.b,meta", {"meta": {"a": 1, "b": 2}}),
        ("meta,meta.b", {"meta": {"a": 1, "b": 2}}),  # the whole parent is in already
        ("title.raw.deeper", {"title": {"raw": "R"}}),  # inside a value that is no object
        ("missing", {}),
        ("", ITEM),
    ],
)
def test_filter_an_item(fields: str, filtered: dict[str, Any]) -> None:
    assert filter_response_fields(ITEM, fields) == filtered


def test_filter_each_item_of_a_list() -> None:
    assert filter_response_fields([ITEM, {"id": 8}, "text"], "id") == [{"id": 7}, {"id": 8}, "text"]


@pytest.mark.parametrize(
    ("fields", "wanted"),
    [
        ("", True),
        ("id", False),
        ("id,_links", True),
        ("_embedded.author", True),
        ("_links.self", True),
        ("links", False),
    ],
)
def test_links_wanted(fields: str, wanted: bool) -> None:
    assert links_wanted(fields) is wanted


# WordPress's own cases of ``rest_filter_response_fields`` (tests/phpunit/tests/rest-api.php,
# ``test_rest_filter_response_fields_*``), through the site's default ``rest_post_dispatch``
# filter with the request's query ``_fields``.
ABC = {"a": 0, "b": 1, "c": 2}
A_TO_F = {"a": 0, "b": 1, "c": 2, "d": 3, "e": 4, "f": 5}
META = {"meta": {"key1": 1, "key2": 2}}


@pytest.mark.parametrize(
    ("data", "fields", "expected"),
    [
        pytest.param({"a": True}, None, {"a": True}, id="no_request_filter"),
        pytest.param(ABC, "b", {"b": 1}, id="single_field_filter"),
        pytest.param(A_TO_F, "b,c,e", {"b": 1, "c": 2, "e": 4}, id="multi_field_filter"),
        pytest.param(
            A_TO_F, ["b", "c", "e"], {"b": 1, "c": 2, "e": 4}, id="multi_field_filter_array"
        ),
        pytest.param(
            [ABC, {"a": 3, "b": 4, "c": 5}, {"a": 6, "b": 7, "c": 8}],
            "b,c",
            [{"b": 1, "c": 2}, {"b": 4, "c": 5}, {"b": 7, "c": 8}],
            id="numeric_array",
        ),
        pytest.param(
            {"a": 0, "b": {"1": 1, "2": 2}, "c": 3, "d": {"4": 4, "5": 5}},
            "b.1,c,d.5",
            {"b": {"1": 1}, "c": 3, "d": {"5": 5}},
            id="nested_field_filter",
        ),
        pytest.param(
            {
                "field": {
                    "a": {"i": "value i", "ii": "value ii"},
                    "b": {"iii": "value iii", "iv": "value iv"},
                }
            },
            "field.a.i,field.b.iv",
            {"field": {"a": {"i": "value i"}, "b": {"iv": "value iv"}}},
            id="deeply_nested_field_filter",
        ),
        pytest.param(META, "meta", META, id="top_level_key"),
        pytest.param(META, "meta,meta.key1", META, id="child_after_parent"),
        pytest.param(META, "meta.key1,meta.key2", META, id="include_all_specified_siblings"),
    ],
)
def test_wordpress_rest_filter_response_fields_cases(data: Any, fields: Any, expected: Any) -> None:
    query = {} if fields is None else {"_fields": fields}
    request = Request("GET", "/test-ns/test", query=query)
    filtered = rest_filter_response_fields(Response(data), SERVER, request)
    assert filtered.data == expected
    assert list(filtered.data) == list(expected)  # in the answer's own order, as WordPress


def test_an_error_answer_is_never_filtered() -> None:
    error = Response.from_error(RestError("rest_no_route", "No route.", {"status": 404}))
    request = Request("GET", "/test-ns/test", query={"_fields": "code"})
    assert rest_filter_response_fields(error, SERVER, request).data == {
        "code": "rest_no_route",
        "message": "No route.",
        "data": {"status": 404},
    }
