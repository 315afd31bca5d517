"""Password hashing: the encoding, verification and malformed encodings."""

from __future__ import annotations

import base64
import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from svcrest.auth.passwords import (
    DEFAULT_PARAMS,
    ScryptParams,
    hash_password,
    password_fragment,
    unmatchable_hash,
    verify_password,
)

FAST = ScryptParams(n=16, r=1, p=1)


def test_default_parameters() -> None:
    assert (DEFAULT_PARAMS.n, DEFAULT_PARAMS.r, DEFAULT_PARAMS.p) == (2**14, 8, 1)


def test_default_hash_round_trip() -> None:
    encoded = hash_password("correct horse")
    scheme, n, r, p, salt, digest = encoded.split("$")
    assert (scheme, n, r, p) == ("scrypt", "16384", "8", "1")
    assert len(base64.b64decode(salt)) == 16
    assert len(base64.b64decode(digest)) == 32
    assert verify_password("correct horse", encoded) is True
    assert verify_password("correct horsE", encoded) is False


def test_encoding_is_plain_scrypt() -> None:
    encoded = hash_password("pw", FAST)
    _scheme, _n, _r, _p, salt, digest = encoded.split("$")
    expected = hashlib.scrypt(b"pw", salt=base64.b64decode(salt), n=16, r=1, p=1, dklen=32)
    assert base64.b64decode(digest) == expected


def test_salt_is_random() -> None:
    first, second = hash_password("same", FAST), hash_password("same", FAST)
    assert first != second
    assert verify_password("same", first) is True
    assert verify_password("same", second) is True


@pytest.mark.parametrize(
    "password",
    ["", " ", "päss wörd", "\U0001f511 emoji", "\ud800 lone surrogate", "x" * 10_000],
    ids=["empty", "space", "accents", "emoji", "surrogate", "long"],
)
def test_round_trip_any_text(password: str) -> None:
    encoded = hash_password(password, FAST)
    assert verify_password(password, encoded) is True
    assert verify_password(password + "x", encoded) is False


def _valid() -> str:
    return hash_password("pw", FAST)


@pytest.mark.parametrize(
    "encoded",
    [
        "",
        "scrypt",
        "plain-text-password",
        "$P$Bsomephpasshash",
        "scrypt$16$1$1$c2FsdA==",
        "scrypt$16$1$1$c2FsdA==$aGFzaA==$extra",
        "bcrypt$16$1$1$c2FsdA==$" + "A" * 44,
        "scrypt$15$1$1$c2FsdA==$" + "A" * 44,
        "scrypt$0$1$1$c2FsdA==$" + "A" * 44,
        "scrypt$1048576$64$1$c2FsdA==$" + "A" * 44,
        "scrypt$16$1$99$c2FsdA==$" + "A" * 44,
        "scrypt$\uff11\uff16$1$1$c2FsdA==$" + "A" * 44,
        "scrypt$-16$1$1$c2FsdA==$" + "A" * 44,
        "scrypt$16$1$1$!!!!$" + "A" * 44,
        "scrypt$16$1$1$c2FsdA=$" + "A" * 44,
        "scrypt$16$1$1$$" + "A" * 44,
        "scrypt$16$1$1$c2FsdA==$aGFzaA==",
        "scrypt$16$1$1$c2FsdA==$" + "A" * 200,
        "scrypt$16$1$1$c2FsdA==$" + "A" * 1000,
        "scrypt$16$1$1$c2Fsd\u00e9==$" + "A" * 44,
    ],
    ids=[
        "empty",
        "scheme-only",
        "plain",
        "phpass",
        "five-fields",
        "seven-fields",
        "other-scheme",
        "n-not-power-of-two",
        "n-zero",
        "too-much-memory",
        "p-too-big",
        "fullwidth-digits",
        "negative",
        "bad-salt-chars",
        "bad-salt-padding",
        "empty-salt",
        "hash-too-short",
        "hash-too-long",
        "huge",
        "non-ascii",
    ],
)
def test_malformed_encodings_are_false(encoded: str) -> None:
    assert verify_password("pw", encoded) is False


def test_wrong_types_are_false() -> None:
    encoded = _valid()
    assert verify_password(b"pw", encoded) is False  # type: ignore[arg-type]
    assert verify_password("pw", None) is False  # type: ignore[arg-type]
    assert verify_password(None, None) is False  # type: ignore[arg-type]


def test_hash_password_refuses_bytes() -> None:
    with pytest.raises(TypeError, match="password must be a str"):
        hash_password(b"pw")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("n", "r", "p"),
    [(15, 1, 1), (1, 1, 1), (2**21, 1, 1), (16, 0, 1), (16, 1, 0), (2**20, 32, 1)],
    ids=["not-power", "n-one", "n-huge", "r-zero", "p-zero", "too-much-memory"],
)
def test_invalid_params_refused(n: int, r: int, p: int) -> None:
    with pytest.raises(ValueError, match="invalid scrypt parameters"):
        ScryptParams(n=n, r=r, p=p)


def test_fragment_is_a_slice_of_the_hash() -> None:
    encoded = _valid()
    assert password_fragment(encoded) == encoded.split("$")[5][:8]
    assert len(password_fragment(encoded)) == 8
    assert password_fragment(hash_password("pw", FAST)) != password_fragment(encoded)
    assert password_fragment("") == ""
    assert password_fragment("no-dollar-signs") == "no-dolla"
    assert password_fragment(None) == ""  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None, database=None)
@given(st.text(max_size=300))
def test_verify_never_raises_on_text(encoded: str) -> None:
    assert verify_password("pw", encoded) is False


def test_an_unmatchable_hash_has_the_form_and_cost_of_a_real_one() -> None:
    params = ScryptParams(n=16, r=1, p=1)
    dummy = unmatchable_hash(params)
    real = hash_password("pw", params)
    assert dummy.split("$")[:4] == real.split("$")[:4] == ["scrypt", "16", "1", "1"]
    assert [len(part) for part in dummy.split("$")[4:]] == [24, 44]
    assert unmatchable_hash(params) != dummy
    assert verify_password("", dummy) is False
    assert verify_password("pw", dummy) is False
