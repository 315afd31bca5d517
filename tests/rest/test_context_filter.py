"""``rest_filter_response_by_context``, ``rest_is_field_included`` and
``rest_get_endpoint_args_for_schema``: WordPress's cases (``tests/phpunit/tests/rest-api.php``,
``rest-controller.php``)."""

from __future__ import annotations

from typing import Any

import pytest

from svcrest import (
    rest_filter_response_by_context,
    rest_get_endpoint_args_for_schema,
    rest_is_field_included,
)

DRAFT4 = "http://json-schema.org/draft-04/schema#"


def _obj(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"$schema": DRAFT4, "type": "object", "properties": properties, **extra}


def _s(*contexts: str, type: Any = "string") -> dict[str, Any]:
    return {"type": type, "context": list(contexts)}


_ANY_OF = [
    {"properties": {"a": _s("view"), "b": _s("edit")}},
    {"properties": {"a": _s("edit", type="integer"), "b": _s("view", type="integer")}},
]
_ARRAY_OBJECT = {
    "$schema": DRAFT4,
    "type": ["array", "object"],
    "properties": {"a": _s("view"), "b": _s("view")},
    "items": {"type": "object", "context": ["edit"], "properties": {"a": _s("view")}},
}

# (id, schema, data, expected in the view context)
CASES: list[tuple[str, dict[str, Any], Any, Any]] = [
    (
        "default",
        _obj({"first": _s("view", "edit"), "second": _s("edit")}),
        {"first": "a", "second": "b"},
        {"first": "a"},
    ),
    (
        "keeps missing context",
        _obj({"first": _s("view", "edit"), "second": {"type": "string"}}),
        {"first": "a", "second": "b"},
        {"first": "a", "second": "b"},
    ),
    (
        "removes empty context",
        _obj({"first": _s("view", "edit"), "second": _s()}),
        {"first": "a", "second": "b"},
        {"first": "a"},
    ),
    (
        "nested properties",
        _obj(
            {
                "parent": {
                    "type": "object",
                    "context": ["view", "edit"],
                    "properties": {"child": _s("view", "edit"), "hidden": _s("edit")},
                }
            }
        ),
        {"parent": {"child": "hi", "hidden": "there"}},
        {"parent": {"child": "hi"}},
    ),
    (
        "grand child properties",
        _obj(
            {
                "parent": {
                    "type": "object",
                    "context": ["view", "edit"],
                    "properties": {
                        "child": {
                            "type": "object",
                            "context": ["view", "edit"],
                            "properties": {"grand": _s("view", "edit"), "hidden": _s("edit")},
                        }
                    },
                }
            }
        ),
        {"parent": {"child": {"grand": "hi"}}},
        {"parent": {"child": {"grand": "hi"}}},
    ),
    (
        "array",
        _obj(
            {
                "arr": {
                    "type": "array",
                    "context": ["view", "edit"],
                    "items": {
                        "type": "object",
                        "context": ["view", "edit"],
                        "properties": {"visible": _s("view", "edit"), "hidden": _s("edit")},
                    },
                }
            }
        ),
        {"arr": [{"visible": "hi", "hidden": "there"}]},
        {"arr": [{"visible": "hi"}]},
    ),
    (
        "additional properties",
        _obj(
            {
                "additional": {
                    "type": "object",
                    "context": ["view", "edit"],
                    "properties": {"a": _s("view", "edit"), "b": _s("edit")},
                    "additionalProperties": _s("edit"),
                }
            }
        ),
        {"additional": {"a": "1", "b": "2", "c": "3"}},
        {"additional": {"a": "1"}},
    ),
    (
        "pattern properties",
        _obj(
            {"a": _s("view", "edit")},
            patternProperties={"[0-9]": _s("view", "edit"), "c.*": _s("edit")},
            additionalProperties=_s("edit"),
        ),
        {"a": "1", "b": "2", "0": "3", "ca": "4"},
        {"a": "1", "0": "3"},
    ),
    (
        "multiple types object",
        _obj(
            {
                "multi": {
                    "type": ["object", "string"],
                    "context": ["view", "edit"],
                    "properties": {"a": _s("view", "edit"), "b": _s("edit")},
                }
            }
        ),
        {"multi": {"a": "1", "b": "2"}},
        {"multi": {"a": "1"}},
    ),
    (
        "multiple types array",
        _obj(
            {
                "multi": {
                    "type": ["array", "string"],
                    "context": ["view", "edit"],
                    "items": {
                        "type": "object",
                        "context": ["view", "edit"],
                        "properties": {"visible": _s("view", "edit"), "hidden": _s("edit")},
                    },
                }
            }
        ),
        {"multi": [{"visible": "1", "hidden": "2"}]},
        {"multi": [{"visible": "1"}]},
    ),
    (
        "does not traverse missing context",
        _obj(
            {
                "parent": {
                    "type": "object",
                    "context": ["view", "edit"],
                    "properties": {
                        "child": {
                            "type": "object",
                            "properties": {"grand": _s("view", "edit"), "hidden": _s("edit")},
                        }
                    },
                }
            }
        ),
        {"parent": {"child": {"grand": "hi", "hidden": "there"}}},
        {"parent": {"child": {"grand": "hi", "hidden": "there"}}},
    ),
    (
        "object with no matching properties",
        _obj({"a": _s("edit"), "b": _s("edit")}),
        {"a": "hi", "b": "hello"},
        {},
    ),
    (
        "array whose type does not match",
        _obj({"arr": {"type": "array", "context": ["view"], "items": _s("edit")}}),
        {"arr": ["foo", "bar", "baz"]},
        {"arr": []},
    ),
    (
        "array and object type passed object",
        _ARRAY_OBJECT,
        {"a": "foo", "b": "bar"},
        {"a": "foo", "b": "bar"},
    ),
    (
        "array and object type passed array",
        _ARRAY_OBJECT,
        [{"a": "foo", "b": "bar"}, {"a": "foo", "b": "bar"}],
        [],
    ),
    (
        "anyOf applies the correct schema",
        {"$schema": DRAFT4, "type": "object", "anyOf": _ANY_OF},
        {"a": 1, "b": 2},
        {"b": 2},
    ),
    (
        "anyOf is ignored if no valid schema is found",
        {"$schema": DRAFT4, "type": "object", "anyOf": _ANY_OF},
        {"a": True, "b": False},
        {"a": True, "b": False},
    ),
    (
        "oneOf applies the correct schema",
        {"$schema": DRAFT4, "type": "object", "oneOf": _ANY_OF},
        {"a": 1, "b": 2},
        {"b": 2},
    ),
    (
        "oneOf ignored if no valid schema was found",
        {"$schema": DRAFT4, "type": "object", "oneOf": _ANY_OF},
        {"a": True, "b": False},
        {"a": True, "b": False},
    ),
    (
        "oneOf combined with base",
        _obj({"c": _s("edit", type="integer")}, oneOf=_ANY_OF),
        {"a": 1, "b": 2, "c": 3},
        {"b": 2},
    ),
]


@pytest.mark.parametrize(
    ("schema", "data", "expected"), [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
def test_rest_filter_response_by_context(schema: dict[str, Any], data: Any, expected: Any) -> None:
    assert rest_filter_response_by_context(data, schema, "view") == expected


def test_filtering_leaves_the_data_unchanged() -> None:
    data = {"parent": {"child": "hi", "hidden": "there"}}
    schema = CASES[3][1]
    assert rest_filter_response_by_context(data, schema, "view") == {"parent": {"child": "hi"}}
    assert data == {"parent": {"child": "hi", "hidden": "there"}}


def test_the_edit_context_keeps_what_view_drops() -> None:
    schema = _obj({"first": _s("view", "edit"), "second": _s("edit")})
    data = {"first": "a", "second": "b"}
    assert rest_filter_response_by_context(data, schema, "edit") == data
    assert rest_filter_response_by_context(data, schema, "embed") == {}


FIELDS = ["id", "title", "content.raw", "custom.property"]


@pytest.mark.parametrize(
    ("field", "included"),
    [
        ("id", True),
        ("title", True),
        ("title.raw", True),
        ("title.rendered", True),
        ("content", True),
        ("content.raw", True),
        ("custom.property", True),
        ("content.rendered", False),
        ("type", False),
        ("meta", False),
        ("meta.value", False),
    ],
)
def test_rest_is_field_included(field: str, included: bool) -> None:
    assert rest_is_field_included(field, FIELDS) is included


def test_a_prefix_that_is_not_a_parent_is_not_included() -> None:
    assert rest_is_field_included("tit", ["title"]) is False
    assert rest_is_field_included("titles", ["title"]) is False


SCHEMA: dict[str, Any] = {
    "title": "book",
    "type": "object",
    "properties": {
        "id": {"type": "integer", "readonly": True, "context": ["view", "edit"]},
        "title": {
            "type": "string",
            "description": "The title.",
            "required": True,
            "minLength": 1,
            "context": ["view", "edit"],
        },
        "status": {"type": "string", "enum": ["draft", "publish"], "default": "draft"},
        "pages": {
            "type": "integer",
            "required": True,
            "arg_options": {"required": False, "default": 1, "minimum": 1},
            "ignored_prop": "x",
        },
    },
}


def test_endpoint_args_for_creation() -> None:
    assert rest_get_endpoint_args_for_schema(SCHEMA) == {
        "title": {
            "required": True,
            "description": "The title.",
            "type": "string",
            "minLength": 1,
        },
        "status": {"default": "draft", "type": "string", "enum": ["draft", "publish"]},
        "pages": {"required": False, "type": "integer", "default": 1, "minimum": 1},
    }
    assert rest_get_endpoint_args_for_schema(SCHEMA, "POST") == rest_get_endpoint_args_for_schema(
        SCHEMA
    )


def test_endpoint_args_for_editing_keep_no_default_or_required() -> None:
    assert rest_get_endpoint_args_for_schema(SCHEMA, "POST, PUT, PATCH") == {
        "title": {"description": "The title.", "type": "string", "minLength": 1},
        "status": {"type": "string", "enum": ["draft", "publish"]},
        "pages": {"type": "integer", "minimum": 1},
    }


def test_endpoint_args_of_a_schema_without_properties() -> None:
    assert rest_get_endpoint_args_for_schema({"title": "foo", "type": "string"}) == {}
