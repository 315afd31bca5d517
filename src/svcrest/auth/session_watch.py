"""Whether a stream's subscriber still holds its session, asked often and answered cheaply.

A stream (a change feed's Server-Sent Events) lives for hours; its subscriber may log out,
have its session ended or its application password revoked meanwhile, on any host. A
:class:`SessionWatch` answers whether the subscriber still would be authenticated as the same
user (:func:`svcrest.rest.reauth.still_authenticated`: the site's authentication run again),
but runs that check only when something that could revoke a session may have happened since
its last check, as a mark tells (:func:`revocation_marks`):

- PostgreSQL with the session cache: its count of applied invalidations (every logout,
  ended session, password or role change and revoked application password notifies every
  host at commit; :mod:`svcrest.auth.session_cache`), read after draining its listener;
- SQLite: the store's change mark (any commit of any process);
- otherwise (no cache, or its listener not listening): no mark, every check runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from svcrest.auth.service import AuthService
from svcrest.store.base import ChangeMarkingStore

__all__ = ["SessionWatch", "revocation_marks"]


def _no_mark() -> int | None:
    return None


def revocation_marks(auth: AuthService) -> Callable[[], int | None]:
    """A function answering a number that moves whenever a session may have been revoked
    (None: it cannot tell)."""
    cache = auth.session_cache
    if cache is not None:
        return cache.invalidations
    store = auth.store
    if isinstance(store, ChangeMarkingStore):
        return store.change_mark
    return _no_mark


class SessionWatch:
    """Answers (awaited) whether the session still holds: ``check()`` when ``mark()``
    moved since the last check that found it holding (or tells nothing), else True."""

    __slots__ = ("_check", "_mark", "_seen")

    def __init__(
        self, check: Callable[[], Awaitable[bool]], mark: Callable[[], int | None]
    ) -> None:
        self._check = check
        self._mark = mark
        self._seen: int | None = None

    async def __call__(self) -> bool:
        # SECURITY: the mark is taken before the check, so a revocation committed while the
        # check runs moves it again and is checked next time.
        mark = self._mark()
        if mark is not None and mark == self._seen:
            return True
        alive = await self._check()
        self._seen = mark if alive else None
        return alive
