"""The README's examples run as written (falcon's test_examples idea).

A Python code block is *runnable* when the line just before its opening ```` ```python ````
fence is the HTML comment ``<!-- runnable -->`` (GitHub does not show it). Every runnable
block is executed, each in a fresh namespace. A block that talks to the demo at
``http://127.0.0.1:8000/svc-json/`` (what ``make run`` serves) runs against a
``svcrest serve`` this test starts on a free port (the block's address is pointed there),
after the user of the README's ``svcrest user add … --password-stdin`` line has been added
with the password that line pipes in. The first block is also the README's first-screen
example: 10 to 16 lines, with the two ``make`` commands above it.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from svcrest import App
from tests.processes import GRACEFUL_TIMEOUT, STOP_TIMEOUT, port_free, stop_server

README = Path(__file__).resolve().parent.parent / "README.md"
MARKER = "<!-- runnable -->"
DEMO_ADDRESS = "http://127.0.0.1:8000"
_USER_ADD = re.compile(
    r"^echo '(?P<password>[^']+)' \| \S*svcrest user add (?P<login>\S+) --role (?P<role>\S+)"
    r" --password-stdin$",
    re.MULTILINE,
)


def python_blocks(text: str) -> list[tuple[bool, str]]:
    """Every Python block of ``text`` in order, with whether it is marked runnable."""
    blocks = []
    for match in re.finditer(r"```python\n(.*?)^```", text, re.MULTILINE | re.DOTALL):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        blocks.append((before.strip() == MARKER, match.group(1)))
    return blocks


def runnable_blocks() -> list[str]:
    """The runnable blocks of the README, in order."""
    return [code for runnable, code in python_blocks(README.read_text()) if runnable]


def run_block(code: str, name: str) -> dict[str, object]:
    """Execute ``code`` in a fresh namespace and return the namespace."""
    namespace: dict[str, object] = {"__name__": name}
    exec(compile(code, str(README), "exec"), namespace)
    return namespace


def test_readme_first_screen_shows_the_two_commands() -> None:
    first_screen = "\n".join(README.read_text().splitlines()[:15])
    assert "make run" in first_screen
    assert "make test" in first_screen


def test_markers_are_spelled_right_and_used() -> None:
    text = README.read_text()
    comments = set(re.findall(r"^<!--.*-->$", text, re.MULTILINE))
    assert comments <= {MARKER}, f"unknown markers: {comments - {MARKER}}"
    blocks = python_blocks(text)
    assert blocks[0][0], "the first example must be runnable"
    assert len(runnable_blocks()) >= 3


def test_readme_example_runs() -> None:
    example = runnable_blocks()[0]
    assert 10 <= len(example.strip().splitlines()) <= 16
    app = run_block(example, "readme_example")["app"]
    assert isinstance(app, App)
    missing = app.rest_do_request("/books/v1/books/101")
    assert (missing.status, missing.data["code"]) == (404, "book_not_found")
    invalid = app.rest_do_request("/books/v1/books/0")
    assert (invalid.status, invalid.data["code"]) == (400, "rest_invalid_param")
    assert run_block(example, "readme_example")["wsgi"] is not None


@pytest.mark.parametrize(
    "code",
    [code for code in runnable_blocks() if DEMO_ADDRESS + "/svc-json/" not in code],
    ids=lambda code: code.strip().splitlines()[0][:40],
)
def test_in_process_blocks_run(code: str) -> None:
    run_block(code, "readme_block")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``svcrest serve`` on a free port with the README's user added; its address."""
    match = _USER_ADD.search(README.read_text())
    assert match is not None, "the README must show `svcrest user add … --password-stdin`"
    db = str(tmp_path_factory.mktemp("readme") / "svcrest.db")
    port = _free_port()
    command = [sys.executable, "-m", "svcrest"]
    serve = ["serve", "--host", "127.0.0.1", "--port", str(port), "--db", db]
    server = subprocess.Popen(
        [*command, *serve, "--graceful-timeout", str(GRACEFUL_TIMEOUT)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its workers in its process group: stopped with it
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert server.poll() is None, "svcrest serve exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "svcrest serve did not start"
                time.sleep(0.1)
        user = [*command, "user", "add", match["login"], "--role", match["role"]]
        subprocess.run(
            [*user, "--password-stdin", "--db", db],
            input=match["password"] + "\n",
            text=True,
            check=True,
            capture_output=True,
            timeout=60,
        )
        yield f"http://127.0.0.1:{port}"
    finally:
        stopped = stop_server(server, STOP_TIMEOUT)
    assert stopped
    assert port_free(port)


def test_client_blocks_run_against_the_served_demo(demo: str) -> None:
    blocks = [code for code in runnable_blocks() if DEMO_ADDRESS + "/svc-json/" in code]
    assert blocks, "the README's client example must be runnable"
    for code in blocks:
        run_block(code.replace(DEMO_ADDRESS, demo), "readme_client")
