"""The documentation's code runs as written.

- The tutorial's files (``docs/tutorial/bookshelf.py`` and its tests ``test_bookshelf.py``,
  the hand-written ``bookshelf_by_hand.py`` and its ``test_bookshelf_by_hand.py``, which the
  tutorial page includes verbatim) pass under pytest, run as a reader runs them:
  from that directory, with it on ``sys.path``.
- Every Python block of a page under ``docs/`` preceded by the line ``<!-- runnable -->`` is
  executed, each in a fresh namespace (the README's marker, see ``tests/test_readme.py``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
TUTORIAL = DOCS / "tutorial"
MARKER = "<!-- runnable -->"


def runnable_blocks() -> list[tuple[str, str]]:
    """(page and block number, code) of every runnable block under ``docs/``."""
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text()
        blocks = re.finditer(r"```python\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
        for number, match in enumerate(blocks, 1):
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            if before.strip() == MARKER:
                found.append((f"{page.relative_to(DOCS)}#{number}", match.group(1)))
    return found


def test_the_tutorial_tests_pass() -> None:
    env = {**os.environ, "PYTHONPATH": str(TUTORIAL), "PYTHONDONTWRITEBYTECODE": "1"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "test_bookshelf.py",
            "test_bookshelf_by_hand.py",
        ],
        cwd=TUTORIAL,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-10000:] + result.stderr[-5000:]
    assert " passed" in result.stdout


def test_pages_have_runnable_blocks() -> None:
    assert len(runnable_blocks()) >= 5


@pytest.mark.parametrize(
    "code", [code for _, code in runnable_blocks()], ids=[name for name, _ in runnable_blocks()]
)
def test_runnable_block_runs(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real module: dataclasses and typing look their class's module up in sys.modules.
    module = types.ModuleType("docs_block")
    monkeypatch.setitem(sys.modules, "docs_block", module)
    exec(compile(code, "docs", "exec"), module.__dict__)
