"""Strict JSON body decoding: invalid JSON, deep nesting and lossy numbers are refused."""

from __future__ import annotations

import re
from typing import Any

import orjson

from svcrest.http.errors import RestError

__all__ = ["MAX_JSON_DEPTH", "decode_json_body", "is_json_content_type"]

#: Deepest nesting of arrays and objects a request body may have.
MAX_JSON_DEPTH = 512
_LONG_DIGITS = re.compile(rb"\d{19}")
_NUMBER_OR_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?', re.DOTALL)
_INT64_MIN = -(2**63)
_UINT64_MAX = 2**64 - 1


def is_json_content_type(content_type: str) -> bool:
    """``application/json`` or any ``application/*+json`` type, parameters ignored."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


def _invalid(message: str) -> RestError:
    return RestError(
        "rest_invalid_json",
        "Invalid JSON body passed.",
        {"status": 400, "json_error_message": message},
    )


def _too_deep(value: Any) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            if depth > MAX_JSON_DEPTH:
                return True
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list):
            if depth > MAX_JSON_DEPTH:
                return True
            stack.extend((child, depth + 1) for child in node)
    return False


def _has_out_of_range_integer(raw: bytes) -> bool:
    """orjson reads integers outside 64 bits as lossy floats; find such literals."""
    for token in _NUMBER_OR_STRING.findall(raw):
        if token[:1] == b'"' or b"." in token or b"e" in token or b"E" in token:
            continue
        number = int(token)
        if number < _INT64_MIN or number > _UINT64_MAX:
            return True
    return False


def decode_json_body(raw: bytes) -> Any:
    """Decode a request body; raises ``RestError("rest_invalid_json", …, 400)`` when it is not
    strict JSON (NaN/Infinity, invalid UTF-8, trailing data), nests deeper than
    ``MAX_JSON_DEPTH``, or holds an integer outside the 64-bit range (which would be silently
    rounded). An empty body decodes to None.
    """
    if not raw.strip():
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _invalid(str(exc)) from None
    # PERF: both scans run only when the cheap byte checks say they could matter.
    if (raw.count(b"[") + raw.count(b"{")) > MAX_JSON_DEPTH and _too_deep(value):
        raise _invalid(f"Nesting deeper than {MAX_JSON_DEPTH} levels.")
    if _LONG_DIGITS.search(raw) and _has_out_of_range_integer(raw):
        raise _invalid("Integer outside the 64-bit range.")
    return value
