"""Bytecodes a request executes, per Python function: where the interpreter's work goes.

Usage::

    python bench/opcodes.py [--case asgi|wsgi|asgi-auth|wsgi-auth] [--top 40]

Runs one warmed-up request of a case of ``inprocess.py`` under ``sys.settrace`` with
``f_trace_opcodes`` and prints the bytecodes executed (each one a computed jump of the
interpreter's loop) and the calls, per function, most first, then the totals. Only Python
code is seen: C functions (``dict.get``, orjson) count as the one call instruction that
called them. Use it to find calls and frames to remove from a path; time the result with
``inprocess.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections import Counter
from collections.abc import Callable
from types import FrameType
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from inprocess import PATH, asgi_case, login_headers, make_app, wsgi_case


def _case(name: str) -> tuple[Callable[[int], Any], bool]:
    """The case's runner and whether it is a coroutine function."""
    if name == "asgi":
        return asgi_case(make_app(), PATH, [], 200), True
    if name == "wsgi":
        return wsgi_case(make_app(), PATH, 200), False
    app = make_app(permission=True)
    if name == "asgi-auth":
        return asgi_case(app, PATH, login_headers(app), 200), True
    if name == "wsgi-auth":
        return wsgi_case(app, PATH, 200, login_headers(app)), False
    raise SystemExit(f"unknown case {name!r}")


def _label(frame: FrameType) -> str:
    code = frame.f_code
    path = code.co_filename
    marker = "/svcrest/"
    where = path[path.rindex(marker) + 1 :] if marker in path else os.path.basename(path)
    return f"{where}:{code.co_qualname}"


def count(request: Callable[[], None]) -> tuple[Counter[str], Counter[str]]:
    """Bytecodes and calls per function of one ``request()``, after three to warm up
    (caches, the route table, the hooks' plan)."""
    for _ in range(3):
        request()
    opcodes: Counter[str] = Counter()
    calls: Counter[str] = Counter()

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "opcode":
            opcodes[_label(frame)] += 1
        return local

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        if event != "call" or "/bench/" in frame.f_code.co_filename:
            return None
        calls[_label(frame)] += 1
        frame.f_trace_opcodes = True
        return local

    sys.settrace(tracer)
    try:
        request()
    finally:
        sys.settrace(None)
    return opcodes, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--case", default="asgi", choices=["asgi", "wsgi", "asgi-auth", "wsgi-auth"]
    )
    parser.add_argument("--top", type=int, default=40)
    options = parser.parse_args()
    run, is_async = _case(options.case)
    loop = asyncio.new_event_loop()
    if is_async:
        opcodes, calls = count(lambda: loop.run_until_complete(run(1)))
    else:
        opcodes, calls = count(lambda: run(1))
    loop.close()
    print(
        f"{options.case}: {sum(opcodes.values()):,} bytecodes in {sum(calls.values())} Python calls"
    )
    print(f"{'bytecodes':>9} {'calls':>5}  function")
    for label, n in opcodes.most_common(options.top):
        print(f"{n:>9} {calls[label]:>5}  {label}")


if __name__ == "__main__":
    main()
