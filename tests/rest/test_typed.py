"""Typed handlers: annotated parameters as argument definitions, values as keyword arguments."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import warnings
from collections.abc import Callable
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import msgspec
import pydantic
import pytest

from svcrest import App, Arg, DoingItWrong, Request, public
from tests.conftest import SiteClient


class Shelf(enum.Enum):
    FICTION = "fiction"
    SCIENCE = "science"


class Author(TypedDict):
    name: str
    born: NotRequired[int]


@dataclasses.dataclass
class Address:
    city: str
    zip_code: str = ""


@dataclasses.dataclass
class Book:
    id: int
    title: str
    shelf: Shelf


class BookSummary(TypedDict):
    id: int
    title: str


def _app() -> App:
    return App("http://example.test")


def _echo_app(callback: Callable[..., Any], methods: str = "GET", **route: Any) -> App:
    app = _app()
    app.route("t/v1", r"/echo/(?P<id>\d+)", methods=methods, permission_callback=public, **route)(
        callback
    )
    return app


def _args(app: App, route: str = r"/t/v1/echo/(?P<id>\d+)") -> dict[str, Any]:
    handler = app.rest_get_server().get_routes()[route][0]
    return handler["args"]


def test_annotations_give_the_same_definitions_as_dict_args() -> None:
    def read(
        request: Request,
        id: int,
        context: Literal["view", "edit"] = "view",
        tags: list[str] | None = None,
        ratio: float = 0.5,
        draft: bool = False,
        shelf: Shelf = Shelf.FICTION,
        limits: dict[str, int] | None = None,
        since: dt.datetime | None = None,
        page: Annotated[int, Arg(minimum=1, description="The page.")] = 1,
    ) -> dict[str, Any]:
        return {}

    assert _args(_echo_app(read)) == {
        "id": {"type": "integer", "required": True},
        "context": {"type": "string", "enum": ["view", "edit"], "default": "view"},
        "tags": {"type": ["array", "null"], "items": {"type": "string"}},
        "ratio": {"type": "number", "default": 0.5},
        "draft": {"type": "boolean", "default": False},
        "shelf": {"type": "string", "enum": ["fiction", "science"], "default": "fiction"},
        "limits": {"type": ["object", "null"], "additionalProperties": {"type": "integer"}},
        "since": {"type": ["string", "null"], "format": "date-time"},
        "page": {"type": "integer", "minimum": 1, "description": "The page.", "default": 1},
    }


def test_typed_dicts_and_dataclasses_are_object_schemas() -> None:
    def create(request: Request, author: Author, address: Address | None = None) -> None:
        return None

    args = _args(_echo_app(create, "POST"))
    assert args["author"] == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "required": True},
            "born": {"type": "integer"},
        },
        "additionalProperties": False,
        "required": True,
    }
    assert args["address"] == {
        "type": ["object", "null"],
        "properties": {
            "city": {"type": "string", "required": True},
            "zip_code": {"type": "string"},
        },
        "additionalProperties": False,
    }


def test_explicit_args_are_merged_over_annotations() -> None:
    def read(request: Request, id: int) -> dict[str, Any]:
        return {"id": id}

    app = _echo_app(read, args={"id": {"minimum": 3, "description": "The id."}})
    assert _args(app)["id"] == {
        "type": "integer",
        "required": True,
        "minimum": 3,
        "description": "The id.",
    }
    response = app.rest_do_request("/t/v1/echo/2")
    assert (response.status, response.data["code"]) == (400, "rest_invalid_param")


def test_values_arrive_converted_as_keyword_arguments() -> None:
    seen: dict[str, Any] = {}

    def read(
        request: Request,
        id: int,
        shelf: Shelf = Shelf.FICTION,
        since: dt.datetime | None = None,
        tags: list[str] | None = None,
        draft: bool = False,
    ) -> dict[str, Any]:
        seen.update(id=id, shelf=shelf, since=since, tags=tags, draft=draft)
        return {"ok": True}

    app = _echo_app(read)
    response = app.rest_do_request(
        Request(
            "GET",
            "/t/v1/echo/7",
            query={
                "shelf": "science",
                "since": "2024-02-03T04:05:06+01:00",
                "tags": "a,b",
                "draft": "true",
            },
        )
    )
    assert (response.status, response.data) == (200, {"ok": True})
    assert seen == {
        "id": 7,
        "shelf": Shelf.SCIENCE,
        "since": dt.datetime(2024, 2, 3, 3, 5, 6, tzinfo=dt.UTC),
        "tags": ["a", "b"],
        "draft": True,
    }
    seen.clear()
    assert app.rest_do_request("/t/v1/echo/8").status == 200
    assert seen == {"id": 8, "shelf": Shelf.FICTION, "since": None, "tags": None, "draft": False}


def test_json_bodies_become_dataclasses_and_typed_dicts() -> None:
    seen: dict[str, Any] = {}

    def create(request: Request, id: int, author: Author, address: Address) -> dict[str, Any]:
        seen.update(author=author, address=address)
        return {"id": id}

    app = _echo_app(create, "POST")
    body: dict[str, Any] = {
        "author": {"name": "Ada", "born": 1815},
        "address": {"city": "London"},
    }
    response = app.rest_do_request(Request("POST", "/t/v1/echo/1", json=body))
    assert (response.status, response.data) == (200, {"id": 1})
    assert seen == {"author": {"name": "Ada", "born": 1815}, "address": Address("London", "")}

    bad: dict[str, Any] = {"author": {"name": "Ada", "extra": 1}, "address": {"city": "London"}}
    response = app.rest_do_request(Request("POST", "/t/v1/echo/1", json=bad))
    assert (response.status, response.data["code"]) == (400, "rest_invalid_param")
    assert list(response.data["data"]["params"]) == ["author"]


def test_invalid_values_answer_wordpress_errors() -> None:
    def read(request: Request, id: int, shelf: Shelf, count: int = 1) -> dict[str, Any]:
        return {}

    app = _echo_app(read)
    missing = app.rest_do_request("/t/v1/echo/1")
    assert (missing.status, missing.data["code"]) == (400, "rest_missing_callback_param")
    assert missing.data["data"]["params"] == ["shelf"]
    wrong = app.rest_do_request(
        Request("GET", "/t/v1/echo/1", query={"shelf": "poetry", "count": "x"})
    )
    assert (wrong.status, wrong.data["code"]) == (400, "rest_invalid_param")
    assert wrong.data["data"]["params"] == {
        "shelf": "shelf is not one of fiction and science.",
        "count": "count is not of type integer.",
    }


def test_async_typed_callbacks(adapter: str, client_for: Callable[..., SiteClient]) -> None:
    async def read(request: Request, id: int, shelf: Shelf = Shelf.SCIENCE) -> dict[str, Any]:
        return {"id": id, "shelf": shelf.value}

    client = client_for(_echo_app(read))
    response = client.get("/svc-json/t/v1/echo/12")
    assert (response.status_code, response.json()) == (200, {"id": 12, "shelf": "science"})


def test_form_bodies_coerce_like_query_strings(
    adapter: str, client_for: Callable[..., SiteClient]
) -> None:
    def update(request: Request, id: int, count: int, draft: bool) -> dict[str, Any]:
        return {"id": id, "count": count, "draft": draft}

    client = client_for(_echo_app(update, "POST"))
    response = client.post("/svc-json/t/v1/echo/3", data={"count": "42", "draft": "false"})
    assert (response.status_code, response.json()) == (
        200,
        {"id": 3, "count": 42, "draft": False},
    )


def test_return_annotations_are_the_route_schema() -> None:
    app = _app()

    @app.route("t/v1", r"/books/(?P<id>\d+)", permission_callback=public)
    def get_book(request: Request, id: int) -> Book:
        return Book(id, "Dune", Shelf.FICTION)

    options = app.rest_do_request(Request("OPTIONS", "/t/v1/books/1"))
    assert options.data["schema"] == {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "title": "Book",
        "type": "object",
        "properties": {
            "id": {"type": "integer", "required": True},
            "title": {"type": "string", "required": True},
            "shelf": {"type": "string", "enum": ["fiction", "science"], "required": True},
        },
    }
    response = app.rest_do_request("/t/v1/books/4")
    assert (response.status, response.data) == (
        200,
        Book(4, "Dune", Shelf.FICTION),
    )


def test_a_returned_dataclass_is_sent_as_json(
    adapter: str, client_for: Callable[..., SiteClient]
) -> None:
    app = _app()

    @app.route("t/v1", "/summary", permission_callback=public)
    def summary(request: Request) -> BookSummary:
        return {"id": 1, "title": "Dune"}

    @app.route("t/v1", r"/books/(?P<id>\d+)", permission_callback=public)
    def get_book(request: Request, id: int) -> Book:
        return Book(id, "Dune", Shelf.SCIENCE)

    client = client_for(app)
    response = client.get("/svc-json/t/v1/books/5")
    assert response.content == b'{"id":5,"title":"Dune","shelf":"science"}'
    schema = client.request("OPTIONS", "/svc-json/t/v1/summary").json()["schema"]
    assert schema["title"] == "BookSummary"


def test_route_args_are_shared_by_every_handler_of_the_route() -> None:
    app = _app()
    seen: list[Any] = []
    ID = {"id": {"type": "integer", "minimum": 1}}

    @app.route("t/v1", r"/items/(?P<id>\d+)", permission_callback=public, route_args=ID)
    def read(request: Request) -> dict[str, Any]:
        seen.append(request["id"])
        return {}

    @app.route("t/v1", r"/items/(?P<id>\d+)", methods="PUT", permission_callback=public)
    def update(request: Request) -> dict[str, Any]:
        seen.append(request["id"])
        return {}

    assert app.rest_do_request("/t/v1/items/3").status == 200
    assert app.rest_do_request(Request("PUT", "/t/v1/items/3")).status == 200
    assert seen == [3, 3]
    zero = app.rest_do_request(Request("PUT", "/t/v1/items/0"))
    assert (zero.status, zero.data["code"]) == (400, "rest_invalid_param")
    handlers = app.rest_get_server().get_routes()[r"/t/v1/items/(?P<id>\d+)"]
    assert [handler["args"] for handler in handlers] == [ID, ID]


def test_route_args_given_later_reach_earlier_handlers() -> None:
    app = _app()
    seen: list[Any] = []

    @app.route("t/v1", r"/items/(?P<id>\d+)", methods="PUT", permission_callback=public)
    def update(request: Request) -> dict[str, Any]:
        seen.append(request["id"])
        return {}

    @app.route(
        "t/v1",
        r"/items/(?P<id>\d+)",
        permission_callback=public,
        route_args={"id": {"type": "integer"}},
    )
    def read(request: Request) -> dict[str, Any]:
        return {}

    assert app.rest_do_request(Request("PUT", "/t/v1/items/9")).status == 200
    assert seen == [9]


def test_index_and_openapi_show_typed_args_as_dict_args() -> None:
    def typed(request: Request, id: int, context: Literal["view", "edit"] = "view") -> None:
        return None

    def plain(request: Request) -> None:
        return None

    typed_app = _echo_app(typed)
    plain_app = _echo_app(
        plain,
        args={
            "id": {"type": "integer", "required": True},
            "context": {"type": "string", "enum": ["view", "edit"], "default": "view"},
        },
    )
    for route in ("/t/v1", "/"):
        assert typed_app.rest_do_request(route).data == plain_app.rest_do_request(route).data
    typed_doc, plain_doc = typed_app.openapi(), plain_app.openapi()
    path = "/t/v1/echo/{id}"
    typed_op, plain_op = typed_doc["paths"][path]["get"], plain_doc["paths"][path]["get"]
    assert typed_op["parameters"] == plain_op["parameters"]


@pytest.mark.parametrize(
    "annotation",
    [bytes, set[int], dict[int, str], int | str, object],
    ids=["bytes", "set", "int-keys", "union", "object"],
)
def test_annotations_without_a_json_form_are_refused_at_registration(annotation: Any) -> None:
    def read(request: Request, value: Any) -> None:
        return None

    read.__annotations__["value"] = annotation
    app = _app()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        app.route("t/v1", "/bad", permission_callback=public)(read)
    assert [warning.category for warning in caught] == [DoingItWrong]
    assert "parameter 'value' of" in str(caught[0].message)
    assert "/t/v1/bad" not in app.rest_get_server().get_routes()


def test_untyped_extra_parameters_keep_the_plain_calling_convention() -> None:
    def read(request: Request, *rest: Any) -> dict[str, Any]:
        return {"rest": list(rest)}

    app = _echo_app(read)
    assert _args(app) == {}
    assert app.rest_do_request("/t/v1/echo/1").data == {"rest": []}


class Reader(pydantic.BaseModel):
    name: str
    age: int = pydantic.Field(ge=0)


class Loan(msgspec.Struct):
    book: int
    days: int = 14


def test_pydantic_models_and_msgspec_structs_are_arguments() -> None:
    seen: dict[str, Any] = {}

    def lend(request: Request, id: int, reader: Reader, loan: Loan) -> dict[str, Any]:
        seen.update(reader=reader, loan=loan)
        return {"id": id}

    app = _echo_app(lend, "POST")
    args = _args(app)
    assert {key: value for key, value in args["reader"].items() if key != "validate_callback"} == {
        "type": "object",
        "required": True,
    }
    body: dict[str, Any] = {"reader": {"name": "Ada", "age": 36}, "loan": {"book": 3}}
    response = app.rest_do_request(Request("POST", "/t/v1/echo/1", json=body))
    assert (response.status, response.data) == (200, {"id": 1})
    assert seen == {"reader": Reader(name="Ada", age=36), "loan": Loan(book=3, days=14)}

    bad: dict[str, Any] = {"reader": {"name": "Ada", "age": -1}, "loan": {"book": "x"}}
    response = app.rest_do_request(Request("POST", "/t/v1/echo/1", json=bad))
    assert (response.status, response.data["code"]) == (400, "rest_invalid_param")
    assert response.data["data"]["params"] == {
        "reader": "reader is invalid: age: Input should be greater than or equal to 0",
        "loan": "loan is invalid: Expected `int`, got `str` - at `$.book`",
    }


def test_model_return_annotations_are_the_route_schema() -> None:
    app = _app()

    @app.route("t/v1", "/reader", permission_callback=public)
    def reader(request: Request) -> Reader:
        return Reader(name="Ada", age=36)

    @app.route("t/v1", "/loan", permission_callback=public)
    def loan(request: Request) -> Loan:
        return Loan(book=1)

    reader_schema = app.rest_do_request(Request("OPTIONS", "/t/v1/reader")).data["schema"]
    assert reader_schema == {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "title": "Reader",
        "type": "object",
        "properties": {
            "name": {"title": "Name", "type": "string"},
            "age": {"minimum": 0, "title": "Age", "type": "integer"},
        },
        "required": ["name", "age"],
    }
    loan_schema = app.rest_do_request(Request("OPTIONS", "/t/v1/loan")).data["schema"]
    assert loan_schema["title"] == "Loan"
    assert loan_schema["$schema"] == "http://json-schema.org/draft-04/schema#"


Short = Annotated[str, Arg(maxLength=3, enum=["a", "abc"])]


def test_an_optional_annotated_parameter() -> None:
    def read(request: Request, id: int, note: Short | None = None) -> dict[str, Any]:
        return {"note": note}

    app = _echo_app(read)
    assert _args(app)["note"] == {"type": ["string", "null"], "maxLength": 3, "enum": ["a", "abc"]}
    assert Arg(maxLength=3) == Arg(maxLength=3) and hash(Arg(enum=[1])) == hash(Arg(enum=[2]))
    answer = app.rest_do_request(Request("GET", "/t/v1/echo/1", query={"note": "abc"}))
    assert answer.data == {"note": "abc"}
    too_long = app.rest_do_request(Request("GET", "/t/v1/echo/1", query={"note": "abcd"}))
    assert too_long.data["code"] == "rest_invalid_param"


def test_returned_models_are_sent_as_json(
    adapter: str, client_for: Callable[..., SiteClient]
) -> None:
    app = _app()

    @app.route("t/v1", "/reader", permission_callback=public)
    def reader(request: Request) -> Reader:
        return Reader(name="Ada", age=36)

    @app.route("t/v1", "/loan", permission_callback=public)
    def loan(request: Request) -> list[Loan]:
        return [Loan(book=1), Loan(book=2, days=7)]

    client = client_for(app)
    assert client.get("/svc-json/t/v1/reader").content == b'{"name":"Ada","age":36}'
    assert client.get("/svc-json/t/v1/loan").content == (
        b'[{"book":1,"days":14},{"book":2,"days":7}]'
    )


@dataclasses.dataclass
class NewBook:
    title: Annotated[str, Arg(minLength=1)]
    shelf: Shelf = Shelf.FICTION
    pages: int | None = None


def test_a_body_parameter_takes_the_whole_body(
    adapter: str, client_for: Callable[..., SiteClient]
) -> None:
    seen: list[NewBook] = []

    def create(request: Request, body: NewBook) -> dict[str, Any]:
        seen.append(body)
        return {"title": body.title}

    app = _app()
    app.route("t/v1", "/books", methods="POST", permission_callback=public)(create)
    assert app.rest_get_server().get_routes()["/t/v1/books"][0]["args"] == {
        "title": {"type": "string", "minLength": 1, "required": True},
        "shelf": {"type": "string", "enum": ["fiction", "science"]},
        "pages": {"type": ["integer", "null"]},
    }
    client = client_for(app)
    sent = client.post("/svc-json/t/v1/books", json={"title": "Dune", "shelf": "science"})
    assert (sent.status_code, sent.json()) == (200, {"title": "Dune"})
    form = client.post("/svc-json/t/v1/books", data={"title": "Emma", "pages": "474"})
    assert form.status_code == 200
    assert seen == [NewBook("Dune", Shelf.SCIENCE, None), NewBook("Emma", Shelf.FICTION, 474)]
    missing = client.post("/svc-json/t/v1/books", json={"shelf": "science"})
    assert (missing.status_code, missing.json()["code"]) == (400, "rest_missing_callback_param")
    assert missing.json()["data"]["params"] == ["title"]


def test_an_argument_declared_twice_is_refused() -> None:
    def create(request: Request, body: NewBook, title: str) -> None:
        return None

    app = _app()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        app.route("t/v1", "/books", methods="POST", permission_callback=public)(create)
    assert [str(warning.message) for warning in caught] == [
        "parameter 'title' of test_an_argument_declared_twice_is_refused.<locals>.create:"
        " the argument 'title' is declared twice"
    ]


class NewTodo(pydantic.BaseModel):
    title: str = pydantic.Field(min_length=1, description="What to do.")
    priority: int = pydantic.Field(default=1, ge=1, le=5)
    due: dt.datetime | None = None
    tags: list[str] = []

    @pydantic.field_validator("title")
    @classmethod
    def _not_shouted(cls, value: str) -> str:
        if value.isupper():
            raise ValueError("no shouting")
        return value


class NewLoan(msgspec.Struct):
    book: Annotated[int, msgspec.Meta(ge=1)]
    days: int = 14
    note: str | None = None


TODO_ARGS = {
    "title": {"required": True, "type": "string", "description": "What to do.", "minLength": 1},
    "priority": {"required": False, "type": "integer", "default": 1, "maximum": 5, "minimum": 1},
    "due": {"required": False, "type": ["string", "null"], "format": "date-time"},
    "tags": {"required": False, "type": "array", "default": [], "items": {"type": "string"}},
}


def _todo_app() -> tuple[App, list[NewTodo]]:
    seen: list[NewTodo] = []

    def create(request: Request, body: NewTodo) -> dict[str, Any]:
        seen.append(body)
        return {"title": body.title, "priority": body.priority}

    app = _app()
    app.route("t/v1", "/todos", methods="POST", permission_callback=public)(create)
    return app, seen


def test_a_pydantic_model_body_takes_the_whole_body(
    adapter: str, client_for: Callable[..., SiteClient]
) -> None:
    app, seen = _todo_app()
    help_data = app.rest_do_request(Request("OPTIONS", "/t/v1/todos")).data
    assert help_data["endpoints"] == [{"methods": ["POST"], "args": TODO_ARGS}]
    body = app.openapi()["paths"]["/t/v1/todos"]["post"]["requestBody"]
    schema = body["content"]["application/json"]["schema"]
    assert schema["required"] == ["title"]
    assert schema["properties"]["priority"] == {
        "type": "integer",
        "default": 1,
        "maximum": 5,
        "minimum": 1,
    }
    client = client_for(app)
    sent = client.post(
        "/svc-json/t/v1/todos", json={"title": "Shop", "due": "2024-05-01T09:30:00Z"}
    )
    assert (sent.status_code, sent.json()) == (200, {"title": "Shop", "priority": 1})
    form = client.post("/svc-json/t/v1/todos", data={"title": "Cook", "priority": "3"})
    assert (form.status_code, form.json()) == (200, {"title": "Cook", "priority": 3})
    assert seen == [
        NewTodo(title="Shop", due=dt.datetime(2024, 5, 1, 9, 30, tzinfo=dt.UTC)),
        NewTodo(title="Cook", priority=3),
    ]


def test_a_pydantic_model_body_answers_400_for_an_invalid_field() -> None:
    app, seen = _todo_app()
    bounds = app.rest_do_request(Request("POST", "/t/v1/todos", json={"title": "x", "priority": 9}))
    assert (bounds.status, bounds.data["code"]) == (400, "rest_invalid_param")
    assert bounds.data["data"]["params"] == {
        "priority": "priority must be between 1 (inclusive) and 5 (inclusive)"
    }
    missing = app.rest_do_request(Request("POST", "/t/v1/todos", json={"priority": 2}))
    assert (missing.status, missing.data["code"]) == (400, "rest_missing_callback_param")
    assert missing.data["data"]["params"] == ["title"]
    # A check the model's JSON Schema cannot say (a validator) is the model's own.
    shouted = app.rest_do_request(Request("POST", "/t/v1/todos", json={"title": "SHOP"}))
    assert (shouted.status, shouted.data) == (
        400,
        {
            "code": "rest_invalid_param",
            "message": "Invalid parameter(s): title",
            "data": {
                "status": 400,
                "params": {"title": "title is invalid: Value error, no shouting"},
                "details": {
                    "title": {
                        "code": "rest_invalid_param",
                        "message": "title is invalid: Value error, no shouting",
                    }
                },
            },
        },
    )
    assert seen == []


def test_a_msgspec_struct_body_takes_the_whole_body(
    adapter: str, client_for: Callable[..., SiteClient]
) -> None:
    seen: list[NewLoan] = []

    def lend(request: Request, body: NewLoan) -> dict[str, Any]:
        seen.append(body)
        return {"book": body.book, "days": body.days}

    app = _app()
    app.route("t/v1", "/loans", methods="POST", permission_callback=public)(lend)
    help_data = app.rest_do_request(Request("OPTIONS", "/t/v1/loans")).data
    assert help_data["endpoints"] == [
        {
            "methods": ["POST"],
            "args": {
                "book": {"required": True, "type": "integer", "minimum": 1},
                "days": {"required": False, "type": "integer", "default": 14},
                "note": {"required": False, "type": ["string", "null"]},
            },
        }
    ]
    body = app.openapi()["paths"]["/t/v1/loans"]["post"]["requestBody"]
    schema = body["content"]["application/json"]["schema"]
    assert schema["required"] == ["book"]
    assert list(schema["properties"]) == ["book", "days", "note"]
    client = client_for(app)
    sent = client.post("/svc-json/t/v1/loans", json={"book": 2, "note": "gift"})
    assert (sent.status_code, sent.json()) == (200, {"book": 2, "days": 14})
    assert seen == [NewLoan(book=2, note="gift")]
    bad = client.post("/svc-json/t/v1/loans", json={"book": 0})
    assert (bad.status_code, bad.json()["code"]) == (400, "rest_invalid_param")
    assert bad.json()["data"]["params"] == {"book": "book must be greater than or equal to 1"}
    assert seen == [NewLoan(book=2, note="gift")]


def _refusal(callback: Callable[..., Any]) -> str:
    """The one notice registering ``callback`` raises (the route is refused)."""
    app = _app()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        app.route("t/v1", "/refused", permission_callback=public)(callback)
    assert "/t/v1/refused" not in app.rest_get_server().get_routes()
    assert [warning.category for warning in caught] == [DoingItWrong]
    return str(caught[0].message)


def _unannotated(request: Request, id):  # type: ignore[no-untyped-def]
    return {}


def _mixed(request: Request, id: int, flag=False):  # type: ignore[no-untyped-def]
    return {}


def _positional_only(request: Request, id: int, /) -> dict[str, Any]:
    return {}


def _star_args(request: Request, id: int, *rest: Any) -> dict[str, Any]:
    return {}


@pytest.mark.parametrize(
    ("callback", "message"),
    [
        (
            _unannotated,
            "parameter 'id' of _unannotated is never passed: it has no type annotation, so the"
            " callback is called with the request alone (annotate every parameter after the"
            " request to make them arguments, or give 'id' a default)",
        ),
        (
            _mixed,
            "parameter 'id' of _mixed is never passed: parameter 'flag' has no type"
            " annotation, so the callback is called with the request alone (annotate every"
            " parameter after the request to make them arguments, or give 'id' a default)",
        ),
        (
            _positional_only,
            "parameter 'id' of _positional_only is never passed: it is positional-only, so"
            " the callback is called with the request alone (annotate every parameter after"
            " the request to make them arguments, or give 'id' a default)",
        ),
        (
            _star_args,
            "parameter 'id' of _star_args is never passed: the callback takes *rest, so the"
            " callback is called with the request alone (annotate every parameter after the"
            " request to make them arguments, or give 'id' a default)",
        ),
    ],
    ids=["unannotated", "mixed", "positional-only", "star-args"],
)
def test_a_parameter_that_would_never_be_passed_is_refused(
    callback: Callable[..., Any], message: str
) -> None:
    assert _refusal(callback) == message


def test_parameters_with_defaults_keep_the_plain_calling_convention() -> None:
    def read(request: Request, extra=None) -> dict[str, Any]:  # type: ignore[no-untyped-def]
        return {"extra": extra}

    app = _echo_app(read)
    assert app.rest_do_request("/t/v1/echo/1").data == {"extra": None}


def test_an_annotation_that_cannot_be_resolved_is_refused_naming_it() -> None:
    @dataclasses.dataclass
    class Local:
        title: str

    def create(request: Request, body: Local) -> dict[str, Any]:
        return {}

    qualname = "test_an_annotation_that_cannot_be_resolved_is_refused_naming_it.<locals>.create"
    assert _refusal(create) == (
        f"the annotation 'Local' of parameter 'body' of {qualname} cannot be resolved: name"
        f" 'Local' is not defined in the module of {qualname} (a class defined inside a"
        " function is not visible to annotations under 'from __future__ import"
        " annotations': define Local at module level)"
    )


def test_arg_refuses_an_unknown_keyword_with_the_keyword_meant() -> None:
    with pytest.raises(TypeError) as raised:
        Arg(minimun=1)  # type: ignore[arg-type]
    assert str(raised.value) == "Arg() got the unknown keyword 'minimun': did you mean 'minimum'?"
    with pytest.raises(TypeError) as raised:
        Arg(colour="red")  # type: ignore[arg-type]
    assert str(raised.value) == "Arg() got the unknown keyword 'colour'"
    with pytest.raises(TypeError) as raised:
        Arg(type="int")  # type: ignore[arg-type]
    assert str(raised.value) == (
        'The "type" schema keyword for Arg() can only be one of the built-in types: array,'
        " object, string, number, integer, boolean, and null (not 'int')."
    )
    assert Arg(enum=("a", "b"), default=None).definition == {"default": None, "enum": ["a", "b"]}


@dataclasses.dataclass
class Receipt:
    queued: bool


def test_handlers_of_one_route_document_their_own_answers() -> None:
    app = _app()

    @app.route("t/v1", "/books", permission_callback=public)
    def list_books(request: Request) -> list[Book]:
        return [Book(1, "Dune", Shelf.SCIENCE)]

    @app.route("t/v1", "/books", methods="POST", permission_callback=public)
    def create_book(request: Request, title: str) -> Book:
        return Book(2, title, Shelf.FICTION)

    @app.route("t/v1", "/books", methods="DELETE", permission_callback=public)
    def purge(request: Request) -> Receipt:
        return Receipt(True)

    operations = app.openapi()["paths"]["/t/v1/books"]
    answers = {
        method: operations[method]["responses"]["200"]["content"]["application/json"]["schema"]
        for method in ("get", "post", "delete")
    }
    assert answers == {
        "get": {"type": "array", "items": {"$ref": "#/components/schemas/Book"}},
        "post": {"$ref": "#/components/schemas/Book"},
        "delete": {"$ref": "#/components/schemas/Receipt"},
    }
    # The route's item schema (OPTIONS) stays the first a return annotation gave.
    assert app.rest_do_request(Request("OPTIONS", "/t/v1/books")).data["schema"]["title"] == "Book"
    assert app.rest_do_request("/t/v1/books").status == 200


@dataclasses.dataclass
class Blob:
    raw: bytes


def test_a_return_annotation_with_no_json_form_leaves_the_answer_undescribed() -> None:
    app = _app()

    @app.route("t/v1", "/blob", permission_callback=public)
    def blob(request: Request) -> Blob:
        return Blob(b"x")

    (handler,) = app.rest_get_server().get_routes()["/t/v1/blob"]
    assert "response_schema" not in handler
    assert "schema" not in app.rest_do_request(Request("OPTIONS", "/t/v1/blob")).data
