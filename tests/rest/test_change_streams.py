"""Streams of a ``StoreCollection``'s changes (``GET /<ns>/<rest_base>/changes`` with ``Accept:
text/event-stream`` or ``application/jsonl``) through the App's ASGI interface, driven
message by message (an in-process HTTP client waits for a whole body), on both store
engines: the events and their framing, keep-alives, resuming from ``Last-Event-ID`` or
``since``, 410 and 400, read permission per item now, the bound on streams (503
``svc_streams_busy``), the slot given back when the client leaves, and the end of a stream
whose session ends. Real servers: tests/e2e/test_change_streams_servers.py."""

from __future__ import annotations

import asyncio
import base64
import io
import threading
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest

from svcrest import App
from svcrest.http.user import User
from svcrest.store.change_waker import change_waker
from tests.rest.conftest import T0, Clock, cursor
from tests.rest.test_store_collection import TASKS, Site, view

CHANGES = f"{TASKS}/changes"
SSE = {"Accept": "text/event-stream"}
JSONL = {"Accept": "application/jsonl"}


@pytest.fixture
def site(site: Site) -> Site:
    """The directory's site, its streams' keep-alives and session checks made quick."""
    site.tasks.feed.heartbeat = 0.3
    site.tasks.feed.session_check = 0.1
    return site


class Stream:
    """One request to the App's ASGI interface whose answer is read as it comes."""

    def __init__(self, app: App, path: str, headers: Mapping[str, str], query: str) -> None:
        self.messages: asyncio.Queue[Any] = asyncio.Queue()
        self.left = asyncio.Event()
        self._asked = False
        self.buffer = b""
        self.ended = False
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "query_string": query.encode(),
            "headers": [
                (b"host", b"127.0.0.1:8000"),
                *((name.lower().encode(), value.encode()) for name, value in headers.items()),
            ],
            "server": ("127.0.0.1", 8000),
            "client": ("127.0.0.1", 5000),
        }
        self.task = asyncio.ensure_future(app(scope, self._receive, self.messages.put))
        self.status = 0
        self.headers: dict[str, str] = {}

    async def _receive(self) -> dict[str, Any]:
        if not self._asked:
            self._asked = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await self.left.wait()
        return {"type": "http.disconnect"}

    async def start(self) -> None:
        message = await asyncio.wait_for(self.messages.get(), 10)
        assert message["type"] == "http.response.start"
        self.status = message["status"]
        self.headers = {}
        for name, value in message["headers"]:
            key = name.decode("latin-1").lower()
            self.headers[key] = (
                f"{self.headers[key]}, {value.decode('latin-1')}"
                if key in self.headers
                else value.decode("latin-1")
            )

    async def body(self, timeout: float = 5.0) -> bytes:
        """The next body message's bytes (b"" and ``ended`` at the end)."""
        message = await asyncio.wait_for(self.messages.get(), timeout)
        assert message["type"] == "http.response.body"
        if not message.get("more_body", False):
            self.ended = True
        return bytes(message.get("body", b""))

    async def until(self, marker: bytes, timeout: float = 5.0) -> bytes:
        """Read until the buffer holds ``marker``; what came up to and with it."""
        deadline = time.monotonic() + timeout
        while marker not in self.buffer:
            assert not self.ended, self.buffer
            self.buffer += await self.body(max(deadline - time.monotonic(), 0.01))
        head, _, rest = self.buffer.partition(marker)
        self.buffer = rest
        return head + marker

    async def events(self, count: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        """The next ``count`` Server-Sent Events (keep-alive comments skipped)."""
        found: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while len(found) < count:
            block = await self.until(b"\n\n", max(deadline - time.monotonic(), 0.01))
            lines = block.decode().strip("\n").split("\n")
            if all(line.startswith(":") for line in lines):
                continue
            fields = dict(line.split(": ", 1) for line in lines)
            assert set(fields) == {"id", "event", "data"}, lines
            found.append(
                {"id": fields["id"], "event": fields["event"], "data": orjson.loads(fields["data"])}
            )
        return found

    async def leave(self) -> None:
        self.left.set()
        await asyncio.wait_for(self.task, 5)


@asynccontextmanager
async def stream(
    app: App, headers: Mapping[str, str], query: str = "", path: str = CHANGES
) -> AsyncIterator[Stream]:
    opened = Stream(app, path, headers, query)
    await opened.start()
    try:
        yield opened
    finally:
        if not opened.task.done():
            await opened.leave()


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_server_sent_events_as_the_subscribers_get(site: Site, clock: Clock) -> None:
    site.seed("a")
    headers = {**SSE, "Origin": "http://127.0.0.1:8000", "Accept-Encoding": "gzip, br"}

    async def check() -> None:
        async with stream(site.app, headers) as events:
            assert events.status == 200
            assert events.headers["content-type"] == "text/event-stream"
            assert events.headers["cache-control"] == "no-cache"
            assert events.headers["vary"] == "Origin"  # the REST block: CORS, request id...
            assert events.headers["access-control-allow-origin"] == "http://127.0.0.1:8000"
            assert len(events.headers["x-request-id"]) > 0
            for absent in ("etag", "content-length", "content-encoding"):
                assert absent not in events.headers
            # a keep-alive at once, then the changes committed from now on (not "a")
            assert await events.until(b"\n\n") == b": keep-alive\n\n"
            # (each event read before the next write: an event of an item deleted by the
            # time it is sent is left out)
            await asyncio.to_thread(site.seed, "b")
            assert await events.events(1) == [
                {"id": cursor(2), "event": "created", "data": view(2, "b")}
            ]
            await asyncio.to_thread(site.tasks.table.update, 1, {"done": True})
            assert await events.events(1) == [
                {"id": cursor(3), "event": "updated", "data": view(1, "a", done=True)}
            ]
            await asyncio.to_thread(site.tasks.table.delete, 2)
            assert await events.events(1) == [
                {"id": cursor(4), "event": "deleted", "data": {"id": 2}}
            ]

    run(check())


def test_json_lines(site: Site) -> None:
    site.seed("a")

    async def check() -> None:
        async with stream(site.app, JSONL, f"since={cursor(0)}") as lines:
            assert lines.headers["content-type"] == "application/jsonl"
            assert await lines.until(b"\n") == b"\n"  # the keep-alive: a blank line
            first = await lines.until(b"\n")
            assert orjson.loads(first) == {
                "id": cursor(1),
                "event": "created",
                "data": view(1, "a"),
            }

    run(check())


def test_a_change_committed_meanwhile_arrives_within_a_second(site: Site) -> None:
    async def check() -> None:
        async with stream(site.app, SSE) as events:
            await events.until(b"\n\n")
            # Once the waker listens (on PostgreSQL the host's relay, a process of its own,
            # may still be starting): its first look wakes the stream, which waits again.
            waker = change_waker(site.app.store)
            deadline = time.monotonic() + 10
            while waker.wakes == 0:
                assert time.monotonic() < deadline, "no first look"
                await asyncio.sleep(0.01)
            began = time.monotonic()
            await asyncio.to_thread(site.seed, "now")
            assert [event["data"]["title"] for event in await events.events(1)] == ["now"]
            assert time.monotonic() - began < 1.0

    run(check())


def test_keep_alive_comments_without_events(site: Site) -> None:
    async def check() -> None:
        async with stream(site.app, SSE) as events:
            began = time.monotonic()
            for _ in range(3):
                assert await events.until(b"\n\n") == b": keep-alive\n\n"
            # one at once, then one every heartbeat (0.3 s)
            assert 0.5 <= time.monotonic() - began < 2.0

    run(check())


def test_last_event_id_or_since_resumes_and_410_and_400(site: Site, clock: Clock) -> None:
    site.seed("a", "b", "c")
    site.app.hooks.add_filter("svc_changes_retention", lambda seconds: 10)

    async def check() -> None:
        # Last-Event-ID wins over since (a reconnecting EventSource keeps its URL)
        resumed = {**SSE, "Last-Event-ID": cursor(2)}
        async with stream(site.app, resumed, f"since={cursor(0)}") as events:
            assert [event["id"] for event in await events.events(1)] == [cursor(3)]
        async with stream(site.app, SSE, f"since={cursor(1)}") as events:
            assert [event["data"]["title"] for event in await events.events(2)] == ["b", "c"]
        clock.now = T0 + 11
        for headers, query in (
            ({**SSE, "Last-Event-ID": cursor(1)}, ""),
            (SSE, f"since={cursor(1)}"),
        ):
            gone = Stream(site.app, CHANGES, headers, query)
            await gone.start()
            assert gone.status == 410
            assert orjson.loads(await gone.body())["code"] == "rest_changes_expired"
        bad = Stream(site.app, CHANGES, {**SSE, "Last-Event-ID": "zz!"}, "")
        await bad.start()
        assert bad.status == 400
        assert orjson.loads(await bad.body()) == {
            "code": "rest_invalid_param",
            "message": "Invalid parameter(s): Last-Event-ID",
            "data": {"status": 400, "params": {"Last-Event-ID": "Invalid cursor."}},
        }

    run(check())


def test_each_event_only_when_the_subscriber_may_read_the_item_now(
    store_location: str | None, clock: Clock
) -> None:
    def read(user: User, item: Mapping[str, Any] | None) -> bool:
        return item is None or not item["title"].startswith("secret") or user.id == item["author"]

    site = Site(store_location, read=read, clock=clock)
    try:
        site.seed("open", "secret plan", "open again", login="al")

        async def check() -> None:
            for login, seen in (
                ("al", ["open", "secret plan", "open again"]),
                ("ann", ["open", "open again"]),
            ):
                headers = {**SSE, **site.headers[login]}
                async with stream(site.app, headers, f"since={cursor(0)}") as events:
                    got = await events.events(len(seen))
                    assert [event["data"]["title"] for event in got] == seen

        run(check())
    finally:
        site.app.store.close()


def test_streams_are_bounded_long_polls_are_not_and_a_leaving_client_frees_its_slot(
    site: Site,
) -> None:
    site.app.max_streams = 1
    assert site.app.streams.limit == 1

    async def check() -> None:
        async with stream(site.app, SSE) as first:
            assert first.status == 200
            assert site.app.streams.open == 1
            busy = Stream(site.app, CHANGES, JSONL, "")
            await busy.start()
            assert busy.status == 503
            assert busy.headers["retry-after"] == "5"
            assert orjson.loads(await busy.body()) == {
                "code": "svc_streams_busy",
                "message": "Too many streams are open on this server; try again shortly.",
                "data": {"status": 503},
            }
            poll = Stream(site.app, CHANGES, {}, "")
            await poll.start()
            assert poll.status == 200  # a long-poll does not count
            await first.leave()
            assert site.app.streams.open == 0
        async with stream(site.app, SSE) as again:
            assert again.status == 200

    run(check())
    with pytest.raises(ValueError, match="positive"):
        site.app.max_streams = 0


def test_a_revoked_application_password_ends_its_stream(site: Site) -> None:
    ed = site.app.users.get_by_login("ed")
    assert ed is not None

    async def check() -> None:
        password, item = site.app.users.create_application_password(ed.id, "feed")
        basic = base64.b64encode(f"ed:{password}".encode()).decode()
        async with stream(site.app, {**SSE, "Authorization": f"Basic {basic}"}) as events:
            assert events.status == 200
            await events.until(b"\n\n")
            began = time.monotonic()
            await asyncio.to_thread(site.app.users.delete_application_password, ed.id, item["uuid"])
            while not events.ended:
                await events.body()
            assert time.monotonic() - began < 5.0
            await asyncio.wait_for(events.task, 5)
            assert site.app.streams.open == 0

    run(check())


def test_a_logout_ends_the_streams_of_its_session(site: Site) -> None:
    ed = site.app.users.get_by_login("ed")
    assert ed is not None
    auth = site.app.auth
    cookie = auth.log_in(ed, remember=False, ip="127.0.0.1", user_agent="test", secure=False)
    nonce = auth.create_nonce("svc_rest", ed.id, cookie.token)
    headers = {**SSE, "Cookie": f"svc_logged_in={cookie.value}", "X-SVC-Nonce": nonce}

    async def check() -> None:
        async with stream(site.app, headers) as events:
            assert events.status == 200
            await events.until(b"\n\n")
            # the session holds: changes still arrive
            await asyncio.to_thread(site.seed, "still")
            assert [event["data"]["title"] for event in await events.events(1)] == ["still"]
            began = time.monotonic()
            await asyncio.to_thread(auth.log_out, ed.id, cookie.token)
            while not events.ended:
                await events.body()
            assert time.monotonic() - began < 5.0

    run(check())


def test_an_anonymous_stream_outlives_a_logout(site: Site) -> None:
    ed = site.app.users.get_by_login("ed")
    assert ed is not None
    cookie = site.app.auth.log_in(ed, remember=False, ip="127.0.0.1", user_agent="t", secure=False)

    async def check() -> None:
        async with stream(site.app, SSE) as events:
            await events.until(b"\n\n")
            await asyncio.to_thread(site.app.auth.log_out, ed.id, cookie.token)
            await asyncio.sleep(0.5)
            await asyncio.to_thread(site.seed, "after")
            assert [event["data"]["title"] for event in await events.events(1)] == ["after"]

    run(check())


def test_a_stopping_server_ends_its_streams_and_waiting_long_polls_at_once(site: Site) -> None:
    """The server stops (``app.streams.close()``, which SIGTERM and the lifespan's shutdown
    call): each stream finishes its body at once, a Server-Sent Events one after a last
    comment (its client reconnects with ``Last-Event-ID``), its slot given back; a
    long-poll waiting for changes answers an empty page and its cursor."""

    async def check() -> None:
        async with stream(site.app, SSE) as events, stream(site.app, JSONL) as lines:
            assert await events.until(b"\n\n") == b": keep-alive\n\n"
            assert await lines.until(b"\n") == b"\n"
            poll = Stream(site.app, CHANGES, {}, f"since={cursor(0)}&wait=30")
            assert site.app.streams.open == 2
            await asyncio.sleep(0.3)
            assert not poll.task.done()  # it waits for a change
            began = time.monotonic()
            site.app.streams.close()
            last = await events.until(b"reconnect\n\n", 1)
            assert last.replace(b": keep-alive\n\n", b"") == (
                b": the server is stopping; reconnect\n\n"
            )
            assert (await events.body(1), events.ended) == (b"", True)
            while not lines.ended:
                assert await lines.body(1) in (b"\n", b"")  # keep-alives, then the end
            await poll.start()
            answered = orjson.loads(await poll.body(1))
            assert time.monotonic() - began < 1.0
            assert (poll.status, answered) == (200, {"changes": [], "cursor": cursor(0)})
            assert poll.headers["connection"] == "close"  # polled again on a new connection
            await asyncio.wait_for(asyncio.gather(events.task, lines.task, poll.task), 2)
            assert site.app.streams.open == 0
        # a stream begun while the server stops ends at once, after its first line
        late = Stream(site.app, CHANGES, SSE, "")
        await late.start()
        assert late.status == 200
        assert await late.until(b"\n\n") == b": keep-alive\n\n"
        while not late.ended:
            await late.body(1)
        # started again (the lifespan's startup): streams stay open
        site.app.streams.reopen()
        async with stream(site.app, SSE) as again:
            await again.until(b"\n\n")
            await asyncio.to_thread(site.seed, "again")
            assert [event["data"]["title"] for event in await again.events(1)] == ["again"]

    run(check())


def test_on_wsgi_a_waiting_long_poll_answers_at_once_and_closes_when_the_server_stops(
    site: Site,
) -> None:
    """Granian's WSGI worker closes the App's streams at SIGTERM (through the signals'
    wake-up descriptor): a long-poll waiting in a server thread then answers at once, an
    empty page and its cursor, with ``Connection: close`` so that its client polls again on
    a new connection (to a worker still serving); an answer before the stop has no such
    line."""
    environ = {
        "REQUEST_METHOD": "GET",
        "SCRIPT_NAME": "",
        "PATH_INFO": CHANGES,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "HTTP_HOST": "127.0.0.1:8000",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b""),
    }
    answers: list[tuple[str, dict[str, str], bytes]] = []

    def call(query: str) -> None:
        started: list[tuple[str, dict[str, str]]] = []

        def start_response(status: str, headers: list[tuple[str, str]]) -> None:
            started.append((status, {name.lower(): value for name, value in headers}))

        body = b"".join(site.app.wsgi({**environ, "QUERY_STRING": query}, start_response))
        answers.append((*started[0], body))

    call(f"since={cursor(0)}&wait=0")
    status, headers, body = answers.pop()
    assert (status, orjson.loads(body)) == ("200 OK", {"changes": [], "cursor": cursor(0)})
    assert "connection" not in headers
    poll = threading.Thread(target=call, args=(f"since={cursor(0)}&wait=30",))
    poll.start()
    time.sleep(0.3)
    assert poll.is_alive()  # it waits for a change
    began = time.monotonic()
    site.app.streams.close()
    poll.join(5)
    assert not poll.is_alive()
    assert time.monotonic() - began < 1.0
    status, headers, body = answers.pop()
    assert (status, orjson.loads(body)) == ("200 OK", {"changes": [], "cursor": cursor(0)})
    assert headers["connection"] == "close"
    # a long-poll begun while the server stops answers at once too
    began = time.monotonic()
    call(f"since={cursor(0)}&wait=30")
    assert time.monotonic() - began < 1.0
    status, headers, body = answers.pop()
    assert (status, headers["connection"]) == ("200 OK", "close")
