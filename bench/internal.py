"""Internal dispatch: calls per second of ``app.rest_do_request`` on a trivial route.

Usage::

    python bench/internal.py [--seconds 2] [--json]

One thread, no HTTP: an ``App`` with ``GET demo/v1 /items/(?P<id>\\d+)`` returning
``{"id": 42, "title": "item"}`` is asked ``app.rest_do_request("/demo/v1/items/42")`` in a
loop for about ``--seconds`` seconds after a short warm-up (the first call builds the server
and compiles the route table). ``run.py`` runs it in a child process pinned to the server CPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import harness

ROUTE = "/demo/v1/items/42"
ITEM = {"id": 42, "title": "item"}
GOAL_PER_SECOND = 50_000
BATCH = 100


def get_item(request: Any) -> dict[str, Any]:
    """Return the item named by the URL parameter."""
    return {"id": int(request["id"]), "title": "item"}


def measure(seconds: float) -> dict[str, float]:
    """Calls per second of ``rest_do_request`` over about ``seconds`` seconds."""
    import svcrest
    from svcrest import App

    app = App()
    # svcrest.public where the measured tree has it (older trees, compared with it, do not).
    public = getattr(svcrest, "public", None)
    app.register_rest_route(
        "demo/v1",
        r"/items/(?P<id>\d+)",
        {"methods": "GET", "callback": get_item, "permission_callback": public},
    )
    response = app.rest_do_request(ROUTE)
    if response.status != 200 or response.data != ITEM:
        raise SystemExit(f"rest_do_request({ROUTE!r}) answered {response.status} {response.data!r}")
    do = app.rest_do_request
    warm_until = time.perf_counter() + min(0.3, seconds / 5)
    while time.perf_counter() < warm_until:
        do(ROUTE)
    calls = 0
    start = time.perf_counter()
    deadline = start + seconds
    now = start
    while now < deadline:
        for _ in range(BATCH):
            do(ROUTE)
        calls += BATCH
        now = time.perf_counter()
    elapsed = now - start
    return {"calls": calls, "seconds": elapsed, "per_second": calls / elapsed}


def report(cpus: harness.Cpus, svcrest_error: str | None, seconds: float = 2.0) -> str:
    """The internal dispatch section of ``run.py``'s report (measured in a pinned child)."""
    title = "## Internal dispatch"
    text = (
        f'`app.rest_do_request("{ROUTE}")` on a trivial GET route, one thread, '
        f"about {seconds:g} s after a warm-up."
    )
    if svcrest_error:
        return f"{title}\n\n{text}\n\nskipped: svcrest does not import: {svcrest_error}"
    try:
        data: Any = harness.child_python_json(
            [__file__, "--json", "--seconds", str(seconds)], cpus=cpus
        )
    except harness.ServerError as exc:
        return f"{title}\n\n{text}\n\nfailed: {exc}"
    rate = float(data["per_second"])
    verdict = "met" if rate >= GOAL_PER_SECOND else "missed"
    table = harness.markdown_table(
        ["calls/s", "µs per call", "calls", "goal"],
        [
            [
                harness.fmt_rps(rate),
                f"{1e6 / rate:.1f}",
                f"{int(data['calls']):,}",
                f"≥ {GOAL_PER_SECOND:,}: {verdict}",
            ]
        ],
        left=("goal",),
    )
    return f"{title}\n\n{text}\n\n{table}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="svcrest internal dispatch benchmark.")
    parser.add_argument("--seconds", type=float, default=2.0, help="measured time (default 2)")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    harness.ensure_env(__file__, need_wrk=False)
    data = measure(args.seconds)
    if args.json:
        print(json.dumps(data))
    else:
        print(
            f"rest_do_request: {harness.fmt_rps(data['per_second'])} calls/s "
            f"({1e6 / data['per_second']:.1f} µs per call, {int(data['calls']):,} calls)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
