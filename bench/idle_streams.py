"""Idle change-feed streams: memory per subscriber and CPU while nobody writes.

Usage::

    python bench/idle_streams.py [--streams 1000] [--seconds 5] [--writes 60] [--every 0.05]
        [--uvloop] [--share 0.05] [--profile FILE] [--posters 4] [--post-seconds 4]
        [--send-cost 46] [--post-pause 4]

Opens ``--streams`` Server-Sent Events streams of a ``StoreCollection``'s changes on one App
(SQLite file store) through its ASGI interface, in one event loop as one worker holds them,
then measures the Python heap they hold (``tracemalloc``, after a collection) divided by
their number, and the process's CPU seconds over ``--seconds`` while all of them wait and
nobody writes. Then one write: how long until every stream has its event. Last, the
fan-out: ``--writes`` writes ``--every`` seconds apart (from a thread) while every stream
receives each, and the process's CPU milliseconds per write (the writes' own included: a
few hundred microseconds; compare trees in one run, the machine's load moves it), and how
long after its commit each write's event reached the first stream (p50 / p99 / max: the
wait that coalescing and the hold on a wake's work add while writes keep coming), and
the loop thread's CPU time between two turns of a timer 2 ms on meanwhile (p99 / max:
how long the streams' work keeps the loop from anything else, a request's data say).
The counted steps are also given per stream and wake (the waker's wakes in the run): the
work each subscriber costs a wake, which the hold turns into latency or CPU. ``--share``
sets the waker's share (``FAN_OUT_SHARE`` by default; a large one: no hold), ``--streams
0`` measures the writes alone, ``--profile FILE`` writes a cProfile of the fan-out.

``--posters N`` (0: none): the writes per second in process, as ``bench/feed_latency.py``
measures them on a server but without its clients' processes: ``N`` closed-loop POSTs of a
book through the App's ASGI interface (the write on the blocking pool, as a server runs it)
for ``--post-seconds``, first before the streams are opened (0 subscribers), then while
every stream receives each write; for each: writes/s, each POST's latency (p50 / p99 /
max), the loop's thread CPU a write, and the loop's longest stretches between two turns
of a 2 ms timer (a POST's data read by the loop waits behind them). ``--send-cost US``:
each stream's send of a chunk also keeps the loop's thread busy for that many microseconds
(a server's send: uvicorn's ``send`` and its TCP write to a loopback socket took ~46 µs of
host A's loop a call under cProfile, against an ``asyncio.Queue``'s ~1 µs here).
``--post-pause MS``: each poster waits that long after each answer (a server's client
and HTTP round trip: 4 writers on a server wrote ~900 a second, 4.4 ms a write, against
~2,500 a second here), so that a wake carries as many changes as on a server.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import re
import resource
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from svcrest import App, StoreCollection
from svcrest.store import change_waker as waker_module
from svcrest.store.change_waker import change_waker

PATH = "/svc-json/shop/v1/books/changes"


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def books_site(folder: str, streams: int) -> tuple[App, StoreCollection]:
    """A site on a SQLite file in ``folder`` holding up to ``streams`` streams, with the
    books collection anyone may write (its change feed at :data:`PATH`) and one book."""
    app = App(store=str(Path(folder) / "site.db"), max_streams=streams)
    books = app.register_controller(
        StoreCollection(
            "shop/v1",
            "books",
            {"title": "book", "type": "object", "properties": {"title": {"type": "string"}}},
            write=lambda user, item: True,
        )
    )
    books.table.insert({"title": "warm"})
    return app, books


async def main(
    count: int,
    seconds: float,
    writes: int,
    every: float,
    share: float | None,
    profile: str | None,
    posters: int = 0,
    post_seconds: float = 4.0,
    send_cost: float = 0.0,
    post_pause: float = 0.0,
) -> None:
    folder = tempfile.mkdtemp(prefix="svcrest-idle-")
    app, books = books_site(folder, max(count, 1))
    if share is not None:
        change_waker(books.table.store).share = share
    received: list[asyncio.Queue[Any]] = []
    leave = asyncio.Event()
    if posters:
        await post_rate(app, received, posters, post_seconds, "0 streams", post_pause)

    tasks, held = await opened(app, count, received, leave, send_cost)
    began_cpu, began = cpu(), time.monotonic()
    await asyncio.sleep(seconds)
    idle_cpu = (cpu() - began_cpu) / (time.monotonic() - began)
    written = time.monotonic()
    await asyncio.to_thread(books.table.insert, {"title": "news"})
    for queue in received:
        while b"event: created" not in (await queue.get()).get("body", b""):
            pass
    reached = time.monotonic() - written
    report_idle(count, held, idle_cpu, reached)
    if posters:
        await post_rate(app, received, posters, post_seconds, f"{count} streams", post_pause)
    if writes > 0:
        per_write, waits = await fan_out(books, received, writes, every, profile)
        print(f"{writes} writes {every * 1000:.0f} ms apart to {count} streams:", end=" ")
        print(f"{per_write * 1000:.2f} ms of CPU a write")
        report_waits(waits)
    await left(leave, tasks)
    app.store.close()


async def left(leave: asyncio.Event, tasks: list[asyncio.Task[None]]) -> None:
    """The streams' clients leave: until their requests end."""
    leave.set()
    await asyncio.gather(*tasks)


async def opened(
    app: App,
    count: int,
    received: list[asyncio.Queue[Any]],
    leave: asyncio.Event,
    send_cost: float = 0.0,
) -> tuple[list[asyncio.Task[None]], int]:
    """``count`` streams of the feed on ``app`` (their messages in ``received``; they end
    once ``leave`` is set), past their first keep-alive: their tasks and the Python heap
    they hold."""

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
        send = queue.put if not send_cost else costly(queue, send_cost)
        tasks.append(asyncio.ensure_future(app(dict(scope), receiver(), send)))
    for queue in received:  # the head and the first keep-alive of each
        await queue.get()
        await queue.get()
    await asyncio.sleep(0.5)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return tasks, held


def costly(queue: asyncio.Queue[Any], seconds: float) -> Callable[[Any], Awaitable[None]]:
    """A stream's send into ``queue`` that keeps the thread busy ``seconds`` first."""

    async def send(message: Any) -> None:
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass
        await queue.put(message)

    return send


def report_idle(count: int, held: int, idle_cpu: float, reached: float) -> None:
    """Print the heap an idle stream holds, the CPU while idle and one write's reach."""
    if count:
        print(f"{count} idle streams: {held / count / 1024:.1f} KiB of Python heap each")
        print(f"CPU while idle: {idle_cpu * 100:.1f} % of one core")
        print(f"one write reached all {count} streams in {reached * 1000:.0f} ms")


def report_waits(waits: list[float]) -> None:
    """Print the p50, p99 and max of the seconds from a write to its event."""
    if not waits:
        return
    waits.sort()
    p50, p99 = waits[len(waits) // 2], waits[min(len(waits) - 1, len(waits) * 99 // 100)]
    print(f"write to the first stream: p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f}", end="")
    print(f" ms, max {waits[-1] * 1000:.0f} ms ({len(waits)} events)")


def report_loop(loop: float, counted: float, writes: int, wakes: int, streams: int) -> None:
    """Print the loop thread's CPU a write, the wakes' counted steps a write and a stream
    and wake."""
    print(
        f"the loop's thread: {loop / writes * 1000:.2f} ms a write (the clients' draining"
        f" apart), of which the wakes' counted steps {counted / writes * 1000:.2f} ms"
    )
    if streams and wakes:
        print(
            f"{wakes} wakes: the counted steps {counted / wakes / streams * 1e6:.2f} µs"
            " a stream a wake"
        )


async def profiled(write: Callable[[], None], profile: str | None) -> None:
    """Run ``write`` on a thread and wait for its last events (0.3 s), the loop's thread
    under cProfile meanwhile when ``profile`` names a file for it."""
    profiler = cProfile.Profile()
    if profile:
        profiler.enable()
    await asyncio.to_thread(write)
    await asyncio.sleep(0.3)  # the last write's events
    profiler.disable()
    if profile:
        profiler.dump_stats(profile)


async def probe(stop: asyncio.Event, lags: list[float]) -> None:
    """Until ``stop``: a timer 2 ms on, again and again; ``lags`` gets the CPU time of the
    loop's thread from one to the next (the longest: the most work a request's data read
    by the loop waits behind; the thread's waits for a core on a busy machine apart)."""
    while not stop.is_set():
        began = time.thread_time()
        await asyncio.sleep(0.002)
        lags.append(time.thread_time() - began)


def threads_cpu() -> dict[str, float]:
    """CPU seconds so far of this process's Python threads, by name (the numbered threads of
    one pool summed; Linux's ``/proc``, else nothing)."""
    import os
    import threading

    tick = os.sysconf("SC_CLK_TCK")
    found: dict[str, float] = {}
    for thread in threading.enumerate():
        try:
            with open(f"/proc/self/task/{thread.native_id}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        name = re.sub(r"_\d+$", "", thread.name)
        found[name] = found.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return found


def percentiles(values: list[float]) -> str:
    """p50 / p99 / max of ``values`` (seconds) in milliseconds."""
    if not values:
        return "-"
    values = sorted(values)
    p50, p99 = values[len(values) // 2], values[min(len(values) - 1, len(values) * 99 // 100)]
    return f"p50 {p50 * 1000:.2f}, p99 {p99 * 1000:.2f}, max {values[-1] * 1000:.2f} ms"


async def post_once(app: App, body: bytes) -> int:
    """POST a book through ``app``'s ASGI interface; the answer's status."""
    scope = {
        "type": "http",
        "method": "POST",
        "scheme": "http",
        "path": "/svc-json/shop/v1/books",
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 5001),
    }
    status = [0]

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Any) -> None:
        if message["type"] == "http.response.start":
            status[0] = message["status"]

    await app(scope, receive, send)
    return status[0]


async def post_rate(
    app: App,
    received: list[asyncio.Queue[Any]],
    posters: int,
    seconds: float,
    label: str,
    pause: float = 0.0,
) -> None:
    """``posters`` closed-loop POSTs for ``seconds`` while ``received``'s streams get each
    write (their queues drained as a client would): print writes/s, the POSTs' latency,
    the loop's thread CPU a write and the loop's stretches between two turns of a timer."""
    stop = asyncio.Event()
    latencies: list[float] = []
    failed = [0]
    drained = [0.0]
    end = time.monotonic() + seconds

    async def drain() -> None:
        while not stop.is_set():
            began = time.thread_time()
            for queue in received:
                while not queue.empty():
                    queue.get_nowait()
            drained[0] += time.thread_time() - began
            await asyncio.sleep(0.05)

    async def poster(number: int) -> None:
        body = b'{"title": "post %d"}' % number
        while time.monotonic() < end:
            began = time.perf_counter()
            status = await post_once(app, body)
            latencies.append(time.perf_counter() - began)
            if status != 201:
                failed[0] += 1
            if pause:
                await asyncio.sleep(pause)

    await post_once(app, b'{"title": "warm-up"}')
    lags: list[float] = []
    draining = asyncio.ensure_future(drain())
    probing = asyncio.ensure_future(probe(stop, lags))
    began, loop_began, cpu_began = time.monotonic(), time.thread_time(), cpu()
    threads_began = threads_cpu()
    waker = change_waker(app.store)
    wakes, counted = waker.wakes, waker.counted
    await asyncio.gather(*(poster(number) for number in range(posters)))
    elapsed = time.monotonic() - began
    threads = {n: v - threads_began.get(n, 0.0) for n, v in threads_cpu().items()}
    wakes, counted = waker.wakes - wakes, waker.counted - counted
    loop = time.thread_time() - loop_began - drained[0]
    spent = cpu() - cpu_began
    stop.set()
    await draining
    await probing
    done = len(latencies)
    print(
        f"{label}, {posters} posters for {seconds:.0f} s: {done / elapsed:.0f} writes/s"
        f" ({failed[0]} failed); POST latency {percentiles(latencies)}; CPU a write: the"
        f" process {spent / done * 1000:.2f} ms, the loop's thread {loop / done * 1000:.2f}"
        f" ms; the loop between two turns of a 2 ms timer {percentiles(lags)} of its CPU"
    )
    shares = ", ".join(f"{n} {v / elapsed * 100:.0f} %" for n, v in sorted(threads.items()) if v)
    print(f"  threads' CPU (of a core): {shares}")
    if received and wakes:
        # (a tree before the sized slices has neither: 64 streams a slice)
        pace = getattr(waker, "pace", [waker_module.WAKE_SLICE])[0]
        aim = getattr(waker_module, "SLICE_TIME", None)
        print(
            f"  {wakes / elapsed:.1f} wakes a second, each {counted / wakes * 1000:.1f} ms of"
            f" the loop's counted work, in slices of {pace} streams at the end (aimed at:"
            f" {'-' if aim is None else f'{aim * 1000:.0f} ms'})"
        )


async def fan_out(
    books: StoreCollection,
    received: list[asyncio.Queue[Any]],
    writes: int,
    every: float,
    profile: str | None = None,
) -> tuple[float, list[float]]:
    """CPU seconds of the process a write while ``writes`` writes reach every stream, and
    the seconds from each write's commit to its event on the first stream (``profile``: a
    file for a cProfile of the loop's thread meanwhile)."""
    stop = asyncio.Event()
    committed: dict[bytes, float] = {}
    waits: list[float] = []
    drained = [0.0]  # the loop's CPU seconds the clients' draining took

    async def drain() -> None:
        while not stop.is_set():
            began = time.thread_time()
            for queue in received[1:]:
                while not queue.empty():
                    queue.get_nowait()
            drained[0] += time.thread_time() - began
            await asyncio.sleep(0.05)

    async def watch() -> None:  # the first stream: each event's arrival
        while received:
            body = (await received[0].get()).get("body", b"")
            now = time.monotonic()
            for title in re.findall(rb'"title":"(book \d+)"', body):
                if title in committed:
                    waits.append(now - committed.pop(title))

    def write() -> None:
        for number in range(writes):
            committed[f"book {number}".encode()] = time.monotonic()  # (its commit: ~0.2 ms on)
            books.table.insert({"title": f"book {number}"})
            time.sleep(every)

    lags: list[float] = []
    draining = asyncio.ensure_future(drain())
    watching = asyncio.ensure_future(watch())
    probing = asyncio.ensure_future(probe(stop, lags))
    waker = change_waker(books.table.store)
    began, loop_began, counted, wakes = cpu(), time.thread_time(), waker.counted, waker.wakes
    await profiled(write, profile)
    spent = cpu() - began
    loop = time.thread_time() - loop_began - drained[0]
    counted, wakes = waker.counted - counted, waker.wakes - wakes
    report_loop(loop, counted, writes, wakes, len(received))
    await asyncio.sleep(0.9)  # (a wake may be held back up to 1 s)
    stop.set()
    watching.cancel()
    await draining
    await probing
    lags.sort()
    p99 = lags[min(len(lags) - 1, len(lags) * 99 // 100)]
    print(
        f"the loop's work between two turns of a timer 2 ms on: p99 {p99 * 1000:.1f} ms,"
        f" max {lags[-1] * 1000:.1f} ms of its thread's CPU"
    )
    return spent / writes, waits


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--writes", type=int, default=60, help="fan-out writes (0: none)")
    parser.add_argument("--every", type=float, default=0.05, help="seconds between writes")
    parser.add_argument("--uvloop", action="store_true", help="on uvloop (the servers' loop)")
    parser.add_argument("--share", type=float, help="the waker's share (large: no hold)")
    parser.add_argument("--profile", help="a file for a cProfile of the fan-out")
    parser.add_argument("--posters", type=int, default=0, help="closed-loop POSTs (0: none)")
    parser.add_argument("--post-seconds", type=float, default=4.0, help="each POST round")
    parser.add_argument("--send-cost", type=float, default=0.0, help="µs of CPU a send")
    parser.add_argument("--post-pause", type=float, default=0.0, help="ms after each POST")
    args = parser.parse_args()
    run = (args.streams, args.seconds, args.writes, args.every, args.share, args.profile)
    posting = (args.posters, args.post_seconds, args.send_cost / 1e6, args.post_pause / 1000)
    if args.uvloop:
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main(*run, *posting))
    else:
        asyncio.run(main(*run, *posting))
