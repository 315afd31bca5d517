"""Instructions per request, counted by valgrind's callgrind: repeatable on a busy machine.

Usage::

    python bench/instructions.py [--requests 2000] [--baseline-src PATH] [--cases plain,wsgi]

Each case of ``bench/inprocess.py`` (anonymous GET, the same with one extra
``rest_pre_serve_request`` filter, a 404, a cookie + nonce GET, a WSGI GET) runs twice under
``valgrind --tool=callgrind``: once warming up only, once with ``--requests`` more requests;
the difference divided by the number of requests is the cost of one request in CPU
instructions. Unlike seconds, the count does not change when other processes share the
machine. With ``--baseline-src`` (a ``src`` directory of another checkout, e.g. a
``git worktree`` of an older commit) every case is also counted with that svcrest on
``PYTHONPATH``, interleaved, and the ratio is shown. Needs ``valgrind`` (Debian package).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = ["plain", "filter", "404", "auth", "wsgi"]
LABELS = {
    "plain": "anonymous GET",
    "filter": "+1 pre_serve filter",
    "404": "404 (no route)",
    "auth": "cookie + nonce GET",
    "wsgi": "WSGI anonymous GET",
}


def child(kind: str, requests: int) -> None:
    """Run in the measured process: warm up, then ``requests`` requests of ``kind``."""
    sys.path.insert(0, str(HERE))
    import inprocess

    if kind == "wsgi":
        run_wsgi = inprocess.wsgi_case(inprocess.make_app(), inprocess.PATH, 200)
        run_wsgi(50)
        if requests:
            run_wsgi(requests)
        return
    if kind == "auth":
        app = inprocess.make_app(permission=True)
        headers = inprocess.login_headers(app)
    else:
        app = inprocess.make_app(extra_filter=kind == "filter")
        headers = []
    path = "/svc-json/demo/v1/nothing/42" if kind == "404" else inprocess.PATH
    run = inprocess.asgi_case(app, path, headers, 404 if kind == "404" else 200)
    loop = asyncio.new_event_loop()
    loop.run_until_complete(run(50))
    if requests:
        loop.run_until_complete(run(requests))


def count(kind: str, requests: int, src: str | None) -> int:
    """Instructions callgrind counts for one child run."""
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--child",
        kind,
        str(requests),
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count from callgrind:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def per_request(kind: str, requests: int, src: str | None) -> int:
    return (count(kind, requests, src) - count(kind, 0, src)) // requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--baseline-src", default=None)
    parser.add_argument(
        "--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}"
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options.child[0], int(options.child[1]))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    print(f"instructions per request ({options.requests} requests, callgrind)")
    header = f"{'case':24} {'this tree':>10}"
    if options.baseline_src:
        header += f" {'baseline':>10} {'ratio':>6}"
    print(header)
    for kind in options.cases.split(","):
        if kind not in LABELS:
            raise SystemExit(f"unknown case {kind!r} (known: {', '.join(CASES)})")
        mine = per_request(kind, options.requests, None)
        line = f"{LABELS[kind]:24} {mine:>10,}"
        if options.baseline_src:
            theirs = per_request(kind, options.requests, options.baseline_src)
            line += f" {theirs:>10,} {mine / theirs:>6.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
