"""Query strings and form bodies with PHP bracket conventions."""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest

from svcrest.http.forms import MAX_FIELDS, parse_form


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("a=1", {"a": "1"}),
        ("a=1&a=2", {"a": "2"}),
        ("a[]=1&a[]=2", {"a": ["1", "2"]}),
        ("c[x]=4&c[y]=5", {"c": {"x": "4", "y": "5"}}),
        ("c[x][]=1&c[x][]=2", {"c": {"x": ["1", "2"]}}),
        ("q=a+b%26c", {"q": "a b&c"}),
        ("flag", {"flag": ""}),
        ("=novalue&&b=2", {"b": "2"}),
        ("bad[=1", {"bad[": "1"}),
        ("x=%FF", {"x": "\ufffd"}),
        ("rest_route=/demo/v1", {"rest_route": "/demo/v1"}),
    ],
    ids=[
        "empty",
        "plain",
        "last-wins",
        "list",
        "dict",
        "nested-list",
        "decoding",
        "no-value",
        "empty-key-skipped",
        "malformed-bracket",
        "invalid-utf8",
        "rest-route",
    ],
)
def test_parse_form(text: str, expected: dict[str, Any]) -> None:
    assert parse_form(text) == expected


def test_field_count_is_capped() -> None:
    parsed = parse_form("&".join(f"k{i}=v" for i in range(MAX_FIELDS + 50)))
    assert len(parsed) == MAX_FIELDS


@pytest.mark.parametrize("pair", ["", "a=1"], ids=["empty-pairs", "pairs"])
def test_a_nine_mib_form_body_is_split_no_further_than_the_cap(pair: str) -> None:
    body = "&".join([pair] * (9 * 1024 * 1024 // (len(pair) + 1))).encode()
    tracemalloc.start()
    try:
        parsed = parse_form(body)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert parsed == ({"a": "1"} if pair else {})
    # The decoded text, the rest after the first MAX_FIELDS pairs and those pairs; a whole
    # split held a list of 9 M entries (72 MB) and, for "a=1", 2.4 M strings.
    assert peak < 3 * len(body), peak
