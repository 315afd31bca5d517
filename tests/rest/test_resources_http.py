"""``RestController`` and ``register_rest_field`` over HTTP, on both adapters: the books
resource (tests/rest/books.py), WordPress's answers and codes, and the ``register_rest_field``
cases of WordPress's ``rest-posts-controller.php``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from svcrest import App, Request, Response, RestController, RestError, public
from tests.conftest import SiteClient
from tests.rest.books import BOOKS, BooksController, basic_auth, books_app

ClientFor = Callable[..., SiteClient]
ROOT = "http://127.0.0.1:8000/svc-json"


def links(book_id: int) -> dict[str, Any]:
    return {
        "self": [{"href": f"{ROOT}/shop/v1/books/{book_id}"}],
        "collection": [{"href": f"{ROOT}/shop/v1/books"}],
    }


def seeded() -> tuple[App, BooksController]:
    app, controller = books_app()
    controller.books = {
        1: {"id": 1, "title": "Dune", "pages": 412, "isbn": "978-0441013593"},
        2: {"id": 2, "title": "Emma", "pages": 474, "isbn": "978-0141439587"},
        3: {"id": 3, "title": "Dracula", "pages": 418, "isbn": "978-0141439846"},
    }
    controller.next_id = 4
    return app, controller


def test_routes_have_the_methods_implemented() -> None:
    app, _ = books_app()
    routes = app.rest_get_server().get_routes("shop/v1")
    assert [[handler["methods"] for handler in handlers] for route, handlers in routes.items()] == [
        [{"GET": True}],
        [{"GET": True}, {"POST": True}],
        [{"GET": True}, {"POST": True, "PUT": True, "PATCH": True}, {"DELETE": True}],
    ]
    assert list(routes) == ["/shop/v1", "/shop/v1/books", r"/shop/v1/books/(?P<id>[\d]+)"]


class ReadOnly(RestController):
    namespace = "ro/v1"
    rest_base = "things"
    schema: ClassVar[dict[str, Any]] = {
        "title": "thing",
        "type": "object",
        "properties": {"id": {"type": "integer"}},
    }

    def get_items_permissions_check(self, request: Request) -> bool:
        return True

    def get_items(self, request: Request) -> list[Any]:
        return [{"id": 1}]

    def get_item(self, request: Request) -> Any:
        return {"id": request["id"]}


def test_only_the_operations_written_are_routed(client_for: ClientFor) -> None:
    app = App()
    app.register_controller(ReadOnly())
    client = client_for(app)
    assert client.get("/svc-json/ro/v1/things").json() == [{"id": 1}]
    refused = client.post("/svc-json/ro/v1/things")
    assert refused.status_code == 405
    assert refused.json()["code"] == "rest_no_route"
    assert refused.headers["allow"] == "GET"
    assert client.request("DELETE", "/svc-json/ro/v1/things/1").status_code == 405


def test_an_operation_without_its_permission_check_answers_invalid_method(
    client_for: ClientFor,
) -> None:
    app = App()
    app.register_controller(ReadOnly())
    client = client_for(app)
    answer = client.get("/svc-json/ro/v1/things/7")
    assert answer.status_code == 405
    assert answer.json() == {
        "code": "invalid-method",
        "message": (
            "Method 'RestController.get_item_permissions_check' not implemented."
            " Must be overridden in subclass."
        ),
        "data": {"status": 405},
    }


def test_get_items(client_for: ClientFor) -> None:
    app, _ = seeded()
    answer = client_for(app).get(BOOKS, params={"per_page": 2})
    assert answer.status_code == 200
    assert answer.json() == [
        {"id": 1, "title": "Dune", "pages": 412, "_links": links(1)},
        {"id": 2, "title": "Emma", "pages": 474, "_links": links(2)},
    ]
    assert answer.headers["x-svc-total"] == "3"
    assert answer.headers["x-svc-totalpages"] == "2"
    assert answer.headers.get_list("link")[-1] == (
        f'<{ROOT}/shop/v1/books?per_page=2&page=2>; rel="next"'
    )


def test_get_items_search_and_page(client_for: ClientFor) -> None:
    app, _ = seeded()
    client = client_for(app)
    assert [book["title"] for book in client.get(BOOKS, params={"search": "d"}).json()] == [
        "Dune",
        "Dracula",
    ]
    assert [book["id"] for book in client.get(BOOKS, params={"per_page": 1, "page": 3}).json()] == [
        3
    ]


@pytest.mark.parametrize(
    ("params", "name"),
    [({"page": 0}, "page"), ({"per_page": 101}, "per_page"), ({"context": "x"}, "context")],
)
def test_collection_params_are_checked(
    client_for: ClientFor, params: dict[str, Any], name: str
) -> None:
    app, _ = seeded()
    answer = client_for(app).get(BOOKS, params=params)
    assert answer.status_code == 400
    assert answer.json()["code"] == "rest_invalid_param"
    assert list(answer.json()["data"]["params"]) == [name]


def test_the_edit_context_is_forbidden_to_who_cannot_edit(client_for: ClientFor) -> None:
    app, _ = seeded()
    client = client_for(app)
    anonymous = client.get(BOOKS, params={"context": "edit"})
    assert anonymous.status_code == 401
    assert anonymous.json() == {
        "code": "rest_forbidden_context",
        "message": "Sorry, you are not allowed to edit book items.",
        "data": {"status": 401},
    }
    subscriber = client.get(f"{BOOKS}/1?context=edit", headers=basic_auth(app, "sue"))
    assert subscriber.status_code == 403
    assert subscriber.json()["code"] == "rest_forbidden_context"
    editor = client.get(f"{BOOKS}/1?context=edit", headers=basic_auth(app, "ed"))
    assert editor.json() == {
        "id": 1,
        "title": "Dune",
        "pages": 412,
        "isbn": "978-0441013593",
        "_links": links(1),
    }


def test_get_item_in_each_context(client_for: ClientFor) -> None:
    app, _ = seeded()
    client = client_for(app)
    assert client.get(f"{BOOKS}/2").json() == {
        "id": 2,
        "title": "Emma",
        "pages": 474,
        "_links": links(2),
    }
    assert client.get(f"{BOOKS}/2?context=embed").json() == {
        "id": 2,
        "title": "Emma",
        "_links": links(2),
    }


def test_get_item_unknown_id(client_for: ClientFor) -> None:
    app, _ = seeded()
    answer = client_for(app).get(f"{BOOKS}/99")
    assert answer.status_code == 404
    assert answer.json() == {
        "code": "rest_book_invalid_id",
        "message": "Invalid book ID.",
        "data": {"status": 404},
    }


def test_fields_narrow_an_item_and_a_list(client_for: ClientFor) -> None:
    app, _ = seeded()
    client = client_for(app)
    assert client.get(f"{BOOKS}/1?_fields=title").json() == {"title": "Dune"}
    assert client.get(f"{BOOKS}?_fields[0]=id&_fields[1]=title&per_page=2").json() == [
        {"id": 1, "title": "Dune"},
        {"id": 2, "title": "Emma"},
    ]


def test_create_item(client_for: ClientFor) -> None:
    app, controller = seeded()
    answer = client_for(app).post(
        BOOKS, json={"title": "Ivanhoe", "isbn": "1"}, headers=basic_auth(app, "ed")
    )
    assert answer.status_code == 201
    assert answer.headers["location"] == f"{ROOT}/shop/v1/books/4"
    assert answer.json() == {
        "id": 4,
        "title": "Ivanhoe",
        "pages": 100,
        "isbn": "1",
        "_links": links(4),
    }
    assert controller.books[4] == {"id": 4, "title": "Ivanhoe", "pages": 100, "isbn": "1"}


def test_create_item_refusals(client_for: ClientFor) -> None:
    app, controller = seeded()
    client = client_for(app)
    anonymous = client.post(BOOKS, json={"title": "X"})
    assert (anonymous.status_code, anonymous.json()) == (
        401,
        {
            "code": "rest_cannot_create",
            "message": "Sorry, you are not allowed to create book items as this user.",
            "data": {"status": 401},
        },
    )
    subscriber = client.post(BOOKS, json={"title": "X"}, headers=basic_auth(app, "sue"))
    assert (subscriber.status_code, subscriber.json()["code"]) == (403, "rest_cannot_create")
    missing = client.post(BOOKS, json={"pages": 3}, headers=basic_auth(app, "ed"))
    assert missing.status_code == 400
    assert missing.json() == {
        "code": "rest_missing_callback_param",
        "message": "Missing parameter(s): title",
        "data": {"status": 400, "params": ["title"]},
    }
    readonly = client.post(BOOKS, json={"title": "X", "id": 77}, headers=basic_auth(app, "ed"))
    assert readonly.json()["id"] == 4  # ``id`` is readonly: not an argument, not written
    assert len(controller.books) == 4


@pytest.mark.parametrize("method", ["PUT", "PATCH", "POST"])
def test_update_item(client_for: ClientFor, method: str) -> None:
    app, controller = seeded()
    answer = client_for(app).request(
        method, f"{BOOKS}/2", json={"pages": 500}, headers=basic_auth(app, "ed")
    )
    assert answer.status_code == 200
    assert answer.json() == {
        "id": 2,
        "title": "Emma",
        "pages": 500,
        "isbn": "978-0141439587",
        "_links": links(2),
    }
    assert controller.books[2]["pages"] == 500


def test_update_and_delete_refusals(client_for: ClientFor) -> None:
    app, _ = seeded()
    client = client_for(app)
    sue = basic_auth(app, "sue")
    edit = client.request("PUT", f"{BOOKS}/2", json={"pages": 5}, headers=sue)
    assert (edit.status_code, edit.json()["code"]) == (403, "rest_cannot_edit")
    assert edit.json()["message"] == "Sorry, you are not allowed to edit this book."
    delete = client.request("DELETE", f"{BOOKS}/2")
    assert (delete.status_code, delete.json()["code"]) == (401, "rest_cannot_delete")
    unknown = client.request("DELETE", f"{BOOKS}/9", headers=basic_auth(app, "ed"))
    assert (unknown.status_code, unknown.json()["code"]) == (404, "rest_book_invalid_id")
    invalid = client.request("PUT", f"{BOOKS}/2", json={"pages": 0}, headers=basic_auth(app, "ed"))
    assert (invalid.status_code, invalid.json()["code"]) == (400, "rest_invalid_param")


def test_delete_item(client_for: ClientFor) -> None:
    app, controller = seeded()
    answer = client_for(app).request("DELETE", f"{BOOKS}/3", headers=basic_auth(app, "ed"))
    assert answer.status_code == 200
    assert answer.json() == {
        "deleted": True,
        "previous": {"id": 3, "title": "Dracula", "pages": 418, "isbn": "978-0141439846"},
    }
    assert sorted(controller.books) == [1, 2]


def test_options_shows_the_public_schema_and_args(client_for: ClientFor) -> None:
    app, controller = books_app()
    data = client_for(app).request("OPTIONS", BOOKS).json()
    assert data["schema"] == controller.get_public_item_schema()
    assert data["methods"] == ["GET", "POST"]
    get_args, post_args = (endpoint["args"] for endpoint in data["endpoints"])
    assert list(get_args) == ["context", "page", "per_page", "search"]
    assert get_args["context"] == {
        "required": False,
        "description": (
            "Scope under which the request is made; determines fields present in response."
        ),
        "type": "string",
        "enum": ["view", "embed", "edit"],
        "default": "view",
    }
    assert post_args == {
        "title": {
            "required": True,
            "description": "The title of the book.",
            "type": "string",
            "minLength": 1,
        },
        "pages": {
            "required": False,
            "default": 100,
            "description": "How many pages it has.",
            "type": "integer",
            "minimum": 1,
        },
        "isbn": {"required": False, "description": "Its ISBN (editors only).", "type": "string"},
    }
    item = client_for(app).request("OPTIONS", f"{BOOKS}/1").json()
    assert item["methods"] == ["GET", "POST", "PUT", "PATCH", "DELETE"]
    assert item["endpoints"][2]["args"]["force"] == {
        "required": False,
        "type": "boolean",
        "default": False,
        "description": "Whether to bypass Trash and force deletion.",
    }
    assert item["endpoints"][1]["args"]["title"]["required"] is False


# -- register_rest_field: WordPress's rest-posts-controller.php cases ----------------------

MY_CUSTOM_INT = {
    "type": "integer",
    "description": "Some integer of mine",
    "enum": [1, 2, 3, 4],
    "context": ["view", "edit"],
}


def with_custom_int(app: App, meta: dict[int, Any]) -> list[tuple[Any, ...]]:
    """``my_custom_int`` on books, stored in ``meta``; the update callback's calls."""
    updates: list[tuple[Any, ...]] = []

    def get_callback(data: dict[str, Any], attribute: str, request: Request, kind: str) -> Any:
        return meta.get(data["id"])

    def update_callback(
        value: Any, item: Any, attribute: str, request: Request, kind: str
    ) -> RestError | None:
        updates.append((value, item["id"], attribute, kind))
        if value == 4:
            return RestError("rest_invalid_param", "Testing an error.", {"status": 400})
        meta[item["id"]] = value
        return None

    app.register_rest_field(
        "book",
        "my_custom_int",
        schema=MY_CUSTOM_INT,
        get_callback=get_callback,
        update_callback=update_callback,
    )
    return updates


def test_get_additional_field_registration(client_for: ClientFor) -> None:
    app, controller = seeded()
    meta: dict[int, Any] = {1: 2}
    updates = with_custom_int(app, meta)
    client = client_for(app)
    ed = basic_auth(app, "ed")
    options = client.request("OPTIONS", BOOKS).json()
    assert options["schema"]["properties"]["my_custom_int"] == MY_CUSTOM_INT
    assert options["endpoints"][1]["args"]["my_custom_int"] == {
        "required": False,
        "description": "Some integer of mine",
        "type": "integer",
        "enum": [1, 2, 3, 4],
    }
    assert client.get(f"{BOOKS}/1").json()["my_custom_int"] == 2
    assert [book["my_custom_int"] for book in client.get(BOOKS).json()] == [2, None, None]
    assert client.get(f"{BOOKS}/2").json()["my_custom_int"] is None
    client.post(f"{BOOKS}/2", data={"my_custom_int": "3"}, headers=ed)
    assert meta[2] == 3
    assert updates == [(3, 2, "my_custom_int", "book")]
    created = client.post(BOOKS, data={"my_custom_int": "1", "title": "hello"}, headers=ed)
    assert created.status_code == 201
    assert created.json()["my_custom_int"] == 1
    assert controller.books[4]["title"] == "hello"
    assert "my_custom_int" not in controller.books[4]


def test_additional_field_update_errors(client_for: ClientFor) -> None:
    app, controller = seeded()
    with_custom_int(app, {})
    client = client_for(app)
    ed = basic_auth(app, "ed")
    invalid = client.post(f"{BOOKS}/1", data={"my_custom_int": "returnError"}, headers=ed)
    assert (invalid.status_code, invalid.json()["code"]) == (400, "rest_invalid_param")
    # An error the update callback answers is the answer; nothing of the write is kept.
    refused = client.post(f"{BOOKS}/1", json={"title": "Renamed", "my_custom_int": 4}, headers=ed)
    assert refused.status_code == 400
    assert refused.json() == {
        "code": "rest_invalid_param",
        "message": "Testing an error.",
        "data": {"status": 400},
    }
    assert controller.books[1]["title"] == "Dune"
    created = client.post(BOOKS, json={"title": "New", "my_custom_int": 4}, headers=ed)
    assert created.status_code == 400
    assert sorted(controller.books) == [1, 2, 3]


def test_a_field_follows_fields_and_context(client_for: ClientFor) -> None:
    app, _ = seeded()
    calls: list[int] = []

    def secret(data: dict[str, Any], attribute: str, request: Request, kind: str) -> str:
        calls.append(data["id"])
        return "s"

    app.register_rest_field(
        "book", "secret", get_callback=secret, schema={"type": "string", "context": ["edit"]}
    )
    app.register_rest_field("book", "plain", get_callback=lambda *args: "p")
    client = client_for(app)
    assert client.get(f"{BOOKS}/1?_fields=id,plain").json() == {"id": 1, "plain": "p"}
    assert "secret" not in client.get(f"{BOOKS}/1").json()
    assert calls == []
    edited = client.get(f"{BOOKS}/1?context=edit", headers=basic_auth(app, "ed")).json()
    assert (edited["secret"], edited["plain"], calls) == ("s", "p", [1])


def test_a_field_on_several_types_and_in_the_index_and_openapi(client_for: ClientFor) -> None:
    app, _ = seeded()
    app.register_rest_field(["magazine", "book"], "rating", schema={"type": "number"})
    client = client_for(app)
    index = client.get("/svc-json/shop/v1").json()
    post_args = index["routes"]["/shop/v1/books"]["endpoints"][1]["args"]
    assert post_args["rating"] == {"required": False, "type": "number"}
    document = app.openapi()
    body = document["paths"]["/shop/v1/books"]["post"]["requestBody"]
    assert body["content"]["application/json"]["schema"]["properties"]["rating"] == {
        "type": "number"
    }
    component = document["components"]["schemas"]["book"]
    assert component["properties"]["rating"] == {"type": "number"}
    put = document["paths"]["/shop/v1/books/{id}"]["put"]["requestBody"]
    assert "rating" in put["content"]["application/json"]["schema"]["properties"]


# -- WordPress's filters and actions --------------------------------------------------------


def test_filters_and_actions(client_for: ClientFor) -> None:
    app, _ = seeded()
    seen: list[tuple[Any, ...]] = []

    def prepare(response: Response, item: Any, request: Request) -> Response:
        response.data["shelf"] = f"S{item['id']}"
        return response

    def query(args: dict[str, Any], request: Request) -> dict[str, Any]:
        seen.append(("query", dict(args)))
        return {**args, "per_page": 1}

    def pre_insert(prepared: dict[str, Any], request: Request) -> dict[str, Any]:
        return {**prepared, "title": prepared.get("title", "").upper()}

    app.hooks.add_filter("rest_prepare_book", prepare)
    app.hooks.add_filter("rest_book_query", query)
    app.hooks.add_filter("rest_pre_insert_book", pre_insert)
    for name in ("rest_insert_book", "rest_after_insert_book"):
        app.hooks.add_action(
            name, lambda item, request, creating, name=name: seen.append((name, creating))
        )
    app.hooks.add_action(
        "rest_delete_book",
        lambda item, response, request: seen.append(("delete", item["id"], response.data)),
    )
    client = client_for(app)
    ed = basic_auth(app, "ed")
    listed = client.get(BOOKS, params={"search": "d"}).json()
    assert [(book["id"], book["shelf"]) for book in listed] == [(1, "S1")]
    created = client.post(BOOKS, json={"title": "quiet"}, headers=ed).json()
    assert (created["title"], created["shelf"]) == ("QUIET", "S4")
    client.request("PATCH", f"{BOOKS}/4", json={"title": "louder"}, headers=ed)
    client.request("DELETE", f"{BOOKS}/4", headers=ed)
    assert seen == [
        ("query", {"page": 1, "per_page": 10, "search": "d", "offset": 0}),
        ("rest_insert_book", True),
        ("rest_after_insert_book", True),
        ("rest_insert_book", False),
        ("rest_after_insert_book", False),
        (
            "delete",
            4,
            {
                "deleted": True,
                "previous": {"id": 4, "title": "LOUDER", "pages": 100, "shelf": "S4"},
            },
        ),
    ]


def test_register_rest_field_before_the_controller(client_for: ClientFor) -> None:
    app = App()
    app.register_rest_field(
        "thing", "extra", get_callback=lambda *args: 7, schema={"type": "integer"}
    )
    app.register_controller(ReadOnlyWithPermission())
    client = client_for(app)
    assert client.get("/svc-json/ro/v1/things/3?_fields=id,extra").json() == {"id": 3, "extra": 7}


class ReadOnlyWithPermission(ReadOnly):
    def get_item_permissions_check(self, request: Request) -> bool:
        return public(request)

    def get_item(self, request: Request) -> Response:
        return self.prepare_item_for_response({"id": request["id"]}, request)


class BatchedBooks(BooksController):
    allow_batch: ClassVar[dict[str, bool]] = {"v1": True}


def test_allow_batch_joins_the_routes_to_batches(client_for: ClientFor) -> None:
    app = App(secret_key="k" * 32)
    controller = app.register_controller(BatchedBooks())
    app.users.create("ed", "ed-password", roles=("editor",))
    client = client_for(app)
    answer = client.post(
        "/svc-json/batch/v1",
        json={
            "requests": [
                {"path": "/shop/v1/books", "body": {"title": "One"}},
                {"path": "/shop/v1/books", "body": {"title": "Two"}},
            ]
        },
        headers=basic_auth(app, "ed"),
    )
    assert answer.status_code == 207
    assert [reply["status"] for reply in answer.json()["responses"]] == [201, 201]
    assert [book["title"] for book in controller.books.values()] == ["One", "Two"]
    options = client.request("OPTIONS", BOOKS).json()
    assert options["endpoints"][1]["allow_batch"] == {"v1": True}


def test_a_controller_without_allow_batch_is_not_batched(client_for: ClientFor) -> None:
    app, controller = books_app()
    answer = client_for(app).post(
        "/svc-json/batch/v1",
        json={"requests": [{"path": "/shop/v1/books", "body": {"title": "One"}}]},
        headers=basic_auth(app, "ed"),
    )
    assert answer.json()["responses"][0]["body"]["code"] == "rest_batch_not_allowed"
    assert controller.books == {}


class TwoRegistrations(ReadOnlyWithPermission):
    """Registers its item route in two calls (the second merging into the first)."""

    def register_routes(self, app: Any) -> None:
        route = r"/things/(?P<id>[\d]+)"
        app.register_rest_route(
            "ro/v1",
            route,
            {
                "callback": self.get_item,
                "permission_callback": self.get_item_permissions_check,
                "args": {"context": self.get_context_param(default="view")},
            },
        )
        app.register_rest_route(
            "ro/v1",
            route,
            {
                "methods": "PUT",
                "callback": lambda request: {"put": request["extra"]},
                "permission_callback": public,
                "args": self.get_endpoint_args_for_item_schema("POST, PUT, PATCH"),
            },
        )


def test_a_field_registered_later_keeps_merged_routes_whole(client_for: ClientFor) -> None:
    app = App()
    app.register_controller(TwoRegistrations())
    app.register_rest_field("thing", "extra", schema={"type": "integer"})
    app.register_rest_field("thing", "more", schema={"type": "string"})
    routes = app.rest_get_server().get_routes("ro/v1")
    handlers = routes[r"/ro/v1/things/(?P<id>[\d]+)"]
    assert [handler["methods"] for handler in handlers] == [{"GET": True}, {"PUT": True}]
    assert list(handlers[1]["args"]) == ["id", "extra", "more"]
    client = client_for(app)
    assert client.request("PUT", "/svc-json/ro/v1/things/1", json={"extra": "5"}).json() == {
        "put": 5
    }
    invalid = client.request("PUT", "/svc-json/ro/v1/things/1", json={"extra": "x"})
    assert invalid.json()["code"] == "rest_invalid_param"
