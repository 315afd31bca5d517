"""A ``StoreCollection`` GET against the same route written by hand, over the same table.

Usage::

    .venv/bin/python bench/collection_get.py [--rows 1000] [--rounds 15] [--calls 2000]
        [--postgres [URL]] [--json]

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
rounds are interleaved (every case once per round). ``ratio`` is hand-written time over
StoreCollection time (the goal: 0.9 or more).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

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
    app.register_rest_route(
        "hand/v1",
        "/items",
        {
            "methods": "GET",
            "callback": get_items,
            "permission_callback": public,
            "args": {
                "context": CONTEXT,
                "page": {"type": "integer", "default": 1, "minimum": 1},
                "per_page": {"type": "integer", "default": 10, "minimum": 1, "maximum": 100},
            },
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--postgres", nargs="?", const="", default=None)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
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
        try:
            app = build(store, options.rows)
            cases = {
                "item": ("/items/42", ""),
                "page of 10": ("/items", "per_page=10&page=3"),
            }
            runs: dict[tuple[str, str], Callable[[int], bytes]] = {}
            for case, (path, query) in cases.items():
                ours = wsgi_get(app, f"/svc-json/bench/v1{path}", query)
                hand = wsgi_get(app, f"/svc-json/hand/v1{path}", query)
                if ours(1).replace(b"/bench/v1/", b"/hand/v1/") != hand(1):
                    raise SystemExit(f"{case}: the two routes answer different bodies")
                runs[(case, "StoreCollection")] = ours
                runs[(case, "hand-written")] = hand
            best = dict.fromkeys(runs, float("inf"))
            for _ in range(options.rounds):
                for key, run in runs.items():
                    start = time.perf_counter()
                    run(options.calls)
                    best[key] = min(best[key], (time.perf_counter() - start) / options.calls)
        finally:
            app.store.close()
            if server is not None:
                server.stop()
    results = {
        case: {
            "StoreCollection_us": round(best[(case, "StoreCollection")] * 1e6, 1),
            "hand_written_us": round(best[(case, "hand-written")] * 1e6, 1),
            "ratio": round(best[(case, "hand-written")] / best[(case, "StoreCollection")], 3),
        }
        for case in cases
    }
    if options.json:
        print(json.dumps(results, indent=2))
        return
    print("| case | StoreCollection | hand-written | ratio (goal ≥ 0.9) |")
    print("| --- | ---: | ---: | ---: |")
    for case, figures in results.items():
        print(
            f"| {case} | {figures['StoreCollection_us']} µs | {figures['hand_written_us']} µs"
            f" | {figures['ratio']:.2f} |"
        )


if __name__ == "__main__":
    os.environ.setdefault("SVCREST_LOG", "")
    main()
