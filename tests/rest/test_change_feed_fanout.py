"""A commit's fan-out to many streams of a collection's change feed in one process: the log
read once a wake, ahead of the wake on the waker's thread, so that each stream is woken
once (not once to join a read under way and again when it ends); each stream's viewer key
worked out once, and again only when what it depends on beyond the request moves (a hook
added); and through it all each subscriber gets exactly its own view of a change (the bytes
its GET would show), and nothing of an item its read permission refuses now. On both store
engines, through the App's ASGI interface."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Hashable, Mapping
from typing import Any

import orjson
import pytest

from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.http.user import User
from svcrest.store import change_feed
from svcrest.store.change_feed import ChangeFeed
from svcrest.store.change_waker import WAKE_SLICE, ChangeWaker, change_waker
from svcrest.store.store_collection import StoreCollection
from tests.rest.conftest import Clock, cursor
from tests.rest.feed_sites import (
    Counted,
    get_body,
    next_frame,
    noted_site,
    opened,
    run,
    until_waiting,
)
from tests.rest.test_change_streams import SSE, Stream
from tests.rest.test_store_collection import TASKS, Site, view


async def listed(site: Site, headers: Mapping[str, str], query: str = "") -> bytes:
    """The first item of the collection's GET, as the App answers it over ASGI (the feed's
    ``data`` is an item as the collection lists it: with its ``_links``)."""
    (item,) = orjson.loads(await get_body(site.app, TASKS, headers, query))
    return orjson.dumps(item)


def test_one_write_each_subscriber_gets_exactly_its_own_view_and_a_refused_one_nothing(
    store_location: str | None, clock: Clock
) -> None:
    allowed = {0, 1, 2, 3, 4}  # who may read the items: sue (4) is struck off before the write

    def read(user: User, item: Mapping[str, Any] | None) -> bool:
        return item is None or user.id in allowed

    site = noted_site(store_location, clock, read)
    try:

        async def check() -> None:
            asked: list[tuple[Mapping[str, str], str]] = [
                ({**SSE, **site.headers["ed"]}, ""),
                ({**SSE, **site.headers["al"]}, "_fields=id,title,_links"),
                ({**SSE, **site.headers["al"]}, ""),
                (SSE, ""),
                ({**SSE, **site.headers["sue"]}, ""),
                ({**SSE, **site.headers["al"]}, ""),
            ]
            streams = await opened(site, asked)
            allowed.discard(4)
            await asyncio.to_thread(site.seed, "plan")
            expected = []
            for headers, query in asked[:4]:
                plain = {name: value for name, value in headers.items() if name != "Accept"}
                data = await listed(site, plain, query)
                expected.append(
                    b"id: %s\nevent: created\ndata: %s\n\n" % (cursor(1).encode(), data)
                )
            assert expected[0].count(b'"notes":""') == 1  # the editor's own view
            assert b"notes" not in b"".join(expected[1:])
            assert b'"priority"' not in expected[1]
            assert len(set(expected)) == 3  # al's and the anonymous GET's are the same
            refused = streams.pop(4)
            for one, frame in zip(streams, [*expected, expected[2]], strict=True):
                got = await next_frame(one)
                assert got == frame, (got, frame)
                assert b"event:" not in one.buffer
            await asyncio.sleep(0.4)  # a keep-alive comes every 0.3 s: nothing else
            assert b"event:" not in refused.buffer
            while refused.buffer:
                assert await refused.until(b"\n\n") == b": keep-alive\n\n"
            streams.append(refused)
            for one in streams:
                await one.leave()

        site.tasks.feed.heartbeat = 0.3
        run(check())
    finally:
        site.app.store.close()


def test_a_wake_reads_the_log_ahead_and_wakes_each_stream_once(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.seed("a")
    reads = Counted(monkeypatch)

    async def check() -> None:
        streams = await opened(site, [(SSE, "")] * 50)
        tail = site.tasks.feed.tail(site.app.store)
        ahead, joined, before = tail.ahead, tail.joined, reads.calls
        await asyncio.to_thread(site.tasks.table.update, 1, {"done": True})
        for one in streams:
            assert await one.events(1) == [
                {"id": cursor(2), "event": "updated", "data": view(1, "a", done=True)}
            ]
        await until_waiting(site, 50)
        assert reads.calls - before == 1
        assert tail.ahead - ahead == 1  # read on the waker's thread, before the wake
        assert tail.joined - joined == 0  # no stream woken to wait for a read under way
        for one in streams:
            await one.leave()

    run(check())


def test_a_streams_viewer_key_is_worked_out_once_until_the_hooks_change(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.seed("a")
    keys: list[Hashable | None] = []
    view_key = StoreCollection._view_key

    def counted(collection: StoreCollection, request: Request) -> Hashable | None:
        key = view_key(collection, request)
        keys.append(key)
        return key

    monkeypatch.setattr(StoreCollection, "_view_key", counted)

    async def check() -> None:
        waker = change_waker(site.app.store)
        waker.coalesce = 0  # each write its own wake
        # Two anonymous subscribers, one asking for the notes by a header the key does
        # not hold: one rendering for both, until a filter looks at the header.
        streams = await opened(site, [(SSE, ""), ({**SSE, "X-Notes": "yes"}, "")])
        for priority in (1, 2, 3):
            await asyncio.to_thread(site.tasks.table.update, 1, {"priority": priority})
            for one in streams:
                (event,) = await one.events(1)
                assert event["data"] == view(1, "a", priority=priority)
        assert len(keys) == 2  # once a stream, not once a wake

        def notes_by_header(response: Response, item: Any, request: Request) -> Response:
            if request.get_header("X-Notes"):
                response.data["notes"] = item["notes"]
            return response

        site.app.hooks.add_filter("rest_prepare_task", notes_by_header)
        await asyncio.to_thread(site.tasks.table.update, 1, {"notes": "by header"})
        (plain,) = await streams[0].events(1)
        (noted,) = await streams[1].events(1)
        assert plain["data"] == view(1, "a", priority=3)
        assert noted["data"] == {**view(1, "a", priority=3), "notes": "by header"}
        assert keys[2:] == [None, None]  # worked out again: the filter shares nothing
        for one in streams:
            await one.leave()

    run(check())


def test_the_window_finds_a_page_by_position(site: Site) -> None:
    site.seed("a", "b", "c")

    async def check() -> None:
        streams = await opened(site, [(SSE, f"since={cursor(1)}")])
        got = await streams[0].events(2)
        assert [event["id"] for event in got] == [cursor(2), cursor(3)]
        window = site.tasks.feed.tail(site.app.store).window
        assert window is not None
        assert window.seqs == tuple(change.seq for change in window.changes)
        assert [change.seq for change in window.page(1, 10)[0]] == [2, 3]
        assert [change.seq for change in window.page(2, 1)[0]] == [3]
        assert window.page(3, 10)[0] == ()
        await streams[0].leave()

    run(check())


async def waiting_past_a_first_write(site: Site, count: int) -> tuple[list[Stream], ChangeWaker]:
    """``count`` SSE streams of the tasks' feed, each past the event of a first write (task 1's
    priority 1, ``cursor(2)``) and waiting again, and the store's waker, made to gather the
    next writes into one wake."""
    streams = await opened(site, [(SSE, "")] * count)
    waker = change_waker(site.app.store)
    waker.coalesce = 1.0  # the first write wakes at once, the next ones together
    await asyncio.to_thread(site.tasks.table.update, 1, {"priority": 1})
    for one in streams:
        assert [event["id"] for event in await one.events(1)] == [cursor(2)]
    await until_waiting(site, count)
    return streams, waker


def reads_alone(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The positions from which a stream reads the log by itself (``ChangeFeed._read``,
    behind the window), recorded from now on."""
    alone: list[int] = []
    read_alone = ChangeFeed._read

    def counted(feed: ChangeFeed, store: Any, seq: int, *rest: Any) -> Any:
        alone.append(seq)
        return read_alone(feed, store, seq, *rest)

    monkeypatch.setattr(ChangeFeed, "_read", counted)
    return alone


def test_a_stream_whose_loop_is_late_is_not_left_behind_the_window(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The waker's thread reads ahead of each wake whatever the readers' loop does; while
    # the loop is busy elsewhere (here: blocked), wake after wake moves the window on. A
    # stream that has not sent a change yet keeps it in the window (up to four windows'
    # worth): it sends it from the shared read, it does not read the log, and every item,
    # by itself.
    monkeypatch.setattr(change_feed, "WINDOW", 4)
    monkeypatch.setattr(change_feed, "_TAIL_READ", 2)
    alone = reads_alone(monkeypatch)
    site.seed("a")
    writes = 10

    async def check() -> None:
        streams = await opened(site, [(SSE, "")] * 3)
        waker = change_waker(site.app.store)
        waker.coalesce = 0  # each write its own wake, read ahead on the waker's thread
        tail = site.tasks.feed.tail(site.app.store)
        ahead = tail.ahead

        def write() -> None:
            for priority in range(1, writes + 1):
                site.tasks.table.update(1, {"priority": priority})
                time.sleep(waker.interval * 2.5)  # its own look

        writer = threading.Thread(target=write)
        writer.start()
        writer.join()  # (the loop blocked meanwhile)
        deadline = time.monotonic() + 5
        while tail.ahead - ahead < 3:  # the window moved on, wake after wake
            assert time.monotonic() < deadline
            time.sleep(0.01)
        expected = [cursor(seq) for seq in range(2, writes + 2)]
        for one in streams:
            assert [event["id"] for event in await one.events(writes)] == expected
        assert alone == []
        window = tail.window
        assert window is not None and len(window.changes) <= 4 * 4
        for one in streams:
            await one.leave()

    run(check())


def test_a_wake_of_more_changes_than_the_window_leaves_no_stream_behind_it(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A wake carrying more changes than the window holds, to more streams than a slice: the
    # first streams woken read on (a read of a few changes at a time), the last ones still
    # wait for their slice. Every stream gets every change once, in order, from the shared
    # reads: none falls behind the window to read the log (and every item) by itself.
    monkeypatch.setattr(change_feed, "WINDOW", 8)
    monkeypatch.setattr(change_feed, "_TAIL_READ", 4)
    alone = reads_alone(monkeypatch)
    site.seed("a")
    count, writes = WAKE_SLICE * 3 + 5, 30

    async def check() -> None:
        streams, waker = await waiting_past_a_first_write(site, count)
        wakes = waker.wakes

        def write() -> None:
            for priority in range(2, writes + 2):
                site.tasks.table.update(1, {"priority": priority})

        await asyncio.to_thread(write)
        expected = [cursor(seq) for seq in range(3, writes + 3)]
        for one in streams:
            got = await one.events(writes)
            assert [event["id"] for event in got] == expected
            # (each event's data: the item as it is when read, after the last write)
            assert all(event["data"] == view(1, "a", priority=writes + 1) for event in got)
        assert waker.wakes - wakes == 1  # one wake carried them all
        assert alone == []
        window = site.tasks.feed.tail(site.app.store).window
        assert window is not None and len(window.changes) <= 4 * 8
        for one in streams:
            await one.leave()

    run(check())


def test_a_wake_of_more_changes_than_a_read_brings_is_read_ahead_whole_and_sent_in_one_chunk(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A wake carrying more changes than one query of the log brings in (reads of 3 here, of
    # 500 on a server, whose wakes carry ~600-900 changes): the waker's thread reads them all
    # before the wake, so that each stream is woken once and sends every change in one
    # chunk, not a first page and, after a read of the next page on the pool that every
    # stream waits for, a second one.
    monkeypatch.setattr(change_feed, "_TAIL_READ", 3)
    site.seed("a")
    reads = Counted(monkeypatch)
    count, writes = 5, 10

    async def check() -> None:
        streams, waker = await waiting_past_a_first_write(site, count)
        tail = site.tasks.feed.tail(site.app.store)
        wakes, before = waker.wakes, reads.calls
        ahead, joined, begun = tail.ahead, tail.joined, tail.begun

        def write() -> None:
            for priority in range(2, writes + 2):
                site.tasks.table.update(1, {"priority": priority})

        await asyncio.to_thread(write)
        for one in streams:
            chunk = await one.body()
            assert chunk.count(b"\nevent: updated\n") == writes
            one.buffer = chunk
            got = await one.events(writes)
            assert [event["id"] for event in got] == [cursor(seq) for seq in range(3, 13)]
        await until_waiting(site, count)
        assert waker.wakes - wakes == 1
        assert tail.begun - begun == 1 and tail.ahead - ahead == 1  # one read, ahead
        assert tail.joined - joined == 0  # no stream waited for a read after its wake
        assert reads.calls - before == 4  # its queries: 3 + 3 + 3 + 1 changes
        for one in streams:
            await one.leave()

    run(check())


class Pieces:
    """``ChangeFeed._frames`` counted: the size of each piece rendered and its CPU."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sizes: list[int] = []
        self.took: list[float] = []
        self._frames = ChangeFeed._frames
        pieces = self

        def counted(feed: ChangeFeed, page: Any, *rest: Any) -> Any:
            pieces.sizes.append(len(page))
            began = time.thread_time()
            try:
                return pieces._frames(feed, page, *rest)
            finally:
                pieces.took.append(time.thread_time() - began)

        monkeypatch.setattr(ChangeFeed, "_frames", counted)


def test_a_wake_of_many_changes_is_rendered_in_pieces_the_loop_let_go_between(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A wake carrying 20 changes to three streams of one viewer: the first stream renders
    # them 4 at a time, letting the loop go after each piece (here after every one); the
    # loop runs other work between the pieces; the other two streams wait for the whole
    # chunk, not render it again; all three send the same bytes, every change once, in
    # order, in one chunk.
    monkeypatch.setattr(change_feed, "_RENDER_PIECE", 4)
    monkeypatch.setattr(change_feed, "_RENDER_TIME", 0.0)
    pieces = Pieces(monkeypatch)
    site.seed("a")
    writes = 20

    async def check() -> None:
        streams, waker = await waiting_past_a_first_write(site, 3)
        tail = site.tasks.feed.tail(site.app.store)
        seen: list[int] = []
        done = asyncio.Event()

        async def watch() -> None:  # once a turn of the loop: the views rendered so far
            while not done.is_set():
                window = tail.window
                seen.append(len(window.shared.views) if window is not None else 0)
                await asyncio.sleep(0)

        watching = asyncio.ensure_future(watch())
        del pieces.sizes[:], pieces.took[:]
        reported: list[float] = []
        report = waker.spent

        def spent(object_type: str, seconds: float) -> None:
            if sys._getframe(1).f_code.co_name == "_chunk_in_pieces":  # the render's own
                reported.append(seconds)
            report(object_type, seconds)

        monkeypatch.setattr(waker, "spent", spent)

        def write() -> None:
            for priority in range(2, writes + 2):
                site.tasks.table.update(1, {"priority": priority})

        await asyncio.to_thread(write)
        expected = [cursor(seq) for seq in range(3, writes + 3)]
        sent = []
        for one in streams:
            block = b""
            for _ in range(writes):
                block += await next_frame(one)
            sent.append(block)
            got = [line for line in block.split(b"\n") if line.startswith(b"id: ")]
            assert got == [b"id: " + seq.encode() for seq in expected]
        done.set()
        await watching
        assert sent[0] == sent[1] == sent[2]
        assert pieces.sizes == [4] * 5  # rendered once, for all three, in five pieces
        assert any(0 < count < writes for count in seen)  # the loop ran between pieces
        # The pieces after the first let-go ran outside the step its slice counted: their
        # CPU is reported to the waker as the wake's work, at once.
        later = sum(pieces.took[1:])
        assert len(reported) == 1 and reported[0] >= later, (reported, pieces.took)
        for one in streams:
            await one.leave()

    run(check())
