"""Instructions per request, counted by valgrind's callgrind: repeatable on a busy machine.

Usage::

    python bench/instructions.py [--requests 2000] [--baseline-src PATH] [--cases plain,wsgi]
        [--compare NAME=SRC ...] [--jobs N]

Each case of ``bench/inprocess.py`` (anonymous GET, the same with one extra
``rest_pre_serve_request`` filter, the same with one extra ``rest_post_dispatch`` filter,
a 404, a cookie + nonce GET, a WSGI GET, a WSGI cookie + nonce GET, an RSGI GET through
stand-ins for granian's scope and protocol, the ASGI GET with ``svcrest serve``'s access
line written by svcrest (``logged``) or by granian's ASGI glue (``logged-granian``), to
``/dev/null``), and a small JSON POST to ``targets/svcrest_post.py``'s route, its body in one
``http.request`` message (``post``)) runs twice under
``valgrind --tool=callgrind``: once warming up only, once with ``--requests`` more requests;
the difference divided by the number of requests is the cost of one request in CPU
instructions. Unlike seconds, the count does not change when other processes share the
machine. With ``--baseline-src`` (a ``src`` directory of another checkout, e.g. a
``git worktree`` of an older commit) every case is also counted with that svcrest on
``PYTHONPATH``, interleaved, and the ratio is shown; ``--compare NAME=SRC`` adds more trees
(e.g. a compiled build installed with ``pip install --target``), counted in parallel.
Every child runs from one fixed directory (``callgrind.fixed_paths``: this checkout's
``src`` and ``bench`` and each other tree's ``svcrest`` copied to paths of one length), so
that a count depends on the tree, not on where it is checked out.
Needs ``valgrind`` (Debian package).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from callgrind import collected, fixed_paths, prime, settle

HERE = Path(__file__).resolve().parent
CASES = [
    "plain",
    "filter",
    "post-filter",
    "404",
    "auth",
    "wsgi",
    "wsgi-auth",
    "rsgi",
    "logged",
    "logged-granian",
    "post",
]
LABELS = {
    "plain": "anonymous GET",
    "filter": "+1 pre_serve filter",
    "post-filter": "+1 post_dispatch filter",
    "404": "404 (no route)",
    "auth": "cookie + nonce GET",
    "wsgi": "WSGI anonymous GET",
    "wsgi-auth": "WSGI cookie + nonce GET",
    "rsgi": "RSGI anonymous GET",
    "logged": "GET + access line (svcrest's)",
    "logged-granian": "GET + access line (granian's)",
    "post": "JSON POST (one message)",
}
#: The ``post`` case's body, as the ``svcrest-post-*`` targets send it.
POST_BODY = b'{"id": 42, "title": "item"}'


def child(kind: str, requests: int) -> None:
    """Run in the measured process: warm up (50 requests), settle the heap
    (:func:`callgrind.settle`), then ``requests`` requests of ``kind``."""
    sys.path.insert(0, str(HERE))
    import inprocess

    if kind in ("wsgi", "wsgi-auth"):
        if kind == "wsgi":
            run_wsgi = inprocess.wsgi_case(inprocess.make_app(), inprocess.PATH, 200)
        else:
            app = inprocess.make_app(permission=True)
            run_wsgi = inprocess.wsgi_case(app, inprocess.PATH, 200, inprocess.login_headers(app))
        run_wsgi(50)
        settle()
        if requests:
            run_wsgi(requests)
        return
    if kind == "post":
        run_post(inprocess, requests)
        return
    if kind == "auth":
        app = inprocess.make_app(permission=True)
        headers = inprocess.login_headers(app)
    else:
        app = inprocess.make_app(
            extra_filter=kind == "filter", extra_post_filter=kind == "post-filter"
        )
        headers = []
    path = "/svc-json/demo/v1/nothing/42" if kind == "404" else inprocess.PATH
    if kind.startswith("logged"):
        app = inprocess.access_logged(app, "granian" if kind == "logged-granian" else "svcrest")
    if kind == "rsgi":
        run = inprocess.rsgi_case(app, path, headers, 200)
    else:
        run = inprocess.asgi_case(app, path, headers, 404 if kind == "404" else 200)
    loop = asyncio.new_event_loop()
    loop.run_until_complete(run(50))
    settle()
    if requests:
        loop.run_until_complete(run(requests))


def run_post(inprocess: Any, requests: int) -> None:
    """The ``post`` case: ``targets/svcrest_post.py``'s route, its small JSON body handed
    over in one ``http.request`` message (what an ASGI server does for every small POST)."""
    sys.path.insert(0, str(HERE / "targets"))
    from svcrest_post import app

    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(POST_BODY)).encode()),
    ]
    run = inprocess.asgi_case(app, "/svc-json/demo/v1/items", headers, 200, "POST", POST_BODY)
    loop = asyncio.new_event_loop()
    loop.run_until_complete(run(50))
    settle()
    if requests:
        loop.run_until_complete(run(requests))


def count(kind: str, requests: int, src: str | None) -> int:
    """Instructions callgrind counts for one child run (with ``src`` first on the path)."""
    return collected(
        [__file__, "--child", kind, str(requests)], {"PYTHONPATH": src} if src else None
    )


def per_request(kind: str, requests: int, src: str | None) -> int:
    # every bytecode cache written before the counted runs
    prime([__file__, "--child", kind, "0"], {"PYTHONPATH": src} if src else None)
    return (count(kind, requests, src) - count(kind, 0, src)) // requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--baseline-src", default=None)
    parser.add_argument(
        "--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}"
    )
    parser.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="NAME=SRC",
        help="also count with the svcrest of SRC on PYTHONPATH (repeatable; a source tree or "
        "an installed compiled build)",
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options.child[0], int(options.child[1]))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    trees: list[tuple[str, str | None]] = [("this tree", None)]
    if options.baseline_src:
        trees.append(("baseline", options.baseline_src))
    for spec in options.compare:
        name, _, src = spec.partition("=")
        trees.append((name, src))
    print(f"instructions per request ({options.requests} requests, callgrind)")
    print(f"{'case':24}" + "".join(f" {name:>12}" for name, _ in trees))
    unknown = [kind for kind in options.cases.split(",") if kind not in LABELS]
    if unknown:
        raise SystemExit(f"unknown case {unknown[0]!r} (known: {', '.join(CASES)})")
    # Every tree's svcrest copied to a path of the same length in one fixed directory, the
    # children run from it (callgrind.fixed_paths): the counts depend on the trees, not on
    # where each one is checked out.
    with fixed_paths([src for _, src in trees if src]) as copies:
        moved = iter(copies)
        sources = [next(moved) if src else None for _, src in trees]
        for kind in options.cases.split(","):
            count_trees(kind, options.requests, options.jobs, sources)


def count_trees(kind: str, requests: int, jobs: int, sources: list[str | None]) -> None:
    """Count ``kind`` for each tree and print the line."""
    # The trees of one case are counted side by side, in parallel (a count does not change
    # with the load).
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(per_request, kind, requests, src) for src in sources]
        counts = [future.result() for future in futures]
    line = f"{LABELS[kind]:24}" + "".join(f" {count:>12,}" for count in counts)
    if len(counts) > 1:
        line += "   ratios to the first: " + " ".join(
            f"{counts[0] / count:.2f}" for count in counts[1:]
        )
    print(line, flush=True)


if __name__ == "__main__":
    main()
