"""Cursor paging against offset paging: the cost of page 1 and of page 1,000 of a stored
collection (``svcrest.store.collection_table.CollectionTable``) of 100,000 rows on SQLite.

Usage::

    .venv/bin/python bench/collection_paging.py [--rows 100000] [--per-page 100]
        [--rounds 5] [--calls 20] [--postgres [URL]] [--json]

The table (a SQLite file in a temporary directory; with ``--postgres``, a table in that
PostgreSQL database, or in a throw-away server started as the tests start theirs) has an
integer ``priority`` (10 values, so sorting by it has long runs of ties) and a string
``title``; both are sortable (each has an index on ``(column, id)``), and the order
``priority DESC, title`` is declared in ``indexes`` (an index on ``(priority DESC, title,
id)``). For each order (by ``id``; by ``priority`` descending, ties by ``id`` descending; by
``priority`` descending then ``title`` ascending, mixed directions) it times one page of
``--per-page`` items:

- ``cursor p1``: the first page (no cursor); ``cursor p2``: the second, from page 1's
  cursor; ``cursor p1000``: page 1,000 from the cursor of page 999 (taken once, from an
  offset query, before timing). ``p1000/p1`` is the goal's ratio; ``p1000/p2`` compares two
  pages that both read a cursor (its decoding and HMAC cost the same at every depth);
- ``offset p1`` / ``offset p1000``: the same pages by ``page=`` (``LIMIT … OFFSET …``).

No page is counted (``Query(count=False)``): a total costs the same at every depth, and
would hide the paging cost. The figure is the best of ``--rounds`` rounds of the mean time of
``--calls`` queries; the rounds are interleaved (every case once per round).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from svcrest.store import open_store  # noqa: E402 - after the path above
from svcrest.store.collection_query import Query, Sort  # noqa: E402
from svcrest.store.collection_table import CollectionTable  # noqa: E402

SCHEMA = {
    "title": "bench_item",
    "properties": {
        "title": {"type": "string", "default": ""},
        "priority": {"type": "integer", "default": 0},
    },
}
ORDERS: dict[str, tuple[Sort, ...]] = {
    "id": (),
    "priority desc": (Sort("priority", descending=True),),
    "priority desc, title": (Sort("priority", descending=True), Sort("title")),
}


def fill(table: CollectionTable, rows: int) -> None:
    store = table.store
    with store.transaction() as conn:
        if store.dialect == "postgresql":
            conn.execute(
                'INSERT INTO "bench_item" ("title", "priority", "version")'
                " SELECT 'title ' || lpad(((n * 7919) % ?)::text, 6, '0'), n % 10, 1"
                " FROM generate_series(0, ? - 1) AS n",
                (rows, rows),
            )
            return
        for number in range(rows):
            conn.execute(
                'INSERT INTO "bench_item" ("title", "priority", "version") VALUES (?, ?, 1)',
                (f"title {number * 7919 % rows:06d}", number % 10),
            )


def timed(table: CollectionTable, query: Query, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        table.query(query)
    return (time.perf_counter() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--per-page", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--postgres",
        metavar="URL",
        nargs="?",
        const="start",
        help="on PostgreSQL: this database, or (no URL) a throw-away server as the tests start",
    )
    args = parser.parse_args()
    deep = 1000
    server = None
    with tempfile.TemporaryDirectory() as directory:
        location = str(Path(directory) / "bench.db")
        if args.postgres == "start":
            sys.path.insert(0, str(ROOT))  # the repository root, for tests.pg
            from tests.pg import PostgresServer

            server = PostgresServer()
            location = server.new_database()
        elif args.postgres:
            location = args.postgres
        store = open_store(location)
        table = CollectionTable(
            store,
            SCHEMA,
            sortable=("title", "priority"),
            indexes=[ORDERS["priority desc, title"]],
            secret=b"bench-secret-key",
        )
        table.migrate()
        started = time.perf_counter()
        fill(table, args.rows)
        filled = time.perf_counter() - started
        with store.transaction() as conn:
            conn.execute("ANALYZE")
        cases: dict[str, Query] = {}
        for name, sort in ORDERS.items():
            before = table.query(Query(per_page=args.per_page, page=deep - 1, sort=sort))
            assert before.next_cursor is not None, "fewer rows than 1,000 pages"
            base = Query(per_page=args.per_page, sort=sort, count=False)
            second = table.query(Query(per_page=args.per_page, sort=sort)).next_cursor
            cases[f"{name}: cursor p1"] = base
            cases[f"{name}: cursor p2"] = replace(base, cursor=second)
            cases[f"{name}: cursor p{deep}"] = replace(base, cursor=before.next_cursor)
            cases[f"{name}: offset p1"] = base
            cases[f"{name}: offset p{deep}"] = replace(base, page=deep)
            deep_ids = [item["id"] for item in table.query(cases[f"{name}: cursor p{deep}"]).items]
            offset_ids = [
                item["id"] for item in table.query(cases[f"{name}: offset p{deep}"]).items
            ]
            assert deep_ids == offset_ids, f"{name}: the cursor's page differs from the offset's"
        for query in cases.values():  # warm the page cache and the statement caches
            timed(table, query, args.calls)
        best = {name: float("inf") for name in cases}
        for _ in range(args.rounds):
            for name, query in cases.items():
                best[name] = min(best[name], timed(table, query, args.calls))
        store.close()
        if server is not None:
            server.stop()
    report(args, filled, best, deep)


def report(args: Any, filled: float, best: dict[str, float], deep: int) -> None:
    if args.json:
        print(json.dumps({"rows": args.rows, "per_page": args.per_page, "ms": {
            name: round(seconds * 1000, 4) for name, seconds in best.items()
        }}))  # fmt: skip
        return
    print(
        f"{'PostgreSQL' if args.postgres else 'SQLite'}: {args.rows:,} rows"
        f" (filled in {filled:.1f} s), {args.per_page} per page,"
        f" best of {args.rounds} rounds x {args.calls} queries\n"
    )
    print(
        f"| order | cursor p1 | cursor p2 | cursor p{deep} | p{deep}/p1 | p{deep}/p2"
        f" | offset p1 | offset p{deep} | p{deep}/p1 |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in ORDERS:
        c1, c2 = best[f"{name}: cursor p1"], best[f"{name}: cursor p2"]
        cd = best[f"{name}: cursor p{deep}"]
        o1, od = best[f"{name}: offset p1"], best[f"{name}: offset p{deep}"]
        print(
            f"| {name} | {c1 * 1000:.3f} ms | {c2 * 1000:.3f} ms | {cd * 1000:.3f} ms"
            f" | {cd / c1:.2f} | {cd / c2:.2f} | {o1 * 1000:.3f} ms | {od * 1000:.3f} ms"
            f" | {od / o1:.2f} |"
        )


if __name__ == "__main__":
    main()
