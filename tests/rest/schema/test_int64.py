"""An ``integer`` is PHP's, 64-bit, as WordPress's are: ``validate_value`` refuses a whole
number outside [-2**63, 2**63 - 1] with WordPress's out-of-bounds wording for a range, after
the schema's own ``minimum`` / ``maximum``; the quick tests never accept one; ``number``
schemas are left as they were."""

from __future__ import annotations

from typing import Any

import pytest

from svcrest.rest.schema import quick_check, sanitize_value, validate_value

PAST = "n must be between -9223372036854775808 (inclusive) and 9223372036854775807 (inclusive)"

INSIDE = [
    (2**63 - 1, 2**63 - 1),
    (-(2**63), -(2**63)),
    ("9223372036854775807", 2**63 - 1),
    ("-9223372036854775808", -(2**63)),
    (9.2e18, 9200000000000000000),
    ("9.2e18", 9200000000000000000),
    (-9.2e18, -9200000000000000000),
    (0, 0),
]
OUTSIDE = [
    2**63,
    -(2**63) - 1,
    "9223372036854775808",
    "-9223372036854775809",
    1e19,
    -1e19,
    "1e19",
    1e20,
    "1e20",
    1e308,
    "100000000000000000000",
    "99999999999999999999999",
    2**64 - 1,
    10**30,
]


@pytest.mark.parametrize(("value", "sanitized"), INSIDE, ids=repr)
def test_a_whole_number_within_64_bits_is_an_integer(value: Any, sanitized: int) -> None:
    assert validate_value(value, {"type": "integer"}, "n") is None
    assert sanitize_value(value, {"type": "integer"}, "n") == sanitized


@pytest.mark.parametrize("value", OUTSIDE, ids=repr)
def test_a_whole_number_past_64_bits_is_out_of_bounds(value: Any) -> None:
    error = validate_value(value, {"type": "integer"}, "n")
    assert error is not None
    assert (error.code, error.message, error.data) == ("rest_out_of_bounds", PAST, {"param": "n"})


@pytest.mark.parametrize("value", OUTSIDE, ids=repr)
def test_no_quick_test_accepts_a_whole_number_past_64_bits(value: Any) -> None:
    for schema in ({"type": "integer"}, {"type": "integer", "minimum": 0}):
        check = quick_check(schema)
        assert check is not None
        assert not check(value)


@pytest.mark.parametrize(
    ("schema", "value", "message"),
    [
        ({"type": "integer", "minimum": 0}, -1e19, "n must be greater than or equal to 0"),
        ({"type": "integer", "minimum": 0}, 1e19, PAST),
        ({"type": "integer", "maximum": 10}, 1e19, "n must be less than or equal to 10"),
        ({"type": "integer", "maximum": 10}, -1e19, PAST),
        (
            {"type": "integer", "minimum": 1, "maximum": 10},
            10**30,
            "n must be between 1 (inclusive) and 10 (inclusive)",
        ),
        ({"type": "integer", "minimum": 0, "maximum": 2**64}, 2**63, PAST),
    ],
    ids=["min-first", "past-above-min", "max-first", "past-below-max", "range-first", "wide"],
)
def test_the_schemas_own_bounds_are_told_first(
    schema: dict[str, Any], value: Any, message: str
) -> None:
    error = validate_value(value, schema, "n")
    assert error is not None
    assert (error.code, error.message) == ("rest_out_of_bounds", message)


def test_nested_integers_are_held_to_64_bits() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "array", "items": {"type": "integer"}}},
    }
    error = validate_value({"a": [1, 2**63]}, schema, "n")
    assert error is not None
    assert error.message == PAST.replace("n must", "n[a][1] must")


def test_a_number_schema_is_left_as_it_was() -> None:
    assert validate_value(1e20, {"type": "number"}, "n") is None
    assert validate_value(2**63, {"type": "number"}, "n") is None
    assert sanitize_value("1e20", {"type": "number"}, "n") == 1e20


def test_too_many_digits_and_fractions_keep_their_type_error() -> None:
    for value in ("9" * 5000, 1.5, "1.5", "1e19.5", -2.5):
        error = validate_value(value, {"type": "integer"}, "n")
        assert error is not None
        assert error.code == "rest_invalid_type"


@pytest.mark.parametrize(
    ("types", "value", "message"),
    [
        (["integer", "number"], 1e20, None),
        (["integer", "string"], "1e20", None),
        (["integer", "string"], 1e20, PAST),
        (["integer", "null"], "99999999999999999999999", PAST),
        (["integer", "string"], "9223372036854775807", None),
    ],
    ids=["number-listed", "string-listed", "float-only-integer", "only-integer", "inside"],
)
def test_a_list_of_types_reads_a_number_past_64_bits_as_another_type(
    types: list[str], value: Any, message: str | None
) -> None:
    error = validate_value(value, {"type": types}, "n")
    assert (None if error is None else error.message) == message


def test_a_list_of_types_sanitises_a_number_past_64_bits_as_another_type() -> None:
    assert sanitize_value("1e20", {"type": ["integer", "number"]}, "n") == 1e20
    assert sanitize_value("1e20", {"type": ["integer", "string"]}, "n") == "1e20"
    assert sanitize_value("42", {"type": ["integer", "string"]}, "n") == 42
