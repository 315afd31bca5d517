"""The ``format`` keyword and its sanitisers (``svcrest.rest.schema.formats``), with
WordPress's error codes and messages."""

from __future__ import annotations

from typing import Any

import pytest

from svcrest.rest.schema.formats import FORMAT_SANITIZERS, check_format


@pytest.mark.parametrize(
    ("fmt", "value"),
    [
        ("email", "kim@example.org"),
        ("email", "a.b+c@sub.example.co"),
        ("ip", "192.168.0.1"),
        ("ip", "::1"),
        ("ip", "2001:db8::8a2e:370:7334"),
        ("uri", "https://example.org/a?b=c"),
        ("uri", "urn:isbn:0451450523"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000"),
        ("hex-color", "#fff"),
        ("hex-color", "#A0b1C2"),
        ("date-time", "2024-05-01T09:30:00"),
        ("date-time", "2024-05-01T09:30:00+02:00"),
        ("unknown-format", "anything"),  # formats WordPress does not check pass
    ],
)
def test_valid_values_pass(fmt: str, value: str) -> None:
    assert check_format(value, fmt, "field") is None


@pytest.mark.parametrize(
    ("fmt", "value", "code", "message"),
    [
        ("email", "no-at-sign", "rest_invalid_email", "Invalid email address."),
        ("email", "a@b", "rest_invalid_email", "Invalid email address."),
        ("email", "kim@-bad-.org", "rest_invalid_email", "Invalid email address."),
        ("email", "kim@exa..mple.org", "rest_invalid_email", "Invalid email address."),
        ("ip", "256.0.0.1", "rest_invalid_ip", "field is not a valid IP address."),
        ("ip", "1.2.3", "rest_invalid_ip", "field is not a valid IP address."),
        ("ip", "fe80::1%eth0", "rest_invalid_ip", "field is not a valid IP address."),
        ("uri", "not a uri", "rest_invalid_uri", "field is not a valid URI."),
        ("uri", "https:no-host", "rest_invalid_uri", "field is not a valid URI."),
        ("uuid", "123e4567e89b12d3a4564266", "rest_invalid_uuid", "field is not a valid UUID."),
        ("hex-color", "#ffff", "rest_invalid_hex_color", "Invalid hex color."),
        ("hex-color", "fff", "rest_invalid_hex_color", "Invalid hex color."),
        ("date-time", "yesterday", "rest_invalid_date", "Invalid date."),
        ("email", 5, "rest_invalid_email", "Invalid email address."),  # not a string
    ],
)  # fmt: skip
def test_invalid_values_get_wordpress_errors(fmt: str, value: Any, code: str, message: str) -> None:
    error = check_format(value, fmt, "field")
    assert error is not None
    assert error.to_dict() == {"code": code, "message": message, "data": {"param": "field"}}


def test_a_format_that_is_not_a_string_is_not_checked() -> None:
    assert check_format("x", ["email"], "field") is None


@pytest.mark.parametrize(
    ("fmt", "text", "sanitized"),
    [
        ("hex-color", "#abc", "#abc"),
        ("hex-color", "red", ""),
        ("email", "  <b>kim@example.org</b> ", "kim@example.org"),
        ("date-time", "2024-05-01\t09:30", "2024-05-01 09:30"),
        ("text-field", "a%41b  c\nd", "ab c d"),
        ("textarea-field", "a\n\t b", "a\n b"),
        ("uri", "example.org/a b", "http://example.org/a%20b"),
        ("uri", "https://example.org/<x>", "https://example.org/x"),
        ("uri", "javascript:alert(1)", ""),
        ("uri", "/relative", "/relative"),
    ],
)
def test_sanitizers(fmt: str, text: str, sanitized: str) -> None:
    assert FORMAT_SANITIZERS[fmt](text) == sanitized
