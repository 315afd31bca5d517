"""Fixtures of the browser tests: a ``svcrest serve`` subprocess and headless Chromium.

The browser is launched once per test module (its Playwright session ends with the module,
so no Playwright event loop outlives the browser tests); every test gets a fresh server,
database, browser context and page.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.browser.support import (
    ACTION_TIMEOUT_MS,
    CHROMIUM,
    CHROMIUM_ARGS,
    Site,
    browser_skip_reason,
    running_site,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless (skips when it or playwright is missing)."""
    reason = browser_skip_reason()
    if reason is not None:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    """A fresh site (database with the editor user) served on a free port."""
    with running_site(tmp_path) as running:
        yield running


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    """A fresh browser context (its own cookies), closed at the end."""
    made = browser.new_context(viewport={"width": 960, "height": 720}, device_scale_factor=1)
    made.set_default_timeout(ACTION_TIMEOUT_MS)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    """A page of ``context``."""
    return context.new_page()
