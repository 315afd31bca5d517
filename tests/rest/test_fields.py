"""``_fields`` filtering (``svcrest.rest.fields``), as WordPress's
``rest_filter_response_fields``."""

from __future__ import annotations

from typing import Any

import pytest

from svcrest.rest.fields import filter_response_fields, links_wanted, parse_fields

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
