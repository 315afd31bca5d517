"""A ``StoreCollection`` GET against the same route written by hand, over the same table.

Usage::

    .venv/bin/python bench/collection_get.py [--rows 1000] [--rounds 15] [--calls 2000]
        [--postgres [URL]] [--cpu] [--instructions REQUESTS] [--json]

One App, one stored collection ``bench_item`` (a SQLite file in a temporary directory; with
``--postgres``, that PostgreSQL database, or a throw-away server started as the tests start
theirs) of ``--rows`` items (``title``, ``priority``, ``done``), served twice:

- ``/bench/v1/items``: ``svcrest.StoreCollection("bench/v1", "items", SCHEMA, sortable=...)``;
- ``/hand/v1/items``: two ``register_rest_route`` routes written as a plugin author would
  without it, reading the collection's own ``CollectionTable``: the item (``table.get``, the
  view fields, ``self`` / ``collection`` links, the version as ``ETag``) and a page
  (``table.query`` with ``page`` / ``per_page``, the same items, ``svcrest.paginate`` for the
  totals and links); both take the ``context`` arg, as the same routes must (WordPress's
  ``get_context_param``), and nothing more.

Both answer the same bytes (checked before timing, the links aside: each names its own
route). Cases: ``item`` (``GET …/items/42``) and ``page of 10`` (``GET
…/items?per_page=10&page=3``), each through ``app.wsgi`` in process (no sockets), anonymous.
The figure is the best of ``--rounds`` rounds of the mean time of ``--calls`` requests; the
rounds are interleaved (every case once per round); ``--cpu`` times with the process's CPU
time instead of the wall clock. ``--instructions N`` counts instead the CPU instructions of
one request with valgrind's callgrind (a run of N requests less a warm-up run, divided by N;
SQLite): repeatable on a loaded machine. A ratio is hand-written time (or instructions)
over StoreCollection's (the goal: 0.9 or more).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from callgrind import collected  # noqa: E402

from svcrest import App, Request, Response, StoreCollection, paginate, public  # noqa: E402
from svcrest.store.collection_query import Query  # noqa: E402

SCHEMA: dict[str, Any] = {
    "title": "bench_item",
    "type": "object",
    "properties": {
        "title": {"type": "string", "default": "", "context": ["view", "edit", "embed"]},
        "priority": {"type": "integer", "default": 0, "context": ["view", "edit"]},
        "done": {"type": "boolean", "default": False, "context": ["view", "edit"]},
    },
}
FIELDS = ("id", "title", "priority", "done")
#: The hand-written targets: by name, their namespace.
TARGETS = {"hand-written": "hand/v1", "hand-written, same args": "handargs/v1"}
#: The ``context`` arg both serve (the hand-written routes answer the view context only, but
#: refuse a context that does not exist, as the same route must).
CONTEXT = {"type": "string", "enum": ["view", "embed", "edit"], "default": "view"}


def build(store: str, rows: int) -> App:
    app = App("http://127.0.0.1:8000", secret_key="k" * 32, store=store)
    collection = app.register_controller(
        StoreCollection("bench/v1", "items", SCHEMA, sortable=("title", "priority"))
    )
    table = collection.table
    if table.query(Query(per_page=1)).total == 0:
        with table.store.transaction():
            for number in range(rows):
                table.insert({"title": f"item {number:05d}", "priority": number % 10})

    def shown(item: dict[str, Any]) -> Response:
        response = Response({name: item[name] for name in FIELDS})
        response.add_link("self", app.rest_url(f"/hand/v1/items/{item['id']}"))
        response.add_link("collection", app.rest_url("/hand/v1/items"))
        return response

    def get_item(request: Request) -> Response:
        item = table.get(request["id"])
        if item is None:
            return Response({"code": "rest_bench_item_invalid_id"}, 404)
        response = shown(item)
        response.set_header_line("ETag", f'"{item["version"]}"')
        return response

    def get_items(request: Request) -> Response:
        page, per_page = request["page"], request["per_page"]
        found = table.query(Query(per_page=per_page, page=page))
        items = [
            app.rest_get_server().prepare_response_for_collection(shown(item))
            for item in found.items
        ]
        return paginate(request, items, total=found.total or 0, page=page, per_page=per_page)

    app.register_rest_route(
        "hand/v1",
        r"/items/(?P<id>[\d]+)",
        {
            "methods": "GET",
            "callback": get_item,
            "permission_callback": public,
            "args": {"id": {"type": "integer"}, "context": CONTEXT},
        },
    )
    few = {
        "context": CONTEXT,
        "page": {"type": "integer", "default": 1, "minimum": 1},
        "per_page": {"type": "integer", "default": 10, "minimum": 1, "maximum": 100},
    }
    # The same page written twice by hand: taking only the args it reads, and declaring
    # every collection arg the StoreCollection declares (its OPTIONS help and validation,
    # which cost per declared arg), reading the same two.
    for namespace, args in (("hand/v1", few), ("handargs/v1", collection.get_collection_params())):
        app.register_rest_route(
            namespace,
            "/items",
            {
                "methods": "GET",
                "callback": get_items,
                "permission_callback": public,
                "args": args,
            },
        )
    return app


def wsgi_get(app: App, path: str, query: str) -> Callable[[int], bytes]:
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.version": (1, 0),
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        "HTTP_HOST": "127.0.0.1:8000",
        "HTTP_USER_AGENT": "bench",
    }
    status: list[str] = []

    def start_response(line: str, headers: list[tuple[str, str]]) -> None:
        status.append(line)

    wsgi = app.wsgi

    def run(n: int) -> bytes:
        body = b""
        for _ in range(n):
            body = b"".join(wsgi(dict(environ), start_response))
        if not status[-1].startswith("200"):
            raise SystemExit(f"{path}?{query} answered {status[-1]}: {body[:300]!r}")
        return body

    return run


CASES = {"item": ("/items/42", ""), "page of 10": ("/items", "per_page=10&page=3")}
Runs = dict[tuple[str, str], Callable[[int], bytes]]


def same_body(body: bytes) -> bytes:
    """``body`` with every route's namespace written alike (each links to its own)."""
    for namespace in ("bench/v1", *TARGETS.values()):
        body = body.replace(f"/{namespace}/".encode(), b"/ns/")
    return body


def targets(app: App) -> Runs:
    """Every case of every target, checked to answer the same body as StoreCollection's."""
    runs: Runs = {}
    for case, (path, query) in CASES.items():
        ours = wsgi_get(app, f"/svc-json/bench/v1{path}", query)
        runs[(case, "StoreCollection")] = ours
        for target, namespace in TARGETS.items():
            if case == "item" and namespace == "handargs/v1":
                continue  # the item route's args are the same already (id, context)
            hand = wsgi_get(app, f"/svc-json/{namespace}{path}", query)
            if same_body(ours(1)) != same_body(hand(1)):
                raise SystemExit(f"{case}: {target} answers another body")
            runs[(case, target)] = hand
    return runs


def measure(runs: Runs, rounds: int, calls: int, clock: Callable[[], float]) -> dict[Any, float]:
    """The best mean time per call of each run, rounds interleaved."""
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(rounds):
        for key, run in runs.items():
            start = clock()
            run(calls)
            best[key] = min(best[key], (clock() - start) / calls)
    return best


def report(best: dict[Any, float], as_json: bool, unit: str) -> None:
    """The table (or JSON) of the figures: microseconds (``unit`` " µs") or instructions
    (``unit`` "", the figures scaled by 1e6 as seconds are)."""
    results: dict[str, dict[str, float]] = {}
    lines = [
        f"| case | StoreCollection | {' | '.join(TARGETS)} | ratios (goal ≥ 0.9) |",
        f"| --- | ---: | {' | '.join('---:' for _ in TARGETS)} | ---: |",
    ]
    for case in CASES:
        ours = best[(case, "StoreCollection")]
        figures = {"StoreCollection": round(ours * 1e6, 1)}
        shown = "{:,.0f}" if not unit else "{:.1f}"
        cells, ratios = [], []
        for target in TARGETS:
            hand = best.get((case, target))
            if hand is None:
                cells.append("(same)")
                continue
            figures[target] = round(hand * 1e6, 1)
            figures[f"ratio {target}"] = round(hand / ours, 3)
            cells.append(shown.format(hand * 1e6) + unit)
            ratios.append(f"{hand / ours:.2f}")
        results[case] = figures
        mine = shown.format(ours * 1e6) + unit
        lines.append(f"| {case} | {mine} | {' | '.join(cells)} | {' / '.join(ratios)} |")
    print(json.dumps(results, indent=2) if as_json else "\n".join(lines))


def run_one(store: str, rows: int, which: str, calls: int) -> None:
    """Warm one ``case|target`` up (300 requests), then send ``calls`` more (what
    ``--instructions`` counts under callgrind)."""
    case, target = which.split("|")
    app = build(store, rows)
    path, query = CASES[case]
    namespace = "bench/v1" if target == "StoreCollection" else TARGETS[target]
    run = wsgi_get(app, f"/svc-json/{namespace}{path}", query)
    run(300)
    if calls:
        run(calls)
    app.store.close()


def count_instructions(rows: int, requests: int) -> dict[Any, float]:
    """Instructions per request of every case and target: callgrind's count of a run with
    ``requests`` more requests than a warm-up run, divided by ``requests`` (SQLite)."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind")

    def counted(key: tuple[str, str], calls: int) -> int:
        with tempfile.TemporaryDirectory() as directory:
            return collected(
                [__file__, "--rows", str(rows), "--calls", str(calls), "--one", "|".join(key),
                 "--store", f"{directory}/bench.db"]
            )  # fmt: skip

    keys = [(case, "StoreCollection") for case in CASES]
    keys += [(case, target) for case in CASES for target in TARGETS]
    keys.remove(("item", "hand-written, same args"))
    with ThreadPoolExecutor(max_workers=2) as pool:
        warm = dict(zip(keys, pool.map(lambda key: counted(key, 0), keys), strict=True))
        full = dict(zip(keys, pool.map(lambda key: counted(key, requests), keys), strict=True))
    # The report divides by 1e6 as for seconds: an instruction count per request in "µs".
    return {key: (full[key] - warm[key]) / requests / 1e6 for key in keys}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--postgres", nargs="?", const="", default=None)
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="time with the process's CPU time (steadier on a loaded machine) instead of"
        " the wall clock",
    )
    parser.add_argument(
        "--instructions",
        type=int,
        metavar="REQUESTS",
        help="count CPU instructions per request with valgrind's callgrind instead (SQLite)",
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    if options.one:
        run_one(options.store, options.rows, options.one, options.calls)
        return
    if options.instructions:
        report(count_instructions(options.rows, options.instructions), options.json, "")
        return
    clock = time.process_time if options.cpu else time.perf_counter
    server = None
    with tempfile.TemporaryDirectory() as directory:
        if options.postgres is None:
            store = str(Path(directory) / "bench.db")
        elif options.postgres:
            store = options.postgres
        else:
            from tests.pg import PostgresServer

            server = PostgresServer()
            store = server.url()
        app = build(store, options.rows)
        try:
            best = measure(targets(app), options.rounds, options.calls, clock)
        finally:
            app.store.close()
            if server is not None:
                server.stop()
    report(best, options.json, " µs")


if __name__ == "__main__":
    os.environ.setdefault("SVCREST_LOG", "")
    main()
