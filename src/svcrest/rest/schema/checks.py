"""``validate_value`` (a value against an argument schema, with WordPress's codes and
messages) and ``sanitize_value`` (a value coerced to its schema's type, query strings
included). They call each other for ``anyOf``/``oneOf`` and ``enum``."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from svcrest.http.errors import RestError
from svcrest.rest.schema.common import (
    INT64_MAX,
    INT64_MIN,
    TYPES,
    Validator,
    as_dict,
    as_list,
    best_type,
    compile_pattern,
    describe,
    format_count,
    format_number,
    has_unique_items,
    is_array,
    is_boolean,
    is_integer,
    is_object,
    is_real,
    is_scalar,
    join_list,
    param_error,
    plural,
    search_pattern,
    to_number,
    type_error,
    values_equal,
)
from svcrest.rest.schema.formats import FORMAT_SANITIZERS, check_format

__all__ = ["matching_schema", "sanitize_value", "validate_value"]


def _validate_string(value: Any, schema: Mapping[str, Any], param: str) -> RestError | None:
    if not isinstance(value, str):
        return type_error(param, "string")
    min_length, max_length = schema.get("minLength"), schema.get("maxLength")
    if is_real(min_length) and len(value) < min_length:
        unit = plural(min_length, "character", "characters")
        message = f"{param} must be at least {format_count(min_length)} {unit} long."
        return param_error("rest_too_short", message, param)
    if is_real(max_length) and len(value) > max_length:
        unit = plural(max_length, "character", "characters")
        message = f"{param} must be at most {format_count(max_length)} {unit} long."
        return param_error("rest_too_long", message, param)
    pattern = schema.get("pattern")
    if pattern is not None and not search_pattern(pattern, value):
        return param_error(
            "rest_invalid_pattern", f"{param} does not match pattern {pattern}.", param
        )
    return None


def _is_multiple(number: int | float, divisor: Any) -> bool:
    try:
        exact = Fraction(number) if isinstance(number, int) else Fraction(repr(number))
        step = Fraction(divisor) if isinstance(divisor, int) else Fraction(repr(divisor))
        return step != 0 and exact % step == 0
    except (ValueError, OverflowError, ZeroDivisionError):
        return False


def _bound(schema: Mapping[str, Any], key: str, exclusive_key: str, lower: bool) -> Any:
    """The effective ``(limit, exclusive)`` bound, merging draft-4 and draft-6 forms."""
    if key not in schema and exclusive_key not in schema:
        return None
    limit, exclusive = schema.get(key), schema.get(exclusive_key)
    candidates = []
    if is_real(limit):
        candidates.append((limit, bool(exclusive) and not is_real(exclusive)))
    if is_real(exclusive):
        candidates.append((exclusive, True))
    if not candidates:
        return None
    # The stricter bound wins; at equal limits the exclusive one is stricter.
    return max(candidates, key=lambda c: (c[0] if lower else -c[0], c[1]))


def _validate_bounds(
    number: int | float, schema: Mapping[str, Any], param: str
) -> RestError | None:
    low = _bound(schema, "minimum", "exclusiveMinimum", lower=True)
    high = _bound(schema, "maximum", "exclusiveMaximum", lower=False)
    too_low = low is not None and (number <= low[0] if low[1] else number < low[0])
    too_high = high is not None and (number >= high[0] if high[1] else number > high[0])
    if not (too_low or too_high):
        return None
    if low is not None and high is not None:
        low_kind = "exclusive" if low[1] else "inclusive"
        high_kind = "exclusive" if high[1] else "inclusive"
        message = (
            f"{param} must be between {format_number(low[0])} ({low_kind}) "
            f"and {format_number(high[0])} ({high_kind})"
        )
    elif low is not None:
        relation = "greater than" if low[1] else "greater than or equal to"
        message = f"{param} must be {relation} {format_number(low[0])}"
    else:
        relation = "less than" if high[1] else "less than or equal to"
        message = f"{param} must be {relation} {format_number(high[0])}"
    return param_error("rest_out_of_bounds", message, param)


def _validate_number(value: Any, schema: Mapping[str, Any], param: str) -> RestError | None:
    number = to_number(value)
    if number is None:
        return type_error(param, "integer" if schema.get("type") == "integer" else "number")
    divisor = schema.get("multipleOf")
    if is_real(divisor) and not _is_multiple(number, divisor):
        message = f"{param} must be a multiple of {format_number(divisor)}."
        return param_error("rest_invalid_multiple", message, param)
    return _validate_bounds(number, schema, param)


#: The message of an ``integer`` past PHP's 64-bit range: WordPress's wording for a range.
_PAST_64_BITS = f"must be between {INT64_MIN} (inclusive) and {INT64_MAX} (inclusive)"


def _out_of_64_bits(param: str) -> RestError:
    """The ``rest_out_of_bounds`` refusal of an ``integer`` outside PHP's 64-bit range."""
    return param_error("rest_out_of_bounds", f"{param} {_PAST_64_BITS}", param)


def _validate_integer(value: Any, schema: Mapping[str, Any], param: str) -> RestError | None:
    error = _validate_number(value, schema, param)
    if error is None and not is_integer(value):
        error = type_error(param, "integer")
    # The schema's own bounds are told first; then the range every integer of WordPress's
    # has (PHP's): past it, no JSON answer would carry the value back (a 500 otherwise).
    if error is None and not INT64_MIN <= to_number(value) <= INT64_MAX:  # type: ignore[operator]
        error = _out_of_64_bits(param)
    return error


def _count_error(
    size: int, schema: Mapping[str, Any], param: str, noun: tuple[str, str, str]
) -> RestError | None:
    """minItems/maxItems or minProperties/maxProperties; ``noun`` = (keyword part, 1, many)."""
    part, one, many = noun
    low, high = schema.get(f"min{part}"), schema.get(f"max{part}")
    if is_real(low) and size < low:
        message = f"{param} must contain at least {format_count(low)} {plural(low, one, many)}."
        return param_error(f"rest_too_few_{many}", message, param)
    if is_real(high) and size > high:
        message = f"{param} must contain at most {format_count(high)} {plural(high, one, many)}."
        return param_error(f"rest_too_many_{many}", message, param)
    return None


def _validate_array(value: Any, schema: Mapping[str, Any], param: str) -> RestError | None:
    items = as_list(value) if is_array(value) else None
    if items is None:
        return type_error(param, "array")
    item_schema = schema.get("items")
    if isinstance(item_schema, Mapping):
        error = _validate_items(items, item_schema, param)
        if error is not None:
            return error
    error = _count_error(len(items), schema, param, ("Items", "item", "items"))
    if error is None and schema.get("uniqueItems") and not has_unique_items(items):
        error = param_error("rest_duplicate_items", f"{param} has duplicate items.", param)
    return error


# PERF: a JSON body's array of 1.3M integers (10 MiB) took 2-5 s to check item by item,
# before any permission check. Items of the plain JSON type of a simple item schema are
# checked in bulk (type sets, min/max, C-level maps: ~50 ms); a chunk that fails the bulk
# check is checked item by item, so errors and their messages stay those of validate_value.
_BULK_CHUNK = 4096
#: The item-schema keywords the bulk checks understand; any other key means item by item.
_BULK_KEYWORDS = frozenset(
    {
        "type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
        "maxLength", "pattern", "description", "title", "default", "context", "readonly",
        "required",
    }
)  # fmt: skip
#: The Python types of items that a bulk check accepts for each schema type.
_BULK_TYPES: dict[str, frozenset[type]] = {
    "integer": frozenset({int}),
    "number": frozenset({int, float}),
    "string": frozenset({str}),
    "boolean": frozenset({bool}),
}
_BOUND_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def _bulk_type(schema: Mapping[str, Any]) -> str | None:
    """The schema's type when its items can be checked and sanitised in bulk, else None."""
    type_name = schema.get("type")
    if not isinstance(type_name, str) or type_name not in _BULK_TYPES:
        return None
    return type_name if schema.keys() <= _BULK_KEYWORDS else None


def _of_plain_type(items: list[Any], type_name: str) -> bool:
    """Every item has the plain Python type of ``type_name`` (finite numbers only)."""
    if not set(map(type, items)) <= _BULK_TYPES[type_name]:
        return False
    if type_name != "number":
        return True
    try:
        return all(map(math.isfinite, items))
    except OverflowError:  # an integer too large for a float: item by item
        return False


def _strings_pass(items: list[str], schema: Mapping[str, Any]) -> bool:
    min_length, max_length = schema.get("minLength"), schema.get("maxLength")
    if is_real(min_length) and min(map(len, items)) < min_length:
        return False
    if is_real(max_length) and max(map(len, items)) > max_length:
        return False
    pattern = schema.get("pattern")
    if pattern is None:
        return True
    compiled = compile_pattern(pattern) if isinstance(pattern, str) else None
    return compiled is not None and all(map(compiled.search, items))


def _all_pass(items: list[Any], schema: Mapping[str, Any], type_name: str) -> bool:
    """True only when every item is valid against ``schema`` (False: check item by item)."""
    if not items:
        return True
    if not _of_plain_type(items, type_name):
        return False
    if type_name == "string":
        return _strings_pass(items, schema)
    if type_name == "boolean":
        return True
    bounded = any(key in schema for key in _BOUND_KEYWORDS)
    if type_name == "number" and not bounded:
        return True
    # Bounds make an interval: the smallest and largest items pass, so every item does.
    low, high = min(items), max(items)
    if type_name == "integer" and not (low >= INT64_MIN and high <= INT64_MAX):
        return False
    return not bounded or (
        _validate_bounds(low, schema, "") is None and _validate_bounds(high, schema, "") is None
    )


def _validate_items(
    items: list[Any], item_schema: Mapping[str, Any], param: str
) -> RestError | None:
    """The first item's error against ``item_schema`` (named ``param[index]``), or None."""
    type_name = _bulk_type(item_schema)
    size = _BULK_CHUNK if type_name is not None else max(len(items), 1)
    for start in range(0, len(items), size):
        chunk = items[start : start + size]
        if type_name is not None and _all_pass(chunk, item_schema, type_name):
            continue
        for index, item in enumerate(chunk, start):
            error = validate_value(item, item_schema, f"{param}[{index}]")
            if error is not None:
                return error
    return None


def _sanitize_in_bulk(items: list[Any], type_name: str) -> list[Any] | None:
    """What sanitising each item of ``items`` gives, when they have the plain type of
    ``type_name``; None to sanitise item by item."""
    if not _of_plain_type(items, type_name):
        return None
    return list(map(float, items)) if type_name == "number" else items


def _property_schema(schema: Mapping[str, Any], name: Any) -> Any:
    """The schema for property ``name``: ``properties``, then ``patternProperties``, then
    ``additionalProperties``; ``False`` when the property is forbidden, ``None`` when free."""
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and name in properties:
        return properties[name]
    patterns = schema.get("patternProperties")
    if isinstance(patterns, Mapping):
        for pattern, sub_schema in patterns.items():
            if search_pattern(pattern, str(name)):
                return sub_schema
    additional = schema.get("additionalProperties")
    return additional if additional is False or isinstance(additional, Mapping) else None


def _missing_property(obj: Mapping[Any, Any], schema: Mapping[str, Any]) -> Any:
    required = schema.get("required")
    if isinstance(required, list | tuple):  # draft 4: a list at object level
        names: list[Any] = [name for name in required if isinstance(name, str)]
    else:  # draft 3: "required": true inside each property
        properties = schema.get("properties")
        names = [
            name
            for name, sub in (properties.items() if isinstance(properties, Mapping) else ())
            if isinstance(sub, Mapping) and sub.get("required") is True
        ]
    return next((name for name in names if name not in obj), None)


def _validate_object(value: Any, schema: Mapping[str, Any], param: str) -> RestError | None:
    if not is_object(value):
        return type_error(param, "object")
    obj = as_dict(value)
    missing = _missing_property(obj, schema)
    if missing is not None:
        message = f"{missing} is a required property of {param}."
        return param_error("rest_property_required", message, param)
    for name, item in obj.items():
        sub_schema = _property_schema(schema, name)
        if sub_schema is False:
            message = f"{name} is not a valid property of Object."
            return param_error("rest_additional_properties_forbidden", message, param)
        if isinstance(sub_schema, Mapping):
            error = validate_value(item, sub_schema, f"{param}[{name}]")
            if error is not None:
                return error
    return _count_error(len(obj), schema, param, ("Properties", "property", "properties"))


_VALIDATORS: dict[str, Validator] = {
    "null": lambda value, schema, param: None if value is None else type_error(param, "null"),
    "boolean": lambda value, schema, param: (
        None if is_boolean(value) else type_error(param, "boolean")
    ),
    "object": _validate_object,
    "array": _validate_array,
    "number": _validate_number,
    "integer": _validate_integer,
    "string": _validate_string,
}


def _with_parent_type(sub_schema: Any, schema: Mapping[str, Any]) -> Mapping[str, Any]:
    sub = sub_schema if isinstance(sub_schema, Mapping) else {}
    if "type" not in sub and "type" in schema:
        return {**sub, "type": schema["type"]}
    return sub


def _combining_error(
    param: str, failures: list[tuple[int, Mapping[str, Any], RestError]]
) -> RestError:
    """WordPress's error for a value that matches none of the ``anyOf``/``oneOf`` schemas."""
    if len(failures) > 1:  # plain type mismatches of the value itself explain nothing
        failures = [
            failure
            for failure in failures
            if failure[2].code != "rest_invalid_type"
            or not isinstance(failure[2].data, dict)
            or failure[2].data.get("param") != param
        ]
    if len(failures) != 1:
        message = f"{param} does not match any of the expected formats."
        return param_error("rest_no_matching_schema", message, param)
    position, sub_schema, reason = failures[0]
    title = sub_schema.get("title")
    if isinstance(title, str) and title:
        message = f"{param} is not a valid {title}. Reason: {reason.message}"
    else:
        message = f"{param} does not match the expected format. Reason: {reason.message}"
    return param_error("rest_no_matching_schema", message, param, position=position)


def matching_schema(
    value: Any, schema: Mapping[str, Any], param: str, keyword: str
) -> Mapping[str, Any] | RestError:
    """The ``anyOf`` (first match) or ``oneOf`` (only match) sub-schema ``value`` matches."""
    options = schema[keyword]
    matches: list[tuple[int, Mapping[str, Any]]] = []
    failures: list[tuple[int, Mapping[str, Any], RestError]] = []
    for position, option in enumerate(options if isinstance(options, list | tuple) else ()):
        sub_schema = _with_parent_type(option, schema)
        error = validate_value(value, sub_schema, param)
        if error is not None:
            failures.append((position, sub_schema, error))
            continue
        matches.append((position, sub_schema))
        if keyword == "anyOf":
            break
    if not matches:
        return _combining_error(param, failures)
    if len(matches) > 1:
        titles: list[str] = [
            title for _, sub in matches if isinstance(title := sub.get("title"), str) and title
        ]
        if len(titles) == len(matches):
            message = f"{param} matches {join_list(titles)}, but should match only one."
        else:
            message = f"{param} matches more than one of the expected formats."
        positions = [position for position, _ in matches]
        return param_error("rest_one_of_multiple_matches", message, param, positions=positions)
    return matches[0][1]


def _apply_combinations(
    value: Any, schema: Mapping[str, Any], param: str, sanitize: bool
) -> tuple[Any, Mapping[str, Any]] | RestError:
    """Check ``anyOf`` then ``oneOf``; the matched schema supplies a missing ``type`` and, when
    sanitising, sanitises the value first. Returns ``(value, schema)`` or the error."""
    for keyword in ("anyOf", "oneOf"):
        if keyword not in schema:
            continue
        matched = matching_schema(value, schema, param, keyword)
        if isinstance(matched, RestError):
            return matched
        if "type" not in schema and "type" in matched:
            schema = {**schema, "type": matched["type"]}
        if sanitize:
            value = sanitize_value(value, matched, param)
            if isinstance(value, RestError):
                return value
    return value, schema


def _resolve_type(
    value: Any, schema: Mapping[str, Any], param: str
) -> Mapping[str, Any] | RestError:
    """Replace a list of types by the first one ``value`` satisfies."""
    type_name = schema.get("type")
    if not isinstance(type_name, list | tuple):
        return schema
    best = best_type(value, type_name)
    if best is None:
        return type_error(param, ",".join(str(name) for name in type_name))
    return {**schema, "type": best}


def validate_value(value: Any, schema: Mapping[str, Any], param: str) -> RestError | None:
    """Validate ``value`` against an argument ``schema`` (WordPress's semantics).

    Returns ``None`` when the value is valid, otherwise a ``RestError`` with WordPress's error
    code and message and ``data`` holding at least ``{"param": param}``. Nested values are
    reported as ``param[key]`` / ``param[index]``. Never raises for JSON-like values.
    """
    if type(schema) is not dict and not isinstance(schema, Mapping):  # PERF: dicts first
        return None
    combined = _apply_combinations(value, schema, param, sanitize=False)
    if isinstance(combined, RestError):
        return combined
    resolved = _resolve_type(value, combined[1], param)
    if isinstance(resolved, RestError):
        return resolved
    type_name = resolved.get("type")
    validator = _VALIDATORS.get(type_name) if isinstance(type_name, str) else None
    error = None if validator is None else validator(value, resolved, param)
    enum = resolved.get("enum")
    if error is None and isinstance(enum, list | tuple) and enum:
        error = _check_enum(value, resolved, enum, param)
    # "format" applies to strings, and (for compatibility) when the type is absent or unknown.
    if error is None and "format" in resolved and (type_name == "string" or type_name not in TYPES):
        error = check_format(value, resolved["format"], param)
    return error


def _check_enum(
    value: Any, schema: Mapping[str, Any], enum: Sequence[Any], param: str
) -> RestError | None:
    sanitized = sanitize_value(value, schema, param)
    if isinstance(sanitized, RestError):
        return sanitized
    try:
        if any(values_equal(sanitized, option) for option in enum):
            return None
    except RecursionError:
        pass
    if len(enum) == 1:
        return param_error("rest_not_in_enum", f"{param} is not {describe(enum[0])}.", param)
    choices = join_list([describe(option) for option in enum])
    return param_error("rest_not_in_enum", f"{param} is not one of {choices}.", param)


def _sanitize_items(
    items: list[Any], item_schema: Mapping[str, Any], param: str
) -> RestError | None:
    """Sanitise ``items`` in place against ``item_schema``; the first item's error, or None."""
    type_name = _bulk_type(item_schema)
    size = _BULK_CHUNK if type_name is not None else max(len(items), 1)
    for start in range(0, len(items), size):
        if type_name is not None:
            chunk = _sanitize_in_bulk(items[start : start + size], type_name)
            if chunk is not None:
                items[start : start + size] = chunk
                continue
        for index in range(start, min(start + size, len(items))):
            sanitized = sanitize_value(items[index], item_schema, f"{param}[{index}]")
            if isinstance(sanitized, RestError):
                return sanitized
            items[index] = sanitized
    return None


def _sanitize_array(value: Any, schema: Mapping[str, Any], param: str) -> Any:
    items = as_list(value)
    if items is None:
        return type_error(param, "array")
    item_schema = schema.get("items")
    if isinstance(item_schema, Mapping) and item_schema:
        error = _sanitize_items(items, item_schema, param)
        if error is not None:
            return error
    if schema.get("uniqueItems") and not has_unique_items(items):
        return param_error("rest_duplicate_items", f"{param} has duplicate items.", param)
    return items


def _sanitize_object(value: Any, schema: Mapping[str, Any], param: str) -> Any:
    if not is_object(value):
        return type_error(param, "object")
    result: dict[Any, Any] = {}
    for name, item in as_dict(value).items():
        sub_schema = _property_schema(schema, name)
        if sub_schema is False:
            continue
        if isinstance(sub_schema, Mapping):
            item = sanitize_value(item, sub_schema, f"{param}[{name}]")
            if isinstance(item, RestError):
                return item
        result[name] = item
    return result


def _coerce_number(value: Any) -> int | float | None:
    return int(value) if isinstance(value, bool) else to_number(value)


def _sanitize_integer(value: Any, schema: Mapping[str, Any], param: str) -> Any:
    number = _coerce_number(value)
    return type_error(param, "integer") if number is None else int(number)


def _sanitize_number(value: Any, schema: Mapping[str, Any], param: str) -> Any:
    number = _coerce_number(value)
    try:
        return type_error(param, "number") if number is None else float(number)
    except OverflowError:  # an integer too large for a float
        return type_error(param, "number")


def _sanitize_boolean(value: Any, schema: Mapping[str, Any], param: str) -> Any:
    if isinstance(value, str):
        return value.lower() not in ("false", "0", "")
    if isinstance(value, int | float):
        return bool(value)
    return type_error(param, "boolean")


def _sanitize_string(value: Any, schema: Mapping[str, Any], param: str) -> Any:
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif is_scalar(value):
        text = str(value)
    else:
        return type_error(param, "string")
    fmt = schema.get("format")
    sanitizer = FORMAT_SANITIZERS.get(fmt) if isinstance(fmt, str) else None
    return text if sanitizer is None else sanitizer(text)


_SANITIZERS: dict[str, Callable[[Any, Mapping[str, Any], str], Any]] = {
    "array": _sanitize_array,
    "object": _sanitize_object,
    "null": lambda value, schema, param: None,
    "integer": _sanitize_integer,
    "number": _sanitize_number,
    "boolean": _sanitize_boolean,
    "string": _sanitize_string,
}


def sanitize_value(value: Any, schema: Mapping[str, Any], param: str) -> Any:
    """Coerce ``value`` to the type ``schema`` declares (WordPress's semantics).

    ``"5"`` becomes ``5`` for integers (``"5.7"`` truncates to ``5``), ``"1.5"`` becomes ``1.5``
    for numbers, ``"true"``/``"1"`` become ``True`` and ``"false"``/``"0"``/``""`` ``False``
    for booleans, a comma/space separated string becomes a list for arrays (each item sanitised
    by ``items``), objects are sanitised per ``properties`` (``additionalProperties: false``
    drops unknown keys), strings pass through their ``format`` sanitiser. Returns a
    ``RestError`` (check with ``isinstance``) when the value cannot be coerced.
    """
    if type(schema) is not dict and not isinstance(schema, Mapping):  # PERF: dicts first
        return value
    combined = _apply_combinations(value, schema, param, sanitize=True)
    if isinstance(combined, RestError):
        return combined
    value = combined[0]
    resolved = _resolve_type(value, combined[1], param)
    if isinstance(resolved, RestError):
        return resolved
    type_name = resolved.get("type")
    sanitizer = _SANITIZERS.get(type_name) if isinstance(type_name, str) else None
    if sanitizer is not None:
        return sanitizer(value, resolved, param)
    if "format" in resolved and type_name not in TYPES:
        return _sanitize_string(value, resolved, param)
    return value
