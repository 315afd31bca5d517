"""``App.openapi()``: the OpenAPI 3.1 document of the routes shown in the index (DESIGN §11)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from openapi_schema_validator import OAS31Validator
from openapi_schema_validator import validate as validate_instance
from openapi_spec_validator import validate as validate_document

import svcrest.demo
from svcrest import App, DoingItWrong, Request, Response, RestError, public
from svcrest.rest.pipeline import data_with_links
from svcrest.rest.schema.dialect import DATE_TIME_EXAMPLE, DATE_TIME_PATTERN, to_openapi_schema

HOME = "http://example.test:8080/site"
#: The example date of answers: WordPress's shape (no offset), as the demo sends its dates.
DATE_SENT = "2024-05-01T09:30:00"
PUBLIC = {"permission_callback": lambda request: True}


def ok(request: Request) -> dict[str, Any]:
    return {}


@pytest.fixture
def demo() -> Iterator[App]:
    app = App(HOME, name="Notes site", description="Notes for everyone", store=":memory:")
    svcrest.demo.register(app)
    yield app
    app.store.close()


#: The keys of a path item that are operations.
OPERATION_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def iter_operations(document: Mapping[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``(path, method, operation)`` of every operation of ``document``."""
    for path, item in document.get("paths", {}).items():
        for method, operation in item.items():
            if method in OPERATION_METHODS:
                yield path, method, operation


def operations(document: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(path, method, op["operationId"]) for path, method, op in iter_operations(document)]


def resolve(document: dict[str, Any], value: dict[str, Any]) -> dict[str, Any]:
    """``value`` with a ``$ref`` into the document followed."""
    while "$ref" in value:
        node: Any = document
        for part in value["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        value = node
    return value


def conforms(document: dict[str, Any], schema: dict[str, Any], instance: Any) -> None:
    """Raise unless ``instance`` matches ``schema`` (which may refer into ``document``),
    formats checked."""
    root = {"components": document["components"], **schema}
    validate_instance(
        instance, root, cls=OAS31Validator, format_checker=OAS31Validator.FORMAT_CHECKER
    )


# -- the document ------------------------------------------------------------------------------


#: The operations of the application-password routes every site has (WordPress 5.6's).
APP_PASSWORDS = "/svc/v2/users/{user_id}/application-passwords"
APP_PASSWORD_OPERATIONS = [
    ("/svc/v2", "get", "get_svc_v2"),
    (APP_PASSWORDS, "get", "get_svc_v2_users_user_id_application_passwords"),
    (APP_PASSWORDS, "post", "post_svc_v2_users_user_id_application_passwords"),
    (APP_PASSWORDS, "delete", "delete_svc_v2_users_user_id_application_passwords"),
    (APP_PASSWORDS + "/{uuid}", "get", "get_svc_v2_users_user_id_application_passwords_uuid"),
    (
        APP_PASSWORDS + "/{uuid}",
        "delete",
        "delete_svc_v2_users_user_id_application_passwords_uuid",
    ),
]


def test_the_demo_document_is_valid_openapi_3_1(demo: App) -> None:
    document = demo.openapi()
    validate_document(document)
    assert document["openapi"] == "3.1.0"
    assert document["info"] == {
        "title": "Notes site",
        "version": "2.0",
        "description": "Notes for everyone",
    }
    assert document["servers"] == [{"url": "http://example.test:8080/site/svc-json"}]
    assert document["tags"] == [{"name": "svc/v2"}, {"name": "demo/v1"}]
    assert "x-svc-undocumented-routes" not in document


def test_servers_is_the_rest_root_also_with_plain_permalinks() -> None:
    app = App(HOME, pretty_permalinks=False)
    assert app.get_rest_url() == "http://example.test:8080/site/?rest_route=/"
    # The prefix path is served either way; OpenAPI cannot name a query-string root.
    assert app.openapi()["servers"] == [{"url": "http://example.test:8080/site/svc-json"}]


def test_every_shown_route_and_method_is_an_operation_with_a_stable_id(demo: App) -> None:
    assert operations(demo.openapi()) == [
        ("/", "get", "get_root"),
        ("/batch/v1", "post", "post_batch_v1"),
        *APP_PASSWORD_OPERATIONS,
        ("/demo/v1", "get", "get_demo_v1"),
        ("/demo/v1/notes", "get", "get_demo_v1_notes"),
        ("/demo/v1/notes", "post", "post_demo_v1_notes"),
        ("/demo/v1/notes/{id}", "get", "get_demo_v1_notes_id"),
        ("/demo/v1/notes/{id}", "put", "put_demo_v1_notes_id"),
        ("/demo/v1/notes/{id}", "patch", "patch_demo_v1_notes_id"),
        ("/demo/v1/notes/{id}", "delete", "delete_demo_v1_notes_id"),
        ("/demo/v1/notes/changes", "get", "get_demo_v1_notes_changes"),
        ("/demo/v1/users/{id}", "get", "get_demo_v1_users_id"),
    ]
    assert operations(demo.openapi()) == operations(demo.openapi())
    paths = demo.openapi()["paths"]
    assert paths["/demo/v1/notes/{id}"]["x-svc-route"] == r"/demo/v1/notes/(?P<id>\d+)"
    assert paths["/demo/v1/notes"]["get"]["tags"] == ["demo/v1"]
    assert paths["/demo/v1/notes"]["get"]["summary"] == (
        "GET /notes: one page of notes, with the total counts in headers."
    )


def test_operation_ids_stay_unique_when_paths_clash() -> None:
    app = App()
    app.register_rest_route("x/v1", "/a-b", {"callback": ok, **PUBLIC})
    app.register_rest_route("x/v1", "/a_b", {"callback": ok, **PUBLIC})
    app.register_rest_route("x/v1", "/a.b", {"callback": ok, "methods": "GET,POST", **PUBLIC})
    ids = [operation_id for _, _, operation_id in operations(app.openapi())]
    assert ids == [
        "get_root",
        "post_batch_v1",
        *(operation_id for _, _, operation_id in APP_PASSWORD_OPERATIONS),
        "get_x_v1",
        "get_x_v1_a_b",
        "get_x_v1_a_b_2",
        "get_x_v1_a_b_3",
        "post_x_v1_a_b",
    ]


def test_a_route_registered_later_is_in_the_next_document(demo: App) -> None:
    before = demo.openapi()
    assert "/late/v1/things/{slug}" not in before["paths"]
    demo.register_rest_route(
        "late/v1",
        r"/things/(?P<slug>[a-z-]+)",
        {"methods": "GET", "callback": ok, **PUBLIC},
    )
    after = demo.openapi()
    assert after["paths"]["/late/v1/things/{slug}"]["get"]["operationId"] == (
        "get_late_v1_things_slug"
    )
    assert after["tags"] == [{"name": "svc/v2"}, {"name": "demo/v1"}, {"name": "late/v1"}]
    # Merging a handler into an existing route shows too.
    demo.register_rest_route(
        "late/v1", r"/things/(?P<slug>[a-z-]+)", {"methods": "DELETE", "callback": ok, **PUBLIC}
    )
    assert set(demo.openapi()["paths"]["/late/v1/things/{slug}"]) == {
        "x-svc-route",
        "get",
        "delete",
    }


def test_handlers_hidden_from_the_index_are_left_out() -> None:
    app = App()
    app.register_rest_route(
        "x/v1",
        "/mixed",
        [
            {"methods": "GET", "callback": ok, **PUBLIC},
            {"methods": "POST", "callback": ok, "show_in_index": False, **PUBLIC},
        ],
    )
    app.register_rest_route("x/v1", "/hidden", {"callback": ok, "show_in_index": False, **PUBLIC})
    paths = app.openapi()["paths"]
    assert set(paths["/x/v1/mixed"]) == {"x-svc-route", "get"}
    assert "/x/v1/hidden" not in paths


def test_the_first_handler_of_a_method_is_documented_and_odd_methods_are_left_out() -> None:
    app = App()

    def first(request: Request) -> None:
        """The first GET."""

    def second(request: Request) -> None:
        """The second GET (never reached)."""

    app.register_rest_route(
        "x/v1",
        "/dup",
        [
            {"methods": "GET", "callback": first, **PUBLIC},
            {"methods": "GET, PURGE", "callback": second, **PUBLIC},
        ],
    )
    item = app.openapi()["paths"]["/x/v1/dup"]
    assert set(item) == {"x-svc-route", "get"}
    assert item["get"]["summary"] == "The first GET."


def test_routes_without_a_template_are_listed_not_documented() -> None:
    app = App()
    app.register_rest_route("x/v1", r"/files/.+", {"callback": ok, **PUBLIC})
    app.register_rest_route("x/v1", r"/items/(?P<id>\d+)", {"callback": ok, **PUBLIC})
    # Same template as the route before: the first registered keeps it, as in dispatch.
    app.register_rest_route("x/v1", r"/items/(?P<id>[a-z]+)", {"callback": ok, **PUBLIC})
    app.register_rest_route("x/v1", r"/items/(?P<slug>[a-z]+)", {"callback": ok, **PUBLIC})
    document = app.openapi()
    validate_document(document)
    assert document["x-svc-undocumented-routes"] == [
        "/x/v1/files/.+",
        "/x/v1/items/(?P<id>[a-z]+)",
        "/x/v1/items/(?P<slug>[a-z]+)",
    ]
    assert document["paths"]["/x/v1/items/{id}"]["x-svc-route"] == r"/x/v1/items/(?P<id>\d+)"


# -- parameters ----------------------------------------------------------------------------


def test_path_parameters_keep_the_regex_and_are_only_path_parameters(demo: App) -> None:
    item = demo.openapi()["paths"]["/demo/v1/notes/{id}"]
    id_param = {
        "name": "id",
        "in": "path",
        "required": True,
        "description": "Unique identifier for the note.",
        "schema": {"type": "integer", "pattern": r"\d+"},
    }
    for method in ("get", "put", "patch", "delete"):
        # Then the conditional header (the notes have an etag_callback).
        header = "If-None-Match" if method == "get" else "If-Match"
        assert [param["name"] for param in item[method]["parameters"]] == ["id", header]
        assert item[method]["parameters"][0] == id_param, method
    for method in ("put", "patch"):
        for content in item[method]["requestBody"]["content"].values():
            assert "id" not in content["schema"]["properties"]


def test_unnamed_groups_are_path_parameters_the_handler_does_not_get() -> None:
    app = App()
    app.register_rest_route("x/v1", r"/(\d+)/(?P<slug>[a-z]+)", {"callback": ok, **PUBLIC})
    parameters = app.openapi()["paths"]["/x/v1/{group1}/{slug}"]["get"]["parameters"]
    assert parameters.pop()["name"] == "If-None-Match"  # every GET may be conditional
    assert parameters == [
        {
            "name": "group1",
            "in": "path",
            "required": True,
            "description": (
                "Part of the route pattern (an unnamed group): the handler does not receive "
                "it as a parameter."
            ),
            "x-svc-unnamed-group": True,
            "schema": {"type": "string", "pattern": r"\d+"},
        },
        {
            "name": "slug",
            "in": "path",
            "required": True,
            "schema": {"type": "string", "pattern": "[a-z]+"},
        },
    ]


def test_get_args_are_query_parameters(demo: App) -> None:
    parameters = demo.openapi()["paths"]["/demo/v1/notes"]["get"]["parameters"]
    assert [param["name"] for param in parameters] == [
        "page",
        "per_page",
        "start",
        "limit",
        "search",
        "sort",
        "dir",
        "filter",
        "If-None-Match",
    ]
    assert parameters.pop()["in"] == "header"
    assert all(param["in"] == "query" and param["required"] is False for param in parameters)
    assert parameters[1] == {
        "name": "per_page",
        "in": "query",
        "required": False,
        "description": "Maximum number of notes to be returned in result set.",
        "schema": {"type": "integer", "default": 10, "minimum": 1, "maximum": 100},
    }
    # An array is sent comma-separated (svcrest splits it), as WordPress reads it.
    assert (parameters[5]["style"], parameters[5]["explode"]) == ("form", False)
    assert parameters[5]["schema"] == {
        "type": ["string", "array"],
        "items": {
            "type": "object",
            "properties": {"property": {"type": "string"}, "direction": {"type": "string"}},
        },
    }


def test_query_required_objects_and_delete_args() -> None:
    app = App()
    args = {
        "must": {"type": "string", "required": True},
        "defaulted": {"type": "string", "required": True, "default": "x"},
        "where": {"type": "object", "properties": {"a": {"type": "integer"}}},
    }
    app.register_rest_route(
        "x/v1", "/q", {"methods": "GET, DELETE", "callback": ok, "args": args, **PUBLIC}
    )
    item = app.openapi()["paths"]["/x/v1/q"]
    # GET's last parameter is If-None-Match (no If-Match without an etag_callback).
    assert item["get"]["parameters"][:-1] == item["delete"]["parameters"]
    assert "requestBody" not in item["delete"]
    must, defaulted, where, if_none_match = item["get"]["parameters"]
    assert (if_none_match["name"], if_none_match["in"]) == ("If-None-Match", "header")
    assert (must["required"], defaulted["required"]) == (True, False)
    assert defaulted["schema"] == {"type": "string", "default": "x"}
    assert where == {
        "name": "where",
        "in": "query",
        "required": False,
        "style": "deepObject",
        "explode": True,
        "schema": {"type": "object", "properties": {"a": {"type": "integer"}}},
    }


def test_post_args_are_a_json_and_form_body_listing_the_required(demo: App) -> None:
    post = demo.openapi()["paths"]["/demo/v1/notes"]["post"]
    assert "parameters" not in post
    body = post["requestBody"]
    assert body["required"] is True
    assert list(body["content"]) == ["application/json", "application/x-www-form-urlencoded"]
    for content in body["content"].values():
        schema = content["schema"]
        assert schema["type"] == "object"
        assert schema["required"] == ["title"]  # content has a default, date is optional
        assert list(schema["properties"]) == ["title", "content", "date"]
        assert schema["properties"]["title"] == {
            "description": "The title of the note.",
            "type": "string",
            "minLength": 1,
            "maxLength": 255,
        }
        assert schema["properties"]["content"]["default"] == ""
        assert schema["properties"]["date"] == {
            "description": "The date the note was published, in the site's timezone.",
            "type": "string",
            "format": "date-time",
        }
    put = demo.openapi()["paths"]["/demo/v1/notes/{id}"]["put"]["requestBody"]
    assert put["required"] is False
    assert "required" not in put["content"]["application/json"]["schema"]


def test_form_bodies_say_how_arrays_and_objects_are_written() -> None:
    app = App()
    args = {"tags": {"type": "array", "items": {"type": "string"}}, "n": {"type": "integer"}}
    app.register_rest_route(
        "x/v1",
        "/f",
        {"permission_callback": public, "methods": "PATCH", "callback": ok, "args": args},
    )
    form = app.openapi()["paths"]["/x/v1/f"]["patch"]["requestBody"]["content"][
        "application/x-www-form-urlencoded"
    ]
    assert form["encoding"] == {"tags": {"style": "form", "explode": False}}


# -- responses -----------------------------------------------------------------------------


def test_success_schemas_follow_the_route_schema(demo: App) -> None:
    document = demo.openapi()
    paths = document["paths"]
    note = {"$ref": "#/components/schemas/note"}
    listing = paths["/demo/v1/notes"]["get"]["responses"]["200"]
    assert listing["content"]["application/json"]["schema"] == {"type": "array", "items": note}
    assert set(listing["headers"]) == {"X-SVC-Total", "X-SVC-TotalPages", "ETag"}
    created = paths["/demo/v1/notes"]["post"]["responses"]
    assert created["201"]["content"]["application/json"]["schema"] == note
    assert "200" not in created
    for method in ("get", "put", "patch"):
        answer = paths["/demo/v1/notes/{id}"][method]["responses"]["200"]
        assert answer["content"]["application/json"]["schema"] == note
    deleted = paths["/demo/v1/notes/{id}"]["delete"]["responses"]["200"]
    schema = deleted["content"]["application/json"]["schema"]
    assert schema["required"] == ["deleted", "previous"]
    assert schema["properties"]["previous"]["properties"]["id"]["readOnly"] is True
    component = document["components"]["schemas"]["note"]
    assert "$schema" not in component
    assert component["properties"]["id"] == {
        "description": "Unique identifier for the note.",
        "type": "integer",
        "readOnly": True,
    }
    assert component["properties"]["_links"] == {"$ref": "#/components/schemas/Links"}


def test_every_documented_4xx_refers_to_the_shared_error(demo: App) -> None:
    document = demo.openapi()
    error = {"$ref": "#/components/schemas/Error"}
    seen: dict[str, set[str]] = {}
    for _, _, operation in iter_operations(document):
        statuses = set()
        for status, response in operation["responses"].items():
            if status.startswith("4"):
                assert response["content"] == {"application/json": {"schema": error}}
                statuses.add(status)
        seen[operation["operationId"]] = statuses
    assert seen == {
        "get_root": {"400", "4XX"},
        "post_batch_v1": {"400", "4XX"},
        "get_svc_v2": {"400", "4XX"},
        "get_svc_v2_users_user_id_application_passwords": {"401", "403", "404", "4XX"},
        "post_svc_v2_users_user_id_application_passwords": {"400", "401", "403", "404", "4XX"},
        "delete_svc_v2_users_user_id_application_passwords": {"401", "403", "404", "4XX"},
        "get_svc_v2_users_user_id_application_passwords_uuid": {"401", "403", "404", "4XX"},
        "delete_svc_v2_users_user_id_application_passwords_uuid": {"401", "403", "404", "4XX"},
        "get_demo_v1": {"400", "4XX"},
        "get_demo_v1_notes": {"400", "4XX"},
        "post_demo_v1_notes": {"400", "401", "403", "4XX"},
        "get_demo_v1_notes_id": {"404", "4XX"},
        # The notes' etag_callback: a stale If-Match answers 412.
        "put_demo_v1_notes_id": {"400", "401", "403", "404", "412", "4XX"},
        "patch_demo_v1_notes_id": {"400", "401", "403", "404", "412", "4XX"},
        "delete_demo_v1_notes_id": {"401", "403", "404", "412", "4XX"},
        "get_demo_v1_notes_changes": {"400", "4XX"},
        "get_demo_v1_users_id": {"404", "4XX"},
    }
    assert document["components"]["schemas"]["Error"]["required"] == ["code", "message", "data"]


def test_security_schemes_are_cookie_with_nonce_and_basic(demo: App) -> None:
    document = demo.openapi()
    schemes = document["components"]["securitySchemes"]
    assert {
        name: {k: v for k, v in s.items() if k != "description"} for name, s in schemes.items()
    } == {
        "cookieAuth": {"type": "apiKey", "in": "cookie", "name": "svc_logged_in"},
        "nonceHeader": {"type": "apiKey", "in": "header", "name": "X-SVC-Nonce"},
        "nonceQuery": {"type": "apiKey", "in": "query", "name": "_wpnonce"},
        "basicAuth": {"type": "http", "scheme": "basic"},
    }
    assert document["security"] == [
        {},
        {"cookieAuth": [], "nonceHeader": []},
        {"cookieAuth": [], "nonceQuery": []},
        {"basicAuth": []},
    ]


def test_only_operations_that_may_need_a_login_carry_security(demo: App) -> None:
    """Swagger UI shows a padlock on an operation with security requirements: operations
    whose permission callback is ``svcrest.public`` have ``security: []``; the others
    (a permission callback, or none, as the batch route) keep the document's."""
    document = demo.openapi()
    assert {
        op["operationId"]: op.get("security", "default") for _, _, op in iter_operations(document)
    } == {
        "get_root": [],
        "post_batch_v1": "default",
        "get_svc_v2": [],
        "get_svc_v2_users_user_id_application_passwords": "default",
        "post_svc_v2_users_user_id_application_passwords": "default",
        "delete_svc_v2_users_user_id_application_passwords": "default",
        "get_svc_v2_users_user_id_application_passwords_uuid": "default",
        "delete_svc_v2_users_user_id_application_passwords_uuid": "default",
        "get_demo_v1": [],
        "get_demo_v1_notes": [],
        "post_demo_v1_notes": "default",
        "get_demo_v1_notes_id": [],
        "put_demo_v1_notes_id": "default",
        "patch_demo_v1_notes_id": "default",
        "delete_demo_v1_notes_id": "default",
        "get_demo_v1_notes_changes": [],
        "get_demo_v1_users_id": [],
    }


def test_security_follows_what_each_handler_declares() -> None:
    app = App()
    with pytest.warns(DoingItWrong):
        app.register_rest_route("x/v1", "/none", {"callback": ok})
    app.register_rest_route(
        "x/v1",
        "/mixed",
        [
            {"methods": "GET", "callback": ok, "permission_callback": public},
            {"methods": "POST", "callback": ok, "permission_callback": lambda request: True},
        ],
    )
    paths = app.openapi()["paths"]
    assert paths["/x/v1/mixed"]["get"]["security"] == []
    # A callback of its own may look at the user, even one that answers True.
    assert "security" not in paths["/x/v1/mixed"]["post"]
    assert "security" not in paths["/x/v1/none"]["get"]


@pytest.mark.parametrize(
    ("version", "expected"), [(None, "2.0"), ("1.4.0", "1.4.0"), ("2024-05", "2024-05")]
)
def test_info_version_is_the_apps_own_version(version: str | None, expected: str) -> None:
    app = App(HOME, version=version)
    assert app.version == version
    document = app.openapi()
    assert document["info"]["version"] == expected
    validate_document(document)


@pytest.mark.parametrize("version", ["", "  ", 3])
def test_an_empty_or_non_text_version_is_refused(version: Any) -> None:
    with pytest.raises(ValueError, match="version must be a non-empty string or None"):
        App(HOME, version=version)


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def test_dates_are_date_time_in_requests_and_wordpress_dates_in_answers(demo: App) -> None:
    """Swagger UI makes its example from a ``pattern`` before a ``format`` (up to 100 digits
    of fraction from ``DATE_TIME_PATTERN``): what a client sends is ``format: date-time``,
    what the server sends keeps the pattern it matches and a WordPress-shaped example."""
    document = demo.openapi()
    for _, _, operation in iter_operations(document):
        sent_by_clients = [operation.get("parameters", []), operation.get("requestBody", {})]
        assert all(node.get("pattern") != DATE_TIME_PATTERN for node in _walk(sent_by_clients))
    post = document["paths"]["/demo/v1/notes"]["post"]["requestBody"]["content"]
    assert post["application/json"]["schema"]["properties"]["date"]["format"] == "date-time"
    schemas = document["components"]["schemas"]
    assert schemas["note"]["properties"]["date_gmt"] == {
        "description": "The date the note was published, as GMT.",
        "type": "string",
        "pattern": DATE_TIME_PATTERN,
        "examples": [DATE_SENT],
        "readOnly": True,
    }
    assert schemas["application-password"]["properties"]["last_used"] == {
        "type": ["string", "null"],
        "pattern": DATE_TIME_PATTERN,
        "examples": [DATE_SENT],
        "readOnly": True,
    }
    assert all(node.get("format") != "date-time" for node in _walk(schemas))


def test_every_example_matches_its_own_schema(demo: App) -> None:
    document = demo.openapi()
    found = 0
    for node in _walk(document):
        for example in node.get("examples", []) if isinstance(node.get("examples"), list) else []:
            conforms(document, node, example)
            found += 1
    assert found >= 3
    assert DATE_TIME_EXAMPLE == DATE_SENT


def test_real_answers_match_their_response_schemas(demo: App) -> None:
    """What the demo sends (naive RFC 3339 dates, ``_links``) matches what the document
    says, with formats checked; a plain ``format: date-time`` would refuse those dates."""
    document = demo.openapi()
    editor = demo.users.create("ed", "pw-ed-123", roles=("editor",))
    create = Request(
        "POST", "/demo/v1/notes", json={"title": "Hi", "date": "2024-05-01T09:30:00+02:00"}
    )
    create.user = editor
    created = demo.rest_do_request(create)
    assert created.status == 201
    sent = data_with_links(created, create)
    assert sent["date_gmt"] == "2024-05-01T07:30:00"
    paths = document["paths"]
    conforms(
        document,
        paths["/demo/v1/notes"]["post"]["responses"]["201"]["content"]["application/json"][
            "schema"
        ],
        sent,
    )
    with pytest.raises(Exception, match="is not a 'date-time'"):
        validate_instance(
            sent["date"],
            {"type": "string", "format": "date-time"},
            cls=OAS31Validator,
            format_checker=OAS31Validator.FORMAT_CHECKER,
        )
    listing = Request("GET", "/demo/v1/notes")
    listed = demo.rest_do_request(listing)
    schema = paths["/demo/v1/notes"]["get"]["responses"]["200"]["content"]["application/json"][
        "schema"
    ]
    conforms(document, schema, data_with_links(listed, listing))
    for route, operation in (("/", "/"), ("/demo/v1", "/demo/v1")):
        request = Request("GET", route)
        answer = demo.rest_do_request(request)
        schema = paths[operation]["get"]["responses"]["200"]["content"]["application/json"][
            "schema"
        ]
        conforms(document, schema, data_with_links(answer, request))
    delete = Request("DELETE", f"/demo/v1/notes/{sent['id']}")
    delete.user = editor
    deleted = demo.rest_do_request(delete)
    schema = paths["/demo/v1/notes/{id}"]["delete"]["responses"]["200"]["content"][
        "application/json"
    ]["schema"]
    conforms(document, schema, deleted.data)
    missing = demo.rest_do_request(Request("GET", "/demo/v1/notes/999"))
    assert missing.status == 404
    conforms(document, {"$ref": "#/components/schemas/Error"}, missing.data)


def test_a_failing_schema_callback_leaves_the_schema_out(caplog: pytest.LogCaptureFixture) -> None:
    app = App()

    def broken() -> dict[str, Any]:
        raise RuntimeError("boom")

    app.register_rest_route("x/v1", "/b", {0: {"callback": ok, **PUBLIC}, "schema": broken})
    answer = app.openapi()["paths"]["/x/v1/b"]["get"]["responses"]["200"]
    assert answer["content"]["application/json"]["schema"] == {}
    assert "The schema of route /x/v1/b failed" in caplog.text


def test_explicit_response_schema_and_status() -> None:
    app = App()
    app.register_rest_route(
        "x/v1",
        "/jobs",
        {
            "permission_callback": public,
            "methods": "POST",
            "callback": lambda request: Response({"queued": True}, 202),
            "response_schema": {"type": "object", "properties": {"queued": {"type": "boolean"}}},
            "response_status": 202,
        },
    )
    responses = app.openapi()["paths"]["/x/v1/jobs"]["post"]["responses"]
    assert responses["202"] == {
        "description": "OK",
        "content": {
            "application/json": {
                "schema": {"type": "object", "properties": {"queued": {"type": "boolean"}}}
            }
        },
    }


def test_the_document_filter_can_amend_it(demo: App) -> None:
    def amend(document: dict[str, Any], server: object) -> dict[str, Any]:
        document["info"]["x-amended"] = server is demo.rest_get_server()
        return document

    demo.hooks.add_filter("svc_openapi_document", amend)
    assert demo.openapi()["info"]["x-amended"] is True


def test_documents_are_fresh_dicts(demo: App) -> None:
    first = demo.openapi()
    first["components"]["schemas"]["Error"]["required"].append("oops")
    first["paths"]["/demo/v1/notes"]["get"]["responses"]["200"]["headers"].clear()
    second = demo.openapi()
    assert second["components"]["schemas"]["Error"]["required"] == ["code", "message", "data"]
    assert second["paths"]["/demo/v1/notes"]["get"]["responses"]["200"]["headers"]


# -- the schema dialect --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(
            {"type": "integer", "readonly": True, "context": ["view"], "arg_options": {}},
            {"type": "integer", "readOnly": True},
            id="readonly-context",
        ),
        pytest.param(
            {
                "$schema": "http://json-schema.org/draft-04/schema#",
                "type": "object",
                "properties": {"a": {"type": "string", "required": True}, "b": {}},
            },
            {"type": "object", "properties": {"a": {"type": "string"}, "b": {}}, "required": ["a"]},
            id="draft3-required",
        ),
        pytest.param(
            {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 9},
            {"type": "number", "exclusiveMinimum": 0, "maximum": 9},
            id="draft4-exclusive",
        ),
        pytest.param(
            {"type": "array", "items": [{"type": "integer"}, {"type": "string"}]},
            {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]},
            id="tuple-items",
        ),
        pytest.param({"type": "array"}, {"type": "array", "items": {}}, id="array-any-items"),
        pytest.param(
            {"type": ["string", "array"]},
            {"type": ["string", "array"], "items": {}},
            id="string-or-array-any-items",
        ),
        pytest.param(
            {"type": "object", "properties": {"tags": {"type": "array", "minItems": 1}}},
            {
                "type": "object",
                "properties": {"tags": {"type": "array", "minItems": 1, "items": {}}},
            },
            id="nested-array-any-items",
        ),
        pytest.param(
            {"type": "string", "format": "hex-color"},
            {"type": "string", "pattern": "^#([0-9A-Fa-f]{3}){1,2}$"},
            id="hex-color",
        ),
        pytest.param(
            {"type": "string", "format": "ip"},
            {"type": "string", "anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]},
            id="ip",
        ),
        pytest.param(
            {"type": "string", "format": "email", "validate_callback": ok, "required": True},
            {"type": "string", "format": "email"},
            id="callbacks-and-arg-required-dropped",
        ),
        pytest.param(
            {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]},
            {
                "anyOf": [
                    {"type": "string", "pattern": DATE_TIME_PATTERN, "examples": [DATE_SENT]},
                    {"type": "null"},
                ]
            },
            id="nested-date-time",
        ),
        pytest.param(
            {"type": "string", "format": "date-time", "examples": ["2020-01-01T00:00:00"]},
            {"type": "string", "pattern": DATE_TIME_PATTERN, "examples": ["2020-01-01T00:00:00"]},
            id="own-examples-kept",
        ),
    ],
)
def test_schema_dialect(source: dict[str, Any], expected: dict[str, Any]) -> None:
    assert to_openapi_schema(source) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(
            {"type": "string", "format": "date-time"},
            {"type": "string", "format": "date-time"},
            id="date-time",
        ),
        pytest.param(
            {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}}},
            {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}}},
            id="nested",
        ),
        pytest.param(
            {"type": "array", "items": {"type": ["string", "null"], "format": "date-time"}},
            {"type": "array", "items": {"type": ["string", "null"], "format": "date-time"}},
            id="items",
        ),
        pytest.param(
            {"type": "string", "format": "hex-color"},
            {"type": "string", "pattern": "^#([0-9A-Fa-f]{3}){1,2}$"},
            id="other-formats-as-in-answers",
        ),
    ],
)
def test_schema_dialect_of_what_a_client_sends(
    source: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert to_openapi_schema(source, request=True) == expected


@pytest.mark.parametrize(
    ("value", "accepted"),
    [
        ("2024-05-01T09:30:00", True),
        ("2024-05-01 09:30:00.5+05:30", True),
        ("2024-05-01t09:30:00Z", True),
        ("2024-05-01T09:30:00-05", True),
        ("2024-05-01T09:30:00z", False),
        ("2024-05-01T09:30:00+0530", False),
        ("2024-13-01T09:30:00", False),
        ("2024-05-01T24:00:00", False),
    ],
)
def test_the_date_time_pattern_is_what_the_server_accepts(value: str, accepted: bool) -> None:
    from svcrest import rest_parse_date

    validator = OAS31Validator({"type": "string", "pattern": DATE_TIME_PATTERN})
    assert validator.is_valid(value) is accepted
    assert (rest_parse_date(value) is not False) is accepted


def test_errors_from_the_pipeline_match_the_error_schema(demo: App) -> None:
    document = demo.openapi()
    error = {"$ref": "#/components/schemas/Error"}
    answers = [
        demo.rest_do_request(Request("POST", "/demo/v1/notes", json={})),
        demo.rest_do_request(Request("GET", "/demo/v1/notes", query={"page": "x"})),
        demo.rest_do_request(Request("PUT", "/demo/v1/notes/1", json={"title": "x"})),
        demo.rest_do_request(Request("GET", "/nothing")),
    ]
    assert [answer.status for answer in answers] == [400, 400, 404, 404]
    for answer in answers:
        conforms(document, error, answer.data)
    assert isinstance(RestError("x", "y", {"status": 400}).to_dict()["data"], dict)


def test_conditional_headers_and_statuses_are_documented(demo: App) -> None:
    item = demo.openapi()["paths"]["/demo/v1/notes/{id}"]
    etag = {
        "description": (
            "The strong validator of this answer: sent back in If-None-Match it gets a 304 "
            "while the answer is unchanged; in If-Match it makes a write fail with 412 once "
            "changed."
        ),
        "schema": {"type": "string"},
    }
    assert item["get"]["parameters"][1] == {
        "name": "If-None-Match",
        "in": "header",
        "required": False,
        "description": "An ETag read before (a list, weak tags and * too): 304 when it is current.",
        "schema": {"type": "string"},
    }
    assert item["get"]["responses"]["200"]["headers"] == {"ETag": etag}
    assert item["get"]["responses"]["304"] == {
        "description": "Not Modified: If-None-Match names the current ETag (no body).",
        "headers": {"ETag": etag},
    }
    for method in ("put", "patch", "delete"):
        operation = item[method]
        assert operation["parameters"][1] == {
            "name": "If-Match",
            "in": "header",
            "required": False,
            "description": "The ETag read before: 412 when the resource has changed since.",
            "schema": {"type": "string"},
        }
        assert operation["responses"]["412"] == {
            "description": "rest_precondition_failed: If-Match names no current ETag.",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
            "headers": {"ETag": etag},
        }
        assert "428" not in operation["responses"]
    assert item["put"]["responses"]["200"]["headers"] == {"ETag": etag}
    assert "headers" not in item["delete"]["responses"]["200"]
    # A write without an etag_callback has no If-Match; every GET documents its ETag.
    create = demo.openapi()["paths"]["/demo/v1/notes"]["post"]
    assert "412" not in create["responses"]
    assert all(param["in"] != "header" for param in create.get("parameters", []))


def test_require_if_match_documents_a_required_header_and_428() -> None:
    app = App()
    app.register_rest_route(
        "t/v1",
        "/thing",
        {
            "methods": "PUT",
            "callback": ok,
            "permission_callback": public,
            "etag_callback": lambda request: "v1",
            "require_if_match": True,
        },
    )
    operation = app.openapi()["paths"]["/t/v1/thing"]["put"]
    assert [(p["name"], p["required"]) for p in operation["parameters"]] == [("If-Match", True)]
    assert operation["responses"]["428"] == {
        "description": "rest_precondition_required: If-Match is missing.",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


# -- what client generators read ----------------------------------------------------------------


def walk(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every value of a JSON document with its JSON-pointer-like path."""
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, f"{path}/{index}")


def is_array_schema(node: Any) -> bool:
    if not isinstance(node, dict):
        return False
    kind = node.get("type")
    return kind == "array" or (isinstance(kind, list) and "array" in kind)


def test_every_array_schema_of_the_demo_has_items(demo: App) -> None:
    # openapi-python-client skips a list operation and the Error model without them.
    document = demo.openapi()
    arrays = [(path, node) for path, node in walk(document) if is_array_schema(node)]
    assert len(arrays) > 10
    assert [
        path for path, node in arrays if "items" not in node and "prefixItems" not in node
    ] == []


def test_the_error_params_are_names_or_messages(demo: App) -> None:
    params = demo.openapi()["components"]["schemas"]["Error"]["properties"]["data"]
    assert params["properties"]["params"] == {
        "type": ["array", "object"],
        "items": {"type": "string"},
        "additionalProperties": {"type": "string"},
    }


def test_an_array_argument_without_items_gets_any_items() -> None:
    app = App(HOME)
    app.register_rest_route(
        "x/v1", "/things", {"callback": ok, "args": {"ids": {"type": "array"}}, **PUBLIC}
    )
    parameters = app.openapi()["paths"]["/x/v1/things"]["get"]["parameters"]
    (parameter,) = [parameter for parameter in parameters if parameter["name"] == "ids"]
    assert parameter["schema"] == {"type": "array", "items": {}}


def test_no_repository_paths_in_the_text(demo: App) -> None:
    texts = [(path, node) for path, node in walk(demo.openapi()) if isinstance(node, str)]
    found = [
        (path, text) for path, text in texts if re.search(r"\b(docs|src|tests)/|\.(py|md)\b", text)
    ]
    assert found == []


def test_index_and_batch_operations_have_readable_summaries(demo: App) -> None:
    paths = demo.openapi()["paths"]
    assert paths["/"]["get"]["summary"] == (
        "The site's name and description, its namespaces and every route."
    )
    assert paths["/demo/v1"]["get"]["summary"] == "The routes of the demo/v1 namespace."
    assert paths["/svc/v2"]["get"]["summary"] == "The routes of the svc/v2 namespace."
    assert paths["/batch/v1"]["post"]["summary"] == (
        "Run several requests in one: each one's answer, in the order sent (WordPress's batch/v1)."
    )
