"""Server-side login sessions: one row per auth cookie, holding only a hash of its token.

SECURITY: the store keeps ``sha256(token)``, never the token, so a leaked database (or backup)
holds no usable session. Looking a session up by that hash leaks, through timing, at most a
prefix of a hash, which does not help anyone guess a 256-bit token.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable

from svcrest.auth.session_cache import announce, settle
from svcrest.auth.users import AUTH_SCHEMA
from svcrest.store.base import Store

__all__ = ["SessionManager", "hash_token", "new_token"]

_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,128}")
_MAX_IP = 100
_MAX_USER_AGENT = 1000
_MAX_ID = 2**63 - 1


def new_token() -> str:
    """A fresh session token: 43 characters of ``[A-Za-z0-9_-]`` (256 random bits)."""
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """The stored form of ``token``: its SHA-256, lower-case hex."""
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def _is_user_id(user_id: object) -> bool:
    return isinstance(user_id, int) and not isinstance(user_id, bool) and 0 < user_id <= _MAX_ID


def _valid(user_id: object, token: object) -> bool:
    return _is_user_id(user_id) and isinstance(token, str) and _TOKEN.fullmatch(token) is not None


class SessionManager:
    """Sessions in ``store`` (the ``sessions`` table of the ``auth`` schema).

    ``clock`` returns Unix seconds. A session is valid while ``expiration >= clock()``; expired
    rows are deleted whenever a session is created.
    """

    def __init__(self, store: Store, clock: Callable[[], float]) -> None:
        self.store = store
        self._clock = clock
        store.migrate("auth", AUTH_SCHEMA)

    def create(self, user_id: int, expiration: int, ip: str, user_agent: str) -> str:
        """Start a session for ``user_id`` valid until ``expiration``; returns the token.

        ``ip`` and ``user_agent`` are kept for the user's information (truncated to 100 and
        1000 characters). Raises ValueError when the user does not exist.
        """
        if not _is_user_id(user_id):
            raise ValueError(f"no user with id {user_id!r}")
        token = new_token()
        now = float(self._clock())
        with self.store.transaction() as conn:
            # Opportunistic pruning: logins are rare, the expiration index keeps this cheap.
            conn.execute("DELETE FROM sessions WHERE expiration < ?", (now,))
            exists = conn.execute("SELECT 1 FROM users WHERE id = ?", (user_id,)).fetchone()
            if exists is None:
                raise ValueError(f"no user with id {user_id!r}")
            conn.execute(
                "INSERT INTO sessions (user_id, token_hash, expiration, ip, user_agent,"
                " login_time) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    user_id,
                    hash_token(token),
                    int(expiration),
                    str(ip)[:_MAX_IP],
                    str(user_agent)[:_MAX_USER_AGENT],
                    int(now),
                ),
            )
        return token

    def verify(self, user_id: int, token: str) -> bool:
        """Whether ``token`` is an unexpired session of ``user_id``; False for any bad input."""
        if not _valid(user_id, token):
            return False
        with self.store.read() as conn:
            row = conn.execute(
                "SELECT 1 FROM sessions WHERE token_hash = ? AND user_id = ? AND expiration >= ?",
                (hash_token(token), user_id, float(self._clock())),
            ).fetchone()
        return row is not None

    def destroy(self, user_id: int, token: str) -> None:
        """End the session ``token`` of ``user_id`` (nothing happens when there is none), on
        every host: on a store with a notification channel this returns once no host's
        session cache may still trust it (``session_cache.settle``, 50 ms)."""
        if not _valid(user_id, token):
            return
        with self.store.transaction() as conn:
            conn.execute(
                "DELETE FROM sessions WHERE token_hash = ? AND user_id = ?",
                (hash_token(token), user_id),
            )
            announce(self.store, conn, user_id)
        settle(self.store)

    def destroy_all(self, user_id: int) -> None:
        """End every session of ``user_id`` (on every host, as :meth:`destroy`)."""
        if not _is_user_id(user_id):
            return
        with self.store.transaction() as conn:
            conn.execute("DELETE FROM sessions WHERE user_id = ?", (user_id,))
            announce(self.store, conn, user_id)
        settle(self.store)

    def count(self, user_id: int) -> int:
        """How many unexpired sessions ``user_id`` has."""
        if not _is_user_id(user_id):
            return 0
        with self.store.read() as conn:
            row = conn.execute(
                "SELECT COUNT(*) FROM sessions WHERE user_id = ? AND expiration >= ?",
                (user_id, float(self._clock())),
            ).fetchone()
        return int(row[0])
