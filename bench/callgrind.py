"""Instructions valgrind's callgrind counts for one run of a Python script: the one copy the
benchmarks share (``instructions.py``, ``budget.py``, ``collection_get.py``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping


def collected(args: list[str], env: Mapping[str, str] | None = None) -> int:
    """Instructions callgrind counts running ``python *args`` (with ``env`` added to the
    environment); SystemExit with callgrind's last lines when the run fails.

    A fixed hash seed: str and bytes hashes (and so dict and set probing) are the same in
    every run, which keeps the count of one tree within a few instructions between runs."""
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        *args,
    ]
    environment = {**os.environ, "PYTHONHASHSEED": "0", **(env or {})}
    done = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode or found is None:
        raise SystemExit(f"callgrind run of {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return int(found.group(1))
