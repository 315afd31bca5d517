"""What the host's notification relay costs a ping when the process that started it is
CPU-bound: the ping round trips of one process through the relay, p50 / p99 / max.

Usage::

    python bench/relay_ping.py [--pings 300] [--every 0.017] [--postgres URL]

A leader process (started here) opens the host's relay (its first listener starts it) and
then spins on a second thread; this process listens through the same run directory and
sends ``--pings`` pings ``--every`` seconds apart (a session cache's heartbeat). Reported:
pings straight to PostgreSQL (a listener of its own), and through the relay with the leader
idle, then spinning. Without ``--postgres`` a throw-away server is started as the tests
start theirs (``tests/pg.py``), so run it from the repository root.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

LEADER = """
import sys, threading, time
from svcrest.store.postgres import PostgresStore
store = PostgresStore(sys.argv[1], run_dir=sys.argv[2])
store.listen("svcrest_bench")
print("listening", flush=True)
if sys.argv[3] == "spin":
    def spin():
        while True:
            sum(range(1000))
    threading.Thread(target=spin, daemon=True).start()
time.sleep(3600)
"""


def pings(listener: Any, count: int, every: float) -> list[float]:
    """Milliseconds of each of ``count`` pings (a failed one counts as its time-out)."""
    taken: list[float] = []
    for number in range(1, count + 1):
        began = time.perf_counter()
        listener.ping(number)
        taken.append((time.perf_counter() - began) * 1000)
        time.sleep(every)
    return taken


def summary(taken: list[float]) -> str:
    ordered = sorted(taken)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * len(ordered)))]
    return f"{statistics.median(ordered):.1f} / {p99:.1f} / {ordered[-1]:.1f}"


def through_relay(url: str, mode: str, count: int, every: float) -> str:
    from svcrest.store.postgres import PostgresStore

    with tempfile.TemporaryDirectory(prefix="rp-", dir="/tmp") as run_dir:
        leader = subprocess.Popen(
            [sys.executable, "-c", LEADER, url, run_dir, mode], stdout=subprocess.PIPE, text=True
        )
        try:
            assert leader.stdout is not None
            assert leader.stdout.readline() == "listening\n"
            with PostgresStore(url, run_dir=run_dir) as store:
                listener = store.listen("svcrest_bench")
                time.sleep(0.5)
                return summary(pings(listener, count, every))
        finally:
            leader.kill()
            leader.wait()
            if leader.stdout is not None:
                leader.stdout.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pings", type=int, default=300)
    parser.add_argument("--every", type=float, default=0.017)
    parser.add_argument("--postgres", metavar="URL", help="a PostgreSQL server's database URL")
    options = parser.parse_args()
    server = None
    if options.postgres is None:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root
        from tests.pg import PostgresServer

        server = PostgresServer()
    try:
        url = server.new_database() if server is not None else options.postgres
        from svcrest.store.pg_listen import PostgresListener

        direct = PostgresListener(url, "svcrest_bench")
        try:
            print("straight to PostgreSQL:", summary(pings(direct, options.pings, options.every)))
        finally:
            direct.close()
        for mode in ("idle", "spin"):
            result = through_relay(url, mode, options.pings, options.every)
            print(f"through the relay, its starter {mode}:", result, flush=True)
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
