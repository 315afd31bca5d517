"""Sending a streamed answer (:class:`~svcrest.http.exchange.HttpStream`) over ASGI.

The rule: the head goes at once; each chunk goes as an ``http.response.body`` message with
``more_body`` as soon as the stream yields it (the server flushes it); the stream ends when
its chunks end, or when the client leaves (``http.disconnect``), whichever comes first, and
its chunks are closed either way, so whatever the stream holds (a slot of ``--max-streams``,
a wait for changes) is given back at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, MutableMapping
from typing import Any

from svcrest.http.exchange import HttpStream

__all__ = ["send_stream"]

_Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
_Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


async def send_stream(answer: HttpStream, receive: _Receive, send: _Send) -> None:
    """Send ``answer`` until its chunks end or the client leaves."""
    chunks = answer.chunks
    try:
        start = {"type": "http.response.start", "status": answer.status}
        await send({**start, "headers": answer.wire_headers()})
        pump = asyncio.ensure_future(_pump(chunks, send))
        gone = asyncio.ensure_future(_left(receive))
        try:
            await asyncio.wait((pump, gone), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (pump, gone):
                task.cancel()
            await asyncio.gather(pump, gone, return_exceptions=True)
        if pump.done() and not pump.cancelled() and pump.exception() is None:
            with contextlib.suppress(Exception):  # the client may have left meanwhile
                await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        await chunks.aclose()


async def _pump(chunks: AsyncGenerator[bytes, None], send: _Send) -> None:
    async for chunk in chunks:
        await send({"type": "http.response.body", "body": chunk, "more_body": True})


async def _left(receive: _Receive) -> None:
    """Return when the client has left (the request's body, if any, is read and dropped)."""
    while True:
        message = await receive()
        if message.get("type") == "http.disconnect":
            return
