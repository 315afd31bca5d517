"""What ``register_rest_route`` is given, normalised (``svcrest.rest.routing.definitions``):
handlers, their methods and defaults, route options, and the full route."""

from __future__ import annotations

from typing import Any

import pytest

from svcrest.rest.definition_errors import RouteDefinitionError
from svcrest.rest.routing.definitions import (
    ROUTE_ONLY_OPTIONS,
    argument_notices,
    build_full_route,
    handler_definitions,
    lacks_permission_callback,
    normalise_handler,
    normalise_methods,
    public,
    shared_route_args,
    split_route_args,
)


def ok(request: Any) -> dict[str, bool]:
    return {"ok": True}


@pytest.mark.parametrize(
    ("methods", "normalised"),
    [
        ("GET", {"GET": True}),
        (" get , post ", {"GET": True, "POST": True}),
        (["PUT", "patch"], {"PUT": True, "PATCH": True}),
        ({"POST", "DELETE"}, {"DELETE": True, "POST": True}),
        ({"GET": True, "POST": False}, {"GET": True}),
        (["GET, HEAD"], {"GET": True, "HEAD": True}),
        ("", {}),
    ],
)
def test_normalise_methods(methods: Any, normalised: dict[str, bool]) -> None:
    assert normalise_methods(methods) == normalised
    assert list(normalise_methods(methods)) == list(normalised)  # in order


@pytest.mark.parametrize(
    ("methods", "message"),
    [
        (5, "methods must be a string or a set of strings: 5"),
        (["GET", 1], "HTTP method names must be strings: 1"),
    ],
)
def test_bad_methods_raise(methods: Any, message: str) -> None:
    with pytest.raises(RouteDefinitionError, match=message):
        normalise_methods(methods)


@pytest.mark.parametrize(
    ("namespace", "route", "full"),
    [
        ("notes/v1", "/notes", "/notes/v1/notes"),
        ("/notes/v1/", "notes/", "/notes/v1/notes"),
        ("notes/v1", "", "/notes/v1/"),
        ("notes/v1", "/(?P<id>\\d+)", "/notes/v1/(?P<id>\\d+)"),
    ],
)
def test_build_full_route(namespace: str, route: str, full: str) -> None:
    assert build_full_route(namespace, route) == full


def test_a_handler_gets_the_defaults_and_the_shared_args() -> None:
    handler = normalise_handler(
        {"callback": ok, "args": {"page": {"type": "integer"}}, "show_in_index": False},
        {"page": {"default": 1}, "search": {"type": "string"}},
    )
    assert handler["methods"] == {"GET": True}
    assert handler["callback"] is ok
    assert handler["args"] == {"page": {"type": "integer"}, "search": {"type": "string"}}
    assert handler.get("show_in_index") is False
    assert normalise_handler({"args": None}, {})["args"] == {}


@pytest.mark.parametrize(
    ("handler", "message"),
    [
        ("GET", "a handler definition must be a mapping: 'GET'"),
        ({"callback": "ok"}, "callback must be callable, not str"),
        ({"permission_callback": 1}, "permission_callback must be callable, not int"),
        ({"args": ["page"]}, "a handler's 'args' must be a mapping of argument definitions"),
        ({"callback": ok, "db_timeout": 0}, "db_timeout must be seconds above 0, at most 3600: 0"),
        ({"callback": ok, "rate_limit": {}}, "'rate_limit' is a route option"),
    ],
)
def test_bad_handlers_raise(handler: Any, message: str) -> None:
    with pytest.raises(RouteDefinitionError, match=message):
        normalise_handler(handler, {})


def test_every_route_only_option_is_refused_in_a_handler() -> None:
    assert ROUTE_ONLY_OPTIONS == ("schema", "rate_limit", "idempotency")
    for key in ROUTE_ONLY_OPTIONS:
        with pytest.raises(RouteDefinitionError, match=f"'{key}' is a route option"):
            normalise_handler({key: None}, {})


@pytest.mark.parametrize(
    ("args", "handlers", "options"),
    [
        (None, [], {}),
        ({}, [], {}),
        ({"callback": ok}, [{"callback": ok}], {}),
        ([{"callback": ok}, {"methods": "POST"}], [{"callback": ok}, {"methods": "POST"}], {}),
        (
            {0: {"callback": ok}, "schema": public, "args": {"a": {}}},
            [{"callback": ok}],
            {"schema": public, "args": {"a": {}}},
        ),
        ({True: {"callback": ok}}, [], {"True": {"callback": ok}}),  # a bool is no index
    ],
    ids=["none", "empty", "one", "list", "indexed", "bool-key"],
)
def test_handler_definitions(args: Any, handlers: list[Any], options: dict[str, Any]) -> None:
    assert handler_definitions(args) == (handlers, options)


def test_route_args_of_another_shape_raise() -> None:
    with pytest.raises(RouteDefinitionError, match="route args must be a mapping or a list"):
        handler_definitions("GET")
    with pytest.raises(RouteDefinitionError, match="the route option 'args' must be a mapping"):
        split_route_args({0: {"callback": ok}, "args": ["a"]})


def test_split_and_shared_route_args() -> None:
    registration = {0: {"callback": ok, "methods": "POST"}, "args": {"a": {"type": "string"}}}
    handlers, options = split_route_args(registration)
    assert [handler["methods"] for handler in handlers] == [{"POST": True}]
    assert handlers[0]["args"] == {"a": {"type": "string"}}
    assert options == {}
    assert shared_route_args(registration) == {"a": {"type": "string"}}
    assert shared_route_args({"callback": ok}) == {}


def test_permission_callbacks_and_notices() -> None:
    assert lacks_permission_callback({"callback": ok}) is True
    assert lacks_permission_callback({"callback": ok, "permission_callback": public}) is False
    assert lacks_permission_callback([{"permission_callback": public}, {"callback": ok}]) is True
    assert public() is True
    assert argument_notices({0: {"args": {"n": {"type": "int"}}}, "args": {"m": {}}}) == [
        'The "type" schema keyword for n can only be one of the built-in types: array, object,'
        " string, number, integer, boolean, and null (not 'int')."
    ]
