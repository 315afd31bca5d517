"""The demo home page in Chromium: log in through the form, then create, edit, page through
and delete notes in the UI; the data survives a reload; a screenshot is kept as an artifact."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest

from tests.browser.support import (
    ARTIFACTS,
    PASSWORD,
    USER,
    Site,
    api_titles,
    browser_skip_reason,
    log_in,
)

try:
    from playwright.sync_api import Locator, Page, expect
except ImportError:  # pragma: no cover - the skip reason says how to install it
    pytest.skip(str(browser_skip_reason()), allow_module_level=True)

pytestmark = pytest.mark.skipif(
    browser_skip_reason() is not None, reason=str(browser_skip_reason())
)

#: An Idempotency-Key as svc-rest.mjs sends it: a quoted random (version 4) UUID.
KEY = re.compile(r'"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"')
#: A title that would run script if the page ever rendered note data as HTML.
XSS_TITLE = '<img src=x onerror="window.__xss = 1">'


def notes(page: Page) -> Locator:
    """The note cards of the list."""
    return page.locator("#notes-list > li.note")


def card(page: Page, title: str) -> Locator:
    """The card of the note titled exactly ``title`` (found by its id, so that it stays
    found while the card shows its edit form)."""
    title_pattern = re.compile(f"^{re.escape(title)}$")
    found = notes(page).filter(has=page.locator(".note-title", has_text=title_pattern))
    expect(found).to_have_count(1)
    note_id = found.get_attribute("data-id")
    return page.locator(f'#notes-list > li.note[data-id="{note_id}"]')


def create_note(page: Page, title: str, content: str) -> None:
    """Create a note with the composer form; it shows first (newest first, page 1)."""
    form = page.locator("#note-create")
    form.get_by_label("Title").fill(title)
    form.get_by_label("Content").fill(content)
    form.get_by_role("button", name="Add note").click()
    expect(notes(page).first.locator(".note-title")).to_have_text(title)
    expect(form.get_by_label("Title")).to_have_value("")


def expect_page(page: Page, info: str, titles: list[str]) -> None:
    """The pager says ``info`` and the list shows ``titles`` in order."""
    expect(page.locator("#page-info")).to_have_text(info)
    expect(notes(page).locator(".note-title")).to_have_text(titles)
    expect(page.locator("#notes-list")).to_have_attribute("aria-busy", "false")


def test_notes_crud_through_the_ui(site: Site, page: Page) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    # (method, Idempotency-Key) of each REST request the page sends through svc-rest.mjs.
    sent: list[tuple[str, str | None]] = []
    page.on(
        "request",
        lambda request: (
            sent.append((request.method, request.headers.get("idempotency-key")))
            if "/svc-json/" in request.url
            else None
        ),
    )

    # Logged out: the list is readable, there is no composer, and a "Log in" link.
    page.goto(site.url + "/?per_page=2")
    expect(page.locator("#notes-empty")).to_be_visible()
    expect(page.locator("#note-create")).to_have_count(0)
    page.get_by_role("link", name="Log in").click()

    # The login form sends us back to the page we came from, logged in.
    page.get_by_label("Username").fill(USER)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(site.url + "/?per_page=2")
    expect(page.locator("#current-user")).to_have_text(USER)
    expect(page.get_by_role("button", name="Log out")).to_be_visible()
    discovery = page.locator("head link[rel='https://api.w.org/']")
    expect(discovery).to_have_attribute("href", site.api)
    settings = page.evaluate("window.svcApiSettings")
    assert settings["root"] == site.api
    assert re.fullmatch(r"[0-9a-f]{32}", settings["nonce"])

    create_note(page, "Groceries", "Milk, eggs, bread")
    create_note(page, "Call Alice", "About the REST talk")
    create_note(page, XSS_TITLE, "<script>window.__xss = 2</script>")
    expect(page.locator("#notes-total")).to_have_text("3 notes")
    expect_page(page, "Page 1 of 2", [XSS_TITLE, "Call Alice"])
    # Note data is text, never markup.
    expect(page.locator("#notes-list img, #notes-list script")).to_have_count(0)
    assert page.evaluate("window.__xss") is None

    # Edit inline.
    alice = card(page, "Call Alice")
    alice.get_by_role("button", name="Edit").click()
    alice.get_by_label("Title").fill("Call Alice back")
    alice.get_by_label("Content").fill("Tuesday, about the talk")
    alice.get_by_role("button", name="Save").click()
    expect(page.locator("#notes-message")).to_have_text("Note saved.")
    edited = card(page, "Call Alice back")
    expect(edited.locator(".note-content")).to_have_text("Tuesday, about the talk")

    # Page through: page 2 holds the oldest note; the page is kept in the URL.
    page.get_by_role("button", name="Next").click()
    expect_page(page, "Page 2 of 2", ["Groceries"])
    expect(page.get_by_role("button", name="Next")).to_be_disabled()
    assert "page=2" in page.url
    page.get_by_role("button", name="Previous").click()
    expect_page(page, "Page 1 of 2", [XSS_TITLE, "Call Alice back"])

    # Delete asks for a second click; "Keep" backs out.
    xss = card(page, XSS_TITLE)
    xss.get_by_role("button", name="Delete").click()
    xss.get_by_role("button", name="Keep").click()
    expect(xss.get_by_role("button", name="Delete")).to_be_visible()
    xss.get_by_role("button", name="Delete").click()
    xss.get_by_role("button", name="Confirm delete").click()
    expect(page.locator("#notes-message")).to_have_text("Note deleted.")
    expect_page(page, "Page 1 of 1", ["Call Alice back", "Groceries"])
    expect(page.locator("#notes-total")).to_have_text("2 notes")

    # A reload shows what the server stored.
    page.reload()
    expect_page(page, "Page 1 of 1", ["Call Alice back", "Groceries"])
    expect(card(page, "Call Alice back").locator(".note-content")).to_have_text(
        "Tuesday, about the talk"
    )
    assert api_titles(site) == ["Call Alice back", "Groceries"]
    assert errors == []

    # Chromium's crypto.randomUUID gave each write its own key; reads carry none.
    writes = [(method, key) for method, key in sent if method != "GET"]
    assert [method for method, _ in writes] == ["POST", "POST", "POST", "PUT", "DELETE"], sent
    keys = [key for _, key in writes]
    assert all(key is not None and KEY.fullmatch(key) for key in keys), keys
    assert len(set(keys)) == len(keys)
    reads = [key for method, key in sent if method == "GET"]
    assert reads and reads == [None] * len(reads)


def test_the_loading_state_shows_while_a_page_loads(site: Site, page: Page) -> None:
    page.goto(site.url + "/")
    loading = page.locator("#notes-loading")
    expect(page.locator("#notes-list")).to_have_attribute("aria-busy", "false")
    expect(loading).to_be_hidden()
    expect(loading).to_have_text("Loading notes…")
    during, after = page.evaluate(
        """async () => {
            const loading = document.getElementById("notes-loading");
            const busy = () => [!loading.hidden, document.getElementById("notes-list").ariaBusy];
            const load = window.notesApp.load();
            const during = busy();
            await load;
            return [during, busy()];
        }"""
    )
    assert (during, after) == ([True, "true"], [False, "false"])


def test_a_lost_session_says_so_and_links_to_the_login_page(site: Site, page: Page) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, site, "/")
    create_note(page, "Before", "")
    page.context.clear_cookies()  # the session cookie is gone (expired, or logged out elsewhere)

    form = page.locator("#note-create")
    form.get_by_label("Title").fill("Too late")
    form.get_by_role("button", name="Add note").click()
    message = page.locator("#notes-message")
    expect(message).to_have_text("Your session ended — log in again.")
    expect(message).to_have_attribute("role", "alert")
    expect(message).to_have_attribute("data-kind", "error")
    link = message.get_by_role("link", name="log in again")
    login = f"{site.url}/login?redirect_to={quote(site.url + '/', safe='')}"
    expect(link).to_have_attribute("href", login)
    assert api_titles(site) == ["Before"]

    # The link leads back, logged in, and writing works again.
    link.click()
    page.get_by_label("Username").fill(USER)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(site.url + "/")
    create_note(page, "After", "")
    assert api_titles(site) == ["After", "Before"]
    assert errors == []


SAMPLE_NOTES = [
    ("Release checklist", "Tag v0.1, build the wheel, upload.\nThen tell everybody."),
    ("Read the REST spec again", "Sections 4.6 (CORS) and 5.2 (cookie + nonce)."),
    ("Groceries", "Milk, eggs, bread, coffee."),
    ("Call Alice", "About the talk on namespaced REST APIs."),
]


def test_screenshot_of_the_demo_page(site: Site, page: Page) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.goto(site.url + "/")
    expect(page.locator("#notes-empty")).to_be_visible()
    page.screenshot(path=ARTIFACTS / "demo-logged-out.png", full_page=True)

    log_in(page, site, "/?per_page=3")
    saved = page.evaluate(
        """async (notes) => {
            const { RestClient } = await import("/static/svc-rest.mjs");
            const client = new RestClient();
            const proxy = client.proxy("demo/v1/notes");
            const records = notes.map(([title, content]) => ({ title, content }));
            const created = await client.create(proxy, ...records);
            return created.map((note) => note.id);
        }""",
        SAMPLE_NOTES,
    )
    assert len(saved) == len(SAMPLE_NOTES)
    page.reload()
    expect_page(page, "Page 1 of 2", [title for title, _ in reversed(SAMPLE_NOTES)][:3])
    # The page keeps a long-poll of the notes' changes open, so the network is never idle:
    # wait for the load event and the fonts instead.
    page.wait_for_load_state("load")
    assert page.evaluate("document.fonts.ready.then(() => true)") is True
    path = ARTIFACTS / "demo.png"
    page.screenshot(path=path, full_page=True)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_page_works_under_another_host_name(site: Site, page: Page) -> None:
    # The site's home names 127.0.0.1; opened as localhost, the page must still load its
    # script, list the notes and write with its nonce (no URL of the page names a host).
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    failed: list[str] = []
    page.on("requestfailed", lambda request: failed.append(request.url))
    local = site.url.replace("127.0.0.1", "localhost")
    assert local != site.url

    page.goto(local + "/")
    expect(page.locator("#notes-empty")).to_be_visible()
    expect(page.locator("#notes-list")).to_have_attribute("aria-busy", "false")
    assert failed == []

    # Logged in (the login form checks the home's origin, so the session is made on
    # 127.0.0.1 and its cookie handed to localhost too), then write through the UI. Leaving
    # a page may cancel its last loads (its favicon, its long-poll of the notes' changes):
    # only the localhost page's count.
    log_in(page, site)
    context = page.context
    for cookie in context.cookies(site.url):
        context.add_cookies(
            [{"name": cookie["name"], "value": cookie["value"], "url": local + "/"}]
        )
    failed.clear()
    page.goto(local + "/")
    expect(page.locator("#current-user")).to_have_text(USER)
    create_note(page, "Written on localhost", "through the relative root")
    expect(page.locator("#notes-total")).to_have_text("1 note")
    assert api_titles(site) == ["Written on localhost"]
    assert errors == []
    # The page left keeps a long-poll of the notes' changes open, which leaving cancels.
    assert [url for url in failed if not url.startswith(site.url + "/")] == []
