"""A plugin for ``svcrest serve --plugin tests.e2e.store_site:register``: a
``StoreCollection`` of books (``/shop/v1/books``) that anyone may write, for the proxies'
tests against a live server. With ``--wordpress-compat`` the answers carry only WordPress's
paging headers (``X-WP-Total``, ``X-WP-TotalPages``), as a WordPress site's do."""

from __future__ import annotations

from typing import Any

from svcrest import App, Request, StoreCollection
from svcrest.rest.compat import PAGING_HEADERS

BOOKS_SCHEMA: dict[str, Any] = {
    "title": "book",
    "type": "object",
    "properties": {
        "title": {"type": "string", "required": True, "context": ["view", "edit", "embed"]},
        "year": {"type": "integer", "default": 0, "context": ["view", "edit"]},
    },
}


def anyone(user: Any, item: Any) -> bool:
    """The write rule of the test site: everyone writes."""
    return True


def books() -> StoreCollection:
    """The books collection (a new instance per app)."""
    return StoreCollection(
        "shop/v1", "books", BOOKS_SCHEMA, write=anyone, sortable=("title", "year")
    )


def only_wordpress_names(response: Any, server: Any, request: Request) -> Any:
    """``rest_post_dispatch`` after the compat one: drop svcrest's names of the paging
    headers, leaving WordPress's."""
    headers = getattr(response, "headers", None)
    if headers is not None:
        for ours, _theirs in PAGING_HEADERS:
            headers.pop(ours, None)
    return response


def register(app: App) -> None:
    app.register_controller(books())
    if app.wordpress_compat:
        app.hooks.add_filter("rest_post_dispatch", only_wordpress_names, 30)
