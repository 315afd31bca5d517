"""Two worker processes serving HTTP: the cookie + nonce GET on SQLite and on PostgreSQL.

Usage (from the repository root, in the project's venv; wrk must be installed)::

    python bench/stores_http.py [--rounds 3] [--duration 5] [--connections 64] [--postgres URL]

For each store, uvicorn serves ``bench/targets/svcrest_store_auth.py`` with ``--workers 2``
(as ``svcrest serve --workers 2 --db URL`` does: two processes sharing the store): a SQLite
file in WAL mode, then a PostgreSQL database (without ``--postgres``, a throw-away server
started as the tests start theirs, ``tests/pg.py``, on a unix socket), then the same database
with the session cache turned off (every request reads the store). The script creates the
user, logs in through ``POST /login``, checks that the route refuses a request without the
cookie, and drives ``GET /svc-json/demo/v1/items/42`` with the ``Cookie`` and
``X-SVC-Nonce`` headers with wrk. The rounds are interleaved (SQLite, PostgreSQL, SQLite…);
the figure of a store is its best round. Nothing is pinned: the two workers, wrk and
PostgreSQL share the machine's CPUs, so compare the ratio, not the absolute figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import harness

PATH = "/svc-json/demo/v1/items/42"
WORKERS = 2


def create_user(db: str) -> None:
    """The bench user, in the store the workers will share."""
    from svcrest import App

    app = App("http://127.0.0.1", store=db)
    app.users.create(harness.AUTH_LOGIN, harness.AUTH_PASSWORD, roles=("administrator",))
    app.store.close()


@contextlib.contextmanager
def serve(db: str, label: str, cache: bool) -> Iterator[harness.Server]:
    """uvicorn with two workers serving the target over ``db``."""
    port = harness.free_port()
    command = harness.uvicorn_command("svcrest_store_auth:app", port)
    command[command.index("--workers") + 1] = str(WORKERS)
    env = {
        **os.environ,
        "SVCREST_BENCH_DB": db,
        "SVCREST_BENCH_HOME": f"http://127.0.0.1:{port}",
        "SVCREST_BENCH_SESSION_CACHE": "1" if cache else "0",
    }
    harness.LOG_DIR.mkdir(parents=True, exist_ok=True)
    log_path = harness.LOG_DIR / f"stores-http-{label}.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        harness._wait_for_port(port, proc, log_path)
        yield harness.Server(f"http://127.0.0.1:{port}", proc.pid)
    finally:
        harness.stop(proc)


def measure(db: str, label: str, cache: bool, settings: harness.WrkSettings) -> harness.WrkResult:
    with serve(db, label, cache) as server:
        url = server.url + PATH
        # Without the cookie the route must refuse, or the figure measures no auth at all.
        harness.check_response(url, status=401)
        headers = harness.login(server.url)
        harness.check_response(url, headers=headers, status=200)
        return harness.run_wrk(
            url,
            settings=settings,
            cpus=harness.Cpus(None, None),
            headers=headers,
            server_pid=server.pid,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=5, help="seconds measured per run")
    parser.add_argument("--warmup", type=int, default=1, help="warm-up seconds per run")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--postgres", metavar="URL", help="an empty PostgreSQL database")
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    settings = harness.WrkSettings(options.duration, options.warmup, options.connections)
    server = None
    url = options.postgres
    if url is None:
        sys.path.insert(0, str(harness.REPO_DIR))
        from tests.pg import PostgresServer

        server = PostgresServer()
        url = server.new_database()
    best: dict[str, harness.WrkResult] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            stores = {
                "SQLite file (WAL)": (str(Path(tmp) / "bench.db"), True),
                "PostgreSQL": (url, True),
                "PostgreSQL, cache off": (url, False),
            }
            for db, _cache in list(stores.values())[:2]:
                create_user(db)
            for number in range(1, options.rounds + 1):
                for index, (name, (db, cache)) in enumerate(stores.items()):
                    label = f"{('sqlite', 'pg', 'pg-nocache')[index]}-r{number}"
                    run = measure(db, label, cache, settings)
                    if run.non_2xx or run.socket_errors:
                        raise SystemExit(f"{name}: {run.non_2xx} non-2xx, {run.socket_errors}")
                    print(
                        f"  round {number} {name:22} {harness.fmt_rps(run.rps):>9} req/s"
                        f"  p50 {harness.fmt_ms(run.p50_ms)}  p99 {harness.fmt_ms(run.p99_ms)}"
                        f"  uvicorn CPU {run.server_cpu or 0:.2f}",
                        flush=True,
                    )
                    if name not in best or run.rps > best[name].rps:
                        best[name] = run
    finally:
        if server is not None:
            server.stop()
    sqlite = best["SQLite file (WAL)"].rps
    ratios = {name: run.rps / sqlite for name, run in best.items()}
    if options.json:
        figures = {name: run.rps for name, run in best.items()}
        print(json.dumps({"requests_per_second": figures, "vs_sqlite": ratios}))
        return
    print(harness.machine_info(harness.Cpus(None, None)))
    print(
        f"cookie + nonce GET, uvicorn --workers {WORKERS}, wrk -t1 -c{options.connections},"
        f" best of {options.rounds} interleaved rounds of {options.duration} s"
    )
    for name, run in best.items():
        print(
            f"{name:22} {harness.fmt_rps(run.rps):>9} req/s  p50 {harness.fmt_ms(run.p50_ms)}"
            f"  p99 {harness.fmt_ms(run.p99_ms)}  vs SQLite {ratios[name]:.2f}"
        )


if __name__ == "__main__":
    main()
