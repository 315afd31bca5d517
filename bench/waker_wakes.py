"""The change waker's own cost of a wake: the loop's CPU a waiting reader a wake.

Usage::

    python bench/waker_wakes.py [--readers 1000] [--wakes 200] [--loop uvloop|asyncio]

``--readers`` tasks each wait on one ``ChangeWaker`` (SQLite in memory) with a deadline of
their own (15 s on), again after each wake, as idle change-feed streams do; the script
wakes them ``--wakes`` times from the loop's thread and prints the loop thread's CPU time
from each wake until every reader waits again, per reader: the waker's part of a fan-out
(the future, the deadline, the bookkeeping), without the streams' chunks and sends.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from svcrest.store.change_waker import ChangeWaker
from svcrest.store.changes import ensure_change_log
from svcrest.store.sqlite import SqliteStore


async def main(readers: int, wakes: int) -> float:
    """The loop's CPU seconds a reader a wake."""
    store = SqliteStore(":memory:")
    ensure_change_log(store)
    waker = ChangeWaker(store)
    while waker.wakes == 0:  # the thread's first look wakes everyone
        await waker.wait("note", waker.token("note"), 0.05)
    stop = False
    done = [0]

    async def reader(number: int) -> None:
        while not stop:
            await waker.wait("note", waker.token("note"), 15 + number / readers)
            done[0] += 1

    tasks = [asyncio.ensure_future(reader(number)) for number in range(readers)]
    while waker.waiters < readers:
        await asyncio.sleep(0.001)
    spent = 0.0
    for _ in range(wakes):
        began = time.thread_time()
        target = done[0] + readers
        waker._wake({"note"})  # as the waker's thread does when it sees a commit
        while done[0] < target or waker.waiters < readers:
            await asyncio.sleep(0)
        spent += time.thread_time() - began
    stop = True
    waker._wake({"note"})
    await asyncio.gather(*tasks)
    store.close()
    return spent / wakes / readers


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readers", type=int, default=1000)
    parser.add_argument("--wakes", type=int, default=200)
    parser.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop")
    args = parser.parse_args()
    if args.loop == "uvloop":
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            each = runner.run(main(args.readers, args.wakes))
    else:
        each = asyncio.run(main(args.readers, args.wakes))
    print(f"{args.loop}, {args.readers} readers: {each * 1e6:.2f} µs a reader a wake")
