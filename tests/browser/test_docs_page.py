"""The ``/docs`` page in Chromium: Swagger UI renders every operation of ``/openapi.json``
with no request leaving the server, and "Try it out" works for a logged-in editor (the page's
nonce goes with the login cookie). A screenshot is kept as an artifact."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.browser.support import ARTIFACTS, Site, browser_skip_reason, log_in

try:
    from playwright.sync_api import ConsoleMessage, Page, Request, expect
except ImportError:  # pragma: no cover - the skip reason says how to install it
    pytest.skip(str(browser_skip_reason()), allow_module_level=True)

pytestmark = pytest.mark.skipif(
    browser_skip_reason() is not None, reason=str(browser_skip_reason())
)

#: The demo's operations (its notes' change feed included) and the application-password
#: routes', as Swagger UI lists them.
OPERATIONS = 17


def watch(page: Page) -> tuple[list[str], list[str]]:
    """Every URL the page requests, and every console error or page error."""
    requested: list[str] = []
    errors: list[str] = []

    def on_request(request: Request) -> None:
        requested.append(request.url)

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(message.text)

    page.on("request", on_request)
    page.on("console", on_console)
    page.on("pageerror", lambda error: errors.append(str(error)))
    return requested, errors


def test_the_docs_page_renders_offline(page: Page, site: Site) -> None:
    requested, errors = watch(page)
    page.goto(site.url + "/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("svcrest")
    expect(page.locator(".opblock")).to_have_count(OPERATIONS)
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert sorted({path.strip() for path in paths}) == [
        "/",
        "/batch/v1",
        "/demo/v1",
        "/demo/v1/notes",
        "/demo/v1/notes/changes",
        "/demo/v1/notes/{id}",
        "/demo/v1/users/{id}",
        "/svc/v2",
        "/svc/v2/users/{user_id}/application-passwords",
        "/svc/v2/users/{user_id}/application-passwords/{uuid}",
    ]
    page.wait_for_load_state("networkidle")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "docs-page.png"))
    assert requested, "the page requested nothing"
    elsewhere = [url for url in requested if not url.startswith((site.url + "/", "data:"))]
    assert elsewhere == [], site.server_log()
    assert site.url + "/openapi.json" in requested
    assert errors == []


def test_try_it_out_as_a_logged_in_editor(page: Page, site: Site) -> None:
    log_in(page, site)
    created = page.request.post(
        site.api + "demo/v1/notes",
        data={"title": "Delete me from the docs"},
        headers={"X-SVC-Nonce": page.evaluate("svcApiSettings.nonce")},
    )
    assert created.status == 201
    note_id = created.json()["id"]
    requested, errors = watch(page)
    page.goto(site.url + "/docs")
    operation = page.locator(".opblock-delete").filter(has_text="/demo/v1/notes/{id}")
    operation.locator(".opblock-summary").click()
    operation.get_by_role("button", name="Try it out").click()
    operation.locator('input[placeholder="id"]').fill(str(note_id))
    operation.get_by_role("button", name="Execute").click()
    status = operation.locator(".live-responses-table tbody .response-col_status")
    expect(status).to_have_text("200")
    gone = httpx.get(f"{site.api}demo/v1/notes/{note_id}", timeout=10, trust_env=False)
    assert gone.status_code == 404
    assert all(url.startswith(site.url + "/") for url in requested if not url.startswith("data:"))
    assert errors == []


#: The operations that may need a login (Swagger UI's padlock): the batch, the five
#: application-password operations and the four note writes.
PADLOCKS = 10


def test_padlocks_and_date_examples(page: Page, site: Site) -> None:
    """Only operations that may need a login show a padlock; dates show as dates, not as a
    string generated from a pattern."""
    page.goto(site.url + "/docs")
    expect(page.locator(".opblock")).to_have_count(OPERATIONS)
    expect(page.locator(".opblock .authorization__btn")).to_have_count(PADLOCKS)
    public = page.locator(".opblock-get").filter(has_text="/demo/v1/notes/{id}")
    expect(public.locator(".authorization__btn")).to_have_count(0)
    operation = page.locator(".opblock-post").filter(has_text="/demo/v1/notes")
    expect(operation.locator(".authorization__btn")).to_have_count(1)
    operation.locator(".opblock-summary").click()
    body = operation.locator(".opblock-section-request-body .microlight").first
    expect(body).to_contain_text('"date"')
    sent = re.search(r'"date": "([^"]*)"', body.inner_text())
    assert sent is not None
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", sent[1]), sent[1]
    answer = operation.locator(".responses-wrapper .microlight").first
    expect(answer).to_contain_text('"date_gmt": "2024-05-01T09:30:00"')
