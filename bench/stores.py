"""In-process cost of a cookie + nonce GET on each store engine: SQLite (memory, file) and
PostgreSQL (a unix socket on this machine).

Usage::

    python bench/stores.py [--rounds 10] [--calls 2000] [--postgres URL] [--json]

Each case sends ``GET /svc-json/demo/v1/items/42`` through the App's ASGI callable (no
sockets), as a logged-in administrator with the session cookie and an ``X-SVC-Nonce``: every
request reads the user and the session from the store (one statement in one read block). The
figure is the best mean time per call of ``--rounds`` rounds. Without ``--postgres`` a
throw-away PostgreSQL server is started as the tests start theirs (``tests/pg.py``: Debian's
``initdb``/``pg_ctl``, ``fsync=off``), so run it from the repository root.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from inprocess import HOME, PATH, asgi_case, best_of, get_item, logged_in, login_headers


def make_app(store: str | None) -> Any:
    from svcrest import App

    app = App(HOME, store=store)
    handler = {"methods": "GET", "callback": get_item, "permission_callback": logged_in}
    app.register_rest_route("demo/v1", r"/items/(?P<id>\d+)", handler)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--postgres", metavar="URL", help="a PostgreSQL database to use")
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    server = None
    url = options.postgres
    if url is None:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root
        from tests.pg import PostgresServer

        server = PostgresServer()
        url = server.new_database()
    loop = asyncio.new_event_loop()
    results: dict[str, float] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            stores = {
                "SQLite in memory": None,
                "SQLite file (WAL)": str(Path(tmp) / "bench.db"),
                "PostgreSQL (unix socket)": url,
            }
            for name, store in stores.items():
                app = make_app(store)
                run = asgi_case(app, PATH, login_headers(app), 200)
                best_of(run, 1, 200, loop)  # warm up: server built, statements prepared
                results[name] = best_of(run, options.rounds, options.calls, loop)
                app.store.close()
    finally:
        if server is not None:
            server.stop()
    if options.json:
        print(json.dumps({"microseconds": results}))
        return
    print(f"cookie + nonce GET, best of {options.rounds} x {options.calls} calls, ASGI in-process")
    for name, micros in results.items():
        print(f"{name:26} {micros:7.1f} us")


if __name__ == "__main__":
    main()
