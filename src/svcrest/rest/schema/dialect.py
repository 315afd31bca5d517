"""Argument and route schemas (WordPress's draft-04 dialect) as OpenAPI 3.1 Schema Objects.

WordPress schemas are JSON Schema draft 4 with extras; OpenAPI 3.1 speaks JSON Schema 2020-12.
:func:`to_openapi_schema` keeps every standard keyword and translates the rest:

- ``readonly: true`` → ``readOnly: true``; ``context``, ``$schema``, ``arg_options``,
  callbacks and unknown keys are dropped;
- a property's boolean ``required: true`` (draft 3/WordPress) joins its parent's
  ``required`` list; an argument's own boolean ``required`` is the caller's business;
- boolean ``exclusiveMinimum``/``exclusiveMaximum`` (draft 4) become the numeric form;
- a list-valued ``items`` (draft 4 tuples) becomes ``prefixItems``; an array with neither
  gets ``items: {}`` (any value, as WordPress validates an array without ``items``), which
  client generators need to write a list type at all;
- ``date-time`` is WordPress's RFC 3339 shape with an optional offset. In what a client
  sends (``request=True``: parameters and request bodies) it stays ``format: date-time``:
  every RFC 3339 date-time is accepted (the server also reads the offset-less form), and
  Swagger UI offers a real date as its example. In what the server sends (responses) it is
  the ``pattern`` of what svcrest writes, with ``2024-05-01T09:30:00`` as its example,
  because JSON Schema's ``date-time`` requires the offset that WordPress's dates (``date`` in
  the site's timezone, ``date_gmt``) do not carry, and validators that check formats would
  refuse them (without the example, Swagger UI would show a string generated from the
  pattern, up to 100 digits of fraction);
- ``hex-color`` becomes a pattern; ``ip`` becomes ``ipv4`` or ``ipv6``; ``email``, ``uri``,
  ``uuid`` stay.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["DATE_TIME_EXAMPLE", "DATE_TIME_PATTERN", "HEX_COLOR_PATTERN", "to_openapi_schema"]

#: What ``format: date-time`` accepts (``rest_parse_date``): date, ``T``/``t``/space, time,
#: an optional fraction, then nothing, ``Z`` or ``±HH`` / ``±HH:MM`` (fields in range; a
#: pattern cannot know that February has no 30th, which the server refuses with a 400).
DATE_TIME_PATTERN: Final = (
    r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt ]([01][0-9]|2[0-3]):[0-5][0-9]:"
    r"[0-5][0-9](\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3])(:[0-5][0-9])?)?$"
)
#: The example of a date-time the server sends (WordPress's shape: no offset).
DATE_TIME_EXAMPLE: Final = "2024-05-01T09:30:00"
HEX_COLOR_PATTERN: Final = r"^#([0-9A-Fa-f]{3}){1,2}$"

#: Keywords copied as they are (values that are JSON already).
_PLAIN: Final = frozenset(
    {
        "type", "title", "description", "default", "enum", "const", "examples",
        "minimum", "maximum", "multipleOf", "minLength", "maxLength", "pattern",
        "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties",
        "readOnly", "writeOnly", "deprecated",
    }
)  # fmt: skip
_SUBSCHEMA_MAPS: Final = ("properties", "patternProperties")
_SUBSCHEMA_LISTS: Final = ("anyOf", "oneOf", "allOf")


def _format(schema: dict[str, Any], value: Any, request: bool) -> None:
    if value == "date-time" and request:
        schema["format"] = value
    elif value == "date-time":
        schema.setdefault("pattern", DATE_TIME_PATTERN)
        schema.setdefault("examples", [DATE_TIME_EXAMPLE])
    elif value == "hex-color":
        schema.setdefault("pattern", HEX_COLOR_PATTERN)
    elif value == "ip":
        schema["anyOf"] = [{"format": "ipv4"}, {"format": "ipv6"}]
    elif isinstance(value, str):
        schema["format"] = value


def _exclusive(schema: dict[str, Any], source: Mapping[str, Any]) -> None:
    """Draft 4's ``exclusiveMinimum: true`` beside ``minimum: m`` is ``exclusiveMinimum: m``."""
    for key, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        value = source.get(key)
        if isinstance(value, bool):
            if value and isinstance(source.get(bound), int | float):
                schema[key] = schema.pop(bound)
        elif isinstance(value, int | float):
            schema[key] = value


def _subschemas(schema: dict[str, Any], key: str, value: Any, request: bool) -> None:
    if key in _SUBSCHEMA_MAPS and isinstance(value, Mapping):
        schema[key] = {
            str(name): to_openapi_schema(sub, request=request)
            for name, sub in value.items()
            if isinstance(sub, Mapping)
        }
    elif key in _SUBSCHEMA_LISTS and isinstance(value, list | tuple):
        schema[key] = [
            to_openapi_schema(sub, request=request) for sub in value if isinstance(sub, Mapping)
        ]
    elif key == "items" and isinstance(value, Mapping):
        schema[key] = to_openapi_schema(value, request=request)
    elif key == "items" and isinstance(value, list | tuple):
        schema["prefixItems"] = [
            to_openapi_schema(sub, request=request) for sub in value if isinstance(sub, Mapping)
        ]
    elif key in ("additionalProperties", "not"):
        if isinstance(value, bool):
            schema[key] = value
        elif isinstance(value, Mapping):
            schema[key] = to_openapi_schema(value, request=request)


def _required(schema: dict[str, Any], source: Mapping[str, Any]) -> None:
    required: dict[str, None] = {}
    listed = source.get("required")
    if isinstance(listed, list | tuple):
        required.update(dict.fromkeys(str(name) for name in listed))
    properties = source.get("properties")
    if isinstance(properties, Mapping):
        for name, sub in properties.items():
            if isinstance(sub, Mapping) and sub.get("required") is True:
                required[str(name)] = None
    if required:
        schema["required"] = list(required)


_HANDLERS: Final[dict[str, Callable[[dict[str, Any], Mapping[str, Any], str], None]]] = {
    "exclusiveMinimum": lambda schema, source, key: None,  # after the loop: _exclusive
    "exclusiveMaximum": lambda schema, source, key: None,
    "readonly": lambda schema, source, key: (
        schema.__setitem__("readOnly", True) if source[key] is True else None
    ),
}


def to_openapi_schema(source: Mapping[str, Any], *, request: bool = False) -> dict[str, Any]:
    """``source`` (a WordPress argument definition or JSON Schema) as an OpenAPI 3.1 Schema
    Object; a new dict, ``source`` is not changed. ``request``: the schema of what a client
    sends (a parameter or a request body), not of an answer; only dates differ."""
    schema: dict[str, Any] = {}
    for key, value in source.items():
        if key in _PLAIN:
            if not callable(value):
                schema[key] = value
        elif key == "format":
            _format(schema, value, request)
        elif key in _HANDLERS:
            _HANDLERS[key](schema, source, key)
        else:
            _subschemas(schema, key, value, request)
    _exclusive(schema, source)
    _required(schema, source)
    if _is_array(schema) and "items" not in schema and "prefixItems" not in schema:
        schema["items"] = {}
    return schema


def _is_array(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "array" or (isinstance(kind, list) and "array" in kind)
