"""What N processes of one site cost PostgreSQL while nobody writes, and with one revocation
a second: direct connections, transaction ids, notifications each process receives, backend
CPU, and the notification queue with an idle process.

Usage::

    python bench/pg_scale.py [--sizes 16,64,256] [--per-host 8] [--window 5] [--busy 4]
                             [--pgbouncer | --no-pgbouncer] [--postgres URL]

Each of N simulated processes is an App with its own store (its own pool of
``--pool-size`` connections) and its own session cache, in this one Python process; they
are spread over N / ``--per-host`` simulated hosts, each with a run directory of its own, so
the processes of a host share one listening connection (``svcrest.store.pg_relay``).
With ``--pgbouncer`` (the default when this script starts its own server) the pools go
through PgBouncer in transaction mode, as a site of many hosts runs, and the listeners
straight to PostgreSQL. For ``--window`` seconds ``--busy`` of them check a session cookie
in a loop (cookie GETs, the cache answering; one thread each), the others serve nothing
(idle), and one of the busy ones logs a session out once a second (a revocation every
process must hear of). Reported per N:

- ``listener connections``: PostgreSQL backends of the database whose ``application_name``
  is ``svcrest-listen``, during the window (goal: one per host); ``direct connections``:
  every client backend of the database then (the listeners, the pools' connections or
  PgBouncer's, not the measuring one);

- ``txids less revocations``: ``txid_current()`` after the window less before, less the one
  the measurement takes and the one each revocation takes (its write): 0 when nothing else
  consumed any;
- ``notifications/process``: payloads each process's listener received (mean, max);
- ``backend CPU s``: user + system seconds of the server's backends over the window
  (``/proc``; only when the server runs on this machine);
- ``queue usage``: ``pg_notification_queue_usage()`` after the window and after a burst of
  2,000 notifications with every process idle (0 when every listener is drained), how many
  processes read the whole burst, and in how many seconds (an idle process drains its
  listener once a second).

Without ``--postgres`` a throw-away server is started as the tests start theirs
(``tests/pg.py``), so run it from the repository root.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HOME = "http://127.0.0.1:8000"


def one_value(url: str, sql: str) -> Any:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(sql).fetchone()
    assert row is not None
    return row[0]


def backend_cpu(url: str) -> float | None:
    """User + system CPU seconds of every backend of the server (None when not local)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        pids = [row[0] for row in conn.execute("SELECT pid FROM pg_stat_activity").fetchall()]
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def count_payloads(app: Any, counts: list[int], index: int) -> None:
    """Count what the listener of ``app``'s session cache receives."""
    listener = app.store._listeners[0]
    poll = listener.poll

    def counted() -> list[str] | None:
        payloads: list[str] | None = poll()
        if payloads:
            counts[index] += len(payloads)
        return payloads

    listener.poll = counted


def with_pool_size(url: str, pool_size: int) -> str:
    try:
        from svcrest.store.pg_url import with_url_options
    except ImportError:  # a tree before the URL options (for a comparison run)
        return url
    return with_url_options(url, pool_size=str(pool_size))


def connections(url: str) -> tuple[int, int]:
    """The listener connections and all client connections to ``url``'s database (less the
    one asking)."""
    return tuple(  # type: ignore[return-value]
        int(one_value(url, sql))
        for sql in (
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND application_name = 'svcrest-listen'",
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
        )
    )


def open_store(pool_url: str, listen_url: str | None, run_dir: str) -> Any:
    """A store of one simulated process on the host of ``run_dir``."""
    from svcrest.store.postgres import PostgresStore

    try:
        return PostgresStore(pool_url, listen=listen_url, run_dir=run_dir)
    except TypeError:  # a tree before the host's relay: a listener per process
        return PostgresStore(pool_url, listen=listen_url)


def run(
    url: str,
    size: int,
    window: float,
    busy: int,
    pool_size: int,
    per_host: int,
    pool_url: str | None,
) -> dict[str, Any]:
    from svcrest import App

    store = with_pool_size(pool_url or url, pool_size)
    listen = url if pool_url else None
    hosts = [tempfile.mkdtemp(prefix="svh-", dir="/tmp") for _ in range(-(-size // per_host))]
    apps = [
        App(HOME, store=open_store(store, listen, hosts[index // per_host]))
        for index in range(size)
    ]
    first = apps[0]
    first.users.create("bench", "bench-password-0123", roles=("editor",))
    user = first.users.get(1)
    assert user is not None
    cookie = first.auth.log_in(user, remember=True, ip="i", user_agent="u", secure=False).value
    counts = [0] * size
    for index, app in enumerate(apps):
        assert app.auth.validate_cookie(cookie) is not None  # opens the cache and listener
        count_payloads(app, counts, index)
    time.sleep(3)  # every idle cache is past its idle time: it only drains its listener
    stop = threading.Event()
    checks = [0] * busy

    def serve(index: int) -> None:
        app = apps[index]
        while not stop.is_set():
            app.auth.validate_cookie(cookie)
            checks[index] += 1

    revocations = [0]

    def revoke() -> None:
        while not stop.wait(1.0):
            first.users.set_roles(1, ["editor"])  # one write, one notification to everyone
            revocations[0] += 1

    listeners, direct = connections(url)
    txid_before = int(one_value(url, "SELECT txid_current()"))
    cpu_before = backend_cpu(url)
    threads = [threading.Thread(target=serve, args=(i,)) for i in range(busy)]
    threads.append(threading.Thread(target=revoke))
    for thread in threads:
        thread.start()
    time.sleep(window)
    stop.set()
    for thread in threads:
        thread.join()
    cpu_after = backend_cpu(url)
    txid_after = int(one_value(url, "SELECT txid_current()"))
    time.sleep(1.5)  # let the idle listeners drain
    usage_after = float(one_value(url, "SELECT pg_notification_queue_usage()"))
    received = list(counts)  # the window's, before the burst
    for number in range(2000):
        first.store.publish("svcrest_auth", str(10_000 + number))  # type: ignore[attr-defined]
    sent = time.monotonic()
    while time.monotonic() - sent < 10 and any(
        after - before < 2000 for after, before in zip(counts, received, strict=True)
    ):
        time.sleep(0.05)
    read_in = time.monotonic() - sent
    usage_burst = float(one_value(url, "SELECT pg_notification_queue_usage()"))
    pairs = zip(counts, received, strict=True)
    drained = sum(1 for after, before in pairs if after - before >= 2000)
    for app in apps:
        app.store.close()
    for host in hosts:
        shutil.rmtree(host, ignore_errors=True)
    return {
        "N": size,
        "hosts": len(hosts),
        "listener connections": listeners,
        "direct connections": direct,
        "cookie checks": sum(checks),
        "revocations": revocations[0],
        "txids less revocations": txid_after - txid_before - 1 - revocations[0],
        "notifications/process mean": sum(received) / size,
        "notifications/process max": max(received),
        "backend CPU s": None
        if cpu_before is None or cpu_after is None
        else round(cpu_after - cpu_before, 2),
        "queue usage after window": usage_after,
        "queue usage after 2,000 burst": usage_burst,
        "processes that read the burst": drained,
        "burst read by all in s": round(read_in, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="16,64,256")
    parser.add_argument("--per-host", type=int, default=8, help="processes per host")
    parser.add_argument(
        "--pgbouncer",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="pools through PgBouncer (tests/pgbouncer.py; default: with the script's server)",
    )
    parser.add_argument("--window", type=float, default=5.0)
    parser.add_argument("--busy", type=int, default=4)
    parser.add_argument("--pool-size", type=int, default=1)
    parser.add_argument("--postgres", metavar="URL", help="a PostgreSQL server's database URL")
    options = parser.parse_args()
    server = bouncer = None
    if options.postgres is None:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root
        from tests.pg import PostgresServer

        server = PostgresServer()
    try:
        if options.pgbouncer or (options.pgbouncer is None and server is not None):
            if server is None:
                parser.error("--pgbouncer needs the script's own server (no --postgres)")
            from tests.pgbouncer import PgBouncer

            bouncer = PgBouncer(server)
        for size in (int(text) for text in options.sizes.split(",")):
            url = server.new_database() if server is not None else options.postgres
            pool_url = bouncer.url(url.split("?")[0].rsplit("/", 1)[1]) if bouncer else None
            result = run(
                url,
                size,
                options.window,
                min(options.busy, size),
                options.pool_size,
                options.per_host,
                pool_url,
            )
            print("  ".join(f"{name}: {value}" for name, value in result.items()), flush=True)
    finally:
        if bouncer is not None:
            bouncer.stop()
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
