"""Every ``--8<--`` include of the documentation is expanded in the built site (the pages
show the files the tests run, not the include line), and no formatter rewrites the pages.

A formatter once ran over the Markdown and turned ``--8<-- "bookshelf.py"`` into
``--8 < --"bookshelf.py"``, which pymdownx.snippets leaves as literal text: the tutorial showed
no code and the build still passed.
"""

from __future__ import annotations

import html
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: A snippet line as pymdownx.snippets reads it, and the shapes a formatter makes of it.
INCLUDE = re.compile(r'^\s*--8<--\s*"([^"]+)"\s*$', re.MULTILINE)
SCISSORS = re.compile(r"-\s*-\s*8\s*<\s*-\s*-")


def mangled(text: str) -> bool:
    """Whether ``text`` holds the snippet marker with spaces put into it."""
    return any(match.group() != "--8<--" for match in SCISSORS.finditer(text))


def page_text(path: Path) -> str:
    """A built page as a reader sees it: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text()))


def includes() -> list[tuple[str, str]]:
    """(page, included file) of every include line under ``docs/``."""
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        for match in INCLUDE.finditer(page.read_text()):
            found.append((str(page.relative_to(DOCS)), match.group(1)))
    return found


def built_page(site: Path, page: str) -> Path:
    """The HTML file mkdocs writes for a Markdown page (``use_directory_urls: false``)."""
    return site / Path(page).with_suffix(".html")


def test_the_tutorial_includes_its_files() -> None:
    assert ("tutorial/index.md", "bookshelf.py") in includes()
    assert ("tutorial/index.md", "test_bookshelf.py") in includes()


def test_no_markdown_source_has_a_mangled_include() -> None:
    found = [
        f"{page.relative_to(DOCS)}: {line}"
        for page in sorted(DOCS.rglob("*.md"))
        for line in page.read_text().splitlines()
        if mangled(line)
    ]
    assert found == []


def test_the_built_tutorial_shows_the_code(built_site: Path) -> None:
    text = page_text(built_page(built_site, "tutorial/index.md"))
    assert "def register(app: App)" in text
    assert "def test_" in text
    assert "--8<--" not in text


@pytest.mark.parametrize(("page", "included"), includes())
def test_every_include_is_expanded(built_site: Path, page: str, included: str) -> None:
    text = page_text(built_page(built_site, page))
    source = (DOCS / "tutorial" / included).read_text()
    # The file's first definition line, as the reader sees it in the code block.
    first = next(line for line in source.splitlines() if line.startswith(("def ", "class ")))
    assert first in text


def test_no_built_page_has_an_include_line(built_site: Path) -> None:
    left = []
    for built in sorted(built_site.rglob("*.html")):
        text = page_text(built)
        if "--8<--" in text or mangled(text):
            left.append(str(built.relative_to(built_site)))
    assert left == []


def test_formatters_leave_the_markdown_alone() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "docs/**/*.md" in config["tool"]["ruff"]["extend-exclude"]
    lint = [
        line
        for line in (ROOT / "Makefile").read_text().splitlines()
        if re.search(r"\b(ruff|prettier|mdformat|black|blacken-docs)\b", line)
    ]
    assert lint, "the Makefile's lint targets are gone"
    assert not [line for line in lint if ".md" in line or re.search(r"\bdocs\b(?!/tutorial)", line)]
    assert "docs/**/*.md" in (ROOT / ".prettierignore").read_text().splitlines()
