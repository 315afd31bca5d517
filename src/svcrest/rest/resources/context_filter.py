"""A resource's answer shaped by its schema: WordPress's ``rest_filter_response_by_context``
(keep what the request's ``context`` may see) and ``rest_is_field_included`` (``_fields``).

The rule lives here: a property whose schema names contexts is kept only in those contexts;
a property whose schema names none is kept, and what is inside it is not looked at.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from svcrest.http.errors import RestError
from svcrest.rest.schema.checks import matching_schema
from svcrest.rest.schema.common import compile_pattern

__all__ = ["rest_filter_response_by_context", "rest_is_field_included"]


def rest_is_field_included(field: str, fields: Iterable[str]) -> bool:
    """Whether ``field`` is among ``fields`` (a parsed ``_fields`` list), as WordPress's
    ``rest_is_field_included``: listed itself, the parent of a listed field (``meta`` when
    ``meta.color`` is listed), or inside a listed field (``title.raw`` when ``title`` is)."""
    parent = field + "."
    for accepted in fields:
        if accepted == field or accepted.startswith(parent) or field.startswith(accepted + "."):
            return True
    return False


def _combined(data: Any, schema: Mapping[str, Any], context: str) -> Any:
    """``data`` filtered by the ``anyOf`` / ``oneOf`` sub-schema it matches (none matching, or
    several for ``oneOf``: left as it is)."""
    for keyword in ("anyOf", "oneOf"):
        if keyword in schema:
            matched = matching_schema(data, schema, "", keyword)
            if not isinstance(matched, RestError):
                data = rest_filter_response_by_context(data, matched, context)
    return data


def _kinds(schema: Mapping[str, Any], data: Any) -> tuple[bool, bool] | None:
    """``(is_array, is_object)`` for ``data`` under ``schema``; None when the schema says
    neither (no ``type`` and no ``properties``)."""
    if "type" in schema:
        type_name = schema["type"]
    elif "properties" in schema:
        type_name = "object"  # as WordPress: a schema that forgot its type
    else:
        return None
    names = type_name if isinstance(type_name, list | tuple) else [type_name]
    is_array, is_object = "array" in names, "object" in names
    if is_array and is_object:
        is_array = isinstance(data, list)
        is_object = not is_array
    return is_array, is_object


def _property_schema(schema: Mapping[str, Any], key: str) -> Any:
    """The schema of property ``key``: ``properties``, then the first matching
    ``patternProperties``, then an ``additionalProperties`` schema."""
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and key in properties:
        return properties[key]
    patterns = schema.get("patternProperties")
    if isinstance(patterns, Mapping):
        for pattern, sub in patterns.items():
            compiled = compile_pattern(str(pattern))
            if compiled is not None and compiled.search(key):
                return sub
    additional = schema.get("additionalProperties")
    return additional if isinstance(additional, Mapping) else None


def rest_filter_response_by_context(data: Any, schema: Mapping[str, Any], context: str) -> Any:
    """``data`` with what ``context`` (``view``, ``edit``, ``embed``…) may not see removed,
    as WordPress's ``rest_filter_response_by_context``: an object's properties by
    ``properties``, ``patternProperties`` and ``additionalProperties``, an array's items by
    ``items`` (items of a context left out empty the array), recursively, after the
    ``anyOf`` / ``oneOf`` sub-schema the value matches. A new value; ``data`` is not changed."""
    if "anyOf" in schema or "oneOf" in schema:
        data = _combined(data, schema, context)
    if not isinstance(data, dict | list):
        return data
    kinds = _kinds(schema, data)
    if kinds is None:
        return data
    is_array, is_object = kinds
    if is_array:
        items = schema.get("items")
        check = items if isinstance(items, Mapping) else {}
        return _filtered_items(data, check, context)
    if not is_object or not isinstance(data, dict):
        return data
    result: dict[str, Any] = {}
    for key, value in data.items():
        check = _property_schema(schema, str(key))
        contexts = check.get("context") if isinstance(check, Mapping) else None
        if contexts is None:
            result[key] = value
        elif context in contexts:
            result[key] = (
                rest_filter_response_by_context(value, check, context)
                if isinstance(value, dict | list)
                else value
            )
    return result


def _filtered_items(data: Any, check: Mapping[str, Any], context: str) -> Any:
    """An array's items: all filtered by ``check``, or none when ``check`` leaves out the
    context (every item shares the one schema)."""
    contexts = check.get("context")
    if contexts is None:
        return data
    if context not in contexts:
        return [] if isinstance(data, list) else {}
    items = data if isinstance(data, list) else list(data.values())
    filtered = [
        rest_filter_response_by_context(item, check, context)
        if isinstance(item, dict | list)
        else item
        for item in items
    ]
    return filtered if isinstance(data, list) else dict(zip(data, filtered, strict=True))
