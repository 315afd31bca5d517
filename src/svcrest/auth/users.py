"""Users persisted in the store: creation, look-up, password checks and password changes."""

from __future__ import annotations

import functools
import sqlite3
import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from svcrest.auth.passwords import (
    DEFAULT_PARAMS,
    ScryptParams,
    hash_password,
    verify_password,
)
from svcrest.hooks import Hooks
from svcrest.http.user import ANONYMOUS, ROLE_CAPABILITIES, User
from svcrest.store.sqlite import SqliteStore

__all__ = [
    "AUTH_SCHEMA",
    "MAX_LOGIN_LENGTH",
    "DuplicateUserError",
    "UnknownUserError",
    "UserStore",
    "login_key",
    "lookup_key",
]

#: Schema steps of the ``auth`` component (append-only; see ``SqliteStore.migrate``).
AUTH_SCHEMA: tuple[str, ...] = (
    """
    CREATE TABLE users (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        login TEXT NOT NULL,
        login_key TEXT NOT NULL UNIQUE,
        display_name TEXT NOT NULL,
        roles TEXT NOT NULL,
        password_hash TEXT NOT NULL,
        registered INTEGER NOT NULL
    );
    CREATE TABLE sessions (
        id INTEGER PRIMARY KEY,
        user_id INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        token_hash TEXT NOT NULL UNIQUE,
        expiration INTEGER NOT NULL,
        ip TEXT NOT NULL,
        user_agent TEXT NOT NULL,
        login_time INTEGER NOT NULL
    );
    CREATE INDEX sessions_user_id ON sessions (user_id);
    CREATE INDEX sessions_expiration ON sessions (expiration)
    """,
)

MAX_LOGIN_LENGTH = 60
_MAX_DISPLAY_NAME_LENGTH = 250
_MAX_ID = 2**63 - 1
_USER_COLUMNS = "id, login, roles, display_name"


class DuplicateUserError(ValueError):
    """A user with that login (compared case-insensitively) already exists."""


class UnknownUserError(ValueError):
    """No user has the given id."""


def _has_control(text: str) -> bool:
    # Categories C*: control, format (zero-width joiners…), surrogate, private use, unassigned.
    return any(unicodedata.category(char).startswith("C") for char in text)


def lookup_key(login: object) -> str | None:
    """The ``login_key`` to look ``login`` up by, None for a login no user can have."""
    if not isinstance(login, str):
        return None
    if len(login) > 4 * MAX_LOGIN_LENGTH:  # SECURITY: only short strings are remembered
        return _lookup_key.__wrapped__(login)
    return _lookup_key(login)


# PERF: every cookie check looks its login up; the Unicode normalisation is the same each time.
@functools.lru_cache(maxsize=1024)
def _lookup_key(login: str) -> str | None:
    login = login.strip()
    if not login or len(login) > MAX_LOGIN_LENGTH or _has_control(login):
        return None
    return login_key(login)


def login_key(login: str) -> str:
    """The case-insensitive identity of a login (NFKC + casefold).

    SECURITY: ``Admin``, ``ADMIN`` and full-width ``Admin`` are one login, so nobody can
    register a look-alike of an existing account.
    """
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", login).casefold())


def _clean_login(login: str) -> str:
    if not isinstance(login, str):
        raise ValueError("login must be a string")
    login = login.strip()
    if not login:
        raise ValueError("login must not be empty")
    if len(login) > MAX_LOGIN_LENGTH:
        raise ValueError(f"login must be at most {MAX_LOGIN_LENGTH} characters")
    if "|" in login:
        raise ValueError("login must not contain '|'")
    if _has_control(login):
        raise ValueError("login must not contain control or invisible characters")
    return login


def _clean_roles(roles: Iterable[str]) -> tuple[str, ...]:
    if isinstance(roles, str):
        roles = (roles,)
    cleaned: list[str] = []
    for role in roles:
        if not isinstance(role, str) or role not in ROLE_CAPABILITIES:
            known = ", ".join(sorted(ROLE_CAPABILITIES))
            raise ValueError(f"unknown role {role!r} (known roles: {known})")
        if role not in cleaned:
            cleaned.append(role)
    return tuple(cleaned)


def _clean_display_name(display_name: str | None, login: str) -> str:
    if display_name is None:
        return login
    if not isinstance(display_name, str):
        raise ValueError("display_name must be a string")
    display_name = display_name.strip()
    if len(display_name) > _MAX_DISPLAY_NAME_LENGTH:
        raise ValueError(f"display_name must be at most {_MAX_DISPLAY_NAME_LENGTH} characters")
    if _has_control(display_name):
        raise ValueError("display_name must not contain control or invisible characters")
    return display_name or login


def _check_password(password: str) -> None:
    if not isinstance(password, str):
        raise ValueError("password must be a string")
    if not password:
        raise ValueError("password must not be empty")


def _user_from_row(row: Sequence[Any]) -> User:
    user_id, login, roles, display_name = row[:4]
    return User(
        id=int(user_id),
        login=str(login),
        roles=tuple(str(roles).split(",")) if roles else (),
        display_name=str(display_name),
    )


class UserStore:
    """The site's users, kept in ``store`` (tables created through ``store.migrate("auth")``).

    Actions fired on ``hooks``: ``user_register`` (user id) after a user is created and
    ``svc_set_password`` (user id) after a password change. ``password_params`` exists so test
    suites can use cheap scrypt parameters; production keeps the default.
    """

    def __init__(
        self,
        store: SqliteStore,
        hooks: Hooks,
        *,
        password_params: ScryptParams = DEFAULT_PARAMS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.hooks = hooks
        self.password_params = password_params
        self._clock = clock
        self._dummy_hash: str | None = None
        store.migrate("auth", AUTH_SCHEMA)

    def create(
        self,
        login: str,
        password: str,
        *,
        roles: Iterable[str] = ("subscriber",),
        display_name: str | None = None,
    ) -> User:
        """Create a user and return it.

        ``login``: 1 to 60 characters once stripped, no ``|``, no control or invisible characters;
        its case is kept but it must be unique case-insensitively (else DuplicateUserError).
        ``roles``: known role names (a single string is one role). Any other bad input raises
        ValueError with a message saying what is wrong.
        """
        login = _clean_login(login)
        role_tuple = _clean_roles(roles)
        name = _clean_display_name(display_name, login)
        _check_password(password)
        # PERF: hash before taking the write lock; scrypt takes tens of milliseconds.
        encoded = hash_password(password, self.password_params)
        try:
            with self.store.transaction() as conn:
                cursor = conn.execute(
                    "INSERT INTO users (login, login_key, display_name, roles, password_hash,"
                    " registered) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        login,
                        login_key(login),
                        name,
                        ",".join(role_tuple),
                        encoded,
                        int(self._clock()),
                    ),
                )
                user_id = cursor.lastrowid
        except sqlite3.IntegrityError as exc:
            raise DuplicateUserError(f"a user with the login {login!r} already exists") from exc
        assert user_id is not None
        user = User(id=user_id, login=login, roles=role_tuple, display_name=name)
        self.hooks.do_action("user_register", user.id)
        return user

    def get(self, id: int) -> User | None:
        """The user with ``id``; ``ANONYMOUS`` for 0; None when there is none."""
        if not _is_id(id):
            return None
        if id == 0:
            return ANONYMOUS
        with self.store.read() as conn:
            row = conn.execute(f"SELECT {_USER_COLUMNS} FROM users WHERE id = ?", (id,)).fetchone()
        return None if row is None else _user_from_row(row)

    def get_by_login(self, login: str) -> User | None:
        """The user whose login equals ``login`` case-insensitively, or None."""
        record = self.get_auth_record(login)
        return None if record is None else record[0]

    def get_auth_record(self, login: str) -> tuple[User, str] | None:
        """The user with ``login`` and their encoded password hash (internal use), or None."""
        key = lookup_key(login)
        if key is None:
            return None
        row = self.store.fetch_one(
            f"SELECT {_USER_COLUMNS}, password_hash FROM users WHERE login_key = ?", (key,)
        )
        return None if row is None else (_user_from_row(row), str(row[4]))

    def get_auth_record_with_session(
        self, login: str, token_hash: str, now: float
    ) -> tuple[User, str, bool] | None:
        """``get_auth_record`` and whether ``token_hash`` is an unexpired session of that user
        at ``now``, read in one statement (one snapshot; PERF: one query per cookie check)."""
        key = lookup_key(login)
        if key is None:
            return None
        row = self.store.fetch_one(
            f"SELECT {_USER_COLUMNS}, password_hash, EXISTS (SELECT 1 FROM sessions"
            " WHERE token_hash = ? AND user_id = users.id AND expiration >= ?)"
            " FROM users WHERE login_key = ?",
            (token_hash, now, key),
        )
        return None if row is None else (_user_from_row(row), str(row[4]), bool(row[5]))

    def authenticate(self, login: str, password: str) -> User | None:
        """The user when ``password`` is theirs, else None.

        SECURITY: an unknown login costs the same scrypt run as a wrong password, so response
        times do not tell which logins exist.
        """
        record = self.get_auth_record(login) if isinstance(login, str) else None
        if record is None:
            verify_password(password if isinstance(password, str) else "", self._dummy())
            return None
        user, encoded = record
        if isinstance(password, str) and password and verify_password(password, encoded):
            return user
        return None

    def set_password(self, user_id: int, password: str) -> None:
        """Replace the password of ``user_id`` and void every cookie and session of theirs.

        The new hash changes the cookie key fragment (old cookies fail their HMAC) and the
        user's server-side sessions are deleted in the same transaction.
        """
        _check_password(password)
        encoded = hash_password(password, self.password_params)
        with self.store.transaction() as conn:
            changed = 0
            if _is_id(user_id) and user_id != 0:
                changed = conn.execute(
                    "UPDATE users SET password_hash = ? WHERE id = ?", (encoded, user_id)
                ).rowcount
            if changed != 1:
                raise UnknownUserError(f"no user with id {user_id!r}")
            conn.execute("DELETE FROM sessions WHERE user_id = ?", (user_id,))
        self.hooks.do_action("svc_set_password", user_id)

    def password_hash(self, user_id: int) -> str | None:
        """The encoded password hash of ``user_id`` (internal use), or None."""
        if not _is_id(user_id) or user_id == 0:
            return None
        with self.store.read() as conn:
            row = conn.execute(
                "SELECT password_hash FROM users WHERE id = ?", (user_id,)
            ).fetchone()
        return None if row is None else str(row[0])

    def _dummy(self) -> str:
        # A hash with the current parameters, verified against for unknown logins.
        if self._dummy_hash is None:
            self._dummy_hash = hash_password("svcrest-no-such-user", self.password_params)
        return self._dummy_hash


def _is_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_ID
