"""A bounded memo of auth cookies found valid, trusted only while the database is unchanged.

A cookie check parses the cookie, reads the user and the session from the store and checks
two HMACs: about 20 µs on SQLite, most of a cookie + nonce request. Its answer depends only
on the cookie, the site's secrets (fixed for an ``AuthService``), the clock and what the
database holds. On a store that can tell whether anything was written since an earlier
moment (``ChangeMarkingStore``: SQLite's wal-index header, or ``PRAGMA data_version``),
:class:`VerifiedCookies` keeps the answer for a cookie found valid, stamped with the store's
change mark taken before the read, and the cookie check reuses it while the mark is the
same.

SECURITY: why no entry outlives a revocation (a logout, a password change, a deleted user or
a revoked application password applies on every host from the next request:
docs/guides/many-hosts.md).

- A logout, a password change, a role change or a deleted user is a committed write; any
  committed write, by any process, moves the mark, and the memo then answers nothing until
  it is filled again from the store. The mark is taken before the read, so a write committed
  between the mark and the read only makes the entry stale sooner.
- Time still counts: an entry answers only up to the earlier of the cookie's and the
  session's expiration, the same second the full check would stop accepting it.
- Only valid cookies are kept, so an anonymous client cannot fill the memo; it is bounded in
  entries (the ``svc_session_cache_entries`` filter, 0 turns it off) and in bytes, and a
  cookie value over ``MAX_VALUE_LENGTH`` characters is never kept.

On every store, :class:`KnownSignatures` also remembers, for a cookie whose HMAC was found
right, the password fragment it was signed with (with its parsed fields and its token's hash):
a later check of the same cookie against the same fragment needs no parsing and no HMAC. That
is a pure function's answer; the user, the session and the fragment are still read (from the
store, or PostgreSQL's session cache) on every check, so it stores no verdict.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from svcrest.auth.cookies import CookieElements
from svcrest.bounded import BoundedDict
from svcrest.http.user import User

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_SIGNATURES",
    "MAX_VALUE_LENGTH",
    "CookieSignature",
    "KnownSignatures",
    "VerifiedCookie",
    "VerifiedCookies",
]

#: Approximate bytes the memo may hold.
DEFAULT_MAX_BYTES = 8 * 1024 * 1024
#: Longest cookie value kept (a cookie is login, expiration, a 43-character token and a
#: 64-character HMAC: about 130 characters for a 20-character login).
MAX_VALUE_LENGTH = 512
#: Most cookie signatures remembered (a few hundred bytes each).
MAX_SIGNATURES = 4096
# Approximate bytes of one entry beyond its strings: the dict slot, the entry, the info dict.
_ENTRY_OVERHEAD = 800


@dataclass(frozen=True, slots=True)
class VerifiedCookie:
    """What a cookie check found for a valid cookie: its user and session token, the
    ``auth_cookie_valid`` action's elements, and the last second (Unix time) it is valid."""

    user: User
    token: str
    elements: dict[str, object]
    valid_until: float


class VerifiedCookies:
    """Valid cookie values → :class:`VerifiedCookie`, all read at one change mark.

    Every entry was verified at the mark :attr:`mark`; :meth:`get` answers only when asked
    with that same mark, and a newer mark (given to :meth:`get` or :meth:`put`) empties the
    memo. When full, the oldest entry goes first.
    """

    def __init__(self, max_entries: int, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError("the memo needs room for at least one entry")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        #: The change mark every entry was verified at (-1: none yet).
        self.mark = -1
        self._memo: BoundedDict[str, VerifiedCookie] = BoundedDict(
            max_entries, max_bytes, _entry_bytes
        )
        #: The entries' dict, read directly (the same object for the memo's life): an entry
        #: counts only while :attr:`mark` is the caller's mark and before its
        #: ``valid_until`` (what :meth:`get` checks).
        self.entries = self._entries = self._memo.entries
        self._lock = threading.Lock()  # for writers; readers read the dict as it is

    def __len__(self) -> int:
        return len(self._memo)

    @property
    def size_bytes(self) -> int:
        """The approximate bytes the entries take."""
        return self._memo.size_bytes

    def get(self, value: str, mark: int, now: float) -> VerifiedCookie | None:
        """The entry of cookie ``value`` when it was verified at ``mark`` and is valid at
        ``now``; None otherwise."""
        if mark != self.mark:
            if mark > self.mark:
                self._renew(mark)
            return None
        entry = self._entries.get(value)
        if entry is None or now > entry.valid_until:
            return None
        return entry

    def put(self, value: str, mark: int, entry: VerifiedCookie) -> None:
        """Keep ``entry`` for cookie ``value``, verified from a read made at ``mark``
        (ignored when the memo already holds a newer mark, the value is too long, or the entry
        alone is larger than ``max_bytes``)."""
        if len(value) > MAX_VALUE_LENGTH:
            return
        with self._lock:
            if mark < self.mark:
                return
            if mark > self.mark:
                self._clear(mark)
            self._memo.put(value, entry)

    def _renew(self, mark: int) -> None:
        with self._lock:
            if mark > self.mark:
                self._clear(mark)

    def _clear(self, mark: int) -> None:
        self._memo.clear()
        self.mark = mark


def _entry_bytes(value: str, entry: VerifiedCookie) -> int:
    return _ENTRY_OVERHEAD + 2 * len(value) + len(entry.token) + len(entry.user.login)


@dataclass(frozen=True, slots=True)
class CookieSignature:
    """A cookie value whose HMAC is right for the password ``fragment``: its parsed
    ``elements`` and the hash of its session token."""

    elements: CookieElements
    token_hash: str
    fragment: str


class KnownSignatures:
    """Cookie values → :class:`CookieSignature`, for cookies whose HMAC was found right;
    bounded (the oldest goes first), and a value over ``MAX_VALUE_LENGTH`` is never kept."""

    def __init__(self, max_entries: int = MAX_SIGNATURES) -> None:
        if max_entries < 1:
            raise ValueError("the memo needs room for at least one entry")
        self.max_entries = max_entries
        self._memo: BoundedDict[str, CookieSignature] = BoundedDict(max_entries)
        # PERF: its dict, read directly (the same object for the memo's life).
        self._entries = self._memo.entries
        self._lock = threading.Lock()  # for writers; readers read the dict as it is

    def __len__(self) -> int:
        return len(self._memo)

    def get(self, value: str) -> CookieSignature | None:
        """The signature of cookie ``value``, when it is known."""
        return self._entries.get(value)

    def put(self, value: str, signature: CookieSignature) -> None:
        """Remember ``signature`` for cookie ``value``."""
        if len(value) > MAX_VALUE_LENGTH:
            return
        with self._lock:
            self._memo.put(value, signature)
