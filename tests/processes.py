"""Stopping a server the tests started, with every process it made.

A server started with ``start_new_session=True`` leads a process group of its own: its
workers (granian's, uvicorn's) are in it too. :func:`stop_server` sends SIGTERM to the
server's main process, as a process manager does, waits until the whole group is gone, and
kills the group when it is not gone in time, so that a worker whose main process died first
(then a child of init, still holding the port) never outlives the test. A helper that stops
its server its own way ends with :func:`end_group`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

__all__ = ["GRACEFUL_TIMEOUT", "STOP_TIMEOUT", "end_group", "group_processes", "stop_server"]

#: The graceful time-out (``svcrest serve --graceful-timeout``) of the tests' servers.
GRACEFUL_TIMEOUT = 5
#: Seconds a test's server has to be gone after SIGTERM: its graceful time-out, then the
#: main process's own stop (granian kills its workers after it).
STOP_TIMEOUT = GRACEFUL_TIMEOUT + 10.0


def group_processes(group: int) -> list[int]:
    """The live processes (not zombies) of process group ``group``."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[2]) == group:
            found.append(int(entry.name))
    return found


def stop_server(process: subprocess.Popen[bytes] | subprocess.Popen[str], timeout: float) -> bool:
    """SIGTERM to ``process`` (started in a session of its own), then wait up to ``timeout``
    seconds for its whole process group to be gone; kill the group when it is not. Whether
    every process stopped by itself in time."""
    group = process.pid
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        process.poll()  # reaps the main process once it exits
        if process.returncode is not None and not group_processes(group):
            return True
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    process.wait(timeout=10)
    deadline = time.monotonic() + 10
    while group_processes(group) and time.monotonic() < deadline:
        time.sleep(0.05)
    return False


def end_group(group: int) -> list[int]:
    """Kill what is left of process group ``group`` (a server started in a session of its
    own, whose main process was stopped or killed); the processes that were left."""
    left = group_processes(group)
    if left:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while group_processes(group) and time.monotonic() < deadline:
            time.sleep(0.05)
    return left
