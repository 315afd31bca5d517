"""Instructions valgrind's callgrind counts for one run of a Python script: the one copy the
benchmarks share (``instructions.py``, ``budget.py``, ``collection_get.py``)."""

from __future__ import annotations

import gc
import re
import subprocess
import sys
from collections.abc import Mapping

#: The whole environment of a counted child (plus what a caller adds, e.g. ``PYTHONPATH``).
CHILD_ENVIRONMENT = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/nonexistent",
    "LANG": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    # A counted child never writes a bytecode cache: one that did (a module edited since the
    # last run) while its pair of the same tree read it would count a compile in one of the
    # two runs only (a -215,000 "per request" seen). :func:`prime` writes the caches first.
    "PYTHONDONTWRITEBYTECODE": "1",
}


def collected(args: list[str], env: Mapping[str, str] | None = None) -> int:
    """Instructions callgrind counts running ``python *args`` (with ``env`` added to the
    environment); SystemExit with callgrind's last lines when the run fails.

    The child's environment is fixed, not the caller's: a fixed hash seed (str and bytes
    hashes, and so dict and set probing, are the same in every run), and only the variables
    below. The caller's variables (a shell's, ``make``'s, pytest's) would otherwise reach the
    measured requests: the benchmarks' WSGI environ carries the process environment as
    granian's does, so each request's copy of it, and the heap it leaves, changed with
    whoever ran the count (thousands of instructions a request between two shells)."""
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        *args,
    ]
    environment = {**CHILD_ENVIRONMENT, **(env or {})}
    done = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode or found is None:
        raise SystemExit(f"callgrind run of {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def prime(args: list[str], env: Mapping[str, str] | None = None) -> None:
    """Run ``python *args`` once, not counted, so that every module it imports has its
    bytecode cache written before the counted runs (which write none, and would otherwise
    each compile an edited module: more work than the requests they count)."""
    environment = {**CHILD_ENVIRONMENT, **(env or {})}
    del environment["PYTHONDONTWRITEBYTECODE"]
    done = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=environment, check=False
    )
    if done.returncode:
        raise SystemExit(f"run of {' '.join(args)} failed:\n{done.stderr[-2000:]}")


def settle() -> None:
    """Called by a measured child after its warm-up, in the run of no requests as in the run
    of many (so its own cost cancels out): the garbage of start-up and warm-up collected, and
    every object left frozen out of the collector's generations (``gc.freeze``). The requests
    counted after it then start from the same heap whatever the start-up left behind (the
    tree's path, the modules imported, one function more or less), and a collection they
    trigger walks only what they themselves left: the count follows the request path, not
    the heap's layout."""
    gc.collect()
    gc.freeze()
