"""Stopping a server the tests started, with every process it made.

A server started with ``start_new_session=True`` leads a process group of its own: its
workers (granian's, uvicorn's) are in it too. :func:`stop_server` sends SIGTERM to the
server's main process, as a process manager does, waits until the whole group is gone, and
kills the group when it is not gone in time, so that a worker whose main process died first
(then a child of init, still holding the port) never outlives the test. Tests stop their
servers only through :func:`stop_server` or :func:`stop_servers` (``tests/test_processes.py``
holds them to it).

The test run itself makes sure of it: :func:`become_subreaper` makes the pytest process the
parent of every orphan among its descendants (instead of init), so that what a test leaves
running stays in :func:`descendants`, which the session's end checks is empty.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "GRACEFUL_TIMEOUT",
    "STOP_TIMEOUT",
    "become_subreaper",
    "descendants",
    "end_processes",
    "group_processes",
    "port_free",
    "stop_server",
    "stop_servers",
]

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


def stop_server(
    process: subprocess.Popen[bytes] | subprocess.Popen[str],
    timeout: float,
    *,
    stop_signal: signal.Signals = signal.SIGTERM,
) -> bool:
    """``stop_signal`` (SIGTERM, as a process manager; SIGINT, as Ctrl-C) to ``process``
    (started in a session of its own), then wait up to ``timeout`` seconds for its whole
    process group to be gone; kill the group when it is not. Whether every process stopped
    by itself in time. Raises AssertionError when ``process`` does not lead a process group
    (it was not started with ``start_new_session=True``: its workers could not be found),
    or when a process of the group outlives even the kill."""
    return stop_servers([process], timeout, stop_signal=stop_signal)[0]


def stop_servers(
    processes: Sequence[subprocess.Popen[bytes] | subprocess.Popen[str]],
    timeout: float,
    *,
    stop_signal: signal.Signals = signal.SIGTERM,
) -> list[bool]:
    """:func:`stop_server` for several servers at once (all signalled first, then waited
    for within one ``timeout``): whether each stopped by itself in time."""
    for process in processes:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):  # exited meanwhile
                assert os.getpgid(process.pid) == process.pid, (
                    f"{process.args!r} was not started in a session of its own"
                )
            process.send_signal(stop_signal)
    stopped = [False] * len(processes)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not all(stopped):
        for index, process in enumerate(processes):
            process.poll()  # reaps the main process once it exits
            if not stopped[index] and process.returncode is not None:
                stopped[index] = not group_processes(process.pid)
        if not all(stopped):
            time.sleep(0.05)
    for process, done in zip(processes, stopped, strict=True):
        if not done:
            _kill_group(process)
    return stopped


def _kill_group(process: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    group = process.pid
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    process.wait(timeout=10)
    deadline = time.monotonic() + 10
    while group_processes(group) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = group_processes(group)
    assert not left, f"processes {left} of group {group} outlived SIGKILL"


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether nothing holds TCP ``port`` on ``host`` any more (a server's listening socket,
    or a worker's copy of it): a bind succeeds. ``SO_REUSEADDR`` so that connections of the
    stopped server still in TIME_WAIT do not count."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
        return True


#: ``prctl`` option of Linux (``<linux/prctl.h>``): the caller adopts its orphaned descendants.
_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process the child subreaper of its descendants (Linux
    ``PR_SET_CHILD_SUBREAPER``): a process whose parent dies (a worker whose main process was
    killed alone) is then handed to this process, not to init, and stays one of
    :func:`descendants`. Whether it took (False off Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        result: int = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        return False
    return result == 0


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), or None when
    the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses
    return stat.rsplit(")", 1)[1].split()


def _command(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace") or "?"


def descendants(pid: int | None = None) -> dict[tuple[int, int], str]:
    """The live descendants (not zombies) of process ``pid`` (this one when None), found
    through each thread's ``/proc/<pid>/task/<tid>/children``: ``(pid, start time)`` (the
    start time tells a reused process id apart) to the command line."""
    found: dict[tuple[int, int], str] = {}
    pending = [os.getpid() if pid is None else pid]
    while pending:
        parent = pending.pop()
        try:
            tasks = list(Path(f"/proc/{parent}/task").iterdir())
        except OSError:  # gone meanwhile
            continue
        for task in tasks:
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                fields = _stat_fields(child)
                if fields is None:
                    continue
                pending.append(child)
                if fields[0] != "Z":
                    # field 22 of stat (starttime) is the 20th after the command name
                    found[child, int(fields[19])] = _command(child)
    return found


def end_processes(pids: list[int]) -> None:
    """Kill ``pids`` (what a test run left), each with its process group when that group is
    not this process's own, and reap those that are children of this process."""
    own_group = os.getpgid(0)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            group = os.getpgid(pid)
            if group != own_group:
                os.killpg(group, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    for pid in pids:
        with contextlib.suppress(ChildProcessError):  # not a child: its parent reaps it
            while not os.waitpid(pid, os.WNOHANG)[0] and time.monotonic() < deadline:
                time.sleep(0.05)
