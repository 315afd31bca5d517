"""Notices about argument definitions (``svcrest.rest.schema.keywords``): types that are not
built in, and keywords that look like slips of known ones."""

from __future__ import annotations

from typing import Any

import pytest

from svcrest.rest.schema.keywords import (
    KNOWN_KEYWORDS,
    closest_keyword,
    definition_notices,
    type_notice,
)

BUILT_IN = "array, object, string, number, integer, boolean, and null"


@pytest.mark.parametrize(
    ("key", "closest"),
    [
        ("minimun", "minimum"),
        ("maxlength", "maxLength"),
        ("ENUM", "enum"),
        ("sanitise_callback", "sanitize_callback"),
        ("colour", None),
    ],
)
def test_closest_keyword(key: str, closest: str | None) -> None:
    assert closest_keyword(key) == closest


def test_the_known_keywords_include_wordpress_and_openapi_ones() -> None:
    assert {"validate_callback", "arg_options", "context", "nullable", "$ref"} <= KNOWN_KEYWORDS


def test_type_notice() -> None:
    assert type_notice("count", "integer") is None
    assert type_notice("count", ["integer", "null"]) is None
    assert type_notice("count", "int") == (
        f'The "type" schema keyword for count can only be one of the built-in types: {BUILT_IN}'
        " (not 'int')."
    )
    assert type_notice("tags", ["array", "list"]) is not None


@pytest.mark.parametrize(
    ("definition", "notices"),
    [
        ({"type": "string", "minLength": 1}, []),
        ({"type": "string", "x-vendor": 1, "custom_key": 2}, []),  # not like a known one
        (
            {"type": "string", "maxlength": 5},
            [
                "The argument definition of title has the unknown keyword 'maxlength', which"
                " is ignored: did you mean 'maxLength'?"
            ],
        ),
        (
            {"type": "array", "items": {"type": "str"}},
            [
                'The "type" schema keyword for title[] can only be one of the built-in types:'
                f" {BUILT_IN} (not 'str')."
            ],
        ),
        (
            {"type": "object", "properties": {"size": {"type": "integer", "minimun": 1}}},
            [
                "The argument definition of title[size] has the unknown keyword 'minimun',"
                " which is ignored: did you mean 'minimum'?"
            ],
        ),
        ("not a mapping", []),
    ],
    ids=["clean", "unlike", "slip", "items", "properties", "not-a-mapping"],
)
def test_definition_notices(definition: Any, notices: list[str]) -> None:
    assert definition_notices("title", definition) == notices
