"""svc-rest.mjs's ``subscribe`` with the "sse" transport in Chromium: a real ``EventSource``
on the notes' change feed of the demo served by uvicorn (ASGI, which streams), with the
nonce as ``_wpnonce``; a note created, edited and deleted through the API arrives as three
events in order, on one request and no long-poll; a second subscription from a cursor
resumes after it; an error answer (which an ``EventSource`` cannot read) is learnt by a
long-poll probe and ends the subscription; on a WSGI server, which answers every request to
the feed with the long-poll's JSON, the subscription long-polls instead."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser.support import PASSWORD, USER, Site, browser_skip_reason, log_in, running_site

try:
    from playwright.sync_api import Page, Request
except ImportError:  # pragma: no cover - the skip reason says how to install it
    pytest.skip(str(browser_skip_reason()), allow_module_level=True)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(browser_skip_reason() is not None, reason=str(browser_skip_reason())),
]

#: Subscribe in the page (logged in: the nonce comes from svcApiSettings); every EventSource
#: made is kept in window.__sources, events in window.__events, onError in window.__errors.
SUBSCRIBE = """async ([since]) => {
    const { RestClient } = await import("/static/svc-rest.mjs");
    window.__sources = [];
    class Recorded extends EventSource {
        constructor(url, init) { super(url, init); window.__sources.push(this); }
    }
    window.__events = window.__events ?? [];
    window.__errors = window.__errors ?? [];
    const client = new RestClient({ eventSource: Recorded });
    window.__stop = client.subscribe("demo/v1/notes", (change) => window.__events.push(change), {
        transport: "sse",
        since,
        onError: (error, state) => window.__errors.push(
            { code: error.code ?? error.name, status: error.status ?? null, ...state }),
    });
}"""


@pytest.fixture
def asgi_site(tmp_path: Path) -> Iterator[Site]:
    """The demo served by uvicorn (ASGI: the feed streams)."""
    with running_site(tmp_path, "--server", "uvicorn") as running:
        yield running


def feed_requests(page: Page) -> list[Request]:
    """Every request of the page to the notes' change feed, recorded from now on."""
    sent: list[Request] = []
    page.on("request", lambda request: sent.append(request) if "/changes" in request.url else None)
    return sent


def create_edit_delete(site: Site, page: Page) -> int:
    """Create, edit and delete a note through the API (logged in), each once the page has
    the event of the one before (the feed shows an item as it is when read: a note deleted
    before its creation is read is left out); its id."""
    with httpx.Client(base_url=site.url, trust_env=False, timeout=10) as client:
        client.post("/login", json={"log": USER, "pwd": PASSWORD})
        headers = {"X-SVC-Nonce": str(client.get("/auth/nonce").json()["nonce"])}
        created = client.post("/svc-json/demo/v1/notes", json={"title": "Live"}, headers=headers)
        assert created.status_code == 201, created.text
        note = int(created.json()["id"])
        page.wait_for_function("window.__events.length === 1")
        edited = client.put(
            f"/svc-json/demo/v1/notes/{note}", json={"title": "Live, edited"}, headers=headers
        )
        assert edited.status_code == 200, edited.text
        page.wait_for_function("window.__events.length === 2")
        deleted = client.delete(
            f"/svc-json/demo/v1/notes/{note}", params={"force": "true"}, headers=headers
        )
        assert deleted.status_code == 200, deleted.text
        page.wait_for_function("window.__events.length === 3")
        return note


def open_blank(page: Page, site: Site) -> None:
    """Log in, then leave for a page of the site without the demo's script (which follows the
    feed itself), keeping the nonce in ``window.svcApiSettings``."""
    log_in(page, site, "/")
    settings = page.evaluate("window.svcApiSettings")
    page.goto(site.url + "/no-such-page")
    page.evaluate("(settings) => { window.svcApiSettings = settings; }", settings)


def events(page: Page) -> list[dict[str, Any]]:
    return list(page.evaluate("window.__events"))


def test_sse_delivers_created_updated_deleted_in_order(asgi_site: Site, page: Page) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    open_blank(page, asgi_site)
    sent = feed_requests(page)
    page.evaluate(SUBSCRIBE, [None])
    page.wait_for_function("window.__sources.length === 1 && window.__sources[0].readyState === 1")

    note = create_edit_delete(asgi_site, page)
    seen = events(page)
    assert [(change["event"], change["data"]["id"]) for change in seen] == [
        ("created", note),
        ("updated", note),
        ("deleted", note),
    ]
    # Each item as a GET of the collection shows it at that time.
    assert [seen[0]["data"]["title"], seen[1]["data"]["title"]] == ["Live", "Live, edited"]
    assert "_links" in seen[0]["data"]
    assert seen[2]["data"] == {"id": note}
    cursors = [change["id"] for change in seen]
    assert all(isinstance(cursor, str) and cursor for cursor in cursors)
    assert len(set(cursors)) == 3
    assert page.evaluate("window.__stop.cursor") == cursors[-1]

    # One EventSource request with the nonce in its query, and no long-poll.
    assert [request.headers.get("accept") for request in sent] == ["text/event-stream"]
    assert "_wpnonce=" in sent[0].url
    assert "wait=" not in sent[0].url
    assert page.evaluate("window.__errors") == []

    # Unsubscribing closes the EventSource.
    page.evaluate("window.__stop(); window.__stop.done")
    assert page.evaluate("window.__sources[0].readyState") == 2

    # A second subscription from the first event's cursor resumes after it (since=); the
    # edit of the note deleted since is left out (cursors are opaque: they carry the time
    # they were issued at, so only the event and its data are compared).
    page.evaluate("window.__events = []")
    page.evaluate(SUBSCRIBE, [cursors[0]])
    page.wait_for_function("window.__events.length === 1")
    assert [(change["event"], change["data"]) for change in events(page)] == [
        ("deleted", {"id": note})
    ]
    assert f"since={cursors[0]}" in page.evaluate("window.__sources[0].url")
    page.evaluate("window.__stop(); window.__stop.done")
    assert errors == []


def test_sse_learns_an_error_status_by_a_probe_and_stops(asgi_site: Site, page: Page) -> None:
    open_blank(page, asgi_site)
    sent = feed_requests(page)
    page.evaluate(SUBSCRIBE, ["not-a-cursor"])
    page.wait_for_function("window.__errors.length === 1")
    page.evaluate("window.__stop.done")
    assert page.evaluate("window.__errors") == [
        {"code": "rest_invalid_param", "status": 400, "retrying": False}
    ]
    assert page.evaluate("window.__sources[0].readyState") == 2
    # The EventSource's request, then the one long-poll that read the status.
    assert [request.headers.get("accept") for request in sent] == [
        "text/event-stream",
        "application/json",
    ]
    assert "wait=0" in sent[1].url


def test_sse_on_a_wsgi_server_long_polls(tmp_path: Path, page: Page) -> None:
    with running_site(tmp_path, "--server", "granian", "--interface", "wsgi") as site:
        open_blank(page, site)
        sent = feed_requests(page)
        page.evaluate(SUBSCRIBE, [None])
        # The EventSource gets JSON, gives up; the subscription goes on long-polling.
        page.wait_for_function("window.__sources.length && window.__sources[0].readyState === 2")
        page.wait_for_function("window.__stop.cursor !== null")
        note = create_edit_delete(site, page)
        assert [(change["event"], change["data"]["id"]) for change in events(page)] == [
            ("created", note),
            ("updated", note),
            ("deleted", note),
        ]
        assert page.evaluate("window.__errors") == []
        accepts = [request.headers.get("accept") for request in sent]
        assert accepts[0] == "text/event-stream"
        assert set(accepts[1:]) == {"application/json"}
        assert "wait=0" in sent[1].url
        assert "wait=30" in sent[2].url
        page.evaluate("window.__stop(); window.__stop.done")
