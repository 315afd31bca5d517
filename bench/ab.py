"""Paired A/B over HTTP: two servers kept running, loaded in alternating short bursts.

Usage::

    python bench/ab.py A B [--pairs 30] [--burst 2] [--connections 64]
                           [--a-env KEY=VALUE ...] [--b-env KEY=VALUE ...]

``A`` and ``B`` are target names of ``run.py`` (``svcrest``, ``svcrest-granian-wsgi``,
``svcrest-granian-rsgi``, ``svcrest-auth-granian-wsgi``, ``falcon-granian-wsgi``…), each
optionally followed by
``@SRC``: the server then runs with ``SRC`` first on its ``PYTHONPATH`` (another tree's
``src``, e.g. a ``git worktree`` of an older commit, or a compiled build). Examples::

    python bench/ab.py svcrest svcrest@/tmp/old/src
    python bench/ab.py svcrest-auth-granian-wsgi svcrest-granian-wsgi

``--a-env`` / ``--b-env`` add to one side's server environment (repeatable): granian reads
each of its command-line options from a ``GRANIAN_*`` variable, so one target can be paired
with itself under another of granian's settings (those the harness does not pass itself)::

    python bench/ab.py svcrest-granian-asgi svcrest-granian-asgi --a-env GRANIAN_RUNTIME_MODE=st

Why: on a shared machine one ``run.py`` round can lose a third of its rate to a neighbour,
so a difference of a few percent between two targets measured seconds apart is noise. Here
both servers start once (pinned to the same CPU, only one of them loaded at a time) and are
warmed up, then each *pair* loads A and B for ``--burst`` seconds each, back to back, in
alternating order (AB, BA, …) so that drift cancels. What a neighbour does to one pair it
mostly does to both halves: the report gives the median of the per-pair ratios A/B and a
95 % bootstrap interval of that median, besides each side's median req/s.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import harness
from run import TARGETS, Target, served


def target_of(spec: str, env: list[str] | None = None) -> Target:
    """A ``run.py`` target from ``NAME`` or ``NAME@SRC``, with ``env`` (``KEY=VALUE``
    strings) added to its server's environment."""
    name, _, src = spec.partition("@")
    found = {target.name: target for target in TARGETS}.get(name)
    if found is None:
        raise SystemExit(
            f"ab: unknown target {name!r}; one of: {', '.join(t.name for t in TARGETS)}"
        )
    pairs = [tuple(item.split("=", 1)) for item in env or ()]
    if any(len(pair) != 2 for pair in pairs):
        raise SystemExit(f"ab: an environment setting is KEY=VALUE: {env}")
    if src:
        pairs.insert(0, ("PYTHONPATH", str(Path(src).resolve())))
    if not pairs:
        return found
    label = spec + "".join(f"+{item}" for item in env or ())
    return replace(found, name=label, env=tuple((key, value) for key, value in pairs))


def median_interval(ratios: list[float], draws: int = 2000, seed: int = 1) -> tuple[float, float]:
    """A 95 % bootstrap interval of the median of ``ratios`` (percentile method)."""
    chooser = random.Random(seed)
    medians = sorted(
        statistics.median(chooser.choices(ratios, k=len(ratios))) for _ in range(draws)
    )
    return medians[int(0.025 * draws)], medians[int(0.975 * draws) - 1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a", help="target name, optionally NAME@SRC")
    parser.add_argument("b", help="target name, optionally NAME@SRC")
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--burst", type=int, default=2, help="seconds of load per half")
    parser.add_argument("--warmup", type=int, default=2, help="seconds per server, once")
    parser.add_argument("--connections", type=int, default=64)
    for letter in ("a", "b"):
        parser.add_argument(
            f"--{letter}-env",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help=f"add to {letter.upper()}'s server environment (repeatable)",
        )
    args = parser.parse_args(argv)
    targets = [target_of(args.a, args.a_env), target_of(args.b, args.b_env)]
    harness.ensure_env(__file__, need_wrk=True)
    cpus = harness.pick_cpus()
    warm = harness.WrkSettings(args.warmup, 0, args.connections)
    burst = harness.WrkSettings(args.burst, 0, args.connections)
    print(harness.machine_info(cpus, burst, args.pairs))
    with contextlib.ExitStack() as stack:
        urls: list[tuple[str, dict[str, str]]] = []
        for target in targets:
            url, headers, _pid = stack.enter_context(
                served(target, f"ab-{target.name.replace('/', '_')}", cpus)
            )
            harness.run_wrk(url, settings=warm, cpus=cpus, headers=headers, body=target.body)
            urls.append((url, headers))
        rates: list[list[float]] = [[], []]
        for pair in range(args.pairs):
            for side in (0, 1) if pair % 2 == 0 else (1, 0):
                url, headers = urls[side]
                run = harness.run_wrk(
                    url, settings=burst, cpus=cpus, headers=headers, body=targets[side].body
                )
                rates[side].append(run.rps)
            ratio = rates[0][-1] / rates[1][-1]
            print(
                f"pair {pair + 1:>3}: {rates[0][-1]:>9,.0f} {rates[1][-1]:>9,.0f}  {ratio:.3f}",
                flush=True,
            )
    ratios = [a / b for a, b in zip(rates[0], rates[1], strict=True)]
    low, high = median_interval(ratios)
    print()
    print(f"A = {targets[0].name}: median {statistics.median(rates[0]):,.0f} req/s")
    print(f"B = {targets[1].name}: median {statistics.median(rates[1]):,.0f} req/s")
    print(
        f"A/B: median of {len(ratios)} pair ratios {statistics.median(ratios):.3f} "
        f"(95 % interval {low:.3f} to {high:.3f}); mean {statistics.fmean(ratios):.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
