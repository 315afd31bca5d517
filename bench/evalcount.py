"""Instructions a request costs a real uvicorn server, and how many run in the interpreter's
evaluation loop: a deterministic A/B for changes too small for wrk on a noisy machine.

Usage::

    python bench/evalcount.py A[@SRC] [B[@SRC] ...] [--requests 2000] [--warmup 1000]

Each target (a ``run.py`` target name served by uvicorn, optionally ``@SRC`` as in
``ab.py``) runs under valgrind's callgrind with instrumentation off; after ``--warmup``
requests it is switched on for ``--requests`` more, sent by 16 keep-alive connections, each
waiting for its answer (the request ``run.py``'s wrk sends). The report gives per request
the instructions of the whole server process and those of CPython's evaluation loop
(``_PyEval_EvalFrameDefault``: the bytecodes run, uvicorn's and svcrest's), each next to
the first target's.

Why: on this project's 2-core VM, uvicorn throughput followed the evaluation loop's
instructions, not the total. svcrest's tree and the removed express lane ran the same total
(261k a request) while the tree ran 4.8k more in the loop, and served 0.962 of the lane's
rate in 60 paired wrk runs (``bench/RESULTS.md``, session 10). Counts repeat within ~0.5 %.
Needs valgrind (``callgrind_annotate``, ``callgrind_control``); uvicorn targets only
(granian serves from worker processes).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import harness
from ab import target_of
from run import served

OUT = harness.OUT_DIR / "callgrind"
CONNECTIONS = 16


async def _drive(url: str, headers: dict[str, str], requests: int, status: int) -> None:
    """Send ``requests`` GETs of ``url`` over keep-alive connections, reading each answer."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    lines = [f"GET {parts.path or '/'} HTTP/1.1", f"Host: {host}:{port}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode()
    expected = f"HTTP/1.1 {status} ".encode()

    async def connection(count: int) -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            for _ in range(count):
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                if not head.startswith(expected):
                    raise RuntimeError(f"unexpected answer: {head[:80]!r}")
                length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
                await reader.readexactly(int(length.group(1)) if length else 0)
        finally:
            writer.close()

    share, extra = divmod(requests, CONNECTIONS)
    await asyncio.gather(*(connection(share + (index < extra)) for index in range(CONNECTIONS)))


def _control(pid: int, *args: str) -> None:
    subprocess.run(
        ["callgrind_control", *args, str(pid)], check=True, capture_output=True, timeout=120
    )


def _counts(path: Path) -> tuple[int, int]:
    """Total instructions and those of the evaluation loop in a callgrind dump."""
    report = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--threshold=100", str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    total = evaluation = 0
    for line in report.splitlines():
        fields = line.split()
        if not fields or not re.fullmatch(r"[\d,]+", fields[0]):
            continue
        count = int(fields[0].replace(",", ""))
        if line.rstrip().endswith("PROGRAM TOTALS"):
            total = count
        elif "_PyEval_EvalFrameDefault" in line:
            evaluation += count
    return total, evaluation


def measure(spec: str, requests: int, warmup: int, cpus: harness.Cpus) -> tuple[float, float]:
    """Instructions a request and evaluation-loop instructions a request of one target."""
    target = target_of(spec)
    if target.server != "uvicorn":
        raise SystemExit(f"evalcount: {target.name} is not served by uvicorn")
    OUT.mkdir(parents=True, exist_ok=True)
    label = re.sub(r"[^\w.-]", "_", target.name)
    dump = OUT / f"{label}.out"
    for old in OUT.glob(f"{label}.out*"):
        old.unlink()
    wrap = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={dump}",
    ]
    with served(target, f"evalcount-{label}", cpus, wrap) as (url, headers, pid):
        asyncio.run(_drive(url, headers, warmup, target.status))
        _control(pid, "-i", "on")
        asyncio.run(_drive(url, headers, requests, target.status))
        _control(pid, "-i", "off")
        _control(pid, "-d")
        written = Path(f"{dump}.1")
        deadline = time.monotonic() + 60
        while not written.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
    total, evaluation = _counts(written)
    return total / requests, evaluation / requests


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("targets", nargs="+", help="target names, each optionally NAME@SRC")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=1000)
    args = parser.parse_args(argv)
    harness.ensure_env(__file__, need_wrk=False)
    for tool in ("valgrind", "callgrind_annotate", "callgrind_control"):
        if shutil.which(tool) is None:
            raise SystemExit(f"evalcount: {tool} is missing (Debian: apt-get install valgrind)")
    cpus = harness.pick_cpus()
    print(harness.machine_info(cpus))
    print(f"- {args.requests} requests measured after {args.warmup}, {CONNECTIONS} connections")
    results = [(spec, *measure(spec, args.requests, args.warmup, cpus)) for spec in args.targets]
    _, base_total, base_eval = results[0]
    print(f"\n{'target':<40} {'instructions':>12} {'ratio':>6} {'eval loop':>10} {'ratio':>6}")
    for spec, total, evaluation in results:
        print(
            f"{spec:<40} {total:>12,.0f} {total / base_total:>6.3f} "
            f"{evaluation:>10,.0f} {evaluation / base_eval:>6.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
