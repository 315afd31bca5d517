"""``rest_get_endpoint_args_for_schema`` (``svcrest.rest.resources.endpoint_args``): a
handler's ``args`` from a resource's schema, as WordPress makes them."""

from __future__ import annotations

from typing import Any

import pytest

from svcrest import rest_get_endpoint_args_for_schema
from svcrest.rest.resources.endpoint_args import CREATABLE, EDITABLE


def check(value: Any, request: Any, param: str) -> bool:
    return True


SCHEMA: dict[str, Any] = {
    "title": "note",
    "type": "object",
    "properties": {
        "id": {"type": "integer", "readonly": True, "context": ["view"]},
        "title": {
            "type": "string",
            "description": "The title.",
            "context": ["view", "edit"],
            "default": "Untitled",
            "required": True,
            "maxLength": 200,
            "unknown_key": 1,
        },
        "tags": {
            "type": "array",
            "items": {"type": "string"},
            "arg_options": {"validate_callback": check, "required": True, "default": []},
        },
        "broken": "not a schema",
    },
}


def test_creation_keeps_defaults_and_required() -> None:
    assert rest_get_endpoint_args_for_schema(SCHEMA) == {
        "title": {
            "default": "Untitled",
            "required": True,
            "description": "The title.",
            "type": "string",
            "maxLength": 200,
        },
        "tags": {
            "type": "array",
            "items": {"type": "string"},
            "validate_callback": check,
            "required": True,
            "default": [],
        },
    }


@pytest.mark.parametrize("method", [EDITABLE, "PUT", "patch", "POST, PUT"])
def test_an_edit_drops_defaults_and_required(method: str) -> None:
    assert rest_get_endpoint_args_for_schema(SCHEMA, method) == {
        "title": {"description": "The title.", "type": "string", "maxLength": 200},
        "tags": {"type": "array", "items": {"type": "string"}, "validate_callback": check},
    }


def test_the_method_strings_and_their_spellings() -> None:
    assert (CREATABLE, EDITABLE) == ("POST", "POST, PUT, PATCH")
    assert rest_get_endpoint_args_for_schema(SCHEMA, " post ")["title"]["required"] is True


def test_a_schema_without_properties_gives_no_args() -> None:
    assert rest_get_endpoint_args_for_schema({"type": "object"}) == {}
    assert rest_get_endpoint_args_for_schema({"properties": ["a"]}) == {}
