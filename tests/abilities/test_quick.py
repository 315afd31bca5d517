"""The quick acceptance test of abilities' schemas agrees with the full check: whatever it
accepts, ``validate_value`` accepts; a schema it does not cover gets no predicate."""

from __future__ import annotations

from typing import Any

import pytest

from svcrest.abilities.quick import quick_check
from svcrest.rest.schema import validate_value

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
VALUES: list[Any] = [
    None,
    True,
    0,
    1,
    -5,
    2.5,
    "",
    "x",
    "1",
    [],
    {},
    {"name": "n"},
    {"name": "n", "count": 3, "on": False, "nested": {"x": 4}},
    {"name": "n", "count": "3"},
    {"name": 5},
    {"count": 1},
    {"name": "n", "nested": {"x": "y"}},
    {"name": "n", "other": [1]},
    {"a": "b"},
    {"a": "b", "c": 1},
    {"c": 1},
]
SCHEMAS: list[dict[str, Any]] = [
    OBJECT,
    CLOSED,
    {"type": "string"},
    {"type": "integer"},
    {"type": "number"},
    {"type": "boolean"},
    {"type": "null"},
    {"type": "object"},
]


@pytest.mark.parametrize("schema", SCHEMAS)
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
        {"name": "n", "other": [1]},
    ]
    closed = quick_check(CLOSED)
    assert closed is not None
    assert [value for value in VALUES if closed(value)] == [{"a": "b"}]


@pytest.mark.parametrize(
    "schema",
    [
        {},
        {"type": "string", "minLength": 2},
        {"type": "string", "format": "email"},
        {"type": "integer", "minimum": 1},
        {"type": "string", "enum": ["a"]},
        {"type": ["string", "null"]},
        {"anyOf": [{"type": "string"}]},
        {"type": "array", "items": {"type": "string"}},
        {"type": "object", "properties": {"a": {"type": "string", "pattern": "^a"}}},
        {"type": "object", "patternProperties": {"^a": {"type": "string"}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "minProperties": 1},
    ],
)
def test_schemas_left_to_the_full_check(schema: dict[str, Any]) -> None:
    assert quick_check(schema) is None
