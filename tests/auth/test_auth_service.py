"""AuthService: log in / out, Set-Cookie headers, the cookie check and its actions."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from svcrest.auth.cookies import format_auth_cookie
from svcrest.auth.passwords import ScryptParams, password_fragment
from svcrest.auth.rest_cookie import COOKIE_ACTIONS
from svcrest.auth.service import (
    REMEMBER_LIFETIME,
    SECRET_KEY_OPTION,
    SESSION_LIFETIME,
    AuthService,
    IssuedCookie,
    ensure_secret_key,
)
from svcrest.auth.users import UserStore
from svcrest.hooks import Hooks
from svcrest.http.user import ANONYMOUS, User
from svcrest.store import open_store
from svcrest.store.sqlite import SqliteStore
from tests.conftest import Clock

FAST = ScryptParams(n=16, r=1, p=1)
SECRET = b"service-test-secret-0123456789"
NOW = 1_700_000_000.0  # Tue, 14 Nov 2023 22:13:20 GMT
MAC = "0123456789abcdef" * 4


class Env:
    """An AuthService over a store with alice (editor) and bob, recording every cookie action."""

    def __init__(self, location: str | None = None) -> None:
        self.store = open_store(location)
        self.hooks = Hooks()
        self.clock = Clock(NOW)
        self.users = UserStore(self.store, self.hooks, password_params=FAST, clock=self.clock)
        self.auth = AuthService(self.store, self.hooks, self.users, SECRET, self.clock)
        self.fired: list[tuple[str, tuple[Any, ...]]] = []
        for name in (*COOKIE_ACTIONS, "svc_login", "svc_logout"):
            self.hooks.add_action(name, self._recorder(name))
        self.alice = self.users.create("alice", "alice-pw", roles=("editor",))
        self.bob = self.users.create("bob", "bob-pw")

    def _recorder(self, name: str) -> Callable[..., None]:
        def record(*args: Any) -> None:
            self.fired.append((name, args))

        return record

    def log_in(self, user: User, *, remember: bool = False, secure: bool = False) -> IssuedCookie:
        cookie = self.auth.log_in(
            user, remember=remember, ip="198.51.100.7", user_agent="pytest", secure=secure
        )
        self.fired.clear()
        return cookie

    def names(self) -> list[str]:
        return [name for name, _args in self.fired]


@pytest.fixture
def env(store_location: str | None) -> Iterator[Env]:
    """The service on each engine."""
    environment = Env(store_location)
    yield environment
    environment.store.close()


def test_log_in_issues_a_session_cookie(env: Env) -> None:
    cookie = env.auth.log_in(
        env.alice, remember=False, ip="198.51.100.7", user_agent="pytest", secure=False
    )
    assert cookie.expiration == int(NOW) + SESSION_LIFETIME == 1_700_172_800
    assert cookie.max_age is None
    assert cookie.user == env.alice
    login, expiration, token, mac = cookie.value.split("|")
    assert (login, expiration, token) == ("alice", "1700172800", cookie.token)
    assert len(token) == 43
    assert len(mac) == 64
    assert cookie.set_cookie_header() == (
        f"svc_logged_in={cookie.value}; Path=/; HttpOnly; SameSite=Lax"
    )
    assert env.fired == [("svc_login", ("alice", env.alice))]
    with env.store.read() as conn:
        row = conn.execute("SELECT user_id, expiration, ip, user_agent FROM sessions").fetchone()
    assert row == (1, 1_700_172_800, "198.51.100.7", "pytest")


def test_log_in_remembered_and_secure(env: Env) -> None:
    cookie = env.log_in(env.bob, remember=True, secure=True)
    assert cookie.expiration == int(NOW) + REMEMBER_LIFETIME == 1_701_209_600
    assert cookie.max_age == 1_209_600
    assert cookie.set_cookie_header() == (
        f"svc_logged_in={cookie.value}; Path=/; HttpOnly; SameSite=Lax; Secure"
        "; Expires=Tue, 28 Nov 2023 22:13:20 GMT; Max-Age=1209600"
    )


@pytest.mark.parametrize(
    ("secure", "expected"),
    [
        (
            False,
            "svc_logged_in=; Path=/; HttpOnly; SameSite=Lax"
            "; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0",
        ),
        (
            True,
            "svc_logged_in=; Path=/; HttpOnly; SameSite=Lax; Secure"
            "; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0",
        ),
    ],
    ids=["http", "https"],
)
def test_clear_cookie_header(env: Env, secure: bool, expected: str) -> None:
    assert env.auth.clear_cookie_header(secure) == expected


def test_log_in_refuses_unknown_users(env: Env) -> None:
    for user in (ANONYMOUS, User(99, "ghost")):
        with pytest.raises(ValueError, match="no such user"):
            env.auth.log_in(user, remember=False, ip="", user_agent="", secure=False)


def test_valid_cookie(env: Env) -> None:
    cookie = env.log_in(env.alice)
    assert env.auth.validate_cookie(cookie.value) == (env.alice, cookie.token)
    elements = {
        "username": "alice",
        "expiration": "1700172800",
        "token": cookie.token,
        "hmac": cookie.value.split("|")[3],
        "scheme": "logged_in",
    }
    assert env.fired == [("auth_cookie_valid", (elements, env.alice))]


def test_cookie_for_a_non_ascii_login(env: Env) -> None:
    jose = env.users.create("Jos\u00e9 Smith", "pw")
    cookie = env.log_in(jose)
    assert cookie.value.startswith("Jos%C3%A9%20Smith|")
    assert env.auth.validate_cookie(cookie.value) == (jose, cookie.token)


@pytest.mark.parametrize("value", [None, ""], ids=["absent", "empty"])
def test_no_cookie_is_silent(env: Env, value: str | None) -> None:
    assert env.auth.validate_cookie(value) is None
    assert env.fired == []


def _swap(index: int, new: str) -> Callable[[str, Env], str]:
    def tamper(value: str, _env: Env) -> str:
        fields = value.split("|")
        fields[index] = new
        return "|".join(fields)

    return tamper


def _flip_last_hmac_char(value: str, _env: Env) -> str:
    return value[:-1] + ("0" if value[-1] != "0" else "1")


def _bob_token(value: str, env: Env) -> str:
    other = env.auth.log_in(env.bob, remember=False, ip="", user_agent="", secure=False)
    fields = value.split("|")
    fields[2] = other.token
    return "|".join(fields)


def _resigned_for_bob(value: str, env: Env) -> str:
    # A cookie for bob signed with alice's password fragment (a stolen fragment is not enough).
    alice_hash = env.users.password_hash(env.alice.id)
    assert alice_hash is not None
    _login, expiration, token, _mac = value.split("|")
    return format_auth_cookie(SECRET, "bob", int(expiration), token, password_fragment(alice_hash))


def _signed_with_other_secret(value: str, env: Env) -> str:
    alice_hash = env.users.password_hash(env.alice.id)
    assert alice_hash is not None
    _login, expiration, token, _mac = value.split("|")
    return format_auth_cookie(
        b"another-site", "alice", int(expiration), token, password_fragment(alice_hash)
    )


@pytest.mark.parametrize(
    ("tamper", "action"),
    [
        (_flip_last_hmac_char, "auth_cookie_bad_hash"),
        (_swap(3, MAC), "auth_cookie_bad_hash"),
        (_swap(0, "bob"), "auth_cookie_bad_hash"),
        (_swap(0, "ALICE"), "auth_cookie_bad_hash"),
        (_swap(0, "%61lice"), "auth_cookie_bad_hash"),
        (_swap(0, "mallory"), "auth_cookie_bad_username"),
        (_swap(1, "1700172801"), "auth_cookie_bad_hash"),
        (_swap(1, "01700172800"), "auth_cookie_bad_hash"),
        (_swap(1, "9999999999"), "auth_cookie_bad_hash"),
        (_swap(1, "1699999999"), "auth_cookie_expired"),
        (_swap(2, "B" * 43), "auth_cookie_bad_hash"),
        (_bob_token, "auth_cookie_bad_hash"),
        (_resigned_for_bob, "auth_cookie_bad_hash"),
        (_signed_with_other_secret, "auth_cookie_bad_hash"),
        (lambda value, _env: value[:-1], "auth_cookie_malformed"),
        (lambda value, _env: value.rsplit("|", 1)[0], "auth_cookie_malformed"),
        (lambda value, _env: value + "|extra", "auth_cookie_malformed"),
        (lambda value, _env: value.upper(), "auth_cookie_malformed"),
        (lambda value, _env: value + " ", "auth_cookie_malformed"),
        (lambda value, _env: "\u00e9" + value, "auth_cookie_malformed"),
        (lambda value, _env: value.replace("|", "%7C"), "auth_cookie_malformed"),
        (_swap(1, "-1"), "auth_cookie_malformed"),
        (_swap(2, "bad token"), "auth_cookie_malformed"),
    ],
    ids=[
        "hmac-flipped",
        "hmac-replaced",
        "login-other-user",
        "login-case",
        "login-percent-variant",
        "login-unknown",
        "expiration-later",
        "expiration-leading-zero",
        "expiration-far-future",
        "expiration-past",
        "token-replaced",
        "token-of-bob",
        "bob-with-alice-fragment",
        "other-secret",
        "truncated",
        "hmac-dropped",
        "extra-field",
        "upper-cased",
        "trailing-space",
        "non-ascii-prefix",
        "separators-encoded",
        "expiration-negative",
        "token-space",
    ],
)
def test_tampered_cookies(env: Env, tamper: Callable[[str, Env], str], action: str) -> None:
    cookie = env.log_in(env.alice)
    value = tamper(cookie.value, env)
    env.fired.clear()
    assert env.auth.validate_cookie(value) is None
    assert env.names() == [action]
    if action == "auth_cookie_malformed":
        assert env.fired[0][1] == (value, "logged_in")
    else:
        assert env.fired[0][1][0]["scheme"] == "logged_in"


@pytest.mark.parametrize(
    "value",
    [
        "caf\u00e9|1700172800|" + "A" * 43 + "|" + MAC,
        "\x00\x01\x02\x03|\xff|\xfe|\x80",
        "\udcff" * 10,
        "a" * 100_000,
        ("alice|1700172800|" + "A" * 43 + "|" + MAC) * 1000,
        "|||",
        "||||",
        " ",
    ],
    ids=[
        "non-ascii",
        "binary",
        "surrogates",
        "100k",
        "100k-repeated",
        "empty-fields",
        "5-empty",
        "space",
    ],
)
def test_hostile_values_are_malformed(env: Env, value: str) -> None:
    assert env.auth.validate_cookie(value) is None
    assert env.fired == [("auth_cookie_malformed", (value, "logged_in"))]


def test_non_str_values_are_malformed(env: Env) -> None:
    assert env.auth.validate_cookie(b"alice|1|t|h") is None  # type: ignore[arg-type]
    assert env.names() == ["auth_cookie_malformed"]


def test_expiry_boundary(env: Env) -> None:
    cookie = env.log_in(env.alice)
    env.clock.now = cookie.expiration
    assert env.auth.validate_cookie(cookie.value) == (env.alice, cookie.token)
    env.clock.now = cookie.expiration + 0.5
    assert env.auth.validate_cookie(cookie.value) is None
    assert env.names() == ["auth_cookie_valid", "auth_cookie_expired"]
    assert env.fired[1][1] == (
        {
            "username": "alice",
            "expiration": str(cookie.expiration),
            "token": cookie.token,
            "hmac": cookie.value.split("|")[3],
            "scheme": "logged_in",
        },
    )


def test_logged_out_session(env: Env) -> None:
    cookie = env.log_in(env.alice)
    env.auth.log_out(env.alice.id, cookie.token)
    assert env.auth.validate_cookie(cookie.value) is None
    assert env.names() == ["svc_logout", "auth_cookie_bad_session_token"]


def test_log_out_ends_only_that_session(env: Env) -> None:
    first = env.log_in(env.alice)
    second = env.log_in(env.alice, remember=True)
    assert first.token != second.token
    env.auth.log_out(env.alice.id, first.token)
    assert env.auth.validate_cookie(first.value) is None
    assert env.auth.validate_cookie(second.value) == (env.alice, second.token)


def test_log_out_with_someone_elses_id_does_nothing(env: Env) -> None:
    cookie = env.log_in(env.alice)
    env.auth.log_out(env.bob.id, cookie.token)
    assert env.auth.validate_cookie(cookie.value) == (env.alice, cookie.token)


def test_password_change_voids_cookies(env: Env) -> None:
    cookie = env.log_in(env.alice)
    other = env.log_in(env.bob)
    env.users.set_password(env.alice.id, "new-pw")
    assert env.auth.validate_cookie(cookie.value) is None
    assert env.names() == ["auth_cookie_bad_hash"]
    assert env.auth.validate_cookie(other.value) == (env.bob, other.token)
    fresh = env.log_in(env.alice)
    assert env.auth.validate_cookie(fresh.value) == (env.alice, fresh.token)


def test_server_side_session_gone(env: Env) -> None:
    cookie = env.log_in(env.alice)
    env.auth.sessions.destroy_all(env.alice.id)
    assert env.auth.validate_cookie(cookie.value) is None
    assert env.names() == ["auth_cookie_bad_session_token"]


def test_server_side_expiry_applies_to_session_cookies(env: Env) -> None:
    cookie = env.log_in(env.alice, remember=False)
    env.clock.now = NOW + SESSION_LIFETIME + 1
    assert env.auth.validate_cookie(cookie.value) is None
    assert env.names() == ["auth_cookie_expired"]


def test_nonces(env: Env) -> None:
    nonce = env.auth.create_nonce("svc_rest", env.alice.id, "tok")
    assert env.auth.verify_nonce(nonce, "svc_rest", env.alice.id, "tok") == 1
    assert env.auth.verify_nonce(nonce, "svc_rest", env.bob.id, "tok") is False
    assert env.auth.verify_nonce(nonce, "log-out", env.alice.id, "tok") is False
    env.clock.now = NOW + 43200
    assert env.auth.verify_nonce(nonce, "svc_rest", env.alice.id, "tok") == 2
    env.clock.now = NOW + 86400
    assert env.auth.verify_nonce(nonce, "svc_rest", env.alice.id, "tok") is False
    assert env.auth.create_nonce("svc_rest") == env.auth.nonces.create("svc_rest", 0, "")


def test_constructor_refuses_bad_secrets(env: Env) -> None:
    for secret in (b"", "text-secret"):
        with pytest.raises(ValueError, match="secret_key must be non-empty bytes"):
            AuthService(env.store, env.hooks, env.users, secret, env.clock)  # type: ignore[arg-type]


def test_ensure_secret_key(tmp_path: Path) -> None:
    path = str(tmp_path / "secret.db")
    with SqliteStore(path) as first, SqliteStore(path) as second:
        generated = ensure_secret_key(first)
        assert len(generated) == 64
        assert ensure_secret_key(second) == generated
        assert first.get_option(SECRET_KEY_OPTION) == generated.decode("ascii")
        assert ensure_secret_key(first, "given") == b"given"
        assert ensure_secret_key(first, b"given") == b"given"
        assert ensure_secret_key(first, "") == generated


def test_cookies_survive_a_restart(tmp_path: Path) -> None:
    path = str(tmp_path / "site.db")
    env = Env(path)
    cookie = env.log_in(env.alice)
    env.store.close()
    with SqliteStore(path) as store:
        users = UserStore(store, Hooks(), password_params=FAST)
        auth = AuthService(store, Hooks(), users, SECRET, Clock(NOW + 60))
        assert auth.validate_cookie(cookie.value) == (env.alice, cookie.token)


def test_concurrent_validation_never_mixes_users(tmp_path: Path) -> None:
    env = Env(str(tmp_path / "concurrent.db"))
    cookies = {env.alice.id: env.log_in(env.alice), env.bob.id: env.log_in(env.bob)}
    mistakes: list[str] = []

    def check(user_id: int) -> None:
        cookie = cookies[user_id]
        for _ in range(30):
            result = env.auth.validate_cookie(cookie.value)
            if result is None or result[0].id != user_id or result[1] != cookie.token:
                mistakes.append(f"{user_id}: {result!r}")
            if env.auth.validate_cookie("garbage") is not None:
                mistakes.append("garbage accepted")

    threads = [threading.Thread(target=check, args=(1 + i % 2,)) for i in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    env.store.close()
    assert mistakes == []


_STRUCTURED = st.tuples(
    st.sampled_from(["alice", "bob", "mallory", "ALICE", "%61lice", "%ZZ", "%FF"]),
    st.integers(min_value=0, max_value=10**12).map(str),
    st.text(alphabet="AB_-z9", min_size=1, max_size=50),
    st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
).map("|".join)


def test_fuzz_validate_cookie_only_declared_outcomes() -> None:
    env = Env()
    valid = env.log_in(env.alice)

    @settings(max_examples=400, deadline=None, database=None)
    @given(st.one_of(st.text(max_size=400), _STRUCTURED, st.just(valid.value)))
    def check(value: str) -> None:
        env.fired.clear()
        result = env.auth.validate_cookie(value)
        names = env.names()
        if value == "":
            assert (result, names) == (None, [])
        elif result is None:
            assert len(names) == 1
            assert names[0] in COOKIE_ACTIONS[:-1]
        else:
            assert (result, names) == ((env.alice, valid.token), ["auth_cookie_valid"])

    check()
    env.store.close()
