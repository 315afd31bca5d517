"""The package's own text cites what its readers can read: WordPress's behaviour by name and
the guides under docs/, never the project's internal design notes."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "svcrest"
INTERNAL = re.compile(r"DESIGN(\.md)?\b")


def test_no_source_file_cites_the_internal_design_notes() -> None:
    citing = [
        f"{path.relative_to(SRC)}:{number}"
        for path in sorted(SRC.rglob("*"))
        if path.suffix in {".py", ".mjs", ".ts", ".css", ".html"}
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if INTERNAL.search(line)
    ]
    assert citing == []
