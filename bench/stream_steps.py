"""A change-feed stream's step a wake, in instructions: what each subscriber costs a wake.

Usage::

    python bench/stream_steps.py [--streams 100] [--wakes 80] [--changes 1] [--repeat 2]
        [--compare NAME=SRC ...]

Opens ``--streams`` Server-Sent Events streams of a ``StoreCollection``'s changes on one App
(SQLite file store) through its ASGI interface on uvloop, as ``bench/idle_streams.py`` does
(each stream's send an ``asyncio.Queue``'s put, drained by the script), then wakes them
``--wakes`` times, ``--changes`` new changes a wake (a server's wake carries hundreds: more
than 32 are rendered in pieces), read ahead of the wake as the waker's thread reads them:
each stream takes the one shared chunk, sends it and waits again. The
script runs twice under valgrind's callgrind, with 10 wakes and with 10 + ``--wakes``; the
difference over ``--wakes`` x ``--streams`` is the instructions a stream a wake (its step,
its share of the wake and of the script's draining). Unlike seconds, the count does not
move with the machine's load: the per-stream parts of a fan-out compared between trees
(``--compare NAME=SRC``: another checkout's ``src``, counted interleaved with this one,
``--repeat`` times). Needs ``valgrind``.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from callgrind import collected, fixed_paths, prime, settle

#: The wakes of the shorter run (the longer one makes ``--wakes`` more).
WARM = 10


async def steps(count: int, wakes: int, changes: int = 1) -> None:
    """``count`` streams woken ``wakes`` times (``changes`` changes each), each wake's
    changes read ahead of it; returns once every stream has sent them and waits again."""
    from idle_streams import books_site, left, opened

    from svcrest.store.change_waker import change_waker

    folder = tempfile.mkdtemp(prefix="svcrest-steps-")
    app, books = books_site(folder, count)
    books.feed.heartbeat = 86_400.0  # no keep-alive within the run
    waker = change_waker(books.table.store)
    waker.share = 1000.0  # no wake held back
    waker.interval = 86_400.0  # the script wakes the streams, not the waker's thread
    received: list[asyncio.Queue[Any]] = []
    leave = asyncio.Event()
    tasks, _ = await opened(app, count, received, leave)
    while waker.waiters < count:
        await asyncio.sleep(0.01)
    tail = books.feed.tail(books.table.store)
    kind = books.feed.object_type
    waker.coalesce = 0.0
    settle()
    for number in range(wakes):
        for one in range(changes):
            books.table.insert({"title": f"book {number}.{one}"})
        tail.read_ahead(waker.token(kind) + 1)  # as the waker's thread, before the wake
        waker._wake({kind})
        for queue in received:
            while b"event: created" not in (await queue.get()).get("body", b""):
                pass
        while waker.waiters < count:
            await asyncio.sleep(0)
    await left(leave, tasks)
    app.store.close()
    shutil.rmtree(folder, ignore_errors=True)


def child(count: int, wakes: int, changes: int) -> None:
    import uvloop

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(steps(count, wakes, changes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--wakes", type=int, default=80)
    parser.add_argument("--changes", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--compare", action="append", default=[], metavar="NAME=SRC")
    parser.add_argument("--child", nargs=3, type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(*options.child)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("needs valgrind")
    names = ["this", *(one.split("=", 1)[0] for one in options.compare)]
    sources = [one.split("=", 1)[1] for one in options.compare]
    counts: dict[str, list[float]] = {name: [] for name in names}
    with fixed_paths(sources) as paths:
        env = {name: {"PYTHONPATH": path} for name, path in zip(names[1:], paths, strict=True)}
        script = str(Path(__file__).resolve())
        for name in names:
            prime([script, "--child", "2", "1", "1"], env.get(name))
        for _ in range(options.repeat):
            for name in names:
                streams, changes = str(options.streams), str(options.changes)
                runs = [
                    collected([script, "--child", streams, str(wakes), changes], env.get(name))
                    for wakes in (WARM, WARM + options.wakes)
                ]
                each = (runs[1] - runs[0]) / options.wakes / options.streams
                counts[name].append(each)
                print(f"{name}: {each:,.0f} instructions a stream a wake", flush=True)
    for name, values in counts.items():
        shown = ", ".join(f"{value:,.0f}" for value in values)
        print(
            f"{name}: {shown} ({options.streams} streams, {options.wakes} wakes,"
            f" {options.changes} changes a wake)"
        )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
