"""Helpers of the browser tests: the server subprocess, Chromium's settings, logging in.

Nothing here imports playwright at module level, so that the test modules can skip with a
clear reason when it (or Debian's Chromium) is missing.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlencode

import httpx

from tests.processes import GRACEFUL_TIMEOUT, STOP_TIMEOUT, stop_server

if TYPE_CHECKING:
    from playwright.sync_api import Page

#: Debian's Chromium; the tests never download a browser.
CHROMIUM = Path("/usr/bin/chromium")
#: Headless Chromium on a machine without outside network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: The demo's home page, registered as a plugin (adding it twice adds it once).
HOME_PLUGIN = "svcrest.demo.home:install_home_page"
USER = "editor1"
PASSWORD = "correct horse battery staple"
ROOT = Path(__file__).resolve().parents[2]
#: Screenshots land here (gitignored).
ARTIFACTS = ROOT / "test-artifacts"
#: How long a Playwright action or assertion may wait before failing (ms).
ACTION_TIMEOUT_MS = 10_000
_SERVER_START_TIMEOUT = 30.0


def browser_skip_reason() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if importlib.util.find_spec("playwright") is None:
        return (
            "the playwright package is not installed "
            "(pip install -e '.[browser]'; `make test` installs it)"
        )
    if not CHROMIUM.is_file():
        return f"{CHROMIUM} is missing (apt-get install -y chromium; `make test` installs it)"
    return None


@dataclass(frozen=True, slots=True)
class Site:
    """A running ``svcrest serve``: its home URL (no trailing slash) and files."""

    url: str
    db: Path
    log: Path

    @property
    def api(self) -> str:
        """The REST root, with its trailing slash."""
        return self.url + "/svc-json/"

    def server_log(self) -> str:
        """The server's output so far (for failure messages)."""
        return self.log.read_text(errors="replace")


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _svcrest(*args: str) -> list[str]:
    return [sys.executable, "-m", "svcrest", *args]


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + _SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"svcrest serve exited with {process.returncode}:\n"
                + log.read_text(errors="replace")
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(
        f"svcrest serve did not listen on port {port}:\n" + log.read_text(errors="replace")
    )


def _stop(process: subprocess.Popen[bytes]) -> bool:
    """Stop a server :func:`_serve_command` started (in a session of its own): SIGTERM, then
    its whole process group killed when it is not gone within its graceful time-out and
    more; whether it stopped by itself (see :func:`tests.processes.stop_server`)."""
    return stop_server(process, STOP_TIMEOUT)


def _serve_command(*args: str) -> list[str]:
    """``svcrest serve`` with ``args``, with the tests' graceful time-out (so that
    :func:`_stop` waits longer than it)."""
    return _svcrest("serve", "--graceful-timeout", str(GRACEFUL_TIMEOUT), *args)


@contextmanager
def running_site(workdir: Path, *serve_args: str) -> Iterator[Site]:
    """A fresh database with the editor ``USER``, served by ``svcrest serve`` with
    ``serve_args`` (stopped at the end)."""
    db = workdir / "svcrest.db"
    created = subprocess.run(
        _svcrest("user", "add", USER, "--role", "editor", "--password-stdin", "--db", str(db)),
        input=PASSWORD + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=workdir,
    )
    if created.returncode != 0:
        raise RuntimeError(f"svcrest user add failed:\n{created.stdout}{created.stderr}")
    port = free_port()
    log = workdir / "server.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            _serve_command(
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--db",
                str(db),
                "--plugin",
                HOME_PLUGIN,
                *serve_args,
            ),
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            start_new_session=True,  # its workers in its process group: _stop ends them all
        )
    try:
        _wait_for_port(port, process, log)
        yield Site(url=f"http://127.0.0.1:{port}", db=db, log=log)
    finally:
        _stop(process)


def log_in(page: Page, site: Site, path: str = "/") -> None:
    """Log in as ``USER`` through the site's login form; ends on ``path`` (logged in)."""
    page.goto(f"{site.url}/login?{urlencode({'redirect_to': site.url + path})}")
    page.get_by_label("Username").fill(USER)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(site.url + path)
    page.locator("#current-user").wait_for()


def api_titles(site: Site) -> list[str]:
    """The titles of all notes (newest first), read anonymously over HTTP, not through the
    browser."""
    response = httpx.get(
        site.api + "demo/v1/notes", params={"per_page": 100}, timeout=10, trust_env=False
    )
    response.raise_for_status()
    return [note["title"] for note in response.json()]
