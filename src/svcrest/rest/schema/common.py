"""Shared pieces of the schema checks: WordPress-style type tests and coercions."""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeAlias, TypeGuard

from svcrest.constants import INT64_MAX, INT64_MIN
from svcrest.http.errors import RestError

__all__ = [
    "HELP_KEYWORDS",
    "INT64_MAX",
    "INT64_MIN",
    "TYPES",
    "Validator",
    "as_dict",
    "as_list",
    "best_type",
    "compile_pattern",
    "describe",
    "format_count",
    "format_number",
    "has_unique_items",
    "is_array",
    "is_boolean",
    "is_integer",
    "is_object",
    "is_real",
    "is_scalar",
    "join_list",
    "param_error",
    "plural",
    "search_pattern",
    "to_number",
    "type_error",
    "values_equal",
    "within_64_bits",
]

#: The JSON-schema type names WordPress knows.
TYPES = ("array", "object", "string", "number", "integer", "boolean", "null")

#: Keywords copied into OPTIONS help data (after ``required``).
HELP_KEYWORDS = frozenset(
    {
        "type", "description", "default", "enum", "items", "properties", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength",
        "pattern", "format", "minItems", "maxItems", "uniqueItems", "additionalProperties",
        "patternProperties", "minProperties", "maxProperties", "context", "readonly", "title",
        "oneOf", "anyOf",
    }
)  # fmt: skip

# PHP's is_numeric() for strings (PHP 8: surrounding whitespace allowed).
_NUMERIC_RE = re.compile(
    r"[ \t\n\r\v\f]*([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[ \t\n\r\v\f]*"
)
_LIST_SEPARATOR_RE = re.compile(r"[ \t\n\r\v\f,]+")
Validator: TypeAlias = Callable[[Any, Mapping[str, Any], str], RestError | None]


def param_error(code: str, message: str, param: str, **extra: Any) -> RestError:
    """A ``RestError`` about argument ``param``, its ``data`` naming it (``{"param": …}``)."""
    return RestError(code, message, {"param": param, **extra})


def type_error(param: str, type_name: str) -> RestError:
    """WordPress's ``rest_invalid_type``: ``{param} is not of type {type_name}.``"""
    return param_error("rest_invalid_type", f"{param} is not of type {type_name}.", param)


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> re.Pattern[str] | None:
    """Compile a schema ``pattern``; ``None`` when it is not a valid regular expression.

    A pattern whose compilation warns (``FutureWarning`` for ``[[``) compiles normally, but
    counts as invalid where warnings are turned into errors.
    """
    try:
        return re.compile(pattern)
    except (re.error, OverflowError, RecursionError, ValueError, Warning):
        return None


def search_pattern(pattern: Any, text: str) -> bool:
    """Whether the schema ``pattern`` is found in ``text`` (an invalid pattern never is)."""
    compiled = compile_pattern(pattern) if isinstance(pattern, str) else None
    return compiled is not None and compiled.search(text) is not None


def is_real(value: Any) -> TypeGuard[int | float]:
    """Whether ``value`` is an int or a float (a bool is neither)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def format_number(number: Any) -> str:
    """A schema number for a message: ``5`` (also for ``5.0``), ``1.5``."""
    if isinstance(number, float) and number.is_integer() and abs(number) < 1e16:
        number = int(number)
    try:
        return str(number)
    except ValueError:  # an integer beyond the int-to-str digit limit
        return f"(a {number.bit_length()}-bit integer)"


def format_count(count: Any) -> str:
    """A count for a message, with thousands separators as WordPress shows them: ``1,000``."""
    return f"{count:,}" if isinstance(count, int) and abs(count) < 10**18 else format_number(count)


def plural(count: Any, singular: str, plural: str) -> str:
    """``singular`` for a count of 1, ``plural`` otherwise."""
    return singular if count == 1 else plural


def to_number(value: Any) -> int | float | None:
    """The finite number ``value`` stands for when PHP's ``is_numeric`` accepts it."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    match = _NUMERIC_RE.fullmatch(value)
    return None if match is None else _parse_number(match.group(1))


def _parse_number(text: str) -> int | float | None:
    if "." not in text and "e" not in text and "E" not in text:
        try:
            return int(text)
        except ValueError:  # more digits than int() converts
            return None
    number = float(text)
    return number if math.isfinite(number) else None


def is_integer(value: Any) -> bool:
    """WordPress's ``rest_is_integer``: a number (or numeric string) with no fraction."""
    number = to_number(value)
    return isinstance(number, int) or (isinstance(number, float) and number.is_integer())


def _past_64_bits(value: Any) -> bool:
    """Whether ``value`` is a whole number (or numeric string) past PHP's 64-bit range."""
    number = to_number(value)
    return number is not None and not INT64_MIN <= number <= INT64_MAX and is_integer(number)


def within_64_bits(value: Any) -> Any:
    """``value``, or, for a whole number past PHP's 64-bit range, the nearest end of the
    range: what PHP's ``(int)`` cast makes of such a numeric string (a URL's id of thirty
    digits is read by WordPress as ``PHP_INT_MAX``)."""
    if not _past_64_bits(value):
        return value
    return INT64_MAX if to_number(value) > 0 else INT64_MIN  # type: ignore[operator]


def is_boolean(value: Any) -> bool:
    """WordPress's ``rest_is_boolean``: a bool, 0 or 1, or one of the strings ``"true"``,
    ``"false"``, ``"0"`` and ``"1"`` (any case)."""
    if isinstance(value, bool):
        return True
    if isinstance(value, str):
        return value.lower() in ("true", "false", "0", "1")
    return isinstance(value, int) and value in (0, 1)


def _php_string(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return "1" if value else ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return str(value)


def is_scalar(value: Any) -> bool:
    """Whether ``value`` is a string or a number (PHP's ``is_scalar`` without booleans)."""
    return isinstance(value, str | int | float)


def _parse_list(value: str | int | float | bool) -> list[Any]:
    """WordPress's ``wp_parse_list``: split on commas and whitespace, drop empty parts."""
    return [part for part in _LIST_SEPARATOR_RE.split(_php_string(value)) if part]


def is_array(value: Any) -> bool:
    """WordPress's ``rest_is_array``: a list, or a scalar read as a comma-separated list."""
    return is_scalar(value) or isinstance(value, list | tuple)


def as_list(value: Any) -> list[Any] | None:
    """WordPress's ``rest_sanitize_array``: the list ``value`` stands for, None if none."""
    if is_scalar(value):
        return _parse_list(value)
    if isinstance(value, list | tuple):
        return list(value)
    if isinstance(value, Mapping):
        return list(value.values())
    return None


def is_object(value: Any) -> bool:
    """WordPress's ``rest_is_object``: a mapping, or ``""`` / an empty list (PHP's ``[]``)."""
    # "" and an empty array (PHP's ambiguous "[]") count as an empty object, as in WordPress.
    if isinstance(value, Mapping):
        return True
    return isinstance(value, str | list | tuple) and len(value) == 0


def as_dict(value: Any) -> dict[Any, Any]:
    """A mapping as a dict; anything else as ``{}``."""
    return dict(value) if isinstance(value, Mapping) else {}


def _stable_key(value: Any) -> Hashable:
    """A hashable key equal for JSON-equal values (object key order ignored, True != 1)."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    if value is None:
        return ("null",)
    if isinstance(value, Mapping):
        return ("object", frozenset((str(key), _stable_key(item)) for key, item in value.items()))
    if isinstance(value, list | tuple):
        return ("array", tuple(_stable_key(item) for item in value))
    return ("other", id(value))


#: Item types whose Python equality is JSON equality: a set of such items finds duplicates.
_HASHED_UNIQUE_TYPES = (frozenset({int, float}), frozenset({str}), frozenset({bool}))


def has_unique_items(items: Sequence[Any]) -> bool:
    """Whether no two of ``items`` are JSON-equal (``uniqueItems``)."""
    # PERF: plain numbers, strings or booleans are compared in a set (C speed), not through
    # _stable_key (~0.5 us an item).
    types = set(map(type, items))
    if any(types <= plain for plain in _HASHED_UNIQUE_TYPES):
        return len(set(items)) == len(items)
    try:
        return len({_stable_key(item) for item in items}) == len(items)
    except RecursionError:
        return False


def values_equal(left: Any, right: Any) -> bool:
    """WordPress's ``rest_are_values_equal``: strict equality, but ``1 == 1.0``."""
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(map(values_equal, left, right))
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return len(left) == len(right) and all(
            key in right and values_equal(item, right[key]) for key, item in left.items()
        )
    if is_real(left) and is_real(right):
        return bool(left == right)
    return type(left) is type(right) and isinstance(left, str | bool | None) and left == right


def describe(value: Any) -> str:
    """``value`` as a message shows it: a string as it is, a number as a schema number,
    anything else as compact JSON."""
    if isinstance(value, str):
        return value
    if is_real(value):
        return format_number(value)
    try:
        return json.dumps(value, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError):
        return object.__repr__(value)


def join_list(words: list[str]) -> str:
    """English list: ``a``, ``a and b``, ``a, b, and c`` (WordPress's ``%l``)."""
    if len(words) < 3:
        return " and ".join(words)
    return ", ".join(words[:-1]) + ", and " + words[-1]


def best_type(value: Any, types: Sequence[Any]) -> Any:
    """The first type in ``types`` that ``value`` satisfies (``""`` prefers string). A whole
    number past PHP's 64-bit range is PHP's float: ``integer`` is its type only when no
    other listed type fits it (``number``, ``string``…); it is then refused as out of range."""
    if isinstance(value, str) and value == "" and "string" in types:
        return "string"
    past_64_bits = False
    for type_name in types:
        check = _TYPE_CHECKS.get(type_name) if isinstance(type_name, str) else None
        if check is not None and check(value):
            if type_name != "integer" or not _past_64_bits(value):
                return type_name
            past_64_bits = True
    if past_64_bits:
        return "integer"
    unknown = [type_name for type_name in types if type_name not in TYPES]
    return unknown[0] if unknown else None  # WordPress lets unknown types pass


_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "array": is_array,
    "object": is_object,
    "integer": is_integer,
    "number": lambda value: to_number(value) is not None,
    "boolean": is_boolean,
    "string": lambda value: isinstance(value, str),
    "null": lambda value: value is None,
}
