"""Quick tests of the plain schemas arguments and abilities usually declare, compiled once
per schema (when a route or an ability is registered), never per value.

``quick_check(schema)`` gives a predicate that answers True only for values the schema
certainly accepts (a string within its lengths, matching its ``pattern`` and ``enum``; an
integer of 64 bits or a string of digits within ``minimum`` / ``maximum``; a boolean; an
object of the declared plain properties…), or None for a schema holding a keyword it does
not cover. A value the predicate does not accept is checked by :func:`validate_value` as
always, so every error keeps WordPress's code and message: the predicate only spares the
full walk of a valid value.

``quick_sanitizer(schema)`` gives a function answering what :func:`sanitize_value` answers
for the values it is sure of (a string for a ``string``, ``"42"`` → 42 for an ``integer``,
``"true"`` → True for a ``boolean``…) and :data:`UNSURE` for any other value (sanitise it
with :func:`sanitize_value`), or None for a schema it does not cover.

PERF: the full check of ``{"name": "…", "description": "…"}`` against an object schema of
two strings is ~88 ``isinstance`` calls; the predicate is a dict walk. The full check of a
URL's ``"42"`` against ``{"type": "integer"}`` reads the type twice, resolves combinations
and runs the numeric regular expression twice (check and sanitise); here it is
``isdigit`` and ``int``. Checking an ability run route's ``name`` (a pattern) this way, in
a plan of the route's arguments prepared at registration: 128,727 → 95,982 instructions an
internal GET of the route (``bench/mcp_call.py``); the types tested inline
(:func:`accepted_type`, :func:`unchanged_type`) and the usual forms without a closure:
95,982 → 90,672.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Final

from svcrest.rest.schema.common import INT64_MAX, INT64_MIN, TYPES, compile_pattern, is_real

__all__ = [
    "UNSURE",
    "Predicate",
    "Sanitizer",
    "accepted_type",
    "quick_check",
    "quick_sanitizer",
    "unchanged_type",
]

Predicate = Callable[[Any], bool]
Sanitizer = Callable[[Any], Any]


class _Unsure:
    """The type of :data:`UNSURE`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSURE"


#: What a quick sanitiser answers for a value it is not sure of.
UNSURE: Final = _Unsure()

#: Keys no check reads: annotations, and an argument definition's own keys. A covered
#: schema holds these, ``type``, ``required`` and the keywords its type's compiler handles;
#: any other keyword (``format``, ``anyOf``, ``multipleOf``, ``exclusiveMinimum``…) leaves
#: the schema to the full check.
_NEUTRAL: Final = frozenset(
    {
        "type", "description", "title", "default", "readonly", "readOnly", "writeOnly",
        "context", "$schema", "examples", "example", "deprecated", "validate_callback",
        "sanitize_callback", "arg_options", "in", "show_in_rest", "embeddable", "single",
        "required",
    }
)  # fmt: skip
_STRING_KEYS: Final = _NEUTRAL | {"minLength", "maxLength", "pattern", "enum"}
_NUMBER_KEYS: Final = _NEUTRAL | {"minimum", "maximum", "enum"}
_OBJECT_KEYS: Final = _NEUTRAL | {"properties", "additionalProperties"}
_MAX_DEPTH: Final = 8
#: The longest string of digits read as an integer here (PHP's ``is_numeric`` digits; a
#: longer one gets the full check).
_MAX_DIGITS: Final = 18
#: The query-string forms of a boolean read here, and what sanitising gives for each.
_BOOLEAN_STRINGS: Final = {"true": True, "1": True, "false": False, "0": False}


def _is_str(value: Any) -> bool:
    return type(value) is str


def _is_bool(value: Any) -> bool:
    return type(value) is bool or (type(value) is str and value in _BOOLEAN_STRINGS)


def _is_none(value: Any) -> bool:
    return value is None


def _digits(value: str) -> int | None:
    """The integer a string of ASCII digits stands for (None for any other string)."""
    if value.isdigit() and value.isascii() and len(value) <= _MAX_DIGITS:
        return int(value)
    return None


def _integer(value: Any) -> int | None:
    """The integer an ``integer`` argument certainly reads ``value`` as, else None."""
    kind = type(value)
    if kind is int:
        return value if INT64_MIN <= value <= INT64_MAX else None
    return _digits(value) if kind is str else None


def _number(value: Any) -> int | float | None:
    """The number a ``number`` argument certainly reads ``value`` as, else None."""
    kind = type(value)
    if kind is int or (kind is float and math.isfinite(value)):
        return value  # type: ignore[no-any-return]
    return _digits(value) if kind is str else None


def _enum(schema: Mapping[str, Any], keep: Callable[[Any], bool]) -> frozenset[Any] | None:
    """The ``enum`` choices ``keep`` selects (the ones a plain value can equal), None when
    the schema has no effective ``enum``."""
    enum = schema.get("enum")
    if not isinstance(enum, list | tuple) or not enum:
        return None
    return frozenset(option for option in enum if keep(option))


def _real(schema: Mapping[str, Any], key: str) -> int | float | None:
    value = schema.get(key)
    return value if is_real(value) else None  # a bound that is not a number is ignored


def _string_check(schema: Mapping[str, Any]) -> Predicate | None:
    if not _STRING_KEYS.issuperset(schema):
        return None
    shortest, longest = _real(schema, "minLength"), _real(schema, "maxLength")
    pattern = schema.get("pattern")
    search = None
    if pattern is not None:
        compiled = compile_pattern(pattern) if isinstance(pattern, str) else None
        if compiled is None:
            return None
        search = compiled.search
    choices = _enum(schema, _is_str)
    if shortest is None and longest is None and choices is None:  # PERF: the usual forms
        if search is None:
            return _is_str
        found = search
        return lambda value: type(value) is str and found(value) is not None

    def accepts(value: Any) -> bool:
        return (
            type(value) is str
            and (shortest is None or len(value) >= shortest)
            and (longest is None or len(value) <= longest)
            and (search is None or search(value) is not None)
            and (choices is None or value in choices)
        )

    return accepts


def _is_integer(value: Any) -> bool:
    kind = type(value)
    if kind is int:
        return INT64_MIN <= value <= INT64_MAX  # type: ignore[no-any-return]
    return kind is str and value.isdigit() and value.isascii() and len(value) <= _MAX_DIGITS


def _is_number(value: Any) -> bool:
    return _number(value) is not None


def _number_check(schema: Mapping[str, Any], read: Callable[[Any], Any]) -> Predicate | None:
    if not _NUMBER_KEYS.issuperset(schema):
        return None
    low, high = _real(schema, "minimum"), _real(schema, "maximum")
    choices = _enum(schema, is_real)
    if low is None and high is None and choices is None:  # PERF: one call, no closure
        return _is_integer if read is _integer else _is_number

    def accepts(value: Any) -> bool:
        number = read(value)
        return (
            number is not None
            and (low is None or number >= low)
            and (high is None or number <= high)
            and (choices is None or number in choices)
        )

    return accepts


def _plain_check(schema: Mapping[str, Any], predicate: Predicate) -> Predicate | None:
    return predicate if _NEUTRAL.issuperset(schema) else None


def _required_names(schema: Mapping[str, Any], properties: Mapping[str, Any]) -> tuple[str, ...]:
    required = schema.get("required")
    if isinstance(required, list | tuple):
        return tuple(name for name in required if isinstance(name, str))
    return tuple(name for name, sub in properties.items() if sub.get("required") is True)


def _property_checks(properties: Mapping[str, Any], depth: int) -> dict[str, Predicate] | None:
    checks: dict[str, Predicate] = {}
    for name, sub in properties.items():
        if not isinstance(sub, Mapping):
            return None
        check = _check(sub, depth + 1)
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
    if not required and not closed and all(check is _is_str for check in checks.values()):
        return _strings_check(frozenset(checks))
    return _properties_check(checks, required, closed)


def _properties_check(
    checks: dict[str, Predicate], required: tuple[str, ...], closed: bool
) -> Predicate:
    """The predicate of an object: its ``required`` names held, each property it holds
    accepted by its check, and (``closed``) no other."""

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
            # PERF: a string property holding a string accepted without a call.
            elif not (check is _is_str and type(item) is str) and not check(item):
                return False
        return True

    return accepts


def _strings_check(names: frozenset[str]) -> Predicate:
    """The predicate of an open object whose properties ``names`` are plain strings, none
    required: each of them it holds is a string. PERF: the usual output schema of an
    ability, a set look-up an item and no call (an MCP ``tools/call`` 154,849 → 154,266
    instructions, bench/mcp_call.py)."""

    def accepts(value: Any) -> bool:
        if type(value) is not dict:
            return False
        for name, item in value.items():  # noqa: SIM110 - PERF: not all() over a generator
            if type(item) is not str and name in names:
                return False
        return True

    return accepts


def _check(schema: Mapping[str, Any], depth: int) -> Predicate | None:
    kind = schema.get("type")
    if depth > _MAX_DEPTH or not isinstance(kind, str):
        return None
    required = schema.get("required", False)
    if kind == "object":
        return _object_check(schema, depth) if isinstance(required, bool | list | tuple) else None
    if not isinstance(required, bool):
        return None
    if kind == "string":
        return _string_check(schema)
    if kind == "integer":
        return _number_check(schema, _integer)
    if kind == "number":
        return _number_check(schema, _number)
    if kind == "boolean":
        return _plain_check(schema, _is_bool)
    return _plain_check(schema, _is_none) if kind == "null" else None


def quick_check(schema: Mapping[str, Any]) -> Predicate | None:
    """A predicate True only for values ``schema`` certainly accepts, or None when the schema
    holds a keyword it does not cover (see the module's documentation)."""
    if not schema:
        return None
    return _check(schema, 0)


def _same(value: Any) -> Any:
    return value


def _string_as_is(value: Any) -> Any:
    return value if type(value) is str else UNSURE


def _as_integer(value: Any) -> Any:
    kind = type(value)
    if kind is int:
        return value
    if kind is str and value.isdigit() and value.isascii() and len(value) <= _MAX_DIGITS:
        return int(value)
    return UNSURE


def _as_float(value: Any) -> Any:
    return value if type(value) is float and math.isfinite(value) else UNSURE


def _as_boolean(value: Any) -> Any:
    if type(value) is bool:
        return value
    return _BOOLEAN_STRINGS.get(value, UNSURE) if type(value) is str else UNSURE


_SANITIZERS: Final[dict[str, Sanitizer]] = {
    "string": _string_as_is,
    "integer": _as_integer,
    "number": _as_float,
    "boolean": _as_boolean,
}


#: The types whose values sanitising leaves as they are, by schema type.
_UNCHANGED: Final[dict[str, type]] = {"string": str, "integer": int, "boolean": bool}
#: The types every value of which a plain schema of the type accepts, by schema type (not
#: ``int`` for an ``integer``: one past 64 bits is refused).
_ACCEPTED: Final[dict[str, type]] = {"string": str, "boolean": bool}


def accepted_type(schema: Mapping[str, Any]) -> type | None:
    """The Python type every value of which ``schema`` accepts (``str`` for a plain
    ``string``, ``bool`` for ``boolean``), else None: a test the caller makes inline,
    without a call (PERF). None for an ``integer``: an ``int`` past 64 bits is refused."""
    kind = schema.get("type")
    if not isinstance(kind, str) or kind not in _ACCEPTED or not _NEUTRAL.issuperset(schema):
        return None
    return _ACCEPTED[kind] if isinstance(schema.get("required", False), bool) else None


def unchanged_type(schema: Mapping[str, Any]) -> type | None:
    """The Python type whose values sanitising against ``schema`` leaves as they are (the
    very object), else None: a test the caller makes inline, without a call (PERF)."""
    if "anyOf" in schema or "oneOf" in schema or "format" in schema:
        return None
    kind = schema.get("type")
    return _UNCHANGED.get(kind) if isinstance(kind, str) else None


def quick_sanitizer(schema: Mapping[str, Any]) -> Sanitizer | None:
    """A function answering what sanitising a value against ``schema`` gives when it is
    sure, else :data:`UNSURE`; None for a schema it does not cover (combinations, a list of
    types, a ``format``, arrays and objects)."""
    if "anyOf" in schema or "oneOf" in schema or "format" in schema:
        return None
    kind = schema.get("type")
    if kind is None or (isinstance(kind, str) and kind not in TYPES):
        return _same  # no type WordPress knows: the value is left as it is
    return _SANITIZERS.get(kind) if isinstance(kind, str) else None
