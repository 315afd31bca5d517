"""Runs the JavaScript tests (``node --test tests/js/``) so that ``make test`` covers them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="node is not on PATH: the JavaScript tests need Node.js")
def test_node_tests_pass() -> None:
    assert NODE is not None
    result = subprocess.run(
        [NODE, "--test", "tests/js/"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-20000:] + result.stderr[-5000:]
