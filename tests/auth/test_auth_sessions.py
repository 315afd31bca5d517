"""SessionManager: only token hashes stored, expiry, destruction and pruning."""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from svcrest.auth.passwords import ScryptParams
from svcrest.auth.sessions import SessionManager, hash_token, new_token
from svcrest.auth.users import UserStore
from svcrest.hooks import Hooks
from svcrest.store import open_store
from tests.conftest import Clock

FAST = ScryptParams(n=16, r=1, p=1)


class Env:
    """A store with two users (ids 1 and 2) and a session manager on a fake clock."""

    def __init__(self, location: str | None = None) -> None:
        self.store = open_store(location)
        self.clock = Clock(1_000_000.0)
        users = UserStore(self.store, Hooks(), password_params=FAST)
        users.create("alice", "pw")
        users.create("bob", "pw")
        self.sessions = SessionManager(self.store, self.clock)

    def rows(self) -> list[tuple[Any, ...]]:
        with self.store.read() as conn:
            return conn.execute(
                "SELECT user_id, token_hash, expiration, ip, user_agent, login_time"
                " FROM sessions ORDER BY id"
            ).fetchall()


@pytest.fixture
def env(store_location: str | None) -> Iterator[Env]:
    """Sessions on each engine."""
    environment = Env(store_location)
    yield environment
    environment.store.close()


def test_token_shape() -> None:
    tokens = {new_token() for _ in range(50)}
    assert len(tokens) == 50
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{43}", token) for token in tokens)
    assert hash_token("abc") == hashlib.sha256(b"abc").hexdigest()


def test_create_stores_only_the_hash(env: Env) -> None:
    token = env.sessions.create(1, 1_000_100, "203.0.113.9", "Firefox")
    assert env.rows() == [(1, hash_token(token), 1_000_100, "203.0.113.9", "Firefox", 1_000_000)]
    with env.store.read() as conn:
        if isinstance(conn, sqlite3.Connection):
            dump = "\n".join(conn.iterdump())
        else:  # every row of every table of the schema, as text
            tables = conn.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = current_schema()"
            ).fetchall()
            assert {"users", "sessions", "options"} <= {str(t[0]) for t in tables}
            dump = "\n".join(repr(conn.execute(f"SELECT * FROM {t[0]}").fetchall()) for t in tables)
        assert hash_token(token) in dump
    assert token not in dump


def test_verify(env: Env) -> None:
    token = env.sessions.create(1, 1_000_100, "ip", "ua")
    assert env.sessions.verify(1, token) is True
    assert env.sessions.verify(2, token) is False
    assert env.sessions.verify(1, token[:-1]) is False
    env.clock.now = 1_000_100
    assert env.sessions.verify(1, token) is True  # valid through its expiration second
    env.clock.now = 1_000_100.5
    assert env.sessions.verify(1, token) is False


@pytest.mark.parametrize(
    ("user_id", "token"),
    [(0, "abc"), (-1, "abc"), (True, "abc"), (2**64, "abc"), (1, ""), (1, "a b"), (1, None)],
    ids=["anonymous", "negative", "bool", "huge", "empty-token", "bad-chars", "none-token"],
)
def test_verify_odd_input_is_false(env: Env, user_id: Any, token: Any) -> None:
    env.sessions.create(1, 1_000_100, "ip", "ua")
    assert env.sessions.verify(user_id, token) is False
    env.sessions.destroy(user_id, token)  # never raises either
    assert env.sessions.count(1) == 1


def test_destroy_and_destroy_all(env: Env) -> None:
    first = env.sessions.create(1, 1_000_100, "ip", "ua")
    second = env.sessions.create(1, 1_000_100, "ip", "ua")
    bobs = env.sessions.create(2, 1_000_100, "ip", "ua")
    env.sessions.destroy(2, first)  # wrong user: nothing happens
    assert env.sessions.count(1) == 2
    env.sessions.destroy(1, first)
    assert (env.sessions.verify(1, first), env.sessions.verify(1, second)) == (False, True)
    env.sessions.destroy_all(1)
    assert env.sessions.count(1) == 0
    assert env.sessions.verify(2, bobs) is True
    env.sessions.destroy_all(-1)
    assert env.sessions.count(True) == 0


def test_expired_rows_are_pruned_on_create(env: Env) -> None:
    env.sessions.create(1, 1_000_010, "ip", "ua")
    env.sessions.create(2, 1_000_500, "ip", "ua")
    env.clock.now = 1_000_011
    env.sessions.create(1, 1_000_900, "ip", "ua")
    assert [(row[0], row[2]) for row in env.rows()] == [(2, 1_000_500), (1, 1_000_900)]


def test_long_metadata_is_truncated(env: Env) -> None:
    env.sessions.create(1, 1_000_100, "1" * 500, "u" * 5000)
    (_user, _hash, _exp, ip, agent, _login) = env.rows()[0]
    assert (len(ip), len(agent)) == (100, 1000)


@pytest.mark.parametrize("user_id", [0, 3, -1], ids=["anonymous", "missing", "negative"])
def test_create_for_unknown_user(env: Env, user_id: int) -> None:
    with pytest.raises(ValueError, match=f"no user with id {user_id}"):
        env.sessions.create(user_id, 1_000_100, "ip", "ua")
    assert env.rows() == []
