"""Long-polling over the change log: ``GET /<ns>/<rest_base>/changes?since=<cursor>&wait=<s>``.

A :class:`ChangeFeed` answers ``{"changes": [...], "cursor": "..."}``: at once when the log
holds changes of its object type after ``since`` that the subscriber may see, else after
``wait`` seconds (at most 30), or as soon as such a change is committed meanwhile (the log is
read again every quarter of a second). Without ``since`` the feed starts at the log's end.
Each entry is ``{"id": <cursor>, "event": "created" | "updated" | "deleted", "data": ...}``;
the answer's ``cursor`` is the last entry's ``id`` (or, with no entry, a fresh cursor of the
same position), which the next poll sends as ``since``.

Cursors are opaque (:func:`svcrest.store.changes.encode_cursor`): a position in the log and
the time the cursor was issued. Changes older than the retention (the filter
``svc_changes_retention``, in seconds, one day by default) are purged, at most once a minute,
and a cursor issued longer ago than the retention answers 410 ``rest_changes_expired``
whether or not the changes after it were purged yet (the subscriber may have missed some:
it reads the collection again). A cursor that is not one answers 400 ``rest_invalid_param``.

The wait runs on the request's event loop under ASGI (``asyncio.sleep`` between reads). Under
WSGI the adapter runs the request on the server's own thread, which the wait holds for up to
``wait`` seconds: bound the number of long-polls to the server's threads.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from typing import Any, Final

from svcrest.blocking import offload
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.store.base import Store
from svcrest.store.changes import (
    Change,
    changes_after,
    decode_cursor,
    encode_cursor,
    last_change,
    purge_changes,
)

__all__ = ["DEFAULT_RETENTION", "FEED_ARGS", "MAX_WAIT", "ChangeFeed"]

#: How long changes are kept, in seconds (the default of ``svc_changes_retention``).
DEFAULT_RETENTION: Final = 86_400
#: The longest ``wait`` of a long-poll, in seconds.
MAX_WAIT: Final = 30
#: How often the log is read again during a wait, in seconds: a change committed meanwhile
#: answers within this (plus the read).
_POLL: Final = 0.25
#: How often (in seconds of the feed's clock) a feed purges the changes past retention.
_PURGE_EVERY: Final = 60.0
#: The most entries of one answer.
_PAGE: Final = 100

#: The arguments of a feed's route.
FEED_ARGS: Final[dict[str, dict[str, Any]]] = {
    "since": {
        "description": "Answer the changes after this cursor (without it, from now on).",
        "type": "string",
    },
    "wait": {
        "description": "Seconds to wait for a change when there is none yet.",
        "type": "number",
        "minimum": 0,
        "maximum": MAX_WAIT,
        "default": 0,
    },
}

#: Renders a change for the request's user: the entry's ``data``, or None to leave it out
#: (the user may not read the item, or it was deleted since).
Render = Callable[[Change, Request], Any]


class ChangeFeed:
    """The long-poll feed of the changes of ``object_type`` recorded in ``store`` (a store,
    or a callable returning it). ``retention``: returns the retention in seconds (a site
    passes its filter ``svc_changes_retention``); ``clock``: Unix time (tests inject one)."""

    def __init__(
        self,
        store: Store | Callable[[], Store],
        object_type: str,
        *,
        retention: Callable[[], float] = lambda: DEFAULT_RETENTION,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._get_store: Callable[[], Store] = (
            (lambda: store) if isinstance(store, Store) else store
        )
        self.object_type = object_type
        self._retention = retention
        self._clock = clock
        self._purged = -math.inf

    async def _retained(self, now: float) -> float:
        """The retention; purges the log when it was not purged for a minute (a write,
        which may wait for the store's write lock: off the event loop under ASGI)."""
        retention = float(self._retention())
        if not math.isfinite(retention) or retention <= 0:
            retention = float(DEFAULT_RETENTION)
        if now - self._purged >= _PURGE_EVERY:
            self._purged = now
            await offload(purge_changes)(self._get_store(), now - retention)
        return retention

    async def answer(self, request: Request, render: Render) -> Response | RestError:
        """The answer to ``request`` (its ``since`` and ``wait``), each change rendered for
        its user by ``render``."""
        store = self._get_store()
        now = self._clock()
        retention = await self._retained(now)
        since = request.get_param("since")
        if since is None or since == "":
            seq = last_change(store, self.object_type)
        else:
            decoded = decode_cursor(since) if isinstance(since, str) else None
            if decoded is None:
                return RestError(
                    "rest_invalid_param",
                    "Invalid parameter(s): since",
                    {"status": 400, "params": {"since": "Invalid cursor."}},
                )
            seq, issued = decoded
            if now - issued > retention:
                return RestError(
                    "rest_changes_expired",
                    "The changes after this cursor are no longer kept: read the collection"
                    " again and follow its changes from now on.",
                    {"status": 410},
                )
        wait = request.get_param("wait")
        waiting = min(max(float(wait), 0.0), MAX_WAIT) if isinstance(wait, int | float) else 0.0
        deadline = time.monotonic() + waiting
        while True:
            entries, seq, issued, more = self._read(store, seq, request, render)
            left = deadline - time.monotonic()
            if entries or left <= 0:
                break
            if not more:  # read to the log's end (else a page of changes it may not see)
                await asyncio.sleep(min(_POLL, left))
        cursor = entries[-1]["id"] if entries else encode_cursor(seq, issued)
        return Response({"changes": entries, "cursor": cursor})

    def _read(
        self, store: Store, seq: int, request: Request, render: Render
    ) -> tuple[list[dict[str, Any]], int, float, bool]:
        """The entries after ``seq`` (at most a page), the position read up to, the time
        to issue its cursors at (now when the log was read to its end, else the time of the
        first change left to read: no later change is older, so the retention holds) and
        whether changes are left to read."""
        read = changes_after(store, self.object_type, seq, _PAGE + 1)
        more = len(read) > _PAGE
        issued = read[_PAGE].time if more else self._clock()
        shown: list[tuple[Change, Any]] = []
        for change in read[:_PAGE]:
            seq = change.seq
            data = render(change, request)
            if data is not None:
                shown.append((change, data))
        entries = [
            {"id": encode_cursor(change.seq, issued), "event": change.event, "data": data}
            for change, data in shown
        ]
        return entries, seq, issued, more
