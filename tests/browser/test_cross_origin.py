"""Cookie + nonce authentication against another origin, in Chromium.

A browser logged in to the site opens a page of another origin (the same host on another port,
so the browser does send the ``SameSite=Lax`` auth cookie with its requests). That page's
script fetches the API with ``credentials: "include"``: it gets the anonymous view, every write
is refused, and it can read no nonce, neither from ``/auth/nonce`` nor from the home page.
The same browser, on the site itself, writes through ``svc-rest.mjs`` with its nonce.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from tests.browser.support import (
    ACTION_TIMEOUT_MS,
    Site,
    api_titles,
    browser_skip_reason,
    log_in,
    running_site,
)

try:
    from playwright.sync_api import Browser, BrowserContext, Response
except ImportError:  # pragma: no cover - the skip reason says how to install it
    pytest.skip(str(browser_skip_reason()), allow_module_level=True)

pytestmark = pytest.mark.skipif(
    browser_skip_reason() is not None, reason=str(browser_skip_reason())
)

#: The other origin's page: its script probes the site named by ``?api=`` and leaves the
#: results in ``window.probeResults``.
PROBE_PAGE = b"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Another origin</title>
<link rel="icon" href="data:,">
<script type="module">
const query = new URLSearchParams(location.search);
const api = query.get("api");
const notes = `${api}/svc-json/demo/v1/notes`;

async function probe(url, init) {
  try {
    const response = await fetch(url, { credentials: "include", ...init });
    const text = await response.text();
    let body = text;
    try { body = JSON.parse(text); } catch {}
    return {
      status: response.status,
      type: response.type,
      body,
      cacheControl: response.headers.get("Cache-Control"),
      nonce: response.headers.get("X-SVC-Nonce"),
      total: response.headers.get("X-SVC-Total"),
    };
  } catch (error) {
    return { error: error.name };
  }
}

const json = { "Content-Type": "application/json" };
const note = JSON.stringify({ title: "Written from another origin" });
window.probeResults = {
  list: await probe(notes),
  create: await probe(notes, { method: "POST", headers: json, body: note }),
  createForm: await probe(notes, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: "title=Written+from+another+origin",
  }),
  createGuessedNonce: await probe(notes, {
    method: "POST",
    headers: { ...json, "X-SVC-Nonce": "0123456789abcdef0123456789abcdef" },
    body: note,
  }),
  destroy: await probe(`${notes}/${query.get("note")}`, { method: "DELETE" }),
  nonce: await probe(`${api}/auth/nonce`),
  nonceNoCors: await probe(`${api}/auth/nonce`, { mode: "no-cors" }),
  homePage: await probe(`${api}/`),
};
document.body.dataset.done = "true";
</script></head>
<body><p>Another origin.</p></body></html>
"""


class _ProbeHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        found = self.path.split("?", 1)[0] == "/"
        body = PROBE_PAGE if found else b"not found"
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8" if found else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@contextmanager
def serving_probe_page() -> Iterator[str]:
    """Serve the probe page on 127.0.0.1, another port; yields its URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ProbeHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


SAME_ORIGIN_WRITE = """async () => {
    const { RestClient } = await import("/static/svc-rest.mjs");
    const client = new RestClient();
    const proxy = client.proxy("demo/v1/notes");
    client.nonce = "0".repeat(32);  // a stale nonce: refreshed from /auth/nonce, then retried
    const [saved] = await client.create(proxy, { title: "Written on the site" });
    const list = await client.execute(proxy, { action: "read" });
    return { id: saved.id, cacheControl: list.headers.get("Cache-Control") };
}"""


@dataclass(frozen=True, slots=True)
class ProbeRun:
    """What the logged-in browser saw on the site and from the other origin."""

    site: Site
    other_origin: str
    note_id: int
    same_origin_cache_control: str | None
    cookie_sent: str
    results: dict[str, Any]
    #: (status, headers) of every /auth/nonce answer the other origin's page received.
    nonce_answers: list[tuple[int, dict[str, str]]]


def _run_probes(context: BrowserContext, url: str) -> tuple[str, dict[str, Any], list[Response]]:
    """Open the probe page: the Cookie header of its first API request, its results and the
    responses it received."""
    other = context.new_page()
    responses: list[Response] = []
    other.on("response", lambda response: responses.append(response))
    with other.expect_request(lambda request: "/demo/v1/notes" in request.url) as first:
        other.goto(url)
    cookie = first.value.all_headers().get("cookie", "")
    other.locator("body[data-done='true']").wait_for()
    results: dict[str, Any] = other.evaluate("window.probeResults")
    return cookie, results, responses


@pytest.fixture(scope="module")
def probe_run(browser: Browser, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProbeRun]:
    """Log in, write one note on the site, then run the other origin's probes (once)."""
    workdir = tmp_path_factory.mktemp("cross-origin")
    with running_site(workdir) as site, serving_probe_page() as other_origin:
        context = browser.new_context()
        context.set_default_timeout(ACTION_TIMEOUT_MS)
        try:
            page = context.new_page()
            log_in(page, site)
            written = page.evaluate(SAME_ORIGIN_WRITE)
            note_id = int(written["id"])
            query = urlencode({"api": site.url, "note": note_id})
            cookie, results, responses = _run_probes(context, f"{other_origin}?{query}")
            nonce_answers = [
                (response.status, response.headers)
                for response in responses
                if "/auth/nonce" in response.url
            ]
            yield ProbeRun(
                site=site,
                other_origin=other_origin.rstrip("/"),
                note_id=note_id,
                same_origin_cache_control=written["cacheControl"],
                cookie_sent=cookie,
                results=results,
                nonce_answers=nonce_answers,
            )
        finally:
            context.close()


def _assert_refused(result: dict[str, Any], status: int, code: str) -> None:
    assert result.get("status") == status, result
    assert result["body"]["code"] == code, result


def test_the_site_itself_writes_with_its_nonce(probe_run: ProbeRun) -> None:
    # svc-rest.mjs replaced a stale nonce from /auth/nonce and retried; the logged-in view
    # is not cacheable.
    assert probe_run.note_id > 0
    assert probe_run.same_origin_cache_control == "no-store"
    # The other origin is the same site, so the browser sends it the auth cookie: what the
    # server does with it is what the tests below check.
    assert "svc_logged_in=" in probe_run.cookie_sent


def test_another_origin_reads_anonymously(probe_run: ProbeRun) -> None:
    listed = probe_run.results["list"]
    assert listed["status"] == 200, listed
    assert [note["title"] for note in listed["body"]] == ["Written on the site"]
    assert listed["total"] == "1"
    # Not the logged-in (no-store) view, and the fresh-nonce header is not exposed.
    assert "no-store" not in (listed["cacheControl"] or "")
    assert listed["nonce"] is None


def test_another_origin_cannot_write(probe_run: ProbeRun) -> None:
    results = probe_run.results
    # Without a nonce the cookie is ignored, so the write is anonymous: 401 (a JSON POST and
    # a form POST, which needs no preflight, alike).
    _assert_refused(results["create"], 401, "rest_cannot_create")
    _assert_refused(results["createForm"], 401, "rest_cannot_create")
    # A guessed nonce is checked against the session and refused: 403.
    _assert_refused(results["createGuessedNonce"], 403, "rest_cookie_invalid_nonce")
    assert api_titles(probe_run.site) == ["Written on the site"]


def test_another_origin_cannot_delete(probe_run: ProbeRun) -> None:
    _assert_refused(probe_run.results["destroy"], 401, "rest_cannot_delete")


def test_another_origin_cannot_read_a_nonce(probe_run: ProbeRun) -> None:
    results = probe_run.results
    # /auth/nonce answers 403 without CORS headers: the fetch fails, a no-cors fetch gets an
    # opaque empty response, and the home page (which embeds a nonce) is unreadable too.
    assert results["nonce"] == {"error": "TypeError"}
    no_cors = results["nonceNoCors"]
    assert (no_cors["type"], no_cors["status"], no_cors["body"]) == ("opaque", 0, "")
    assert results["homePage"] == {"error": "TypeError"}
    assert probe_run.nonce_answers, "the browser should have received /auth/nonce's answer"
    for status, headers in probe_run.nonce_answers:
        assert status == 403
        assert "access-control-allow-origin" not in headers
    # The server agrees, asked directly.
    refused = httpx.get(
        probe_run.site.url + "/auth/nonce",
        headers={"Origin": probe_run.other_origin},
        trust_env=False,
    )
    assert refused.status_code == 403
    assert "access-control-allow-origin" not in refused.headers
