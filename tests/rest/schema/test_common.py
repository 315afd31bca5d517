"""The schema checks' shared pieces (``svcrest.rest.schema.common``): WordPress's type tests,
coercions and message helpers."""

from __future__ import annotations

from typing import Any

import pytest

from svcrest.rest.schema.common import (
    HELP_KEYWORDS,
    TYPES,
    as_dict,
    as_list,
    best_type,
    compile_pattern,
    describe,
    format_count,
    format_number,
    has_unique_items,
    is_array,
    is_boolean,
    is_integer,
    is_object,
    is_real,
    join_list,
    param_error,
    plural,
    search_pattern,
    to_number,
    type_error,
    values_equal,
)


def test_the_errors_name_their_parameter() -> None:
    assert param_error("rest_x", "Bad.", "tags", position=2).to_dict() == {
        "code": "rest_x",
        "message": "Bad.",
        "data": {"param": "tags", "position": 2},
    }
    assert type_error("count", "integer").to_dict() == {
        "code": "rest_invalid_type",
        "message": "count is not of type integer.",
        "data": {"param": "count"},
    }


def test_the_type_names_and_help_keywords() -> None:
    assert TYPES == ("array", "object", "string", "number", "integer", "boolean", "null")
    assert {"type", "enum", "context", "readonly"} <= HELP_KEYWORDS
    assert "validate_callback" not in HELP_KEYWORDS
    assert "required" not in HELP_KEYWORDS  # always first, from the definition's own value


def test_patterns_are_searched_not_anchored() -> None:
    assert search_pattern("b+", "abbc") is True
    assert search_pattern("^b", "abc") is False
    assert search_pattern("(", "(") is False  # an invalid pattern matches nothing
    assert search_pattern(5, "5") is False
    assert compile_pattern("(") is None
    assert compile_pattern("a") is compile_pattern("a")  # remembered


@pytest.mark.parametrize(
    ("value", "number"),
    [
        (5, 5),
        (1.5, 1.5),
        ("5", 5),
        (" 7 ", 7),
        ("-1.5e2", -150.0),
        (".5", 0.5),
        ("1e999", None),
        (float("inf"), None),
        ("0x1A", None),
        ("", None),
        (True, None),
        (None, None),
    ],
)
def test_to_number_is_phps_is_numeric(value: Any, number: float | None) -> None:
    assert to_number(value) == number
    assert type(to_number(value)) is type(number)


@pytest.mark.parametrize(
    ("check", "value", "expected"),
    [
        (is_integer, "5", True),
        (is_integer, 5.0, True),
        (is_integer, "5.5", False),
        (is_integer, True, False),
        (is_boolean, "FALSE", True),
        (is_boolean, 1, True),
        (is_boolean, 2, False),
        (is_boolean, "yes", False),
        (is_array, "a,b", True),
        (is_array, [1], True),
        (is_array, {"a": 1}, False),
        (is_object, {}, True),
        (is_object, "", True),
        (is_object, [], True),
        (is_object, [1], False),
        (is_real, 1.0, True),
        (is_real, False, False),
    ],
)
def test_wordpress_type_tests(check: Any, value: Any, expected: bool) -> None:
    assert check(value) is expected


@pytest.mark.parametrize(
    ("value", "listed"),
    [
        ("a, b  c,,d", ["a", "b", "c", "d"]),
        (5, ["5"]),
        (True, ["1"]),
        (2.0, ["2"]),
        ((1, 2), [1, 2]),
        ({"x": 1, "y": 2}, [1, 2]),
        (None, None),
    ],
)
def test_as_list_is_wp_parse_list(value: Any, listed: list[Any] | None) -> None:
    assert as_list(value) == listed


def test_as_dict() -> None:
    assert as_dict({"a": 1}) == {"a": 1}
    assert as_dict("") == {}
    assert as_dict([1]) == {}


@pytest.mark.parametrize(
    ("items", "unique"),
    [
        ([1, 2, 3], True),
        ([1, 1.0], False),
        ([True, 1], True),
        (["a", "a"], False),
        ([{"a": 1, "b": 2}, {"b": 2, "a": 1}], False),
        ([[1], [1]], False),
        ([[1], [True]], True),
        ([], True),
    ],
)
def test_has_unique_items_compares_as_json(items: list[Any], unique: bool) -> None:
    assert has_unique_items(items) is unique


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        ("1", 1, False),
        ([1, {"a": 2}], [1.0, {"a": 2.0}], True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        (None, None, True),
    ],
)
def test_values_equal_is_rest_are_values_equal(left: Any, right: Any, equal: bool) -> None:
    assert values_equal(left, right) is equal


@pytest.mark.parametrize(
    ("value", "types", "chosen"),
    [
        ("", ["integer", "string"], "string"),
        ("5", ["integer", "string"], "integer"),
        ("x", ["integer", "boolean"], None),
        ("x", ["integer", "custom"], "custom"),  # WordPress lets an unknown type pass
        (None, ["null", "string"], "null"),
    ],
)
def test_best_type(value: Any, types: list[str], chosen: str | None) -> None:
    assert best_type(value, types) == chosen


def test_message_helpers() -> None:
    assert format_number(5.0) == "5"
    assert format_number(1.5) == "1.5"
    assert format_count(1000) == "1,000"
    assert format_count(2.5) == "2.5"
    assert plural(1, "item", "items") == "item"
    assert plural(0, "item", "items") == "items"
    assert join_list(["a"]) == "a"
    assert join_list(["a", "b"]) == "a and b"
    assert join_list(["a", "b", "c"]) == "a, b, and c"
    assert describe("text") == "text"
    assert describe(3.0) == "3"
    assert describe({"a": [1, None]}) == '{"a":[1,null]}'
