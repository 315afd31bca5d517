"""Benchmark svcrest against a raw ASGI callable and its peers, over HTTP with wrk.

Usage::

    python bench/run.py [--quick] [--duration S] [--warmup S] [--rounds N] [--only NAME[,NAME]]

The script creates (or reuses) its own venv in ``bench/.env`` with Starlette, Falcon, FastAPI,
uvicorn[standard] and svcrest from this repository (editable), installs ``wrk`` with apt-get
when it is missing, and re-executes itself inside that venv. Each target in ``bench/targets/``
is started under uvicorn (one worker, httptools, uvloop, no access log) pinned to one CPU and
loaded by wrk pinned to another. All targets are measured in one run, interleaved
(A B C ... A B C), and the best round of each is reported with its p50/p99 latency and its
ratio to the raw ASGI callable. The route-table scaling benchmark (``scaling.py``) and the
internal dispatch benchmark (``internal.py``) follow. The Markdown report is printed and
written to ``bench/out/latest.md``.

``--only`` takes target names (see ``--help``), ``scaling`` or ``internal``; without it
everything runs.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import harness

ITEM_PATH = "/svc-json/demo/v1/items/42"
MISS_PATH = "/svc-json/demo/v1/nothing/42"
ITEM = {"id": 42, "title": "item"}
POST_PATH = "/svc-json/demo/v1/items"
#: The JSON body of the POST targets (the same item back: ``ITEM``).
POST_BODY = b'{"id": 42, "title": "item"}'
ORIGIN = {"Origin": "http://example.com"}
#: A value as long as a real auth cookie's (login|expiration|token|HMAC); only sent, never
#: checked (the raw targets ignore it).
AUTH_COOKIE_VALUE = f"bench|1795878764|{'t' * 43}|{'h' * 64}"


@dataclass(frozen=True)
class Target:
    """One server to measure: its module in ``bench/targets`` and the request wrk sends."""

    name: str
    module: str
    path: str = ITEM_PATH
    status: int = 200
    svcrest: bool = False
    auth: bool = False
    origin: bool = False  # wrk sends ``Origin: http://example.com``
    goal: float | None = None  # the target ratio to raw ASGI
    server: str = "uvicorn"  # or granian (harness.SERVER_COMMANDS)
    interface: str = "asgi"  # or wsgi, or rsgi (granian only)
    attribute: str = "app"  # what the server serves in the module (svcrest's WSGI: app.wsgi)
    #: Extra environment of the server (``--compiled``: PYTHONPATH of a compiled build).
    env: tuple[tuple[str, str], ...] = ()
    #: Header lines wrk sends besides ``Origin`` (fixed ones; ``auth`` logs in instead).
    sends: tuple[tuple[str, str], ...] = ()
    #: A JSON body: every request is a POST of it (``Content-Type: application/json``).
    body: bytes = b""

    @property
    def expect(self) -> Mapping[str, object]:
        return ITEM if self.status == 200 else {"code": "rest_no_route"}


TARGETS = (
    Target("raw-asgi", "raw_asgi"),
    Target("raw-asgi-svc-headers", "raw_svc_headers", origin=True),
    Target("starlette", "starlette_app"),
    Target("falcon", "falcon_app"),
    Target("fastapi", "fastapi_app"),
    Target("svcrest", "svcrest_plain", svcrest=True, origin=True, goal=0.70),
    Target("svcrest-auth", "svcrest_auth", svcrest=True, auth=True, origin=True, goal=0.55),
    Target("svcrest-404", "svcrest_plain", MISS_PATH, status=404, svcrest=True, origin=True),
    # The serving pairs of `svcrest serve --server S --interface I` (issue 13): granian's
    # ASGI and WSGI, uvicorn's WSGI; Falcon's WSGI app on granian is the anchor.
    Target("falcon-granian-wsgi", "falcon_wsgi", server="granian", interface="wsgi"),
    # The ceilings on that server: two header lines, and svcrest's twelve (bench/README.md).
    Target("raw-granian-wsgi", "raw_wsgi", server="granian", interface="wsgi"),
    Target(
        "raw-granian-wsgi-svc-headers",
        "raw_wsgi",
        origin=True,
        server="granian",
        interface="wsgi",
        attribute="svc_headers",
    ),
    # The same with the lines of a cookie + nonce exchange: the request's Cookie and
    # X-SVC-Nonce (as wrk sends them to svcrest-auth-*), the answer's fourteen lines.
    Target(
        "raw-granian-wsgi-auth-headers",
        "raw_wsgi",
        origin=True,
        server="granian",
        interface="wsgi",
        attribute="svc_auth_headers",
        sends=(
            ("Cookie", f"{harness.COOKIE_NAME}={AUTH_COOKIE_VALUE}"),
            ("X-SVC-Nonce", "0" * 32),
        ),
    ),
    Target("svcrest-granian-asgi", "svcrest_plain", svcrest=True, origin=True, server="granian"),
    # `svcrest serve`'s default: the access log on (targets/svcrest_served.py), written by
    # svcrest (`-served`) or, as before session 19, by granian (`-served-granian-log`).
    Target(
        "svcrest-granian-asgi-served",
        "svcrest_served",
        svcrest=True,
        origin=True,
        server="granian",
        attribute="logged",
    ),
    Target(
        "svcrest-granian-asgi-served-granian-log",
        "svcrest_served",
        svcrest=True,
        origin=True,
        server="granian",
        env=(("SVCREST_BENCH_SERVER_ARGS", "--access-log"),),
    ),
    Target(
        "svcrest-granian-wsgi",
        "svcrest_plain",
        svcrest=True,
        origin=True,
        server="granian",
        interface="wsgi",
        attribute="app.wsgi",
    ),
    # granian's own interface (`svcrest serve --interface rsgi`): the App is an RSGI app too.
    Target(
        "svcrest-granian-rsgi",
        "svcrest_plain",
        svcrest=True,
        origin=True,
        server="granian",
        interface="rsgi",
    ),
    # A small JSON body POSTed (targets/svcrest_post.py): what reading a body costs on each
    # interface (RSGI and ASGI read it under the body deadline's timer).
    Target(
        "svcrest-post-granian-asgi",
        "svcrest_post",
        POST_PATH,
        svcrest=True,
        origin=True,
        server="granian",
        body=POST_BODY,
    ),
    Target(
        "svcrest-post-granian-rsgi",
        "svcrest_post",
        POST_PATH,
        svcrest=True,
        origin=True,
        server="granian",
        interface="rsgi",
        body=POST_BODY,
    ),
    Target(
        "svcrest-post-granian-wsgi",
        "svcrest_post",
        POST_PATH,
        svcrest=True,
        origin=True,
        server="granian",
        interface="wsgi",
        attribute="app.wsgi",
        body=POST_BODY,
    ),
    Target(
        "svcrest-uvicorn-wsgi",
        "svcrest_plain",
        svcrest=True,
        origin=True,
        interface="wsgi",
        attribute="app.wsgi",
    ),
    # An experiment (targets/svcrest_one_filter.py): the default filters' lines set by one
    # filter, the same bytes; what preparing those filters could gain at most.
    Target(
        "svcrest-one-filter-granian-wsgi",
        "svcrest_one_filter",
        svcrest=True,
        origin=True,
        server="granian",
        interface="wsgi",
        attribute="app.wsgi",
    ),
    Target(
        "svcrest-auth-granian-asgi",
        "svcrest_auth",
        svcrest=True,
        auth=True,
        origin=True,
        server="granian",
    ),
    Target(
        "svcrest-auth-granian-wsgi",
        "svcrest_auth",
        svcrest=True,
        auth=True,
        origin=True,
        server="granian",
        interface="wsgi",
        attribute="app.wsgi",
    ),
)
SECTIONS = ("scaling", "internal")
CEILING = "raw-asgi-svc-headers"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="svcrest vs raw ASGI, Starlette, Falcon and FastAPI over HTTP (wrk)."
    )
    parser.add_argument("--quick", action="store_true", help="2 s runs (default 5 s)")
    parser.add_argument("--duration", type=int, help="seconds measured per run (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="warm-up seconds (default 1)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default 2)")
    parser.add_argument("--connections", type=int, default=64, help="wrk -c (default 64)")
    parser.add_argument(
        "--compiled",
        metavar="PATH",
        help="also run every svcrest target as NAME+compiled, with PATH (a compiled build "
        "installed by `make compiled`: build/compiled) first on the server's PYTHONPATH",
    )
    names = [t.name for t in TARGETS] + list(SECTIONS)
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help=f"run only these (repeat or comma-separate): {', '.join(names)}",
    )
    args = parser.parse_args(argv)
    if args.duration is None:
        args.duration = 2 if args.quick else 5
    only = {n.strip() for item in args.only or [] for n in item.split(",") if n.strip()}
    unknown = only - set(names)
    if unknown:
        parser.error(f"unknown --only name(s): {', '.join(sorted(unknown))}")
    args.only = only
    return args


def _selected(args: argparse.Namespace, name: str) -> bool:
    return not args.only or name in args.only


@contextlib.contextmanager
def served(
    target: Target, label: str, cpus: harness.Cpus, wrap: Sequence[str] = ()
) -> Iterator[tuple[str, dict[str, str], int]]:
    """The target's server (its command after ``wrap``), started and its answer checked: the
    URL wrk loads, the headers it sends (logged in, for an authenticated target) and the
    server's pid."""
    with harness.uvicorn_server(
        target.module,
        label=label,
        cpus=cpus,
        wrap=wrap,
        server=target.server,
        interface=target.interface,
        attribute=target.attribute,
        env=dict(target.env),
    ) as server:
        url = server.url + target.path
        headers = {**(ORIGIN if target.origin else {}), **dict(target.sends)}
        if target.auth:
            # Without the cookie the route must refuse, or the figure measures no auth at all.
            harness.check_response(url, headers=headers, status=401)
            headers.update(harness.login(server.url))
        harness.check_response(
            url, headers=headers, status=target.status, json_subset=target.expect, body=target.body
        )
        yield url, headers, server.pid


def measure_target(
    target: Target, result: harness.Measured, args: argparse.Namespace, cpus: harness.Cpus
) -> None:
    """Start the target's server, check its answer, run wrk; record the run in ``result``."""
    settings = harness.WrkSettings(args.duration, args.warmup, args.connections)
    label = f"{target.name}-r{len(result.runs) + 1}"
    with served(target, label, cpus) as (url, headers, pid):
        run = harness.run_wrk(
            url, settings=settings, cpus=cpus, headers=headers, server_pid=pid, body=target.body
        )
    result.runs.append(run)
    cpu = harness.cpu_cells(run)[0]
    print(
        f"  {target.name:<26} {harness.fmt_rps(run.rps):>9} req/s  "
        f"p50 {harness.fmt_ms(run.p50_ms)}  p99 {harness.fmt_ms(run.p99_ms)}  "
        f"server CPU {cpu}",
        flush=True,
    )


def run_targets(
    targets: list[Target], args: argparse.Namespace, cpus: harness.Cpus, svcrest_error: str | None
) -> dict[str, harness.Measured]:
    results = {t.name: harness.Measured(t.name, expected_non_2xx=t.status >= 400) for t in targets}
    for target in targets:
        if target.svcrest and svcrest_error:
            results[target.name].skipped = "svcrest does not import (see above)"
    for round_no in range(1, args.rounds + 1):
        print(f"round {round_no}/{args.rounds}", flush=True)
        for target in targets:
            result = results[target.name]
            if result.skipped:
                continue
            try:
                measure_target(target, result, args, cpus)
            except harness.ServerError as exc:
                result.skipped = str(exc)
                print(f"  {target.name:<14} skipped: {exc}", flush=True)
    return results


def _per_cpu_ratio(run: harness.WrkResult, raw: harness.WrkResult | None) -> float | None:
    if raw is None or run.per_cpu_second is None or raw.per_cpu_second is None:
        return None
    return run.per_cpu_second / raw.per_cpu_second


def targets_table(targets: list[Target], results: dict[str, harness.Measured]) -> str:
    raw = results.get("raw-asgi")
    raw_best = raw.best if raw else None
    ceiling = results.get(CEILING)
    ceiling_best = ceiling.best if ceiling else None
    rows = []
    for target in targets:
        result = results[target.name]
        best = result.best
        if best is None:
            rows.append([target.name, *["-"] * 10, result.notes()])
            continue
        ratio = best.rps / raw_best.rps if raw_best else None
        goal = ""
        if target.goal is not None:
            verdict = "-" if ratio is None else ("met" if ratio >= target.goal else "missed")
            goal = f"≥ {target.goal:.2f}: {verdict}"
        rows.append(
            [
                target.name,
                harness.fmt_rps(best.rps),
                " / ".join(harness.fmt_rps(r.rps) for r in result.runs),
                harness.fmt_ms(best.p50_ms),
                harness.fmt_ms(best.p99_ms),
                *harness.cpu_cells(best),
                harness.fmt_ratio(ratio),
                harness.fmt_ratio(_per_cpu_ratio(best, raw_best)),
                harness.fmt_ratio(best.rps / ceiling_best.rps if ceiling_best else None),
                goal,
                result.notes(),
            ]
        )
    header = ["target", "req/s (best)", "each round", "p50", "p99", "server CPU", "req/CPU-s"]
    header += ["vs raw ASGI", "vs raw (per CPU-s)", "vs ceiling", "goal", "notes"]
    return harness.markdown_table(header, rows, left=("goal", "notes"))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    targets = [t for t in TARGETS if _selected(args, t.name)]
    if args.compiled:
        compiled = str(Path(args.compiled).resolve())
        targets = [
            variant
            for t in targets
            for variant in (
                [t, replace(t, name=t.name + "+compiled", env=(("PYTHONPATH", compiled),))]
                if t.svcrest
                else [t]
            )
        ]
    harness.ensure_env(__file__, need_wrk=bool(targets) or _selected(args, "scaling"))

    import internal
    import scaling

    cpus = harness.pick_cpus()
    settings = harness.WrkSettings(args.duration, args.warmup, args.connections)
    svcrest_error = harness.svcrest_import_error()
    if svcrest_error:
        print(f"bench: svcrest does not import ({svcrest_error}); its targets are skipped")
    sections = [
        "# svcrest benchmark",
        harness.machine_info(cpus, settings, args.rounds),
    ]
    if svcrest_error:
        sections.append(f"**svcrest does not import**, its figures are skipped: `{svcrest_error}`")
    if targets:
        results = run_targets(targets, args, cpus, svcrest_error)
        sections += [
            f"## Against the peers: `GET {ITEM_PATH}`",
            "req/s is the best of the interleaved rounds (each round's figure beside it); p50, "
            "p99 and the server's CPU use are that round's; req/CPU-s is req/s per CPU second "
            "the server used (steadier when something else shares its CPU); the goals apply to "
            "`vs raw ASGI`. svcrest targets send "
            f"`Origin: {ORIGIN['Origin']}`; `svcrest-404` requests `{MISS_PATH}`. "
            f"`{CEILING}` is the raw callable sending the twelve header lines of svcrest's "
            "answer (DESIGN §3's seven, Allow, three CORS lines, Content-Length) and doing "
            "nothing else: the ceiling for any implementation of the contract under uvicorn; "
            "`vs ceiling` compares with it.",
            targets_table(targets, results),
        ]
    if _selected(args, "scaling"):
        sections.append(scaling.report(settings, args.rounds, cpus, svcrest_error))
    if _selected(args, "internal"):
        sections.append(internal.report(cpus, svcrest_error))
    text = "\n\n".join(sections) + "\n"
    harness.OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = harness.OUT_DIR / "latest.md"
    out.write_text(text)
    print()
    print(text)
    print(f"written to {out.relative_to(Path.cwd()) if out.is_relative_to(Path.cwd()) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
