"""Content codings (``svcrest.http.compression``): the coding a client's ``Accept-Encoding``
chooses, compression itself, and the BREACH guard."""

from __future__ import annotations

import gzip

import pytest

from svcrest.http.compression import (
    ALWAYS_SECRET_LINES,
    CODINGS,
    MIN_SIZE,
    breach_prone,
    compress,
    negotiated_coding,
)
from svcrest.http.headers import Headers

#: The answer lines the built-in schemes make secret (the cookie's nonce lines).
SECRET = ALWAYS_SECRET_LINES | {"x-svc-nonce", "x-wp-nonce"}
NO_HEADERS = Headers([])


def test_the_codings_prefer_br_then_zstd_then_gzip() -> None:
    order = [name for name in ("br", "zstd", "gzip") if name in CODINGS]
    assert list(CODINGS) == order
    assert "gzip" in CODINGS
    assert MIN_SIZE == 1024


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("", None),
        ("gzip", "gzip"),
        ("GZIP", "gzip"),
        ("identity", None),
        ("gzip;q=0", None),
        ("*;q=0", None),
        ("deflate", None),
        ("compress, gzip;q=0.5", "gzip"),
    ],
)
def test_negotiated_coding(header: str | None, expected: str | None) -> None:
    assert negotiated_coding(header) == expected


def test_a_star_takes_the_most_preferred_coding() -> None:
    assert negotiated_coding("*") == next(iter(CODINGS))
    assert negotiated_coding("*, gzip;q=0") == next(name for name in CODINGS if name != "gzip")


def test_the_same_header_gives_the_same_answer_twice() -> None:
    assert negotiated_coding("gzip;q=0.9, x-unknown") == "gzip"
    assert negotiated_coding("gzip;q=0.9, x-unknown") == "gzip"


def test_gzip_round_trips_and_is_repeatable() -> None:
    body = b"svcrest " * 400
    coded = compress(body, "gzip")
    assert gzip.decompress(coded) == body
    assert compress(body, "gzip") == coded  # mtime 0: the same bytes every time
    assert len(coded) < len(body) // 10


@pytest.mark.parametrize(
    ("lines", "body", "expected"),
    [
        ([("Content-Type", "application/json")], b'{"a": 1}', False),
        ([("Set-Cookie", "a=b")], b"{}", True),
        ([("X-SVC-Nonce", "abc")], b"{}", True),
        ([("x-wp-nonce", "abc")], b"{}", True),
        ([], b'{"wpNonce": "abc"}', True),
        ([], b'{"NONCE": 1}', True),
        ([], b'{"non-ce": 1}', False),
    ],
    ids=["plain", "cookie", "nonce-line", "wp-nonce-line", "body", "upper-body", "near-miss"],
)
def test_breach_prone_answers(lines: list[tuple[str, str]], body: bytes, expected: bool) -> None:
    assert breach_prone(lines, body, SECRET, NO_HEADERS, frozenset()) is expected


def test_a_request_with_a_secret_line_makes_its_answer_breach_prone() -> None:
    sent = Headers([("X-Robot-Token", "t")])
    assert breach_prone([], b"{}", SECRET, sent, frozenset({"x-robot-token"})) is True
    assert breach_prone([], b"{}", SECRET, sent, frozenset({"x-other"})) is False
    assert breach_prone([], b"{}", SECRET, sent, frozenset()) is False
