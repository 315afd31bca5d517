"""The main job end to end over real HTTP: `svcrest serve` in a subprocess, a user made with
`svcrest user add`, the notes driven by RestProxy, and node-wpapi discovering the API."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from svcrest.client import ProxyError, RestProxy
from tests.processes import STOP_TIMEOUT, port_free, stop_server

PASSWORD = "correct horse battery"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def svcrest(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "svcrest", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def npm_install(directory: Path, package: str) -> None:
    """``npm install`` one package into ``directory`` (for a node script run there)."""
    install = subprocess.run(
        ["npm", "install", "--silent", "--no-audit", "--no-fund", package],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        env={**os.environ, "npm_config_loglevel": "error"},
    )
    assert install.returncode == 0, install.stderr


def wait_for_port(port: int, process: subprocess.Popen[str], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"server exited: {process.communicate()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("server did not start")


@contextlib.contextmanager
def served_site(db: str, *serve_args: str) -> Iterator[str]:
    """``svcrest serve`` of ``db`` (with ``serve_args``) in a subprocess, its user
    ``editor1`` (password ``PASSWORD``) added first; yields the site's address."""
    added = svcrest(
        "user",
        "add",
        "editor1",
        "--role",
        "editor",
        "--password-stdin",
        "--db",
        db,
        stdin=PASSWORD + "\n",
    )
    assert added.returncode == 0, added.stderr
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "svcrest", "serve", "--port", str(port), "--db", db, *serve_args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its workers in its process group: stopped with it
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}"
    finally:
        stopped = stop_server(process, STOP_TIMEOUT)
        output = process.communicate(timeout=10)
    assert stopped, output
    assert port_free(port)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with served_site(str(tmp_path_factory.mktemp("e2e") / "svcrest.db")) as url:
        yield url


def test_proxy_drives_the_notes(server: str) -> None:
    with RestProxy(f"{server}/svc-json/demo/v1/notes") as notes:
        notes.login("editor1", PASSWORD)
        assert notes.nonce is not None
        [created] = notes.create({"title": "First", "content": "Hello"})
        assert (created["title"], created["content"]) == ("First", "Hello")
        note_id = created["id"]
        assert notes.read(note_id)["title"] == "First"
        [updated] = notes.update({"id": note_id, "title": "First, edited"})
        assert (updated["title"], updated["content"]) == ("First, edited", "Hello")
        notes.create({"title": "Second"})
        listed = notes.read(page=1, limit=10)
        assert [note["title"] for note in listed] == ["Second", "First, edited"]
        notes.nonce = "0" * 32  # forged: refreshed once, transparently
        assert notes.read(note_id)["id"] == note_id
        assert notes.nonce != "0" * 32
        notes.destroy({"id": note_id})
        with pytest.raises(ProxyError) as gone:
            notes.read(note_id)
        assert (gone.value.status, gone.value.code) == (404, "rest_note_invalid_id")


def test_anonymous_reads_and_cannot_write(server: str) -> None:
    response = httpx.get(f"{server}/svc-json/demo/v1/notes")
    assert response.status_code == 200
    assert response.headers["x-svc-total"].isdigit()
    refused = httpx.post(f"{server}/svc-json/demo/v1/notes", json={"title": "x"})
    assert refused.status_code == 401


def test_discovery_headers_over_the_wire(server: str) -> None:
    head = httpx.head(f"{server}/")
    assert head.status_code == 200
    assert head.headers["link"] == f'<{server}/svc-json/>; rel="https://api.w.org/"'


NODE_SCRIPT = """
const WPAPI = require("wpapi");
WPAPI.discover(process.argv[2]).then((site) => {
  const notes = site.namespace("demo/v1").notes();
  return notes.get().then((list) => notes.id(list[0].id).get().then((one) => {
    console.log(JSON.stringify({titles: list.map((n) => n.title), one: one.title}));
  }));
}).catch((error) => { console.error(String(error)); process.exit(1); });
"""


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_node_wpapi_discovers_and_lists(server: str, tmp_path: Path) -> None:
    with RestProxy(f"{server}/svc-json/demo/v1/notes") as notes:
        notes.login("editor1", PASSWORD)
        notes.create({"title": "For wpapi"})
    npm_install(tmp_path, "wpapi@1.2.2")
    script = tmp_path / "discover.js"
    script.write_text(NODE_SCRIPT)
    run = subprocess.run(
        ["node", str(script), server],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""  # no "proceeding despite error" fallback
    result = json.loads(run.stdout)
    assert result["titles"][0] == "For wpapi"
    assert result["one"] == "For wpapi"
