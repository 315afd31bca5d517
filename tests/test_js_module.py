"""Runs the JavaScript tests (``node --test tests/js/``) so that ``make test`` covers them,
``tests/js/live.test.mjs`` against a live ``svcrest serve`` on a free port, and
``tests/js/guard.live.test.mjs`` against one with the guard plugin (``tests/e2e/guard_site.py``:
a route that requires an Idempotency-Key and a rate-limited one),
``tests/js/store.live.test.mjs`` against one serving a ``StoreCollection``
(``tests/e2e/store_site.py``), with and without ``--wordpress-compat``, and
``tests/js/mcp.live.test.mjs`` (the MCP SDK's client) against ``svcrest serve --mcp`` with the
MCP test plugin (``tests/site/mcp_site.py``)."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.browser.support import PASSWORD, USER, running_site
from tests.e2e.test_many_hosts import serving
from tests.e2e.test_mcp_sdk import app_password, cli_ok, serving_mcp

ROOT = Path(__file__).resolve().parent.parent
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(
    NODE is None, reason="node is not on PATH: the JavaScript tests need Node.js"
)


def _node_test(*paths: str, env: dict[str, str] | None = None) -> str:
    assert NODE is not None
    result = subprocess.run(
        [NODE, "--test", *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    assert result.returncode == 0, result.stdout[-20000:] + result.stderr[-5000:]
    return result.stdout


@needs_node
def test_node_tests_pass() -> None:
    _node_test("tests/js/")


@needs_node
def test_node_tests_against_a_live_server(tmp_path: Path) -> None:
    with running_site(tmp_path) as site:
        env = {
            **os.environ,
            "SVCREST_SITE": site.url,
            "SVCREST_USER": USER,
            "SVCREST_PASSWORD": PASSWORD,
        }
        try:
            report = _node_test("tests/js/live.test.mjs", env=env)
        except AssertionError as failure:
            raise AssertionError(f"{failure}\nserver log:\n{site.server_log()}") from None
    assert "# pass 9\n" in report, report
    assert "# skipped 0\n" in report, report


@needs_node
def test_node_idempotency_and_retries_against_a_live_server(tmp_path: Path) -> None:
    options = ["--db", str(tmp_path / "svcrest.db"), "--plugin", "tests.e2e.guard_site:register"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with serving([("127.0.0.1", [*options, "--no-access-log"], env)]) as (host,):
        report = _node_test(
            "tests/js/guard.live.test.mjs", env={**os.environ, "SVCREST_GUARD_SITE": host.url}
        )
    assert "# pass 3\n" in report, report
    assert "# skipped 0\n" in report, report


@needs_node
@pytest.mark.parametrize("compat", [False, True], ids=["svcrest", "wordpress-compat"])
def test_node_store_collection_totals_against_a_live_server(tmp_path: Path, compat: bool) -> None:
    options = ["--db", str(tmp_path / "svcrest.db"), "--plugin", "tests.e2e.store_site:register"]
    options += ["--no-access-log", *(["--wordpress-compat"] if compat else [])]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with serving([("127.0.0.1", options, env)]) as (host,):
        report = _node_test(
            "tests/js/store.live.test.mjs",
            env={
                **os.environ,
                "SVCREST_STORE_SITE": host.url,
                "SVCREST_STORE_COMPAT": "1" if compat else "0",
            },
        )
    assert "# pass 1\n" in report, report
    assert "# skipped 0\n" in report, report


@needs_node
@pytest.mark.slow
def test_node_mcp_sdk_client_against_a_live_server(tmp_path: Path) -> None:
    db = str(tmp_path / "svcrest.db")
    cli_ok("user", "add", "sub1", "--role", "subscriber", "--password-stdin", "--db", db, PASSWORD)
    cli_ok("user", "add", "editor1", "--role", "editor", "--password-stdin", "--db", db, PASSWORD)
    editor = base64.b64encode(f"editor1:{app_password(db, 'editor1')}".encode()).decode()
    with serving_mcp(db) as url:
        env = {**os.environ, "SVCREST_MCP_SITE": url, "SVCREST_MCP_EDITOR": editor}
        report = _node_test("tests/js/mcp.live.test.mjs", env=env)
    assert "# pass 4\n" in report, report
    assert "# skipped 0\n" in report, report
