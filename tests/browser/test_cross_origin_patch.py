"""A cross-origin PATCH in Chromium: the browser's preflight refuses it against the spec's
``Access-Control-Allow-Methods`` (no PATCH), and lets it through to the site under
``svcrest serve --wordpress-compat`` (current WordPress's list, with PATCH), where the
anonymous request then gets the site's own answer."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.browser.support import browser_skip_reason, running_site

try:
    from playwright.sync_api import Browser
except ImportError:  # pragma: no cover - the skip reason says how to install it
    pytest.skip(str(browser_skip_reason()), allow_module_level=True)

pytestmark = pytest.mark.skipif(
    browser_skip_reason() is not None, reason=str(browser_skip_reason())
)

#: The other origin's page: a PATCH of note 1 with a JSON body (which needs a preflight).
PATCH_PAGE = b"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Another origin</title>
<link rel="icon" href="data:,">
<script type="module">
const api = new URLSearchParams(location.search).get("api");
try {
  const response = await fetch(`${api}/svc-json/demo/v1/notes/1`, {
    method: "PATCH",
    credentials: "include",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ title: "Patched from another origin" }),
  });
  window.patchResult = { status: response.status, body: await response.json() };
} catch (error) {
  window.patchResult = { error: error.name };
}
document.body.dataset.done = "true";
</script></head>
<body><p>Another origin.</p></body></html>
"""


class _PageHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PATCH_PAGE)))
        self.end_headers()
        self.wfile.write(PATCH_PAGE)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@contextmanager
def serving_patch_page() -> Iterator[str]:
    """Serve the page on 127.0.0.1, another port (another origin); yields its URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _PageHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def patch_from_another_origin(browser: Browser, workdir: Path, *serve_args: str) -> Any:
    """What the other origin's PATCH got from a site served with ``serve_args``: the answer's
    status and body, or the error ``fetch`` raised."""
    with running_site(workdir, *serve_args) as site, serving_patch_page() as other:
        context = browser.new_context()
        try:
            page = context.new_page()
            page.goto(f"{other}?{urlencode({'api': site.url})}")
            page.locator("body[data-done='true']").wait_for()
            return page.evaluate("window.patchResult")
        finally:
            context.close()


def test_the_spec_list_blocks_a_cross_origin_patch(browser: Browser, tmp_path: Path) -> None:
    assert patch_from_another_origin(browser, tmp_path) == {"error": "TypeError"}


def test_wordpress_compat_lets_a_cross_origin_patch_through(
    browser: Browser, tmp_path: Path
) -> None:
    result = patch_from_another_origin(browser, tmp_path, "--wordpress-compat")
    # The preflight passed: the PATCH reached the site, whose answer the page can read (the
    # fresh site has no note 1).
    assert result == {
        "status": 404,
        "body": {
            "code": "rest_note_invalid_id",
            "message": "Invalid note ID.",
            "data": {"status": 404},
        },
    }
