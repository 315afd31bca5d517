"""``changes()`` of both proxies against real ``svcrest serve`` processes (granian over WSGI,
uvicorn over ASGI): the feed follows the demo's notes while the server is stopped, written to
behind its back and started again on the same port; it resumes with its last cursor and hands
out every change once, in order. The first server is gone, all its processes, before the
second starts, and the second answers the writes (its own access log has them). Fails (not
skips) under ``CI`` when a server cannot start."""

from __future__ import annotations

import asyncio
import os
import queue
import re
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from svcrest import App
from svcrest.client import AsyncRestProxy, ChangeEvent, RestProxy
from svcrest.demo.notes import NotesController
from tests.browser.support import (
    HOME_PLUGIN,
    PASSWORD,
    USER,
    _serve_command,
    _stop,
    _svcrest,
    _wait_for_port,
    free_port,
)

pytestmark = pytest.mark.slow

SERVERS = {
    "granian-wsgi": ("--interface", "wsgi"),
    "uvicorn-asgi": ("--server", "uvicorn"),
}
#: How long the test waits for one event.
EVENT_TIMEOUT = 20.0


class Served:
    """A ``svcrest serve`` of :func:`serving`: its notes URL, its log, and whether it
    stopped by itself (every process gone within its graceful time-out and more)."""

    def __init__(self, url: str, log: Path) -> None:
        self.url = url
        self.log = log
        self.stopped: bool | None = None

    def requests(self) -> str:
        """The server's output (its access log)."""
        return self.log.read_text(errors="replace")


@contextmanager
def serving(workdir: Path, db: Path, port: int, options: tuple[str, ...]) -> Iterator[Served]:
    """``svcrest serve`` on ``port`` over ``db``, in a session of its own (stopped with its
    whole process group: no worker outlives it)."""
    log = workdir / f"server-{port}-{len(list(workdir.glob('server-*.log')))}.log"
    argv = ["--host", "127.0.0.1", "--port", str(port), "--db", str(db)]
    with log.open("wb") as output:
        process = subprocess.Popen(
            _serve_command(*argv, "--plugin", HOME_PLUGIN, *options),
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            start_new_session=True,
        )
    served = Served(f"http://127.0.0.1:{port}/svc-json/demo/v1/notes", log)
    try:
        try:
            _wait_for_port(port, process, log)
        except RuntimeError as error:
            if os.environ.get("CI"):
                raise
            pytest.skip(f"the server did not start: {error}")
        yield served
    finally:
        served.stopped = _stop(process)


def make_db(workdir: Path) -> Path:
    db = workdir / "svcrest.db"
    created = subprocess.run(
        _svcrest("user", "add", USER, "--role", "editor", "--password-stdin", "--db", str(db)),
        input=PASSWORD + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=workdir,
    )
    assert created.returncode == 0, created.stderr
    return db


def write_behind(db: Path, title: str) -> None:
    """Create a note straight in the database (no server), as another host would."""
    app = App("http://127.0.0.1", store=str(db))
    try:
        NotesController(app).table.insert(
            {"title": title, "title_sort": title.lower(), "content": "", "author": 1,
             "date": "2026-01-01T00:00:00", "date_gmt": "2026-01-01T00:00:00"}
        )  # fmt: skip
    finally:
        app.store.close()


class Follower:
    """Follows ``url``'s changes from ``since`` on a thread (the sync or the async proxy),
    putting each event (or the error that ended the stream) on ``events``, and leaves (by
    ``break``) after ``count`` events."""

    def __init__(self, url: str, since: str, kind: str, count: int) -> None:
        self.events: queue.Queue[ChangeEvent | BaseException] = queue.Queue()
        self.count = count
        target = self._sync if kind == "sync" else self._async
        self.thread = threading.Thread(target=target, args=(url, since), daemon=True)
        self.thread.start()

    def _sync(self, url: str, since: str) -> None:
        with RestProxy(url, max_retries=0) as proxy:
            try:
                for seen, event in enumerate(
                    proxy.changes(since, wait=2, max_delay=0.5, max_failures=None), 1
                ):
                    self.events.put(event)
                    if seen == self.count:
                        break
            except BaseException as error:
                self.events.put(error)

    def _async(self, url: str, since: str) -> None:
        async def run() -> None:
            async with AsyncRestProxy(url, max_retries=0) as proxy:
                stream = proxy.changes(since, wait=2, max_delay=0.5, max_failures=None)
                seen = 0
                async for event in stream:
                    self.events.put(event)
                    seen += 1
                    if seen == self.count:
                        break

        try:
            asyncio.run(run())
        except BaseException as error:
            self.events.put(error)

    def next(self) -> ChangeEvent:
        item = self.events.get(timeout=EVENT_TIMEOUT)
        if isinstance(item, BaseException):
            raise item
        return item


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("server", sorted(SERVERS))
def test_a_feed_resumes_after_the_server_restarts_without_losing_or_repeating(
    tmp_path: Path, server: str, kind: str
) -> None:
    db = make_db(tmp_path)
    port = free_port()
    options = SERVERS[server]
    with serving(tmp_path, db, port, options) as first_server:
        url = first_server.url
        writer = RestProxy(url)
        writer.login(USER, PASSWORD)
        writer.create({"title": "Before"})
        cursor = writer.changes_cursor()
        follower = Follower(url, cursor, kind, count=4)
        first = writer.create({"title": "One"})[0]
        event = follower.next()
        assert (event.event, event.data["title"]) == ("created", "One")
        # The follower is now waiting in its next long-poll: the stop cuts it.
    # Every process of the first server is gone (none answers for the second one).
    assert first_server.stopped, first_server.requests()
    write_behind(db, "Two")  # while no server runs
    with serving(tmp_path, db, port, options) as second_server:
        writer.update({"id": first["id"], "title": "One, edited"})
        writer.create({"title": "Three"})
        seen = [follower.next() for _ in range(3)]
        writer.close()
    assert second_server.stopped, second_server.requests()
    # The second server answered the writes, not a worker of the first one.
    edit = re.compile(rf'"PUT /svc-json/demo/v1/notes/{first["id"]}[? ]')
    assert edit.search(second_server.requests()), second_server.requests()
    assert not edit.search(first_server.requests()), first_server.requests()
    assert [(event.event, event.data["title"]) for event in seen] == [
        ("created", "Two"),
        ("updated", "One, edited"),
        ("created", "Three"),
    ]
    assert seen[1].data["id"] == first["id"]
    follower.thread.join(timeout=EVENT_TIMEOUT)
    assert not follower.thread.is_alive()
    assert follower.events.empty()  # no error ended the stream after its last event
