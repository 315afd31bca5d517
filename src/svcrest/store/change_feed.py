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

Coalescing (PERF): while changes keep coming, the readers of a collection are woken at most
once every ``svc_changes_coalesce`` seconds (a filter, :data:`COALESCE` by default, at most
:data:`MAX_COALESCE`; 0 wakes them for every change), each wake carrying every change
committed since the last; the first change after a quieter spell wakes them at once. Each
wake's work on the event loop (its streams' chunks and sends) is measured and reported to
the waker, which holds the next wake back further while that work would take more than a
twenty-fifth of the loop's time (:data:`~svcrest.store.change_waker.FAN_OUT_SHARE`; a thousand
streams on the writing worker: a wake every few tenths of a second, each carrying more
changes).

Shared work (PERF): however many streams and long-polls of a collection wait in a process,
one read of the log a wake serves them all. The feed's window (:data:`WINDOW` changes at
most, per store) holds the changes read last; a reader woken asks it for the changes after
its own cursor. The log is read once a wake (its changes whole, up to the window's size,
in ``changes_after`` queries of a few hundred, and for a :class:`FeedRender` that loads
items, one query for the items changed): by the waker's thread before it wakes the
readers (:meth:`ChangeWaker.read_ahead
<svcrest.store.change_waker.ChangeWaker.read_ahead>`: each reader is then woken once, its
changes ready), else by the first reader to ask, the others waiting for that read. A
reader behind the window reads the log itself, by pages, until it catches up. Each
subscriber's read permission is asked per change, but subscribers with the same
:meth:`FeedRender.viewer` key (the same user, and the same arguments shaping the answer)
share one rendering of a change, kept for that read only (bounded in count and bytes); a
stream works its key out once, and again when its render's :meth:`FeedRender.viewer_stamp`
moves. A stream sends what it has ready in one chunk; a chunk of many changes is rendered
a piece at a time, the event loop let go between pieces (the other streams of its viewer
wait for it), and the window keeps the changes a stream of the process has yet to send
(up to a few windows' worth), so that a stream whose steps come late is not left to read
the log by itself.

A long-poll's wait runs on the request's event loop under ASGI. Under WSGI the adapter runs
the request on the server's own thread, which the wait holds for up to ``wait`` seconds:
bound the number of long-polls to the server's threads.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import threading
import time
import weakref
from bisect import bisect_right
from collections.abc import AsyncGenerator, Awaitable, Callable, Hashable, Sequence
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
from svcrest.rest.fields import filter_response_fields, links_wanted
from svcrest.store.base import Store
from svcrest.store.change_waker import (
    COALESCE,
    SLICE_TIME,
    ChangeWaker,
    change_waker,
    wake_in_slices,
)
from svcrest.store.changes import (
    Change,
    changes_after,
    cursor_encoder,
    decode_cursor,
    encode_cursor,
    last_change,
    purge_changes,
)

__all__ = [
    "COALESCE",
    "DEFAULT_RETENTION",
    "FEED_ARGS",
    "HEARTBEAT",
    "MAX_COALESCE",
    "MAX_WAIT",
    "SESSION_CHECK",
    "UNKEYED",
    "WINDOW",
    "ChangeFeed",
    "FeedRender",
    "SessionCheck",
    "as_got",
    "fields_key",
]

_log = logging.getLogger("svcrest.store")

#: How long changes are kept, in seconds (the default of ``svc_changes_retention``).
DEFAULT_RETENTION: Final = 86_400
#: The longest ``wait`` of a long-poll, in seconds.
MAX_WAIT: Final = 30
#: The longest ``svc_changes_coalesce`` honoured, in seconds (past it: the default).
MAX_COALESCE: Final = 1.0
#: Seconds between two keep-alives of a stream without events.
HEARTBEAT: Final = 15.0
#: Seconds between two checks of a stream's session.
SESSION_CHECK: Final = 1.0
_SSE_KEEP_ALIVE: Final = b": keep-alive\n\n"
#: The header line of a long-poll the stopping server answered early: its client polls again
#: on a new connection, to a worker still serving, not on this one (which a server keeps
#: serving until it closes, a polling client's requests coming one after another).
_CLOSE_CONNECTION: Final = (("Connection", "close"),)
_JSONL_KEEP_ALIVE: Final = b"\n"
_JSON_OPTIONS: Final = orjson.OPT_NON_STR_KEYS
#: How often (in seconds of the feed's clock) a feed purges the changes past retention.
_PURGE_EVERY: Final = 60.0
#: The most entries of one answer.
_PAGE: Final = 100
#: The most changes a feed keeps in memory per store (its window): ~100 bytes each (a
#: ``Change`` of five fields, the object type's text shared), so ~200 KB. A reader further
#: behind reads the log itself.
WINDOW: Final = 2048
#: How many windows' worth of changes a feed keeps at most while streams of the process
#: have yet to send them (their steps late behind the waker's reads ahead).
# PERF: the waker's thread reads ahead of each wake, whatever the streams' event loop is
# doing; a busy loop whose last slices of streams had not stepped yet saw the window move
# past them, and each then read the log (and every item, one query each) by itself: the
# writes per second in process with 1,000 streams fell from ~2,500 to 475-1,225 in five
# runs of seven, with the window kept 1,931-2,497 (bench/idle_streams.py --uvloop
# --posters 4). At most ~800 KB a store.
_LATE_WINDOWS: Final = 4
#: How many changes a stream renders between two looks at the time its render took; and
#: the CPU seconds of it after which it lets the event loop go (see
#: ``ChangeFeed._chunk_in_pieces``).
_RENDER_PIECE: Final = 32
_RENDER_TIME: Final = SLICE_TIME
#: The most changes one query of a shared read of the log brings in (a read makes more
#: queries, up to :data:`WINDOW` changes, until it reaches the log's end).
_TAIL_READ: Final = 500
#: The most views one shared read keeps for its readers, and their bytes.
_VIEWS: Final = 4096
_VIEW_BYTES: Final = 8 << 20
#: Seconds after a shared read during which its readers issue cursors at its time (one
#: cursor a change for all of them), not at their own ``now``: a cursor issued a little
#: earlier expires a little sooner, never later.
_READ_TIME_KEPT: Final = 10.0
#: Not loaded (yet).
_MISSING: Final[Any] = object()

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


def _sse_frame(cursor: str, event: str, data: bytes) -> bytes:
    """One Server-Sent Event of a change whose data is ``data`` (JSON), as
    :func:`_sse_event` makes it."""
    return b"id: %s\nevent: %s\ndata: %s\n\n" % (
        cursor.encode("ascii"),
        event.encode("ascii"),
        data,
    )


def _jsonl_frame(cursor: str, event: str, data: bytes) -> bytes:
    """One JSON line of a change whose data is ``data`` (JSON), byte for byte as
    :func:`_jsonl_event` makes it (a cursor and an event hold nothing to escape)."""
    return b'{"id":"%s","event":"%s","data":%s}\n' % (
        cursor.encode("ascii"),
        event.encode("ascii"),
        data,
    )


#: :func:`fields_key` of a ``_fields`` no viewer key can hold (an object of names).
UNKEYED: Final = object()


def fields_key(request: Request) -> Any:
    """``request``'s ``_fields`` as part of a :meth:`FeedRender.viewer` key: a string as it
    is, a list of names as a tuple, None when absent, :data:`UNKEYED` for anything else
    (such a subscriber's renders are not shared)."""
    raw = request.get_param("_fields")
    if raw is None or isinstance(raw, str):
        return raw
    if isinstance(raw, list) and all(isinstance(one, str) for one in raw):
        return tuple(raw)
    return UNKEYED


def as_got(answer: Any, request: Request) -> Any:
    """The data of ``answer`` (a controller's answer to a GET of one item: a Response, or
    its data) as that GET's answer to ``request``'s user shows it, by the functions that
    answer goes through: ``_fields`` applied to the data after the ``rest_prepare_<type>``
    filters (WordPress's ``rest_filter_response_fields``: a field such a filter adds is
    left out unless named), then the ``_links`` added unless ``_fields`` leaves them out
    (they stay when it names ``_links`` or ``_embedded``, or nothing)."""
    if isinstance(answer, Response):
        data, links = answer.data, answer.links
    else:
        data, links = answer, None
    fields = request.get_param("_fields")
    if fields is not None:
        data = filter_response_fields(data, fields)
    if links and isinstance(data, dict) and (fields is None or links_wanted(fields)):
        return {**data, "_links": links}
    return data


class FeedRender:
    """How a feed shows a change to its subscribers, in parts a process shares among them:
    :meth:`load` once a wake for everyone, :meth:`allowed` per subscriber, :meth:`view` once
    per distinct :meth:`viewer` key. Calling it renders one change for one request (the
    :data:`Render` form: the data, or None to leave the change out)."""

    #: Whether :meth:`allowed` or :meth:`view` may block (read a store, say): then a
    #: stream runs them off the event loop.
    blocking: bool = False

    def load(self, change: Change) -> Any:
        """What ``change`` names, as the store holds it now (read once a wake for every
        subscriber; off the event loop). This one loads nothing (None)."""
        return None

    def load_all(self, changes: Sequence[Change]) -> list[Any]:
        """What :meth:`load` gives for each of ``changes``, in their order (one read of the
        log's changes: a render that can read them together overrides it)."""
        return [self.load(change) for change in changes]

    def allowed(self, change: Change, loaded: Any, request: Request) -> bool:
        """Whether ``request``'s user may see ``change`` now (``loaded``: what
        :meth:`load` gave). This one allows every change."""
        return True

    def view(self, change: Change, loaded: Any, request: Request) -> Any:
        """The entry's ``data``: what ``request``'s GET would show (:func:`as_got` of the
        item's answer), or None to leave the change out."""
        raise NotImplementedError

    def viewing(self, request: Request) -> Callable[[Change, Any], Any] | None:
        """:meth:`view` for ``request`` as a function of a change and what :meth:`load`
        gave, worked out once for the changes of one read (a wake of a busy feed carries
        hundreds), or None to ask :meth:`view` of each change (this one). The function
        gives what :meth:`view` would, and is used only while the feed renders those
        changes, one after another, without letting the event loop go."""
        return None

    def viewer(self, request: Request) -> Hashable | None:
        """A key of everything in ``request`` that :meth:`view` depends on: subscribers
        with equal keys are shown one rendering of a change. None (this one): never shared.

        SECURITY: a key must hold the user (not only its id: its roles too) whenever the
        view depends on who asks, and every argument that shapes the answer."""
        return None

    def viewer_stamp(self) -> Hashable | None:
        """A value that changes whenever a request's :meth:`viewer` key may change though
        the request does not (the site's hooks or fields, say): a stream works its key out
        again only then. None (this one): every time it sends.

        SECURITY: the key of a request must depend on nothing else that may change while
        its stream is open but what the stamp holds."""
        return None

    def allowed_by_viewer(self, change: Change) -> bool:
        """Whether :meth:`allowed` of ``change`` depends on nothing of the request but what
        its :meth:`viewer` key holds: then subscribers with equal keys share one answer
        for the change, within one read of the log. False (this one): asked per
        subscriber.

        SECURITY: answer True only when the permission looks at no more of the request
        (headers, parameters, the session) than the key holds."""
        return False

    def __call__(self, change: Change, request: Request) -> Any:
        loaded = self.load(change)
        if not self.allowed(change, loaded, request):
            return None
        return self.view(change, loaded, request)


class _Plain(FeedRender):
    """A :data:`Render` function as a :class:`FeedRender` (nothing shared: it may block)."""

    blocking = True

    def __init__(self, render: Render) -> None:
        self._render = render

    def view(self, change: Change, loaded: Any, request: Request) -> Any:
        return self._render(change, request)

    def __call__(self, change: Change, request: Request) -> Any:
        return self._render(change, request)


def _feed_render(render: Render | FeedRender) -> FeedRender:
    return render if isinstance(render, FeedRender) else _Plain(render)


#: A whole chunk being rendered: the loop of the stream rendering it, and the futures of
#: the streams there waiting for it.
_Making = tuple[asyncio.AbstractEventLoop, list["asyncio.Future[None]"]]


class _Shared:
    """What the readers of one shared read of the log share: the items it loaded (per
    render and change) and, per render and viewer key, the views rendered of them and the
    read permissions answered (per change; bounded in count and bytes: past the bounds
    each reader renders its own)."""

    __slots__ = (
        "answered",
        "chunks",
        "cursors",
        "loaded",
        "making",
        "read_at",
        "size",
        "viewed",
        "viewers",
    )

    def __init__(self, read_at: float) -> None:
        #: When the read was made (the feed's clock), and the cursors issued at that time.
        self.read_at = read_at
        self.cursors: dict[int, str] = {}
        self.loaded: dict[tuple[FeedRender, int], Any] = {}
        #: Per render and viewer key: its views (JSON, None: left out) and its read
        #: permissions, by change.
        # PERF: a viewer's key (its user a frozen dataclass, hashed in Python) is hashed
        # once a chunk, not twice a change for its view and twice for its permission
        # (with the view worked out once a chunk and one cursor encoder, a change rendered
        # for its first viewer 63,570 -> 31,509 instructions; bench/feed_render.py).
        self.viewers: dict[tuple[FeedRender, Hashable], _Viewer] = {}
        #: How many views and permissions the viewers keep (each bounded by _VIEWS).
        self.viewed = 0
        self.answered = 0
        #: Whole chunks per render, viewer key, frame, first and last change and time.
        self.chunks: dict[Hashable, bytes] = {}
        #: The whole chunks being rendered in pieces (their keys as in ``chunks``): what the
        #: streams needing one await (on the loop of the stream rendering it).
        self.making: dict[Hashable, _Making] = {}
        self.size = 0

    @property
    def views(self) -> dict[tuple[FeedRender, int, Hashable], bytes | None]:
        """Every view kept, by render, change and viewer key (a copy: tests, diagnostics)."""
        return {
            (render, seq, key): data
            for (render, key), (views, _answers) in list(self.viewers.items())
            for seq, data in list(views.items())
        }

    def viewer(self, render: FeedRender, key: Hashable) -> _Viewer:
        """The views and permissions kept for ``render``'s viewer ``key``."""
        found = self.viewers.get((render, key))
        if found is None:
            found = self.viewers.setdefault((render, key), ({}, {}))
        return found

    def load(self, render: FeedRender, change: Change) -> Any:
        """What ``render`` loads for ``change`` (a change of an earlier read, which a
        reader behind this read shows now): loaded once for every reader of this read."""
        loaded = render.load(change)
        if len(self.loaded) < _VIEWS:
            self.loaded[(render, change.seq)] = loaded
        return loaded

    def allow(self, answers: dict[int, bool], seq: int, answer: bool) -> None:
        """Keep a viewer's read permission of change ``seq`` (``answers``: the viewer's)."""
        if self.answered < _VIEWS:
            answers[seq] = answer
            self.answered += 1

    def keep_chunk(self, key: Hashable, chunk: bytes) -> None:
        if len(self.chunks) < _VIEWS and self.size + len(chunk) <= _VIEW_BYTES:
            self.chunks[key] = chunk
            self.size += len(chunk)

    def keep(self, views: dict[int, bytes | None], seq: int, data: bytes | None) -> None:
        """Keep a viewer's view of change ``seq`` (``views``: the viewer's)."""
        # (Readers on the blocking pool's threads may keep views at once: dict operations
        # are atomic; the counts may then be off by a view, which the bounds tolerate.)
        size = 0 if data is None else len(data)
        if self.viewed < _VIEWS and self.size + size <= _VIEW_BYTES:
            views[seq] = data
            self.viewed += 1
            self.size += size


#: A viewer's views (by change: its JSON, None when left out) and read permissions.
_Viewer = tuple[dict[int, "bytes | None"], dict[int, bool]]


_Ended = asyncio.Future[BaseException | None]


def _settle(
    waiting: list[_Ended],
    failed: BaseException | None,
    spent: Callable[[float], None],
    pace: list[int],
) -> None:
    """On the readers' loop: the shared read they waited for ended (``failed``: its error);
    ``spent`` is told how long they took until each waited again (a stream's step: its
    chunk, its send, its next wait; ``pace``: the waker's slice size)."""
    wake_in_slices(waiting, failed, spent, pace=pace)


def _seq(change: Change) -> int:
    return change.seq


class _Window:
    """The changes of a feed's last shared read, and the ones before it (immutable: a new
    read makes a new window). Every change of the object type with ``base < seq <= end`` is
    in ``changes``, in commit order; ``token``: the waker's token taken before the read
    began and ``number`` its number (the tail's count of reads begun); ``at_end``: whether
    that read reached the log's end, else ``next_time`` is the time of the first change
    left to read; ``seqs``: the changes' positions (PERF: a stream's page found by C's
    bisection alone, no Python call a step of it)."""

    __slots__ = (
        "at_end",
        "base",
        "changes",
        "end",
        "next_time",
        "number",
        "ready",
        "seqs",
        "shared",
        "token",
    )

    def __init__(
        self,
        number: int,
        changes: tuple[Change, ...],
        seqs: tuple[int, ...],
        base: int,
        end: int,
        token: int,
        at_end: bool,
        next_time: float,
        shared: _Shared,
    ) -> None:
        self.number = number
        self.changes = changes
        self.seqs = seqs
        self.base = base
        self.end = end
        self.token = token
        self.at_end = at_end
        self.next_time = next_time
        self.shared = shared
        #: The chunks taken as they were made (see ``ChangeFeed._kept_chunk``): per position,
        #: viewer key, frame and render, the chunk, the position after it, whether changes
        #: are left, and the read's time its cursors were issued at (None: the page's own).
        self.ready: dict[Hashable, tuple[bytes, int, bool, float | None]] = {}

    def page(self, seq: int, limit: int) -> tuple[Sequence[Change], float | None, bool]:
        """The changes after ``seq`` (at most ``limit``), the time to issue their cursors
        at (None: now, the page reaches the log's end as last read) and whether changes
        are left to read."""
        changes = self.changes
        first = bisect_right(self.seqs, seq)
        last = first + limit
        if last < len(changes):
            return changes[first:last], changes[last].time, True
        if self.at_end:
            return changes[first:], None, False
        return changes[first:], self.next_time, True


def _holds(window: _Window, seq: int, token: int, after: int) -> bool:
    """Whether ``window`` (``seq`` not behind it) holds what a reader at ``seq`` waits
    for: a read begun after the waker's ``token`` was taken and after the ``after``-th
    read began, with the changes after ``seq`` (the log's end, or changes left in it)."""
    return window.token >= token and window.number > after and (window.at_end or seq < window.end)


class _Tail:
    """A feed's shared reader of the log of one store: its current window, and the read
    under way (one at a time, awaited by every reader that needs it, on any event loop)."""

    __slots__ = (
        "__weakref__",
        "_feed",
        "_lock",
        "_pending",
        "_store",
        "ahead",
        "begun",
        "joined",
        "positions",
        "reads",
        "render",
        "window",
    )

    def __init__(self, feed: ChangeFeed, store: Store) -> None:
        self._lock = threading.Lock()
        # Weak: the waker (the store's) holds the tail's read_ahead weakly, the feed the tail.
        self._feed = weakref.ref(feed)
        self._store = weakref.ref(store)
        #: The render of the latest reader: what a read ahead of a wake loads items for.
        self.render: FeedRender | None = None
        self.window: _Window | None = None
        #: The read under way: per event loop, the futures its readers there await (each
        #: its own: a reader that leaves cancels only its own), settled with the read's
        #: error or None.
        self._pending: dict[asyncio.AbstractEventLoop, list[_Ended]] | None = None
        #: How many reads of the log began, how many ended, how many were read ahead of
        #: a wake, and how many times a reader waited for a read under way (tests and
        #: benchmarks).
        self.begun = 0
        self.reads = 0
        self.ahead = 0
        self.joined = 0
        #: The streams reading from the window: a stream's number → the position it sent
        #: up to (set on its loop; a read keeps the changes after the lowest, see
        #: :data:`_LATE_WINDOWS`). Bounded by the streams open (``--max-streams``).
        self.positions: dict[int, int] = {}

    def read_ahead(self, token: int) -> None:
        """(The waker's thread, waking this feed's readers.) Read the changes after the
        window's end now, for the wake whose token is ``token``, unless a read is under way
        or the window is fresh already: the readers woken then find the window fresh and
        run one step each (their chunk, their send, their next wait), instead of a first
        one to join a read under way and a second when it ends.

        PERF: a stream's step a wake is most of the fan-out's cost: 1,000 streams in
        process, each woken once instead of twice, 14.5-15.6 → 13.4-14.4 µs of the loop a
        stream a wake (bench/idle_streams.py --uvloop --share 1000)."""
        feed, store, render = self._feed(), self._store(), self.render
        if feed is None or store is None or render is None:
            return
        with self._lock:
            window = self.window
            if window is None or self._pending is not None or window.token >= token:
                return
            self._pending = {}
            self.begun += 1
            number = self.begun
            self.ahead += 1
        self._read(feed, store, window.end, token, number, render)

    def current(self, seq: int, token: int, render: FeedRender, after: int = -1) -> _Window | None:
        """The window when it already holds what :meth:`fresh` would wait for (a read
        begun after ``token`` was taken and after the ``after``-th read began, with the
        changes after ``seq``), else None (then :meth:`fresh` says what to do). No
        suspension and no lock: a window never changes once in place.

        PERF: a stream woken after the waker's read ahead finds the window fresh; the
        coroutine and the lock of :meth:`fresh` were a part of its step: 77,596 / 78,491 ->
        73,731 / 72,813 instructions a stream a wake (bench/stream_steps.py, 100 streams)."""
        self.render = render
        window = self.window
        if window is not None and window.base <= seq and _holds(window, seq, token, after):
            return window
        return None

    async def fresh(
        self,
        feed: ChangeFeed,
        store: Store,
        seq: int,
        token: int,
        render: FeedRender,
        after: int = -1,
    ) -> _Window | None:
        """A window with the changes after ``seq`` as a read of the log found them that
        began after the waker's ``token`` was taken and after the ``after``-th read began
        (reading the log unless such a read did or does); None when ``seq`` is behind the
        window (the reader reads the log itself).

        A reader that just came passes ``after=``:attr:`begun`: the waker vouches only for
        changes it looked for, and nobody may have waited (nor the waker looked) before."""
        self.render = render
        while True:
            starts = False
            ended: _Ended | None = None
            with self._lock:
                window = self.window
                if window is not None:
                    if seq < window.base:
                        return None
                    if _holds(window, seq, token, after):
                        return window
                pending = self._pending
                if pending is None:
                    self._pending = {}
                    self.begun += 1
                    number = self.begun
                    starts = True
                else:  # PERF: settled by one call a loop, however many wait there
                    self.joined += 1
                    loop = asyncio.get_running_loop()
                    ended = loop.create_future()
                    pending.setdefault(loop, []).append(ended)
            if starts:
                # Shielded: a reader that leaves (its task cancelled) while the read waits
                # for a thread of the pool must not take the read, which others wait for,
                # with it.
                await asyncio.shield(offload(self._read)(feed, store, seq, token, number, render))
            elif ended is not None:
                failed = await ended
                if failed is not None:
                    raise failed

    def _read(
        self,
        feed: ChangeFeed,
        store: Store,
        seq: int,
        token: int,
        number: int,
        render: FeedRender,
    ) -> None:
        """(The blocking pool, or the waker's thread reading ahead of a wake.) Read the
        changes after the window's end (after ``seq`` when the window is gone or behind
        it: a new window), load what they name for ``render``, and put the new window in
        place. Its CPU time counts as the work of the wake it serves
        (:meth:`ChangeWaker.spent`)."""
        began = time.thread_time()
        try:
            window = self.window
            going_on = window is not None and window.base <= seq <= window.end
            after = window.end if going_on and window is not None else seq
            read, at_end, next_time = self._changes(store, feed.object_type, after)
            shared = _Shared(feed._clock())
            if type(render).load is not FeedRender.load:
                # PERF: one query for a read's items, not one an item (a thousand streams
                # on the writing worker of bench/feed_latency.py: a read every few tenths
                # of a second carries tens of changes; PostgreSQL, 50 items: 0.12 ms of
                # the worker's CPU against 1.22 ms).
                for change, loaded in zip(read, render.load_all(read), strict=True):
                    shared.loaded[(render, change.seq)] = loaded
            kept = window if going_on else None
            changes = (kept.changes if kept is not None else ()) + tuple(read)
            seqs = (kept.seqs if kept is not None else ()) + tuple(map(_seq, read))
            base = kept.base if kept is not None else after
            if len(changes) > WINDOW:
                cut = self._cut(seqs)
                if cut > 0:
                    base = changes[cut - 1].seq
                    changes, seqs = changes[cut:], seqs[cut:]
            end = read[-1].seq if read else after
            made = _Window(number, changes, seqs, base, end, token, at_end, next_time, shared)
        except BaseException as exc:
            self._end(None, exc, feed.object_type, store)
            raise
        # PERF: a wake's read is part of its work, held to the share with its streams'
        # steps (a read of 20 changes and their items on PostgreSQL: 0.17 ms of this
        # thread's CPU, best of 40; small beside 1,000 streams' steps, not beside a few).
        change_waker(store).spent(feed.object_type, time.thread_time() - began)
        self._end(made, None, feed.object_type, store)

    @staticmethod
    def _changes(store: Store, object_type: str, after: int) -> tuple[list[Change], bool, float]:
        """The changes after ``after``, a query of :data:`_TAIL_READ` at a time until the
        log's end or :data:`WINDOW` changes; whether the log's end was reached, else the
        time of the first change left to read.

        PERF: a wake's changes read whole before its readers are woken: on a server at ~600
        writes a second a wake carries more changes than one query brings (500), and each
        stream was woken to send the first page, then waited for the next page's read on
        the blocking pool (woken again, a second send): two steps and sends a stream a wake
        (1,000 streams on the writing worker of bench/feed_latency.py: 1.4 bursts of bytes
        a stream a second with the wakes held to one a second)."""
        read: list[Change] = []
        while True:
            page = changes_after(store, object_type, after, _TAIL_READ + 1)
            read += page[:_TAIL_READ]
            if len(page) <= _TAIL_READ:
                return read, True, 0.0
            if len(read) >= WINDOW:
                return read, False, page[_TAIL_READ].time
            after = read[-1].seq

    def _cut(self, seqs: Sequence[int]) -> int:
        """How many of the window's changes (at ``seqs``, more than :data:`WINDOW`) to
        drop: down to :data:`WINDOW`, but none that a stream has yet to send (up to
        :data:`_LATE_WINDOWS` windows' worth kept)."""
        cut = len(seqs) - WINDOW
        # (A copy, made in C: the streams' loop sets their positions meanwhile.)
        positions = self.positions.copy()
        if positions:
            cut = min(cut, bisect_right(seqs, min(positions.values())))
        return max(cut, len(seqs) - _LATE_WINDOWS * WINDOW)

    def _end(
        self, window: _Window | None, failed: BaseException | None, object_type: str, store: Store
    ) -> None:
        """The read under way ended: put ``window`` in place (unless it failed) and wake
        the readers waiting for it, on every loop; the time they take is counted as the
        work of a wake of ``object_type`` (``store``'s waker holds the next wakes back
        when it is long)."""
        with self._lock:
            if window is not None:
                self.window = window
                self.reads += 1
            pending, self._pending = self._pending, None
        waker = change_waker(store)
        spent = functools.partial(waker.spent, object_type)
        for loop, waiting in (pending or {}).items():
            try:
                loop.call_soon_threadsafe(_settle, waiting, failed, spent, waker.pace)
            except RuntimeError:  # the loop was closed: its readers are gone
                continue


class _Unmade:
    """A page of a window whose chunk a stream makes (see ``ChangeFeed._kept_chunk``):
    its changes, whether more are left to read, the time and cursors its events are
    issued at, the key of its whole chunk (None: not shared) and the window's shares."""

    __slots__ = ("cursors", "more", "page", "shared", "when", "whole")

    def __init__(
        self,
        page: Sequence[Change],
        more: bool,
        when: float,
        cursors: dict[int, str] | None,
        whole: Hashable | None,
        shared: _Shared,
    ) -> None:
        self.page = page
        self.more = more
        self.when = when
        self.cursors = cursors
        self.whole = whole
        self.shared = shared


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
    its filter ``svc_changes_retention``); ``coalesce``: returns the shortest time in
    seconds between two wakes of the feed's readers while changes keep coming (a site passes
    its filter ``svc_changes_coalesce``; the store's one waker takes the value the latest
    request of any of its feeds read); ``clock``: Unix time (tests inject one).
    Attributes ``heartbeat`` and ``session_check``: a stream's seconds between keep-alives
    and between session checks."""

    def __init__(
        self,
        store: Store | Callable[[], Store],
        object_type: str,
        *,
        retention: Callable[[], float] = lambda: DEFAULT_RETENTION,
        coalesce: Callable[[], float] = lambda: COALESCE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._get_store: Callable[[], Store] = (
            (lambda: store) if isinstance(store, Store) else store
        )
        self.object_type = object_type
        self._retention = retention
        self._coalesce = coalesce
        self._clock = clock
        self._purged = -math.inf
        self.heartbeat = HEARTBEAT
        self.session_check = SESSION_CHECK
        self._tails: weakref.WeakKeyDictionary[Store, _Tail] = weakref.WeakKeyDictionary()
        self._tails_lock = threading.Lock()

    def tail(self, store: Store) -> _Tail:
        """The feed's shared reader of ``store``'s log (made on first use)."""
        tail = self._tails.get(store)
        if tail is None:
            with self._tails_lock:
                tail = self._tails.get(store)
                if tail is None:
                    tail = self._tails[store] = _Tail(self, store)
                    change_waker(store).read_ahead(self.object_type, tail.read_ahead)
        return tail

    async def _retained(self, now: float) -> float:
        """The retention; purges the log when it was not purged for a minute (a write,
        which may wait for the store's write lock: off the event loop under ASGI)."""
        retention = float(self._retention())
        if not math.isfinite(retention) or retention <= 0:
            retention = float(DEFAULT_RETENTION)
        coalesce = float(self._coalesce())
        change_waker(self._get_store()).coalesce = (
            coalesce if math.isfinite(coalesce) and 0 <= coalesce <= MAX_COALESCE else COALESCE
        )
        if now - self._purged >= _PURGE_EVERY:
            self._purged = now
            await offload(purge_changes)(self._get_store(), now - retention)
        return retention

    async def serve(
        self, request: Request, render: Render | FeedRender, host: object
    ) -> Response | RestError:
        """The answer to the feed's route: a stream (:meth:`stream`) when ``Accept`` asks
        for ``text/event-stream`` or ``application/jsonl`` and an ASGI server serves the
        request, bounded by ``host``'s ``streams`` and ended when its
        ``stream_session_check(request)`` answers False (the App's); else the long-poll
        answer (:meth:`answer`). Each change is rendered in the ``view`` context, and
        ``_fields`` shapes each entry's ``data``, not the long-poll's answer around them:
        a feed's route is registered with the handler option ``fields_applied=True``, so
        the site's ``_fields`` filter leaves that answer whole (the request is not
        changed)."""
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
        self, request: Request, render: Render | FeedRender, *, slots: StreamSlots | None = None
    ) -> Response | RestError:
        """The answer to ``request`` (its ``since`` and ``wait``), each change rendered for
        its user by ``render``; a wait ends at once when ``slots`` close (the server is
        stopping: the answer holds what there is, maybe no change, and the cursor, with
        ``Connection: close``)."""
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
        waker = change_waker(store)
        shown = _feed_render(render)
        tail = self.tail(store)
        after = tail.begun  # a first read begun from now on
        stopping = slots is not None and slots.closing
        while True:
            token = waker.token(self.object_type)
            window = await tail.fresh(self, store, seq, token, shown, after)
            after = -1
            if window is None:  # behind the window: read the log itself
                entries, seq, issued, more = self._read(store, seq, request, shown)
            else:
                entries, seq, issued, more = self._from_window(window, seq, request, shown)
                token = max(token, window.token)
            left = deadline - time.monotonic()
            if entries or left <= 0 or waiting <= 0 or stopping:
                break
            if not more:  # read to the log's end (else a page of changes it may not see)
                waiting_for = waker.wait(self.object_type, token, left)
                stopping = await unless_closing(slots, waiting_for)
        cursor = entries[-1]["id"] if entries else encode_cursor(seq, issued)
        closing = _CLOSE_CONNECTION if stopping else None
        return Response({"changes": entries, "cursor": cursor}, headers=closing)

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
        render: Render | FeedRender,
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
        shown = _feed_render(render)
        events = self._events(store, start, request, shown, kind, slot, alive, context)
        return StreamResponse(events, kind)

    async def _events(
        self,
        store: Store,
        seq: int,
        request: Request,
        render: FeedRender,
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
        frame = _sse_frame if kind == SSE_TYPE else _jsonl_frame
        keep_alive = _SSE_KEEP_ALIVE if kind == SSE_TYPE else _JSONL_KEEP_ALIVE
        waker = change_waker(store)
        tail = self.tail(store)
        read = offload(self._read)
        positions, mine = tail.positions, id(slot)  # (the slot lives as long as the stream)
        try:
            yield keep_alive  # the head and a first line leave at once
            now = time.monotonic()
            # PERF: a stream without a session to check wakes only for changes and
            # keep-alives (1,000 idle anonymous streams: 0.7 % of a core, 7 % with a wake
            # a second; bench/idle_streams.py).
            check_every = self.session_check if alive is not None else math.inf
            beat_at, check_at = now + self.heartbeat, now + check_every
            after = tail.begun  # a first read begun from now on
            # PERF: the viewer key worked out again only when its stamp moves (under
            # cProfile 0.5 of the 1.3 s a thousand streams' chunks took: the request's
            # parameters looked up each time; bench/idle_streams.py --profile).
            stamp: Hashable | None = _MISSING
            key: Hashable | None = None
            while True:
                token = waker.token(self.object_type)
                window = tail.current(seq, token, render, after)
                if window is None:
                    window = await tail.fresh(self, store, seq, token, render, after)
                after = -1
                if window is None:  # behind the window: read the log itself, by pages
                    positions.pop(mine, None)
                    entries, seq, _issued, more = await read(store, seq, request, render)
                    chunk = b"".join(encode(entry) for entry in entries)
                else:
                    now_stamp = render.viewer_stamp()
                    if now_stamp is None or now_stamp != stamp:
                        stamp, key = now_stamp, render.viewer(request)
                    # PERF: the chunk another stream of its viewer made is taken without a
                    # coroutine (with the server's send called as it is, streams.py: 72,813 /
                    # 73,731 -> 69,142 / 71,519 instructions a stream a wake;
                    # bench/stream_steps.py, 100 streams).
                    ready = self._kept_chunk(window, seq, render, frame, key)
                    chunk, seq, more = (
                        await self._window_chunk(ready, request, render, frame, key, waker)
                        if isinstance(ready, _Unmade)
                        else ready
                    )
                    positions[mine] = seq  # the window keeps what comes after it
                    # Read to the window's end: what a wake up to its token brought is read.
                    token = max(token, window.token)
                now = time.monotonic()
                if chunk:
                    yield chunk  # every entry ready in one send
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
            positions.pop(mine, None)
            slot.give_back()

    def _kept_chunk(
        self,
        window: _Window,
        seq: int,
        render: FeedRender,
        frame: Callable[[str, str, bytes], bytes],
        key: Hashable | None,
    ) -> tuple[bytes, int, bool] | _Unmade:
        """A stream's chunk of the changes after ``seq`` in ``window`` (``key``: its
        render's viewer key), the position read up to and whether changes are left to read,
        when there is nothing to send or the streams of its viewer at its position share
        a chunk already made; else what :meth:`_window_chunk` makes it of.

        PERF: the streams of one viewer at one position take the chunk the first of them
        found made by one look-up (its page, time and key not worked out again by each;
        with the waker reading its loop's thread id once a loop, not once a wait): 72,557 /
        72,669 / 73,386 -> 64,138 / 66,052 / 65,749 instructions a stream a wake
        (bench/stream_steps.py, 100 streams, three interleaved pairs)."""
        ready = window.ready
        mark = (seq, key, frame, render)
        taken = ready.get(mark) if key is not None else None
        if taken is not None:
            at = taken[3]
            if at is None or self._clock() - at < _READ_TIME_KEPT:  # (as _when says)
                return taken[0], taken[1], taken[2]
        page, issued, more = window.page(seq, WINDOW)
        if not page:
            return b"", seq, more
        shared = window.shared
        when, cursors = self._when(issued, shared)
        whole = self._whole(render, key, frame, page, when, cursors, issued)
        chunk = shared.chunks.get(whole) if whole is not None else None
        if chunk is not None:
            if len(ready) < _VIEWS:
                ready[mark] = (chunk, page[-1].seq, more, when if issued is None else None)
            return chunk, page[-1].seq, more
        return _Unmade(page, more, when, cursors, whole, shared)

    async def _window_chunk(
        self,
        unmade: _Unmade,
        request: Request,
        render: FeedRender,
        frame: Callable[[str, str, bytes], bytes],
        key: Hashable | None,
        waker: ChangeWaker,
    ) -> tuple[bytes, int, bool]:
        """The chunk of ``unmade`` for ``request``'s subscriber (``key``: its render's
        viewer key), the position read up to and whether changes are left to read. On the
        event loop (as a GET of the item), unless the render blocks: then in the blocking
        pool."""
        page, when, cursors, whole, shared = (
            unmade.page,
            unmade.when,
            unmade.cursors,
            unmade.whole,
            unmade.shared,
        )
        if render.blocking:
            chunk: bytes = await offload(self._chunk)(
                page, when, cursors, whole, shared, request, render, frame, key
            )
        elif len(page) <= _RENDER_PIECE:
            chunk = self._chunk(page, when, cursors, whole, shared, request, render, frame, key)
        else:
            chunk = await self._chunk_in_pieces(
                page, when, cursors, whole, shared, request, render, frame, key, waker
            )
        return chunk, page[-1].seq, unmade.more

    async def _chunk_in_pieces(
        self,
        page: Sequence[Change],
        when: float,
        cursors: dict[int, str] | None,
        whole: Hashable | None,
        shared: _Shared,
        request: Request,
        render: FeedRender,
        frame: Callable[[str, str, bytes], bytes],
        key: Hashable | None,
        waker: ChangeWaker,
    ) -> bytes:
        """As :meth:`_chunk` (the same bytes), its changes rendered :data:`_RENDER_PIECE`
        at a time, the event loop let go between two pieces once :data:`_RENDER_TIME` of
        its thread's CPU went into them (the data of other requests is read meanwhile); the
        streams needing the same whole chunk meanwhile wait for it, not render it again,
        and are woken in slices when it is done (their steps, and the pieces rendered
        after the first let-go, counted as the wake's work by ``waker``).

        PERF: a wake carrying hundreds of changes had its first stream render them all in
        one step of the loop, in which no POST was read nor answered: 1,000 streams in
        process at ~2,500 writes a second, chunks of 1,500-2,048 changes 17-31 ms a step;
        at ~700 writes a second the loop's longest stretch 20.8-23.8 ms, 9.5-11.4 with the
        pieces and the sized slices (bench/idle_streams.py --posters 4 --post-pause 4
        --send-cost 46)."""
        loop = asyncio.get_running_loop()
        if whole is not None:
            chunk = await self._made_elsewhere(shared, whole, loop)
            if chunk is not None:
                return chunk
        mine: _Making = (loop, [])
        if whole is not None:
            shared.making.setdefault(whole, mine)
        parts: list[bytes] = []
        by_viewer = True
        later = 0.0  # the CPU of the pieces after the first let-go
        try:
            began = time.thread_time()
            resumed = False
            for first in range(0, len(page), _RENDER_PIECE):
                if time.thread_time() - began >= _RENDER_TIME:
                    if resumed:
                        later += time.thread_time() - began
                    await asyncio.sleep(0)  # the loop's turn: other requests' data
                    began, resumed = time.thread_time(), True
                piece = page[first : first + _RENDER_PIECE]
                part, by = self._frames(piece, when, cursors, shared, request, render, frame, key)
                parts.append(part)
                by_viewer = by_viewer and by
            if resumed:
                later += time.thread_time() - began
            chunk = b"".join(parts)
            if whole is not None and by_viewer:
                shared.keep_chunk(whole, chunk)
            return chunk
        finally:
            if whole is not None and shared.making.get(whole) is mine:
                del shared.making[whole]
            if later:  # the wake's work too, outside the step its slice counted
                waker.spent(self.object_type, later)
            if mine[1]:  # PERF: a slice at a time, as a wake (a thousand streams wait)
                spent = functools.partial(waker.spent, self.object_type)
                wake_in_slices(mine[1], None, spent, pace=waker.pace)

    @staticmethod
    async def _made_elsewhere(
        shared: _Shared, whole: Hashable, loop: asyncio.AbstractEventLoop
    ) -> bytes | None:
        """The whole chunk ``whole`` as ``shared`` keeps it, waiting first for the stream
        rendering it on ``loop`` if one does (None: none kept, render it)."""
        chunk = shared.chunks.get(whole)
        if chunk is not None:
            return chunk
        making = shared.making.get(whole)
        if making is None or making[0] is not loop:
            return None
        made: asyncio.Future[None] = loop.create_future()
        making[1].append(made)
        await made  # (its own: a stream leaving leaves the others waiting)
        return shared.chunks.get(whole)

    def _when(self, issued: float | None, shared: _Shared) -> tuple[float, dict[int, str] | None]:
        """The time a page's cursors are issued at (``issued``: the page's, None when it
        reaches the log's end as last read: the read's time while it is recent, else now)
        and the cursors of the read's time already made (None: not that time)."""
        if issued is not None:
            return issued, None
        when = self._clock()
        if when - shared.read_at < _READ_TIME_KEPT:
            return shared.read_at, shared.cursors
        return when, None

    @staticmethod
    def _whole(
        render: FeedRender,
        key: Hashable | None,
        frame: Callable[[str, str, bytes], bytes],
        page: Sequence[Change],
        when: float,
        cursors: dict[int, str] | None,
        issued: float | None,
    ) -> Hashable | None:
        """The key of a page's whole chunk for the streams of one viewer (None: not
        shared)."""
        if key is not None and (cursors is not None or issued is not None):
            # PERF: the streams of one viewer at the log's end all send the same bytes.
            return (render, key, frame, page[0].seq, page[-1].seq, when)
        return None

    def _chunk(
        self,
        page: Sequence[Change],
        when: float,
        cursors: dict[int, str] | None,
        whole: Hashable | None,
        shared: _Shared,
        request: Request,
        render: FeedRender,
        frame: Callable[[str, str, bytes], bytes],
        key: Hashable | None,
    ) -> bytes:
        """The events of ``page`` for ``request``'s subscriber (``key``: its viewer key),
        in one chunk: each change it may read now (asked of ``render`` for this
        subscriber), its view rendered once per viewer key for every stream of this read
        (``shared``); the whole chunk made once per viewer key for the streams at the same
        position, when every permission of the page is the key's (``when``, ``cursors``
        and ``whole``: :meth:`_when` and :meth:`_whole` of the page)."""
        if whole is not None:
            chunk = shared.chunks.get(whole)
            if chunk is not None:
                return chunk
        chunk, by_viewer = self._frames(page, when, cursors, shared, request, render, frame, key)
        if whole is not None and by_viewer:
            shared.keep_chunk(whole, chunk)
        return chunk

    def _frames(
        self,
        page: Sequence[Change],
        when: float,
        cursors: dict[int, str] | None,
        shared: _Shared,
        request: Request,
        render: FeedRender,
        frame: Callable[[str, str, bytes], bytes],
        key: Hashable | None,
    ) -> tuple[bytes, bool]:
        """The chunk of :meth:`_chunk`, and whether each change's permission was the
        viewer key's (then the chunk is the same for every stream of the key)."""
        # SECURITY: a view is shared only under the render's viewer key (the user, its
        # roles and the arguments shaping the answer), and only once this subscriber's
        # read permission for the change holds: asked for it, or answered for its key when
        # the render says the permission depends on nothing the key does not hold.
        loaded_items = shared.loaded
        views: dict[int, bytes | None] | None = None
        answers: dict[int, bool] = {}
        if key is not None:
            views, answers = shared.viewer(render, key)
        view: Callable[[Change, Any], Any] | None = _MISSING
        # PERF: the cursors of one time made by one encoder (7,964 -> 4,573 instructions a
        # cursor, bench/feed_render.py --parts cursor).
        encode = cursor_encoder(when)
        parts: list[bytes] = []
        by_viewer = True
        for change in page:
            seq = change.seq
            loaded = loaded_items.get((render, seq), _MISSING)
            if loaded is _MISSING:  # a change of an earlier read: loaded once for this one
                loaded = shared.load(render, change)
            if key is None or not render.allowed_by_viewer(change):
                by_viewer = False
                answer = render.allowed(change, loaded, request)
            else:
                answer = answers.get(seq, _MISSING)
                if answer is _MISSING:
                    answer = render.allowed(change, loaded, request)
                    shared.allow(answers, seq, answer)
            if not answer:
                continue
            data = _MISSING if views is None else views.get(seq, _MISSING)
            if data is _MISSING:
                if view is _MISSING:  # PERF: worked out once a chunk (FeedRender.viewing)
                    view = render.viewing(request)
                value = (
                    render.view(change, loaded, request) if view is None else view(change, loaded)
                )
                data = (
                    None
                    if value is None
                    else orjson.dumps(value, default=encode_default, option=_JSON_OPTIONS)
                )
                if views is not None:
                    shared.keep(views, seq, data)
            if data is not None:
                if cursors is None:
                    cursor = encode(seq)
                else:
                    cursor = cursors.get(seq) or cursors.setdefault(seq, encode(seq))
                parts.append(frame(cursor, change.event, data))
        return b"".join(parts), by_viewer

    def _from_window(
        self, window: _Window, seq: int, request: Request, render: FeedRender
    ) -> tuple[list[dict[str, Any]], int, float, bool]:
        """As :meth:`_read`, from ``window`` (its items loaded once for every reader)."""
        page, issued, more = window.page(seq, _PAGE)
        when = self._clock() if issued is None else issued
        loaded_items = window.shared.loaded
        entries: list[dict[str, Any]] = []
        view = render.viewing(request) if page else None
        encode = cursor_encoder(when)
        for change in page:
            seq = change.seq
            loaded = loaded_items.get((render, change.seq), _MISSING)
            if loaded is _MISSING:
                loaded = window.shared.load(render, change)
            if not render.allowed(change, loaded, request):
                continue
            data = render.view(change, loaded, request) if view is None else view(change, loaded)
            if data is not None:
                entries.append({"id": encode(seq), "event": change.event, "data": data})
        return entries, seq, when, more

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
