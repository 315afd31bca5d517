"""A change's shared cost on the writing host, a wake: the feed's read and its render, per change.

Usage::

    python bench/feed_render.py [--store sqlite,pg] [--changes 400] [--reps 20]
        [--parts read,log,items,render,view,cursor] [--compare NAME=SRC ...] [--postgres URL]
        [--no-wall]

Whatever the number of subscribers, each wake of a collection's change feed does some work
once on the host serving them: the feed's tail reads the log's new changes and the items
they name (``_Tail._changes`` then ``_ChangeRender.load_all``: ``changes_after`` and
``CollectionTable.get_many``), and the first stream of each viewer renders every change
(``ChangeFeed._frames``: the read permission, the item's view as its GET shows it, its
JSON, the cursor and the Server-Sent Events frame). On the writing worker all of it holds
the interpreter's lock its writes need. This script counts that work per change, with
``--changes`` changes a wake (a server at ~1,000 writes a second: a few hundred).

A child process builds the books site of ``tests/e2e/store_site.py`` (a copy) on a SQLite file or a
PostgreSQL database (``pg``: a throw-away server as the tests start one, ``tests/pg.py``,
unless ``--postgres URL``), records ``--changes`` books and then repeats one part
``--reps`` times:

- ``read``: the tail's read of the wake (the log's rows, then the items' rows);
  ``log``: the log's rows alone; ``items``: the items' rows alone;
- ``render``: ``_frames`` of the whole wake for one anonymous subscriber (a fresh shared
  read each time: every view rendered, every cursor made); ``view``: the render's
  ``allowed`` and view of each change alone (``viewing``'s function, in a tree that has
  it); ``cursor``: the cursors alone (``cursor_encoder``'s, in a tree that has it).

Each part runs twice under valgrind's callgrind (``--reps`` and 2 x ``--reps``
repetitions); the difference over ``--reps`` x ``--changes`` is the instructions a change.
Unlike seconds, the count does not move with the machine's load. ``--compare NAME=SRC``
counts another checkout's ``src`` too, interleaved. Then (unless ``--no-wall``) each part's
wall time a change in this process, best of five (noisy on a shared machine: run it
niced, note ``uptime``). Needs ``valgrind``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from callgrind import collected, fixed_paths, prime, settle

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("read", "log", "items", "render", "view", "cursor")
#: The path of the subscribers' request.
PATH = "/shop/v1/books/changes"
#: The books of ``tests/e2e/store_site.py`` (the site of ``bench/feed_latency.py``); a copy:
#: the counted children run from a copy of ``bench`` and ``src`` alone.
BOOKS: dict[str, Any] = {
    "title": "book",
    "type": "object",
    "properties": {
        "title": {"type": "string", "required": True, "context": ["view", "edit", "embed"]},
        "year": {"type": "integer", "default": 0, "context": ["view", "edit"]},
    },
}


def anyone(user: Any, item: Any) -> bool:
    """The write rule of the site: everyone writes."""
    return True


class Workload:
    """A site on ``store`` (a SQLite file's path or a PostgreSQL URL) holding ``changes``
    books just created, and each part's one repetition (a method of the part's name)."""

    def __init__(self, store: str, changes: int) -> None:
        from svcrest import App, StoreCollection
        from svcrest.http.request import Request
        from svcrest.store import change_feed

        self.app = App(store=store)
        collection = self.app.register_controller(
            StoreCollection("shop/v1", "books", BOOKS, write=anyone, sortable=("title", "year"))
        )
        table = collection.table
        for number in range(changes):
            table.insert({"title": f"book {number}", "year": 1900 + number % 120})
        self.feed = collection.feed
        self.render = collection._feed_render
        self.kind = self.feed.object_type
        self.db = table.store
        self.tail = change_feed._Tail
        self.shared = change_feed._Shared
        self.frame = change_feed._sse_frame
        self.changes = self.tail._changes(self.db, self.kind, 0)[0]
        assert len(self.changes) == changes, len(self.changes)
        items = self.render.load_all(self.changes)
        render: Any = self.render
        self.loaded: dict[Any, Any] = {
            (render, one.seq): item for one, item in zip(self.changes, items, strict=True)
        }
        self.request = Request("GET", PATH)
        self.request.site = self.app  # as the server sets it
        self.key = self.render.viewer(self.request)
        self.when = time.time()

    def part(self, name: str) -> Callable[[], None]:
        if name not in PARTS:
            raise SystemExit(f"unknown part {name!r} (known: {', '.join(PARTS)})")
        one: Callable[[], None] = getattr(self, "render_all" if name == "render" else name)
        return one

    def read(self) -> None:
        self.render.load_all(self.tail._changes(self.db, self.kind, 0)[0])

    def log(self) -> None:
        self.tail._changes(self.db, self.kind, 0)

    def items(self) -> None:
        self.render.load_all(self.changes)

    def render_all(self) -> None:
        shared = self.shared(self.when)
        shared.loaded = self.loaded
        self.feed._frames(
            self.changes, self.when, shared.cursors, shared, self.request, self.render,
            self.frame, self.key,
        )  # fmt: skip

    def view(self) -> None:
        render, loaded, request = self.render, self.loaded, self.request
        # (A tree whose render works a viewer's view out once a read: as its feed does.)
        viewing = getattr(render, "viewing", None)
        plan = viewing(request) if viewing is not None else None
        for change in self.changes:
            item = loaded[(render, change.seq)]
            if render.allowed(change, item, request):
                if plan is None:
                    render.view(change, item, request)
                else:
                    plan(change, item)

    def cursor(self) -> None:
        from svcrest.store import changes

        # (A tree with one encoder for the cursors of one time: as its feed does.)
        maker = getattr(changes, "cursor_encoder", None)
        if maker is None:
            for change in self.changes:
                changes.encode_cursor(change.seq, self.when)
        else:
            encode = maker(self.when)
            for change in self.changes:
                encode(change.seq)


def child(store: str, part: str, changes: int, reps: int) -> None:
    """Run in the measured process: the site, one warm-up repetition, the heap settled,
    then ``reps`` repetitions of ``part``."""
    made = Workload(store, changes)
    one = made.part(part)
    one()
    settle()
    for _ in range(reps):
        one()
    made.app.store.close()


@contextmanager
def stores(kinds: list[str], postgres: str | None) -> Iterator[dict[str, Callable[[], str]]]:
    """Each store kind's maker of a fresh store (a SQLite file's path, a PostgreSQL
    database's URL); a throw-away PostgreSQL server while open, unless ``postgres``."""
    folder = tempfile.mkdtemp(prefix="svcrest-feed-render-")
    server: Any = None
    numbers = iter(range(1_000_000))
    try:
        makers: dict[str, Callable[[], str]] = {}
        if "sqlite" in kinds:
            makers["sqlite"] = lambda: str(Path(folder) / f"site{next(numbers)}.db")
        if "pg" in kinds:
            if postgres is None:
                sys.path.insert(0, str(ROOT))
                from tests.pg import PostgresServer

                server = PostgresServer()
                makers["pg"] = server.new_database
            else:
                url = postgres
                makers["pg"] = lambda: url
        yield makers
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def wall(store: str, part: str, changes: int, reps: int) -> float:
    """Microseconds a change of ``part`` in this process, best of five runs of ``reps``."""
    made = Workload(store, changes)
    one = made.part(part)
    one()
    best = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        for _ in range(reps):
            one()
        best = min(best, (time.perf_counter() - began) / reps / changes)
    made.app.store.close()
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", default="sqlite,pg")
    parser.add_argument("--changes", type=int, default=400)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--parts", default="read,render")
    parser.add_argument("--compare", action="append", default=[], metavar="NAME=SRC")
    parser.add_argument("--postgres", default=None, help="a database's URL (else a throw-away)")
    parser.add_argument("--no-wall", action="store_true")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        store, part, changes, reps = options.child
        child(store, part, int(changes), int(reps))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("needs valgrind")
    kinds = options.store.split(",")
    parts = options.parts.split(",")
    unknown = [one for one in parts if one not in PARTS]
    if unknown:
        raise SystemExit(f"unknown part {unknown[0]!r} (known: {', '.join(PARTS)})")
    names = ["this", *(one.split("=", 1)[0] for one in options.compare)]
    sources = [one.split("=", 1)[1] for one in options.compare]
    changes, reps = options.changes, options.reps
    print(f"instructions a change ({changes} changes a wake, callgrind; {os.uname().nodename})")
    with stores(kinds, options.postgres) as makers, fixed_paths(sources) as paths:
        env = {name: {"PYTHONPATH": path} for name, path in zip(names[1:], paths, strict=True)}
        script = str(Path(__file__).resolve())
        for kind in kinds:
            for name in names:
                prime([script, "--child", makers[kind](), "cursor", "2", "1"], env.get(name))
            for part in parts:
                counts = []
                for name in names:
                    runs = [
                        collected(
                            [script, "--child", makers[kind](), part, str(changes), str(n)],
                            env.get(name),
                        )
                        for n in (reps, 2 * reps)
                    ]
                    counts.append((runs[1] - runs[0]) / reps / changes)
                line = f"{kind:7} {part:7}" + "".join(
                    f" {name}: {count:>9,.0f}" for name, count in zip(names, counts, strict=True)
                )
                if len(counts) > 1:
                    line += "  ratios: " + " ".join(f"{counts[0] / c:.3f}" for c in counts[1:])
                print(line, flush=True)
        if not options.no_wall:
            print(f"wall, this tree, µs a change, best of 5 x {reps} (uptime: {uptime()})")
            for kind in kinds:
                shown = ", ".join(
                    f"{part} {wall(makers[kind](), part, changes, reps):.2f}" for part in parts
                )
                print(f"{kind:7} {shown}", flush=True)


def uptime() -> str:
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
