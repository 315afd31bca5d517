"""The calls a request makes in a granian ASGI worker, by function: Python and C.

Usage::

    python bench/served_calls.py MODULE[:ATTRIBUTE] [...] [--requests 1000] [--top 40]

``MODULE`` is a module of ``bench/targets`` (``svcrest_plain``, ``raw_svc_headers``…; the
attribute defaults to ``app``). Each runs in one granian worker (``--interface asgi``, no
access log) wrapped by this module's ``app``, which switches ``sys.setprofile`` on in the
worker for ``--requests`` requests after a warm-up of 300: every Python function entered and
every C function called on the worker's Python thread in that time, whoever calls it
(granian's ASGI glue, asyncio, the application), is counted. A plain keep-alive client sends
``GET /svc-json/demo/v1/items/42`` with an ``Origin``, one request at a time. The report
lists the calls a request, most first (a C function with the Python function that called
it), per target.

Why: callgrind counts a worker's instructions (``served_instructions.py``) but sees
CPython's evaluation loop, not the Python functions; this shows what runs, and what a
target runs that another does not. Classes called (``dict(...)``, a class's instance) are
not C calls to ``sys.setprofile`` and do not appear; their ``__init__`` in Python does.
Figures: ``RESULTS.md``, "Session 20: the ASGI edge under granian".
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from types import CodeType, FrameType, ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
PATH = "/svc-json/demo/v1/items/42"
WARMUP = 300
_MARKERS = ("/svcrest/", "/granian/", "/asyncio/", "/targets/")


def _label(code: CodeType) -> str:
    path = code.co_filename
    for marker in _MARKERS:
        if marker in path:
            return f"{path[path.rindex(marker) + 1 :]}:{code.co_qualname}"
    return f"{os.path.basename(path)}:{code.co_qualname}"


class _Counting:
    """The worker's side: counts calls between two request numbers, then writes them."""

    def __init__(self, inner: Any, first: int, last: int, out: str) -> None:
        self.inner = inner
        self.first = first
        self.last = last
        self.out = out
        self.seen = 0
        self.calls: Counter[str] = Counter()

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            self.calls[f"py {_label(frame.f_code)}"] += 1
        elif event == "c_call":
            owner = getattr(arg, "__self__", None)
            kind = "" if owner is None or isinstance(owner, ModuleType) else type(owner).__name__
            name = getattr(arg, "__qualname__", None) or repr(arg)
            self.calls[f"C  {kind + '.' if kind else ''}{name} <- {_label(frame.f_code)}"] += 1

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.seen += 1
            if self.seen == self.first:
                sys.setprofile(self.profile)
            elif self.seen == self.last:
                sys.setprofile(None)
                Path(self.out).write_text(json.dumps(self.calls))
        await self.inner(scope, receive, send)


def _worker_app() -> Any:
    """The application granian loads (``served_calls:app``), from the environment."""
    spec = os.environ.get("SERVED_CALLS_TARGET")
    if spec is None:
        return None
    module, _, attribute = spec.partition(":")
    inner = getattr(importlib.import_module(module), attribute or "app")
    requests = int(os.environ["SERVED_CALLS_REQUESTS"])
    return _Counting(inner, WARMUP, WARMUP + requests, os.environ["SERVED_CALLS_OUT"])


app = _worker_app()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _client(port: int, count: int) -> None:
    """``count`` GETs on one keep-alive connection, each after the last answer."""
    request = (
        f"GET {PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://example.com\r\n\r\n"
    ).encode()
    deadline = time.monotonic() + 20
    while True:
        try:
            connection = socket.create_connection(("127.0.0.1", port))
            break
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit("served_calls: the server did not start") from None
            time.sleep(0.2)
    with connection:
        for _ in range(count):
            connection.sendall(request)
            data = b""
            while b"\r\n\r\n" not in data:
                data += connection.recv(65536)
            head, _, rest = data.partition(b"\r\n\r\n")
            found = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
            length = int(found.group(1)) if found else 0
            while len(rest) < length:
                rest += connection.recv(65536)


def counted(spec: str, requests: int) -> Counter[str]:
    """Calls of ``requests`` requests in a granian worker serving ``spec``."""
    port = _free_port()
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "calls.json")
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE / "targets")]),
            "SERVED_CALLS_TARGET": spec,
            "SERVED_CALLS_REQUESTS": str(requests),
            "SERVED_CALLS_OUT": out,
        }
        command = [sys.executable, "-m", "granian", "--interface", "asgi", "--workers", "1"]
        command += ["--no-access-log", "--port", str(port), "served_calls:app"]
        server = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            _client(port, WARMUP + requests)
            deadline = time.monotonic() + 10
            while not os.path.exists(out) and time.monotonic() < deadline:
                time.sleep(0.1)
            if not os.path.exists(out):
                raise SystemExit(f"served_calls: {spec} wrote no counts")
            return Counter(json.loads(Path(out).read_text()))
        finally:
            server.terminate()
            server.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("targets", nargs="+", help="MODULE[:ATTRIBUTE] of bench/targets")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--top", type=int, default=40)
    options = parser.parse_args()
    for spec in options.targets:
        calls = counted(spec, options.requests)
        total = sum(calls.values()) / options.requests
        print(f"{spec}: {total:.1f} calls a request ({options.requests} requests)")
        for label, n in calls.most_common(options.top):
            print(f"{n / options.requests:8.2f}  {label}")
        print()


if __name__ == "__main__":
    main()
