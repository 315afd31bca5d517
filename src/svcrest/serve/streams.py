"""Sending a streamed answer (:class:`~svcrest.http.exchange.HttpStream`) over ASGI (and,
through :func:`pump_stream`, over RSGI), and ending the streams when the server stops.

The rule: the head goes at once; each chunk goes as an ``http.response.body`` message with
``more_body`` as soon as the stream yields it (the server flushes it); the stream ends when
its chunks end, when the client leaves (``http.disconnect``), or when the site's
:class:`~svcrest.http.streams.StreamSlots` close (the server is stopping), whichever comes
first, and its chunks are closed either way, so whatever the stream holds (a slot of
``--max-streams``, a wait for changes) is given back at once.

A stopping server: uvicorn and granian both wait for the answers in flight (up to the
graceful time-out, 30 s by default) before they send the lifespan's shutdown, and a change
feed's stream never ends by itself. So at the lifespan's startup the site's slots are
closed by the process's SIGTERM and SIGINT first (:func:`close_on_signals`: the server's own
handler still runs after), and by the lifespan's shutdown: each stream then finishes its
body at once, a Server-Sent Events one after a last comment, and its client reconnects
(with ``Last-Event-ID``) to a worker still serving.

Granian's WSGI worker has no lifespan, and sets its own SIGTERM and SIGINT handlers after it
built the site (replacing any set while building it), so a long-poll waiting there would hold
the stopping worker until its wait ends, and a client polling on a kept-alive connection
would keep it serving. There the factory calls :func:`close_on_signal_wakeup` instead (when
the launcher asks, :data:`ENV_SIGNAL_WAKEUP`): CPython writes each caught signal's number to
the process's wake-up descriptor (``signal.set_wakeup_fd``) whatever handler runs, and a
thread reading it closes the slots; the handlers are left as the server sets them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, MutableMapping
from types import FrameType
from typing import Any, Final

from svcrest.http.exchange import HttpStream
from svcrest.http.streams import SSE_TYPE, StreamSlots

__all__ = [
    "ENV_SIGNAL_WAKEUP",
    "STOPPING_COMMENT",
    "close_on_signal_wakeup",
    "close_on_signals",
    "pump_stream",
    "send_stream",
]

_Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
_Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

#: The last Server-Sent Events line of a stream the stopping server ends (a comment: an
#: ``EventSource`` ignores it, and reconnects when the body ends).
STOPPING_COMMENT: Final = b": the server is stopping; reconnect\n\n"
#: The signals after which a server stops gracefully.
_SIGNALS: Final = (signal.SIGTERM, signal.SIGINT)
#: ``1`` in the workers whose WSGI factory ends the streams through the signals' wake-up
#: descriptor (:func:`close_on_signal_wakeup`: granian's WSGI interface).
ENV_SIGNAL_WAKEUP: Final = "SVCREST_SIGNAL_WAKEUP"


async def send_stream(
    answer: HttpStream, receive: _Receive, send: _Send, slots: StreamSlots | None = None
) -> None:
    """Send ``answer`` until its chunks end, the client leaves, or ``slots`` close."""
    chunks = answer.chunks
    try:
        start = {"type": "http.response.start", "status": answer.status}
        await send({**start, "headers": answer.wire_headers()})

        def send_chunk(chunk: bytes) -> Awaitable[None]:
            # PERF: the server's send itself, not a coroutine around it: one frame less a
            # stream's chunk a wake (with the kept chunk taken as it is, change_feed.py:
            # 72,813 / 73,731 -> 69,142 / 71,519 instructions a stream a wake;
            # bench/stream_steps.py, 100 streams).
            return send({"type": "http.response.body", "body": chunk, "more_body": True})

        tail = await pump_stream(answer, send_chunk, _left(receive), slots)
        if tail is not None:
            with contextlib.suppress(Exception):  # the client may have left meanwhile
                if tail:
                    await send_chunk(tail)
                await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        await chunks.aclose()


async def pump_stream(
    answer: HttpStream,
    send_chunk: Callable[[bytes], Awaitable[None]],
    left: Awaitable[Any],
    slots: StreamSlots | None = None,
) -> bytes | None:
    """Send each chunk of ``answer`` with ``send_chunk`` as it comes, until the chunks end,
    ``left`` finishes (the client left), or ``slots`` close, whichever comes first (the
    rule of every server interface). What the caller sends still, before it ends the body:
    None when nothing (the client left, or a chunk could not be sent), ``b""`` when only
    the body's end, :data:`STOPPING_COMMENT` when that line first (a Server-Sent Events
    stream the stopping server ends). The caller closes the chunks."""
    pump = asyncio.ensure_future(_pump(answer.chunks, send_chunk))
    gone = asyncio.ensure_future(left)
    stopped = slots.stopped() if slots is not None else None
    try:
        waits: tuple[asyncio.Future[Any], ...] = (pump, gone)
        await asyncio.wait(
            waits if stopped is None else (*waits, stopped),
            return_when=asyncio.FIRST_COMPLETED,
        )
    finally:
        for task in (pump, gone):
            task.cancel()
        await asyncio.gather(pump, gone, return_exceptions=True)
    if gone.done() and not gone.cancelled():
        return None  # the client left: nothing more to send
    ended = pump.done() and not pump.cancelled() and pump.exception() is None
    if ended:
        return b""
    if stopped is not None and stopped.done():
        return STOPPING_COMMENT if _is_sse(answer) else b""
    return None


def _is_sse(answer: HttpStream) -> bool:
    return any(
        name.lower() == "content-type" and value.startswith(SSE_TYPE)
        for name, value in answer.headers
    )


async def _pump(
    chunks: AsyncGenerator[bytes, None], send_chunk: Callable[[bytes], Awaitable[None]]
) -> None:
    async for chunk in chunks:
        await send_chunk(chunk)


async def _left(receive: _Receive) -> None:
    """Return when the client has left (the request's body, if any, is read and dropped)."""
    while True:
        message = await receive()
        if message.get("type") == "http.disconnect":
            return


class _CloseOnSignal:
    """A signal handler closing ``slots`` (on ``loop``), then doing what ``previous`` (the
    handler it replaced) did."""

    __slots__ = ("loop", "previous", "slots")

    def __init__(self, slots: StreamSlots, loop: asyncio.AbstractEventLoop, previous: Any) -> None:
        self.slots = slots
        self.loop = loop
        self.previous = previous

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        # A signal handler runs between two bytecodes of the main thread, maybe while it
        # holds the slots' lock: the closing runs on the loop, not here.
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing to end
            self.loop.call_soon_threadsafe(self.slots.close)
        previous = self.previous
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:  # the default action (end the process) as before
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)


def close_on_signals(slots: StreamSlots, loop: asyncio.AbstractEventLoop | None = None) -> bool:
    """Close ``slots`` when SIGTERM or SIGINT arrives, before the handler set now (a
    server's: uvicorn's ``Server.handle_exit``, or the handler of granian's worker loop,
    which still runs) does its part; from the main thread, on ``loop`` (else the running
    loop), the one serving the streams. Whether the handlers were set (not from another
    thread)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    if loop is None:
        loop = asyncio.get_running_loop()
    for signum in _SIGNALS:
        previous = signal.getsignal(signum)
        if isinstance(previous, _CloseOnSignal) and previous.slots is slots:
            previous.loop = loop  # set already (a second startup): the loop of now
            continue
        signal.signal(signum, _CloseOnSignal(slots, loop, previous))
    return True


def close_on_signal_wakeup(slots: StreamSlots) -> bool:
    """Close ``slots`` when SIGTERM or SIGINT arrives, from a thread reading the process's
    signal wake-up descriptor (``signal.set_wakeup_fd``, set here from the main thread): for
    a server that sets its own handlers after the site is built (granian's WSGI worker),
    whose handlers are left alone and still run. A wake-up descriptor set before keeps
    receiving every signal number. Whether the descriptor was set (not from another
    thread)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    read, write = os.pipe()
    os.set_blocking(write, False)  # set_wakeup_fd wants a non-blocking descriptor
    try:
        previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    except (ValueError, OSError):
        os.close(read)
        os.close(write)
        return False
    watch = threading.Thread(
        target=_watch_wakeups,
        args=(read, previous, slots),
        name="svcrest-signal-wakeup",
        daemon=True,  # one a process; it ends with it
    )
    watch.start()
    return True


def _watch_wakeups(read: int, previous: int, slots: StreamSlots) -> None:
    """Read the wake-up descriptor until it closes: ``slots`` close at the first SIGTERM or
    SIGINT; every signal number read is passed on to ``previous`` (when one was set)."""
    stopping = {int(signum) for signum in _SIGNALS}
    while True:
        try:
            numbers = os.read(read, 512)  # PEP 475: retried after a signal
        except OSError:
            return
        if not numbers:
            return
        if previous >= 0:
            with contextlib.suppress(OSError):  # full or closed: as CPython, drop it
                os.write(previous, numbers)
        if not stopping.isdisjoint(numbers):
            slots.close()
