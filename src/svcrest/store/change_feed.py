"""Change feeds over the change log: ``GET /<ns>/<rest_base>/changes``, long-polled or streamed.

Long-polling (``?since=<cursor>&wait=<s>``): a :class:`ChangeFeed` answers ``{"changes":
[...], "cursor": "..."}`` at once when the log holds changes of its object type after
``since`` that the subscriber may see, else after ``wait`` seconds (at most 30), or as soon
as such a change is committed meanwhile, on this host or any other (the process's one
:class:`~svcrest.store.change_waker.ChangeWaker` wakes the wait: within a second, usually a
few milliseconds). Without ``since`` the feed starts at the log's end. Each entry is ``{"id":
<cursor>, "event": "created" | "updated" | "deleted", "data": ...}``; the answer's
``cursor`` is the last entry's ``id`` (or, with no entry, a fresh cursor of the same
position), which the next poll sends as ``since``.

Streams (:meth:`ChangeFeed.stream`, served by an ASGI server only): Server-Sent Events
(``text/event-stream``: ``id: <cursor>``, ``event: <event>``, ``data: <data as JSON>`` per
change, a comment line as keep-alive) or JSON Lines (``application/jsonl``: one entry per
line, a blank line as keep-alive), from the ``Last-Event-ID`` header or ``since`` on. A
keep-alive goes at once and then every :attr:`ChangeFeed.heartbeat` seconds (15) without an
event; every :attr:`ChangeFeed.session_check` seconds (1) the stream asks whether its
subscriber's session still holds, and ends when it does not.

Cursors are opaque (:func:`svcrest.store.changes.encode_cursor`): a position in the log and
the time the cursor was issued. Changes older than the retention (the filter
``svc_changes_retention``, in seconds, one day by default) are purged, at most once a minute,
and a cursor issued longer ago than the retention answers 410 ``rest_changes_expired``
whether or not the changes after it were purged yet (the subscriber may have missed some:
it reads the collection again). A cursor that is not one answers 400 ``rest_invalid_param``.

A long-poll's wait runs on the request's event loop under ASGI. Under WSGI the adapter runs
the request on the server's own thread, which the wait holds for up to ``wait`` seconds:
bound the number of long-polls to the server's threads.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Final

import orjson

from svcrest.blocking import offload
from svcrest.http.answer_json import encode_default
from svcrest.http.context import REQUEST_CONTEXT, RequestContext, current_context
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.http.streams import (
    SSE_TYPE,
    StreamResponse,
    StreamSlots,
    can_stream,
    streams_busy,
    unless_closing,
    wanted_stream,
)
from svcrest.store.base import Store
from svcrest.store.change_waker import change_waker
from svcrest.store.changes import (
    Change,
    changes_after,
    decode_cursor,
    encode_cursor,
    last_change,
    purge_changes,
)

__all__ = [
    "DEFAULT_RETENTION",
    "FEED_ARGS",
    "HEARTBEAT",
    "MAX_WAIT",
    "SESSION_CHECK",
    "ChangeFeed",
    "SessionCheck",
]

_log = logging.getLogger("svcrest.store")

#: How long changes are kept, in seconds (the default of ``svc_changes_retention``).
DEFAULT_RETENTION: Final = 86_400
#: The longest ``wait`` of a long-poll, in seconds.
MAX_WAIT: Final = 30
#: Seconds between two keep-alives of a stream without events.
HEARTBEAT: Final = 15.0
#: Seconds between two checks of a stream's session.
SESSION_CHECK: Final = 1.0
_SSE_KEEP_ALIVE: Final = b": keep-alive\n\n"
_JSONL_KEEP_ALIVE: Final = b"\n"
_JSON_OPTIONS: Final = orjson.OPT_NON_STR_KEYS
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
#: Whether a stream's subscriber still holds the session it started with.
SessionCheck = Callable[[], Awaitable[bool]]


def _sse_event(entry: dict[str, Any]) -> bytes:
    """One Server-Sent Event of a feed entry (JSON holds no line break: one ``data`` line)."""
    data = orjson.dumps(entry["data"], default=encode_default, option=_JSON_OPTIONS)
    return b"id: %s\nevent: %s\ndata: %s\n\n" % (
        entry["id"].encode("ascii"),
        entry["event"].encode("ascii"),
        data,
    )


def _jsonl_event(entry: dict[str, Any]) -> bytes:
    """One JSON line of a feed entry."""
    return orjson.dumps(entry, default=encode_default, option=_JSON_OPTIONS) + b"\n"


class _Slot:
    """A stream's slot of ``slots`` (None: unbounded), given back once: by the stream's
    end, or when the stream is dropped without ever starting."""

    __slots__ = ("_slots", "taken")

    def __init__(self, slots: StreamSlots | None) -> None:
        self._slots = slots
        self.taken = slots is None or slots.take()

    def give_back(self) -> None:
        slots, self._slots = self._slots, None
        if slots is not None and self.taken:
            slots.give_back()

    def __del__(self) -> None:
        self.give_back()


class ChangeFeed:
    """The feed of the changes of ``object_type`` recorded in ``store`` (a store, or a
    callable returning it). ``retention``: returns the retention in seconds (a site passes
    its filter ``svc_changes_retention``); ``clock``: Unix time (tests inject one).
    Attributes ``heartbeat`` and ``session_check``: a stream's seconds between keep-alives
    and between session checks."""

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
        self.heartbeat = HEARTBEAT
        self.session_check = SESSION_CHECK

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

    async def serve(self, request: Request, render: Render, host: object) -> Response | RestError:
        """The answer to the feed's route: a stream (:meth:`stream`) when ``Accept`` asks
        for ``text/event-stream`` or ``application/jsonl`` and an ASGI server serves the
        request, bounded by ``host``'s ``streams`` and ended when its
        ``stream_session_check(request)`` answers False (the App's); else the long-poll
        answer (:meth:`answer`). Each change is rendered in the ``view`` context."""
        request.set_param("context", "view")
        kind = wanted_stream(request.get_header("Accept")) if request.method == "GET" else None
        found = getattr(host, "streams", None)
        slots = found if isinstance(found, StreamSlots) else None
        if kind is None or not can_stream():
            return await self.answer(request, render, slots=slots)
        check = getattr(host, "stream_session_check", None)
        return await self.stream(
            request,
            render,
            kind,
            slots=slots,
            alive=check(request) if callable(check) else None,
        )

    async def answer(
        self, request: Request, render: Render, *, slots: StreamSlots | None = None
    ) -> Response | RestError:
        """The answer to ``request`` (its ``since`` and ``wait``), each change rendered for
        its user by ``render``; a wait ends at once when ``slots`` close (the server is
        stopping: the answer holds what there is, maybe no change, and the cursor)."""
        store = self._get_store()
        now = self._clock()
        retention = await self._retained(now)
        start = self._start(store, request.get_param("since"), "since", now, retention)
        if isinstance(start, RestError):
            return start
        seq = start
        wait = request.get_param("wait")
        waiting = min(max(float(wait), 0.0), MAX_WAIT) if isinstance(wait, int | float) else 0.0
        deadline = time.monotonic() + waiting
        waker = change_waker(store) if waiting > 0 else None
        stopping = slots is not None and slots.closing
        while True:
            token = waker.token(self.object_type) if waker is not None else 0
            entries, seq, issued, more = self._read(store, seq, request, render)
            left = deadline - time.monotonic()
            if entries or left <= 0 or waker is None or stopping:
                break
            if not more:  # read to the log's end (else a page of changes it may not see)
                waiting_for = waker.wait(self.object_type, token, left)
                stopping = await unless_closing(slots, waiting_for)
        cursor = entries[-1]["id"] if entries else encode_cursor(seq, issued)
        return Response({"changes": entries, "cursor": cursor})

    def _start(
        self, store: Store, since: object, name: str, now: float, retention: float
    ) -> int | RestError:
        """The position a feed starts after: the cursor ``since`` (the parameter or header
        ``name``; the log's end without one), or its 400 or 410."""
        if since is None or since == "":
            return last_change(store, self.object_type)
        decoded = decode_cursor(since) if isinstance(since, str) else None
        if decoded is None:
            return RestError(
                "rest_invalid_param",
                f"Invalid parameter(s): {name}",
                {"status": 400, "params": {name: "Invalid cursor."}},
            )
        seq, issued = decoded
        if now - issued > retention:
            return RestError(
                "rest_changes_expired",
                "The changes after this cursor are no longer kept: read the collection"
                " again and follow its changes from now on.",
                {"status": 410},
            )
        return seq

    async def stream(
        self,
        request: Request,
        render: Render,
        kind: str,
        *,
        slots: StreamSlots | None = None,
        alive: SessionCheck | None = None,
    ) -> Response | RestError:
        """The stream of changes answering ``request`` in ``kind`` (``text/event-stream``
        or ``application/jsonl``), from its ``Last-Event-ID`` header or ``since`` on (the
        log's end without either), each change rendered for its user by ``render``; it
        takes a slot of ``slots`` (503 ``svc_streams_busy`` when none is free) and ends
        when ``alive`` answers False (the subscriber's session ended)."""
        store = self._get_store()
        now = self._clock()
        retention = await self._retained(now)
        resumed = request.get_header("Last-Event-ID")
        name = "Last-Event-ID" if resumed else "since"
        since = resumed if resumed else request.get_param("since")
        start = self._start(store, since, name, now, retention)
        if isinstance(start, RestError):
            return start
        slot = _Slot(slots)
        if not slot.taken:
            return streams_busy()
        context = current_context()
        events = self._events(store, start, request, render, kind, slot, alive, context)
        return StreamResponse(events, kind)

    async def _events(
        self,
        store: Store,
        seq: int,
        request: Request,
        render: Render,
        kind: str,
        slot: _Slot,
        alive: SessionCheck | None,
        context: RequestContext | None,
    ) -> AsyncGenerator[bytes, None]:
        """The chunks of a stream (see :meth:`stream`): a keep-alive at once, then each
        page of changes as it is committed, a keep-alive every :attr:`heartbeat` seconds
        without one, and the end when the session check fails (asked every
        :attr:`session_check` seconds)."""
        # The stream runs in a task of its own (the adapter's): the request's context is
        # current again for the renders and the session checks.
        REQUEST_CONTEXT.set(context)
        encode = _sse_event if kind == SSE_TYPE else _jsonl_event
        keep_alive = _SSE_KEEP_ALIVE if kind == SSE_TYPE else _JSONL_KEEP_ALIVE
        waker = change_waker(store)
        read = offload(self._read)
        try:
            yield keep_alive  # the head and a first line leave at once
            now = time.monotonic()
            # PERF: a stream without a session to check wakes only for changes and
            # keep-alives (1,000 idle anonymous streams: 0.7 % of a core, 7 % with a wake
            # a second; bench/idle_streams.py).
            check_every = self.session_check if alive is not None else math.inf
            beat_at, check_at = now + self.heartbeat, now + check_every
            while True:
                token = waker.token(self.object_type)
                entries, seq, _issued, more = await read(store, seq, request, render)
                now = time.monotonic()
                if entries:
                    yield b"".join(encode(entry) for entry in entries)
                    beat_at = now + self.heartbeat
                if now >= check_at:
                    if alive is not None and not await alive():
                        return
                    check_at = now + check_every
                if more:
                    continue
                if now >= beat_at:
                    yield keep_alive
                    beat_at = now + self.heartbeat
                await waker.wait(self.object_type, token, min(beat_at, check_at) - now)
        except Exception:  # the store went away, a render failed: the client reconnects
            _log.exception("the %s change stream ended on an error", self.object_type)
        finally:
            slot.give_back()

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
