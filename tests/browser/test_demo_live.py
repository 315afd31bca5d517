"""The demo home page updates live: two tabs in Chromium, a note created, edited and deleted
in one shows in the other's list without a reload (the page follows the notes' change feed
with svc-rest.mjs's ``subscribe``); a change made while the other tab edits a note waits
until that edit is done."""

from __future__ import annotations

import httpx
import pytest

from tests.browser.support import PASSWORD, USER, Site, browser_skip_reason, log_in
from tests.browser.test_demo_page import card, create_note, notes

try:
    from playwright.sync_api import BrowserContext, Page, expect
except ImportError:  # pragma: no cover - the skip reason says how to install it
    pytest.skip(str(browser_skip_reason()), allow_module_level=True)

pytestmark = pytest.mark.skipif(
    browser_skip_reason() is not None, reason=str(browser_skip_reason())
)


def titles(page: Page) -> list[str]:
    return [str(text) for text in notes(page).locator(".note-title").all_text_contents()]


def test_a_change_in_one_tab_shows_in_the_other(
    site: Site, page: Page, context: BrowserContext
) -> None:
    errors: list[str] = []
    log_in(page, site, "/")
    watcher = context.new_page()  # the same session, another tab
    for tab in (page, watcher):
        tab.on("pageerror", lambda error: errors.append(str(error)))
    watcher.goto(site.url + "/")
    expect(watcher.locator("#notes-empty")).to_be_visible()
    watcher.evaluate("window.__sameDocument = true")

    create_note(page, "Groceries", "Milk")
    expect(notes(watcher).locator(".note-title")).to_have_text(["Groceries"])
    expect(watcher.locator("#notes-total")).to_have_text("1 note")

    create_note(page, "Call Alice", "")
    expect(notes(watcher).locator(".note-title")).to_have_text(["Call Alice", "Groceries"])

    groceries = card(page, "Groceries")
    groceries.get_by_role("button", name="Edit").click()
    groceries.get_by_label("Title").fill("Groceries for Sunday")
    groceries.get_by_label("Content").fill("Milk, eggs")
    groceries.get_by_role("button", name="Save").click()
    expect(notes(watcher).locator(".note-title")).to_have_text(
        ["Call Alice", "Groceries for Sunday"]
    )
    expect(card(watcher, "Groceries for Sunday").locator(".note-content")).to_have_text(
        "Milk, eggs"
    )

    alice = card(page, "Call Alice")
    alice.get_by_role("button", name="Delete").click()
    alice.get_by_role("button", name="Confirm delete").click()
    expect(notes(watcher).locator(".note-title")).to_have_text(["Groceries for Sunday"])
    expect(watcher.locator("#notes-total")).to_have_text("1 note")

    assert watcher.evaluate("window.__sameDocument") is True  # never reloaded
    assert errors == []


def test_a_change_waits_for_the_edit_open_in_the_other_tab(
    site: Site, page: Page, context: BrowserContext
) -> None:
    log_in(page, site, "/")
    create_note(page, "Draft", "")
    watcher = context.new_page()
    watcher.goto(site.url + "/")
    expect(notes(watcher).locator(".note-title")).to_have_text(["Draft"])
    draft = card(watcher, "Draft")
    draft.get_by_role("button", name="Edit").click()
    draft.get_by_label("Title").fill("Draft, half typed")

    create_note(page, "Meanwhile", "")
    # A change made elsewhere does not throw away what is being typed...
    watcher.wait_for_timeout(1500)
    expect(draft.get_by_label("Title")).to_have_value("Draft, half typed")
    expect(notes(watcher)).to_have_count(1)
    # ...and shows once the edit is done.
    draft.get_by_role("button", name="Save").click()
    expect(notes(watcher).locator(".note-title")).to_have_text(["Meanwhile", "Draft, half typed"])


def test_the_page_follows_the_feed_anonymously(site: Site, page: Page) -> None:
    page.goto(site.url + "/")
    expect(page.locator("#notes-empty")).to_be_visible()
    with httpx.Client(base_url=site.url, trust_env=False, timeout=10) as writer:
        writer.post("/login", json={"log": USER, "pwd": PASSWORD})
        nonce = writer.get("/auth/nonce").json()["nonce"]
        created = writer.post(
            "/svc-json/demo/v1/notes",
            json={"title": "From elsewhere"},
            headers={"X-SVC-Nonce": nonce},
        )
        assert created.status_code == 201, created.text
    expect(notes(page).locator(".note-title")).to_have_text(["From elsewhere"])
    assert titles(page) == ["From elsewhere"]
