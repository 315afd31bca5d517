"""In-process cost of a cookie + nonce GET on each store engine: SQLite (memory, file) and
PostgreSQL (a unix socket on this machine), with and without its session cache.

Usage::

    python bench/stores.py [--rounds 10] [--calls 2000] [--postgres URL] [--json]

Each case sends ``GET /svc-json/demo/v1/items/42`` through the App's ASGI callable (no
sockets), as a logged-in administrator with the session cookie and an ``X-SVC-Nonce``. On
SQLite every request reads the user and the session from the store (one statement in one read
block); on PostgreSQL the session cache (``svcrest.auth.session_cache``) answers once it holds
the session, and ``PostgreSQL, cache off`` turns it off with the ``svc_session_cache_entries``
filter (every request reads, as on SQLite). The rounds are interleaved (a round of each case in
turn) and the figure is the best mean time per call of ``--rounds`` rounds; the ratios are
SQLite in memory's time over each case's (speed relative to SQLite, higher is faster). Without
``--postgres`` a throw-away PostgreSQL server is started as the tests start theirs
(``tests/pg.py``: Debian's ``initdb``/``pg_ctl``, ``fsync=off``), so run it from the
repository root.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from inprocess import (
    HOME,
    LOGIN,
    PATH,
    asgi_case,
    best_of,
    get_item,
    logged_in,
    login_headers,
)


def make_app(store: str | None, *, cache: bool = True) -> Any:
    from svcrest import App

    app = App(HOME, store=store)
    if not cache:
        app.hooks.add_filter("svc_session_cache_entries", lambda entries: 0)
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
                "SQLite in memory": (None, True),
                "SQLite file (WAL)": (str(Path(tmp) / "bench.db"), True),
                "PostgreSQL (unix socket)": (url, True),
                "PostgreSQL, cache off": (url, False),
            }
            apps, runs = [], {}
            for name, (store, cache) in stores.items():
                app = make_app(store, cache=cache)
                apps.append(app)
                if name == "PostgreSQL, cache off":  # the user exists: a second session
                    runs[name] = asgi_case(app, PATH, second_login(app), 200)
                else:
                    runs[name] = asgi_case(app, PATH, login_headers(app), 200)
                best_of(runs[name], 1, 200, loop)  # warm up: server built, session cached
            for _ in range(options.rounds):
                for name, run in runs.items():
                    micros = best_of(run, 1, options.calls, loop)
                    results[name] = min(results.get(name, micros), micros)
            for app in apps:
                app.store.close()
    finally:
        if server is not None:
            server.stop()
    baseline = results["SQLite in memory"]
    if options.json:
        ratios = {name: baseline / micros for name, micros in results.items()}
        print(json.dumps({"microseconds": results, "speed_vs_sqlite_memory": ratios}))
        return
    print(
        f"cookie + nonce GET, best of {options.rounds} interleaved rounds x {options.calls}"
        " calls, ASGI in-process"
    )
    for name, micros in results.items():
        print(f"{name:26} {micros:7.1f} us   speed vs SQLite in memory {baseline / micros:5.2f}")


def second_login(app: Any) -> list[tuple[bytes, bytes]]:
    """The cookie and nonce of a new session of the bench user (created by another case)."""
    user = app.users.get_by_login(LOGIN)
    issued = app.auth.log_in(user, remember=False, ip="127.0.0.1", user_agent="wrk", secure=False)
    cookie = issued.set_cookie_header().split(";", 1)[0]
    nonce = app.auth.create_nonce("svc_rest", user.id, issued.token)
    return [(b"cookie", cookie.encode()), (b"x-svc-nonce", nonce.encode())]


if __name__ == "__main__":
    main()
