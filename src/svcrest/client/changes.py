"""Following a collection's change feed: ``GET <collection>/changes?since=<cursor>&wait=<s>``.

The rule: a feed hands out each event once, in the order the server sent them, and the cursor
it resumes from is always the ``id`` of the last event handed out (or the cursor of the last
answer without events). A dropped connection, a time-out or a 5xx answer therefore never loses
or repeats an event: the next poll sends that cursor again as ``since``, after a jittered
back-off (0.5 s, doubling, at most ``max_delay``) that a successful answer resets. A 410
``rest_changes_expired`` raises `ChangesExpired` (the events after the cursor are no longer
kept: read the collection again, then follow from a fresh cursor); any other 4xx (401 or 403
when the session ended or may not read the feed) raises `ProxyError` at once.

`ChangeStream` is the synchronous iterator and `AsyncChangeStream` the asynchronous one; both
are driven by a ``poll(since, wait)`` function of their proxy, so the rules live here once.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final

import httpx

from svcrest.client.errors import ProxyError

__all__ = [
    "DEFAULT_MAX_DELAY",
    "DEFAULT_MAX_FAILURES",
    "DEFAULT_WAIT",
    "EXPIRED_CODE",
    "MAX_WAIT",
    "AsyncChangeStream",
    "ChangeEvent",
    "ChangeStream",
    "ChangesExpired",
]

#: The longest ``wait`` a server accepts, in seconds.
MAX_WAIT: Final = 30.0
#: Seconds each long-poll asks the server to wait for a change (the server's longest).
DEFAULT_WAIT: Final = MAX_WAIT
#: The longest pause, in seconds, before polling again after a failure.
DEFAULT_MAX_DELAY: Final = 30.0
#: Failed polls in a row after which the feed gives up and raises the last failure.
DEFAULT_MAX_FAILURES: Final = 10
#: The error code of a cursor older than the server keeps changes for.
EXPIRED_CODE: Final = "rest_changes_expired"
_FIRST_DELAY: Final = 0.5


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    """One change of the collection: ``id`` (the cursor just after it), ``event``
    (``"created"``, ``"updated"`` or ``"deleted"``) and ``data`` (the item as a GET of the
    collection shows it to this client; ``{"id": n}`` for a deletion)."""

    id: str
    event: str
    data: Any


class ChangesExpired(ProxyError):
    """The cursor is older than the changes the server keeps (410 ``rest_changes_expired``):
    events may have been missed. Read the collection again and follow its changes from a
    fresh cursor."""


def _expired(error: ProxyError) -> ProxyError:
    if error.status == 410 and error.code == EXPIRED_CODE:
        expired = ChangesExpired(error.code, error.message, error.status, error.data)
        expired.__cause__ = error
        return expired
    return error


def _transient(error: Exception) -> bool:
    """Whether a poll that failed with ``error`` is tried again (with the same cursor)."""
    if isinstance(error, ProxyError):
        return error.status >= 500 or error.status in (0, 429)  # 0: no answer in time
    return isinstance(error, httpx.TransportError)


def _events(body: Any) -> tuple[list[ChangeEvent], str]:
    """The events and the cursor of a long-poll answer; ProxyError when it is not one."""
    changes = body.get("changes") if isinstance(body, dict) else None
    cursor = body.get("cursor") if isinstance(body, dict) else None
    if not isinstance(changes, list) or not isinstance(cursor, str) or not cursor:
        raise ProxyError(
            "invalid_changes_response", "The answer is not a change feed's long-poll.", 200
        )
    events: list[ChangeEvent] = []
    for entry in changes:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise ProxyError("invalid_changes_response", "A change has no cursor.", 200)
        events.append(ChangeEvent(entry["id"], str(entry.get("event")), entry.get("data")))
    return events, cursor


class _Feed:
    """The state both streams share: the cursor, the events received but not handed out,
    and the failures in a row."""

    def __init__(
        self,
        since: str | None,
        wait: float,
        max_delay: float,
        max_failures: int | None,
        report: Callable[[ProxyError], object] | None,
    ) -> None:
        if not 0 < wait <= MAX_WAIT:
            raise ValueError(f"wait is seconds > 0 and <= {MAX_WAIT:g}, got {wait!r}")
        if max_delay < 0:
            raise ValueError(f"max_delay is seconds >= 0, got {max_delay!r}")
        #: The cursor to resume from: the ``id`` of the last event handed out, or the
        #: cursor of the last answer without events; None before the first answer when
        #: the feed started at the log's end.
        self.cursor: str | None = since
        self.wait = wait
        self.max_delay = max_delay
        self.max_failures = max_failures
        self.report = report
        self.failures = 0
        self.closed = False
        self._ready: deque[ChangeEvent] = deque()

    def next_ready(self) -> ChangeEvent | None:
        if self.closed:
            raise _Stop
        if not self._ready:
            return None
        event = self._ready.popleft()
        self.cursor = event.id
        return event

    def answered(self, body: Any) -> None:
        try:
            events, cursor = _events(body)
        except ProxyError as error:
            if self.report is not None:
                self.report(error)
            raise
        self.failures = 0
        self._ready.extend(events)
        if not events:
            self.cursor = cursor

    def failed(self, error: Exception) -> float:
        """The pause before polling again after ``error``; raises it when it is not
        transient or too many polls failed in a row."""
        if isinstance(error, ProxyError):
            error = _expired(error)
        self.failures += 1
        too_many = self.max_failures is not None and self.failures > self.max_failures
        if too_many or not _transient(error):
            if self.report is not None and isinstance(error, ProxyError):
                self.report(error)
            raise error
        base = min(_FIRST_DELAY * 2.0 ** (self.failures - 1), self.max_delay)
        return base * random.uniform(0.75, 1.0)  # jittered: clients cut off together spread out


class _Stop(Exception):
    """The stream was closed."""


class ChangeStream:
    """A synchronous iterator of a collection's `ChangeEvent` objects, made by
    ``RestProxy.changes``: each step returns the next event, long-polling the server (up to
    ``wait`` seconds per request) until there is one.

    ``cursor`` is where the stream would resume (pass it as ``since`` to a later
    ``changes`` call). `close` (or leaving a ``with`` block, or breaking out of a ``for``
    loop and dropping the stream) ends it; no connection is held between steps."""

    def __init__(
        self,
        poll: Callable[[str | None, float], Any],
        *,
        since: str | None,
        wait: float,
        max_delay: float,
        max_failures: int | None,
        report: Callable[[ProxyError], object] | None = None,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        self._poll = poll
        self._feed = _Feed(since, wait, max_delay, max_failures, report)
        self._sleep = sleep

    @property
    def cursor(self) -> str | None:
        """The cursor to resume from (None until the first answer of a feed started at the
        log's end)."""
        return self._feed.cursor

    def __iter__(self) -> ChangeStream:
        return self

    def __next__(self) -> ChangeEvent:
        feed = self._feed
        try:
            while (event := feed.next_ready()) is None:
                try:
                    body = self._poll(feed.cursor, feed.wait)
                except (ProxyError, httpx.TransportError) as error:
                    self._sleep(feed.failed(error))
                else:
                    feed.answered(body)
        except _Stop:
            raise StopIteration from None
        return event

    def close(self) -> None:
        """End the stream: the next step raises StopIteration."""
        self._feed.closed = True

    def __enter__(self) -> ChangeStream:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class AsyncChangeStream:
    """`ChangeStream` for ``async for``, made by ``AsyncRestProxy.changes``. Cancelling the
    task that awaits a step cancels its request (the connection goes back to the client's
    pool or is closed); `aclose` ends the stream."""

    def __init__(
        self,
        poll: Callable[[str | None, float], Awaitable[Any]],
        *,
        since: str | None,
        wait: float,
        max_delay: float,
        max_failures: int | None,
        report: Callable[[ProxyError], object] | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self._poll = poll
        self._feed = _Feed(since, wait, max_delay, max_failures, report)
        self._sleep = sleep

    @property
    def cursor(self) -> str | None:
        """The cursor to resume from (see `ChangeStream.cursor`)."""
        return self._feed.cursor

    def __aiter__(self) -> AsyncChangeStream:
        return self

    async def __anext__(self) -> ChangeEvent:
        feed = self._feed
        try:
            while (event := feed.next_ready()) is None:
                try:
                    body = await self._poll(feed.cursor, feed.wait)
                except (ProxyError, httpx.TransportError) as error:
                    await self._sleep(feed.failed(error))
                else:
                    feed.answered(body)
        except _Stop:
            raise StopAsyncIteration from None
        return event

    async def aclose(self) -> None:
        """End the stream: the next step raises StopAsyncIteration."""
        self._feed.closed = True

    async def __aenter__(self) -> AsyncChangeStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
