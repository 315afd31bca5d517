"""The test run's own check that no process it started outlives it (``tests/conftest.py``,
``no_process_left``), on a pytest run of its own: a server whose worker outlives its killed
main process fails the run, naming the worker and the test that left it, and the worker is
ended; a server stopped with its whole process group passes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.processes import descendants, end_processes, port_free

ROOT = Path(__file__).resolve().parents[1]

#: A "server" (a shell) with a "worker" (``sleep``, its process id written to the file named
#: by ``WORKER_PID``) that it stops on SIGTERM, as a server's main process does; the test ends
#: the server in the way ``STOP`` says.
SERVER_TEST = """
import os, signal, subprocess, time
from pathlib import Path

from tests.processes import group_processes, stop_server

SERVER = (
    'sleep 600 & worker=$!; trap "kill $worker; wait $worker; exit 0" TERM; '
    'echo $worker >"$1"; wait'
)

def test_a_server() -> None:
    server = subprocess.Popen(
        ["sh", "-c", SERVER, "server", os.environ["WORKER_PID"]],
        start_new_session=True,
    )
    pid_file = Path(os.environ["WORKER_PID"])
    while not pid_file.exists() or not pid_file.read_text().strip():
        time.sleep(0.01)
    if os.environ["STOP"] == "main":  # SIGKILL to the main process only: the worker stays
        server.kill()
        server.wait()
    else:
        assert stop_server(server, 5) is True
        assert group_processes(server.pid) == []
"""


def _run(tmp_path: Path, stop: str) -> tuple[subprocess.CompletedProcess[str], int]:
    (tmp_path / "test_server.py").write_text(SERVER_TEST)
    pid_file = tmp_path / "worker.pid"
    env = {**os.environ, "WORKER_PID": str(pid_file), "STOP": stop, "PYTHONPATH": str(ROOT)}
    env.pop("PYTEST_ADDOPTS", None)
    command = [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider"]
    command += ["--left-grace", "0.5", "-q", "test_server.py"]
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    return done, int(pid_file.read_text())


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_worker_left_running_fails_the_run_and_is_ended(tmp_path: Path) -> None:
    done, worker = _run(tmp_path, "main")
    try:
        assert done.returncode == 1, done.stdout + done.stderr
        assert "1 passed, 1 error" in done.stdout, done.stdout
        assert (
            f"processes the test run started are still running: {worker} `sleep 600` "
            "(first seen after test_server.py::test_a_server)"
        ) in done.stdout, done.stdout
        assert not _running(worker)
    finally:
        if _running(worker):
            end_processes([worker])


def test_a_server_stopped_with_its_group_passes(tmp_path: Path) -> None:
    done, worker = _run(tmp_path, "group")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout and "still running" not in done.stdout, done.stdout
    assert not _running(worker)


def test_descendants_names_an_orphan_of_this_run() -> None:
    """An orphan (its parent gone) is handed to the test run (a child subreaper), not to
    init: :func:`descendants` still finds it."""
    shell = subprocess.Popen(["sh", "-c", "sleep 600 & echo $!"], stdout=subprocess.PIPE, text=True)
    assert shell.stdout is not None
    orphan = int(shell.stdout.readline())
    shell.wait(timeout=10)
    shell.stdout.close()
    try:
        assert [command for (pid, _), command in descendants().items() if pid == orphan] == [
            "sleep 600"
        ]
    finally:
        end_processes([orphan])
    assert not _running(orphan)
    assert orphan not in [pid for pid, _ in descendants()]


def test_port_free() -> None:
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        assert port_free(port) is False
    deadline = time.monotonic() + 5
    while not port_free(port):
        assert time.monotonic() < deadline
        time.sleep(0.05)
