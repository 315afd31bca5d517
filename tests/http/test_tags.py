"""Entity tags and their variants (``svcrest.http.tags``): made, varied and compared."""

from __future__ import annotations

from hashlib import blake2b

import pytest

from svcrest.http.tags import (
    CODED_SUFFIXES,
    body_tag,
    format_suffix,
    matching_tag,
    strong_match,
    tag_base,
    tag_variant,
)

MSGPACK = (format_suffix("msgpack"),)


def test_a_body_tag_is_16_bytes_of_blake2b_quoted() -> None:
    assert body_tag(b"") == '"' + blake2b(b"", digest_size=16).hexdigest() + '"'
    assert len(body_tag(b"x")) == 34
    assert body_tag(b"x") != body_tag(b"y")


def test_variants_and_suffixes() -> None:
    assert tag_variant('"v7"', "gzip") == '"v7-gzip"'
    assert tag_variant(tag_variant('"v7"', "msgpack"), "br") == '"v7-msgpack-br"'
    assert format_suffix("msgpack") == '-msgpack"'
    assert CODED_SUFFIXES == ('-gzip"', '-br"', '-zstd"')


@pytest.mark.parametrize(
    ("tag", "formats", "base"),
    [
        ('"v7"', (), '"v7"'),
        ('"v7-gzip"', (), '"v7"'),
        ('"v7-zstd"', (), '"v7"'),
        ('"v7-msgpack-br"', MSGPACK, '"v7"'),
        ('"v7-msgpack"', MSGPACK, '"v7"'),
        ('"v7-msgpack"', (), '"v7-msgpack"'),  # not one of the site's formats
        ('"v7-gzip-gzip"', (), '"v7-gzip"'),  # one coding only
        ('"v7-br-msgpack"', MSGPACK, '"v7-br"'),  # the coding comes last
    ],
)
def test_tag_base(tag: str, formats: tuple[str, ...], base: str) -> None:
    assert tag_base(tag, formats) == base


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ('"v7"', '"v7"'),
        ('W/"v7"', '"v7"'),
        ('"a", "v7-gzip"', '"v7-gzip"'),
        ("*", '"v7-msgpack"'),
        ('"v7-msgpack"', '"v7-msgpack"'),
        ('"v8"', None),
        ('"a" , W/"b"', None),
        ("v7", None),  # unquoted: not a tag
        ("", None),
        ('junk"v7-msgpack"', None),  # a tag inside junk is not a member
        ('w/"v7"', None),  # the weak indicator is upper-case
        ('junk, "v7"', '"v7"'),  # a malformed member is skipped to its comma
        (',, ,"v7"', '"v7"'),
    ],
)
def test_matching_tag_names_the_tag_to_answer_the_304_with(
    header: str, expected: str | None
) -> None:
    assert matching_tag(header, '"v7-msgpack"', MSGPACK) == expected


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ('"v7"', True),
        ('"v7-gzip"', True),
        ('"x", "v7"', True),
        ("*", True),
        ('W/"v7"', False),  # a weak tag never matches strongly
        ('"v8"', False),
        ("", False),
        ("**", False),
        ('junk"v7"', False),
        ('junk, "v7"', True),
    ],
)
def test_strong_match(header: str, expected: bool) -> None:
    assert strong_match(header, '"v7"') is expected
