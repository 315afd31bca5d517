"""The documentation site ``make docs`` builds opens from disk: every relative link of every
page names a file (``guides/settings.html``), not a directory a browser shows as a listing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_every_relative_link_names_a_file(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(site)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 10
    broken = []
    for page in pages:
        if page.name == "404.html":  # served by a web server for any path: root-absolute links
            continue
        for href in re.findall(r'(?:href|src)="([^"#?]+)', page.read_text()):
            if "://" in href or href.startswith(("mailto:", "data:", "javascript:")):
                continue
            target = (page.parent / unquote(href)).resolve()
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: {href}")
    assert broken == []
