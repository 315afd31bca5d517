"""The documentation's screenshots can be taken (``make screenshots``; see ``screenshots.py``)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tests.browser.screenshots import DOCS_SITE, LOGIN_SIZE, SITE_SIZE, take_screenshots
from tests.browser.support import browser_skip_reason


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_screenshots(tmp_path: Path) -> None:
    reason = browser_skip_reason()
    if reason is not None:
        pytest.skip(reason)
    if not (DOCS_SITE / "index.html").is_file():
        pytest.skip("the documentation site is not built (`make test` runs `make docs` first)")
    login, docs = take_screenshots(tmp_path)
    assert (login.name, docs.name) == ("login.png", "docs-site.png")
    assert png_size(login) == (LOGIN_SIZE["width"], LOGIN_SIZE["height"])
    assert png_size(docs) == (SITE_SIZE["width"], SITE_SIZE["height"])
