"""A quick acceptance test for the plain schemas abilities usually declare, prepared once per
schema at registration.

``quick_check(schema)`` gives a predicate that answers True only for values the schema
certainly accepts (an object of the declared plain properties, a string, a boolean, an
integer…), or None for a schema it does not cover. A value the predicate does not accept is
checked by :func:`svcrest.rest.schema.validate_value` as always, so every error keeps
WordPress's code and message; the predicate only spares the full walk of a valid value.
PERF: the full check of ``{"name": "…", "description": "…"}`` against an object schema of
two strings is ~88 ``isinstance`` calls; the predicate is a dict walk.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["quick_check"]

Predicate = Callable[[Any], bool]

#: The keywords a covered schema may hold: the type, the object keywords handled here, and
#: annotations no check reads. Any other keyword (bounds, ``enum``, ``format``, ``anyOf``…)
#: leaves the schema to the full check.
_NEUTRAL = frozenset(
    {"type", "description", "title", "default", "readonly", "context", "$schema", "examples"}
)
_OBJECT_KEYS = _NEUTRAL | {"properties", "required", "additionalProperties"}
_MAX_DEPTH = 8


def _is_str(value: Any) -> bool:
    return type(value) is str


def _is_bool(value: Any) -> bool:
    return type(value) is bool


def _is_int(value: Any) -> bool:
    return type(value) is int


def _is_none(value: Any) -> bool:
    return value is None


_PLAIN: dict[str, Predicate] = {
    "string": _is_str,
    "boolean": _is_bool,
    "integer": _is_int,
    "number": _is_int,
    "null": _is_none,
}


def _property_required(sub: Any) -> bool | None:
    """A property's draft-3 ``required``: True, False, or None when it is not a boolean."""
    flag = sub.get("required", False)
    return flag if isinstance(flag, bool) else None


def _required_names(schema: Mapping[str, Any], properties: Mapping[str, Any]) -> tuple[str, ...]:
    required = schema.get("required")
    if isinstance(required, list | tuple):
        return tuple(name for name in required if isinstance(name, str))
    return tuple(name for name, sub in properties.items() if sub.get("required") is True)


def _property_checks(properties: Mapping[str, Any], depth: int) -> dict[str, Predicate] | None:
    checks: dict[str, Predicate] = {}
    for name, sub in properties.items():
        if not isinstance(sub, Mapping) or _property_required(sub) is None:
            return None
        check = _check(sub, depth + 1, required_allowed=True)
        if check is None:
            return None
        checks[name] = check
    return checks


def _object_check(schema: Mapping[str, Any], depth: int) -> Predicate | None:
    if not _OBJECT_KEYS.issuperset(schema):
        return None
    properties = schema.get("properties", {})
    additional = schema.get("additionalProperties", True)
    if not isinstance(properties, Mapping) or additional not in (True, False):
        return None
    checks = _property_checks(properties, depth)
    if checks is None:
        return None
    required = _required_names(schema, properties)
    closed = additional is False

    def accepts(value: Any) -> bool:
        if type(value) is not dict:
            return False
        for name in required:
            if name not in value:
                return False
        for name, item in value.items():
            check = checks.get(name)
            if check is None:
                if closed:
                    return False
            elif not check(item):
                return False
        return True

    return accepts


def _check(schema: Mapping[str, Any], depth: int, *, required_allowed: bool) -> Predicate | None:
    if depth > _MAX_DEPTH:
        return None
    kind = schema.get("type")
    if kind == "object":
        return _object_check(schema, depth)
    plain = _PLAIN.get(kind) if isinstance(kind, str) else None
    keys = _NEUTRAL | {"required"} if required_allowed else _NEUTRAL
    if plain is None or not keys.issuperset(schema):
        return None
    return plain


def quick_check(schema: Mapping[str, Any]) -> Predicate | None:
    """A predicate True only for values ``schema`` certainly accepts, or None when the schema
    holds a keyword it does not cover (see the module's documentation)."""
    if not schema:
        return None
    return _check(schema, 0, required_allowed=False)
