"""Route registration (spec 2.1-2.3, 4.8, 4.9) and the server's route table."""

from __future__ import annotations

from typing import Any

import pytest

from svcrest import App, DoingItWrong, Request, RestServer, public


def cb(request: Request) -> str:
    return "ok"


def other(request: Request) -> str:
    return "other"


@pytest.mark.parametrize(
    ("namespace", "route", "message"),
    [
        ("", "/items", "Routes must be namespaced with plugin or theme name and version."),
        ("demo/v1", "", "Route must be specified."),
    ],
    ids=["empty-namespace", "empty-route"],
)
def test_empty_namespace_or_route_fails_with_notice(
    namespace: str, route: str, message: str
) -> None:
    app = App()
    with pytest.warns(DoingItWrong, match=message):
        assert (
            app.register_rest_route(
                namespace, route, {"permission_callback": public, "callback": cb}
            )
            is False
        )
    assert "/demo/v1/items" not in app.rest_get_server().get_routes()


@pytest.mark.parametrize(
    ("namespace", "route", "full"),
    [
        ("demo/v1", "/items", "/demo/v1/items"),
        ("/demo/v1/", "items/", "/demo/v1/items"),
        ("demo/v1", "//items//", "/demo/v1/items"),
        ("demo", "/items/(?P<id>\\d+)", "/demo/items/(?P<id>\\d+)"),
    ],
)
def test_full_route_string(namespace: str, route: str, full: str) -> None:
    app = App()
    assert (
        app.register_rest_route(namespace, route, {"permission_callback": public, "callback": cb})
        is True
    )
    assert full in app.rest_get_server().get_routes()


@pytest.mark.parametrize(
    ("methods", "expected"),
    [
        ("GET", {"GET": True}),
        (" get , post ", {"GET": True, "POST": True}),
        (["GET", "POST"], {"GET": True, "POST": True}),
        ({"GET", "POST"}, {"GET": True, "POST": True}),
        ("put,PATCH", {"PUT": True, "PATCH": True}),
    ],
    ids=["string", "spaced-lowercase", "list", "set", "mixed-case"],
)
def test_methods_normalised(methods: Any, expected: dict[str, bool]) -> None:
    app = App()
    app.register_rest_route(
        "demo/v1", "/items", {"permission_callback": public, "methods": methods, "callback": cb}
    )
    (handler,) = app.rest_get_server().get_routes()["/demo/v1/items"]
    assert handler["methods"] == expected


def test_single_handler_gets_defaults_and_keeps_its_keys() -> None:
    app = App()
    app.register_rest_route(
        "demo/v1", "/items", {"permission_callback": public, "callback": cb, "show_in_index": False}
    )
    (handler,) = app.rest_get_server().get_routes()["/demo/v1/items"]
    assert handler == {
        "permission_callback": public,
        "methods": {"GET": True},
        "callback": cb,
        "args": {},
        "show_in_index": False,
    }


def test_list_of_handlers() -> None:
    app = App()
    app.register_rest_route(
        "demo/v1",
        "/items",
        [
            {"permission_callback": public, "methods": "GET", "callback": cb},
            {"permission_callback": public, "methods": "POST", "callback": other},
        ],
    )
    handlers = app.rest_get_server().get_routes()["/demo/v1/items"]
    assert [h["methods"] for h in handlers] == [{"GET": True}, {"POST": True}]
    assert [h["callback"] for h in handlers] == [cb, other]


def test_integer_keyed_mapping_with_route_options() -> None:
    app = App()
    schema = lambda: {"title": "item"}  # noqa: E731
    app.register_rest_route(
        "demo/v1",
        "/items",
        {
            0: {"permission_callback": public, "methods": "GET", "callback": cb},
            1: {
                "permission_callback": public,
                "methods": "POST",
                "callback": other,
                "args": {"b": {"type": "string"}},
            },
            "schema": schema,
            "args": {"a": {"type": "integer"}},
        },
    )
    server = app.rest_get_server()
    handlers = server.get_routes()["/demo/v1/items"]
    assert len(handlers) == 2
    assert handlers[0]["args"] == {"a": {"type": "integer"}}
    assert handlers[1]["args"] == {"a": {"type": "integer"}, "b": {"type": "string"}}
    options = server.get_route_options("/demo/v1/items")
    assert options is not None
    assert options["schema"] is schema
    assert options["namespace"] == "demo/v1"


def test_merge_appends_handlers_and_newer_options_win() -> None:
    app = App()
    app.register_rest_route(
        "demo/v1",
        "/items",
        {0: {"permission_callback": public, "callback": cb}, "schema": "old", "x": 1},
    )
    app.register_rest_route(
        "demo/v1",
        "/items",
        {0: {"permission_callback": public, "methods": "POST", "callback": other}, "schema": "new"},
    )
    server = app.rest_get_server()
    assert [h["callback"] for h in server.get_routes()["/demo/v1/items"]] == [cb, other]
    options = server.get_route_options("/demo/v1/items")
    assert options is not None
    assert (options["schema"], options["x"]) == ("new", 1)


def test_override_replaces() -> None:
    app = App()
    app.register_rest_route(
        "demo/v1", "/items", {0: {"permission_callback": public, "callback": cb}, "x": 1}
    )
    app.register_rest_route(
        "demo/v1",
        "/items",
        {"permission_callback": public, "methods": "POST", "callback": other},
        True,
    )
    server = app.rest_get_server()
    (handler,) = server.get_routes()["/demo/v1/items"]
    assert handler["callback"] is other
    options = server.get_route_options("/demo/v1/items")
    assert options is not None
    assert "x" not in options


def test_get_routes_in_registration_order_and_namespaces() -> None:
    app = App()
    app.register_rest_route("b/v1", "/one", {"permission_callback": public, "callback": cb})
    app.register_rest_route("a/v1", "/two", {"permission_callback": public, "callback": cb})
    app.register_rest_route("b/v1", "/three", {"permission_callback": public, "callback": cb})
    server = app.rest_get_server()
    own = [r for r in server.get_routes() if r.startswith(("/a/v1/", "/b/v1/"))]
    assert own == ["/b/v1/one", "/a/v1/two", "/b/v1/three"]
    assert server.get_namespaces() == ["svc/v2", "b/v1", "a/v1"]


def test_invalid_regex_is_refused_at_registration() -> None:
    app = App()
    with pytest.warns(DoingItWrong, match="invalid route pattern"):
        assert (
            app.register_rest_route(
                "demo/v1", "/items/(?P<id", {"permission_callback": public, "callback": cb}
            )
            is False
        )
    assert "/demo/v1/items/(?P<id" not in app.rest_get_server().get_routes()


def test_non_callable_callback_is_refused() -> None:
    app = App()
    with pytest.warns(DoingItWrong, match="callback must be callable"):
        assert (
            app.register_rest_route(
                "demo/v1", "/x", {"permission_callback": public, "callback": "nope"}
            )
            is False
        )


def test_route_decorator_registers_and_returns_function() -> None:
    app = App()

    @app.route(
        "demo/v1",
        "/items",
        methods="GET,POST",
        args={"q": {"type": "string"}},
        permission_callback=public,
    )
    def items(request: Request) -> dict[str, str]:
        return {"q": request["q"]}

    (handler,) = app.rest_get_server().get_routes()["/demo/v1/items"]
    assert handler["callback"] is items
    assert handler["methods"] == {"GET": True, "POST": True}
    assert handler["args"] == {"q": {"type": "string"}}
    assert items(Request()) == {"q": None}


def test_server_is_created_once_and_rest_api_init_fires_once_with_it() -> None:
    app = App()
    seen: list[RestServer] = []
    app.hooks.add_action("rest_api_init", seen.append)
    server = app.rest_get_server()
    assert app.rest_get_server() is server
    app.rest_do_request("/")
    assert seen == [server]
    assert app.hooks.did_action("rest_api_init") == 1


def test_server_class_filter() -> None:
    class MyServer(RestServer):
        pass

    app = App()
    app.hooks.add_filter("svc_rest_server_class", lambda cls: MyServer)
    assert type(app.rest_get_server()) is MyServer


def test_routes_registered_in_rest_api_init_are_served() -> None:
    app = App()

    def init(server: RestServer) -> None:
        app.register_rest_route(
            "demo/v1", "/hello", {"permission_callback": public, "callback": lambda r: "hi"}
        )

    app.hooks.add_action("rest_api_init", init)
    response = app.rest_do_request("/demo/v1/hello")
    assert (response.status, response.data) == (200, "hi")


MISSING = (
    "The REST API route definition for {route} is missing the required permission_callback"
    " argument. For REST API routes that are intended to be public, use svcrest.public as the"
    " permission callback."
)


@pytest.mark.parametrize(
    ("args", "method"),
    [
        ({"callback": cb}, "GET"),
        ({"callback": cb, "permission_callback": None}, "GET"),
        (
            [
                {"callback": cb, "permission_callback": public},
                {"methods": "POST", "callback": other},
            ],
            "POST",
        ),
        ({0: {"methods": "POST", "callback": other}, "args": {"a": {"type": "string"}}}, "POST"),
    ],
    ids=["absent", "none", "one-of-a-list", "numbered"],
)
def test_a_handler_without_permission_callback_warns_naming_the_route(
    args: Any, method: str
) -> None:
    app = App()
    with pytest.warns(DoingItWrong) as caught:
        assert app.register_rest_route("demo/v1", r"/items/(?P<id>\d+)", args) is True
    assert [str(warning.message) for warning in caught] == [
        MISSING.format(route=r"demo/v1/items/(?P<id>\d+)")
    ]
    # The warning names the line that registered the route, not svcrest's own code.
    assert caught[0].filename == __file__
    # As in WordPress, the route is registered anyway, and open to everyone.
    response = app.rest_do_request(Request(method, "/demo/v1/items/3"))
    assert response.status == 200


def test_the_route_decorator_without_permission_callback_warns_at_the_decorated_function() -> None:
    app = App()
    with pytest.warns(DoingItWrong) as caught:

        @app.route("demo/v1", "/open")
        def handler(request: Request) -> str:
            return "open"

    assert [str(warning.message) for warning in caught] == [MISSING.format(route="demo/v1/open")]
    assert caught[0].filename == __file__


def test_public_routes_and_routes_with_a_check_register_without_a_warning(
    recwarn: pytest.WarningsRecorder,
) -> None:
    app = App()
    app.register_rest_route("demo/v1", "/a", {"callback": cb, "permission_callback": public})
    app.register_rest_route(
        "demo/v1", "/b", {"callback": cb, "permission_callback": lambda request: False}
    )
    app.route("demo/v1", "/c", permission_callback=public)(cb)
    app.register_rest_route("demo/v1", "/d")
    assert recwarn.list == []
    assert app.rest_do_request("/demo/v1/a").data == "ok"
    assert app.rest_do_request("/demo/v1/b").status == 401


def _notices(register: Any) -> list[str]:
    """The DoingItWrong messages ``register()`` raises (each once, in order)."""
    with pytest.warns(DoingItWrong) as caught:
        register()
    return [str(warning.message) for warning in caught]


@pytest.mark.parametrize(
    ("route", "message"),
    [
        (
            "/items/(?P<id",
            "invalid route pattern '/items/(?P<id' in namespace 'demo/v1': missing >,"
            " unterminated name at position 11 of the route as written (before 'id')",
        ),
        (
            r"items/(?P<id>\d+)/[a-",
            r"invalid route pattern 'items/(?P<id>\\d+)/[a-' in namespace 'demo/v1':"
            " unterminated character set at position 18 of the route as written"
            " (before '[a-')",
        ),
        (
            r"//items/(?P<id>\d+)/x)//",
            r"invalid route pattern '//items/(?P<id>\\d+)/x)//' in namespace 'demo/v1':"
            " unbalanced parenthesis at position 21 of the route as written (before ')//')",
        ),
    ],
    ids=["unterminated-name", "character-set", "parenthesis"],
)
def test_an_invalid_route_pattern_is_reported_where_it_is_in_the_route_as_written(
    route: str, message: str
) -> None:
    app = App()
    handler = {"permission_callback": public, "callback": cb}
    with pytest.warns(DoingItWrong) as caught:
        assert app.register_rest_route("demo/v1", route, handler) is False
    assert [str(warning.message) for warning in caught] == [message]
    assert caught[0].filename == __file__
    # The notice says which route was refused (svcrest serve / routes stop on it).
    assert caught[0].message.refused_route == "/demo/v1/" + route.strip("/")  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("rate_limit", {"limit": 5, "window": 60}),
        ("idempotency", "optional"),
        ("schema", lambda: {"type": "object"}),
    ],
)
def test_route_options_inside_a_handler_are_refused(option: str, value: Any) -> None:
    app = App()
    handler = {"permission_callback": public, "callback": cb, option: value}
    assert _notices(lambda: app.register_rest_route("demo/v1", "/x", handler)) == [
        f"'{option}' is a route option, and inside a handler definition it would be ignored:"
        f" move it out of the handler, next to the handlers ({{0: handler, '{option}': ...}})"
    ]
    assert "/demo/v1/x" not in app.rest_get_server().get_routes()
    # Next to the handlers it is the route's.
    handler.pop(option)
    assert app.register_rest_route("demo/v1", "/x", {0: handler, option: value}) is True


def test_a_handler_option_beside_the_handlers_is_refused() -> None:
    app = App()
    handler = {"permission_callback": public, "callback": cb}
    route = {0: handler, "fields_applied": True}
    assert _notices(lambda: app.register_rest_route("demo/v1", "/x", route)) == [
        "'fields_applied' is an option of a handler, and beside the handlers it would be"
        " ignored: put it inside the handler definition ({0: {..., 'fields_applied': True}})"
    ]
    assert "/demo/v1/x" not in app.rest_get_server().get_routes()
    # Inside the handler it is the handler's.
    assert app.register_rest_route("demo/v1", "/x", {0: {**handler, "fields_applied": True}})


def test_the_route_decorator_gives_route_options_to_the_route() -> None:
    app = App()

    @app.route(
        "demo/v1", "/limited", permission_callback=public, rate_limit={"limit": 1, "window": 60}
    )
    def limited(request: Request) -> str:
        return "ok"

    entry = app.rest_get_server().table.get("/demo/v1/limited")
    assert entry is not None
    assert entry.options["rate_limit"] == {"limit": 1, "window": 60}
    assert "rate_limit" not in entry.handlers[0]
    assert app.rest_do_request("/demo/v1/limited").status == 200
    assert app.rest_do_request("/demo/v1/limited").status == 429


BUILT_IN = "array, object, string, number, integer, boolean, and null"


def test_an_unknown_type_warns_as_wordpress_does() -> None:
    app = App()
    args = {
        "count": {"type": "int"},
        "tags": {"type": "array", "items": {"type": ["string", "text"]}},
        "where": {"type": "object", "properties": {"city": {"type": "str"}}},
    }
    handler = {"permission_callback": public, "callback": cb, "args": args}
    assert _notices(lambda: app.register_rest_route("demo/v1", "/x", handler)) == [
        f'In the REST API route demo/v1/x: The "type" schema keyword for count can only be'
        f" one of the built-in types: {BUILT_IN} (not 'int').",
        f'In the REST API route demo/v1/x: The "type" schema keyword for tags[] can only be'
        f" one of the built-in types: {BUILT_IN} (not 'text').",
        f'In the REST API route demo/v1/x: The "type" schema keyword for where[city] can only'
        f" be one of the built-in types: {BUILT_IN} (not 'str').",
    ]
    # As in WordPress, the route is registered: the notice is the developer's.
    assert app.rest_do_request(Request("GET", "/demo/v1/x", query={"count": "3"})).status == 200


def test_a_misspelt_argument_keyword_warns_with_the_keyword_meant() -> None:
    app = App()
    route_args = {"id": {"type": "integer", "minimun": 1}}
    args = {
        "title": {"type": "string", "maxlength": 10},
        "tags": {"type": "array", "items": {"type": "string", "enums": ["a"]}},
        # A key close to no keyword is the definition's own data: left alone.
        "note": {"type": "string", "label": "A note", "x-order": 1},
    }
    definition = {
        0: {"permission_callback": public, "callback": cb, "args": args},
        "args": route_args,
    }
    assert _notices(lambda: app.register_rest_route("demo/v1", "/x", definition)) == [
        "In the REST API route demo/v1/x: The argument definition of id has the unknown"
        " keyword 'minimun', which is ignored: did you mean 'minimum'?",
        "In the REST API route demo/v1/x: The argument definition of title has the unknown"
        " keyword 'maxlength', which is ignored: did you mean 'maxLength'?",
        "In the REST API route demo/v1/x: The argument definition of tags[] has the unknown"
        " keyword 'enums', which is ignored: did you mean 'enum'?",
    ]
    assert "/demo/v1/x" in app.rest_get_server().get_routes()


def test_wordpress_argument_keywords_raise_no_notice(recwarn: pytest.WarningsRecorder) -> None:
    app = App()
    args = {
        "id": {
            "description": "The id.",
            "type": "integer",
            "required": True,
            "minimum": 1,
            "exclusiveMaximum": 100,
            "validate_callback": lambda value: True,
            "sanitize_callback": lambda value: value,
            "arg_options": {"sanitize_callback": None},
            "context": ["view", "edit"],
            "readonly": True,
        },
        "tags": {
            "type": ["array", "null"],
            "items": {"type": "string", "format": "uuid", "pattern": "^[a-f]", "minLength": 1},
            "uniqueItems": True,
            "minItems": 0,
            "maxItems": 3,
            "default": [],
        },
        "where": {
            "type": "object",
            "properties": {"city": {"type": "string", "enum": ["a"]}},
            "additionalProperties": False,
            "patternProperties": {"^x": {"type": "number", "multipleOf": 2}},
            "minProperties": 0,
            "maxProperties": 2,
            "anyOf": [{"required": ["city"]}, {"type": "object"}],
        },
    }
    handler = {"permission_callback": public, "callback": cb, "args": args}
    assert app.register_rest_route("demo/v1", "/x", handler) is True
    assert [str(warning.message) for warning in recwarn] == []
