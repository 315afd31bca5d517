"""Change feeds over real servers: commit-to-subscriber latency across two hosts, and writes
per second with 0, 100 and 1,000 SSE subscribers.

Usage (from the repository root, with the dev dependencies: ``httpx-sse``)::

    python bench/feed_latency.py [--store pg,sqlite] [--writes 200] [--pause 0.05]
                                 [--subscribers 0,100,1000] [--subscribers-on a|b]
                                 [--seconds 8] [--rounds 2] [--writers 4] [--postgres URL]
                                 [--parse] [--raw] [--httpx-writers] [--nice N]
                                 [--profile FILE] [--switch S]

Each host is ``svcrest serve --server uvicorn`` (one worker) with the books collection of the
end-to-end tests (``tests/e2e/store_site.py``, a ``StoreCollection`` anyone may write).

- ``pg``: two hosts (127.0.0.2 = A, 127.0.0.3 = B) on one PostgreSQL database (a
  throw-away server as the tests start theirs, ``tests/pg.py``, unless ``--postgres URL``).
  ``sqlite``: one host on a SQLite file (A = B).
- **latency**: one subscriber reads ``GET /books/changes`` as Server-Sent Events on host B
  (``httpx-sse``) while a writer POSTs ``--writes`` books on host A, one at a time, each
  waiting for its event and a random pause (up to ``--pause``, 50 ms) before the next; each
  book's title carries its send time. Reported:
  p50 / p99 / max of *event received - POST answered* (the commit is answered; negative when
  the event came first) and of *event received - POST sent*.
- **writes/s**: ``--writers`` connections POST books on host A in a loop for ``--seconds``
  (closed loops: each POSTs its next book once the last one is answered), from this
  process: httpx clients (one ``AsyncClient``, a keep-alive connection a writer), or with
  ``--raw`` *raw writers*, the least CPU a writer can take of the cores host A shares (it
  stands in for clients on other machines, as the subscribers do): on uvloop, each writer
  a keep-alive HTTP/1.1 connection of its own and an ``asyncio.Protocol``, the request's
  bytes prepared once (the same method, path, headers, Content-Length and JSON body as
  httpx sends), each answer framed in the bytes read (its head's end, then Content-Length,
  or a chunked body; uvicorn sends these 201s with Content-Length) and only its status
  line read; an answer other than 201 counts as a failed write, as with httpx, bytes that
  are no answer stop the run. ``--httpx-writers`` keeps the httpx writers with ``--raw``
  (the figures of ``--raw`` before the raw writers, to compare); the latency's writer
  stays httpx. Meanwhile ``--subscribers`` SSE streams of the same collection (each
  receiving every write) are held by one asyncio client process (a child of this one) on
  host ``--subscribers-on``;
  the configurations are interleaved over ``--rounds`` and the best round of each is kept.
  The subscriber process counts the events in the bytes it receives (``--parse``: each
  event parsed by httpx-sse, a client that took as much CPU as host A on these cores;
  ``--raw``: each stream read off its socket without an HTTP client, the least CPU the
  subscribers can take of the cores host A shares: on uvloop, each socket read by a
  ``BufferedProtocol`` straight into one preallocated buffer of its own, where the events
  are counted in place, no copy of the bytes in Python; a stand-in for clients that would
  run on other machines, whose CPU is reported apart; ``--nice 19``: the subscriber process
  runs at that niceness, on a core only when nothing else wants it, so that its CPU, which
  shares the 2 cores with the writers and host A, weighs less on the writes: not the
  default, whose figure is the honest one; the two side by side say how much of the
  ratio is the clients' share of the cores).
  The subscriber process counts on for 1.5 s after the writes (a wake is held up to 1 s),
  so that each round's line can give the *events lost*: every stream's events expected
  (each write's, the warm-up's included) less those counted (0: none lost).
  Reported: writes/s, the ratio to 0 subscribers (goal >= 0.9; and each round's writes/s
  over the same round's without subscribers, seconds apart, and their median: the steadier
  figure when the machine's load moves between rounds), each POST's latency
  (p50 / p99 / max, send to answer: the writers are closed loops, so writes/s is writers
  over latency), the events the subscribers received per second, the CPU each process
  used (a share of one core: the hosts, PostgreSQL's server when this script started it,
  the subscriber process, this one: *writer*;
  *host A loop*: host A's event loop's thread alone, its other threads apart),
  *the writers' µs of CPU a POST* (this process's CPU over the run, the writers' opening
  and the warm-up included, its reads of ``/proc`` not, over the POSTs made: httpx's were
  ~720-890 µs, more than host A's own CPU a write; the raw writers' ~40-57 µs, about
  half of it in the kernel: their sockets' sends and reads on the loopback)
  and host A's CPU milliseconds per write; and the server's side of the goal, from host A's
  own process CPU (``/proc``; the clients', which share this machine's cores, apart):
  *host A vs 0*, its CPU a write without subscribers over that with them, and *host A
  alone*, one core less the *fan-out* (its CPU beyond what its writes cost without
  subscribers): the ratio of the writes per second were host A alone on a core it keeps
  busy, the streams' work a second being bounded by the wakes, not by the writes.
  Each round's line also gives, with subscribers (``--raw``), a stream's socket reads a
  second (a read brings at most 64 KiB: a send of a wake's changes may take several), the
  *bursts* they come in (a read more than 50 ms after the last: host A's sends of that
  stream, about its wakes a second), its bytes a second and an event's; host A's loop thread
  in the kernel (*host A loop sys*: its sockets' sends) and each of host A's other threads
  (``python <id>``: the blocking pool's, the change waker's; user + system, and system).
  ``--switch S``: both hosts run with ``sys.setswitchinterval(S)`` (Python's is 5 ms: a
  blocking pool's thread waiting for the interpreter lock while the loop's thread runs a
  wake's steps waits that long).
  ``--profile FILE``: host A runs under cProfile (its event loop's thread). The servers' logs
  go to ``bench/out/logs/``.

The load average is printed with every figure: the benchmark shares its CPUs with PostgreSQL,
the servers and its clients, so a busy machine moves every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parent.parent
BOOKS = "/svc-json/shop/v1/books"
CHANGES = f"{BOOKS}/changes"
PLUGIN = ["--plugin", "tests.e2e.store_site:register", "--no-demo"]
SSE = {"Accept": "text/event-stream"}
#: Seconds without a read after which a stream's next read starts a new burst (a send of
#: host A: a wake, which come at least 50 ms apart; its bytes may take several reads).
_BURST_GAP = 0.05
#: The same for the gaps longer than a split send's (a wake's send that uvicorn's flow
#: control or the socket's buffer cut in two): about host A's wakes of the stream alone.
_WAKE_GAP = 0.3
#: Seconds the subscriber process reads on after the writes (the longest hold of a wake is
#: 1 s), before it counts what it received.
_DRAIN = 1.5


def raise_open_files() -> int:
    """Raise the soft limit of open files to the hard one (1,000 streams need more than the
    usual 1,024); inherited by the servers and the subscriber process."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def tree_cpu(root: int) -> float:
    """CPU seconds (user + system) of process ``root`` and its descendants so far; of this
    process alone for ``-1`` (its child, the subscriber process, is counted apart)."""
    if root == -1:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    ticks = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
            times[int(entry.name)] = (int(fields[11]) + int(fields[12])) / ticks
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += times.get(pid, 0.0)
        todo += [child for child, parent in parents.items() if parent == pid]
    return total


def thread_cpu(pid: int) -> float:
    """CPU seconds (user + system) of the main thread of process ``pid`` (a server's
    event loop's thread), from ``/proc``."""
    return sum(thread_times(pid))


def thread_times(pid: int) -> tuple[float, float]:
    """CPU seconds in user and in system (kernel) mode of the main thread of process
    ``pid``, from ``/proc``."""
    try:
        fields = Path(f"/proc/{pid}/task/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / ticks, int(fields[12]) / ticks


def threads_cpu(pid: int) -> dict[str, float]:
    """CPU seconds (user + system) of each thread of process ``pid`` but its main one,
    by the thread's name and id (``python 1234``: Python 3.11 names no thread), from
    ``/proc``; ``<name> sys``: their system (kernel) part."""
    ticks = os.sysconf("SC_CLK_TCK")
    found: dict[str, float] = {}
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return found
    for task in tasks:
        if task.name == str(pid):
            continue
        try:
            head, rest = (task / "stat").read_text().rsplit(")", 1)
        except OSError:
            continue
        name = f"{head.split('(', 1)[1]} {task.name}"
        fields = rest.split()
        user, kernel = int(fields[11]) / ticks, int(fields[12]) / ticks
        found[name] = found.get(name, 0.0) + user + kernel
        found[f"{name} sys"] = found.get(f"{name} sys", 0.0) + kernel
    return found


def free_port(address: str) -> int:
    with socket.socket() as sock:
        sock.bind((address, 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for(address: str, port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server on {address} exited; its log: {log}")
        try:
            with socket.create_connection((address, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{address}:{port} did not start within 60 s; its log: {log}")


@contextlib.contextmanager
def serving(
    db: str,
    addresses: list[str],
    logs: Path,
    streams: int,
    profile: str | None = None,
    switch: float | None = None,
) -> Iterator[list[tuple[str, int]]]:
    """``svcrest serve --server uvicorn`` on each address, one site on ``db``; their URLs
    and process ids. ``profile``: a file for host A's cProfile statistics (written when it
    stops); ``switch``: the servers' interpreter switch interval in seconds (None: 5 ms,
    Python's), set by a ``sitecustomize`` module of ``logs``'s."""
    processes: list[tuple[str, int, subprocess.Popen[bytes], Path]] = []
    paths = [str(ROOT), str(ROOT / "src")]
    if switch is not None:
        custom = logs / "switch"
        custom.mkdir(exist_ok=True)
        text = f"import sys\n\nsys.setswitchinterval({switch!r})\n"
        (custom / "sitecustomize.py").write_text(text)
        paths.insert(0, str(custom))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    options = ["--server", "uvicorn", "--interface", "asgi", "--db", db, *PLUGIN]
    # each stream also counts against --max-concurrency (uvicorn: 503 past it)
    options += ["--max-streams", str(streams), "--max-concurrency", str(streams + 100)]
    try:
        for number, address in enumerate(addresses):
            port = free_port(address)
            log = logs / f"feed-{address}.log"
            command = [sys.executable, "-m", "svcrest", "serve", "--host", address]
            if number == 0 and profile:  # host A under cProfile (its event loop's thread)
                command[1:1] = ["-m", "cProfile", "-o", profile]
            with log.open("wb") as out:
                process = subprocess.Popen(
                    [*command, "--port", str(port), *options],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=ROOT,
                )
            processes.append((address, port, process, log))
        for address, port, process, log in processes:
            wait_for(address, port, process, log)
        yield [(f"http://{address}:{port}", p.pid) for address, port, p, _l in processes]
    finally:
        for number, (_a, _port, process, _l) in enumerate(processes):
            # (SIGINT under the profiler: uvicorn raises the signal again once stopped,
            # which SIGTERM would end the process by before cProfile writes its file)
            process.send_signal(signal.SIGINT if number == 0 and profile else signal.SIGTERM)
        for _a, _port, process, _l in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile of ``values`` (sorted here)."""
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(fraction * len(ordered) + 0.5) - 1))
    return ordered[rank]


def spread(values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return (
        f"p50 {percentile(ms, 0.5):.1f} ms, p99 {percentile(ms, 0.99):.1f} ms, max {max(ms):.1f} ms"
    )


@dataclass
class Latency:
    after_answer: list[float]
    after_send: list[float]
    lost: int


async def latency(writer: str, reader: str, writes: int, pause: float) -> Latency:
    """One SSE subscriber on ``reader``; ``writes`` POSTs on ``writer``, one at a time,
    each after a random pause of up to ``pause`` seconds."""
    import httpx
    from httpx_sse import aconnect_sse

    arrived: asyncio.Queue[tuple[str, float]] = asyncio.Queue()
    opened = asyncio.Event()

    async def subscribe(client: httpx.AsyncClient) -> None:
        async with aconnect_sse(client, "GET", CHANGES) as source:
            if source.response.status_code != 200:
                raise SystemExit(f"the subscriber got {source.response.status_code}")
            opened.set()
            async for event in source.aiter_sse():
                if event.event == "created":
                    arrived.put_nowait((event.json()["title"], time.monotonic()))

    result = Latency([], [], 0)
    async with (
        httpx.AsyncClient(base_url=reader, timeout=None) as b,
        httpx.AsyncClient(base_url=writer, timeout=30) as a,
    ):
        task = asyncio.create_task(subscribe(b))
        await asyncio.wait_for(opened.wait(), 10)
        for _ in range(5):  # warm-up writes (and their events) not counted
            await a.post(BOOKS, json={"title": "warm-up"})
        await asyncio.sleep(0.5)
        while not arrived.empty():
            arrived.get_nowait()
        for number in range(writes):
            # a random pause first: writes back to back would fall at one phase of the
            # servers' 20 ms change poll, and every latency would be the same
            await asyncio.sleep(random.uniform(0, pause))
            sent = time.monotonic()
            title = f"{number} {sent:.6f}"
            answer = await a.post(BOOKS, json={"title": title})
            answered = time.monotonic()
            if answer.status_code != 201:
                raise SystemExit(f"a write got {answer.status_code}: {answer.text}")
            try:
                while True:
                    got, received = await asyncio.wait_for(arrived.get(), 5)
                    if got == title:
                        break
            except TimeoutError:
                result.lost += 1
                continue
            # the title carries its send time: the figure does not depend on this loop's
            # bookkeeping (it equals ``sent``)
            result.after_send.append(received - float(got.split()[1]))
            result.after_answer.append(received - answered)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return result


# The subscriber process ---------------------------------------------------------------


#: An event's first bytes in a stream (each event has one ``event:`` line after its ``id:``).
_EVENT = b"\nevent: "
#: The bytes a read may end within an event's first bytes: kept for the next read.
_CARRY = len(_EVENT) - 1
#: Bytes counted in one call (each counted 7 bytes into the next: an event name across two
#: spans counts once).
_SPAN = 28_000
#: Bytes a stream's socket is read into at once (a wake's send of ~600 events is ~150 kB).
_READ_SIZE = 1 << 18
#: The socket's receive buffer asked for (the kernel doubles it, up to ``rmem_max``).
_RCVBUF = 1 << 20


class RawStream(asyncio.BufferedProtocol):
    """An SSE stream of the changes read off its socket into one preallocated buffer (no
    HTTP client, no copy of what it reads: the kernel writes into the buffer and the events
    are counted there), its events and reads added to ``received`` and ``chunks``."""

    def __init__(
        self,
        request: bytes,
        opened: Callable[[], None],
        received: list[int],
        chunks: list[int],
        ended: asyncio.Future[int],
    ) -> None:
        self.request, self.opened, self.ended = request, opened, ended
        self.received, self.chunks = received, chunks
        self.buffer = bytearray(_READ_SIZE + _CARRY)
        whole = memoryview(self.buffer)
        self.views = [whole[start:] for start in range(_CARRY + 1)]
        self.start = 0  # where the next read lands: after the bytes carried or the head's
        self.status = 0  # 0 until the head is read
        self.last = 0.0
        self.transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        # (uvloop's transports are not registered as asyncio's classes)
        cast(asyncio.Transport, transport).write(self.request)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self.status:
            return self.views[self.start]
        return memoryview(self.buffer)[self.start :]

    def buffer_updated(self, nbytes: int) -> None:
        buffer, end, begin = self.buffer, self.start + nbytes, 0
        if not self.status:  # the head (and maybe the first events after it)
            head = buffer.find(b"\r\n\r\n", 0, end)
            if head < 0:
                self.start = end
                return
            self.status = int(bytes(buffer[: buffer.find(b"\r\n")]).split(b" ", 2)[1])
            if self.status != 200:
                self.end()
                return
            self.opened()
            begin = head + 4
            nbytes = end - begin
        chunks = self.chunks
        # PERF: counted in the buffer the kernel wrote (``bytearray.count`` with bounds: no
        # copy), one read a wake's send when the socket's buffer holds it (SO_RCVBUF), in
        # spans under 30,000 bytes: CPython 3.11 searches a longer one with its two-way
        # algorithm, ~1-2.3 GB/s against ~2.5-3.4 in spans; the count took ~80 % of this
        # process's CPU (perf)
        count, events = buffer.count, 0
        for span in range(begin, end, _SPAN):
            events += count(_EVENT, span, min(end, span + _SPAN + _CARRY))
        self.received[0] += events
        chunks[0] += 1
        chunks[1] += nbytes
        now = time.monotonic()
        chunks[2] += now - self.last > _BURST_GAP
        chunks[3] += now - self.last > _WAKE_GAP
        self.last = now
        keep = min(_CARRY, end - begin)
        buffer[:keep] = buffer[end - keep : end]
        self.start = keep

    def end(self) -> None:
        if self.transport is not None:
            self.transport.close()
        if not self.ended.done():
            self.ended.set_result(self.status)

    def eof_received(self) -> bool:
        self.end()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.ended.done():
            self.ended.set_result(self.status)


async def raw_stream(
    url: str, opened: Callable[[], None], received: list[int], chunks: list[int]
) -> int:
    """Read an SSE stream of the changes on ``url`` over a socket of its own
    (:class:`RawStream`), until it ends: ``opened`` is called once the answer is 200; its
    events and reads are added to ``received`` and ``chunks`` as they come. The answer's
    status."""
    address = url.split("://", 1)[1].rstrip("/")
    host, port = address.rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RCVBUF)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    try:
        await loop.sock_connect(sock, (host, int(port)))
    except BaseException:
        sock.close()
        raise
    head = f"GET {CHANGES} HTTP/1.1\r\nHost: {address}\r\nAccept: text/event-stream\r\n\r\n"
    ended: asyncio.Future[int] = loop.create_future()
    transport, _stream = await loop.create_connection(
        lambda: RawStream(head.encode(), opened, received, chunks, ended), sock=sock
    )
    try:
        return await ended
    finally:
        transport.close()


async def one_raw(
    url: str,
    opened: tuple[list[int], int, asyncio.Event],
    received: list[int],
    chunks: list[int],
    refused: list[int],
) -> None:
    """One stream of :func:`hold_streams` read by :func:`raw_stream` (opened again after a
    503), its events and reads added to ``received`` and ``chunks``; ``opened``: the count
    of streams open, how many there will be, and the event set when all are."""
    ready, count, all_open = opened

    def one_more() -> None:
        ready[0] += 1
        if ready[0] == count:
            all_open.set()

    status = 0
    for _attempt in range(50):
        status = await raw_stream(url, one_more, received, chunks)
        if status != 503:
            break
        refused[0] += 1
        await asyncio.sleep(random.uniform(0.1, 0.5))
    if status != 200:
        print(f"stream refused: {status}", flush=True)
        os._exit(1)


async def hold_streams(url: str, count: int, parse: bool, raw: bool = False) -> None:
    """``count`` SSE streams of the changes on ``url``; prints ``ready`` once every one is
    open, counts the events they receive (``parse``: each parsed by httpx-sse; ``raw``:
    read off their sockets without an HTTP client), prints the count when stdin closes."""
    import httpx
    from httpx_sse import EventSource

    received = [0]
    # the reads of the streams' sockets, their bytes, their bursts, their longer pauses
    chunks = [0, 0, 0, 0]
    ready = [0]
    refused = [0]
    all_open = asyncio.Event()
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)

    async def one(client: httpx.AsyncClient) -> None:
        for _attempt in range(50):
            async with client.stream("GET", CHANGES, headers=SSE) as response:
                status = response.status_code
                if status == 200:
                    ready[0] += 1
                    if ready[0] == count:
                        all_open.set()
                    # PERF: the events counted in the bytes (one `event:` line each), not
                    # parsed one by one: 1,000 streams receive ~100,000 events a second,
                    # which httpx-sse's parser took a third of a core for, on the cores
                    # host A shares (`--parse` keeps that client).
                    carry = b""
                    if parse:
                        async for event in EventSource(response).aiter_sse():
                            received[0] += bool(event.event)
                        return
                    async for data in response.aiter_raw():
                        data = carry + data
                        received[0] += data.count(b"\nevent: ")
                        chunks[0] += 1
                        chunks[1] += len(data) - len(carry)
                        carry = data[-7:]
                    return
                body = (await response.aread()).decode(errors="replace")
            if status != 503:
                break
            # 503 (svc_store_busy: the pool was busy with the other streams opening; or
            # svc_streams_busy while the last run's streams close): again, as a client would
            refused[0] += 1
            await asyncio.sleep(random.uniform(0.1, 0.5))
        print(f"stream refused: {status} {body[:300]}", flush=True)
        os._exit(1)

    async with httpx.AsyncClient(base_url=url, timeout=None, limits=limits) as client:
        tasks: list[asyncio.Task[None]] = []
        for start in range(0, count, 50):  # opened fifty at a time
            tasks += [
                asyncio.create_task(
                    one_raw(url, (ready, count, all_open), received, chunks, refused)
                    if raw
                    else one(client)
                )
                for _ in range(start, min(count, start + 50))
            ]
            while ready[0] < len(tasks):
                await asyncio.sleep(0.01)
        await asyncio.wait_for(all_open.wait(), 60)
        print(f"ready {refused[0]}", flush=True)
        await asyncio.to_thread(sys.stdin.read)  # until the parent closes it
        print(received[0], *chunks, flush=True)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@dataclass
class Held:
    """The subscriber process: its id (0 without one) and, after the block, its events."""

    pid: int
    received: int = 0
    chunks: int = 0  # the reads of the streams' bytes (without --parse): ~their sends
    bytes: int = 0  # the bytes they read (without --parse)
    bursts: int = 0  # their reads after a gap (--raw): host A's sends, its wakes
    spells: int = 0  # their reads after a longer gap (--raw): the wakes, a send split or not
    refused: int = 0  # 503s while opening the streams (each opened again)
    cpu: float = 0.0  # its CPU seconds so far, after the writes and the drain


@contextlib.contextmanager
def subscribers(
    url: str, count: int, parse: bool = False, raw: bool = False, nice: int = 0
) -> Iterator[Held]:
    """A child process holding ``count`` streams of the changes on ``url`` (``nice``: its
    niceness, 0 as this one's)."""
    if count == 0:
        yield Held(0)
        return
    command = [sys.executable, __file__, "--hold", url, "--streams", str(count)]
    command = ["nice", "-n", str(nice), *command] if nice else command
    command += ["--parse"] if parse else []
    command += ["--raw"] if raw else []
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stdout is not None
    try:
        line = child.stdout.readline().strip()
        if not line.startswith("ready"):
            raise SystemExit(f"the subscriber process did not open its streams: {line!r}")
        held = Held(child.pid, refused=int(line.split()[1]))
        yield held
        # the events of the last writes arrive up to a held wake later (~1 s): waited for,
        # so that every write's event is counted (``lost`` below: none)
        time.sleep(_DRAIN)
        held.cpu = tree_cpu(child.pid)  # (its reading of the last events included)
        child.stdin.close()
        counts = [*child.stdout.readline().split(), "0", "0", "0", "0", "0"][:5]
        held.received, held.chunks, held.bytes, held.bursts, held.spells = map(int, counts)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


# Writes per second -------------------------------------------------------------------


#: Most bytes an answer's head may take before the raw writers call it broken.
_HEAD_LIMIT = 1 << 16


def _header(head: bytes, name: bytes) -> bytes | None:
    """The value of header ``name`` (lower case) in an answer's lowered ``head``; None when
    it is absent."""
    at = head.find(b"\r\n" + name + b":")
    if at < 0:
        return None
    at += len(name) + 3
    stop = head.find(b"\r\n", at)
    return head[at : stop if stop >= 0 else len(head)].strip()


def _chunked_end(buffer: bytes | bytearray, at: int) -> int | None:
    """The index just past a chunked body starting at ``at`` (its last chunk and trailers
    included); None while it is incomplete."""
    while True:
        line = buffer.find(b"\r\n", at)
        if line < 0:
            return None
        size = int(bytes(buffer[at:line]).split(b";", 1)[0].strip(), 16)
        at = line + 2
        if size == 0:
            break
        at += size + 2
        if at > len(buffer):
            return None
        if buffer[at - 2 : at] != b"\r\n":
            raise ValueError("a chunk without its CRLF")
    while True:  # the trailers, up to an empty line
        line = buffer.find(b"\r\n", at)
        if line < 0:
            return None
        if line == at:
            return at + 2
        at = line + 2


def parse_answer(buffer: bytes | bytearray) -> tuple[int, int, bool] | None:
    """The first whole HTTP/1.1 answer at the start of ``buffer``: its status, the index just
    past it (its body framed by Content-Length or chunked; none for 1xx, 204 and 304) and
    whether the server closes the connection after it; None while it is incomplete.
    ``ValueError`` for bytes that are no answer, or one whose end cannot be told on a kept
    connection (neither length nor chunked)."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        if len(buffer) > _HEAD_LIMIT:
            raise ValueError(f"no answer's head in {len(buffer)} bytes")
        return None
    head = bytes(buffer[:end]).lower()
    if head[:9] not in (b"http/1.1 ", b"http/1.0 ") or not head[9:12].isdigit():
        raise ValueError(f"not an answer: {bytes(buffer[:40])!r}")
    status = int(head[9:12])
    connection = _header(head, b"connection")
    close = connection == b"close" if head[5:8] == b"1.1" else connection != b"keep-alive"
    body = end + 4
    if status < 200 or status in (204, 304):
        return status, body, close
    coding = _header(head, b"transfer-encoding")
    if coding is not None and coding.endswith(b"chunked"):
        stop = _chunked_end(buffer, body)
        return None if stop is None else (status, stop, close)
    length = _header(head, b"content-length")
    if length is None or not length.isdigit():
        raise ValueError(f"an answer {status} without a length on a kept connection")
    stop = body + int(length)
    return (status, stop, close) if stop <= len(buffer) else None


class RawWriter(asyncio.Protocol):
    """One writer's keep-alive HTTP/1.1 connection without an HTTP client: :meth:`post`
    writes the request's prepared bytes, and the answer's status resolves its future once
    :func:`parse_answer` finds the answer whole in the bytes read (1xx answers skipped)."""

    def __init__(self, request: bytes) -> None:
        self.request = request
        self.buffer = bytearray()
        self.waiter: asyncio.Future[int] | None = None
        self.transport: asyncio.Transport | None = None
        self.closing = False  # the last answer said the server closes the connection

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports are not registered as asyncio's classes)
        self.transport = cast(asyncio.Transport, transport)

    def post(self) -> asyncio.Future[int]:
        """Send the request; a future of its answer's status."""
        if self.transport is None or self.closing or self.waiter is not None:
            raise RuntimeError("a writer's connection is closed or busy")
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(self.request)
        return self.waiter

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        try:
            while (found := parse_answer(buffer)) is not None:
                status, used, self.closing = found
                del buffer[:used]
                if status < 200:
                    continue
                waiter, self.waiter = self.waiter, None
                if waiter is None:
                    raise ValueError(f"an answer {status} to no request")
                if not waiter.done():
                    waiter.set_result(status)
        except ValueError as error:
            self.fail(error)

    def fail(self, error: Exception) -> None:
        """End the connection; its pending request gets ``error``."""
        self.closing = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(error)
        self.waiter = None
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        if self.waiter is not None:
            self.fail(ConnectionError("the server closed a writer's connection mid-request"))


def post_request(url: str) -> bytes:
    """The bytes of the writers' POST on ``url``: the method, path and headers httpx sends
    for ``post(BOOKS, json={"title": "rate"})`` (its Content-Length, keep-alive) and the
    same JSON body, prepared once."""
    import httpx

    with httpx.Client(base_url=url) as client:
        request = client.build_request("POST", BOOKS, json={"title": "rate"})
    lines = [b"POST " + request.url.raw_path + b" HTTP/1.1"]
    lines += [name + b": " + value for name, value in request.headers.raw]
    return b"\r\n".join([*lines, b"", b""]) + request.content


async def open_writer(url: str, request: bytes) -> RawWriter:
    """A :class:`RawWriter` connected to ``url`` (``http://host:port``)."""
    host, port = url.split("://", 1)[1].rstrip("/").rsplit(":", 1)
    loop = asyncio.get_running_loop()
    _transport, writer = await loop.create_connection(lambda: RawWriter(request), host, int(port))
    return writer


async def raw_write_rate(
    url: str,
    request: bytes,
    writers: int,
    seconds: float,
    latencies: list[float] | None = None,
) -> tuple[float, int, int]:
    """:func:`write_rate` without an HTTP client: each writer a :class:`RawWriter` of its
    own posting ``request`` (:func:`post_request`'s bytes) and awaiting its status, a new
    connection only when the server closes one."""
    done = [0, 0]
    end = time.monotonic() + seconds
    took = latencies if latencies is not None else []
    connections = [await open_writer(url, request) for _ in range(writers)]

    # PERF: a coroutine a writer awaiting a future a POST, not the next POST written from
    # ``data_received``: that callback loop took 12.7 µs of user CPU a POST against this
    # one's 15.7-18.2 (SQLite, 4 writers, ~2,500 POSTs a second, 06:04 UTC), ~0.4 % of a
    # core at host A's 1,000 writes a second with PostgreSQL: the plainer loop kept (its
    # reconnection after a closing answer is two lines)
    async def loop(connection: RawWriter) -> None:
        while time.monotonic() < end:
            if connection.closing:  # the server ends it after its last answer
                if connection.transport is not None:
                    connection.transport.close()
                connection = await open_writer(url, request)
            began = time.perf_counter()
            status = await connection.post()
            took.append(time.perf_counter() - began)
            done[0 if status == 201 else 1] += 1
        if connection.transport is not None:
            connection.transport.close()

    warm = await connections[0].post() == 201
    began = time.monotonic()
    try:
        await asyncio.gather(*(loop(connection) for connection in connections))
    except (ConnectionError, ValueError) as error:
        raise SystemExit(f"a raw writer's connection failed: {error}") from error
    elapsed = time.monotonic() - began
    return done[0] / elapsed, done[1], done[0] + warm


async def write_rate(
    url: str, writers: int, seconds: float, latencies: list[float] | None = None
) -> tuple[float, int, int]:
    """``writers`` connections POSTing for ``seconds``: writes per second, failures, and
    the writes made, a warm-up's first (``latencies`` gets each POST's seconds from its send
    to its answer)."""
    import httpx

    done = [0, 0]
    end = time.monotonic() + seconds
    took = latencies if latencies is not None else []

    async def loop(client: httpx.AsyncClient) -> None:
        while time.monotonic() < end:
            began = time.perf_counter()
            answer = await client.post(BOOKS, json={"title": "rate"})
            took.append(time.perf_counter() - began)
            done[0 if answer.status_code == 201 else 1] += 1

    limits = httpx.Limits(max_connections=writers)
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as client:
        warm = (await client.post(BOOKS, json={"title": "warm-up"})).status_code == 201
        began = time.monotonic()
        await asyncio.gather(*(loop(client) for _ in range(writers)))
        elapsed = time.monotonic() - began
    return done[0] / elapsed, done[1], done[0] + warm


def run_writers(
    options: argparse.Namespace, url: str, request: bytes, latencies: list[float]
) -> tuple[float, int, int]:
    """One writes/s run on ``url`` (:func:`raw_write_rate` on uvloop with
    ``options.raw_writers``, else :func:`write_rate`, httpx on asyncio's loop)."""
    if options.raw_writers:
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(
                raw_write_rate(url, request, options.writers, options.seconds, latencies)
            )
    return asyncio.run(write_rate(url, options.writers, options.seconds, latencies))


@dataclass
class Rate:
    subscribers: int
    rounds: list[float] = field(default_factory=list)
    events_per_s: float = 0.0
    client_cost: float = 0.0  # the subscriber process's CPU µs an event it counted
    writer_cost: float = 0.0  # the writers' process's CPU µs a POST it made
    sends_per_s: float = 0.0  # a stream's reads a second (~host A's wakes of it)
    bytes_per_s: float = 0.0  # a stream's bytes received a second
    posts: str = ""  # the POSTs' latency in the best round (p50 / p99 / max)
    cpu: dict[str, float] = field(default_factory=dict)  # share of one core, best round
    load: str = ""


def rates(
    options: argparse.Namespace, writer: str, holder: str, pids: dict[str, int]
) -> list[Rate]:
    """Writes/s on ``writer`` with each subscriber count on ``holder``, interleaved; the CPU
    of each process (``pids``: name to id; their descendants count) in each run."""
    found = {count: Rate(count) for count in options.subscribers}
    request = post_request(writer)  # (the raw writers' bytes, prepared once)
    for _ in range(options.rounds):
        for count in options.subscribers:
            held_by = subscribers(holder, count, options.parse, options.raw, options.nice)
            with held_by as held:
                watched = {**pids, "subscribers": held.pid}
                before = {name: tree_cpu(pid) for name, pid in watched.items() if pid}
                loop_before = thread_times(pids["host A"])
                threads_before = threads_cpu(pids["host A"])
                began = time.monotonic()
                took: list[float] = []
                # (this process's CPU read next to its writes: its reads of /proc apart)
                own = tree_cpu(-1)
                rate, failed, made = run_writers(options, writer, request, took)
                own = tree_cpu(-1) - own
                elapsed = time.monotonic() - began
                used = {n: (tree_cpu(watched[n]) - b) / elapsed for n, b in before.items()}
                used["writer"] = own / elapsed
                loop_user, loop_sys = thread_times(pids["host A"])
                used["host A loop"] = (loop_user + loop_sys - sum(loop_before)) / elapsed
                # the loop's thread in the kernel (its sockets' sends): grows with the bytes
                used["host A loop sys"] = (loop_sys - loop_before[1]) / elapsed
                threads = threads_cpu(pids["host A"])
                others = {
                    name: (seconds - threads_before.get(name, 0.0)) / elapsed
                    for name, seconds in threads.items()
                }
            if failed:
                print(f"  {failed} writes failed with {count} subscribers")
            # the subscriber process's CPU an event it counted (its reading's own cost; the
            # events read in the drain and their CPU both counted)
            reading = held.cpu - before.get("subscribers", held.cpu)
            client_cost = reading / max(held.received, 1) * 1e6
            # this process's CPU a POST (the warm-up's and the failed ones included): the
            # writers' own cost, the connections' opening and the loop's start in it
            writer_cost = own / max(made + failed, 1) * 1e6
            entry = found[count]
            entry.rounds.append(rate)
            if rate == max(entry.rounds):
                entry.events_per_s = held.received / elapsed
                entry.client_cost = client_cost
                entry.writer_cost = writer_cost
                entry.sends_per_s = held.chunks / elapsed / count if count else 0.0
                entry.bytes_per_s = held.bytes / elapsed / count if count else 0.0
                entry.cpu = used
                entry.load = load()
                entry.posts = spread(took) if took else "-"
            cpu = ", ".join(f"{n} {v * 100:.0f} %" for n, v in used.items())
            posts = spread(took) if took else "-"
            threads_line = ", ".join(
                f"{n} {v * 100:.1f} %" for n, v in sorted(others.items()) if v >= 0.005
            )
            streamed = (
                f"; a stream {held.chunks / elapsed / count:.1f} reads/s"
                f" in {held.bursts / elapsed / count:.2f} bursts/s"
                f" ({held.spells / elapsed / count:.2f} after {_WAKE_GAP:.1f} s without),"
                f" {held.bytes / elapsed / count / 1000:.0f} kB/s,"
                f" {held.bytes / max(held.received, 1):.0f} B an event,"
                f" events lost {count * made - held.received};"
                f" the subscriber process {client_cost:.3f} µs of CPU an event"
                if count and held.bytes
                else ""
            )
            print(
                f"  {count:>5} subscribers: {rate:7.1f} writes/s; POST {posts}; CPU {cpu};"
                f" the writers {writer_cost:.1f} µs of CPU a POST;"
                f" load {load()}; 503s while opening: {held.refused}{streamed};"
                f" host A's other threads: {threads_line}",
                flush=True,
            )
    return list(found.values())


def report(
    name: str, where: str, lat: Latency, found: list[Rate], began_load: str, writers: str
) -> None:
    print(f"\n## {name}\n")
    print(f"load average at the start: {began_load}; now: {load()}; the writers: {writers}")
    print(f"latency over {len(lat.after_answer)} writes ({lat.lost} events lost):")
    print(f"  event received - POST answered: {spread(lat.after_answer)}")
    print(f"  event received - POST sent:     {spread(lat.after_send)}")
    print(f"\nwrites/s on host A, subscribers on {where} (best of each's rounds; CPU: share")
    print("of one core in that round, a process with its children):\n")
    names = sorted({n for entry in found for n in entry.cpu})
    print(
        "| subscribers | writes/s (best) | each round | vs 0 | events received/s |"
        " reads a stream/s | kB a stream/s | "
        + " | ".join(f"CPU {n}" for n in names)
        + " | writers µs/POST | host A CPU ms/write | host A vs 0 | fan-out | host A alone"
        + " | load |"
    )
    print(
        "| ---: | ---: | --- | ---: | ---: | ---: | ---: | "
        + "---: | " * (len(names) + 5)
        + "--- |"
    )
    base = max(found[0].rounds) if found and found[0].subscribers == 0 else None
    base_cost = cost_per_write(found[0]) if base else 0.0
    for entry in found:
        best = max(entry.rounds)
        ratio = f"{best / base:.2f}" if base else "-"
        each = ", ".join(f"{r:.0f}" for r in entry.rounds)
        cpu = " | ".join(f"{entry.cpu[n] * 100:.0f} %" if n in entry.cpu else "-" for n in names)
        per_write = cost_per_write(entry)
        own = f"{base_cost / per_write:.2f}" if base_cost and per_write else "-"
        # host A's CPU beyond its writes' own (a share of one core), and what it leaves
        fan_out = entry.cpu.get("host A", 0.0) - best * base_cost / 1000 if base_cost else 0.0
        alone = f"{1 - fan_out:.2f}" if base_cost else "-"
        print(
            f"| {entry.subscribers:,} | {best:.1f} | {each} | {ratio} |"
            f" {entry.events_per_s:,.0f} | {entry.sends_per_s:.1f} |"
            f" {entry.bytes_per_s / 1000:.0f} | {cpu} | {entry.writer_cost:.1f} |"
            f" {per_write:.2f} | {own} |"
            f" {fan_out * 100:.1f} % | {alone} | {entry.load} |"
        )
    print(
        "\nhost A vs 0: host A's own CPU a write without subscribers over that with them (its"
        "\nprocess and children, from /proc; the clients' CPU is not in it). fan-out: host A's"
        "\nCPU beyond what its writes cost without subscribers (a share of one core); host A"
        "\nalone: 1 - fan-out, the ratio of the writes/s were host A alone on a core it keeps"
        "\nbusy, its streams' work a second being bounded by its wakes, not by the writes."
    )
    if base:
        # PERF: on a busy machine the load moves from round to round more than the
        # subscribers move the writes: each round against the same round's without any
        # (seconds apart) is the steadier ratio
        for entry in found[1:]:
            paired = [r / z for r, z in zip(entry.rounds, found[0].rounds, strict=False) if z]
            print(
                f"{entry.subscribers:,} subscribers, each round over the same round's 0: "
                + ", ".join(f"{r:.2f}" for r in paired)
                + f" (median {statistics.median(paired):.2f})"
            )
    for entry in found:
        if entry.subscribers and entry.client_cost:
            print(
                f"the subscriber process, {entry.subscribers:,} streams:"
                f" {entry.client_cost:.3f} µs of CPU an event received (best round)"
            )
    for entry in found:
        print(
            f"the writers ({writers}), {entry.subscribers:,} subscribers:"
            f" {entry.writer_cost:.1f} µs of CPU a POST (best round)"
        )
    print("\nPOST latency (send to answer, the writers' side) in each best round:")
    for entry in found:
        print(f"  {entry.subscribers:>5} subscribers: {entry.posts}")


def cost_per_write(entry: Rate) -> float:
    """Host A's CPU milliseconds a write in ``entry``'s best round."""
    best = max(entry.rounds)
    return entry.cpu.get("host A", 0.0) * 1000 / best if best else 0.0


def postmaster(server: Any) -> int:
    """The process id of a throw-away PostgreSQL server (0 when none)."""
    if server is None:
        return 0
    return int((server.data / "postmaster.pid").read_text().split()[0])


def run_store(options: argparse.Namespace, store: str, logs: Path, tmp: Path) -> None:
    began_load = load()
    streams = 2 * max(options.subscribers) + 100  # room for streams still closing
    server: Any = None
    if store == "pg":
        db = options.postgres
        if db is None:
            sys.path.insert(0, str(ROOT))
            from tests.pg import PostgresServer

            server = PostgresServer()
            db = server.new_database()
        addresses = ["127.0.0.2", "127.0.0.3"]
    else:
        db = str(tmp / "feed.db")
        addresses = ["127.0.0.1"]
    try:
        with serving(db, addresses, logs, streams, options.profile, options.switch) as hosts:
            (a, a_pid), (b, b_pid) = hosts[0], hosts[-1]
            print(f"\n{store}: host A {a}, host B {b} (load {load()})", flush=True)
            lat = asyncio.run(latency(a, b, options.writes, options.pause))
            holder = b if options.subscribers_on == "b" else a
            pids = {"host A": a_pid, "postgres": postmaster(server)}
            if b_pid != a_pid:
                pids["host B"] = b_pid
            found = rates(options, a, holder, pids)
    finally:
        if server is not None:
            server.stop()
    where = "host B" if options.subscribers_on == "b" and len(addresses) > 1 else "host A"
    name = "PostgreSQL, two uvicorn hosts" if store == "pg" else "SQLite file, one uvicorn host"
    writers = "raw (uvloop, no HTTP client)" if options.raw_writers else "httpx"
    report(name, where, lat, found, began_load, f"{options.writers} {writers}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--store", default="pg,sqlite", help="pg, sqlite or both (default)")
    parser.add_argument("--writes", type=int, default=200, help="writes timed for latency")
    parser.add_argument(
        "--pause", type=float, default=0.05, help="most seconds between two timed writes"
    )
    parser.add_argument(
        "--subscribers", default="0,100,1000", help="subscriber counts for writes/s"
    )
    parser.add_argument(
        "--subscribers-on", choices=("a", "b"), default="a", help="the subscribers' host"
    )
    parser.add_argument("--seconds", type=float, default=8.0, help="each writes/s run")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved writes/s rounds")
    parser.add_argument("--writers", type=int, default=4, help="connections POSTing")
    parser.add_argument("--postgres", metavar="URL", help="a PostgreSQL database to use")
    parser.add_argument(
        "--profile", metavar="FILE", help="host A's cProfile statistics (its loop's thread)"
    )
    parser.add_argument(
        "--parse", action="store_true", help="the subscribers parse each event (httpx-sse)"
    )
    parser.add_argument(
        "--raw",
        action="store_true",
        help="the subscribers read their sockets and the writers POST on theirs without an"
        " HTTP client (the least CPU the clients can take)",
    )
    parser.add_argument(
        "--httpx-writers",
        action="store_true",
        help="with --raw, keep the writers httpx clients (as --raw ran before its raw"
        " writers), to compare",
    )
    parser.add_argument(
        "--nice",
        type=int,
        default=0,
        help="the subscriber process's niceness (19: it takes only a core left idle; not the"
        " default: the headline figure is the plain run)",
    )
    parser.add_argument(
        "--switch",
        type=float,
        metavar="S",
        help="the servers' interpreter switch interval in seconds (sys.setswitchinterval;"
        " default Python's 0.005): how long the loop's thread keeps the interpreter lock"
        " from a blocking pool's thread waiting for it",
    )
    parser.add_argument("--hold", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--streams", type=int, default=0, help=argparse.SUPPRESS)
    options = parser.parse_args()
    limit = raise_open_files()
    if options.hold:
        hold = hold_streams(options.hold, options.streams, options.parse, options.raw)
        if options.raw:  # on uvloop, as a server's loop (its transports read into a buffer)
            import uvloop

            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                runner.run(hold)
            return
        asyncio.run(hold)
        return
    options.subscribers = [int(n) for n in options.subscribers.split(",")]
    options.raw_writers = options.raw and not options.httpx_writers
    if options.raw_writers:  # (imported now, not in the first run's CPU)
        import uvloop
    if max(options.subscribers) * 3 + 200 > limit:
        raise SystemExit(f"open files limited to {limit}: raise `ulimit -n`")
    print(f"load average: {load()}; CPUs: {os.cpu_count()}; open files: {limit}", end="")
    print(f"; the subscriber process's niceness: {options.nice}", end="")
    print(f"; the writers: {'raw' if options.raw_writers else 'httpx'}")
    logs = ROOT / "bench" / "out" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="svcrest-feed-") as tmp:
        for store in options.store.split(","):
            run_store(options, store.strip(), logs, Path(tmp))


if __name__ == "__main__":
    main()
