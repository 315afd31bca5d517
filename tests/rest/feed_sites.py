"""What the change-feed tests of this directory share beyond ``conftest.py``
(``test_change_feed_shared.py``, ``test_change_feed_fanout.py``,
``test_change_feed_fields.py``): a site whose editors see the notes, streams of a feed
opened and waiting, a GET's body read over ASGI, ``changes_after`` counted, and a wait
until the feed's readers wait."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from svcrest import App
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.http.user import User
from svcrest.store import change_feed
from svcrest.store.change_waker import change_waker
from svcrest.store.changes import Change, changes_after
from tests.rest.conftest import Clock
from tests.rest.test_change_streams import CHANGES, Stream
from tests.rest.test_store_collection import Site


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


class Counted:
    """``changes_after`` counted (the feed's module's name for it)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        monkeypatch.setattr(change_feed, "changes_after", self)

    def __call__(self, *args: Any) -> list[Change]:
        self.calls += 1
        return changes_after(*args)


async def until_waiting(site: Site, count: int) -> None:
    """Until ``count`` readers wait, and again after the waker's first look (which wakes
    everyone once: it cannot tell what came before it)."""
    waker = change_waker(site.app.store)
    deadline = time.monotonic() + 10
    for pause in (0.3, 0.0):
        while waker.waiters < count:
            assert time.monotonic() < deadline, waker.waiters
            await asyncio.sleep(0.01)
        # The first look comes once the listener listens (on PostgreSQL the host's relay,
        # a process of its own, may still be starting): wait for it, then for the readers.
        while waker.wakes == 0:
            assert time.monotonic() < deadline, "no first look"
            await asyncio.sleep(0.01)
        await asyncio.sleep(pause)


def editors_see_notes(response: Response, item: Any, request: Request) -> Response:
    """A ``rest_prepare_task`` filter: an editor's view of a task shows its notes."""
    if request.user.can("edit_others_posts"):
        response.data["notes"] = item["notes"]
    return response


def noted_site(
    store_location: str | None,
    clock: Clock,
    read: Callable[[User, Mapping[str, Any] | None], bool],
) -> Site:
    """A site of tasks with the read permission ``read`` whose editors see the notes."""
    site = Site(store_location, read=read, clock=clock)
    site.app.hooks.add_filter("rest_prepare_task", editors_see_notes)
    return site


async def opened(
    site: Site, asked: list[tuple[Mapping[str, str], str]], path: str = CHANGES
) -> list[Stream]:
    """Streams of the feed at ``path`` with these headers and query strings, past their
    first keep-alive, all waiting."""
    streams = [Stream(site.app, path, headers, query) for headers, query in asked]
    for one in streams:
        await one.start()
        assert one.status == 200
        assert await one.until(b"\n\n") == b": keep-alive\n\n"
    await until_waiting(site, len(streams))
    return streams


async def next_frame(stream: Stream) -> bytes:
    """The next Server-Sent Event's bytes, keep-alive comments skipped."""
    while True:
        block = await stream.until(b"\n\n")
        if block != b": keep-alive\n\n":
            return block


async def get_body(app: App, path: str, headers: Mapping[str, str], query: str = "") -> bytes:
    """The body of a GET of ``path`` with ``query`` as the App answers it over ASGI, as
    ``headers`` authenticate it."""
    asked = Stream(app, path, headers, query)
    await asked.start()
    assert asked.status == 200
    body = b""
    while not asked.ended:
        body += await asked.body()
    await asked.leave()
    return body
