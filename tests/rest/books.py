"""A small in-memory resource for the controller tests: books in a dict, on
``svcrest.RestController``."""

from __future__ import annotations

import base64
from typing import Any, ClassVar

from svcrest import App, Request, Response, RestController, RestError, paginate

DRAFT4 = "http://json-schema.org/draft-04/schema#"
BOOKS = "/svc-json/shop/v1/books"


class BooksController(RestController):
    """Books in memory: the five operations, WordPress's capabilities and errors."""

    namespace = "shop/v1"
    rest_base = "books"
    schema: ClassVar[dict[str, Any]] = {
        "$schema": DRAFT4,
        "title": "book",
        "type": "object",
        "properties": {
            "id": {
                "description": "Unique identifier for the book.",
                "type": "integer",
                "readonly": True,
                "context": ["view", "edit", "embed"],
            },
            "title": {
                "description": "The title of the book.",
                "type": "string",
                "required": True,
                "minLength": 1,
                "context": ["view", "edit", "embed"],
            },
            "pages": {
                "description": "How many pages it has.",
                "type": "integer",
                "minimum": 1,
                "default": 100,
                "context": ["view", "edit"],
            },
            "isbn": {
                "description": "Its ISBN (editors only).",
                "type": "string",
                "context": ["edit"],
            },
        },
    }

    def __init__(self) -> None:
        super().__init__()
        self.books: dict[int, dict[str, Any]] = {}
        self.next_id = 1

    def _readable(self, request: Request) -> RestError | bool:
        if request.get_param("context") == "edit" and not request.user.can("edit_posts"):
            return self.forbidden("rest_forbidden_context", request)
        return True

    def get_items_permissions_check(self, request: Request) -> RestError | bool:
        return self._readable(request)

    def get_items(self, request: Request) -> Response:
        query = self.prepare_items_query(request)
        books = [self.books[key] for key in sorted(self.books)]
        search = query.get("search")
        if isinstance(search, str) and search:
            books = [book for book in books if search.lower() in book["title"].lower()]
        window = books[query["offset"] : query["offset"] + query["per_page"]]
        items = [
            self.prepare_response_for_collection(self.prepare_item_for_response(book, request))
            for book in window
        ]
        return paginate(
            request, items, total=len(books), page=query["page"], per_page=query["per_page"]
        )

    def get_item_permissions_check(self, request: Request) -> RestError | bool:
        return self._readable(request)

    def get_item(self, request: Request) -> Response | RestError:
        book = self.books.get(request["id"])
        if book is None:
            return self.invalid_id()
        return self.prepare_item_for_response(book, request)

    def create_item_permissions_check(self, request: Request) -> RestError | bool:
        if not request.user.can("publish_posts"):
            return self.forbidden("rest_cannot_create", request)
        return True

    def create_item(self, request: Request) -> Response | RestError:
        prepared = self.prepare_item_for_database(request)
        book = {"id": self.next_id, **prepared}
        saved = dict(self.books)
        self.books[book["id"]] = book
        error = self.complete_insert(book, request, creating=True)
        if error is not None:
            self.books = saved  # nothing of a refused write is kept
            return error
        self.next_id += 1
        request.set_param("context", "edit")
        response = self.prepare_item_for_response(book, request)
        response.status = 201
        response.headers["Location"] = self.app.rest_url(f"/shop/v1/books/{book['id']}")
        return response

    def update_item_permissions_check(self, request: Request) -> RestError | bool:
        if request.get_param("id") not in self.books:
            return self.invalid_id()
        if not request.user.can("edit_others_posts"):
            return self.forbidden("rest_cannot_edit", request)
        return True

    def update_item(self, request: Request) -> Response | RestError:
        old = self.books[request["id"]]
        book = {**old, **self.prepare_item_for_database(request)}
        self.books[book["id"]] = book
        error = self.complete_insert(book, request, creating=False)
        if error is not None:
            self.books[book["id"]] = old
            return error
        request.set_param("context", "edit")
        return self.prepare_item_for_response(book, request)

    def delete_item_permissions_check(self, request: Request) -> RestError | bool:
        if request.get_param("id") not in self.books:
            return self.invalid_id()
        if not request.user.can("delete_others_posts"):
            return self.forbidden("rest_cannot_delete", request)
        return True

    def delete_item(self, request: Request) -> Response:
        request.set_param("context", "edit")
        book = self.books.pop(request["id"])
        previous = self.prepare_item_for_response(book, request)
        response = Response({"deleted": True, "previous": previous.data})
        self.complete_delete(book, response, request)
        return response


def books_app() -> tuple[App, BooksController]:
    """A site with the books resource, an editor ``ed`` and a subscriber ``sue``."""
    app = App(secret_key="k" * 32)
    controller = app.register_controller(BooksController())
    app.users.create("ed", "ed-password", roles=("editor",))
    app.users.create("sue", "sue-password", roles=("subscriber",))
    return app, controller


def basic_auth(app: App, login: str) -> dict[str, str]:
    """The Authorization header of an application password of ``login``."""
    user = app.users.get_by_login(login)
    assert user is not None
    password, _ = app.users.create_application_password(user.id, "tests")
    token = base64.b64encode(f"{login}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}
