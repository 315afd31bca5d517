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
``Retry-After``, and a slot is given back when its stream ends for any reason.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator
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


class StreamSlots:
    """At most ``limit`` streams at once (thread-safe): :meth:`take` a slot before a stream
    starts, :meth:`give_back` it when the stream ends."""

    def __init__(self, limit: int = DEFAULT_MAX_STREAMS) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._open = 0

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
