"""The quick tests compiled per schema (``svcrest.rest.schema.quick``) agree with the full
ones: whatever ``quick_check`` accepts, ``validate_value`` accepts; whatever
``quick_sanitizer`` answers (but ``UNSURE``), ``sanitize_value`` answers, of the same type;
a schema holding a keyword they do not cover gets neither."""

from __future__ import annotations

import math
from typing import Any

import pytest

from svcrest.rest.schema import (
    UNSURE,
    quick_check,
    quick_sanitizer,
    sanitize_value,
    validate_value,
)

OBJECT = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "count": {"type": "integer"},
        "on": {"type": "boolean"},
        "nested": {"type": "object", "properties": {"x": {"type": "number"}}},
    },
    "required": ["name"],
}
CLOSED = {
    "type": "object",
    "properties": {"a": {"type": "string", "required": True}},
    "additionalProperties": False,
}
#: An ability's usual output schema: an open object of plain strings, none required.
STRINGS = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "description": {"type": "string"}},
}
VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -5,
    2,
    7,
    10,
    11,
    2**70,
    2.5,
    0.0,
    1.0,
    -0.5,
    math.inf,
    math.nan,
    "",
    "x",
    "abc",
    "ABC",
    "a-b",
    "abcdefghijk",
    "1",
    "0",
    "5",
    "05",
    "10",
    "11",
    "-3",
    "+3",
    " 3",
    "3 ",
    "2.5",
    "1e3",
    "٣",
    "9" * 19,
    "9" * 5000,
    "true",
    "false",
    "TRUE",
    "yes",
    "red",
    "green",
    "blue",
    [],
    ["a"],
    {},
    {"name": "n"},
    {"name": "n", "count": 3, "on": False, "nested": {"x": 4}},
    {"name": "n", "count": "3"},
    {"name": "n", "count": "x"},
    {"name": 5},
    {"count": 1},
    {"name": "n", "nested": {"x": "y"}},
    {"name": "n", "other": [1]},
    {"a": "b"},
    {"a": "b", "c": 1},
    {"c": 1},
]
#: Schemas the quick check covers.
SCHEMAS: list[dict[str, Any]] = [
    OBJECT,
    CLOSED,
    STRINGS,
    {"type": "string"},
    {"type": "integer"},
    {"type": "number"},
    {"type": "boolean"},
    {"type": "null"},
    {"type": "object"},
    {"type": "string", "minLength": 2},
    {"type": "string", "maxLength": 3},
    {"type": "string", "minLength": 1.5, "maxLength": 3.5},
    {"type": "string", "pattern": "^[a-z]+$"},
    {"type": "string", "pattern": "b"},
    {"type": "string", "enum": ["red", "green", 1]},
    {"type": "string", "enum": ["x"], "minLength": 1, "pattern": "x"},
    {"type": "integer", "minimum": 1},
    {"type": "integer", "minimum": 1, "maximum": 10},
    {"type": "integer", "maximum": 2.5},
    {"type": "integer", "enum": [1, 2.0, True, "5"]},
    {"type": "number", "minimum": 0, "maximum": 1},
    {"type": "number", "enum": [0.5, 2, 10]},
    {"type": "string", "required": True, "description": "an argument", "default": "x"},
    {"type": "integer", "validate_callback": print, "sanitize_callback": print},
    {"type": "object", "properties": {"a": {"type": "string", "pattern": "^a"}}},
    {"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}}},
    {"type": "object", "properties": {"o": {"type": "object", "required": ["z"]}}},
    {"type": "object", "required": True, "properties": {"a": {"type": "string"}}},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=str)
def test_accepted_values_are_valid(schema: dict[str, Any]) -> None:
    check = quick_check(schema)
    assert check is not None
    accepted = [value for value in VALUES if check(value)]
    assert accepted  # each schema accepts some value here
    for value in accepted:
        assert validate_value(value, schema, "output") is None, value


def test_the_values_it_accepts() -> None:
    check = quick_check(OBJECT)
    assert check is not None
    assert [value for value in VALUES if check(value)] == [
        {"name": "n"},
        {"name": "n", "count": 3, "on": False, "nested": {"x": 4}},
        {"name": "n", "count": "3"},  # a string of digits is an integer (WordPress)
        {"name": "n", "other": [1]},
    ]
    closed = quick_check(CLOSED)
    assert closed is not None
    assert [value for value in VALUES if closed(value)] == [{"a": "b"}]


def test_an_object_of_strings_is_decided_by_the_quick_check() -> None:
    check = quick_check(STRINGS)
    assert check is not None
    values = [*VALUES, {"name": "n", "description": "d", "c": [1]}, {"description": None}]
    # Every dict is decided as the full check decides it (``""`` and ``[]``, empty objects
    # to WordPress, are left to the full check).
    assert [value for value in values if check(value)] == [
        value
        for value in values
        if type(value) is dict and validate_value(value, STRINGS, "output") is None
    ]
    # Declared strings, anything else left open; a property not a string refused.
    assert [value for value in values if check(value)] == [
        {},
        {"name": "n"},
        {"name": "n", "count": 3, "on": False, "nested": {"x": 4}},
        {"name": "n", "count": "3"},
        {"name": "n", "count": "x"},
        {"count": 1},
        {"name": "n", "nested": {"x": "y"}},
        {"name": "n", "other": [1]},
        {"a": "b"},
        {"a": "b", "c": 1},
        {"c": 1},
        {"name": "n", "description": "d", "c": [1]},
    ]


@pytest.mark.parametrize(
    ("schema", "accepted"),
    [
        (
            {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 3},
            ["abc", "yes", "red"],
        ),
        ({"type": "string", "enum": ["red", "green", 1]}, ["red", "green"]),
        (
            {"type": "integer", "minimum": 1, "maximum": 10},
            [1, 2, 7, 10, "1", "5", "05", "10"],
        ),
        ({"type": "integer", "enum": [1, 2.0, True, "5"]}, [1, 2, "1"]),
        ({"type": "number", "minimum": 0, "maximum": 1}, [0, 1, 0.0, 1.0, "1", "0"]),
        (
            {"type": "boolean"},
            [True, False, "1", "0", "true", "false"],
        ),
    ],
    ids=["string", "string-enum", "integer", "integer-enum", "number", "boolean"],
)
def test_what_plain_schemas_accept(schema: dict[str, Any], accepted: list[Any]) -> None:
    check = quick_check(schema)
    assert check is not None
    assert [value for value in VALUES if check(value)] == accepted


@pytest.mark.parametrize(
    "schema",
    [
        {},
        {"type": "string", "format": "email"},
        {"type": "string", "pattern": "("},
        {"type": "string", "pattern": 5},
        {"type": "integer", "exclusiveMinimum": 1},
        {"type": "integer", "multipleOf": 2},
        {"type": "number", "exclusiveMaximum": True, "maximum": 1},
        {"type": "boolean", "enum": [True]},
        {"type": "string", "required": ["a"]},
        {"type": ["string", "null"]},
        {"anyOf": [{"type": "string"}]},
        {"type": "array", "items": {"type": "string"}},
        {"type": "object", "properties": {"a": {"type": "string", "format": "uri"}}},
        {"type": "object", "patternProperties": {"^a": {"type": "string"}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "minProperties": 1},
        {"type": "object", "properties": {"a": "not a schema"}},
        {"type": "string", "unknown": 1},
    ],
    ids=str,
)
def test_schemas_left_to_the_full_check(schema: dict[str, Any]) -> None:
    assert quick_check(schema) is None


SANITIZED: list[dict[str, Any]] = [
    {"type": "string"},
    {"type": "string", "pattern": "^a", "enum": ["abc"]},
    {"type": "integer"},
    {"type": "integer", "minimum": 3},
    {"type": "number"},
    {"type": "boolean"},
    {"description": "no type"},
    {"type": "mystery"},
]


@pytest.mark.parametrize("schema", SANITIZED, ids=str)
def test_quick_sanitising_answers_what_sanitising_answers(schema: dict[str, Any]) -> None:
    sanitizer = quick_sanitizer(schema)
    assert sanitizer is not None
    sure = 0
    for value in VALUES:
        if validate_value(value, schema, "a") is not None:
            continue  # only a valid value is sanitised
        quick = sanitizer(value)
        if quick is UNSURE:
            continue
        sure += 1
        full = sanitize_value(value, schema, "a")
        assert type(quick) is type(full), value
        assert quick == full or (quick != quick and full != full), value
    assert sure


@pytest.mark.parametrize(
    ("schema", "value", "sanitized"),
    [
        ({"type": "integer"}, "42", 42),
        ({"type": "integer"}, "007", 7),
        ({"type": "integer"}, 5, 5),
        ({"type": "boolean"}, "0", False),
        ({"type": "boolean"}, "true", True),
        ({"type": "number"}, 2.5, 2.5),
        ({"type": "string"}, "x", "x"),
    ],
)
def test_what_it_is_sure_of(schema: dict[str, Any], value: Any, sanitized: Any) -> None:
    sanitizer = quick_sanitizer(schema)
    assert sanitizer is not None
    assert sanitizer(value) == sanitized
    assert type(sanitizer(value)) is type(sanitized)


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"type": "integer"}, " 7"),
        ({"type": "integer"}, "+7"),
        ({"type": "integer"}, "-7"),
        ({"type": "integer"}, "9" * 19),
        ({"type": "integer"}, "٣"),
        ({"type": "integer"}, True),
        ({"type": "number"}, 2),
        ({"type": "number"}, math.inf),
        ({"type": "boolean"}, "TRUE"),
        ({"type": "string"}, 5),
    ],
)
def test_what_it_leaves_to_sanitising(schema: dict[str, Any], value: Any) -> None:
    sanitizer = quick_sanitizer(schema)
    assert sanitizer is not None
    assert sanitizer(value) is UNSURE


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "format": "email"},
        {"format": "uri"},
        {"type": ["integer", "null"]},
        {"anyOf": [{"type": "integer"}]},
        {"type": "integer", "oneOf": [{"minimum": 1}]},
        {"type": "array"},
        {"type": "object"},
        {"type": "null"},
    ],
    ids=str,
)
def test_schemas_left_to_full_sanitising(schema: dict[str, Any]) -> None:
    assert quick_sanitizer(schema) is None
