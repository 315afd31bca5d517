"""Streamed answers' helpers: which stream ``Accept`` asks for, the bound on streams, and an
``HttpStream``'s header lines (no ``Content-Length``)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncGenerator

import pytest

from svcrest.http.exchange import HttpStream
from svcrest.http.streams import StreamSlots, can_stream, streams_busy, wanted_stream


@pytest.mark.parametrize(
    ("accept", "wanted"),
    [
        (None, None),
        ("", None),
        ("*/*", None),
        ("application/json", None),
        ("text/event-stream", "text/event-stream"),
        ("application/jsonl", "application/jsonl"),
        ("Text/Event-Stream", "text/event-stream"),
        ("application/json, text/event-stream", None),  # a tie: the plain answer
        ("application/json;q=0.5, text/event-stream", "text/event-stream"),
        ("text/event-stream;q=0.2, application/jsonl;q=0.9", "application/jsonl"),
        ("text/event-stream;q=0", None),
        ("text/html, */*;q=0.1, application/jsonl;q=0.5", "application/jsonl"),
    ],
)
def test_wanted_stream(accept: str | None, wanted: str | None) -> None:
    assert wanted_stream(accept) == wanted


def test_stream_slots_bound_and_give_back() -> None:
    slots = StreamSlots(2)
    assert (slots.take(), slots.take(), slots.take()) == (True, True, False)
    assert slots.open == 2
    slots.give_back()
    assert slots.take() is True
    slots.limit = 5
    assert slots.take() is True
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="positive"):
            slots.limit = bad  # type: ignore[assignment]


def test_streams_busy_is_a_503_with_retry_after() -> None:
    error = streams_busy()
    assert (error.code, error.status, error.headers) == (
        "svc_streams_busy",
        503,
        (("Retry-After", "5"),),
    )


def test_only_a_server_loop_streams() -> None:
    assert can_stream() is False  # plain code: no loop

    async def on_a_loop() -> bool:
        return can_stream()

    assert asyncio.run(on_a_loop()) is True


def test_an_http_stream_sends_no_content_length() -> None:
    async def chunks() -> AsyncGenerator[bytes, None]:
        yield b"x"

    stream = HttpStream(200, [("Content-Type", "text/event-stream")], (), chunks())
    stream.request_id = "abc"
    assert stream.wire_headers() == [
        (b"Content-Type", b"text/event-stream"),
        (b"X-Request-Id", b"abc"),
    ]
    asyncio.run(stream.chunks.aclose())


def test_closing_wakes_the_streams_of_every_loop_and_reopening_serves_again() -> None:
    slots = StreamSlots(2)
    assert slots.closing is False

    async def wait_for_the_end() -> float:
        began = time.monotonic()
        await slots.stopped()
        return time.monotonic() - began

    elsewhere: list[float] = []
    other_loop = threading.Thread(target=lambda: elsewhere.append(asyncio.run(wait_for_the_end())))
    other_loop.start()

    async def here() -> float:
        waiting = asyncio.ensure_future(wait_for_the_end())
        await asyncio.sleep(0.2)
        assert not waiting.done()
        await asyncio.to_thread(slots.close)  # from any thread (a signal's, the lifespan's)
        return await asyncio.wait_for(waiting, 2)

    assert 0.2 <= asyncio.run(here()) < 1.0
    other_loop.join(2)
    assert len(elsewhere) == 1 and elsewhere[0] < 2.0
    assert slots.closing is True

    async def begun_now() -> bool:
        return slots.stopped().done()

    assert asyncio.run(begun_now()) is True  # a stream begun while stopping ends at once
    slots.reopen()
    assert (slots.closing, asyncio.run(begun_now())) == (False, False)
    assert slots.take() is True  # the bound is untouched
