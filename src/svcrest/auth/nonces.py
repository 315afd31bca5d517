"""Nonces: short-lived HMAC tokens proving that a request was made from the site's own pages.

A nonce is bound to an action name, a user id and a session token, and to a *tick*: time is cut
into half-lifetimes, ``tick = ceil(now / (lifetime / 2))``. A nonce verifies as 1 during the tick
that made it, as 2 during the next one, and never afterwards, so it lives between half a
lifetime and a whole one (12 to 24 hours by default).

Value: ``HMAC-SHA256(nonce_key, f"{tick}|{action}|{user_id}|{token}")`` in lower-case hex, its
first 32 characters, where ``nonce_key = HMAC-SHA256(secret, b"nonce")`` so that no nonce is ever
computed with the key material of the auth cookies.
"""

from __future__ import annotations

import hmac
import math
from collections.abc import Callable, Sequence
from typing import Literal

from svcrest.bounded import BoundedDict

__all__ = ["NONCE_LENGTH", "NONCE_LIFETIME", "NonceManager", "derive_key"]

#: Default lifetime in seconds (one day).
NONCE_LIFETIME = 86400
#: Length of a nonce: 32 lower-case hex characters.
NONCE_LENGTH = 32
# Bounds of the memo of verified nonces: entries, and characters of action + token per entry.
_MEMO_MAX_ENTRIES = 4096
_MEMO_MAX_TEXT = 256


def derive_key(secret: bytes, purpose: bytes) -> bytes:
    """A sub-key of ``secret`` for one ``purpose`` (HMAC-SHA256(secret, purpose))."""
    return hmac.digest(secret, purpose, "sha256")


def _text(value: str) -> bytes:
    # surrogatepass: any Python str encodes, so creating and checking never fail on input.
    return value.encode("utf-8", "surrogatepass")


class NonceManager:
    """Creates and verifies nonces with a key derived from the site ``secret``.

    ``clock`` returns Unix seconds (tests inject their own). ``fallbacks``: earlier secrets
    (key rotation); nonces made with one of them still verify, new ones use ``secret``.
    """

    def __init__(
        self,
        secret: bytes,
        clock: Callable[[], float],
        lifetime: int = NONCE_LIFETIME,
        *,
        fallbacks: Sequence[bytes] = (),
    ) -> None:
        if not isinstance(secret, bytes) or not secret:
            raise ValueError("the nonce secret must be non-empty bytes")
        if any(not isinstance(key, bytes) or not key for key in fallbacks):
            raise ValueError("every fallback nonce secret must be non-empty bytes")
        if not isinstance(lifetime, int) or isinstance(lifetime, bool) or lifetime < 2:
            raise ValueError("the nonce lifetime must be an integer of at least 2 seconds")
        self._key = derive_key(secret, b"nonce")
        self._fallback_keys = tuple(derive_key(key, b"nonce") for key in fallbacks)
        self._clock = clock
        self.lifetime = lifetime
        # (nonce, action, user id, token) of verified nonces → the tick each was made in.
        # Written without a lock: a lost race empties it (svcrest.bounded).
        self._memo: BoundedDict[tuple[str, str, int, str], int] = BoundedDict(_MEMO_MAX_ENTRIES)
        # PERF: its dict, read directly (the same object for the memo's life).
        self._verified = self._memo.entries

    def tick(self) -> int:
        """The current tick: ``ceil(now / (lifetime / 2))``."""
        return math.ceil(self._clock() / (self.lifetime / 2))

    def _value(
        self, tick: int, action: str, user_id: int, token: str, key: bytes | None = None
    ) -> bytes:
        message = _text(f"{tick}|{action}|{user_id}|{token}")
        digest = hmac.digest(key or self._key, message, "sha256").hex()  # PERF: one-shot C HMAC
        return digest[:NONCE_LENGTH].encode("ascii")

    def create(self, action: str, user_id: int = 0, token: str = "") -> str:
        """The nonce for ``action``, ``user_id`` and session ``token`` at the current tick."""
        if not isinstance(action, str) or not isinstance(token, str):
            raise TypeError("action and token must be str")
        if not isinstance(user_id, int) or isinstance(user_id, bool):
            raise TypeError("user_id must be an int")
        return self._value(self.tick(), action, user_id, token).decode("ascii")

    def verify(
        self, nonce: object, action: str, user_id: int = 0, token: str = ""
    ) -> Literal[1, 2, False]:
        """1 when ``nonce`` is from the current tick, 2 from the previous one, else False.

        Never raises: a non-str, non-ASCII, wrong-length or binary ``nonce`` (or arguments of
        the wrong type) is simply False. SECURITY: compared with ``hmac.compare_digest`` on
        bytes, so timing does not reveal how much of a guess was right.
        """
        # PERF: the exact types first (each test costs a fraction of an isinstance call);
        # subclasses (not bool) are taken as well.
        if (
            type(nonce) is not str
            or type(action) is not str
            or type(token) is not str
            or type(user_id) is not int
        ) and (
            not isinstance(nonce, str)
            or not isinstance(action, str)
            or not isinstance(token, str)
            or not isinstance(user_id, int)
            or isinstance(user_id, bool)
        ):
            return False
        return self.verified(nonce, action, user_id, token)

    def verified(self, nonce: str, action: str, user_id: int, token: str) -> Literal[1, 2, False]:
        """:meth:`verify` for arguments known to be of their types (``user_id`` an int, not
        a bool): the same answer without the tests of types (PERF: for a caller whose
        action, user id and token are its own, and which tested the nonce's type)."""
        # PERF: tick() written out (a Python call less a check); the clock, a callable the
        # manager holds, read and then called (called as a method, a generic look-up).
        clock = self._clock
        tick = math.ceil(clock() / (self.lifetime / 2))
        # PERF: a nonce verified before is known by the tick it was made in; no HMAC (and
        # no test of its form: only well-formed nonces are kept).
        memo_key = (nonce, action, user_id, token)
        made = self._verified.get(memo_key)
        if made is not None:
            if made == tick:
                return 1
            if made == tick - 1:
                return 2
        if len(nonce) != NONCE_LENGTH or not nonce.isascii():
            return False
        given = nonce.encode("ascii")
        for key in (self._key, *self._fallback_keys):
            if hmac.compare_digest(given, self._value(tick, action, user_id, token, key)):
                self._remember(memo_key, tick)
                return 1
            if hmac.compare_digest(given, self._value(tick - 1, action, user_id, token, key)):
                self._remember(memo_key, tick - 1)
                return 2
        return False

    def _remember(self, memo_key: tuple[str, str, int, str], made: int) -> None:
        """Keep the tick a verified nonce was made in (bounded; only verified nonces, so an
        anonymous client cannot fill it, and only short action names and tokens)."""
        if len(memo_key[1]) + len(memo_key[3]) <= _MEMO_MAX_TEXT:
            self._memo.put(memo_key, made)
