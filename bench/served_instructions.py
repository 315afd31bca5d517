"""Instructions a real server's worker spends a request: callgrind over granian or uvicorn.

Usage::

    python bench/served_instructions.py TARGET [TARGET ...] [--requests 2000]
                                        [--connections 16] [--annotate]

Each ``TARGET`` is a ``run.py`` target name (``svcrest-granian-asgi``,
``falcon-granian-wsgi``…), optionally followed by ``,KEY=VALUE`` settings of its server's
environment (granian reads each of its options from a ``GRANIAN_*`` variable)::

    python bench/served_instructions.py svcrest-granian-asgi \\
        svcrest-granian-asgi,GRANIAN_RUNTIME_MODE=st falcon-granian-wsgi

Why: an HTTP rate on a shared machine moves with its neighbours; an instruction count does
not. Each target's server runs twice under ``valgrind --tool=callgrind`` (it follows the fork
into granian's worker; every thread of a process is counted), answering the same warm-up and
then none or ``--requests`` more requests from a plain keep-alive client (``--connections``
connections, each sending its next request when the last answer is in); the difference
between the two runs of the worker process, divided by ``--requests``, is what a request
costs it: the HTTP parsing and writing of the server (Rust or Python), the event loop, the
interface's glue and the application. Caveat: valgrind runs one thread at a time, so a
thread that spins waiting for another (granian's WSGI thread pool, its Rust runtime) counts
its spinning; the WSGI figures move by tens of thousands between runs, the ASGI ones by a few
thousand. ``--annotate`` prints the split by shared object
(the server's extension, the interpreter, libc, the kernel's entry points are not counted)
for the loaded run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import harness
from run import TARGETS, Target

WARMUP = 300
#: The floors of granian's ASGI interface, besides ``run.py``'s targets: a bare ASGI callable
#: (one header line) and the same sending svcrest's twelve lines (``run.py``'s ``raw-asgi``
#: and ``raw-asgi-svc-headers`` on granian instead of uvicorn).
EXTRA_TARGETS = (
    Target("raw-granian-asgi", "raw_asgi", server="granian"),
    Target("raw-granian-asgi-svc-headers", "raw_svc_headers", origin=True, server="granian"),
    Target(
        "raw-granian-asgi-svc-headers-lower",
        "raw_svc_headers",
        origin=True,
        server="granian",
        attribute="lower",
    ),
)


def target_of(spec: str) -> Target:
    """A ``run.py`` target from ``NAME[,KEY=VALUE...]``."""
    name, *settings = spec.split(",")
    found = {target.name: target for target in (*TARGETS, *EXTRA_TARGETS)}.get(name)
    if found is None:
        raise SystemExit(f"unknown target {name!r}")
    pairs = tuple(tuple(item.split("=", 1)) for item in settings)
    if any(len(pair) != 2 for pair in pairs):
        raise SystemExit(f"a setting is KEY=VALUE: {spec}")
    return replace(found, name=spec, env=(*found.env, *pairs))  # type: ignore[arg-type]


def request_bytes(target: Target, headers: dict[str, str], port: int) -> bytes:
    method = "POST" if target.body else "GET"
    lines = [f"{method} {target.path} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    lines += [f"{key}: {value}" for key, value in headers.items()]
    if target.body:
        lines += ["Content-Type: application/json", f"Content-Length: {len(target.body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + target.body


def read_answer(sock: socket.socket, buffer: bytearray) -> None:
    """Read one answer (a Content-Length body) from ``sock``, leaving any rest in ``buffer``."""
    while True:
        end = buffer.find(b"\r\n\r\n")
        if end >= 0:
            found = re.search(rb"(?i)\r\ncontent-length: *(\d+)", bytes(buffer[:end]))
            if found is None:
                raise SystemExit(f"an answer without Content-Length: {bytes(buffer[:end])!r}")
            total = end + 4 + int(found.group(1))
            if not bytes(buffer[:10]).startswith((b"HTTP/1.1 2", b"HTTP/1.0 2")):
                raise SystemExit(f"not a 2xx answer: {bytes(buffer[:end])!r}")
            if len(buffer) >= total:
                del buffer[:total]
                return
        chunk = sock.recv(65536)
        if not chunk:
            raise SystemExit("the server closed the connection")
        buffer += chunk


def load(port: int, request: bytes, count: int, connections: int) -> None:
    """``count`` requests over ``connections`` keep-alive connections, one at a time on each."""
    if count <= 0:
        return
    shares = [
        count // connections + (1 if i < count % connections else 0) for i in range(connections)
    ]

    def one(share: int) -> None:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            buffer = bytearray()
            for _ in range(share):
                sock.sendall(request)
                read_answer(sock, buffer)

    with ThreadPoolExecutor(connections) as pool:
        list(pool.map(one, [share for share in shares if share]))


def end_counted(pid: int) -> None:
    """End ``pid``'s descendants (a granian worker, then its server) with a signal nothing
    handles (SIGALRM): valgrind then writes what it counted before the process goes (a
    server's own shutdown is not waited for: granian's WSGI worker under valgrind does not
    stop within minutes of a SIGTERM, and a killed process writes nothing)."""
    order, todo = [], [pid]
    while todo:  # valgrind's launcher runs valgrind, which forks granian's worker
        one = todo.pop()
        order.append(one)
        todo += children(one)
    for one in reversed(order):  # the worker first
        with contextlib.suppress(ProcessLookupError):
            os.kill(one, signal.SIGALRM)
        deadline = time.monotonic() + 120
        while Path(f"/proc/{one}").exists() and time.monotonic() < deadline:
            if Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                break  # a zombie: done, its parent has not reaped it yet
            time.sleep(0.2)


def children(pid: int) -> list[int]:
    """The pids whose parent is ``pid``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def totals(out_dir: Path) -> dict[int, int]:
    """Instructions per process (pid) of the callgrind files in ``out_dir``."""
    found: dict[int, int] = {}
    for path in out_dir.glob("cg.*"):
        pid = int(path.name.split(".")[1])
        text = path.read_text(errors="replace")
        match = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
        if match:
            found[pid] = found.get(pid, 0) + int(match.group(1))
    return found


def one_run(
    target: Target, count: int, args: argparse.Namespace, cpus: harness.Cpus
) -> tuple[int, Path]:
    """Start the server under callgrind, send the warm-up and ``count`` requests, stop it;
    the instructions of all its processes and the directory of callgrind's files."""
    out_dir = Path(tempfile.mkdtemp(prefix="svcrest-served-cg-"))
    port = harness.free_port()
    module, attribute = target.module, target.attribute
    command = harness.server_command(
        target.server, f"{module}:{attribute}", port, target.interface, dict(target.env)
    )
    wrap = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_dir}/cg.%p"]
    env = {**os.environ, "PYTHONHASHSEED": "0", **dict(target.env)}
    env["SVCREST_BENCH_HOME"] = f"http://127.0.0.1:{port}"
    harness.LOG_DIR.mkdir(parents=True, exist_ok=True)
    log_path = harness.LOG_DIR / f"cg-{target.name.replace('/', '_')}-{count}.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            cpus.pin(cpus.server, [*wrap, *command]),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 300
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"server exited; see {log_path}")
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise SystemExit(f"server did not listen; see {log_path}")
            time.sleep(0.2)
        headers = {"Origin": "http://example.com"} if target.origin else {}
        headers.update(dict(target.sends))
        if target.auth:
            headers.update(harness.login(f"http://127.0.0.1:{port}"))
        request = request_bytes(target, headers, port)
        load(port, request, WARMUP, args.connections)
        load(port, request, count, args.connections)
    finally:
        end_counted(proc.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    found = totals(out_dir)
    if len(found) < 2:  # the server's process and its worker's
        raise SystemExit(f"callgrind wrote {len(found)} files, not 2; see {log_path}")
    # The worker (forked last: the larger pid) serves; the server's own process only waits.
    return found[max(found)], out_dir


def annotate(out_dir: Path) -> str:
    """The loaded run's instructions by shared object, largest first."""
    lines = []
    for path in sorted(out_dir.glob("cg.*")):
        done = subprocess.run(
            ["callgrind_annotate", "--inclusive=no", "--threshold=100", str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
        by_object: dict[str, int] = {}
        for line in done.stdout.splitlines():
            match = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?.*?\[(.+?)\]\s*$", line)
            if match:
                count = int(match.group(1).replace(",", ""))
                by_object[match.group(2)] = by_object.get(match.group(2), 0) + count
        total = sum(by_object.values()) or 1
        lines.append(f"  {path.name}:")
        for name, count in sorted(by_object.items(), key=lambda item: -item[1])[:8]:
            lines.append(f"    {count:>15,} {count / total:6.1%}  {name}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("targets", nargs="+")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--annotate", action="store_true")
    args = parser.parse_args(argv)
    targets = [target_of(spec) for spec in args.targets]
    harness.ensure_env(__file__, need_wrk=False)
    cpus = harness.pick_cpus()
    print(
        f"callgrind, {args.requests} requests over {args.connections} connections after "
        f"{WARMUP} of warm-up; load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    results: dict[str, float] = {}
    for target in targets:
        idle, idle_dir = one_run(target, 0, args, cpus)
        busy, busy_dir = one_run(target, args.requests, args, cpus)
        results[target.name] = (busy - idle) / args.requests
        print(f"{target.name}: {results[target.name]:,.0f} instructions a request", flush=True)
        if args.annotate:
            print(annotate(busy_dir), flush=True)
        for directory in (idle_dir, busy_dir):  # a few MB each
            shutil.rmtree(directory, ignore_errors=True)
    first = next(iter(results.values()))
    print()
    for name, per in results.items():
        print(f"| {name} | {per:,.0f} | {per / first:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
