"""Streamed answers: a REST response whose body is sent as it comes, and the bound on them.

The rule: a stream takes the one pipeline like any answer (authentication, permission,
``rest_post_dispatch``, the REST header block with CORS and the request id) and differs only
at its end: its :class:`StreamResponse` becomes an :class:`~svcrest.http.exchange.HttpStream`
(no ``ETag``, no 304, no content coding, no ``Content-Length``), which the ASGI adapter sends
chunk by chunk, each flushed as it comes, until the chunks end or the client leaves. Only a
handler that knows it is served by an ASGI server's event loop (:func:`can_stream`) answers
one; everywhere else (WSGI, internal dispatch) it answers plainly.

:class:`StreamSlots` bounds the streams a process holds at once (``svcrest serve
--max-streams``): past it a stream is refused with 503 ``svc_streams_busy`` and
``Retry-After``, and a slot is given back when its stream ends for any reason. When the
server stops (SIGTERM, SIGINT, its lifespan's shutdown), :meth:`StreamSlots.close` ends every
stream at once, cleanly (the body is finished: a Server-Sent Events client reconnects with
``Last-Event-ID``, to another worker or host), and a waiting long-poll answers what it has:
a stream never holds a stopping worker until the server's graceful time-out.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Awaitable
from typing import Final

from svcrest.http.context import DISPATCH_USER
from svcrest.http.errors import RestError
from svcrest.http.qvalues import q_weights
from svcrest.http.response import Response
from svcrest.syncrun import on_shared_loop

__all__ = [
    "DEFAULT_MAX_STREAMS",
    "JSONL_TYPE",
    "SSE_TYPE",
    "StreamResponse",
    "StreamSlots",
    "can_stream",
    "streams_busy",
    "unless_closing",
    "wanted_stream",
]

#: Streams a process holds at once by default.
DEFAULT_MAX_STREAMS: Final = 1000
#: Seconds a client refused a stream is told to wait (``Retry-After``).
RETRY_AFTER: Final = 5
SSE_TYPE: Final = "text/event-stream"
JSONL_TYPE: Final = "application/jsonl"
_JSON_TYPES: Final = ("application/json", "*/*", "application/*")


class StreamResponse(Response):
    """A REST response whose body is ``chunks`` (bytes, each sent and flushed as it comes),
    of ``content_type``; its data is None. The ASGI adapter closes ``chunks`` when the
    client leaves."""

    __slots__ = ("chunks",)

    def __init__(
        self, chunks: AsyncGenerator[bytes, None], content_type: str, status: int = 200
    ) -> None:
        super().__init__(
            None,
            status,
            # SSE: caches and proxies must pass each event on as it comes.
            {"Content-Type": content_type, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
        self.chunks = chunks


def wanted_stream(accept: str | None) -> str | None:
    """The stream type ``Accept`` prefers (:data:`SSE_TYPE` or :data:`JSONL_TYPE`) over
    JSON, or None: a type named with a weight above JSON's (and above 0)."""
    if not accept:
        return None
    weights = q_weights(accept)
    plain = max((weights.get(kind, 0.0) for kind in _JSON_TYPES), default=0.0)
    sse = weights.get(SSE_TYPE, 0.0)
    jsonl = weights.get(JSONL_TYPE, 0.0)
    best = max(sse, jsonl)
    if best <= plain:
        return None
    return SSE_TYPE if sse >= jsonl else JSONL_TYPE


def can_stream() -> bool:
    """Whether the request being served may be answered with a stream: served by an ASGI
    server's event loop (not a WSGI thread's own loop, where a stream would hold a server
    thread), and not an internal dispatch (``rest_do_request``, an ability run)."""
    return DISPATCH_USER.get() is None and on_shared_loop()


def streams_busy() -> RestError:
    """The 503 of a stream past the process's bound."""
    error = RestError(
        "svc_streams_busy",
        "Too many streams are open on this server; try again shortly.",
        {"status": 503},
    )
    error.headers = (("Retry-After", str(RETRY_AFTER)),)
    return error


def _end(future: asyncio.Future[None]) -> None:
    """On the future's loop: the streams waiting on it end."""
    if not future.done():
        future.set_result(None)


class StreamSlots:
    """At most ``limit`` streams at once (thread-safe): :meth:`take` a slot before a stream
    starts, :meth:`give_back` it when the stream ends. :meth:`close` ends them all (the
    server is stopping) and :meth:`reopen` serves again (the server started)."""

    def __init__(self, limit: int = DEFAULT_MAX_STREAMS) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._open = 0
        self._closing = False
        #: One future per event loop serving streams, done when the streams are to end
        #: (PERF: shared by every stream of the loop, no task or future of its own).
        self._stopped: dict[asyncio.AbstractEventLoop, asyncio.Future[None]] = {}

    @property
    def limit(self) -> int:
        """The most streams at once (a positive number)."""
        return self._limit

    @limit.setter
    def limit(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"the most streams at once must be a positive number, not {value!r}")
        self._limit = value

    @property
    def open(self) -> int:
        """How many streams are open now."""
        return self._open

    def take(self) -> bool:
        """Take a slot; False when all are taken."""
        with self._lock:
            if self._open >= self._limit:
                return False
            self._open += 1
            return True

    def give_back(self) -> None:
        """Give back a slot :meth:`take` took."""
        with self._lock:
            self._open = max(self._open - 1, 0)

    @property
    def closing(self) -> bool:
        """Whether the streams are to end (:meth:`close` was called, :meth:`reopen` not
        since)."""
        return self._closing

    def stopped(self) -> asyncio.Future[None]:
        """A future of the running event loop, done when the streams are to end (at once
        while :attr:`closing`); a stream waits on it beside its chunks, never cancels it."""
        loop = asyncio.get_running_loop()
        with self._lock:
            future = self._stopped.get(loop)
            if future is None:
                # Bounded by the loops alive: a closed loop's entry goes with the next one.
                for gone in [known for known in self._stopped if known.is_closed()]:
                    del self._stopped[gone]
                future = self._stopped[loop] = loop.create_future()
                if self._closing:
                    future.set_result(None)
        return future

    def close(self) -> None:
        """End every stream now and from now on (the server is stopping): each sends what
        it holds and finishes its body; a long-poll waiting for changes answers at once.
        From any thread."""
        with self._lock:
            self._closing = True
            waiting = list(self._stopped.items())
        for loop, future in waiting:
            try:
                loop.call_soon_threadsafe(_end, future)
            except RuntimeError:  # the loop was closed: its streams are gone
                continue

    def reopen(self) -> None:
        """Serve streams again after :meth:`close` (the server started anew)."""
        with self._lock:
            if self._closing:
                self._closing = False
                self._stopped.clear()  # every one is done: the next streams get new ones


async def unless_closing(slots: StreamSlots | None, waiting: Awaitable[object]) -> bool:
    """Await ``waiting`` unless ``slots`` close first (then it is cancelled); whether they
    are closing (a long-poll then answers what it has)."""
    if slots is None:
        await waiting
        return False
    if slots.closing:
        if asyncio.iscoroutine(waiting):
            waiting.close()
        return True
    task = asyncio.ensure_future(waiting)
    stopped = slots.stopped()
    try:
        await asyncio.wait((task, stopped), return_when=asyncio.FIRST_COMPLETED)
    finally:
        task.cancel()
    return slots.closing
