"""The auth cookie format, its HMAC, and the Cookie header parser."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from svcrest.auth.cookies import (
    CookieElements,
    cookie_hmac,
    encode_login,
    format_auth_cookie,
    parse_auth_cookie,
    parse_cookie_header,
)

SECRET = b"cookie-test-secret"
TOKEN = "A" * 43
MAC = "0123456789abcdef" * 4


def test_hmac_is_the_documented_construction() -> None:
    key = hmac.new(SECRET, b"auth|alice|frag|1700000000|" + TOKEN.encode(), hashlib.sha256)
    expected = hmac.new(
        key.digest(), b"alice|1700000000|" + TOKEN.encode(), hashlib.sha256
    ).hexdigest()
    assert cookie_hmac(SECRET, "alice", "1700000000", TOKEN, "frag") == expected
    assert format_auth_cookie(SECRET, "alice", 1700000000, TOKEN, "frag") == (
        f"alice|1700000000|{TOKEN}|{expected}"
    )


def test_hmac_depends_on_every_input() -> None:
    base = cookie_hmac(SECRET, "alice", "1700000000", TOKEN, "frag")
    variants = [
        cookie_hmac(b"other-secret", "alice", "1700000000", TOKEN, "frag"),
        cookie_hmac(SECRET, "alicf", "1700000000", TOKEN, "frag"),
        cookie_hmac(SECRET, "alice", "1700000001", TOKEN, "frag"),
        cookie_hmac(SECRET, "alice", "01700000000", TOKEN, "frag"),
        cookie_hmac(SECRET, "alice", "1700000000", "B" + TOKEN[1:], "frag"),
        cookie_hmac(SECRET, "alice", "1700000000", TOKEN, "frah"),
    ]
    assert len({base, *variants}) == 7


@pytest.mark.parametrize(
    ("login", "field"),
    [
        ("alice", "alice"),
        ("jane doe", "jane%20doe"),
        ("jane@example.com", "jane@example.com"),
        ("Jos\u00e9", "Jos%C3%A9"),
        ('a;b,c"d\\e%f', "a%3Bb%2Cc%22d%5Ce%25f"),
    ],
    ids=["plain", "space", "email", "accent", "specials"],
)
def test_login_encoding_round_trips(login: str, field: str) -> None:
    assert encode_login(login) == field
    value = format_auth_cookie(SECRET, login, 1700000000, TOKEN, "frag")
    elements = parse_auth_cookie(value)
    assert elements is not None
    assert (elements.login, elements.login_field) == (login, field)


def test_parse_well_formed() -> None:
    elements = parse_auth_cookie(f"Jos%C3%A9|1700000000|{TOKEN}|{MAC}")
    assert elements == CookieElements("Jos%C3%A9", "Jos\u00e9", "1700000000", TOKEN, MAC)
    assert elements.expiration == 1700000000
    assert elements.as_dict() == {
        "username": "Jos\u00e9",
        "expiration": "1700000000",
        "token": TOKEN,
        "hmac": MAC,
        "scheme": "logged_in",
    }


@pytest.mark.parametrize(
    "value",
    [
        "",
        "alice",
        f"alice|1700000000|{TOKEN}",
        f"alice|1700000000|{TOKEN}|{MAC}|extra",
        f"|1700000000|{TOKEN}|{MAC}",
        f"alice||{TOKEN}|{MAC}",
        f"alice|17e8|{TOKEN}|{MAC}",
        f"alice|-1|{TOKEN}|{MAC}",
        f"alice|\uff11\uff17|{TOKEN}|{MAC}",
        f"alice|1234567890123|{TOKEN}|{MAC}",
        f"alice|1700000000||{MAC}",
        f"alice|1700000000|{TOKEN}.|{MAC}",
        f"alice|1700000000|{'A' * 129}|{MAC}",
        f"alice|1700000000|{TOKEN}|{MAC.upper()}",
        f"alice|1700000000|{TOKEN}|{MAC[:-1]}",
        f"alice|1700000000|{TOKEN}|{MAC}0",
        f"alice|1700000000|{TOKEN}|{MAC[:-1]}g",
        f"al ice|1700000000|{TOKEN}|{MAC}",
        f"al;ice|1700000000|{TOKEN}|{MAC}",
        f"Jos\u00e9|1700000000|{TOKEN}|{MAC}",
        f"%FF%FE|1700000000|{TOKEN}|{MAC}",
        f"alice\x00|1700000000|{TOKEN}|{MAC}",
        f"alice|1700000000|{TOKEN}|{MAC}\n",
        "x" * 100_000,
        "|" * 100_000,
        f"{'a' * 5000}|1700000000|{TOKEN}|{MAC}",
        "\udcff\udcfe",
        None,
        b"alice|1|t|" + MAC.encode(),
    ],
    ids=[
        "empty",
        "one-field",
        "three-fields",
        "five-fields",
        "empty-login",
        "empty-expiration",
        "exponent",
        "negative",
        "fullwidth-digits",
        "expiration-too-long",
        "empty-token",
        "token-bad-char",
        "token-too-long",
        "hmac-upper",
        "hmac-short",
        "hmac-long",
        "hmac-not-hex",
        "space",
        "semicolon",
        "raw-non-ascii",
        "bad-utf8-escape",
        "nul",
        "newline",
        "100k",
        "100k-pipes",
        "login-too-long",
        "surrogates",
        "none",
        "bytes",
    ],
)
def test_malformed_values(value: Any) -> None:
    assert parse_auth_cookie(value) is None


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("", {}),
        ("a=1", {"a": "1"}),
        ("a=1; b=2", {"a": "1", "b": "2"}),
        ("a=1;b=2;;", {"a": "1", "b": "2"}),
        ("  a = 1 ;\tb=2\t", {"a": "1", "b": "2"}),
        ('a="quoted value"', {"a": "quoted value"}),
        ('a="', {"a": '"'}),
        ("a=1; a=2", {"a": "1"}),
        ("a=x=y", {"a": "x=y"}),
        ("novalue; a=1", {"a": "1"}),
        ("=orphan; a=1", {"a": "1"}),
        ("a=", {"a": ""}),
        ("A=1; a=2", {"A": "1", "a": "2"}),
        ("xsvc_logged_in=evil", {"xsvc_logged_in": "evil"}),
        (
            "svc_logged_in2=evil; svc_logged_in=good",
            {"svc_logged_in2": "evil", "svc_logged_in": "good"},
        ),
        ("svc_logged_in=first; svc_logged_in=second", {"svc_logged_in": "first"}),
        ("\u00e9=\u00ff\x00", {"\u00e9": "\u00ff\x00"}),
    ],
    ids=[
        "empty",
        "one",
        "two",
        "trailing-semicolons",
        "whitespace",
        "quoted",
        "lone-quote",
        "first-wins",
        "equals-in-value",
        "no-equals-skipped",
        "empty-name-skipped",
        "empty-value",
        "case-sensitive",
        "prefixed-name",
        "suffixed-name",
        "duplicate-auth-cookie",
        "latin1",
    ],
)
def test_parse_cookie_header(header: str, expected: dict[str, str]) -> None:
    assert parse_cookie_header(header) == expected


def test_parse_cookie_header_non_str() -> None:
    assert parse_cookie_header(None) == {}
    assert parse_cookie_header(b"a=1") == {}


def test_parse_cookie_header_large() -> None:
    header = "; ".join(f"c{i}=v{i}" for i in range(2000)) + "; svc_logged_in=" + "x" * 100_000
    cookies = parse_cookie_header(header)
    assert len(cookies) == 2001
    assert cookies["c1999"] == "v1999"
    assert len(cookies["svc_logged_in"]) == 100_000


@settings(max_examples=300, deadline=None, database=None)
@given(st.binary(max_size=300))
def test_fuzz_parse_cookie_header_latin1(raw: bytes) -> None:
    cookies = parse_cookie_header(raw.decode("latin-1"))
    assert all(isinstance(k, str) and isinstance(v, str) and k for k, v in cookies.items())


@settings(max_examples=300, deadline=None, database=None)
@given(st.text(max_size=300))
def test_fuzz_parse_cookie_header_text(header: str) -> None:
    cookies = parse_cookie_header(header)
    assert all(";" not in k and ";" not in v for k, v in cookies.items())


@settings(max_examples=300, deadline=None, database=None)
@given(
    st.one_of(
        st.text(max_size=300),
        st.lists(st.text(alphabet="ab%|0123456789fA_-", max_size=70), min_size=4, max_size=4).map(
            "|".join
        ),
    )
)
def test_fuzz_parse_auth_cookie(value: str) -> None:
    elements = parse_auth_cookie(value)
    assert elements is None or isinstance(elements, CookieElements)
