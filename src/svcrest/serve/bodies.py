"""What a slow request body may hold: a deadline for the whole body, and on WSGI, server
threads.

A client that announces a body and then sends it a byte at a time (or not at all) must not
keep the site from answering others. Both adapters give the whole body ``body_timeout()``
seconds (``SVCREST_BODY_TIMEOUT``, set by ``svcrest serve --body-timeout``; 30 by default) and
answer 408 ``svc_body_timeout`` after it.

On ASGI a body being read costs a coroutine, and the deadline is a timer. On WSGI it costs a
server thread, and ``wsgi.input.read(n)`` cannot be interrupted: granian's waits until ``n``
bytes came or the client left, and reading it from any other thread stalls the whole worker
(measured: one such read held every request for 3.8 s). :class:`PacedBodyReads` therefore
reads on the request's thread in steps that grow eight-fold while the bytes flow and fall
back to one byte when a read waited, checking the deadline after each step: a client sending
a byte at a time is answered 408 soon after the deadline (at worst eight of its byte
intervals, or two seconds, later). A client that pauses at the wrong moment, or sends
nothing at all, cannot be answered before it sends or leaves; so reading a body needs one of
``body_readers()`` places (half of the worker's threads: ``SVCREST_BODY_READERS``, which
``svcrest serve`` sets from its granian thread count; else ``SLOW_BODY_READERS``), and a body
that finds none free within ``PLACE_WAIT_SECONDS`` is answered 503 ``svc_body_busy``:
however many slow bodies arrive, the other threads serve everyone else. One client address
(``REMOTE_ADDR``) holds at most its share of the places, half of them (at least one), so a
client that opens silent bodies from one address leaves the others places to read in; many
addresses together can still take every place, which is why ``svcrest serve`` serves on an
ASGI interface by default (a silent body there costs a coroutine, and gets its 408).
"""

from __future__ import annotations

import io
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Final

from svcrest.http.errors import BodyReadError, RestError

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "ENV_BODY_READERS",
    "ENV_BODY_TIMEOUT",
    "PLACE_WAIT_SECONDS",
    "SLOW_BODY_READERS",
    "PacedBodyReads",
    "address_share",
    "body_busy_error",
    "body_readers",
    "body_timeout",
    "body_timeout_error",
    "slow_body_readers",
]

#: The environment variable holding the seconds a client has to send a whole request body.
ENV_BODY_TIMEOUT: Final = "SVCREST_BODY_TIMEOUT"
DEFAULT_BODY_TIMEOUT: Final = 30.0
#: WSGI: request threads that may be reading bodies at once, per worker, unless
#: ``SVCREST_BODY_READERS`` says otherwise (half of granian's eight threads).
SLOW_BODY_READERS: Final = 4
ENV_BODY_READERS: Final = "SVCREST_BODY_READERS"
#: WSGI: how long a body waits for a reading place before it is answered 503 (places held by
#: bodies that come at once are free again within microseconds).
PLACE_WAIT_SECONDS: Final = 0.1
#: WSGI: most bytes asked of ``wsgi.input`` at a time (a power of ``_GROWTH``).
_MAX_STEP: Final = 8**5
#: WSGI: a read answered within this many seconds means the bytes flow: the next asks
#: ``_GROWTH`` times as many; a slower one means a slow client: the next asks one byte. (Well
#: above what waiting for the GIL adds to a read of bytes that came already.)
_FLOWING: Final = 0.25
#: PERF: few reads for a body that came at once (an 80-byte body: 1, 8, then 71 bytes); a
#: read costs ~1 µs.
_GROWTH: Final = 8


def body_timeout() -> float:
    """The seconds a client has to send a whole request body (``SVCREST_BODY_TIMEOUT``,
    else 30; a value that is not a positive number counts as unset)."""
    raw = os.environ.get(ENV_BODY_TIMEOUT)
    if raw is None:
        return DEFAULT_BODY_TIMEOUT
    try:
        seconds = float(raw)
    except ValueError:
        return DEFAULT_BODY_TIMEOUT
    return seconds if 0 < seconds < float("inf") else DEFAULT_BODY_TIMEOUT


def body_readers() -> int:
    """WSGI: how many request threads of a worker may read bodies at once
    (``SVCREST_BODY_READERS``, else ``SLOW_BODY_READERS``; a value that is not a positive
    integer counts as unset)."""
    raw = os.environ.get(ENV_BODY_READERS, "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else SLOW_BODY_READERS


def slow_body_readers(threads: int) -> int:
    """The reading places for a worker of ``threads`` request threads: half of them (at
    least one), so the other half always serve requests without a body in flight."""
    return max(1, threads // 2)


def address_share(readers: int) -> int:
    """The reading places one client address may hold at once among ``readers``: half of
    them, at least one (so with two places or more, one address never holds them all)."""
    return max(1, readers // 2)


def declared_too_long(declared: str | None, limit: int) -> bool:
    """Whether a request's ``Content-Length`` value (None without one) declares a body longer
    than ``limit``. SECURITY: such a body is refused before any of it is read; a value that
    is not a number declares nothing (the body is read and bounded as it comes)."""
    if not declared:
        return False
    digits = declared.strip()
    return digits.isascii() and digits.isdigit() and int(digits) > limit


def body_timeout_error(seconds: float) -> BodyReadError:
    """The 408 of a body not received within ``seconds``."""
    return BodyReadError(
        RestError(
            "svc_body_timeout",
            f"The request body was not received within {seconds:g} seconds.",
            {"status": 408, "body_timeout": seconds},
        )
    )


def body_busy_error() -> BodyReadError:
    """The 503 of a slow body arriving while every slow-reader place is taken."""
    error = RestError(
        "svc_body_busy",
        "Too many slow request bodies are being received; please try again shortly.",
        {"status": 503},
    )
    error.headers = (("Retry-After", "1"),)
    return BodyReadError(error)


def _read_paced(read: Callable[[int], bytes], size: int, seconds: float) -> bytes:
    """Up to ``size`` bytes of ``read`` (fewer when the stream ends first), within
    ``seconds``: raises the 408 when bytes are still due after them."""
    now = time.monotonic()
    deadline = now + seconds
    chunks: list[bytes] = []
    left = size
    step = 1
    while left > 0:
        chunk = read(step if step < left else left)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
        before, now = now, time.monotonic()
        if now > deadline and left > 0:
            raise body_timeout_error(seconds)
        if now - before >= _FLOWING:
            step = 1
        elif step < _MAX_STEP:
            step *= _GROWTH
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


#: WSGI: seconds between two looks at an address's share while it is full.
_SHARE_POLL: Final = 0.01


class PacedBodyReads:
    """Reads WSGI request bodies within the body deadline (``body_timeout()`` when it is
    created), at most ``readers`` at once and at most :func:`address_share` of them for one
    client address (see the module)."""

    def __init__(
        self, *, readers: int | None = None, place_wait: float = PLACE_WAIT_SECONDS
    ) -> None:
        # PERF: read once: the environment costs ~4,000 instructions a body (callgrind).
        self._seconds = body_timeout()
        places = body_readers() if readers is None else readers
        # PERF: a SimpleQueue of tokens (C code) instead of a Semaphore (Python code):
        # taking and giving back a place cost 0.4 µs instead of ~4 µs.
        self._places: queue.SimpleQueue[None] = queue.SimpleQueue()
        for _ in range(places):
            self._places.put(None)
        self._place_wait = place_wait
        self._share = address_share(places)
        # The places each client address holds; bounded: an address leaves it when it holds
        # none, so it never has more entries than there are places.
        self._held: dict[str, int] = {}
        self._held_lock = threading.Lock()

    def _take_share(self, client: str) -> bool:
        """Count one more place held by ``client``, waiting up to the place wait while it
        holds its whole share; False when it still does."""
        deadline = 0.0
        while True:
            with self._held_lock:
                held = self._held.get(client, 0)
                if held < self._share:
                    self._held[client] = held + 1
                    return True
            now = time.monotonic()
            if not deadline:
                deadline = now + self._place_wait
            elif now >= deadline:
                return False
            time.sleep(_SHARE_POLL)

    def _give_back_share(self, client: str) -> None:
        with self._held_lock:
            held = self._held[client] - 1
            if held:
                self._held[client] = held
            else:
                del self._held[client]

    def read(self, stream: object, size: int, client: str = "") -> bytes:
        """Up to ``size`` bytes of the ``wsgi.input`` ``stream`` sent by the client address
        ``client``. Raises :class:`BodyReadError`: 408 ``svc_body_timeout`` after the
        deadline, 503 ``svc_body_busy`` when no reading place came free in time or the
        address holds its whole share of them."""
        read: Callable[[int], bytes] = stream.read  # type: ignore[attr-defined]
        if type(stream) is io.BytesIO:  # in memory already (uvicorn's WSGI bridge, tests)
            return read(size)
        # SECURITY: one address cannot hold every place (silent bodies from one client).
        if not self._take_share(client):
            raise body_busy_error()
        try:
            try:
                self._places.get(timeout=self._place_wait)
            except queue.Empty:
                raise body_busy_error() from None
            try:
                return _read_paced(read, size, self._seconds)
            finally:
                self._places.put(None)
        finally:
            self._give_back_share(client)
