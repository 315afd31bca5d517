"""bookshelf: a svcrest plugin that keeps a list of books under ``bookshelf/v1``.

``register(app)`` is the plugin's entry point: svcrest's command line calls it with the App
(``--plugin bookshelf:register``), and so can your own code and your tests.
"""

from __future__ import annotations

import math
from typing import Any

from svcrest import App, Request, Response, RestError

NAMESPACE = "bookshelf/v1"

#: Schema steps of the books table; ``app.store.migrate`` applies each step once per database.
SCHEMA = (
    """
    CREATE TABLE bookshelf_books (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        title TEXT NOT NULL,
        author TEXT NOT NULL
    )
    """,
)

#: The arguments a book is written with; the id comes from the URL.
BOOK_ARGS: dict[str, Any] = {
    "title": {"type": "string", "minLength": 1, "maxLength": 200},
    "author": {"type": "string", "maxLength": 200},
}


def book_schema() -> dict[str, Any]:
    """The JSON Schema of a book, shown in the routes' OPTIONS help."""
    return {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "title": "book",
        "type": "object",
        "properties": {
            "id": {"type": "integer", "readonly": True},
            "title": {"type": "string"},
            "author": {"type": "string"},
        },
    }


def can_edit(request: Request) -> bool:
    """Writes need the ``edit_posts`` capability (authors, editors and administrators)."""
    return request.user.can("edit_posts")


def register(app: App) -> None:
    """Create the books table (once per database) and register the routes."""
    store = app.store
    store.migrate("bookshelf", SCHEMA)

    def find(book_id: int) -> dict[str, Any]:
        with store.read() as conn:
            row = conn.execute(
                "SELECT id, title, author FROM bookshelf_books WHERE id = ?", (book_id,)
            ).fetchone()
        if row is None:
            raise RestError("bookshelf_not_found", "No book has that id.", {"status": 404})
        return {"id": row[0], "title": row[1], "author": row[2]}

    def list_books(request: Request) -> Response:
        page, per_page = request["page"], request["per_page"]
        with store.read() as conn:
            total = conn.execute("SELECT COUNT(*) FROM bookshelf_books").fetchone()[0]
            rows = conn.execute(
                "SELECT id, title, author FROM bookshelf_books ORDER BY id LIMIT ? OFFSET ?",
                (per_page, (page - 1) * per_page),
            ).fetchall()
        response = Response([{"id": row[0], "title": row[1], "author": row[2]} for row in rows])
        response.headers["X-SVC-Total"] = str(total)
        response.headers["X-SVC-TotalPages"] = str(math.ceil(total / per_page))
        return response

    def create_book(request: Request) -> Response:
        with store.transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO bookshelf_books (title, author) VALUES (?, ?)",
                (request["title"], request["author"] or ""),
            )
            book_id = cursor.lastrowid
        assert book_id is not None
        return Response(find(book_id), status=201)

    def get_book(request: Request) -> dict[str, Any]:
        return find(request["id"])

    def update_book(request: Request) -> dict[str, Any]:
        book = find(request["id"])
        for field in ("title", "author"):
            if request[field] is not None:
                book[field] = request[field]
        with store.transaction() as conn:
            conn.execute(
                "UPDATE bookshelf_books SET title = ?, author = ? WHERE id = ?",
                (book["title"], book["author"], book["id"]),
            )
        return book

    def delete_book(request: Request) -> dict[str, Any]:
        book = find(request["id"])
        with store.transaction() as conn:
            conn.execute("DELETE FROM bookshelf_books WHERE id = ?", (book["id"],))
        return {"deleted": True, "previous": book}

    app.register_rest_route(
        NAMESPACE,
        "/books",
        {
            0: {
                "methods": "GET",
                "callback": list_books,
                "args": {
                    "page": {"type": "integer", "minimum": 1, "default": 1},
                    "per_page": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
                },
            },
            1: {
                "methods": "POST",
                "callback": create_book,
                "permission_callback": can_edit,
                "args": {**BOOK_ARGS, "title": {**BOOK_ARGS["title"], "required": True}},
            },
            "schema": book_schema,
        },
    )
    app.register_rest_route(
        NAMESPACE,
        r"/books/(?P<id>\d+)",
        {
            "args": {"id": {"type": "integer", "minimum": 1}},
            0: {"methods": "GET", "callback": get_book},
            1: {
                "methods": "PUT, PATCH",
                "callback": update_book,
                "permission_callback": can_edit,
                "args": BOOK_ARGS,
            },
            2: {"methods": "DELETE", "callback": delete_book, "permission_callback": can_edit},
            "schema": book_schema,
        },
    )
