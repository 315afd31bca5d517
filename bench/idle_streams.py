"""Idle change-feed streams: memory per subscriber and CPU while nobody writes.

Usage::

    python bench/idle_streams.py [--streams 1000] [--seconds 5]

Opens ``--streams`` Server-Sent Events streams of a ``StoreCollection``'s changes on one App
(SQLite file store) through its ASGI interface, in one event loop as one worker holds them,
then measures the Python heap they hold (``tracemalloc``, after a collection) divided by
their number, and the process's CPU seconds over ``--seconds`` while all of them wait and
nobody writes. Last, one write: how long until every stream has its event.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from svcrest import App, StoreCollection

PATH = "/svc-json/shop/v1/books/changes"


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def main(count: int, seconds: float) -> None:
    folder = tempfile.mkdtemp(prefix="svcrest-idle-")
    app = App(store=str(Path(folder) / "site.db"), max_streams=count)
    books = app.register_controller(
        StoreCollection(
            "shop/v1",
            "books",
            {"title": "book", "type": "object", "properties": {"title": {"type": "string"}}},
            write=lambda user, item: True,
        )
    )
    books.table.insert({"title": "warm"})
    received: list[asyncio.Queue[Any]] = []
    leave = asyncio.Event()

    async def receive_once() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    def receiver() -> Any:
        first = [True]

        async def receive() -> dict[str, Any]:
            if first[0]:
                first[0] = False
                return await receive_once()
            await leave.wait()
            return {"type": "http.disconnect"}

        return receive

    scope = {
        "type": "http",
        "method": "GET",
        "scheme": "http",
        "path": PATH,
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8000"), (b"accept", b"text/event-stream")],
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 5000),
    }
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    tasks = []
    for _ in range(count):
        queue: asyncio.Queue[Any] = asyncio.Queue()
        received.append(queue)
        tasks.append(asyncio.ensure_future(app(dict(scope), receiver(), queue.put)))
    for queue in received:  # the head and the first keep-alive of each
        await queue.get()
        await queue.get()
    await asyncio.sleep(0.5)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    began_cpu, began = cpu(), time.monotonic()
    await asyncio.sleep(seconds)
    idle_cpu = (cpu() - began_cpu) / (time.monotonic() - began)
    written = time.monotonic()
    await asyncio.to_thread(books.table.insert, {"title": "news"})
    for queue in received:
        while b"event: created" not in (await queue.get()).get("body", b""):
            pass
    reached = time.monotonic() - written
    print(f"{count} idle streams: {held / count / 1024:.1f} KiB of Python heap each")
    print(f"CPU while idle: {idle_cpu * 100:.1f} % of one core")
    print(f"one write reached all {count} streams in {reached * 1000:.0f} ms")
    leave.set()
    await asyncio.gather(*tasks)
    app.store.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    asyncio.run(main(args.streams, args.seconds))
