"""What relayed notifications cost the listening process's reading thread: its reads and
its CPU a notification, at a steady rate of writes.

Usage::

    python bench/relay_batches.py [--rate 1000] [--seconds 5] [--listeners 1]
                                  [--types 1] [--postgres URL]

A publisher process (started here) commits ``NOTIFY`` s on one channel ``--rate`` times a
second for ``--seconds`` (each its own transaction, a payload among ``--types`` object
types, as the change log's writes send them); this process listens on that channel
through the host's relay (``--listeners`` listeners, each with its reading thread, as the
workers of a host) and polls every 20 ms (as the change waker does). Reported, for each
listener and in all: the notifications committed, the payloads polled (repeats merged in a
batch count once), the listener's reads of the relay's socket a second (a read: a wake of
its thread), the reading thread's CPU (user + system, from its own CPU clock) a second and
a notification, and the relay process's CPU a notification (``/proc``). Without
``--postgres`` a throw-away server is started as the tests start theirs
(``tests/pg.py``), so run it from the repository root.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

CHANNEL = "svcrest_bench"

PUBLISHER = """
import sys, time
import psycopg
url, rate, seconds, types = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
names = ["type%d" % n for n in range(types)]
with psycopg.connect(url, autocommit=True) as conn:
    print("ready", flush=True)
    sys.stdin.readline()
    began = time.monotonic()
    sent = 0
    while True:
        now = time.monotonic()
        if now - began >= seconds:
            break
        due = began + sent / rate
        if due > now:
            time.sleep(due - now)
        conn.execute("SELECT pg_notify(%s, %s)", (sys.argv[5], names[sent % types]))
        sent += 1
print(sent, flush=True)
"""


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid``, from ``/proc``."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu(thread: threading.Thread) -> float:
    """CPU seconds (user + system) of ``thread`` so far, from its own CPU clock."""
    assert thread.ident is not None
    return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))


def counting_reads(listener: Any) -> list[int]:
    """A counter of the batches ``listener`` handles (its reads that brought lines),
    counted by wrapping its ``_handle`` (so that trees without a counter of their own
    compare)."""
    counter = [0]
    handle = listener._handle

    def counted(lines: list[bytes]) -> None:
        counter[0] += 1
        handle(lines)

    listener._handle = counted
    return counter


def run(url: str, options: argparse.Namespace) -> None:
    from svcrest.store import pg_relay
    from svcrest.store.postgres import PostgresStore

    with (
        tempfile.TemporaryDirectory(prefix="rb-", dir="/tmp") as run_dir,
        PostgresStore(url, run_dir=run_dir) as store,
    ):
        listeners: list[pg_relay.RelayListener] = []
        for _ in range(options.listeners):
            listener = store.listen(CHANNEL)
            assert isinstance(listener, pg_relay.RelayListener)
            listeners.append(listener)
        relay_pid = next(iter(pg_relay._STARTED.values()))
        reads = [counting_reads(listener) for listener in listeners]
        polled = [0] * len(listeners)
        stop = threading.Event()

        def poller() -> None:
            while not stop.wait(0.02):
                for index, listener in enumerate(listeners):
                    polled[index] += len(listener.poll() or ())

        publisher = subprocess.Popen(
            [
                sys.executable,
                "-c",
                PUBLISHER,
                url,
                str(options.rate),
                str(options.seconds),
                str(options.types),
                CHANNEL,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert publisher.stdin is not None and publisher.stdout is not None
        assert publisher.stdout.readline() == "ready\n"
        polling = threading.Thread(target=poller, daemon=True)
        polling.start()
        threads = [listener._thread for listener in listeners]
        cpu_before = [thread_cpu(thread) for thread in threads]
        reads_before = [counter[0] for counter in reads]
        relay_before = process_cpu(relay_pid)
        began = time.monotonic()
        publisher.stdin.write("go\n")
        publisher.stdin.flush()
        sent = int(publisher.stdout.readline())
        publisher.wait()
        for number, listener in enumerate(listeners, 1):  # every notification is in
            listener.ping(number)
        elapsed = time.monotonic() - began
        cpu = [thread_cpu(thread) - cpu_before[index] for index, thread in enumerate(threads)]
        relay = process_cpu(relay_pid) - relay_before
        time.sleep(0.05)
        stop.set()
        polling.join()
        for index, listener in enumerate(listeners):
            polled[index] += len(listener.poll() or ())
        made = [counter[0] - before for counter, before in zip(reads, reads_before, strict=True)]
        print(
            f"{sent} notifications in {elapsed:.2f} s ({sent / elapsed:.0f}/s),"
            f" {options.types} type(s), {len(listeners)} listener(s);"
            f" the relay process {relay / max(sent, 1) * 1e6:.1f} µs of CPU a notification"
        )
        for index in range(len(listeners)):
            print(
                f"  listener {index + 1}: {polled[index]} payloads polled,"
                f" {made[index] / elapsed:.1f} reads/s ({made[index] / max(sent, 1):.3f} a"
                f" notification), its thread {cpu[index] / elapsed * 100:.2f} % of a core,"
                f" {cpu[index] / max(sent, 1) * 1e6:.2f} µs a notification"
            )
        print(f"  in all: {sum(cpu) / elapsed * 100:.2f} % of a core; load {os.getloadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=float, default=1000.0, help="notifications a second")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--listeners", type=int, default=1)
    parser.add_argument("--types", type=int, default=1, help="distinct payloads")
    parser.add_argument("--postgres", metavar="URL", help="a PostgreSQL server's database URL")
    options = parser.parse_args()
    server = None
    if options.postgres is None:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root
        from tests.pg import PostgresServer

        server = PostgresServer()
    try:
        run(server.new_database() if server is not None else options.postgres, options)
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
