"""RestProxy and AsyncRestProxy read the totals of any collection into their result sets: a
`StoreCollection` (``tests/e2e/store_site.py``) in process on both adapters and behind a live
``svcrest serve``, with svcrest's ``X-SVC-Total`` / ``X-SVC-TotalPages`` and, from a site that
sends only WordPress's ``X-WP-Total`` / ``X-WP-TotalPages``, with those."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from svcrest import App
from svcrest.client import RestProxy
from tests.client.test_proxy_live import CLOCK, DC, HOME, Driver
from tests.e2e.store_site import register
from tests.e2e.test_many_hosts import serving

ROOT = Path(__file__).resolve().parents[2]
BOOKS = f"{HOME}/svc-json/shop/v1/books"
TITLES = ["Emma", "Dune", "Beloved", "Carrie", "Armadale"]


@pytest.fixture(params=[False, True], ids=["svcrest", "wordpress-names"])
def app(request: pytest.FixtureRequest) -> Iterator[App]:
    app = App(HOME, wordpress_compat=bool(request.param))
    register(app)
    yield app
    app.store.close()


@pytest.fixture(params=["wsgi", "asgi"])
def driver(app: App, request: pytest.FixtureRequest) -> Iterator[Driver]:
    made = Driver(app, str(request.param), BOOKS)
    made("create", *({"title": title, "year": 1800 + n} for n, title in enumerate(TITLES)))
    made.sent.clear()
    yield made
    made.close()


def test_read_result_has_the_total_of_the_collection(app: App, driver: Driver) -> None:
    result = driver("read_result", per_page=2, page=2, orderby="title")
    assert [book["title"] for book in result.records] == ["Carrie", "Dune"]
    assert (result.total, result.total_pages) == (5, 3)
    prefix = "X-WP" if app.wordpress_compat else "X-SVC"
    names = (f"{prefix}-Total", f"{prefix}-TotalPages")
    assert [result.response.headers.get(name) for name in names] == ["5", "3"]
    if app.wordpress_compat:  # the site sends WordPress's names only
        assert "X-SVC-Total" not in result.response.headers
    assert driver.sent_lines() == [f"GET {BOOKS}?{DC}&per_page=2&page=2&orderby=title"]


def test_every_page_has_the_total_with_ext_js_params(driver: Driver) -> None:
    pages = driver("read_result", start=4, limit=2, sort='[{"property":"year"}]')
    assert [book["title"] for book in pages.records] == ["Armadale"]
    assert (pages.total, pages.total_pages) == (5, 3)
    every = driver.pages(per_page=2)
    assert [(len(page.records), page.total, page.total_pages) for page in every] == [
        (2, 5, 3),
        (2, 5, 3),
        (1, 5, 3),
    ]


@pytest.mark.parametrize("compat", [[], ["--wordpress-compat"]], ids=["svcrest", "wordpress"])
def test_a_live_server_total(tmp_path: Path, compat: list[str]) -> None:
    options = ["--db", str(tmp_path / "svcrest.db"), "--no-access-log", *compat]
    options += ["--plugin", "tests.e2e.store_site:register"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with serving([("127.0.0.1", options, env)]) as (host,):
        url = f"{host.url}/svc-json/shop/v1/books"
        with RestProxy(url, clock=lambda: CLOCK) as proxy:
            created = proxy.create(*({"title": title} for title in TITLES))
            assert [book["id"] for book in created] == [1, 2, 3, 4, 5]
            result: Any = proxy.read_result(per_page=2, page=3)
            assert [book["title"] for book in result.records] == ["Armadale"]
            assert (result.total, result.total_pages) == (5, 3)
            assert ("X-SVC-Total" in result.response.headers) is not bool(compat)
            assert result.next_url is None
