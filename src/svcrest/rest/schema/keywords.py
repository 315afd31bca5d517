"""What an argument definition may say, and the notices of one that says something else.

WordPress warns (``_doing_it_wrong``) when a schema's ``type`` is not one of JSON Schema's
built-in types, and silently ignores a keyword it does not know: ``"minimun": 1`` leaves the
argument without a lower bound. Both are told here, at registration, as notices: a ``type``
that is not built in, and a keyword that is not one of JSON Schema's (draft 4 to 2020-12) nor
WordPress's but is close to one ("did you mean ``minimum``?"). A keyword close to none is
left alone: definitions may carry data of their own.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any, Final

from svcrest.rest.schema.common import TYPES, join_list

__all__ = ["KNOWN_KEYWORDS", "closest_keyword", "definition_notices", "type_notice"]

#: JSON Schema's keywords, draft 4 to 2020-12, and those OpenAPI adds.
_JSON_SCHEMA: Final = frozenset(
    {
        "$schema", "$id", "id", "$ref", "$comment", "$defs", "definitions", "$anchor",
        "$dynamicRef", "$dynamicAnchor", "$vocabulary", "title", "description", "default",
        "examples", "example", "deprecated", "readOnly", "writeOnly", "type", "enum", "const",
        "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
        "maxLength", "minLength", "pattern", "format", "maxItems", "minItems", "uniqueItems",
        "maxContains", "minContains", "contains", "items", "prefixItems", "additionalItems",
        "unevaluatedItems", "maxProperties", "minProperties", "required", "properties",
        "patternProperties", "additionalProperties", "unevaluatedProperties",
        "propertyNames", "dependencies", "dependentRequired", "dependentSchemas", "allOf",
        "anyOf", "oneOf", "not", "if", "then", "else", "contentEncoding", "contentMediaType",
        "contentSchema", "nullable", "discriminator", "xml", "externalDocs",
    }
)  # fmt: skip

#: WordPress's own keys of an argument definition or schema property.
_WORDPRESS: Final = frozenset(
    {
        "validate_callback", "sanitize_callback", "arg_options", "context", "readonly",
        "required", "show_in_rest", "embeddable", "single", "in",
    }
)  # fmt: skip

KNOWN_KEYWORDS: Final = _JSON_SCHEMA | _WORDPRESS

#: How alike a key and a known keyword must be to be told as a slip (difflib's ratio):
#: ``minimun`` / ``minimum`` is 0.86, ``maxlength`` / ``maxLength`` 0.89.
_CUTOFF: Final = 0.8

#: Keywords whose value is a schema, a list of schemas, or a map of names to schemas.
_SCHEMA_VALUED: Final = ("items", "additionalProperties", "additionalItems", "not", "contains")
_SCHEMA_LISTS: Final = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_MAPS: Final = ("properties", "patternProperties")


def closest_keyword(key: str, known: frozenset[str] = KNOWN_KEYWORDS) -> str | None:
    """The known keyword ``key`` is most likely a slip of (case and spelling), else None."""
    for candidate in known:
        if candidate.lower() == key.lower():
            return candidate
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=_CUTOFF)
    return close[0] if close else None


def type_notice(param: str, value: Any) -> str | None:
    """WordPress's notice for a ``type`` that is not a built-in type (one name or a list),
    else None."""
    names = value if isinstance(value, list) else [value]
    unknown = [name for name in names if name not in TYPES]
    if not unknown:
        return None
    return (
        f'The "type" schema keyword for {param} can only be one of the built-in types:'
        f" {join_list(list(TYPES))} (not {unknown[0]!r})."
    )


def _children(param: str, schema: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """The schemas inside ``schema``, each with the name WordPress gives it in messages
    (``tags[0]``-like ``param[...]`` forms)."""
    for key in _SCHEMA_VALUED:
        if isinstance(schema.get(key), Mapping):
            yield f"{param}[{key}]" if key != "items" else f"{param}[]", schema[key]
    for key in _SCHEMA_LISTS:
        value = schema.get(key)
        if isinstance(value, list):
            yield from ((f"{param}[{key}][{index}]", item) for index, item in enumerate(value))
    items = schema.get("items")
    if isinstance(items, list):  # draft 4 tuples
        yield from ((f"{param}[{index}]", item) for index, item in enumerate(items))
    for key in _SCHEMA_MAPS:
        value = schema.get(key)
        if isinstance(value, Mapping):
            yield from ((f"{param}[{name}]", item) for name, item in value.items())


def definition_notices(param: str, definition: Any, depth: int = 0) -> list[str]:
    """The notices of one argument definition (and the schemas inside it): a ``type`` that
    is not built in, a keyword that looks like a slip of a known one."""
    if not isinstance(definition, Mapping) or depth > 32:
        return []
    notices: list[str] = []
    if "type" in definition:
        notice = type_notice(param, definition["type"])
        if notice is not None:
            notices.append(notice)
    for key in definition:
        if not isinstance(key, str) or key in KNOWN_KEYWORDS or key.startswith("x-"):
            continue
        close = closest_keyword(key)
        if close is not None:
            notices.append(
                f"The argument definition of {param} has the unknown keyword {key!r}, which"
                f" is ignored: did you mean {close!r}?"
            )
    for child, schema in _children(param, definition):
        notices.extend(definition_notices(child, schema, depth + 1))
    return notices
