"""Strict JSON bodies."""

from __future__ import annotations

from typing import Any

import pytest

from svcrest.http.errors import RestError
from svcrest.http.jsonbody import MAX_JSON_DEPTH, decode_json_body, is_json_content_type


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"a": 1}', {"a": 1}),
        (b"[1, 2]", [1, 2]),
        (b"  ", None),
        (b"9223372036854775807", 9223372036854775807),
        (b"18446744073709551615", 18446744073709551615),
        (b'{"s": "12345678901234567890123"}', {"s": "12345678901234567890123"}),
    ],
    ids=["object", "array", "blank", "int64-max", "uint64-max", "digits-in-string"],
)
def test_valid(raw: bytes, expected: Any) -> None:
    assert decode_json_body(raw) == expected


def test_nesting_at_the_limit_is_accepted() -> None:
    value = decode_json_body(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH)
    depth = 0
    while isinstance(value, list):
        depth += 1
        value = value[0] if value else None
    assert depth == MAX_JSON_DEPTH


@pytest.mark.parametrize(
    "raw",
    [
        b"{",
        b"NaN",
        b"[Infinity]",
        b"[1e400]",
        b"\xff\xfe",
        b'{"a":1} x',
        b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1),
        b"123456789012345678901234567890",
        b'{"n": -9223372036854775809}',
    ],
    ids=[
        "truncated",
        "nan",
        "infinity",
        "overflow-float",
        "invalid-utf8",
        "trailing-data",
        "too-deep",
        "huge-int",
        "int64-underflow",
    ],
)
def test_invalid_is_rest_invalid_json(raw: bytes) -> None:
    with pytest.raises(RestError) as caught:
        decode_json_body(raw)
    assert caught.value.code == "rest_invalid_json"
    assert caught.value.status == 400
    assert caught.value.message == "Invalid JSON body passed."


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("application/json", True),
        ("Application/JSON; charset=utf-8", True),
        ("application/merge-patch+json", True),
        ("text/json", False),
        ("application/x-www-form-urlencoded", False),
        ("", False),
    ],
)
def test_is_json_content_type(content_type: str, expected: bool) -> None:
    assert is_json_content_type(content_type) is expected
