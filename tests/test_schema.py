"""Tests for svcrest.rest.schema: validate_value, sanitize_value, schema_keywords_for_help."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from svcrest.http.errors import RestError
from svcrest.rest.schema import sanitize_value, schema_keywords_for_help, validate_value

UUID = "123e4567-e89b-42d3-a456-426614174000"
OBJECT_AB = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "string", "required": True}},
}


def case(schema: dict[str, Any], value: Any, code: str | None, name: str) -> Any:
    """One row of the validation table."""
    return pytest.param(schema, value, code, id=name)


VALIDATION_CASES = [
    # type: string
    case({"type": "string"}, "abc", None, "string-ok"),
    case({"type": "string"}, "", None, "string-empty-ok"),
    case({"type": "string"}, 5, "rest_invalid_type", "string-int"),
    case({"type": "string"}, None, "rest_invalid_type", "string-null"),
    # type: integer (query strings accepted as WordPress's rest_is_integer does)
    case({"type": "integer"}, 5, None, "integer-int"),
    case({"type": "integer"}, -5, None, "integer-negative"),
    case({"type": "integer"}, "5", None, "integer-numeric-string"),
    case({"type": "integer"}, "5.0", None, "integer-string-whole-float"),
    case({"type": "integer"}, 5.0, None, "integer-whole-float"),
    case({"type": "integer"}, "1e3", None, "integer-exponent-string"),
    case({"type": "integer"}, " 5 ", None, "integer-surrounding-whitespace"),
    case({"type": "integer"}, 10**5000, "rest_out_of_bounds", "integer-huge-int"),  # 64-bit
    case({"type": "integer"}, "5.5", "rest_invalid_type", "integer-fraction-string"),
    case({"type": "integer"}, 5.5, "rest_invalid_type", "integer-fraction"),
    case({"type": "integer"}, "abc", "rest_invalid_type", "integer-text"),
    case({"type": "integer"}, "", "rest_invalid_type", "integer-empty"),
    case({"type": "integer"}, "0x1A", "rest_invalid_type", "integer-hex"),
    case({"type": "integer"}, "1_000", "rest_invalid_type", "integer-underscore"),
    case({"type": "integer"}, "\uff15", "rest_invalid_type", "integer-fullwidth-digit"),
    case({"type": "integer"}, True, "rest_invalid_type", "integer-bool"),
    case({"type": "integer"}, None, "rest_invalid_type", "integer-null"),
    case({"type": "integer"}, [5], "rest_invalid_type", "integer-list"),
    case({"type": "integer"}, float("inf"), "rest_invalid_type", "integer-infinity"),
    case({"type": "integer"}, "1" * 5000, "rest_invalid_type", "integer-5000-digit-string"),
    # type: number
    case({"type": "number"}, 1.5, None, "number-float"),
    case({"type": "number"}, 2, None, "number-int"),
    case({"type": "number"}, "1.5", None, "number-string"),
    case({"type": "number"}, ".5", None, "number-leading-dot"),
    case({"type": "number"}, "5.", None, "number-trailing-dot"),
    case({"type": "number"}, "-1.5e-3", None, "number-exponent"),
    case({"type": "number"}, "abc", "rest_invalid_type", "number-text"),
    case({"type": "number"}, False, "rest_invalid_type", "number-bool"),
    case({"type": "number"}, "1e400", "rest_invalid_type", "number-overflowing-string"),
    case({"type": "number"}, float("nan"), "rest_invalid_type", "number-nan"),
    case({"type": "number"}, "nan", "rest_invalid_type", "number-nan-string"),
    # type: boolean (WordPress's rest_is_boolean)
    case({"type": "boolean"}, True, None, "boolean-true"),
    case({"type": "boolean"}, False, None, "boolean-false"),
    case({"type": "boolean"}, "true", None, "boolean-string-true"),
    case({"type": "boolean"}, "FALSE", None, "boolean-string-upper-false"),
    case({"type": "boolean"}, "1", None, "boolean-string-one"),
    case({"type": "boolean"}, "0", None, "boolean-string-zero"),
    case({"type": "boolean"}, 1, None, "boolean-int-one"),
    case({"type": "boolean"}, 0, None, "boolean-int-zero"),
    case({"type": "boolean"}, "", "rest_invalid_type", "boolean-empty-string"),
    case({"type": "boolean"}, "yes", "rest_invalid_type", "boolean-yes"),
    case({"type": "boolean"}, 2, "rest_invalid_type", "boolean-int-two"),
    case({"type": "boolean"}, 1.0, "rest_invalid_type", "boolean-float"),
    case({"type": "boolean"}, None, "rest_invalid_type", "boolean-null"),
    # type: null
    case({"type": "null"}, None, None, "null-ok"),
    case({"type": "null"}, "", "rest_invalid_type", "null-empty-string"),
    case({"type": "null"}, 0, "rest_invalid_type", "null-zero"),
    # type: array (scalars are parsed as lists, as WordPress's wp_parse_list does)
    case({"type": "array"}, [1, "a"], None, "array-list"),
    case({"type": "array"}, (1, 2), None, "array-tuple"),
    case({"type": "array"}, "a,b", None, "array-comma-string"),
    case({"type": "array"}, "", None, "array-empty-string"),
    case({"type": "array"}, 5, None, "array-scalar"),
    case({"type": "array"}, {"a": 1}, "rest_invalid_type", "array-object"),
    case({"type": "array"}, None, "rest_invalid_type", "array-null"),
    # type: object
    case({"type": "object"}, {}, None, "object-empty"),
    case({"type": "object"}, {"a": 1}, None, "object-dict"),
    case({"type": "object"}, "", None, "object-empty-string"),
    case({"type": "object"}, [], None, "object-empty-list"),
    case({"type": "object"}, [1], "rest_invalid_type", "object-list"),
    case({"type": "object"}, "x", "rest_invalid_type", "object-string"),
    case({"type": "object"}, 5, "rest_invalid_type", "object-int"),
    # type lists, missing and unknown types
    case({"type": ["integer", "string"]}, "5", None, "types-integer-first"),
    case({"type": ["string", "null"]}, None, None, "types-null"),
    case({"type": ["integer", "null"]}, "abc", "rest_invalid_type", "types-no-match"),
    case({"type": ["boolean", "string"]}, "", None, "types-empty-string-is-string"),
    case({"type": ["boolean", "bogus"]}, "x", None, "types-unknown-type-passes"),
    case({"type": ["integer"], "minimum": 3}, "2", "rest_out_of_bounds", "types-then-keywords"),
    case({}, [1, {"a": None}], None, "no-type"),
    case({"type": "bogus"}, 5, None, "unknown-type"),
    # enum (compared after sanitising, strictly except 1 == 1.0)
    case({"type": "string", "enum": ["a", "b"]}, "a", None, "enum-ok"),
    case({"type": "string", "enum": ["a", "b"]}, "c", "rest_not_in_enum", "enum-miss"),
    case({"type": "integer", "enum": [1, 2]}, "2", None, "enum-sanitized-integer"),
    case({"type": "number", "enum": [1]}, 1.0, None, "enum-int-equals-float"),
    case({"type": "boolean", "enum": [True]}, "true", None, "enum-boolean-string"),
    case({"type": "integer", "enum": [True]}, 1, "rest_not_in_enum", "enum-bool-is-not-int"),
    case({"enum": ["1"]}, 1, "rest_not_in_enum", "enum-string-is-not-int"),
    case({"type": "string", "enum": []}, "x", None, "enum-empty-ignored"),
    case(
        {"type": "array", "items": {"type": "integer"}, "enum": [[1, 2]]},
        "1,2",
        None,
        "enum-array",
    ),
    case({"type": "object", "enum": [{"a": 1, "b": 2}]}, {"b": 2, "a": 1}, None, "enum-object"),
    case({"type": "object", "enum": [{"a": 1}]}, {"a": 2}, "rest_not_in_enum", "enum-object-miss"),
    # minimum / maximum, draft-4 boolean and draft-6 numeric exclusive forms
    case({"type": "integer", "minimum": 5}, 5, None, "minimum-equal"),
    case({"type": "integer", "minimum": 5}, 4, "rest_out_of_bounds", "minimum-below"),
    case({"type": "integer", "maximum": 5}, 5, None, "maximum-equal"),
    case({"type": "integer", "maximum": 5}, "6", "rest_out_of_bounds", "maximum-above-string"),
    case(
        {"type": "integer", "minimum": 5, "exclusiveMinimum": True},
        5,
        "rest_out_of_bounds",
        "exclusive-minimum-bool",
    ),
    case(
        {"type": "integer", "maximum": 5, "exclusiveMaximum": True},
        5,
        "rest_out_of_bounds",
        "exclusive-maximum-bool",
    ),
    case(
        {"type": "integer", "minimum": 5, "exclusiveMinimum": False},
        5,
        None,
        "exclusive-minimum-false",
    ),
    case({"type": "number", "exclusiveMinimum": 5}, 5, "rest_out_of_bounds", "draft6-min-equal"),
    case({"type": "number", "exclusiveMinimum": 5}, 5.01, None, "draft6-min-above"),
    case({"type": "number", "exclusiveMaximum": 5}, 5, "rest_out_of_bounds", "draft6-max-equal"),
    case({"type": "number", "exclusiveMaximum": 0}, -0.5, None, "draft6-max-zero"),
    case(
        {"type": "number", "minimum": 5, "exclusiveMinimum": 3},
        4,
        "rest_out_of_bounds",
        "draft6-and-minimum-stricter-wins",
    ),
    case({"type": "integer", "minimum": 1, "maximum": 3}, 2, None, "range-inside"),
    case({"type": "integer", "minimum": 1, "maximum": 3}, 0, "rest_out_of_bounds", "range-below"),
    case({"type": "integer", "minimum": 1, "maximum": 3}, 4, "rest_out_of_bounds", "range-above"),
    case(
        {"type": "integer", "minimum": 1, "maximum": 3},
        10**5000,
        "rest_out_of_bounds",
        "range-huge",
    ),
    case({"type": "integer", "minimum": 3}, 3.5, "rest_invalid_type", "bounds-before-integer"),
    case({"type": "integer", "maximum": 3}, 3.5, "rest_out_of_bounds", "bounds-then-integer"),
    # multipleOf
    case({"type": "integer", "multipleOf": 5}, 10, None, "multiple-ok"),
    case({"type": "integer", "multipleOf": 5}, "15", None, "multiple-string"),
    case({"type": "integer", "multipleOf": 5}, 7, "rest_invalid_multiple", "multiple-miss"),
    case({"type": "number", "multipleOf": 0.1}, 0.3, None, "multiple-decimal-exact"),
    case({"type": "number", "multipleOf": 0.5}, 1.25, "rest_invalid_multiple", "multiple-half"),
    case({"type": "number", "multipleOf": 0}, 1, "rest_invalid_multiple", "multiple-zero"),
    case({"type": "number", "multipleOf": 2}, 10**5000, None, "multiple-huge"),
    # minLength / maxLength (code points)
    case({"type": "string", "minLength": 3}, "ab", "rest_too_short", "min-length-short"),
    case({"type": "string", "minLength": 3}, "abc", None, "min-length-ok"),
    case({"type": "string", "maxLength": 3}, "abcd", "rest_too_long", "max-length-long"),
    case({"type": "string", "maxLength": 3}, "\xe9\xe9\xe9", None, "max-length-code-points"),
    case({"type": "string", "maxLength": 2}, "\U0001f600\U0001f600", None, "max-length-astral"),
    # pattern (searched, not anchored)
    case({"type": "string", "pattern": "^a"}, "abc", None, "pattern-anchored-ok"),
    case({"type": "string", "pattern": "b"}, "abc", None, "pattern-unanchored"),
    case({"type": "string", "pattern": "^b"}, "abc", "rest_invalid_pattern", "pattern-miss"),
    case({"type": "string", "pattern": "a#b"}, "a#b", None, "pattern-hash"),
    case({"type": "string", "pattern": "\\d+"}, "\u0665", None, "pattern-unicode-digit"),
    case({"type": "string", "pattern": "("}, "(", "rest_invalid_pattern", "pattern-invalid"),
    # format
    case({"type": "string", "format": "date-time"}, "2017-01-16T11:30:00Z", None, "date-time"),
    case({"type": "string", "format": "date-time"}, "1970-01-01T00:00:00Z", None, "date-epoch"),
    case({"type": "string", "format": "date-time"}, "2017-01-16", "rest_invalid_date", "date-bad"),
    case({"type": "string", "format": "email"}, "user@example.com", None, "email"),
    case({"type": "string", "format": "email"}, "a.b+c@mail.example.org", None, "email-plus"),
    case({"type": "string", "format": "email"}, "a@b.co", None, "email-six-chars"),
    case({"type": "string", "format": "email"}, "a@b.c", "rest_invalid_email", "email-short"),
    case(
        {"type": "string", "format": "email"}, "user@localhost", "rest_invalid_email", "email-tld"
    ),
    case(
        {"type": "string", "format": "email"}, "@example.com", "rest_invalid_email", "email-local"
    ),
    case({"type": "string", "format": "email"}, "u@-x.com", "rest_invalid_email", "email-hyphen"),
    case({"type": "string", "format": "email"}, "u@x..com", "rest_invalid_email", "email-dots"),
    case({"type": "string", "format": "email"}, "u@x.com\n", "rest_invalid_email", "email-newline"),
    case({"type": "string", "format": "email"}, "\xfc@x.com", "rest_invalid_email", "email-utf8"),
    case({"type": "string", "format": "uri"}, "https://example.com/x?y=1", None, "uri-https"),
    case({"type": "string", "format": "uri"}, "mailto:a@example.com", None, "uri-mailto"),
    case({"type": "string", "format": "uri"}, "urn:isbn:0451450523", None, "uri-urn"),
    case({"type": "string", "format": "uri"}, "example.com", "rest_invalid_uri", "uri-no-scheme"),
    case({"type": "string", "format": "uri"}, "https://", "rest_invalid_uri", "uri-no-host"),
    case({"type": "string", "format": "uri"}, "http://a b.com", "rest_invalid_uri", "uri-space"),
    case({"type": "string", "format": "uri"}, "http://[::1", "rest_invalid_uri", "uri-bad-ipv6"),
    case({"type": "string", "format": "uuid"}, UUID, None, "uuid"),
    case({"type": "string", "format": "uuid"}, UUID.upper(), None, "uuid-upper"),
    case({"type": "string", "format": "uuid"}, UUID[:-1], "rest_invalid_uuid", "uuid-short"),
    case({"type": "string", "format": "uuid"}, UUID + "\n", "rest_invalid_uuid", "uuid-newline"),
    case({"type": "string", "format": "ip"}, "127.0.0.1", None, "ipv4"),
    case({"type": "string", "format": "ip"}, "010.0.0.1", None, "ipv4-leading-zero"),
    case({"type": "string", "format": "ip"}, "::1", None, "ipv6"),
    case({"type": "string", "format": "ip"}, "::ffff:1.2.3.4", None, "ipv6-mapped-ipv4"),
    case({"type": "string", "format": "ip"}, "256.0.0.1", "rest_invalid_ip", "ipv4-range"),
    case({"type": "string", "format": "ip"}, "1.2.3", "rest_invalid_ip", "ipv4-short"),
    case({"type": "string", "format": "ip"}, "fe80::1%eth0", "rest_invalid_ip", "ipv6-zone"),
    case({"type": "string", "format": "hex-color"}, "#fff", None, "hex-short"),
    case({"type": "string", "format": "hex-color"}, "#A0b1C2", None, "hex-long"),
    case({"type": "string", "format": "hex-color"}, "#ffff", "rest_invalid_hex_color", "hex-4"),
    case({"type": "string", "format": "hex-color"}, "fff", "rest_invalid_hex_color", "hex-no-#"),
    case({"type": "string", "format": "hex-color"}, "#fff\n", "rest_invalid_hex_color", "hex-nl"),
    case({"type": "string", "format": "nonsense"}, "anything", None, "format-unknown"),
    case({"type": "integer", "format": "email"}, 5, None, "format-ignored-for-integer"),
    case({"format": "date-time"}, "x", "rest_invalid_date", "format-without-type"),
    case({"format": "date-time"}, 5, "rest_invalid_date", "format-without-type-non-string"),
    case({"type": ["string", "null"], "format": "uuid"}, None, None, "format-skipped-for-null"),
    # items, minItems, maxItems, uniqueItems
    case({"type": "array", "items": {"type": "integer"}}, "1,2,3", None, "items-ok"),
    case({"type": "array", "items": {"type": "integer"}}, "1,x", "rest_invalid_type", "items-bad"),
    case({"type": "array", "minItems": 2}, ["a"], "rest_too_few_items", "min-items"),
    case({"type": "array", "minItems": 2}, "a b", None, "min-items-ok"),
    case({"type": "array", "maxItems": 1}, "a,b", "rest_too_many_items", "max-items"),
    case({"type": "array", "uniqueItems": True}, [1, 2, 1], "rest_duplicate_items", "unique-dup"),
    case({"type": "array", "uniqueItems": True}, [1, "1", True], None, "unique-types-differ"),
    case({"type": "array", "uniqueItems": True}, [1, 1.0], "rest_duplicate_items", "unique-1-1.0"),
    case(
        {"type": "array", "uniqueItems": True},
        [{"a": 1, "b": 2}, {"b": 2, "a": 1}],
        "rest_duplicate_items",
        "unique-objects-key-order",
    ),
    case({"type": "array", "uniqueItems": True}, [[1], [2]], None, "unique-nested"),
    case({"type": "array", "uniqueItems": False}, [1, 1], None, "unique-false"),
    # properties, required, additionalProperties, patternProperties, min/maxProperties
    case(OBJECT_AB, {"a": 1, "b": "x"}, None, "properties-ok"),
    case(OBJECT_AB, {"a": "1", "b": "x"}, None, "properties-coercible"),
    case(OBJECT_AB, {"a": "x", "b": "x"}, "rest_invalid_type", "properties-bad"),
    case(OBJECT_AB, {"a": 1}, "rest_property_required", "required-per-property"),
    case(OBJECT_AB, {"b": "x", "c": [1]}, None, "extra-allowed"),
    case(
        {"type": "object", "properties": {"a": {}}, "required": ["a"]},
        {},
        "rest_property_required",
        "required-list",
    ),
    case(
        {"type": "object", "properties": {"a": {"required": True}}, "required": []},
        {},
        None,
        "required-list-wins",
    ),
    case(
        {"type": "object", "properties": {"a": {}}, "additionalProperties": False},
        {"a": 1, "b": 2},
        "rest_additional_properties_forbidden",
        "additional-forbidden",
    ),
    case(
        {"type": "object", "additionalProperties": {"type": "integer"}},
        {"x": "5", "y": "z"},
        "rest_invalid_type",
        "additional-schema",
    ),
    case(
        {
            "type": "object",
            "patternProperties": {"^n_": {"type": "integer"}},
            "additionalProperties": False,
        },
        {"n_a": 1, "n_b": "2"},
        None,
        "pattern-properties-ok",
    ),
    case(
        {
            "type": "object",
            "patternProperties": {"^n_": {"type": "integer"}},
            "additionalProperties": False,
        },
        {"n_a": "x"},
        "rest_invalid_type",
        "pattern-properties-bad",
    ),
    case({"type": "object", "minProperties": 1}, {}, "rest_too_few_properties", "min-props"),
    case(
        {"type": "object", "maxProperties": 1}, {"a": 1, "b": 2}, "rest_too_many_properties", "max"
    ),
    # anyOf / oneOf
    case({"anyOf": [{"type": "integer"}, {"type": "boolean"}]}, "5", None, "any-of-first"),
    case({"anyOf": [{"type": "integer"}, {"type": "boolean"}]}, "true", None, "any-of-second"),
    case(
        {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
        "x",
        "rest_no_matching_schema",
        "any-of-none",
    ),
    case(
        {"type": "integer", "anyOf": [{"minimum": 10}, {"maximum": 0}]},
        5,
        "rest_no_matching_schema",
        "any-of-inherits-type",
    ),
    case(
        {"oneOf": [{"type": "integer"}, {"type": "string"}]},
        5,
        None,
        "one-of-single",
    ),
    case(
        {"oneOf": [{"type": "integer"}, {"type": "number"}]},
        5,
        "rest_one_of_multiple_matches",
        "one-of-multiple",
    ),
]


@pytest.mark.parametrize(("schema", "value", "code"), VALIDATION_CASES)
def test_validate_value(schema: dict[str, Any], value: Any, code: str | None) -> None:
    error = validate_value(value, schema, "p")
    assert (None if error is None else error.code) == code


@pytest.mark.parametrize(
    ("schema", "value", "code", "message", "data"),
    [
        pytest.param(
            {"type": "integer"},
            "x",
            "rest_invalid_type",
            "p is not of type integer.",
            {"param": "p"},
            id="invalid-type",
        ),
        pytest.param(
            {"type": ["integer", "null"]},
            "x",
            "rest_invalid_type",
            "p is not of type integer,null.",
            {"param": "p"},
            id="invalid-type-list",
        ),
        pytest.param(
            {"type": "array", "items": {"type": "integer"}},
            "1,2,x",
            "rest_invalid_type",
            "p[2] is not of type integer.",
            {"param": "p[2]"},
            id="nested-item",
        ),
        pytest.param(
            {"type": "object", "properties": {"a": {"type": "boolean"}}},
            {"a": "maybe"},
            "rest_invalid_type",
            "p[a] is not of type boolean.",
            {"param": "p[a]"},
            id="nested-property",
        ),
        pytest.param(
            {"type": "string", "enum": ["a"]},
            "b",
            "rest_not_in_enum",
            "p is not a.",
            {"param": "p"},
            id="enum-single",
        ),
        pytest.param(
            {"type": "string", "enum": ["a", "b"]},
            "c",
            "rest_not_in_enum",
            "p is not one of a and b.",
            {"param": "p"},
            id="enum-two",
        ),
        pytest.param(
            {"enum": ["a", 2, None, [1], {"k": True}]},
            "c",
            "rest_not_in_enum",
            'p is not one of a, 2, null, [1], and {"k":true}.',
            {"param": "p"},
            id="enum-mixed",
        ),
        pytest.param(
            {"type": "integer", "minimum": 5},
            4,
            "rest_out_of_bounds",
            "p must be greater than or equal to 5",
            {"param": "p"},
            id="minimum",
        ),
        pytest.param(
            {"type": "number", "exclusiveMinimum": 1.5},
            1.5,
            "rest_out_of_bounds",
            "p must be greater than 1.5",
            {"param": "p"},
            id="exclusive-minimum",
        ),
        pytest.param(
            {"type": "integer", "maximum": 5},
            6,
            "rest_out_of_bounds",
            "p must be less than or equal to 5",
            {"param": "p"},
            id="maximum",
        ),
        pytest.param(
            {"type": "integer", "maximum": 5, "exclusiveMaximum": True},
            5,
            "rest_out_of_bounds",
            "p must be less than 5",
            {"param": "p"},
            id="exclusive-maximum",
        ),
        pytest.param(
            {"type": "integer", "minimum": 1, "maximum": 3},
            4,
            "rest_out_of_bounds",
            "p must be between 1 (inclusive) and 3 (inclusive)",
            {"param": "p"},
            id="between-inclusive",
        ),
        pytest.param(
            {"type": "integer", "minimum": 1, "maximum": 3, "exclusiveMaximum": True},
            3,
            "rest_out_of_bounds",
            "p must be between 1 (inclusive) and 3 (exclusive)",
            {"param": "p"},
            id="between-mixed",
        ),
        pytest.param(
            {"type": "number", "exclusiveMinimum": 1, "exclusiveMaximum": 3},
            1,
            "rest_out_of_bounds",
            "p must be between 1 (exclusive) and 3 (exclusive)",
            {"param": "p"},
            id="between-exclusive",
        ),
        pytest.param(
            {"type": "integer", "multipleOf": 5},
            7,
            "rest_invalid_multiple",
            "p must be a multiple of 5.",
            {"param": "p"},
            id="multiple",
        ),
        pytest.param(
            {"type": "string", "minLength": 1},
            "",
            "rest_too_short",
            "p must be at least 1 character long.",
            {"param": "p"},
            id="min-length-singular",
        ),
        pytest.param(
            {"type": "string", "minLength": 1000},
            "x",
            "rest_too_short",
            "p must be at least 1,000 characters long.",
            {"param": "p"},
            id="min-length-thousands",
        ),
        pytest.param(
            {"type": "string", "maxLength": 2},
            "abc",
            "rest_too_long",
            "p must be at most 2 characters long.",
            {"param": "p"},
            id="max-length",
        ),
        pytest.param(
            {"type": "string", "pattern": "^[a-z]+$"},
            "A",
            "rest_invalid_pattern",
            "p does not match pattern ^[a-z]+$.",
            {"param": "p"},
            id="pattern",
        ),
        pytest.param(
            {"type": "string", "format": "date-time"},
            "x",
            "rest_invalid_date",
            "Invalid date.",
            {"param": "p"},
            id="date-time",
        ),
        pytest.param(
            {"type": "string", "format": "email"},
            "x",
            "rest_invalid_email",
            "Invalid email address.",
            {"param": "p"},
            id="email",
        ),
        pytest.param(
            {"type": "string", "format": "hex-color"},
            "x",
            "rest_invalid_hex_color",
            "Invalid hex color.",
            {"param": "p"},
            id="hex-color",
        ),
        pytest.param(
            {"type": "string", "format": "ip"},
            "x",
            "rest_invalid_ip",
            "p is not a valid IP address.",
            {"param": "p"},
            id="ip",
        ),
        pytest.param(
            {"type": "string", "format": "uuid"},
            "x",
            "rest_invalid_uuid",
            "p is not a valid UUID.",
            {"param": "p"},
            id="uuid",
        ),
        pytest.param(
            {"type": "string", "format": "uri"},
            "x",
            "rest_invalid_uri",
            "p is not a valid URI.",
            {"param": "p"},
            id="uri",
        ),
        pytest.param(
            {"type": "array", "minItems": 2},
            "a",
            "rest_too_few_items",
            "p must contain at least 2 items.",
            {"param": "p"},
            id="min-items",
        ),
        pytest.param(
            {"type": "array", "maxItems": 1},
            "a,b",
            "rest_too_many_items",
            "p must contain at most 1 item.",
            {"param": "p"},
            id="max-items",
        ),
        pytest.param(
            {"type": "array", "uniqueItems": True},
            "a,a",
            "rest_duplicate_items",
            "p has duplicate items.",
            {"param": "p"},
            id="unique-items",
        ),
        pytest.param(
            OBJECT_AB,
            {},
            "rest_property_required",
            "b is a required property of p.",
            {"param": "p"},
            id="required",
        ),
        pytest.param(
            {"type": "object", "additionalProperties": False},
            {"x": 1},
            "rest_additional_properties_forbidden",
            "x is not a valid property of Object.",
            {"param": "p"},
            id="additional-properties",
        ),
        pytest.param(
            {"type": "object", "minProperties": 2},
            {"x": 1},
            "rest_too_few_properties",
            "p must contain at least 2 properties.",
            {"param": "p"},
            id="min-properties",
        ),
        pytest.param(
            {"type": "object", "maxProperties": 1},
            {"x": 1, "y": 2},
            "rest_too_many_properties",
            "p must contain at most 1 property.",
            {"param": "p"},
            id="max-properties",
        ),
        pytest.param(
            {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
            "x",
            "rest_no_matching_schema",
            "p does not match any of the expected formats.",
            {"param": "p"},
            id="any-of-none",
        ),
        pytest.param(
            {"anyOf": [{"type": "integer", "minimum": 10}, {"type": "boolean"}]},
            5,
            "rest_no_matching_schema",
            "p does not match the expected format. Reason: p must be greater than or equal to 10",
            {"param": "p", "position": 0},
            id="any-of-one-reason",
        ),
        pytest.param(
            {"anyOf": [{"type": "integer", "minimum": 10, "title": "Count"}, {"type": "boolean"}]},
            5,
            "rest_no_matching_schema",
            "p is not a valid Count. Reason: p must be greater than or equal to 10",
            {"param": "p", "position": 0},
            id="any-of-titled-reason",
        ),
        pytest.param(
            {"oneOf": [{"type": "integer"}, {"type": "number"}]},
            5,
            "rest_one_of_multiple_matches",
            "p matches more than one of the expected formats.",
            {"param": "p", "positions": [0, 1]},
            id="one-of-multiple",
        ),
        pytest.param(
            {"oneOf": [{"type": "integer", "title": "Int"}, {"type": "number", "title": "Num"}]},
            5,
            "rest_one_of_multiple_matches",
            "p matches Int and Num, but should match only one.",
            {"param": "p", "positions": [0, 1]},
            id="one-of-multiple-titled",
        ),
    ],
)
def test_validate_value_error_details(
    schema: dict[str, Any], value: Any, code: str, message: str, data: dict[str, Any]
) -> None:
    error = validate_value(value, schema, "p")
    assert isinstance(error, RestError)
    assert (error.code, error.message, error.data) == (code, message, data)


def test_validate_value_huge_digit_string_is_an_error_not_an_exception() -> None:
    error = validate_value("9" * 100_000, {"type": "integer"}, "n")
    assert error is not None
    assert error.code == "rest_invalid_type"


def test_validate_value_deeply_nested_unique_items() -> None:
    value: Any = 1
    for _ in range(400):
        value = [value]
    assert validate_value([value, 1], {"type": "array", "uniqueItems": True}, "p") is None


def sanitize_case(schema: dict[str, Any], value: Any, expected: Any, name: str) -> Any:
    """One row of the sanitising table."""
    return pytest.param(schema, value, expected, id=name)


SANITIZE_CASES = [
    sanitize_case({"type": "integer"}, "5", 5, "integer-string"),
    sanitize_case({"type": "integer"}, "-3", -3, "integer-negative"),
    sanitize_case({"type": "integer"}, "5.7", 5, "integer-truncates"),
    sanitize_case({"type": "integer"}, -5.7, -5, "integer-truncates-toward-zero"),
    sanitize_case({"type": "integer"}, "1e3", 1000, "integer-exponent"),
    sanitize_case({"type": "integer"}, True, 1, "integer-bool"),
    sanitize_case({"type": "integer"}, 10**30, 10**30, "integer-big"),
    sanitize_case({"type": "number"}, "1.5", 1.5, "number-string"),
    sanitize_case({"type": "number"}, 5, 5.0, "number-int"),
    sanitize_case({"type": "number"}, " 2e-1 ", 0.2, "number-exponent"),
    sanitize_case({"type": "boolean"}, "true", True, "boolean-true"),
    sanitize_case({"type": "boolean"}, "TRUE", True, "boolean-upper"),
    sanitize_case({"type": "boolean"}, "1", True, "boolean-one"),
    sanitize_case({"type": "boolean"}, "false", False, "boolean-false"),
    sanitize_case({"type": "boolean"}, "False", False, "boolean-false-title"),
    sanitize_case({"type": "boolean"}, "0", False, "boolean-zero"),
    sanitize_case({"type": "boolean"}, "", False, "boolean-empty"),
    sanitize_case({"type": "boolean"}, "yes", True, "boolean-other-string"),
    sanitize_case({"type": "boolean"}, 0, False, "boolean-int-zero"),
    sanitize_case({"type": "boolean"}, 1, True, "boolean-int-one"),
    sanitize_case({"type": "string"}, "abc", "abc", "string"),
    sanitize_case({"type": "string"}, 5, "5", "string-int"),
    sanitize_case({"type": "string"}, 1.5, "1.5", "string-float"),
    sanitize_case({"type": "string"}, True, "true", "string-bool"),
    sanitize_case({"type": "null"}, "anything", None, "null"),
    sanitize_case({"type": "array"}, "a,b c", ["a", "b", "c"], "array-split"),
    sanitize_case({"type": "array"}, " a ,, b\t", ["a", "b"], "array-drops-empty"),
    sanitize_case({"type": "array"}, "", [], "array-empty-string"),
    sanitize_case({"type": "array"}, 5, ["5"], "array-scalar"),
    sanitize_case({"type": "array"}, True, ["1"], "array-true"),
    sanitize_case({"type": "array"}, ("a", 1), ["a", 1], "array-tuple"),
    sanitize_case({"type": "array"}, {"x": 1, "y": 2}, [1, 2], "array-object-values"),
    sanitize_case(
        {"type": "array", "items": {"type": "integer"}}, "1, 2,,3", [1, 2, 3], "array-items"
    ),
    sanitize_case(
        {"type": "array", "items": {"type": "boolean"}},
        ["true", "0", True],
        [True, False, True],
        "array-items-list",
    ),
    sanitize_case(
        {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
        ["1,2", [3]],
        [[1, 2], [3]],
        "array-nested",
    ),
    sanitize_case({"type": "object"}, "", {}, "object-empty-string"),
    sanitize_case({"type": "object"}, [], {}, "object-empty-list"),
    sanitize_case(
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}},
            "additionalProperties": False,
        },
        {"a": "5", "b": "false", "c": "dropped"},
        {"a": 5, "b": False},
        "object-properties",
    ),
    sanitize_case(
        {"type": "object", "properties": {"a": {"type": "integer"}}},
        {"a": "5", "c": "kept"},
        {"a": 5, "c": "kept"},
        "object-extra-kept",
    ),
    sanitize_case(
        {"type": "object", "additionalProperties": {"type": "number"}},
        {"x": "1.5"},
        {"x": 1.5},
        "object-additional-schema",
    ),
    sanitize_case(
        {"type": "object", "patternProperties": {"^n": {"type": "integer"}}},
        {"n1": "7", "s": "7"},
        {"n1": 7, "s": "7"},
        "object-pattern-properties",
    ),
    sanitize_case({"type": ["integer", "string"]}, "5", 5, "types-integer-first"),
    sanitize_case({"type": ["integer", "string"]}, "abc", "abc", "types-string"),
    sanitize_case({"type": ["boolean", "string"]}, "", "", "types-empty-string"),
    sanitize_case({"type": ["string", "boolean"]}, "true", "true", "types-string-first"),
    sanitize_case({"type": ["null", "integer"]}, None, None, "types-null"),
    sanitize_case({"anyOf": [{"type": "integer"}, {"type": "string"}]}, "5", 5, "any-of"),
    sanitize_case({"oneOf": [{"type": "boolean"}, {"type": "array"}]}, "a,b", ["a", "b"], "one-of"),
    sanitize_case({}, {"a": [1]}, {"a": [1]}, "no-type-unchanged"),
    sanitize_case({"type": "bogus"}, "x", "x", "unknown-type-unchanged"),
    sanitize_case({"type": "string", "format": "hex-color"}, "#fff", "#fff", "hex-color"),
    sanitize_case({"type": "string", "format": "hex-color"}, "red", "", "hex-color-invalid"),
    sanitize_case(
        {"type": "string", "format": "date-time"},
        " 2017-01-16T11:30:00Z\n",
        "2017-01-16T11:30:00Z",
        "date-time-trimmed",
    ),
    sanitize_case(
        {"type": "string", "format": "email"},
        "<b>user@example.com</b>",
        "user@example.com",
        "email-tags-stripped",
    ),
    sanitize_case({"type": "string", "format": "uuid"}, "a%41b", "ab", "uuid-octets-removed"),
    sanitize_case(
        {"type": "string", "format": "text-field"}, "a \n\t b", "a b", "text-field-whitespace"
    ),
    sanitize_case(
        {"type": "string", "format": "textarea-field"},
        "a\n  b ",
        "a\n b",
        "textarea-field-keeps-newlines",
    ),
    sanitize_case(
        {"type": "string", "format": "uri"}, "example.com/a", "http://example.com/a", "uri-http"
    ),
    sanitize_case(
        {"type": "string", "format": "uri"},
        " https://example.com/a b ",
        "https://example.com/a%20b",
        "uri-space",
    ),
    sanitize_case({"type": "string", "format": "uri"}, "/path?q=1", "/path?q=1", "uri-relative"),
    sanitize_case({"type": "string", "format": "uri"}, "javascript:alert(1)", "", "uri-js"),
    sanitize_case(
        {"type": "string", "format": "uri"}, "https://x.org/<b>", "https://x.org/b", "uri-chars"
    ),
    sanitize_case({"format": "email"}, " a@b.co ", "a@b.co", "format-without-type"),
    sanitize_case({"type": "integer", "format": "email"}, "5", 5, "format-ignored-for-integer"),
]


@pytest.mark.parametrize(("schema", "value", "expected"), SANITIZE_CASES)
def test_sanitize_value(schema: dict[str, Any], value: Any, expected: Any) -> None:
    result = sanitize_value(value, schema, "p")
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("schema", "value", "code", "param"),
    [
        pytest.param({"type": "integer"}, "abc", "rest_invalid_type", "p", id="integer-text"),
        pytest.param({"type": "integer"}, None, "rest_invalid_type", "p", id="integer-null"),
        pytest.param({"type": "number"}, [1], "rest_invalid_type", "p", id="number-list"),
        pytest.param({"type": "number"}, 10**400, "rest_invalid_type", "p", id="number-too-big"),
        pytest.param({"type": "boolean"}, None, "rest_invalid_type", "p", id="boolean-null"),
        pytest.param({"type": "string"}, [1], "rest_invalid_type", "p", id="string-list"),
        pytest.param({"type": "array"}, None, "rest_invalid_type", "p", id="array-null"),
        pytest.param({"type": "object"}, "x", "rest_invalid_type", "p", id="object-string"),
        pytest.param(
            {"type": ["integer", "null"]}, "abc", "rest_invalid_type", "p", id="type-union"
        ),
        pytest.param(
            {"type": "array", "items": {"type": "integer"}},
            "1,x",
            "rest_invalid_type",
            "p[1]",
            id="array-item",
        ),
        pytest.param(
            {"type": "object", "properties": {"a": {"type": "integer"}}},
            {"a": "x"},
            "rest_invalid_type",
            "p[a]",
            id="object-property",
        ),
        pytest.param(
            {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
            "1,01",
            "rest_duplicate_items",
            "p",
            id="unique-after-sanitizing",
        ),
        pytest.param(
            {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "x",
            "rest_no_matching_schema",
            "p",
            id="any-of",
        ),
    ],
)
def test_sanitize_value_errors(schema: dict[str, Any], value: Any, code: str, param: str) -> None:
    result = sanitize_value(value, schema, "p")
    assert isinstance(result, RestError)
    assert (result.code, result.data["param"]) == (code, param)


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        pytest.param({}, {"required": False}, id="empty"),
        pytest.param(
            {
                "description": "The id.",
                "type": "integer",
                "validate_callback": print,
                "sanitize_callback": int,
                "required": True,
                "minimum": 1,
                "arg_options": {"x": 1},
            },
            {"required": True, "description": "The id.", "type": "integer", "minimum": 1},
            id="drops-callbacks",
        ),
        pytest.param(
            {"type": "string", "required": 1, "default": "a", "enum": ["a", "b"]},
            {"required": True, "type": "string", "default": "a", "enum": ["a", "b"]},
            id="required-truthy",
        ),
        pytest.param(
            {
                "title": "T",
                "items": {"type": "string"},
                "properties": {},
                "exclusiveMinimum": 1,
                "exclusiveMaximum": 9,
                "maximum": 9,
                "multipleOf": 2,
                "minLength": 1,
                "maxLength": 2,
                "pattern": "^a",
                "format": "uri",
                "minItems": 0,
                "maxItems": 3,
                "uniqueItems": True,
                "additionalProperties": False,
                "context": ["view"],
                "readonly": True,
                "oneOf": [],
                "anyOf": [],
                "unknown": 1,
            },
            {
                "required": False,
                "title": "T",
                "items": {"type": "string"},
                "properties": {},
                "exclusiveMinimum": 1,
                "exclusiveMaximum": 9,
                "maximum": 9,
                "multipleOf": 2,
                "minLength": 1,
                "maxLength": 2,
                "pattern": "^a",
                "format": "uri",
                "minItems": 0,
                "maxItems": 3,
                "uniqueItems": True,
                "additionalProperties": False,
                "context": ["view"],
                "readonly": True,
                "oneOf": [],
                "anyOf": [],
            },
            id="all-keywords",
        ),
    ],
)
def test_schema_keywords_for_help(arg: dict[str, Any], expected: dict[str, Any]) -> None:
    result = schema_keywords_for_help(arg)
    assert result == expected
    assert next(iter(result)) == "required"
    assert list(result) == list(expected)


_TYPES = ["string", "integer", "number", "boolean", "array", "object", "null", "bogus"]
_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(["", "5", "1.5", "true", "0", "a,b", "1e999", "#fff", "::1"]),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=3), children, max_size=4)
    ),
    max_leaves=12,
)
_numbers = st.integers(min_value=-5, max_value=5) | st.floats() | st.booleans()
_patterns = st.sampled_from(["^a", "(", "[0-9]+", "a{2,}", "", "[[a]", "\\"]) | st.text(max_size=4)
_formats = st.sampled_from(
    ["date-time", "email", "uri", "uuid", "ip", "hex-color", "text-field", "nonsense"]
)
_string_schemas = st.fixed_dictionaries(
    {"type": st.just("string")},
    optional={
        "minLength": _numbers,
        "maxLength": _numbers,
        "pattern": _patterns,
        "format": _formats,
        "enum": st.lists(_json_values, max_size=3),
    },
)
_schemas = st.recursive(
    _string_schemas
    | st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(_TYPES) | st.lists(st.sampled_from(_TYPES), max_size=3),
            "minimum": _numbers,
            "maximum": _numbers,
            "exclusiveMinimum": _numbers,
            "exclusiveMaximum": _numbers,
            "multipleOf": _numbers,
            "minItems": _numbers,
            "maxItems": _numbers,
            "uniqueItems": st.booleans(),
            "minProperties": _numbers,
            "required": st.booleans() | st.lists(st.text(max_size=2), max_size=2),
            "additionalProperties": st.booleans(),
            "format": _formats,
            "enum": st.lists(_json_values, max_size=3),
        },
    ),
    lambda children: st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(_TYPES),
            "items": children,
            "properties": st.dictionaries(st.text(max_size=2), children, max_size=3),
            "patternProperties": st.dictionaries(_patterns, children, max_size=2),
            "additionalProperties": children,
            "anyOf": st.lists(children, max_size=3),
            "oneOf": st.lists(children, max_size=3),
        },
    ),
    max_leaves=6,
)


def _check_result(error: Any) -> None:
    assert error is None or (
        isinstance(error, RestError)
        and isinstance(error.code, str)
        and error.code.startswith("rest_")
        and isinstance(error.message, str)
        and isinstance(error.data, dict)
    )


@settings(max_examples=300)
@given(value=_json_values, schema=_string_schemas)
def test_string_schemas_never_raise(value: Any, schema: dict[str, Any]) -> None:
    _check_result(validate_value(value, schema, "p"))
    sanitized = sanitize_value(value, schema, "p")
    if isinstance(sanitized, RestError):
        _check_result(sanitized)


@settings(max_examples=300)
@given(value=_json_values, schema=_schemas)
def test_any_schema_never_raises(value: Any, schema: dict[str, Any]) -> None:
    _check_result(validate_value(value, schema, "p"))
    sanitized = sanitize_value(value, schema, "p")
    if isinstance(sanitized, RestError):
        _check_result(sanitized)


@given(
    value=st.one_of(st.integers(), st.text(alphabet="0123456789.-+eE ", max_size=12), st.booleans())
)
def test_valid_integers_sanitize_to_int(value: Any) -> None:
    if validate_value(value, {"type": "integer"}, "p") is None:
        result = sanitize_value(value, {"type": "integer"}, "p")
        assert type(result) is int
        assert validate_value(result, {"type": "integer"}, "p") is None


@given(value=st.lists(st.text(alphabet="abc, \t", max_size=5), max_size=5).map(",".join))
def test_array_strings_sanitize_to_lists_of_non_empty_strings(value: str) -> None:
    assert validate_value(value, {"type": "array"}, "p") is None
    result = sanitize_value(value, {"type": "array"}, "p")
    assert isinstance(result, list)
    assert all(item and not set(item) & set(", \t") for item in result)


# -- big arrays: checked in bulk, with the errors of the item-by-item checks (issue 18) -------

_BIG = 1_300_000  # about a 10 MiB JSON body of seven-digit integers


def _item_by_item(items: list[Any], item_schema: dict[str, Any]) -> RestError | None:
    """The error the array check must give: the first item's, named ``p[index]``."""
    for index, item in enumerate(items):
        error = validate_value(item, item_schema, f"p[{index}]")
        if error is not None:
            return error
    return None


def _error_of(value: Any) -> tuple[str, str, Any] | None:
    return None if value is None else (value.code, value.message, value.data)


@pytest.mark.parametrize(
    ("item_schema", "bad", "code", "message"),
    [
        ({"type": "integer", "minimum": 1}, 0, "rest_out_of_bounds", "p[1000000] must be"),
        ({"type": "integer"}, 1.5, "rest_invalid_type", "p[1000000] is not of type integer."),
        ({"type": "number", "maximum": 10**9}, 10**10, "rest_out_of_bounds", "p[1000000] must"),
        ({"type": "string", "maxLength": 3}, "abcd", "rest_too_long", "p[1000000] must be at"),
        ({"type": "string", "pattern": "^a"}, "b", "rest_invalid_pattern", "p[1000000] does"),
        ({"type": "boolean"}, "maybe", "rest_invalid_type", "p[1000000] is not of type"),
    ],
    ids=["integer-minimum", "integer-type", "number-maximum", "string-length", "pattern", "bool"],
)
def test_a_late_bad_item_of_a_big_array_is_named(
    item_schema: dict[str, Any], bad: Any, code: str, message: str
) -> None:
    good = {"integer": 7, "number": 7.5, "string": "abc", "boolean": True}[item_schema["type"]]
    items = [good] * _BIG
    items[1_000_000] = bad
    error = validate_value(items, {"type": "array", "items": item_schema}, "p")
    assert error is not None
    assert error.code == code
    assert error.message.startswith(message)
    # Every other item is valid: the error is the bad item's own.
    assert validate_value(good, item_schema, "p[0]") is None
    assert _error_of(error) == _error_of(validate_value(bad, item_schema, "p[1000000]"))


def test_a_big_array_of_integers_is_valid_and_sanitizes_to_itself() -> None:
    items = list(range(1, _BIG + 1))
    schema = {"type": "array", "items": {"type": "integer", "minimum": 1}, "uniqueItems": True}
    assert validate_value(items, schema, "p") is None
    sanitized = sanitize_value(items, schema, "p")
    assert sanitized == items
    assert sanitized is not items


def test_a_big_array_of_numbers_sanitizes_to_floats() -> None:
    items: list[Any] = [1, 2.5] * (_BIG // 2)
    sanitized = sanitize_value(items, {"type": "array", "items": {"type": "number"}}, "p")
    assert sanitized == [1.0, 2.5] * (_BIG // 2)
    assert {type(item) for item in sanitized} == {float}


def test_duplicates_in_a_big_array_are_found() -> None:
    items: list[Any] = list(range(_BIG))
    items[-1] = 1.0  # JSON-equal to the 1 at index 1
    error = validate_value(items, {"type": "array", "uniqueItems": True}, "p")
    assert error is not None
    assert (error.code, error.message) == ("rest_duplicate_items", "p has duplicate items.")


_BULK_ITEM_SCHEMAS = st.fixed_dictionaries(
    {"type": st.sampled_from(["integer", "number", "string", "boolean"])},
    optional={
        "minimum": st.sampled_from([0, 1, 2.5]),
        "maximum": st.sampled_from([5, 9.5]),
        "exclusiveMinimum": st.sampled_from([True, False, 1]),
        "exclusiveMaximum": st.sampled_from([True, 5]),
        "minLength": st.sampled_from([1, 2]),
        "maxLength": st.sampled_from([2, 3]),
        "pattern": st.sampled_from(["^a", "[0-9]", "("]),
        "description": st.just("d"),
        "enum": st.just([1, "a"]),
    },
)
_ITEMS = st.lists(
    st.sampled_from(
        [
            *(0, 1, 3, 7, 10**30, 1.0, 2.5, -0.0, float("inf"), float("nan"), True, False, None),
            *("", "a", "abc", "5", " 7 ", "true", "1.5", "abcd", [1], {"a": 1}),
        ]
    ),
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(item_schema=_BULK_ITEM_SCHEMAS, items=_ITEMS, repeat=st.sampled_from([1, 1500]))
def test_array_checks_equal_the_item_by_item_checks(
    item_schema: dict[str, Any], items: list[Any], repeat: int
) -> None:
    values = items * repeat  # 1500 times up to 6 items spans two bulk chunks
    schema = {"type": "array", "items": item_schema}
    assert _error_of(validate_value(values, schema, "p")) == _error_of(
        _item_by_item(values, item_schema)
    )
    expected: list[Any] | RestError = []
    for index, item in enumerate(values):
        sanitized = sanitize_value(item, item_schema, f"p[{index}]")
        if isinstance(sanitized, RestError):
            expected = sanitized
            break
        assert isinstance(expected, list)
        expected.append(sanitized)
    got = sanitize_value(values, schema, "p")
    if isinstance(expected, RestError):
        assert isinstance(got, RestError)
        assert _error_of(got) == _error_of(expected)
    else:
        assert repr(got) == repr(expected)  # repr: nan != nan, and -0.0 keeps its sign
