"""The memo of valid cookies: reused while the database is unchanged, never after a write."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from svcrest.auth.cookies import CookieElements
from svcrest.auth.service import SESSION_CACHE_FILTER, SESSION_LIFETIME, AuthService
from svcrest.auth.users import UserStore
from svcrest.auth.verified_cookies import (
    MAX_VALUE_LENGTH,
    CookieSignature,
    KnownSignatures,
    VerifiedCookie,
    VerifiedCookies,
)
from svcrest.hooks import Hooks
from svcrest.http.user import User
from svcrest.store import sqlite as sqlite_module
from svcrest.store.sqlite import SqliteStore
from tests.auth.test_auth_service import FAST, NOW, SECRET, Env
from tests.auth.test_auth_service import env as env

ALICE = User(id=7, login="alice", roles=("editor",))


def _entry(valid_until: float = NOW + 100, token: str = "tok") -> VerifiedCookie:
    return VerifiedCookie(ALICE, token, {"username": "alice"}, valid_until)


# -- VerifiedCookies on its own --------------------------------------------------------------


def test_an_entry_answers_only_at_its_mark_and_until_its_second() -> None:
    memo = VerifiedCookies(10)
    entry = _entry(valid_until=NOW + 100)
    memo.put("cookie", 3, entry)
    assert memo.get("cookie", 3, NOW) is entry
    assert memo.get("cookie", 3, NOW + 100) is entry
    assert memo.get("cookie", 3, NOW + 100.5) is None
    assert memo.get("other", 3, NOW) is None
    assert memo.get("cookie", 2, NOW) is None  # an older mark than the memo's
    assert len(memo) == 1
    assert memo.get("cookie", 4, NOW) is None  # a newer mark empties the memo
    assert len(memo) == 0
    assert memo.mark == 4
    assert memo.get("cookie", 3, NOW) is None


def test_a_read_older_than_the_memo_is_not_kept() -> None:
    memo = VerifiedCookies(10)
    memo.put("new", 5, _entry())
    memo.put("stale", 4, _entry())
    assert memo.get("stale", 5, NOW) is None
    assert memo.get("new", 5, NOW) is not None
    memo.put("newer", 6, _entry())
    assert memo.get("new", 6, NOW) is None
    assert len(memo) == 1


def test_bounded_in_entries_and_bytes() -> None:
    memo = VerifiedCookies(3)
    for index in range(5):
        memo.put(f"cookie-{index}", 1, _entry())
    assert len(memo) == 3
    assert [memo.get(f"cookie-{i}", 1, NOW) is not None for i in range(5)] == [
        False,
        False,
        True,
        True,
        True,
    ]
    small = VerifiedCookies(1000, max_bytes=2000)
    for index in range(10):
        small.put(f"cookie-{index}", 1, _entry())
    assert len(small) == 2
    assert small.size_bytes <= 2000
    small.put("x" * (MAX_VALUE_LENGTH + 1), 1, _entry())
    assert small.get("x" * (MAX_VALUE_LENGTH + 1), 1, NOW) is None


def test_putting_a_value_again_replaces_it() -> None:
    memo = VerifiedCookies(2)
    memo.put("a", 1, _entry(token="first"))
    memo.put("a", 1, _entry(token="second"))
    assert len(memo) == 1
    found = memo.get("a", 1, NOW)
    assert found is not None and found.token == "second"


def test_no_room_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one entry"):
        VerifiedCookies(0)


# -- the cookie check with the memo ----------------------------------------------------------


@pytest.fixture(params=["wal-index", "data_version"])
def file_env(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Env]:
    """A file store whose change marks come from each source in turn (the wal-index header
    where it can be mapped, ``PRAGMA data_version`` otherwise)."""
    if request.param == "wal-index" and not sys.platform.startswith("linux"):
        pytest.skip("the wal-index is mapped on Linux only")
    if request.param == "data_version":
        monkeypatch.setattr(sqlite_module, "attach", lambda path: None)
    environment = Env(str(tmp_path / "site.db"))
    assert isinstance(environment.store, SqliteStore)
    assert environment.store.change_mark_source == request.param
    yield environment
    environment.store.close()


def _count_calls(owner: object, name: str) -> list[int]:
    """Count the calls of the method ``name`` of ``owner`` from now on."""
    calls = [0]
    original = getattr(owner, name)

    def counted(*args: Any) -> Any:
        calls[0] += 1
        return original(*args)

    setattr(owner, name, counted)
    return calls


def _count_reads(env: Env) -> list[int]:
    """Count the cookie check's reads of the store."""
    return _count_calls(env.users, "get_auth_record_with_session")


def test_a_valid_cookie_is_checked_against_the_store_once(file_env: Env) -> None:
    env = file_env
    cookie = env.log_in(env.alice)
    reads = _count_reads(env)
    for _ in range(3):
        assert env.auth.validate_cookie(cookie.value) == (env.alice, cookie.token)
    assert reads == [1]
    elements = {
        "username": "alice",
        "expiration": "1700172800",
        "token": cookie.token,
        "hmac": cookie.value.split("|")[3],
        "scheme": "logged_in",
    }
    assert env.fired == [("auth_cookie_valid", (elements, env.alice))] * 3


def test_a_callback_changing_the_elements_does_not_change_the_memo(file_env: Env) -> None:
    env = file_env
    cookie = env.log_in(env.alice)

    def scribble(elements: dict[str, Any], user: User) -> None:
        elements["username"] = "mallory"

    env.hooks.add_action("auth_cookie_valid", scribble)
    env.auth.validate_cookie(cookie.value)
    env.auth.validate_cookie(cookie.value)
    env.auth.validate_cookie(cookie.value)
    assert [args[0]["username"] for _name, args in env.fired] == ["mallory"] * 3


def _other_service(path: str) -> tuple[SqliteStore, AuthService, UserStore]:
    store = SqliteStore(path)
    hooks = Hooks()
    users = UserStore(store, hooks, password_params=FAST)
    return store, AuthService(store, hooks, users, SECRET, lambda: NOW), users


Revocation = Callable[[Env, AuthService, UserStore, str], None]


def _log_out(env: Env, other: AuthService, users: UserStore, token: str) -> None:
    other.log_out(env.alice.id, token)


def _all_sessions(env: Env, other: AuthService, users: UserStore, token: str) -> None:
    other.sessions.destroy_all(env.alice.id)


def _password(env: Env, other: AuthService, users: UserStore, token: str) -> None:
    users.set_password(env.alice.id, "changed-pw")


def _delete(env: Env, other: AuthService, users: UserStore, token: str) -> None:
    users.delete(env.alice.id)


@pytest.mark.parametrize(
    ("revoke", "action"),
    [
        (_log_out, "auth_cookie_bad_session_token"),
        (_all_sessions, "auth_cookie_bad_session_token"),
        (_password, "auth_cookie_bad_hash"),
        (_delete, "auth_cookie_bad_username"),
    ],
    ids=["logout", "all-sessions", "password", "deleted-user"],
)
@pytest.mark.parametrize("where", ["this-store", "another-store"])
def test_a_revocation_applies_from_the_next_check(
    file_env: Env, tmp_path: Path, revoke: Revocation, action: str, where: str
) -> None:
    env = file_env
    cookie = env.log_in(env.alice)
    assert env.auth.validate_cookie(cookie.value) == (env.alice, cookie.token)
    assert env.auth.validate_cookie(cookie.value) == (env.alice, cookie.token)  # from the memo
    if where == "this-store":
        revoke(env, env.auth, env.users, cookie.token)
    else:
        store, other, users = _other_service(str(tmp_path / "site.db"))
        revoke(env, other, users, cookie.token)
        store.close()
    env.fired.clear()
    assert env.auth.validate_cookie(cookie.value) is None
    assert env.names() == [action]


def test_a_role_change_applies_from_the_next_check(file_env: Env, tmp_path: Path) -> None:
    env = file_env
    cookie = env.log_in(env.alice)
    assert env.auth.validate_cookie(cookie.value) == (env.alice, cookie.token)
    store, _other, users = _other_service(str(tmp_path / "site.db"))
    users.set_roles(env.alice.id, ["author"])
    store.close()
    found = env.auth.validate_cookie(cookie.value)
    assert found is not None
    assert found[0].roles == ("author",)


_LOGOUT_CHILD = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("DELETE FROM sessions")
"""


def test_a_logout_by_another_process_applies_from_the_next_check(file_env: Env) -> None:
    env = file_env
    cookie = env.log_in(env.alice)
    assert env.auth.validate_cookie(cookie.value) == (env.alice, cookie.token)
    assert env.auth.validate_cookie(cookie.value) == (env.alice, cookie.token)
    assert isinstance(env.store, SqliteStore)
    path = env.store.path
    assert path is not None
    subprocess.run([sys.executable, "-c", _LOGOUT_CHILD, path], check=True, timeout=60)
    env.fired.clear()
    assert env.auth.validate_cookie(cookie.value) is None
    assert env.names() == ["auth_cookie_bad_session_token"]


def test_the_memo_stops_at_the_session_expiry(file_env: Env) -> None:
    env = file_env
    cookie = env.log_in(env.alice, remember=False)
    assert env.auth.validate_cookie(cookie.value) is not None
    env.clock.now = NOW + SESSION_LIFETIME
    assert env.auth.validate_cookie(cookie.value) == (env.alice, cookie.token)
    env.clock.now = NOW + SESSION_LIFETIME + 1
    env.fired.clear()
    assert env.auth.validate_cookie(cookie.value) is None
    assert env.names() == ["auth_cookie_expired"]


def test_a_bad_cookie_is_never_remembered(file_env: Env) -> None:
    env = file_env
    cookie = env.log_in(env.alice)
    forged = cookie.value[:-1] + ("0" if cookie.value[-1] != "0" else "1")
    reads = _count_reads(env)
    for _ in range(2):
        assert env.auth.validate_cookie(forged) is None
    assert reads == [2]
    assert env.names() == ["auth_cookie_bad_hash"] * 2
    memo = env.auth.verified_cookies
    assert memo is not None and len(memo) == 0


def test_the_filter_at_zero_turns_the_memo_off(tmp_path: Path) -> None:
    store = SqliteStore(str(tmp_path / "off.db"))
    hooks = Hooks()
    hooks.add_filter(SESSION_CACHE_FILTER, lambda entries: 0)
    users = UserStore(store, hooks, password_params=FAST)
    auth = AuthService(store, hooks, users, SECRET, lambda: NOW)
    assert auth.verified_cookies is None
    store.close()


def test_the_memo_is_only_on_stores_that_mark_changes(env: Env) -> None:
    """SQLite marks its changes; PostgreSQL has the session cache instead."""
    memo = env.auth.verified_cookies
    if env.store.dialect == "sqlite":
        assert memo is not None and env.auth.session_cache is None
    else:
        assert memo is None and env.auth.session_cache is not None


# -- known signatures: no HMAC for a cookie already found signed -----------------------------


def _count_hmacs(env: Env) -> list[int]:
    """Count the cookie check's HMAC computations."""
    return _count_calls(env.auth, "_hmac_matches")


def test_known_signatures_are_bounded() -> None:
    memo = KnownSignatures(2)
    signature = CookieSignature(CookieElements("a", "a", "1", "t", "h" * 64), "hash", "frag")
    for value in ("one", "two", "three"):
        memo.put(value, signature)
    assert len(memo) == 2
    assert memo.get("one") is None
    assert memo.get("three") is signature
    memo.put("x" * (MAX_VALUE_LENGTH + 1), signature)
    assert memo.get("x" * (MAX_VALUE_LENGTH + 1)) is None
    with pytest.raises(ValueError, match="at least one entry"):
        KnownSignatures(0)


def test_a_known_signature_spares_the_hmac_not_the_read(file_env: Env) -> None:
    env = file_env
    cookie = env.log_in(env.alice)
    assert env.auth.validate_cookie(cookie.value) == (env.alice, cookie.token)
    env.users.create("carol", "carol-pw")  # any write: the next check reads the store again
    reads, hmacs = _count_reads(env), _count_hmacs(env)
    assert env.auth.validate_cookie(cookie.value) == (env.alice, cookie.token)
    assert (reads, hmacs) == ([1], [0])
    env.users.set_password(env.alice.id, "changed-pw")
    env.fired.clear()
    assert env.auth.validate_cookie(cookie.value) is None
    assert (reads, hmacs) == ([2], [1])
    assert env.names() == ["auth_cookie_bad_hash"]


def test_each_engine_signs_a_cookie_once(env: Env) -> None:
    cookie = env.log_in(env.alice)
    hmacs = _count_hmacs(env)
    for _ in range(3):
        assert env.auth.validate_cookie(cookie.value) == (env.alice, cookie.token)
    assert hmacs == [1]
    env.auth.sessions.destroy_all(env.alice.id)
    env.fired.clear()
    assert env.auth.validate_cookie(cookie.value) is None
    assert env.names() == ["auth_cookie_bad_session_token"]
