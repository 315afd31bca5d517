"""bookshelf: a svcrest plugin that keeps a list of books under ``bookshelf/v1``.

``register(app)`` is the plugin's entry point: svcrest's command line calls it with the App
(``--plugin bookshelf:register``), and so can your own code and your tests.
"""

from __future__ import annotations

from typing import Any

from svcrest import App, StoreCollection

#: A book, as WordPress describes an item: a JSON Schema whose ``title`` names the object
#: type. Each property becomes a column of the table and an argument of the writes.
BOOK: dict[str, Any] = {
    "title": "book",
    "properties": {
        "title": {
            "description": "The book's title.",
            "type": "string",
            "minLength": 1,
            "maxLength": 200,
            "required": True,
        },
        "author": {
            "description": "Who wrote the book.",
            "type": "string",
            "maxLength": 200,
            "default": "",
        },
    },
}


def register(app: App) -> None:
    """Register ``/bookshelf/v1/books`` and ``/bookshelf/v1/books/<id>``."""
    app.register_controller(
        StoreCollection(
            "bookshelf/v1",
            "books",
            BOOK,
            write="edit_posts",  # authors, editors and administrators; reads are public
            sortable=("title", "author"),
            filterable=("author",),
            searchable=("title", "author"),
        )
    )
