"""The protocol-neutral exchange (``svcrest.http.exchange``): safe header lines, their wire
form, host names, whether a request has a body, and what an answer sends."""

from __future__ import annotations

import pytest

from svcrest.http.exchange import (
    HttpResponse,
    announces_body,
    encode_lines,
    headers_announce_body,
    host_name,
    remembered_host_name,
    safe_header_line,
    safe_lines,
    wire_lines,
)
from svcrest.http.headers import Headers


@pytest.mark.parametrize(
    ("line", "safe"),
    [
        (("X-A", "plain"), ("X-A", "plain")),
        (("X-A", "split\r\nSet-Cookie: a=b"), ("X-A", "splitSet-Cookie: a=b")),
        (("X-\nA", "nul\x00"), ("X-A", "nul")),
        (("X-A", "café ☕"), ("X-A", "café ?")),
    ],
    ids=["plain", "crlf", "lf-and-nul", "beyond-latin-1"],
)
def test_safe_header_line(line: tuple[str, str], safe: tuple[str, str]) -> None:
    assert safe_header_line(*line) == safe
    assert safe_lines([line]) == [safe]
    assert wire_lines([line]) == ((safe[0].encode("latin-1"), safe[1].encode("latin-1")),)
    assert (
        encode_lines([line, line]) == [(safe[0].encode("latin-1"), safe[1].encode("latin-1"))] * 2
    )


@pytest.mark.parametrize(
    ("host", "name"),
    [
        ("Example.ORG", "example.org"),
        ("example.org:8080", "example.org"),
        ("[::1]:8000", "::1"),
        ("[FE80::1]", "fe80::1"),
        ("", ""),
    ],
)
def test_host_name(host: str, name: str) -> None:
    assert host_name(host) == name
    assert remembered_host_name(host) == name
    assert remembered_host_name(host) == name  # remembered


@pytest.mark.parametrize(
    ("method", "lines", "expected"),
    [
        ("GET", [], False),
        ("GET", [("Content-Length", "0")], False),
        ("GET", [("Content-Length", "5")], True),
        ("DELETE", [("Transfer-Encoding", "chunked")], True),
        ("HEAD", [("Content-Length", " 0 "), ("Content-Length", "0")], False),
        ("POST", [], True),
        ("PATCH", [], True),
    ],
)
def test_whether_a_request_has_a_body(
    method: str, lines: list[tuple[str, str]], expected: bool
) -> None:
    headers = Headers(lines)
    assert announces_body(method, headers.index()) is expected
    assert headers_announce_body(method, Headers(lines)) is expected


def test_an_answer_on_the_wire() -> None:
    answer = HttpResponse(
        200,
        [("Content-Type", "application/json"), ("X-Bad", "a\r\nb")],
        b'{"a":1}',
        wire_prefix=((b"Content-Type", b"application/json"),),
        request_id="abc",
    )
    assert answer.wire_headers() == [
        (b"Content-Type", b"application/json"),
        (b"X-Bad", b"ab"),
        (b"X-Request-Id", b"abc"),
        (b"Content-Length", b"7"),
    ]
    assert answer.safe_headers() == [
        ("Content-Type", "application/json"),
        ("X-Bad", "ab"),
        ("X-Request-Id", "abc"),
        ("Content-Length", "7"),
    ]


@pytest.mark.parametrize("status", [204, 304, 101])
def test_no_content_length_where_it_is_forbidden(status: int) -> None:
    answer = HttpResponse(status, [("ETag", '"x"')])
    assert answer.wire_headers() == [(b"ETag", b'"x"')]
    assert answer.safe_headers() == [("ETag", '"x"')]


def test_a_head_answer_keeps_the_get_length() -> None:
    answer = HttpResponse(200, [], b"12345")
    answer.strip_body_for_head()
    assert (answer.body, answer.content_length) == (b"", 5)
    assert answer.wire_headers() == [(b"Content-Length", b"5")]
