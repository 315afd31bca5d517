"""The screenshots of the documentation: the login page and the documentation site's home.

``make screenshots`` runs ``python -m tests.browser.screenshots docs`` after ``make docs``:
it serves the demo with ``svcrest serve`` (as the browser tests do) and the built ``site/``
with a static file server, and photographs both in Debian's headless Chromium (no browser
download). ``tests/browser/test_screenshots.py`` runs the same code into a temporary
directory, so the script cannot rot.
"""

from __future__ import annotations

import functools
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.browser.support import CHROMIUM, CHROMIUM_ARGS, ROOT, USER, running_site

if TYPE_CHECKING:
    from playwright.sync_api import ViewportSize

__all__ = ["DOCS_SITE", "LOGIN_SIZE", "SITE_SIZE", "take_screenshots"]

#: What ``make docs`` builds.
DOCS_SITE = ROOT / "site"
#: Viewports (CSS pixels, scale 1): the login card alone, and the docs home's first screen.
LOGIN_SIZE: ViewportSize = {"width": 720, "height": 560}
SITE_SIZE: ViewportSize = {"width": 1280, "height": 800}


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def _static_server(directory: Path) -> Iterator[str]:
    """``directory`` served on a free port of 127.0.0.1; yields its URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def take_screenshots(out: Path, docs_site: Path = DOCS_SITE) -> list[Path]:
    """Write ``login.png`` and ``docs-site.png`` into ``out``; returns their paths."""
    if not (docs_site / "index.html").is_file():
        raise FileNotFoundError(f"{docs_site}/index.html is missing: run `make docs` first")
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    login, docs = out / "login.png", out / "docs-site.png"
    with (
        tempfile.TemporaryDirectory() as workdir,
        running_site(Path(workdir)) as site,
        _static_server(docs_site) as docs_url,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(viewport=LOGIN_SIZE, device_scale_factor=1)
            page.goto(site.url + "/login")
            page.get_by_label("Username").fill(USER)
            page.screenshot(path=login)
            page = browser.new_page(viewport=SITE_SIZE, device_scale_factor=1)
            page.goto(docs_url + "/")
            page.wait_for_load_state("networkidle")
            page.screenshot(path=docs)
        finally:
            browser.close()
    return [login, docs]


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs"
    for path in take_screenshots(target):
        print(f"==> wrote {path}")
