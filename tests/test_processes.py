"""The test run's own check that no process it started outlives it (``tests/conftest.py``,
``no_process_left``), on a pytest run of its own: a server whose worker outlives its killed
main process fails the run, naming the worker and the test that left it, and the worker is
ended; a server stopped with its whole process group passes."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from collections.abc import Iterator
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


#: The calls that start or signal a process outside :mod:`tests.processes` and need not go
#: through it, by (file, function, call), with the reason: none is a server left to run.
NOT_SERVERS: dict[tuple[str, str, str], str] = {
    (
        "tests/auth/test_session_cache_pg.py",
        "test_a_broken_listener_turns_the_cache_off_until_it_listens_again",
        "kill",
    ): "SIGSTOP then SIGCONT to the relay: pauses it, stops nothing",
    ("tests/e2e/test_admin_port.py", "test_sigterm_drains_then_exits", "send_signal"): (
        "SIGTERM's drain is the subject; running() stops the group after"
    ),
    (
        "tests/e2e/test_admin_port.py",
        "test_the_admin_port_is_loopback_bound_holds_off_slow_clients_and_stops_promptly",
        "send_signal",
    ): "SIGTERM's prompt stop is the subject; running() stops the group after",
    (
        "tests/e2e/test_admin_port.py",
        "test_a_killed_servers_metrics_directory_is_removed_by_the_next",
        "killpg",
    ): "a server killed with its whole process group is the subject",
    (
        "tests/e2e/test_host_listener.py",
        "test_when_the_listening_worker_dies_the_other_takes_over",
        "kill",
    ): "one worker SIGKILLed is the subject; running() stops the group after",
    ("tests/e2e/test_serving_bounds.py", "_write_lock_held", "Popen"): (
        "a process holding a SQLite write lock, ended by the end of its input"
    ),
    (
        "tests/serve/test_accesslog.py",
        "test_the_last_lines_are_written_at_sigterm",
        "send_signal",
    ): "the lines written at SIGTERM are the subject; running() stops the group after",
    ("tests/serve/test_operating_metrics.py", "_dead_pid", "Popen"): (
        "`python -c pass`, waited for: a process id that is gone"
    ),
    (
        "tests/store/test_pg_relay.py",
        "test_when_the_relay_process_dies_another_process_takes_over",
        "Popen",
    ): "a store holding the relay's lock, SIGKILLed: its death is the subject",
    (
        "tests/store/test_pg_relay.py",
        "test_when_the_relay_process_dies_another_process_takes_over",
        "kill",
    ): "SIGKILL to the relay's holder is the subject (the relay ends when its parent is gone)",
    ("tests/store/test_pg_relay.py", "test_a_forked_child_does_not_keep_the_relays_lock", "kill"): (
        "a child forked by the test, killed and waited for"
    ),
    (
        "tests/store/test_pg_relay.py",
        "test_the_relay_is_a_process_of_its_own_and_a_killed_one_is_started_again",
        "kill",
    ): "SIGKILL to the relay process is the subject",
    (
        "tests/store/test_store_sqlite.py",
        "test_processes_starting_at_once_migrate_once_and_share_the_secret",
        "Popen",
    ): "short-lived processes that migrate a store, waited for with communicate()",
    ("tests/test_cli.py", "test_request_into_a_closed_pipe_ends_quietly", "Popen"): (
        "`svcrest request`: one request, then it exits"
    ),
    ("tests/test_processes.py", "test_descendants_names_an_orphan_of_this_run", "Popen"): (
        "makes an orphan on purpose and ends it"
    ),
}

_SIGNALLING = frozenset({"terminate", "kill", "send_signal", "killpg"})


def _process_calls(path: Path) -> Iterator[tuple[str, str, int]]:
    """Each ``Popen(...)`` without ``start_new_session=True``, and each ``.terminate()``,
    ``.kill()``, ``.send_signal()`` or ``.killpg()`` in ``path``: (enclosing function, call,
    line)."""

    def visit(node: ast.AST, function: str) -> Iterator[tuple[str, str, int]]:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        if isinstance(node, ast.Call):
            called = node.func
            name = (
                called.attr
                if isinstance(called, ast.Attribute)
                else called.id
                if isinstance(called, ast.Name)
                else ""
            )
            in_session = any(
                keyword.arg == "start_new_session"
                and isinstance(keyword.value, ast.Constant)
                and keyword.value.value is True
                for keyword in node.keywords
            )
            if (name == "Popen" and not in_session) or (
                name in _SIGNALLING and isinstance(called, ast.Attribute)
            ):
                yield function, name, node.lineno
        for child in ast.iter_child_nodes(node):
            yield from visit(child, function)

    yield from visit(ast.parse(path.read_text()), "<module>")


def test_servers_start_in_a_session_of_their_own_and_stop_through_processes() -> None:
    """Every process a test starts is started in a session of its own (its workers in its
    process group), and none is signalled outside :mod:`tests.processes` (which stops a
    server with its whole group), except the listed ones, which are not servers left to run
    (or whose signal is the subject of the test); the list holds no stale entry."""
    found: dict[tuple[str, str, str], list[int]] = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative == "tests/processes.py":
            continue
        for function, call, line in _process_calls(path):
            found.setdefault((relative, function, call), []).append(line)
    unlisted = {key: lines for key, lines in found.items() if key not in NOT_SERVERS}
    assert unlisted == {}
    assert sorted(NOT_SERVERS.keys() - found.keys()) == []
