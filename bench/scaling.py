"""Route-table scaling: does serving a route get slower when the site registers thousands?

Usage::

    python bench/scaling.py [--quick] [--duration S] [--rounds N]
    python bench/scaling.py --build N     # one JSON line: register/compile time and RSS

svcrest apps with N = 10, 1,000 and 10,000 regex routes spread over 100 namespaces (the table
of ``targets/routetable.py``) are served under uvicorn and loaded with wrk, requesting the last
registered route (a hit only the last route matches) and a miss in the same namespace (404).
Starlette and Falcon serve the same table with 10, 1,000 and 5,000 routes for comparison.
req/s is the best of the interleaved rounds; "vs 10 routes" divides it by the same framework's
and request's 10-route figure.

``--build N`` runs in a child process: it registers the N routes on a fresh ``App`` (timed),
dispatches one request with ``app.rest_do_request`` to force the server and route table to be
built and compiled (timed), and reports how much VmRSS (``/proc/self/status``) grew from just
after ``App()`` was created.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import harness

SVCREST_SIZES = (10, 1_000, 10_000)
PEER_SIZES = (10, 1_000, 5_000)
GOAL_HIT_RATIO = 0.90  # 10,000 routes vs 10 routes, last route requested
GOAL_BUILD_S = 1.0  # register + compile 10,000 routes
GOAL_RSS_MB = 60.0  # RSS growth for 10,000 routes
ORIGIN = {"Origin": "http://example.com"}


@dataclass(frozen=True)
class Case:
    """One (framework, table size) server and the requests measured against it."""

    framework: str
    module: str
    routes: int
    requests: tuple[str, ...]  # "hit", "miss"

    @property
    def svcrest(self) -> bool:
        return self.framework == "svcrest"


def cases() -> list[Case]:
    out = [Case("svcrest", "svcrest_routes", n, ("hit", "miss")) for n in SVCREST_SIZES]
    out += [Case("starlette", "starlette_routes", n, ("hit",)) for n in PEER_SIZES]
    out += [Case("falcon", "falcon_routes", n, ("hit",)) for n in PEER_SIZES]
    return out


def _routetable() -> ModuleType:
    if str(harness.TARGETS_DIR) not in sys.path:
        sys.path.insert(0, str(harness.TARGETS_DIR))
    import routetable

    return routetable


def _measure_case(
    case: Case,
    results: dict[tuple[str, int, str], harness.Measured],
    settings: harness.WrkSettings,
    cpus: harness.Cpus,
) -> None:
    table = _routetable()
    paths = {
        "hit": table.PREFIX + table.last_route(case.routes),
        "miss": table.PREFIX + table.missing_route(case.routes),
    }
    headers = ORIGIN if case.svcrest else {}
    label = f"scaling-{case.framework}-{case.routes}"
    with harness.uvicorn_server(
        case.module, label=label, cpus=cpus, env={"BENCH_ROUTES": str(case.routes)}
    ) as server:
        for request in case.requests:
            result = results[(case.framework, case.routes, request)]
            if result.skipped:
                continue
            url = server.url + paths[request]
            if request == "hit":
                expect = {"id": 42, "title": "item"}
                harness.check_response(url, headers=headers, status=200, json_subset=expect)
            else:
                harness.check_response(url, headers=headers, status=404)
            run = harness.run_wrk(
                url, settings=settings, cpus=cpus, headers=headers, server_pid=server.pid
            )
            result.runs.append(run)
            print(
                f"  {case.framework:<10} {case.routes:>6} routes {request:<4} "
                f"{harness.fmt_rps(run.rps):>9} req/s  server CPU {harness.cpu_cells(run)[0]}",
                flush=True,
            )


def run_http(
    settings: harness.WrkSettings, rounds: int, cpus: harness.Cpus, svcrest_error: str | None
) -> dict[tuple[str, int, str], harness.Measured]:
    """Measure every case, interleaved over ``rounds`` rounds."""
    all_cases = cases()
    results = {
        (c.framework, c.routes, r): harness.Measured(
            f"{c.framework} {c.routes}", expected_non_2xx=r == "miss"
        )
        for c in all_cases
        for r in c.requests
    }
    for round_no in range(1, rounds + 1):
        print(f"scaling round {round_no}/{rounds}", flush=True)
        for case in all_cases:
            keys = [(case.framework, case.routes, r) for r in case.requests]
            if case.svcrest and svcrest_error:
                for key in keys:
                    results[key].skipped = "svcrest does not import (see above)"
            if all(results[k].skipped for k in keys):
                continue
            try:
                _measure_case(case, results, settings, cpus)
            except harness.ServerError as exc:
                print(f"  {case.framework} {case.routes} skipped: {exc}", flush=True)
                for key in keys:
                    results[key].skipped = str(exc)
    return results


def _ratio(value: float | None, base: float | None) -> float | None:
    return value / base if value is not None and base else None


def http_table(results: dict[tuple[str, int, str], harness.Measured]) -> str:
    rows = []
    for (framework, routes, request), result in results.items():
        best = result.best
        base = results.get((framework, min(k[1] for k in results if k[0] == framework), request))
        base_best = base.best if base else None
        ratio = _ratio(best.rps if best else None, base_best.rps if base_best else None)
        goal = ""
        if framework == "svcrest" and request == "hit" and routes == max(SVCREST_SIZES):
            verdict = "-" if ratio is None else ("met" if ratio >= GOAL_HIT_RATIO else "missed")
            goal = f"≥ {GOAL_HIT_RATIO:.2f}: {verdict}"
        if best is None:
            rows.append([framework, f"{routes:,}", request, *["-"] * 7, goal, result.notes()])
            continue
        per_cpu = _ratio(best.per_cpu_second, base_best.per_cpu_second if base_best else None)
        rows.append(
            [
                framework,
                f"{routes:,}",
                request,
                harness.fmt_rps(best.rps),
                harness.fmt_ms(best.p50_ms),
                harness.fmt_ms(best.p99_ms),
                *harness.cpu_cells(best),
                harness.fmt_ratio(ratio),
                harness.fmt_ratio(per_cpu),
                goal,
                result.notes(),
            ]
        )
    header = ["framework", "routes", "request", "req/s (best)", "p50", "p99", "server CPU"]
    header += ["req/CPU-s", "vs 10 routes", "vs 10 (per CPU-s)", "goal", "notes"]
    return harness.markdown_table(header, rows, left=("request", "goal", "notes"))


# --------------------------------------------------------------------------- build (child)


def _vmrss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def build(n: int) -> dict[str, float]:
    """Register ``n`` routes on a fresh App, dispatch once; timings (s) and RSS growth (MB)."""
    table = _routetable()
    from svcrest import App

    defs = list(table.routes(n))
    app = App()
    rss_before = _vmrss_kb()
    start = time.perf_counter()
    table.register_svcrest(app, defs)
    registered = time.perf_counter()
    response = app.rest_do_request(table.last_route(n))
    dispatched = time.perf_counter()
    status = getattr(response, "status", None)
    if status != 200:
        raise SystemExit(f"rest_do_request({table.last_route(n)!r}) answered {status}")
    again_start = time.perf_counter()
    app.rest_do_request(table.last_route(n))
    again = time.perf_counter() - again_start
    return {
        "routes": n,
        "register_s": registered - start,
        "first_dispatch_s": dispatched - registered,
        "second_dispatch_s": again,
        "rss_growth_mb": (_vmrss_kb() - rss_before) / 1024,
    }


def run_builds(cpus: harness.Cpus) -> list[dict[str, float] | str]:
    """``--build N`` for every svcrest size, each in its own pinned child process."""
    out: list[dict[str, float] | str] = []
    for n in SVCREST_SIZES:
        try:
            data = harness.child_python_json([__file__, "--build", str(n)], cpus=cpus)
            out.append(data)  # type: ignore[arg-type]  # the child prints this dict
        except harness.ServerError as exc:
            out.append(f"{n}: {exc}")
    return out


def build_table(builds: list[dict[str, float] | str]) -> str:
    rows = []
    for item in builds:
        if isinstance(item, str):
            rows.append([item, "", "", "", "", "", ""])
            continue
        total = item["register_s"] + item["first_dispatch_s"]
        goal = ""
        if item["routes"] == max(SVCREST_SIZES):
            fast = "met" if total < GOAL_BUILD_S else "missed"
            small = "met" if item["rss_growth_mb"] < GOAL_RSS_MB else "missed"
            goal = f"total < {GOAL_BUILD_S:g} s: {fast}; RSS < {GOAL_RSS_MB:g} MB: {small}"
        rows.append(
            [
                f"{int(item['routes']):,}",
                f"{item['register_s'] * 1000:.1f} ms",
                f"{item['first_dispatch_s'] * 1000:.1f} ms",
                f"{total * 1000:.1f} ms",
                f"{item['second_dispatch_s'] * 1e6:.0f} µs",
                f"{item['rss_growth_mb']:.1f} MB",
                goal,
            ]
        )
    header = ["routes", "register", "first dispatch", "total", "next dispatch", "RSS growth"]
    return harness.markdown_table([*header, "goal"], rows, left=("goal",))


def report(
    settings: harness.WrkSettings, rounds: int, cpus: harness.Cpus, svcrest_error: str | None
) -> str:
    """The scaling section of the report: wrk figures, then registration cost and RSS."""
    results = run_http(settings, rounds, cpus, svcrest_error)
    parts = [
        "## Route-table scaling",
        "Routes spread over 100 namespaces (`ns{i}/v1`), four shapes; `hit` requests the last "
        "registered route, `miss` a path in its namespace that no route matches. svcrest "
        f"requests send `Origin: {ORIGIN['Origin']}`.",
        http_table(results),
        "### Registering and compiling the svcrest table",
        "`register`: `register_rest_route` for every route; `first dispatch`: the first "
        "`app.rest_do_request` of the last route (builds the server and compiles the table); "
        "`next dispatch`: the second one; RSS growth from just after `App()`.",
    ]
    if svcrest_error:
        parts.append("skipped: svcrest does not import (see above)")
    else:
        parts.append(build_table(run_builds(cpus)))
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="svcrest route-table scaling benchmark.")
    parser.add_argument("--build", type=int, metavar="N", help="child mode: build N routes")
    parser.add_argument("--quick", action="store_true", help="2 s runs (default 5 s)")
    parser.add_argument("--duration", type=int, help="seconds measured per run")
    parser.add_argument("--warmup", type=int, default=1, help="warm-up seconds (default 1)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default 2)")
    parser.add_argument("--connections", type=int, default=64, help="wrk -c (default 64)")
    args = parser.parse_args(argv)
    if args.build is not None:
        harness.ensure_env(__file__, need_wrk=False)
        print(json.dumps(build(args.build)))
        return 0
    harness.ensure_env(__file__, need_wrk=True)
    duration = args.duration or (2 if args.quick else 5)
    settings = harness.WrkSettings(duration, args.warmup, args.connections)
    cpus = harness.pick_cpus()
    error = harness.svcrest_import_error()
    parts = ["# svcrest route-table scaling", harness.machine_info(cpus, settings, args.rounds)]
    if error:
        parts.append(f"**svcrest does not import**: `{error}`")
    parts.append(report(settings, args.rounds, cpus, error))
    print("\n\n".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
