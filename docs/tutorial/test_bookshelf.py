"""Tests of the bookshelf plugin: the whole site in-process, no server and no network."""

from __future__ import annotations

from collections.abc import Iterator

import bookshelf
import httpx
import pytest

from svcrest import App
from svcrest.client import ProxyError, RestProxy

BOOKS = "/svc-json/bookshelf/v1/books"


@pytest.fixture
def app() -> App:
    """A fresh site with the plugin, on an in-memory database."""
    site = App("http://127.0.0.1:8000")
    bookshelf.register(site)
    return site


@pytest.fixture
def http(app: App) -> Iterator[httpx.Client]:
    """An httpx client whose requests go straight into the App's WSGI side."""
    transport = httpx.WSGITransport(app=app.wsgi)
    with httpx.Client(transport=transport, base_url=app.home) as client:
        yield client


@pytest.fixture
def books(app: App, http: httpx.Client) -> RestProxy:
    """The books, through the Python proxy, as the editor ``ed``."""
    app.users.create("ed", "correct horse battery", roles=("editor",))
    proxy = RestProxy(BOOKS, client=http)
    proxy.login("ed", "correct horse battery")  # the login cookie, then a nonce
    return proxy


def test_internal_dispatch_needs_no_http(app: App) -> None:
    response = app.rest_do_request("/bookshelf/v1/books")
    assert (response.status, response.data) == (200, [])


def test_anyone_reads_the_list(http: httpx.Client) -> None:
    response = http.get(BOOKS)
    assert response.status_code == 200
    assert response.json() == []
    assert response.headers["X-SVC-Total"] == "0"
    # Allow lists only what this (anonymous) caller may do.
    assert response.headers["Allow"] == "GET"


def test_the_list_is_paged_sorted_and_filtered(books: RestProxy, http: httpx.Client) -> None:
    for title, author in (("Emma", "Jane Austen"), ("Dune", "Frank Herbert"), ("Ulysses", "")):
        books.create({"title": title, "author": author})
    first = http.get(BOOKS, params={"per_page": 2, "orderby": "title"})
    assert [book["title"] for book in first.json()] == ["Dune", "Emma"]
    assert (first.headers["X-SVC-Total"], first.headers["X-SVC-TotalPages"]) == ("3", "2")
    assert first.headers["Link"].endswith('&page=2>; rel="next"')
    past = http.get(BOOKS, params={"per_page": 2, "page": 3})
    assert (past.status_code, past.json()["code"]) == (400, "rest_invalid_page_number")
    # Ext JS's Rest proxy sends start / limit / sort / filter: they work as well.
    ext = http.get(
        BOOKS,
        params={"start": 0, "limit": 5, "filter": '[{"property":"author","value":"austen"}]'},
    )
    assert [book["title"] for book in ext.json()] == ["Emma"]
    assert [book["id"] for book in http.get(BOOKS, params={"search": "herbert"}).json()] == [2]


def test_arguments_are_checked_before_permissions(http: httpx.Client) -> None:
    missing = http.post(BOOKS, json={"author": "Ursula K. Le Guin"})
    assert missing.status_code == 400
    assert missing.json()["code"] == "rest_missing_callback_param"
    refused = http.post(BOOKS, json={"title": "The Dispossessed"})
    assert refused.status_code == 401
    assert refused.json()["code"] == "rest_cannot_create"


def test_options_describes_the_route(http: httpx.Client) -> None:
    help_data = http.options(BOOKS).json()
    assert help_data["methods"] == ["GET", "POST"]
    assert help_data["endpoints"][1]["args"]["title"]["required"] is True
    assert help_data["schema"]["title"] == "book"


def test_an_editor_manages_books_through_the_proxy(books: RestProxy) -> None:
    [book] = books.create({"title": "Dune", "author": "Frank Herbert"})
    assert (book["id"], book["title"], book["author"]) == (1, "Dune", "Frank Herbert")
    books.update({"id": book["id"], "title": "Dune Messiah"})
    assert books.read(book["id"])["title"] == "Dune Messiah"
    assert [item["id"] for item in books.read(page=1)] == [1]

    books.destroy(book)
    with pytest.raises(ProxyError) as gone:
        books.read(book["id"])
    assert (gone.value.status, gone.value.code) == (404, "rest_book_invalid_id")
