"""The instruction budget: svcrest's cost per request as a ratio to Falcon's (`make budget`).

Usage::

    python bench/budget.py [--requests 300] [--check] [--write] [--cases wsgi,asgi,auth]
                           [--in-place] [--json]

Each case runs under ``valgrind --tool=callgrind`` twice (warm-up only, then warm-up plus
``--requests`` requests); the difference divided by the number of requests is one request's
cost in CPU instructions, a figure that does not change with the machine's load, nor with
the checkout's path: every child runs from one fixed directory (``callgrind.fixed_paths``;
``--in-place`` runs them from the checkout instead, to compare). Falcon's
idiomatic app (``bench/targets/falcon_wsgi.py`` / ``falcon_app.py``: one resource with an
``int`` path field answered through ``resp.media``) is counted in the same run under the same
environ or scope, so each svcrest case becomes a ratio to Falcon on the same interface:

- ``wsgi``: an anonymous ``GET /svc-json/demo/v1/items/42`` through ``app.wsgi``, against
  Falcon's WSGI app;
- ``asgi``: the same request through the ASGI app, against Falcon's ASGI app;
- ``auth``: the same request with a session cookie and a nonce to a route with a permission
  callback, through the ASGI app, against Falcon's ASGI app (which authenticates nothing:
  the ratio says what a logged-in browser's request costs over the plainest peer);
- ``collection``: an anonymous ``GET /svc-json/bench/v1/items/42`` of a ``StoreCollection``
  item (``bench/collection_get.py``'s App: 100 rows in a SQLite file) through ``app.wsgi``,
  against Falcon's WSGI app (which reads no store: the ratio says what a stored item costs
  over the plainest peer).

``bench/budget.json`` holds each case's ceiling. ``--check`` exits 1 when a case's ratio
exceeds its ceiling by more than ``tolerance`` (2 %); ``--write`` records the measured ratios
as the new ceilings, but only downwards: raising a ceiling is an edit of ``budget.json`` by
hand, with a line in ``bench/RESULTS.md`` giving the figure and the reason.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import os
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from callgrind import collected, fixed_paths, prime, settle

HERE = Path(__file__).resolve().parent
BUDGET = HERE / "budget.json"

# case -> (svcrest child kind, Falcon child kind)
CASES: dict[str, tuple[str, str]] = {
    "wsgi": ("svcrest-wsgi", "falcon-wsgi"),
    "asgi": ("svcrest-asgi", "falcon-asgi"),
    "auth": ("svcrest-auth", "falcon-asgi"),
    "collection": ("svcrest-collection", "falcon-wsgi"),
}
LABELS = {
    "wsgi": "WSGI anonymous GET",
    "asgi": "ASGI anonymous GET",
    "auth": "cookie + nonce GET (ASGI)",
    "collection": "StoreCollection item GET",
}


def _falcon(module: str) -> Any:
    sys.path.insert(0, str(HERE / "targets"))
    return __import__(module).app


def _runner(kind: str) -> Any:
    """A function running ``n`` requests of ``kind`` (a coroutine function for ASGI kinds)."""
    sys.path.insert(0, str(HERE))
    import inprocess

    if kind == "svcrest-wsgi":
        return inprocess.wsgi_case(inprocess.make_app(), inprocess.PATH, 200)
    if kind == "falcon-wsgi":
        return inprocess.wsgi_case(_Wsgi(_falcon("falcon_wsgi")), inprocess.PATH, 200)
    if kind == "svcrest-asgi":
        return inprocess.asgi_case(inprocess.make_app(), inprocess.PATH, [], 200)
    if kind == "svcrest-auth":
        app = inprocess.make_app(permission=True)
        return inprocess.asgi_case(app, inprocess.PATH, inprocess.login_headers(app), 200)
    if kind == "falcon-asgi":
        return inprocess.asgi_case(_falcon("falcon_app"), inprocess.PATH, [], 200)
    if kind == "svcrest-collection":
        import collection_get

        directory = tempfile.mkdtemp(prefix="svcrest-budget-")
        atexit.register(shutil.rmtree, directory, True)
        app = collection_get.build(os.path.join(directory, "items.db"), 100)
        return collection_get.wsgi_get(app, "/svc-json/bench/v1/items/42", "")
    raise SystemExit(f"unknown kind {kind!r}")


class _Wsgi:
    """A WSGI callable under the ``.wsgi`` attribute that ``inprocess.wsgi_case`` reads."""

    def __init__(self, wsgi: Any) -> None:
        self.wsgi = wsgi


def child(kind: str, requests: int) -> None:
    """Run in the measured process: 50 warm-up requests, the heap settled
    (:func:`callgrind.settle`), then ``requests`` more."""
    run = _runner(kind)
    if kind.endswith(("wsgi", "collection")):
        run(50)
        settle()
        if requests:
            run(requests)
        return
    loop = asyncio.new_event_loop()
    loop.run_until_complete(run(50))
    settle()
    if requests:
        loop.run_until_complete(run(requests))


def count(kind: str, requests: int, env: dict[str, str] | None = None) -> int:
    """Instructions callgrind counts for one child run."""
    return collected([__file__, "--child", kind, str(requests)], env)


def measure(kinds: list[str], requests: int, jobs: int, in_place: bool = False) -> dict[str, int]:
    """Instructions per request of each kind (counted in parallel: counts ignore the load),
    each child run from the same fixed paths whatever the checkout's (:func:`fixed_paths`),
    or with ``in_place`` from the checkout itself (its ``src`` first on the path), as before
    session 21: to see what the fixed paths remove (``bench/budget_paths.py --in-place``)."""
    runs = [(kind, n) for kind in kinds for n in (0, requests)]
    env = {"PYTHONPATH": str(HERE.parent / "src")} if in_place else None
    with nullcontext() if in_place else fixed_paths(), ThreadPoolExecutor(jobs) as pool:
        for kind in kinds:  # every bytecode cache written before the counted runs
            prime([__file__, "--child", kind, "0"], env)
        counted = pool.map(lambda run: count(run[0], run[1], env), runs)
        totals = dict(zip(runs, counted, strict=True))
    return {kind: (totals[kind, requests] - totals[kind, 0]) // requests for kind in kinds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--check", action="store_true", help="exit 1 past a ceiling")
    parser.add_argument("--write", action="store_true", help="lower the ceilings to these")
    parser.add_argument(
        "--in-place",
        action="store_true",
        help="run the children from the checkout's own paths, not the fixed ones (to compare)",
    )
    parser.add_argument("--json", action="store_true", help="print the counts as JSON only")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options.child[0], int(options.child[1]))
        return 0
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    cases = options.cases.split(",")
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        raise SystemExit(f"unknown case(s) {', '.join(unknown)} (known: {', '.join(CASES)})")
    kinds = sorted({kind for case in cases for kind in CASES[case]})
    counts = measure(kinds, options.requests, options.jobs, options.in_place)
    if options.json:
        print(json.dumps({case: [counts[kind] for kind in CASES[case]] for case in cases}))
        return 0
    budget = json.loads(BUDGET.read_text())
    tolerance = float(budget["tolerance"])
    ceilings: dict[str, float] = budget["ceilings"]
    print(f"instructions per request ({options.requests} requests, callgrind)")
    print(f"{'case':28} {'svcrest':>9} {'Falcon':>9} {'ratio':>6} {'ceiling':>8}")
    over = []
    for case in cases:
        ours, falcon = (counts[kind] for kind in CASES[case])
        ratio = ours / falcon
        ceiling = ceilings.get(case)
        shown = f"{ceiling:.3f}" if ceiling is not None else "-"
        verdict = ""
        if ceiling is not None and ratio > ceiling * (1 + tolerance):
            over.append(case)
            verdict = f"  OVER (more than {tolerance:.0%} past the ceiling)"
        print(f"{LABELS[case]:28} {ours:>9,} {falcon:>9,} {ratio:>6.3f} {shown:>8}{verdict}")
        if options.write and (ceiling is None or ratio < ceiling):
            ceilings[case] = round(ratio, 3)
    if options.write:
        BUDGET.write_text(json.dumps(budget, indent=2) + "\n")
        print(f"ceilings written to {BUDGET.relative_to(HERE.parent)}")
    if options.check and over:
        print(
            "svcrest costs more instructions per request than bench/budget.json allows; "
            "find the change (bench/instructions.py --baseline-src) or, if the cost is wanted, "
            "raise the ceiling with a line in bench/RESULTS.md saying why"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
