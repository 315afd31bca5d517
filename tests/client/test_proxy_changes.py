"""``RestProxy.changes`` and ``AsyncRestProxy.changes``: following a collection's change feed
(the long-poll ``GET <collection>/changes?since=&wait=``) against the demo's notes in process
(the sync proxy over WSGI, the async one over ASGI), and against scripted answers for the
resumption rules (the same cursor after a 5xx or a dropped connection, errors raised)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from svcrest import App, StoreCollection
from svcrest.auth.passwords import ScryptParams
from svcrest.client import (
    AsyncRestProxy,
    ChangeEvent,
    ChangesExpired,
    ChangeStream,
    Operation,
    ProxyError,
    RestProxy,
)
from svcrest.demo import register
from tests.e2e.store_site import BOOKS_SCHEMA

HOME = "http://notes.test"
NOTES = f"{HOME}/svc-json/demo/v1/notes"
CHANGES = f"{NOTES}/changes"


class Clock:
    """A settable clock (Unix seconds)."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def app(clock: Clock) -> Iterator[App]:
    app = App(HOME, clock=clock)
    register(app)
    app.users.password_params = ScryptParams(n=16, r=1, p=1)
    app.users.create("ed", "pw", roles=("editor",))
    yield app
    app.store.close()


def sync_proxy(app: App, **options: Any) -> RestProxy:
    client = httpx.Client(transport=httpx.WSGITransport(app=app.wsgi), base_url=HOME)
    return RestProxy(NOTES, client=client, **options)


def async_proxy(app: App, **options: Any) -> AsyncRestProxy:
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=HOME)
    return AsyncRestProxy(NOTES, client=client, **options)


def take(proxy: RestProxy | AsyncRestProxy, count: int, **options: Any) -> list[ChangeEvent]:
    """The first ``count`` events of ``proxy.changes(**options)``, leaving by ``break``."""
    if isinstance(proxy, RestProxy):
        events: list[ChangeEvent] = []
        for event in proxy.changes(**options):
            events.append(event)
            if len(events) == count:
                break
        return events

    async def collect() -> list[ChangeEvent]:
        found: list[ChangeEvent] = []
        async for event in proxy.changes(**options):
            found.append(event)
            if len(found) == count:
                break
        return found

    return asyncio.run(collect())


def call(proxy: RestProxy | AsyncRestProxy, name: str, *args: Any, **kwargs: Any) -> Any:
    result = getattr(proxy, name)(*args, **kwargs)
    return asyncio.run(result) if isinstance(proxy, AsyncRestProxy) else result


def since_of(request: httpx.Request) -> str | None:
    values = parse_qs(urlsplit(str(request.url)).query).get("since")
    return None if values is None else values[0]


# -- URLs and requests -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (NOTES, CHANGES),
        (NOTES + "/", CHANGES),
        (NOTES + "?lang=fr#top", CHANGES + "?lang=fr"),
        ("/svc-json/demo/v1/notes", "/svc-json/demo/v1/notes/changes"),
    ],
    ids=["plain", "trailing-slash", "query-and-fragment", "relative"],
)
def test_changes_url_is_the_collection_url_with_changes(url: str, expected: str) -> None:
    assert RestProxy(url).changes_url() == expected


def test_changes_url_follows_the_read_api_url() -> None:
    proxy = RestProxy(NOTES, api={"read": f"{HOME}/svc-json/demo/v1/all-notes"})
    assert proxy.changes_url() == f"{HOME}/svc-json/demo/v1/all-notes/changes"


def test_changes_request_sends_the_cursor_the_wait_the_nonce_and_waits_longer() -> None:
    proxy = RestProxy(NOTES, timeout=10, headers={"X-Trace": "t1"})
    proxy.nonce = "abc123"
    request = proxy.changes_request("MS4x", 12.5)
    assert request.method == "GET"
    assert str(request.url) == f"{CHANGES}?since=MS4x&wait=12.5"
    assert request.headers["X-SVC-Nonce"] == "abc123"
    assert request.headers["X-Trace"] == "t1"
    assert request.headers["Accept"] == "application/json"
    assert request.extensions["timeout"] == {
        "connect": 10,
        "read": 22.5,
        "write": 10,
        "pool": 10,
    }
    assert str(proxy.changes_request(None, 30).url) == f"{CHANGES}?wait=30"


@pytest.mark.parametrize("wait", [0, -1, 30.5, 60])
def test_changes_refuses_a_wait_the_server_refuses(wait: float) -> None:
    with pytest.raises(ValueError, match="wait is seconds > 0 and <= 30"):
        RestProxy(NOTES).changes(wait=wait)


# -- against the demo's notes --------------------------------------------------------------------


@pytest.mark.parametrize("make", [sync_proxy, async_proxy], ids=["sync-wsgi", "async-asgi"])
def test_changes_follow_creations_updates_and_deletions_in_order(
    app: App, make: Callable[..., RestProxy | AsyncRestProxy]
) -> None:
    proxy = make(app)
    call(proxy, "login", "ed", "pw")
    call(proxy, "create", {"title": "Before"})  # made before the cursor: not followed
    cursor = call(proxy, "changes_cursor")
    first, second = call(proxy, "create", {"title": "One"}, {"title": "Two"})
    call(proxy, "update", {"id": first["id"], "title": "One, edited"})
    call(proxy, "destroy", {"id": second["id"]})

    events = take(proxy, 3, since=cursor, wait=1)

    # Two's creation is left out: Two was deleted before the feed showed it.
    assert [(event.event, event.data["id"]) for event in events] == [
        ("created", first["id"]),
        ("updated", first["id"]),
        ("deleted", second["id"]),
    ]
    assert events[0].data["title"] == "One, edited"  # rendered when sent
    assert events[0].data["_links"]["self"] == [{"href": f"{NOTES}/{first['id']}"}]
    assert events[2].data == {"id": second["id"]}
    assert len({event.id for event in events} | {cursor}) == 4


@pytest.mark.parametrize("make", [sync_proxy, async_proxy], ids=["sync-wsgi", "async-asgi"])
def test_a_later_stream_resumes_from_the_cursor_the_last_one_handed_out(
    app: App, make: Callable[..., RestProxy | AsyncRestProxy]
) -> None:
    proxy = make(app)
    cursor = call(proxy, "changes_cursor")
    call(proxy, "login", "ed", "pw")
    made = call(proxy, "create", {"title": "A"}, {"title": "B"}, {"title": "C"})
    stream = proxy.changes(since=cursor, wait=1)
    first = next(stream) if isinstance(stream, ChangeStream) else asyncio.run(anext(stream))
    assert stream.cursor == first.id
    rest = take(proxy, 2, since=stream.cursor, wait=1)
    assert [event.data["title"] for event in [first, *rest]] == ["A", "B", "C"]
    assert [event.data["id"] for event in rest] == [made[1]["id"], made[2]["id"]]


def test_a_stream_without_a_cursor_starts_at_the_log_end_sync(app: App) -> None:
    proxy, writer = sync_proxy(app), sync_proxy(app)
    writer.login("ed", "pw")
    writer.create({"title": "Old"})
    sent: list[httpx.Request] = []
    proxy.client.event_hooks["request"] = [sent.append]
    later = threading.Timer(0.5, lambda: writer.create({"title": "New"}))
    later.start()
    try:
        events = take(proxy, 1, wait=5)
    finally:
        later.join()
    assert [(event.event, event.data["title"]) for event in events] == [("created", "New")]
    assert [since_of(request) for request in sent] == [None]


def test_a_stream_without_a_cursor_starts_at_the_log_end_async(app: App) -> None:
    proxy = async_proxy(app)

    async def run() -> list[ChangeEvent]:
        await proxy.login("ed", "pw")
        await proxy.create({"title": "Old"})
        stream = proxy.changes(wait=5)
        first = asyncio.create_task(stream.__anext__())
        await asyncio.sleep(0.5)  # the poll is waiting at the server
        await proxy.create({"title": "New"})
        return [await first]

    events = asyncio.run(run())
    assert [(event.event, event.data["title"]) for event in events] == [("created", "New")]


@pytest.mark.parametrize("make", [sync_proxy, async_proxy], ids=["sync-wsgi", "async-asgi"])
def test_a_cursor_past_the_retention_raises_changes_expired(
    app: App, clock: Clock, make: Callable[..., RestProxy | AsyncRestProxy]
) -> None:
    reported: list[tuple[ProxyError, Operation | None]] = []
    proxy = make(app, on_exception=lambda error, operation: reported.append((error, operation)))
    app.hooks.add_filter("svc_changes_retention", lambda seconds: 60)
    cursor = call(proxy, "changes_cursor")
    clock.now += 61
    with pytest.raises(ChangesExpired) as raised:
        take(proxy, 1, since=cursor, wait=1)
    assert isinstance(raised.value, ProxyError)
    assert (raised.value.code, raised.value.status) == ("rest_changes_expired", 410)
    assert raised.value.message.startswith("The changes after this cursor are no longer kept")
    assert reported == [(raised.value, None)]


@pytest.mark.parametrize("make", [sync_proxy, async_proxy], ids=["sync-wsgi", "async-asgi"])
def test_a_cursor_that_is_not_one_raises_at_once(
    app: App, make: Callable[..., RestProxy | AsyncRestProxy]
) -> None:
    proxy = make(app)
    with pytest.raises(ProxyError) as raised:
        take(proxy, 1, since="not-a-cursor", wait=1)
    assert (raised.value.code, raised.value.status) == ("rest_invalid_param", 400)
    assert not isinstance(raised.value, ChangesExpired)


# -- scripted answers: resumption and errors ------------------------------------------------------

Script = list[httpx.Response | type[httpx.TransportError]]


def _feed(changes: list[tuple[str, str, int]], cursor: str) -> httpx.Response:
    entries = [{"id": c, "event": e, "data": {"id": i}} for c, e, i in changes]
    return httpx.Response(200, json={"changes": entries, "cursor": cursor})


def _error(status: int, code: str) -> httpx.Response:
    return httpx.Response(
        status, json={"code": code, "message": f"{code}.", "data": {"status": status}}
    )


class Scripted:
    """Answers requests from a script; records them."""

    def __init__(self, script: Script) -> None:
        self.script = list(script)
        self.sent: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        answer = self.script.pop(0)
        if isinstance(answer, httpx.Response):
            return answer
        raise answer("the connection dropped", request=request)

    def sync_proxy(self, **options: Any) -> RestProxy:
        client = httpx.Client(transport=httpx.MockTransport(self))
        return RestProxy(NOTES, client=client, max_retries=0, **options)

    def async_proxy(self, **options: Any) -> AsyncRestProxy:
        client = httpx.AsyncClient(transport=httpx.MockTransport(self))
        return AsyncRestProxy(NOTES, client=client, max_retries=0, **options)


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def proxy_of(scripted: Scripted, kind: str, **options: Any) -> RestProxy | AsyncRestProxy:
    return scripted.sync_proxy(**options) if kind == "sync" else scripted.async_proxy(**options)


def test_dropped_connections_and_5xx_resume_from_the_last_cursor(kind: str) -> None:
    scripted = Scripted(
        [
            _feed([("c1", "created", 1), ("c2", "updated", 1)], "c2"),
            _error(502, "http_error"),
            httpx.ConnectError,
            httpx.RemoteProtocolError,
            httpx.ReadTimeout,
            _feed([], "c2b"),
            _error(503, "svc_unavailable"),
            _feed([("c3", "deleted", 1)], "c3"),
        ]
    )
    proxy = proxy_of(scripted, kind)
    events = take(proxy, 3, wait=5, max_delay=0)
    assert [(event.id, event.event) for event in events] == [
        ("c1", "created"),
        ("c2", "updated"),
        ("c3", "deleted"),
    ]
    assert [since_of(request) for request in scripted.sent] == [
        None,
        "c2",
        "c2",
        "c2",
        "c2",
        "c2",
        "c2b",
        "c2b",
    ]
    assert not scripted.script


@pytest.mark.parametrize(
    ("status", "code"),
    [(401, "rest_forbidden"), (403, "rest_forbidden"), (404, "rest_no_route")],
)
def test_an_error_answer_that_is_not_transient_raises_at_once(
    kind: str, status: int, code: str
) -> None:
    scripted = Scripted([_feed([], "c0"), _error(status, code)])
    reported: list[tuple[ProxyError, Operation | None]] = []
    proxy = proxy_of(scripted, kind, on_exception=lambda e, o: reported.append((e, o)))
    with pytest.raises(ProxyError) as raised:
        take(proxy, 1, wait=5, max_delay=0)
    assert (raised.value.code, raised.value.status) == (code, status)
    assert [since_of(request) for request in scripted.sent] == [None, "c0"]
    assert reported == [(raised.value, None)]


def test_too_many_failures_in_a_row_raise_the_last(kind: str) -> None:
    scripted = Scripted(
        [
            _error(503, "svc_unavailable"),
            _feed([], "c1"),  # a success starts the count again
            httpx.ConnectError,
            _error(500, "http_error"),
            _error(502, "http_error"),
        ]
    )
    proxy = proxy_of(scripted, kind)
    with pytest.raises(ProxyError) as raised:
        take(proxy, 1, wait=5, max_delay=0, max_failures=2)
    assert (raised.value.code, raised.value.status) == ("http_error", 502)
    assert not scripted.script


def test_a_dropped_connection_past_max_failures_raises_the_transport_error(kind: str) -> None:
    scripted = Scripted([httpx.ConnectError, httpx.ConnectError])
    with pytest.raises(httpx.ConnectError):
        take(proxy_of(scripted, kind), 1, wait=5, max_delay=0, max_failures=1)


def test_an_answer_that_is_not_a_feed_raises(kind: str) -> None:
    scripted = Scripted([httpx.Response(200, json=[{"id": 1}])])
    with pytest.raises(ProxyError) as raised:
        take(proxy_of(scripted, kind), 1, wait=5)
    assert raised.value.code == "invalid_changes_response"


def test_the_back_off_doubles_from_half_a_second_up_to_max_delay() -> None:
    failing: Script = [_error(503, "svc_unavailable")] * 5
    scripted = Scripted([*failing, _feed([("c1", "created", 1)], "c1")])
    pauses: list[float] = []
    proxy = scripted.sync_proxy()
    stream = ChangeStream(
        lambda cursor, wait: proxy._run(proxy._poll_changes(cursor, wait)),
        since=None,
        wait=5,
        max_delay=3,
        max_failures=None,
        sleep=pauses.append,
    )
    assert next(stream).id == "c1"
    bounds = [(0.375, 0.5), (0.75, 1), (1.5, 2), (2.25, 3), (2.25, 3)]
    assert len(pauses) == len(bounds)
    for pause, (low, high) in zip(pauses, bounds, strict=True):
        assert low <= pause <= high


def test_close_ends_the_stream_without_another_request() -> None:
    scripted = Scripted([_feed([("c1", "created", 1), ("c2", "created", 2)], "c2")])
    proxy = scripted.sync_proxy()
    with proxy.changes(wait=5) as stream:
        assert next(stream).id == "c1"
    with pytest.raises(StopIteration):
        next(stream)
    assert stream.cursor == "c1"
    assert len(scripted.sent) == 1


def test_aclose_ends_the_async_stream_without_another_request() -> None:
    scripted = Scripted([_feed([("c1", "created", 1), ("c2", "created", 2)], "c2")])
    proxy = scripted.async_proxy()

    async def run() -> None:
        async with proxy.changes(wait=5) as stream:
            assert (await stream.__anext__()).id == "c1"
        with pytest.raises(StopAsyncIteration):
            await stream.__anext__()
        assert stream.cursor == "c1"

    asyncio.run(run())
    assert len(scripted.sent) == 1


# -- a StoreCollection whose reads need a capability --------------------------------------------


@pytest.fixture
def shop(clock: Clock) -> Iterator[App]:
    """A site with a `StoreCollection` of books that only editors may read and write."""
    app = App(HOME, clock=clock)
    app.register_controller(
        StoreCollection("shop/v1", "books", BOOKS_SCHEMA, read="edit_posts", write="edit_posts")
    )
    app.users.password_params = ScryptParams(n=16, r=1, p=1)
    app.users.create("ed", "pw", roles=("editor",))
    yield app
    app.store.close()


@pytest.mark.parametrize("transport", ["wsgi", "asgi"], ids=["sync-wsgi", "async-asgi"])
def test_a_collection_the_client_may_not_read_raises_401_then_follows_once_logged_in(
    shop: App, transport: str
) -> None:
    url = f"{HOME}/svc-json/shop/v1/books"
    if transport == "wsgi":
        client = httpx.Client(transport=httpx.WSGITransport(app=shop.wsgi), base_url=HOME)
        proxy: RestProxy | AsyncRestProxy = RestProxy(url, client=client)
    else:
        async_client = httpx.AsyncClient(transport=httpx.ASGITransport(app=shop), base_url=HOME)
        proxy = AsyncRestProxy(url, client=async_client)
    with pytest.raises(ProxyError) as raised:
        take(proxy, 1, wait=1)
    assert (raised.value.code, raised.value.status) == ("rest_forbidden", 401)
    call(proxy, "login", "ed", "pw")
    cursor = call(proxy, "changes_cursor")
    [book] = call(proxy, "create", {"title": "Emma", "year": 1815})
    [event] = take(proxy, 1, since=cursor, wait=1)
    assert (event.event, event.data["id"], event.data["title"]) == ("created", book["id"], "Emma")
