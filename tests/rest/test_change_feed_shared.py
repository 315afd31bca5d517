"""What the streams and long-polls of a collection's change feed share in a process: one
read of the change log a wake however many wait, one read of each item changed, one
rendering per viewer (the same user and arguments), never one user's view shown to
another; a reader behind the feed's window of recent changes still gets every change, in
order, once; a stream sends the entries it has ready in one chunk. On both store engines,
through the App's ASGI interface (tests/rest/test_change_streams.py drives it)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any, ClassVar, cast

import orjson
import pytest

from svcrest import App, RestController, StoreCollection
from svcrest.blocking import offload
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.http.user import User
from svcrest.store import change_feed
from svcrest.store.change_waker import LONGEST_HOLD, change_waker
from svcrest.store.changes import Change, changes_after
from tests.rest.conftest import T0, Clock, cursor
from tests.rest.feed_sites import Counted, get_body, noted_site, run, until_waiting
from tests.rest.test_change_streams import CHANGES, SSE, Stream, stream
from tests.rest.test_store_collection import Site, view


async def got(site: Site, headers: Mapping[str, str], task_id: int, query: str = "") -> Any:
    """A GET of task ``task_id`` with ``query`` as ``headers`` authenticate it: its JSON."""
    path = f"{CHANGES.rsplit('/', 1)[0]}/{task_id}"
    return orjson.loads(await get_body(site.app, path, headers, query))


def test_fifty_streams_one_commit_one_read_of_the_log_one_item_read_one_render(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.seed("a")
    reads = Counted(monkeypatch)
    gets: list[int] = []
    table_get = site.tasks.table.get

    def get(item_id: int) -> Any:
        gets.append(item_id)
        return table_get(item_id)

    monkeypatch.setattr(site.tasks.table, "get", get)
    renders: list[int] = []
    prepare = site.tasks.prepare_item_for_response

    def counted_prepare(item: Any, request: Request) -> Response:
        renders.append(item["id"])
        return prepare(item, request)

    monkeypatch.setattr(site.tasks, "prepare_item_for_response", counted_prepare)

    async def check() -> None:
        opened = [Stream(site.app, CHANGES, SSE, "") for _ in range(50)]
        for one in opened:
            await one.start()
            assert one.status == 200
            assert await one.until(b"\n\n") == b": keep-alive\n\n"
        await until_waiting(site, 50)
        before = reads.calls
        await asyncio.to_thread(site.tasks.table.update, 1, {"done": True})
        for one in opened:
            assert await one.events(1) == [
                {"id": cursor(2), "event": "updated", "data": view(1, "a", done=True)}
            ]
        await until_waiting(site, 50)
        assert reads.calls - before == 1
        assert gets == [1]
        assert renders == [1]
        for one in opened:
            await one.leave()

    run(check())


def test_a_stream_behind_the_window_gets_every_change_in_order_once(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a window of 5 changes, shared reads of 3, pages of 4: every path is taken
    monkeypatch.setattr(change_feed, "WINDOW", 5)
    monkeypatch.setattr(change_feed, "_TAIL_READ", 3)
    monkeypatch.setattr(change_feed, "_PAGE", 4)
    site.seed(*(f"t{n}" for n in range(1, 13)))

    async def check() -> None:
        async with stream(site.app, SSE) as ahead:  # keeps the window at the log's end
            await ahead.until(b"\n\n")
            await asyncio.to_thread(site.seed, "t13", "t14")
            assert [e["data"]["title"] for e in await ahead.events(2)] == ["t13", "t14"]
            async with stream(site.app, SSE, f"since={cursor(0)}") as behind:
                got = await behind.events(14)
                assert [event["id"] for event in got] == [cursor(n) for n in range(1, 15)]
                await asyncio.to_thread(site.seed, *(f"t{n}" for n in range(15, 23)))
                more = await behind.events(8)
                assert [event["data"]["title"] for event in more] == [
                    f"t{n}" for n in range(15, 23)
                ]
                assert [e["data"]["title"] for e in await ahead.events(8)] == [
                    f"t{n}" for n in range(15, 23)
                ]
                await asyncio.sleep(0.3)
                assert behind.buffer == b""  # nothing twice
                assert behind.messages.empty()

    run(check())


def test_long_polls_behind_the_window_get_every_change_in_order_once(
    site: Site, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    monkeypatch.setattr(change_feed, "WINDOW", 5)
    monkeypatch.setattr(change_feed, "_TAIL_READ", 3)
    monkeypatch.setattr(change_feed, "_PAGE", 4)
    site.seed(*(f"t{n}" for n in range(1, 12)))

    async def poll(since: str) -> Any:
        answer = Stream(site.app, CHANGES, {}, f"since={since}")
        await answer.start()
        assert answer.status == 200
        body = b""
        while not answer.ended:
            body += await answer.body()
        return orjson.loads(body)

    async def check() -> None:
        seen: list[str] = []
        since = cursor(0)
        for _ in range(10):
            answer = await poll(since)
            seen += [entry["data"]["title"] for entry in answer["changes"]]
            since = answer["cursor"]
            if not answer["changes"]:
                break
        assert seen == [f"t{n}" for n in range(1, 12)]

    run(check())


def test_a_stream_sends_the_entries_it_has_ready_in_one_chunk(site: Site) -> None:
    site.seed("a", "b", "c", "d", "e")

    async def check() -> None:
        async with stream(site.app, SSE, f"since={cursor(0)}") as events:
            assert await events.body() == b": keep-alive\n\n"
            chunk = await events.body()
            assert chunk.count(b"\nevent: created\n") == 5
            assert chunk.startswith(b"id: " + cursor(1).encode() + b"\n")

    run(check())


def test_two_users_each_get_their_own_view_and_only_items_they_may_read(
    store_location: str | None, clock: Clock
) -> None:
    def read(user: User, item: Mapping[str, Any] | None) -> bool:
        return item is None or not item["title"].startswith("secret") or user.can("edit_posts")

    site = noted_site(store_location, clock, read)
    try:

        async def check() -> None:
            ed = {**SSE, **site.headers["ed"]}  # an editor
            sue = {**SSE, **site.headers["sue"]}  # a subscriber
            async with (
                stream(site.app, ed) as eds,
                stream(site.app, sue) as sues,
                stream(site.app, SSE) as anonymous,
                stream(site.app, SSE, "_fields=id,title") as slim,
            ):
                for one in (eds, sues, anonymous, slim):
                    await one.until(b"\n\n")
                await until_waiting(site, 4)
                await asyncio.to_thread(site.seed, "secret plan", "open")
                secret = {**view(1, "secret plan"), "notes": ""}
                opened = {**view(2, "open", priority=1), "notes": ""}
                assert [event["data"] for event in await eds.events(2)] == [secret, opened]
                for one in (sues, anonymous):
                    assert [event["data"] for event in await one.events(1)] == [
                        view(2, "open", priority=1)
                    ]
                # As the GET with the same _fields: no _links, which it does not name.
                slim_get = await got(site, {}, 2, "_fields=id,title")
                assert slim_get == {"id": 2, "title": "open"}
                assert [event["data"] for event in await slim.events(1)] == [slim_get]
                await asyncio.to_thread(site.tasks.table.update, 1, {"notes": "ed's eyes only"})
                await asyncio.to_thread(site.tasks.table.update, 2, {"notes": "seen by ed"})
                assert [event["data"] for event in await eds.events(2)] == [
                    {**secret, "notes": "ed's eyes only"},
                    {**opened, "notes": "seen by ed"},
                ]
                for one in (sues, anonymous):
                    assert [event["data"] for event in await one.events(1)] == [
                        view(2, "open", priority=1)
                    ]
                await asyncio.sleep(0.3)
                for one in (sues, anonymous, slim):
                    assert b"ed's eyes" not in one.buffer

        run(check())
    finally:
        site.app.store.close()


def test_streams_of_one_viewer_share_a_rendering_others_do_not(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.seed("a")
    renders: list[tuple[int, str | None]] = []
    prepare = site.tasks.prepare_item_for_response

    def counted_prepare(item: Any, request: Request) -> Response:
        renders.append((request.user.id, request.get_param("_fields")))
        return prepare(item, request)

    monkeypatch.setattr(site.tasks, "prepare_item_for_response", counted_prepare)

    async def check() -> None:
        asked = [
            ({**SSE, **site.headers["al"]}, ""),
            ({**SSE, **site.headers["al"]}, ""),
            ({**SSE, **site.headers["ann"]}, ""),
            (SSE, ""),
            (SSE, ""),
            (SSE, "_fields=title"),
        ]
        opened = [Stream(site.app, CHANGES, headers, query) for headers, query in asked]
        for one in opened:
            await one.start()
            await one.until(b"\n\n")
        await until_waiting(site, len(opened))
        await asyncio.to_thread(site.tasks.table.update, 1, {"priority": 7})
        events = [await one.events(1) for one in opened]
        assert sorted(renders, key=repr) == sorted(
            [(2, None), (3, None), (0, None), (0, "title")], key=repr
        )
        slim = await got(site, {}, 1, "_fields=title")  # as the GET: neither id nor _links
        assert slim == {"title": "a"}
        for (event,), (_, query) in zip(events, asked, strict=True):
            assert event["data"] == (slim if query else view(1, "a", priority=7))
        for one in opened:
            await one.leave()

    run(check())


class Notes(RestController):
    """Notes in a dict; an editor's GET shows who wrote one, anyone else's does not; notes
    whose text starts with "draft" are only an editor's to read."""

    namespace = "pad/v1"
    rest_base = "notes"
    changes = True
    schema: ClassVar[Mapping[str, Any]] = {
        "title": "note",
        "type": "object",
        "properties": {
            "id": {"type": "integer", "readonly": True, "context": ["view", "edit"]},
            "text": {"type": "string", "context": ["view", "edit"]},
            "by": {"type": "string", "context": ["view", "edit"]},
        },
    }

    def __init__(self) -> None:
        super().__init__()
        self.notes: dict[int, str] = {}
        self.asked = 0

    def add(self, text: str) -> None:
        note_id = len(self.notes) + 1
        self.notes[note_id] = text
        cast(App, self.app).changes.record("note", note_id, "created")

    def get_items_permissions_check(self, request: Request) -> bool:
        return True

    def get_item_permissions_check(self, request: Request) -> bool:
        text = self.notes.get(request["id"], "")
        return not text.startswith("draft") or request.user.can("edit_others_posts")

    def get_item(self, request: Request) -> Response | RestError:
        self.asked += 1
        text = self.notes.get(request["id"])
        if text is None:
            return RestError("rest_note_invalid_id", "Invalid note ID.", {"status": 404})
        data = {"id": request["id"], "text": text}
        if request.user.can("edit_others_posts"):
            data["by"] = "ed"
        return Response(data)


def test_a_controllers_feed_shows_each_user_their_own_view(
    store_location: str | None, clock: Clock
) -> None:
    site = Site(store_location, clock=clock)
    notes = site.app.register_controller(Notes())
    path = "/svc-json/pad/v1/notes/changes"
    try:

        async def check() -> None:
            ed = Stream(site.app, path, {**SSE, **site.headers["ed"]}, "")
            al = Stream(site.app, path, {**SSE, **site.headers["al"]}, "")
            al_too = Stream(site.app, path, {**SSE, **site.headers["al"]}, "")
            for one in (ed, al, al_too):
                await one.start()
                assert one.status == 200
                await one.until(b"\n\n")
            await until_waiting(site, 3)
            notes.asked = 0
            await asyncio.to_thread(notes.add, "draft")
            await asyncio.to_thread(notes.add, "hello")
            assert [event["data"] for event in await ed.events(2)] == [
                {"id": 1, "text": "draft", "by": "ed"},
                {"id": 2, "text": "hello", "by": "ed"},
            ]
            for one in (al, al_too):
                assert [event["data"] for event in await one.events(1)] == [
                    {"id": 2, "text": "hello"}
                ]
            assert notes.asked == 3  # ed's two, and al's one for both of al's streams
            for one in (ed, al, al_too):
                await one.leave()

        run(check())
    finally:
        site.app.store.close()


def test_an_expired_cursor_still_answers_410_with_a_window_in_place(
    site: Site, clock: Clock
) -> None:
    site.seed("a", "b")
    site.app.hooks.add_filter("svc_changes_retention", lambda seconds: 10)

    async def check() -> None:
        async with stream(site.app, SSE, f"since={cursor(0)}") as events:
            assert len(await events.events(2)) == 2
            clock.now = T0 + 11
            gone = Stream(site.app, CHANGES, SSE, f"since={cursor(1)}")
            await gone.start()
            assert gone.status == 410
            assert orjson.loads(await gone.body())["code"] == "rest_changes_expired"

    run(check())


def test_a_reader_that_leaves_takes_no_shared_read_with_it(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first reader to ask starts the read; it leaves (its task cancelled) while the read
    # waits for a thread of the pool, and a second reader waiting for it leaves too: the
    # read still happens, and the readers that stay get its window.
    site.seed("a", "b")
    real_offload = offload

    def queued(function: Any) -> Any:
        run = real_offload(function)

        async def later(*args: Any) -> Any:
            await asyncio.sleep(0.2)  # waiting for a thread: cancellable before it runs
            return await run(*args)

        return later

    monkeypatch.setattr(change_feed, "offload", queued)
    feed, store = site.tasks.feed, site.app.store
    tail = feed.tail(store)
    render = site.tasks._feed_render

    async def check() -> None:
        def reader() -> asyncio.Task[Any]:
            return asyncio.ensure_future(tail.fresh(feed, store, 0, 0, render, tail.begun))

        first, second, third = reader(), reader(), reader()
        await asyncio.sleep(0.05)
        first.cancel()
        second.cancel()
        window = await asyncio.wait_for(third, 5)
        assert window is not None
        assert [change.seq for change in window.changes] == [1, 2]
        assert first.cancelled() and second.cancelled()
        assert tail.reads == 1

    run(check())


def test_a_fresh_window_is_handed_over_at_once_else_none(site: Site) -> None:
    # What a woken stream asks first, with no await: the window when a read begun after
    # its token (and after the read it came after) holds its changes, else None (it then
    # awaits ``fresh``, which reads the log or says it is behind).
    site.seed("a", "b")
    feed, store = site.tasks.feed, site.app.store
    tail = feed.tail(store)
    render = site.tasks._feed_render
    token = change_waker(store).token(feed.object_type)

    async def check() -> None:
        assert tail.current(0, token, render, tail.begun) is None  # no window yet
        window = await tail.fresh(feed, store, 0, token, render, tail.begun)
        assert window is not None and window.at_end
        assert (window.base, window.end, window.number) == (0, 2, 1)
        assert tail.current(0, token, render) is window
        assert tail.current(2, token, render, 0) is window  # at the end: nothing new
        assert tail.current(0, token + 1, render) is None  # a wake since its read began
        assert tail.current(0, token, render, 1) is None  # not a read begun after the first
        assert tail.current(-1, token, render) is None  # behind the window
        assert tail.render is render

    run(check())


def test_a_chunk_made_for_a_viewer_at_a_position_is_taken_as_it_is_else_left_to_make(
    site: Site,
) -> None:
    # What a stream asks before it makes a chunk, with no await: the chunk the streams of
    # its viewer key at its position share once one of them made it; else the page to
    # make it of (and nothing to make past the window's end).
    site.seed("a", "b")
    feed, store = site.tasks.feed, site.app.store
    tail = feed.tail(store)
    render = site.tasks._feed_render
    frame = change_feed._sse_frame
    token = change_waker(store).token(feed.object_type)

    async def check() -> None:
        window = await tail.fresh(feed, store, 0, token, render, tail.begun)
        assert window is not None
        unmade = feed._kept_chunk(window, 0, render, frame, "viewer")
        assert isinstance(unmade, change_feed._Unmade)
        assert ([change.seq for change in unmade.page], unmade.more) == ([1, 2], False)
        assert unmade.whole is not None and unmade.shared is window.shared
        window.shared.keep_chunk(unmade.whole, b"made once")
        assert feed._kept_chunk(window, 0, render, frame, "viewer") == (b"made once", 2, False)
        other = feed._kept_chunk(window, 0, render, frame, "another viewer")
        assert isinstance(other, change_feed._Unmade)
        later = feed._kept_chunk(window, 1, render, frame, "viewer")  # another position
        assert isinstance(later, change_feed._Unmade)
        assert [change.seq for change in later.page] == [2]
        unkeyed = feed._kept_chunk(window, 0, render, frame, None)
        assert isinstance(unkeyed, change_feed._Unmade) and unkeyed.whole is None
        assert feed._kept_chunk(window, 2, render, frame, "viewer") == (b"", 2, False)

    run(check())


def test_a_kept_chunk_is_taken_by_one_look_up_while_its_read_time_holds(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The streams of one viewer at one position after the first to find the chunk kept
    # take it from the window as it was found (its page, time and key not worked out
    # again); not once the read's time no longer holds for the cursors (the feed's clock
    # past _READ_TIME_KEPT): then the page is made anew, at the time of now.
    site.seed("a", "b")
    feed, store = site.tasks.feed, site.app.store
    tail = feed.tail(store)
    render = site.tasks._feed_render
    frame = change_feed._sse_frame
    token = change_waker(store).token(feed.object_type)
    pages: list[int] = []
    page = change_feed._Window.page

    def counted_page(window: Any, seq: int, limit: int) -> Any:
        pages.append(seq)
        return page(window, seq, limit)

    monkeypatch.setattr(change_feed._Window, "page", counted_page)

    async def check() -> None:
        window = await tail.fresh(feed, store, 0, token, render, tail.begun)
        assert window is not None
        now = window.shared.read_at
        feed._clock = lambda: now
        unmade = feed._kept_chunk(window, 0, render, frame, "viewer")
        assert isinstance(unmade, change_feed._Unmade) and unmade.whole is not None
        window.shared.keep_chunk(unmade.whole, b"made once")
        assert window.ready == {}  # made, not found kept: nothing taken yet
        assert feed._kept_chunk(window, 0, render, frame, "viewer") == (b"made once", 2, False)
        assert window.ready == {(0, "viewer", frame, render): (b"made once", 2, False, now)}
        assert pages == [0, 0]
        for _ in range(3):  # the next streams of the viewer: one look-up each
            assert feed._kept_chunk(window, 0, render, frame, "viewer") == (b"made once", 2, False)
        assert pages == [0, 0]
        other = feed._kept_chunk(window, 0, render, frame, "another viewer")
        assert isinstance(other, change_feed._Unmade)
        assert pages == [0, 0, 0]
        unkeyed = feed._kept_chunk(window, 0, render, frame, None)
        assert isinstance(unkeyed, change_feed._Unmade) and unkeyed.whole is None
        feed._clock = lambda: now + change_feed._READ_TIME_KEPT
        late = feed._kept_chunk(window, 0, render, frame, "viewer")
        assert isinstance(late, change_feed._Unmade) and late.whole is None
        assert late.when == now + change_feed._READ_TIME_KEPT
        assert pages == [0, 0, 0, 0, 0]

    run(check())


class Memos(StoreCollection):
    """Items shown with the language the request asks for: a rendering of its own."""

    def prepare_item_for_response(self, item: Any, request: Request) -> Response:
        response = super().prepare_item_for_response(item, request)
        response.data["lang"] = request.get_header("Accept-Language") or ""
        return response


def test_a_collection_that_prepares_items_its_own_way_shares_no_rendering(
    store_location: str | None, clock: Clock
) -> None:
    site = Site(store_location, clock=clock)
    schema = {"title": "memo", "type": "object", "properties": {"title": {"type": "string"}}}
    memos = site.app.register_controller(Memos("todo/v1", "memos", schema))
    path = "/svc-json/todo/v1/memos/changes"
    try:

        async def check() -> None:
            opened = [
                Stream(site.app, path, {**SSE, "Accept-Language": lang}, "")
                for lang in ("fr", "de")
            ]
            for one in opened:
                await one.start()
                await one.until(b"\n\n")
            await until_waiting(site, 2)
            await asyncio.to_thread(memos.table.insert, {"title": "hi"})
            for one, lang in zip(opened, ("fr", "de"), strict=True):
                (event,) = await one.events(1)
                assert (event["data"]["title"], event["data"]["lang"]) == ("hi", lang)
            for one in opened:
                await one.leave()

        run(check())
    finally:
        site.app.store.close()


async def chunks_until(one: Stream, count: int, timeout: float = 20.0) -> list[bytes]:
    """The body messages of ``one`` until they hold ``count`` events."""
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    while sum(chunk.count(b"\nevent: ") for chunk in got) < count:
        got.append(await one.body(max(deadline - time.monotonic(), 0.01)))
    return got


def test_commits_in_quick_succession_wake_streams_at_most_once_a_coalescing_interval(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    waker = change_waker(site.app.store)
    site.app.hooks.add_filter("svc_changes_coalesce", lambda seconds: 0.2)

    async def check() -> None:
        opened = [Stream(site.app, CHANGES, SSE, "") for _ in range(3)]
        for one in opened:
            await one.start()
            assert await one.until(b"\n\n") == b": keep-alive\n\n"
        await until_waiting(site, 3)
        wakes = waker.wakes
        began = time.monotonic()
        await asyncio.to_thread(site.seed, *(f"t{n}" for n in range(1, 201)))
        every = [await chunks_until(one, 200) for one in opened]
        took = time.monotonic() - began
        woken = waker.wakes - wakes
        # One wake at once, then at most one every 0.2 s: far fewer than the 200 commits.
        assert woken <= took / 0.2 + 2, (woken, took)
        for chunks in every:
            assert len(chunks) <= woken
            events = b"".join(chunks).split(b"\n\n")[:-1]
            assert [event.split(b"\n")[0] for event in events] == [
                b"id: " + cursor(n).encode() for n in range(1, 201)
            ]
        await asyncio.sleep(0.3)
        for one in opened:
            assert one.messages.empty()  # nothing twice
            await one.leave()

    run(check())


def test_the_items_of_one_read_of_the_log_are_read_in_one_query(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.app.hooks.add_filter("svc_changes_coalesce", lambda seconds: 0.2)
    reads = Counted(monkeypatch)
    table = site.tasks.table
    queries: list[list[int]] = []  # the ids each read of items asked for
    table_get, table_get_many = table.get, table.get_many

    def get(item_id: int) -> Any:
        queries.append([item_id])
        return table_get(item_id)

    def get_many(item_ids: Any) -> Any:
        ids = list(item_ids)
        found = table_get_many(ids)
        if len(set(ids)) > 1:  # (one id: a get, counted there)
            queries.append(ids)
        return found

    monkeypatch.setattr(table, "get", get)
    monkeypatch.setattr(table, "get_many", get_many)

    async def check() -> None:
        one = Stream(site.app, CHANGES, SSE, "")
        await one.start()
        assert await one.until(b"\n\n") == b": keep-alive\n\n"
        await until_waiting(site, 1)
        before = reads.calls
        await asyncio.to_thread(site.seed, *(f"t{n}" for n in range(1, 61)))
        chunks = await chunks_until(one, 60)
        events = b"".join(chunks).split(b"\n\n")[:-1]
        assert [event.split(b"\n")[0] for event in events] == [
            b"id: " + cursor(n).encode() for n in range(1, 61)
        ]
        # One query of items a read of the log, each item of the read asked for once.
        assert len(queries) <= reads.calls - before < 60
        assert sorted(n for ids in queries for n in ids) == list(range(1, 61))
        await one.leave()

    run(check())


def test_the_items_read_together_are_those_that_exist(site: Site) -> None:
    site.seed("a", "b", "c")
    site.tasks.table.delete(2)
    found = site.tasks.table.get_many([3, 1, 2, 1, 999, 0, -4])
    assert sorted(found) == [1, 3]
    assert found[1] == site.tasks.table.get(1)
    assert found[3]["title"] == "c"
    assert site.tasks.table.get_many([]) == {}
    assert site.tasks.table.get_many([2]) == {}
    assert site.tasks.table.get_many([3]) == {3: site.tasks.table.get(3)}


def test_a_commit_after_a_quiet_spell_goes_at_once_one_soon_after_a_wake_waits(
    site: Site,
) -> None:
    site.app.hooks.add_filter("svc_changes_coalesce", lambda seconds: 1.0)

    async def arrives(title: str, one: Stream) -> float:
        began = time.monotonic()
        await asyncio.to_thread(site.seed, title)
        (event,) = await one.events(1)
        assert event["data"]["title"] == title
        return time.monotonic() - began

    async def check() -> None:
        async with stream(site.app, SSE) as one:
            await one.until(b"\n\n")
            await until_waiting(site, 1)
            await arrives("warm", one)  # (the listener certainly listens from now on)
            await asyncio.sleep(1.2)
            assert await arrives("first", one) < 0.5  # no wake for a while: at once
            assert 0.6 < await arrives("second", one) < 3.0  # held back to the interval
            await asyncio.sleep(1.2)
            assert await arrives("third", one) < 0.5  # a quiet spell again: at once

    run(check())


def test_long_polls_are_woken_by_a_held_back_wake(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.app.hooks.add_filter("svc_changes_coalesce", lambda seconds: 0.5)

    async def check() -> None:
        async with stream(site.app, SSE) as keeps_waiting:
            await keeps_waiting.until(b"\n\n")
            await until_waiting(site, 1)
            await asyncio.to_thread(site.seed, "a")
            await keeps_waiting.events(1)
            poll = Stream(site.app, CHANGES, {}, f"since={cursor(1)}&wait=10")
            await until_waiting(site, 2)
            began = time.monotonic()
            await asyncio.to_thread(site.seed, "b")  # soon after a's wake: held back
            await poll.start()
            assert poll.status == 200
            answer = orjson.loads(await poll.body())
            assert [entry["data"]["title"] for entry in answer["changes"]] == ["b"]
            assert time.monotonic() - began < 3.0

    run(check())


def test_streams_of_one_viewer_share_the_read_permissions_answer(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.seed("a")
    asked: list[int] = []
    may_read = site.tasks._may_read

    def counted(user: User, item: Any) -> bool:
        asked.append(user.id)
        return may_read(user, item)

    monkeypatch.setattr(site.tasks, "_may_read", counted)

    async def check() -> None:
        heads = [{**SSE, **site.headers["al"]}] * 3 + [{**SSE, **site.headers["ann"]}] + [SSE] * 3
        opened = [Stream(site.app, CHANGES, headers, "") for headers in heads]
        for one in opened:
            await one.start()
            await one.until(b"\n\n")
        await until_waiting(site, len(opened))
        asked.clear()
        await asyncio.to_thread(site.tasks.table.update, 1, {"priority": 7})
        for one in opened:
            assert len(await one.events(1)) == 1
        assert sorted(asked) == [0, 2, 3]  # once per user, not once per stream
        for one in opened:
            await one.leave()

    run(check())


def test_streams_of_one_viewer_at_one_position_share_their_chunk(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    site.seed("a")
    made: list[int] = []
    frames = change_feed.ChangeFeed._frames

    def counted(self: change_feed.ChangeFeed, page: Any, *args: Any) -> tuple[bytes, bool]:
        made.append(len(page))
        return frames(self, page, *args)

    monkeypatch.setattr(change_feed.ChangeFeed, "_frames", counted)

    async def check() -> None:
        heads = [{**SSE, **site.headers["al"]}] * 2 + [SSE] * 3
        opened = [Stream(site.app, CHANGES, headers, "") for headers in heads]
        for one in opened:
            await one.start()
            await one.until(b"\n\n")
        await until_waiting(site, len(opened))
        made.clear()
        await asyncio.to_thread(site.tasks.table.update, 1, {"priority": 7})
        got = [await one.events(1) for one in opened]
        assert made == [1, 1]  # once for al's two streams, once for the three anonymous
        assert got[0] == got[1]
        assert got[2] == got[3] == got[4]
        for one in opened:
            await one.leave()

    run(check())


def test_the_shared_read_of_a_wake_counts_as_its_work(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    waker = change_waker(site.app.store)
    kind = site.tasks.table.object_type
    site.app.hooks.add_filter("svc_changes_coalesce", lambda seconds: 0.05)
    slow = [False]

    def slow_changes_after(*args: Any) -> list[Change]:
        if slow[0]:  # 20 ms of the reading thread's CPU
            until = time.thread_time() + 0.02
            while time.thread_time() < until:
                pass
        return changes_after(*args)

    monkeypatch.setattr(change_feed, "changes_after", slow_changes_after)

    async def check() -> None:
        one = Stream(site.app, CHANGES, SSE, "")
        await one.start()
        await one.until(b"\n\n")
        await until_waiting(site, 1)
        slow[0] = True
        await asyncio.to_thread(site.seed, "a")
        assert len(await one.events(1)) == 1
        await until_waiting(site, 1)
        # One stream's steps are microseconds; its read's 20 ms over the share: 0.4 s.
        assert 0.4 <= waker.hold(kind) < LONGEST_HOLD
        await one.leave()

    run(check())


def test_the_streams_work_after_a_wake_is_measured_and_holds_the_next_wakes_back(
    site: Site,
) -> None:
    waker = change_waker(site.app.store)
    kind = site.tasks.table.object_type
    site.app.hooks.add_filter("svc_changes_coalesce", lambda seconds: 0.05)

    async def arrives(title: str, opened: list[Stream]) -> float:
        began = time.monotonic()
        await asyncio.to_thread(site.seed, title)
        for one in opened:
            (event,) = await one.events(1)
            assert event["data"]["title"] == title
        return time.monotonic() - began

    async def check() -> None:
        opened = [Stream(site.app, CHANGES, SSE, "") for _ in range(20)]
        for one in opened:
            await one.start()
            await one.until(b"\n\n")
        await until_waiting(site, 20)
        await arrives("warm", opened)  # (the listener certainly listens from now on)
        # Any work at all now takes more than the loop's share: the longest hold.
        waker.share = 1e-9
        await asyncio.sleep(LONGEST_HOLD + 0.2)
        assert await arrives("first", opened) < 0.5  # a quiet spell: at once
        await until_waiting(site, 20)
        assert waker.hold(kind) == LONGEST_HOLD  # the streams' work after it was counted
        assert 0.6 < await arrives("second", opened) < 3.0  # held back for it
        for one in opened:
            await one.leave()

    run(check())
