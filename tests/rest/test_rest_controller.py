"""``RestController``: WordPress's ``tests/phpunit/tests/rest-api/rest-controller.php``, with
its test controller's schema (``WP_REST_Test_Controller``), ported."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from svcrest import App, Request, Response, RestController, RestError
from svcrest.rest.defaults import rest_filter_response_fields
from svcrest.rest.schema import sanitize_value, validate_value

DRAFT4 = "http://json-schema.org/draft-04/schema#"


def _true(value: Any, request: Request, key: str) -> bool:
    return True


TEST_SCHEMA: dict[str, Any] = {
    "$schema": DRAFT4,
    "title": "type",
    "type": "object",
    "properties": {
        "somestring": {
            "type": "string",
            "description": "A pretty string.",
            "minLength": 3,
            "maxLength": 3,
            "pattern": "[a-zA-Z]+",
            "context": ["view"],
        },
        "someinteger": {
            "type": "integer",
            "multipleOf": 10,
            "minimum": 100,
            "maximum": 200,
            "exclusiveMinimum": True,
            "exclusiveMaximum": True,
            "context": ["view"],
        },
        "someboolean": {"type": "boolean", "context": ["view"]},
        "someurl": {"type": "string", "format": "uri", "context": ["view"]},
        "somedate": {"type": "string", "format": "date-time", "context": ["view"]},
        "someemail": {"type": "string", "format": "email", "context": ["view"]},
        "somehex": {"type": "string", "format": "hex-color", "context": ["view"]},
        "someuuid": {"type": "string", "format": "uuid", "context": ["view"]},
        "sometextfield": {"type": "string", "format": "text-field", "context": ["view"]},
        "sometextareafield": {"type": "string", "format": "textarea-field", "context": ["view"]},
        "someenum": {"type": "string", "enum": ["a", "b", "c"], "context": ["view"]},
        "someargoptions": {
            "type": "integer",
            "required": True,
            "arg_options": {"required": False, "sanitize_callback": _true},
        },
        "somedefault": {
            "type": "string",
            "enum": ["a", "b", "c"],
            "context": ["view"],
            "default": "a",
        },
        "somearray": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "maxItems": 10,
            "uniqueItems": True,
            "context": ["view"],
        },
        "someobject": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "properties": {"object_id": {"type": "integer"}},
            "patternProperties": {"[0-9]": {"type": "string"}},
            "minProperties": 1,
            "maxProperties": 10,
            "anyOf": [
                {"properties": {"object_id": {"type": "integer", "minimum": 100}}},
                {"properties": {"object_id": {"type": "integer", "maximum": 100}}},
            ],
            "oneOf": [
                {"properties": {"object_id": {"type": "integer", "minimum": 100}}},
                {"properties": {"object_id": {"type": "integer", "maximum": 100}}},
            ],
            "ignored_prop": "ignored_prop",
            "context": ["view"],
        },
    },
}
ALL_FIELDS = [*TEST_SCHEMA["properties"], "_links"]


class TestController(RestController):
    """WordPress's ``WP_REST_Test_Controller``: a schema, nothing else."""

    __test__ = False
    schema = TEST_SCHEMA


def bound() -> tuple[App, TestController]:
    app = App()
    controller = TestController()
    controller.bind(app)
    return app, controller


def test_get_endpoint_args_for_item_schema() -> None:
    _, controller = bound()
    args = controller.get_endpoint_args_for_item_schema()
    assert list(args) == [name for name in TEST_SCHEMA["properties"]]


def test_get_endpoint_args_for_item_schema_description() -> None:
    _, controller = bound()
    args = controller.get_endpoint_args_for_item_schema()
    assert args["somestring"]["description"] == "A pretty string."
    assert "description" not in args["someinteger"]


def test_get_endpoint_args_for_item_schema_arg_options() -> None:
    _, controller = bound()
    args = controller.get_endpoint_args_for_item_schema()
    assert args["someargoptions"]["required"] is False
    assert args["someargoptions"]["sanitize_callback"] is _true


def test_get_endpoint_args_for_item_schema_default_value() -> None:
    _, controller = bound()
    assert controller.get_endpoint_args_for_item_schema()["somedefault"]["default"] == "a"


def test_get_endpoint_args_for_item_schema_arg_properties() -> None:
    _, controller = bound()
    args = controller.get_endpoint_args_for_item_schema()
    for keyword in ("minLength", "maxLength", "pattern"):
        assert keyword in args["somestring"]
    for keyword in ("multipleOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        assert keyword in args["someinteger"]
    for keyword in ("items", "minItems", "maxItems", "uniqueItems"):
        assert keyword in args["somearray"]
    for keyword in (
        "properties",
        "patternProperties",
        "additionalProperties",
        "minProperties",
        "maxProperties",
        "anyOf",
        "oneOf",
    ):
        assert keyword in args["someobject"]
    assert "ignored_prop" not in args["someobject"]
    assert "context" not in args["someobject"]


@pytest.mark.parametrize(
    ("param", "expected"),
    [
        ("somestring,someinteger,someinvalidkey", ["somestring", "someinteger"]),
        (",,", ALL_FIELDS),
        (["somestring", "someinteger"], ["somestring", "someinteger"]),
    ],
    ids=["listed", "empty-entries", "a-list"],
)
def test_get_fields_for_response(param: Any, expected: list[str]) -> None:
    _, controller = bound()
    request = Request("GET", "/wp/v2/testroute")
    assert controller.get_fields_for_response(request) == ALL_FIELDS
    request.set_param("_fields", param)
    assert controller.get_fields_for_response(request) == expected


def test_get_fields_for_response_respects_embed() -> None:
    _, controller = bound()
    request = Request("GET", "/wp/v2/testroute")
    assert "_embedded" not in controller.get_fields_for_response(request)
    request.set_param("_embed", 1)
    assert "_embedded" in controller.get_fields_for_response(request)


class Listener:
    """WordPress's ``MockAction``: counts calls and remembers their arguments."""

    def __init__(self, value: Any = "value") -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.value = value

    def __call__(self, data: Any, *args: Any) -> Any:
        self.calls.append((dict(data), *args))
        return self.value


def test_get_fields_for_response_filters_by_context() -> None:
    app, controller = bound()
    request = Request("GET", "/wp/v2/testroute", query={"context": "view"})
    listener = Listener()
    app.register_rest_field(
        controller.get_item_schema()["title"],
        "somefield",
        get_callback=listener,
        schema={"type": "string", "context": ["embed"]},
    )
    controller.prepare_item_for_response({}, request)
    assert listener.calls == []
    request.set_param("context", "embed")
    response = controller.prepare_item_for_response({}, request)
    assert listener.calls == [({}, "somefield", request, "type")]
    assert response.data == {"somefield": "value"}


@pytest.mark.parametrize("schema", [{"type": "string"}, None], ids=["no-context", "no-schema"])
def test_filtering_fields_by_context_keeps_fields_without_a_context(
    schema: dict[str, Any] | None,
) -> None:
    app, controller = bound()
    request = Request("GET", "/wp/v2/testroute", query={"context": "view"})
    listener = Listener()
    app.register_rest_field("type", "somefield", get_callback=listener, schema=schema)
    assert controller.prepare_item_for_response({}, request).data == {"somefield": "value"}
    assert len(listener.calls) == 1


def test_get_public_item_schema_with_properties() -> None:
    _, controller = bound()
    schema = controller.get_public_item_schema()
    assert "properties" in schema
    assert "arg_options" not in schema["properties"]["someargoptions"]
    # The item schema itself keeps them (its args use them).
    assert "arg_options" in controller.get_item_schema()["properties"]["someargoptions"]


def test_get_public_item_schema_no_properties() -> None:
    schema = {
        "$schema": DRAFT4,
        "title": "foo",
        "type": "string",
        "description": "This is my magical endpoint that just returns a string.",
    }

    class Configurable(RestController):
        pass

    Configurable.schema = schema
    controller = Configurable()
    assert controller.get_public_item_schema() == schema


def test_add_additional_fields_to_object_respects_fields_param() -> None:
    app, controller = bound()
    request = Request("GET", "/wp/v2/testroute")
    listener = Listener()
    app.register_rest_field("type", "somefield", get_callback=listener, schema={"type": "string"})
    controller.prepare_item_for_response({}, request)
    assert len(listener.calls) == 1
    request.set_param("_fields", "somestring")
    controller.prepare_item_for_response({}, request)
    assert len(listener.calls) == 1
    request.set_param("_fields", "somefield")
    controller.prepare_item_for_response({}, request)
    assert len(listener.calls) == 2


NESTED = {
    "a": {"i": "value i", "ii": "value ii"},
    "b": {"iii": "value iii", "iv": "value iv"},
}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ("field", {"field": NESTED}),
        ("field.a", {"field": {"a": NESTED["a"]}}),
        ("field.b", {"field": {"b": NESTED["b"]}}),
        (
            "field.a.i,field.b.iv",
            {"field": {"a": {"i": "value i"}, "b": {"iv": "value iv"}}},
        ),
        ("field.a,field.b.iii", {"field": {"a": NESTED["a"], "b": {"iii": "value iii"}}}),
    ],
)
def test_filter_nested_registered_rest_fields(fields: str, expected: dict[str, Any]) -> None:
    app, controller = bound()
    app.register_rest_field(
        "type",
        "field",
        schema={
            "type": "object",
            "description": "A complex object",
            "context": ["view", "edit"],
            "properties": {
                "a": {"i": "string", "ii": "string"},
                "b": {"iii": "string", "iv": "string"},
            },
        },
        get_callback=Listener(NESTED),
    )
    request = Request("GET", "/wp/v2/testroute", query={"_fields": fields})
    response = controller.prepare_item_for_response({}, request)
    filtered = rest_filter_response_fields(response, app.rest_get_server(), request)
    assert filtered.data == expected


def test_get_context_param_lists_every_context_in_wordpress_order() -> None:
    class Contexts(RestController):
        schema: ClassVar[dict[str, Any]] = {
            "title": "thing",
            "type": "object",
            "properties": {
                "a": {"type": "string", "context": ["view", "edit"]},
                "b": {"type": "string", "context": ["embed", "view"]},
                "c": {"type": "string"},
            },
        }

    controller = Contexts()
    assert controller.get_context_param(default="view") == {
        "description": (
            "Scope under which the request is made; determines fields present in response."
        ),
        "type": "string",
        "enum": ["view", "embed", "edit"],
        "default": "view",
    }
    assert "enum" not in RestController().get_context_param()
    assert "default" not in controller.get_context_param()


def test_get_collection_params() -> None:
    _, controller = bound()
    params = controller.get_collection_params()
    assert list(params) == ["context", "page", "per_page", "search"]
    assert params["context"]["default"] == "view"
    assert params["context"]["enum"] == ["view"]
    assert params["page"] == {
        "description": "Current page of the collection.",
        "type": "integer",
        "default": 1,
        "minimum": 1,
    }
    assert params["per_page"] == {
        "description": "Maximum number of items to be returned in result set.",
        "type": "integer",
        "default": 10,
        "minimum": 1,
        "maximum": 100,
    }
    assert params["search"] == {
        "description": "Limit results to those matching a string.",
        "type": "string",
    }


def test_get_object_type_is_the_schema_title() -> None:
    _, controller = bound()
    assert controller.get_object_type() == "type"
    assert RestController().get_object_type() is None


def test_registered_fields_join_the_item_schema() -> None:
    app, controller = bound()
    assert "extra" not in controller.get_item_schema()["properties"]
    app.register_rest_field(["other", "type"], "extra", schema={"type": "integer"})
    app.register_rest_field("other", "elsewhere", schema={"type": "integer"})
    properties = controller.get_item_schema()["properties"]
    assert properties["extra"] == {"type": "integer"}
    assert "elsewhere" not in properties
    assert controller.get_endpoint_args_for_item_schema()["extra"] == {"type": "integer"}
    assert list(controller.get_additional_fields()) == ["extra"]
    assert list(controller.get_additional_fields("other")) == ["extra", "elsewhere"]


METHODS = [
    "get_items",
    "get_item",
    "create_item",
    "update_item",
    "delete_item",
    "get_items_permissions_check",
    "get_item_permissions_check",
    "create_item_permissions_check",
    "update_item_permissions_check",
    "delete_item_permissions_check",
]


@pytest.mark.parametrize("method", METHODS)
def test_a_method_not_overridden_answers_invalid_method(method: str) -> None:
    answer = getattr(RestController(), method)(Request())
    assert isinstance(answer, RestError)
    assert answer.to_dict() == {
        "code": "invalid-method",
        "message": (
            f"Method 'RestController.{method}' not implemented. Must be overridden in subclass."
        ),
        "data": {"status": 405},
    }


def test_an_unbound_controller_says_how_to_bind_it() -> None:
    with pytest.raises(RuntimeError, match=r"app\.register_controller"):
        _ = TestController().app


def test_prepare_response_for_collection() -> None:
    _, controller = bound()
    response = Response({"id": 1})
    response.add_link("self", "http://x/1")
    assert controller.prepare_response_for_collection(response) == {
        "id": 1,
        "_links": {"self": [{"href": "http://x/1"}]},
    }
    assert controller.prepare_response_for_collection({"id": 2}) == {"id": 2}


# -- WordPress's rest_validate_request_arg cases of the same file ---------------------------

ARGS: dict[str, dict[str, Any]] = {
    "someinteger": {"type": "integer"},
    "someboolean": {"type": "boolean"},
    "somestring": {"type": "string"},
    "somehex": {"type": "string", "format": "hex-color"},
    "someenum": {"type": "string", "enum": ["a"]},
    "somedate": {"type": "string", "format": "date-time"},
    "someemail": {"type": "string", "format": "email"},
    "someuuid": {"type": "string", "format": "uuid"},
}


@pytest.mark.parametrize(
    ("name", "value", "code"),
    [
        ("someinteger", "123", None),
        ("someinteger", "abc", "rest_invalid_type"),
        *[("someboolean", value, None) for value in (True, False, "true", "TRUE", "false")],
        *[("someboolean", value, None) for value in ("False", "1", "0", 1, 0)],
        ("someboolean", "123", "rest_invalid_type"),
        ("somestring", "123", None),
        ("somestring", {"foo": "bar"}, "rest_invalid_type"),
        ("someenum", "a", None),
        ("someenum", "d", "rest_not_in_enum"),
        ("someemail", "joe@foo.bar", None),
        ("someemail", "d", "rest_invalid_email"),
        ("somehex", "#000000", None),
        ("somehex", "wibble", "rest_invalid_hex_color"),
        ("somedate", "2010-01-01T12:00:00", None),
        ("somedate", "2010-18-18T12:00:00", "rest_invalid_date"),
        ("someuuid", "123e4567-e89b-12d3-a456-426655440000", None),
        ("someuuid", "123e4567-e89b-12d3-a456-426655440000X", "rest_invalid_uuid"),
    ],
)
def test_validate_schema(name: str, value: Any, code: str | None) -> None:
    error = validate_value(value, ARGS[name], name)
    assert (error.code if error is not None else None) == code


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("false", False),
        ("0", False),
        (0, False),
        ("FALSE", False),
        ("true", True),
        ("1", True),
        (1, True),
        ("TRUE", True),
    ],
)
def test_sanitize_schema_type_boolean(value: Any, expected: bool) -> None:
    assert sanitize_value(value, ARGS["someboolean"], "someboolean") is expected
