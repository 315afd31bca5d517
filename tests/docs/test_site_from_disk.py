"""The documentation site ``make docs`` builds opens from disk: every relative link of every
page names a file (``guides/settings.html``), not a directory a browser shows as a listing."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote


def test_every_relative_link_names_a_file(built_site: Path) -> None:
    site = built_site
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
