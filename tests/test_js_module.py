"""Runs the JavaScript tests (``node --test tests/js/``) so that ``make test`` covers them, and
``tests/js/live.test.mjs`` against a live ``svcrest serve`` on a free port."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.browser.support import PASSWORD, USER, running_site

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
    assert "# pass 8\n" in report, report
    assert "# skipped 0\n" in report, report
