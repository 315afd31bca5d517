"""UserStore: creating, finding, authenticating users and changing passwords."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from svcrest.auth.passwords import ScryptParams, verify_password
from svcrest.auth.sessions import SessionManager
from svcrest.auth.users import DuplicateUserError, UnknownUserError, UserStore, login_key
from svcrest.hooks import Hooks
from svcrest.http.user import ANONYMOUS, User
from svcrest.store import open_store
from svcrest.store.sqlite import SqliteStore

FAST = ScryptParams(n=16, r=1, p=1)


class Env:
    """A store, hooks and users with cheap password hashing, recording fired actions."""

    def __init__(self, location: str | None = None) -> None:
        self.store = open_store(location)
        self.hooks = Hooks()
        self.fired: list[tuple[str, tuple[Any, ...]]] = []
        for name in ("user_register", "svc_set_password"):
            self.hooks.add_action(name, self._recorder(name))
        self.users = UserStore(self.store, self.hooks, password_params=FAST, clock=lambda: 1000.0)

    def _recorder(self, name: str) -> Any:
        def record(*args: Any) -> None:
            self.fired.append((name, args))

        return record


@pytest.fixture
def env(store_location: str | None) -> Iterator[Env]:
    """Users on each engine (an in-memory SQLite database, a fresh PostgreSQL schema)."""
    environment = Env(store_location)
    yield environment
    environment.store.close()


def test_create_and_get(env: Env) -> None:
    alice = env.users.create("  Alice ", "s3cret", roles=("editor",), display_name="Alice A.")
    assert alice == User(id=1, login="Alice", roles=("editor",), display_name="Alice A.")
    bob = env.users.create("bob", "pw")
    assert bob == User(id=2, login="bob", roles=("subscriber",), display_name="bob")
    assert env.users.get(1) == alice
    assert env.users.get(2) == bob
    assert env.users.get(3) is None
    assert env.users.get(0) is ANONYMOUS
    assert env.fired == [("user_register", (1,)), ("user_register", (2,))]
    assert alice.can("edit_notes") is True
    assert bob.can("edit_notes") is False


def test_stored_row(env: Env) -> None:
    env.users.create("Carol", "pw", roles=["author", "editor", "author"])
    with env.store.read() as conn:
        row = conn.execute(
            "SELECT id, login, login_key, display_name, roles, registered FROM users"
        ).fetchone()
    assert row == (1, "Carol", "carol", "Carol", "author,editor", 1000)
    encoded = env.users.password_hash(1)
    assert encoded is not None
    assert encoded.startswith("scrypt$16$1$1$")
    assert "pw" not in encoded.split("$")
    assert verify_password("pw", encoded) is True


@pytest.mark.parametrize(
    "lookup",
    ["Alice", "alice", "ALICE", " alice ", "\uff41lice"],
    ids=["same", "lower", "upper", "padded", "fullwidth-a"],
)
def test_get_by_login_is_case_insensitive(env: Env, lookup: str) -> None:
    alice = env.users.create("Alice", "pw")
    assert env.users.get_by_login(lookup) == alice


@pytest.mark.parametrize(
    "lookup",
    ["", "   ", "bob", "alice\x00", "x" * 61, b"alice"],
    ids=["empty", "blank", "other", "nul", "too-long", "bytes"],
)
def test_get_by_login_misses(env: Env, lookup: Any) -> None:
    env.users.create("Alice", "pw")
    assert env.users.get_by_login(lookup) is None


@pytest.mark.parametrize(
    "duplicate",
    ["alice", "ALICE", " Alice", "\uff21lice"],
    ids=["lower", "upper", "padded", "fullwidth"],
)
def test_duplicate_login_refused(env: Env, duplicate: str) -> None:
    env.users.create("Alice", "pw")
    with pytest.raises(DuplicateUserError, match="already exists"):
        env.users.create(duplicate, "other")
    assert issubclass(DuplicateUserError, ValueError)


def test_decomposed_accent_is_a_duplicate(env: Env) -> None:
    env.users.create("Jos\u00e9", "pw")
    with pytest.raises(DuplicateUserError):
        env.users.create("jose\u0301", "pw")


def test_sharp_s_folds_to_ss(env: Env) -> None:
    env.users.create("strasse", "pw")
    with pytest.raises(DuplicateUserError):
        env.users.create("STRA\u00dfE", "pw")
    assert login_key("Stra\u00dfe") == "strasse"


@pytest.mark.parametrize(
    ("login", "message"),
    [
        ("", "login must not be empty"),
        ("   ", "login must not be empty"),
        ("x" * 61, "login must be at most 60 characters"),
        ("a|b", "login must not contain '|'"),
        ("a\nb", "control or invisible"),
        ("a\x00b", "control or invisible"),
        ("a\u200bb", "control or invisible"),
        ("a\ud800b", "control or invisible"),
        (b"alice", "login must be a string"),
    ],
    ids=[
        "empty",
        "blank",
        "too-long",
        "pipe",
        "newline",
        "nul",
        "zero-width",
        "surrogate",
        "bytes",
    ],
)
def test_bad_logins(env: Env, login: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        env.users.create(login, "pw")
    assert env.fired == []


def test_login_limits_accepted(env: Env) -> None:
    assert env.users.create("x" * 60, "pw").login == "x" * 60
    assert env.users.create("jane doe@example.com", "pw").login == "jane doe@example.com"
    assert env.users.create("Jos\u00e9", "pw").login == "Jos\u00e9"


@pytest.mark.parametrize(
    ("roles", "message"),
    [
        (("root",), "unknown role 'root'"),
        (("editor", "Editor"), "unknown role 'Editor'"),
        ((None,), "unknown role None"),
    ],
    ids=["unknown", "wrong-case", "none"],
)
def test_bad_roles(env: Env, roles: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        env.users.create("alice", "pw", roles=roles)


def test_roles_variants(env: Env) -> None:
    assert env.users.create("a", "pw", roles="administrator").roles == ("administrator",)
    assert env.users.create("b", "pw", roles=()).roles == ()
    assert env.users.get(2) == User(id=2, login="b", roles=(), display_name="b")


@pytest.mark.parametrize(
    ("password", "message"),
    [("", "password must not be empty"), (None, "password must be a string")],
    ids=["empty", "none"],
)
def test_bad_passwords(env: Env, password: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        env.users.create("alice", password)


@pytest.mark.parametrize(
    ("display_name", "expected"),
    [(None, "alice"), ("", "alice"), ("  Al  ", "Al")],
    ids=["none", "empty", "stripped"],
)
def test_display_name(env: Env, display_name: str | None, expected: str) -> None:
    assert env.users.create("alice", "pw", display_name=display_name).display_name == expected


def test_bad_display_name(env: Env) -> None:
    with pytest.raises(ValueError, match="display_name must not contain control"):
        env.users.create("alice", "pw", display_name="a\x07")
    with pytest.raises(ValueError, match="display_name must be at most 250"):
        env.users.create("alice", "pw", display_name="x" * 251)


@pytest.mark.parametrize(
    "user_id",
    [-1, True, 2**63, "1", 1.0, None],
    ids=["neg", "bool", "huge", "str", "float", "none"],
)
def test_get_with_odd_ids(env: Env, user_id: Any) -> None:
    env.users.create("alice", "pw")
    assert env.users.get(user_id) is None
    assert env.users.password_hash(user_id) is None


@pytest.mark.parametrize(
    ("login", "password", "expected_id"),
    [
        ("alice", "right", 1),
        ("ALICE", "right", 1),
        ("alice", "wrong", None),
        ("alice", "", None),
        ("alice", "Right", None),
        ("nobody", "right", None),
        ("", "right", None),
        ("alice", None, None),
        (None, "right", None),
    ],
    ids=[
        "ok",
        "case-insensitive-login",
        "wrong",
        "empty",
        "case-sensitive-password",
        "unknown",
        "empty-login",
        "none-password",
        "none-login",
    ],
)
def test_authenticate(env: Env, login: Any, password: Any, expected_id: int | None) -> None:
    env.users.create("Alice", "right")
    user = env.users.authenticate(login, password)
    assert (user.id if user is not None else None) == expected_id


def test_unknown_login_spends_a_scrypt_run(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def counting(password: str, encoded: str) -> bool:
        calls.append(encoded.split("$")[0])
        return verify_password(password, encoded)

    monkeypatch.setattr("svcrest.auth.users.verify_password", counting)
    env.users.create("alice", "pw")
    assert env.users.authenticate("nobody", "pw") is None
    assert env.users.authenticate("alice", "nope") is None
    assert calls == ["scrypt", "scrypt"]


def test_set_password_voids_sessions(env: Env) -> None:
    alice = env.users.create("alice", "old")
    bob = env.users.create("bob", "pw")
    sessions = SessionManager(env.store, lambda: 1000.0)
    alice_token = sessions.create(alice.id, 5000, "127.0.0.1", "ua")
    bob_token = sessions.create(bob.id, 5000, "127.0.0.1", "ua")
    before = env.users.password_hash(alice.id)
    env.users.set_password(alice.id, "new")
    assert env.users.password_hash(alice.id) != before
    assert env.users.authenticate("alice", "old") is None
    assert env.users.authenticate("alice", "new") == alice
    assert sessions.verify(alice.id, alice_token) is False
    assert sessions.verify(bob.id, bob_token) is True
    assert env.fired[-1] == ("svc_set_password", (alice.id,))


@pytest.mark.parametrize("user_id", [0, 99, -5], ids=["anonymous", "missing", "negative"])
def test_set_password_unknown_user(env: Env, user_id: int) -> None:
    with pytest.raises(UnknownUserError, match=f"no user with id {user_id}"):
        env.users.set_password(user_id, "pw")


def test_set_password_refuses_empty(env: Env) -> None:
    alice = env.users.create("alice", "pw")
    with pytest.raises(ValueError, match="password must not be empty"):
        env.users.set_password(alice.id, "")


def test_users_persist_in_a_file(tmp_path: Any) -> None:
    path = str(tmp_path / "users.db")
    with SqliteStore(path) as store:
        UserStore(store, Hooks(), password_params=FAST).create("alice", "pw", roles=["author"])
    with SqliteStore(path) as store:
        users = UserStore(store, Hooks(), password_params=FAST)
        assert users.authenticate("alice", "pw") == User(1, "alice", ("author",), "alice")


def test_delete_removes_the_user_and_their_sessions(env: Env) -> None:
    deleted: list[int] = []
    env.hooks.add_action("deleted_user", deleted.append)
    alice = env.users.create("alice", "pw")
    bob = env.users.create("bob", "pw")
    with env.store.transaction() as conn:
        conn.execute(
            "INSERT INTO sessions (user_id, token_hash, expiration, ip, user_agent, login_time)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (alice.id, "h" * 64, 2000, "ip", "ua", 1000),
        )
    assert env.users.delete(alice.id) is True
    assert deleted == [alice.id]
    assert env.users.get(alice.id) is None
    assert env.users.authenticate("alice", "pw") is None
    assert env.users.get(bob.id) == bob
    with env.store.read() as conn:
        assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 0
    assert [env.users.delete(alice.id), env.users.delete(0), env.users.delete(-1)] == [False] * 3
    assert deleted == [alice.id]
