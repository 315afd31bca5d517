"""Nonces: ticks, the HMAC construction, verification outcomes and hostile input."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from svcrest.auth.nonces import NonceManager, derive_key
from tests.conftest import Clock

SECRET = b"test-secret-key-0123456789abcdef"
HALF = 43200
START = HALF * 40_000 + 1.5  # inside tick 40_001


def make(now: float = START) -> tuple[NonceManager, Clock]:
    clock = Clock(now)
    return NonceManager(SECRET, clock), clock


def expected_nonce(tick: int, action: str, user_id: int, token: str) -> str:
    key = hmac.new(SECRET, b"nonce", hashlib.sha256).digest()
    message = f"{tick}|{action}|{user_id}|{token}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()[:32]


@pytest.mark.parametrize(
    ("now", "tick"),
    [(0.0, 0), (0.5, 1), (43200.0, 1), (43200.001, 2), (86400.0, 2), (START, 40_001)],
    ids=["zero", "first-second", "end-of-first", "start-of-second", "end-of-second", "start"],
)
def test_tick(now: float, tick: int) -> None:
    manager, _clock = make(now)
    assert manager.tick() == tick


def test_value_is_the_documented_hmac() -> None:
    manager, _clock = make()
    assert manager.create("svc_rest", 7, "tok") == expected_nonce(40_001, "svc_rest", 7, "tok")
    assert manager.create("log-out") == expected_nonce(40_001, "log-out", 0, "")
    assert derive_key(SECRET, b"nonce") == hmac.new(SECRET, b"nonce", hashlib.sha256).digest()


def test_nonce_shape() -> None:
    manager, _clock = make()
    nonce = manager.create("svc_rest", 1, "t")
    assert len(nonce) == 32
    assert set(nonce) <= set("0123456789abcdef")


@pytest.mark.parametrize(
    ("elapsed", "outcome"),
    [
        (0, 1),
        (HALF - 2, 1),  # still tick 40_001 (START is 1.5 s into it)
        (HALF - 1, 2),
        (HALF, 2),
        (2 * HALF - 2, 2),
        (2 * HALF - 1, False),
        (2 * HALF, False),
        (-HALF, False),  # a nonce from the future
    ],
    ids=[
        "same-moment",
        "end-of-tick",
        "next-tick",
        "half-later",
        "end-of-next-tick",
        "two-ticks-old",
        "a-day-later",
        "future",
    ],
)
def test_verify_by_age(elapsed: float, outcome: Any) -> None:
    manager, clock = make()
    nonce = manager.create("svc_rest", 3, "token")
    clock.now = START + elapsed
    assert manager.verify(nonce, "svc_rest", 3, "token") is outcome


@pytest.mark.parametrize(
    ("action", "user_id", "token"),
    [
        ("svc_rest_", 3, "token"),
        ("log-out", 3, "token"),
        ("svc_rest", 4, "token"),
        ("svc_rest", 0, "token"),
        ("svc_rest", 3, "other"),
        ("svc_rest", 3, ""),
    ],
    ids=["other-action", "log-out", "other-user", "anonymous", "other-token", "no-token"],
)
def test_verify_binds_action_user_and_token(action: str, user_id: int, token: str) -> None:
    manager, _clock = make()
    nonce = manager.create("svc_rest", 3, "token")
    assert manager.verify(nonce, action, user_id, token) is False


def test_other_secret_does_not_verify() -> None:
    manager, clock = make()
    other = NonceManager(b"another-secret", clock)
    assert other.verify(manager.create("svc_rest"), "svc_rest") is False


def _valid() -> str:
    manager, _clock = make()
    return manager.create("svc_rest", 3, "token")


@pytest.mark.parametrize(
    "nonce",
    [
        "",
        _valid()[:31],
        _valid() + "0",
        _valid().upper(),
        " " + _valid()[1:],
        "\u00e9" + _valid()[1:],
        "\x00" * 32,
        "\udcff" * 32,
        "0" * 32,
        "a" * 100_000,
        _valid() * 3000,
        None,
        b"0123456789abcdef0123456789abcdef",
        12345,
        ["nonce"],
    ],
    ids=[
        "empty",
        "truncated",
        "extended",
        "upper-case",
        "space",
        "non-ascii",
        "nul-bytes",
        "surrogates",
        "zeros",
        "100k",
        "repeated",
        "none",
        "bytes",
        "int",
        "list",
    ],
)
def test_hostile_nonces_are_false(nonce: Any) -> None:
    manager, _clock = make()
    assert manager.verify(nonce, "svc_rest", 3, "token") is False


@pytest.mark.parametrize(
    ("action", "user_id", "token"),
    [(None, 3, "token"), ("svc_rest", "3", "token"), ("svc_rest", True, "token"), ("a", 3, None)],
    ids=["action-none", "user-str", "user-bool", "token-none"],
)
def test_wrong_argument_types_are_false(action: Any, user_id: Any, token: Any) -> None:
    manager, _clock = make()
    assert manager.verify(_valid(), action, user_id, token) is False


class Text(str):
    pass


class Number(int):
    pass


def test_subclasses_of_str_and_int_verify_as_their_values() -> None:
    manager, _clock = make()
    nonce = manager.create("svc_rest", 3, "token")
    assert manager.verify(Text(nonce), Text("svc_rest"), Number(3), Text("token")) == 1
    assert manager.verify(Text(nonce), "svc_rest", Number(4), "token") is False


def test_create_checks_types() -> None:
    manager, _clock = make()
    with pytest.raises(TypeError, match="action and token must be str"):
        manager.create(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="user_id must be an int"):
        manager.create("a", "1")  # type: ignore[arg-type]


def test_odd_but_valid_arguments_round_trip() -> None:
    manager, _clock = make()
    for action in ("", "\u00e9t\u00e9", "a|b", "\ud800"):
        assert manager.verify(manager.create(action, 2**70, "t"), action, 2**70, "t") == 1


def test_constructor_checks() -> None:
    with pytest.raises(ValueError, match="non-empty bytes"):
        NonceManager(b"", Clock(0))
    with pytest.raises(ValueError, match="at least 2 seconds"):
        NonceManager(SECRET, Clock(0), lifetime=1)


def test_custom_lifetime() -> None:
    clock = Clock(100.5)
    manager = NonceManager(SECRET, clock, lifetime=10)
    assert manager.tick() == 21
    nonce = manager.create("a")
    clock.now = 105.5
    assert manager.verify(nonce, "a") == 2
    clock.now = 110.5
    assert manager.verify(nonce, "a") is False


def test_fuzz_verify_returns_only_declared_outcomes() -> None:
    manager, _clock = make()

    @settings(max_examples=300, deadline=None, database=None)
    @given(
        nonce=st.one_of(st.text(max_size=80), st.binary(max_size=40), st.integers(), st.none()),
        action=st.text(max_size=20),
        user_id=st.integers(min_value=-(2**70), max_value=2**70),
        token=st.text(max_size=50),
    )
    def check(nonce: Any, action: str, user_id: int, token: str) -> None:
        assert manager.verify(nonce, action, user_id, token) is False

    check()


def _counting(manager: NonceManager) -> list[int]:
    """Count the HMACs ``manager`` computes."""
    calls = [0]
    original = manager._value

    def counted(*args: Any) -> bytes:
        calls[0] += 1
        return original(*args)

    manager._value = counted  # type: ignore[method-assign,assignment]
    return calls


def test_a_verified_nonce_is_known_without_an_hmac_until_it_expires() -> None:
    manager, clock = make()
    nonce = manager.create("svc_rest", 5, "tok")
    hmacs = _counting(manager)
    assert manager.verify(nonce, "svc_rest", 5, "tok") == 1
    assert hmacs == [1]
    assert manager.verify(nonce, "svc_rest", 5, "tok") == 1
    clock.now = START + HALF
    assert manager.verify(nonce, "svc_rest", 5, "tok") == 2
    assert hmacs == [1]
    clock.now = START + 2 * HALF
    assert manager.verify(nonce, "svc_rest", 5, "tok") is False
    assert hmacs == [3]  # checked afresh: the current tick and the previous one


def test_a_nonce_verified_at_its_second_tick_is_known_as_such() -> None:
    manager, clock = make()
    nonce = manager.create("svc_rest", 5, "tok")
    clock.now = START + HALF
    assert manager.verify(nonce, "svc_rest", 5, "tok") == 2
    hmacs = _counting(manager)
    assert manager.verify(nonce, "svc_rest", 5, "tok") == 2
    assert hmacs == [0]
    clock.now = START + 2 * HALF
    assert manager.verify(nonce, "svc_rest", 5, "tok") is False


def test_a_verified_nonce_stays_bound_to_its_action_user_and_token() -> None:
    manager, _clock = make()
    nonce = manager.create("svc_rest", 5, "tok")
    assert manager.verify(nonce, "svc_rest", 5, "tok") == 1
    assert manager.verify(nonce, "svc_rest", 6, "tok") is False
    assert manager.verify(nonce, "svc_rest", 5, "other") is False
    assert manager.verify(nonce, "log-out", 5, "tok") is False


def test_the_memo_of_verified_nonces_is_bounded() -> None:
    manager, _clock = make()
    for index in range(5000):
        token = f"token-{index}"
        assert manager.verify(manager.create("svc_rest", 1, token), "svc_rest", 1, token) == 1
    assert len(manager._verified) == 4096
    long_token = "t" * 300
    assert manager.verify(manager.create("svc_rest", 1, long_token), "svc_rest", 1, long_token)
    assert ("svc_rest", long_token) not in {(key[1], key[3]) for key in manager._verified}


def test_verified_answers_as_verify_for_arguments_of_their_types() -> None:
    manager, clock = make()
    nonce = manager.create("svc_rest", 7, "tok")
    assert manager.verified(nonce, "svc_rest", 7, "tok") == 1
    assert manager.verified(nonce, "svc_rest", 8, "tok") is False
    assert manager.verified(nonce, "svc_rest", 7, "other") is False
    assert manager.verified("0" * 32, "svc_rest", 7, "tok") is False
    assert manager.verified("short", "svc_rest", 7, "tok") is False
    clock.now += HALF
    assert (
        manager.verified(nonce, "svc_rest", 7, "tok")
        == 2
        == manager.verify(nonce, "svc_rest", 7, "tok")
    )
    clock.now += HALF
    assert manager.verified(nonce, "svc_rest", 7, "tok") is False
