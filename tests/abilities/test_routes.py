"""The ``svc-abilities/v1`` routes, as WordPress 6.9's ``wp-abilities/v1`` (its
wpRestAbilitiesV1ListController, wpRestAbilitiesV1RunController and
wpRestAbilitiesV1CategoriesController tests, ported), over both adapters."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from svcrest import App, Request, Response, RestError, current_user, public
from svcrest.abilities import routes
from svcrest.auth.passwords import ScryptParams
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
FAST = ScryptParams(n=16, r=1, p=1)
BASE = "/svc-json/svc-abilities/v1"


def _can_read(input: Any = None) -> bool:
    return current_user().can("read")


def _register(app: App) -> None:
    app.register_ability_category("math", label="Math", description="Mathematical operations.")
    app.register_ability_category("system", label="System", description="System information.")
    app.register_ability_category("general", label="General", description="General purpose.")

    def calculate(input: dict[str, Any]) -> Any:
        a, b = input["a"], input["b"]
        return {"add": a + b, "subtract": a - b, "multiply": a * b}[input["operation"]]

    app.register_ability(
        "test/calculator",
        label="Calculator",
        description="Performs basic calculations",
        category="math",
        input_schema={
            "type": "object",
            "properties": {
                "operation": {"type": "string", "enum": ["add", "subtract", "multiply"]},
                "a": {"type": "number"},
                "b": {"type": "number"},
            },
        },
        output_schema={"type": "number"},
        execute_callback=calculate,
        permission_callback=_can_read,
    )
    app.register_ability(
        "test/system-info",
        label="System Info",
        description="Returns system information",
        category="system",
        input_schema={
            "type": "object",
            "properties": {
                "detail_level": {"type": "string", "enum": ["basic", "full"], "default": "basic"}
            },
        },
        output_schema={"type": "object", "properties": {"version": {"type": "string"}}},
        execute_callback=lambda input: {"version": "1.0", "detail": input.get("detail_level")},
        permission_callback=_can_read,
        annotations={"readonly": True},
    )
    app.register_ability(
        "test/not-show-in-rest",
        label="Hidden from REST",
        description="It does not show in REST.",
        category="general",
        execute_callback=lambda: 0,
        permission_callback=public,
        show_in_rest=False,
    )
    app.register_ability(
        "test/restricted",
        label="Restricted",
        description="Needs the right secret.",
        category="general",
        input_schema={
            "type": "object",
            "properties": {"secret": {"type": "string"}, "data": {"type": "string"}},
            "required": ["secret", "data"],
        },
        execute_callback=lambda input: f"Success: {input['data']}",
        permission_callback=lambda input: input.get("secret") == "valid_secret",
    )
    app.register_ability(
        "test/delete-thing",
        label="Delete",
        description="Deletes a thing.",
        category="general",
        input_schema={"type": "object", "properties": {"id": {"type": "integer"}}},
        execute_callback=lambda input: {"deleted": input["id"]},
        permission_callback=lambda input: current_user().can("edit_posts"),
        annotations={"destructive": True, "idempotent": True},
    )
    app.register_ability(
        "test/query-params",
        label="Query",
        description="Echoes its input.",
        category="general",
        input_schema={"type": "object"},
        execute_callback=lambda input: input,
        permission_callback=public,
        annotations={"readonly": True},
    )
    app.register_ability(
        "test/null-return",
        label="Null",
        description="Returns null.",
        category="general",
        execute_callback=lambda: None,
        permission_callback=public,
    )
    app.register_ability(
        "test/error-return",
        label="Error",
        description="Returns an error.",
        category="general",
        execute_callback=lambda: RestError("test_error", "This is a test error"),
        permission_callback=public,
    )
    app.register_ability(
        "test/strict-output",
        label="Strict Output",
        description="Returns the wrong shape.",
        category="general",
        output_schema={
            "type": "object",
            "properties": {"status": {"type": "string", "enum": ["success", "failure"]}},
            "required": ["status"],
        },
        execute_callback=lambda: {"wrong_field": "value"},
        permission_callback=public,
    )
    app.register_ability(
        "test/wp-error-permission",
        label="Refusing",
        description="Its permission callback answers an error.",
        category="general",
        execute_callback=lambda: 1,
        permission_callback=lambda: RestError("custom_denied", "Custom denial."),
    )

    async def slow_echo(input: str) -> str:
        return f"async {input}"

    app.register_ability(
        "test/async",
        label="Async",
        description="An async ability.",
        category="general",
        input_schema={"type": "string"},
        execute_callback=slow_echo,
        permission_callback=public,
    )
    for i in range(1, 61):
        app.register_ability(
            f"test/ability-{i}",
            label=f"Test Ability {i}",
            description=f"Test ability number {i}",
            category="general",
            execute_callback=lambda i=i: f"Result from ability {i}",
            permission_callback=public,
        )


SHOWN = 70  # every test ability but test/not-show-in-rest


@pytest.fixture
def app() -> App:
    site = App()
    site.users.password_params = FAST
    _register(site)
    return site


def _basic(app: App, login: str, roles: tuple[str, ...]) -> dict[str, str]:
    user = app.users.create(login, f"{login}-password-1", roles=roles)
    password, _ = app.users.create_application_password(user.id, "tests")
    token = base64.b64encode(f"{login}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


@pytest.fixture
def subscriber(app: App) -> dict[str, str]:
    return _basic(app, "sub", ("subscriber",))


@pytest.fixture
def editor(app: App) -> dict[str, str]:
    return _basic(app, "ed", ("editor",))


def _error(response: httpx.Response) -> tuple[int, str, str]:
    body = response.json()
    assert body["data"]["status"] == response.status_code
    return response.status_code, body["code"], body["message"]


# -- list --------------------------------------------------------------------------------------


def test_get_items(app: App, client_for: ClientFor, subscriber: dict[str, str]) -> None:
    response = client_for(app).get(f"{BASE}/abilities", headers=subscriber)
    assert response.status_code == 200
    data = response.json()
    assert len(data) == 50
    names = [item["name"] for item in data]
    assert "test/calculator" in names
    assert "test/system-info" in names
    assert "test/not-show-in-rest" not in names
    assert response.headers["X-SVC-Total"] == str(SHOWN)
    assert response.headers["X-SVC-TotalPages"] == "2"


def test_get_item(app: App, client_for: ClientFor, subscriber: dict[str, str]) -> None:
    response = client_for(app).get(f"{BASE}/abilities/test/calculator", headers=subscriber)
    assert response.status_code == 200
    data = response.json()
    links = data.pop("_links")
    assert data == {
        "name": "test/calculator",
        "label": "Calculator",
        "description": "Performs basic calculations",
        "category": "math",
        "input_schema": app.get_ability("test/calculator").input_schema,  # type: ignore[union-attr]
        "output_schema": {"type": "number"},
        "meta": {
            "annotations": {"readonly": None, "destructive": None, "idempotent": None},
            "show_in_rest": True,
        },
    }
    assert links == {
        "self": [{"href": f"{app.home}{BASE}/abilities/test/calculator"}],
        "collection": [{"href": f"{app.home}{BASE}/abilities"}],
        "wp:action-run": [{"href": f"{app.home}{BASE}/abilities/test/calculator/run"}],
    }


def test_get_item_with_selected_fields_and_embed_context(
    app: App, client_for: ClientFor, subscriber: dict[str, str]
) -> None:
    client = client_for(app)
    url = f"{BASE}/abilities/test/calculator"
    fields = client.get(url, params={"_fields": "name,label"}, headers=subscriber)
    assert fields.json() == {"name": "test/calculator", "label": "Calculator"}
    embed = client.get(url, params={"context": "embed"}, headers=subscriber).json()
    embed.pop("_links")
    assert embed == {"name": "test/calculator", "label": "Calculator", "category": "math"}


@pytest.mark.parametrize("name", ["non/existent", "test/not-show-in-rest", "test/" + "a" * 1000])
def test_get_item_not_found(
    app: App, client_for: ClientFor, subscriber: dict[str, str], name: str
) -> None:
    response = client_for(app).get(f"{BASE}/abilities/{name}", headers=subscriber)
    assert _error(response) == (404, "rest_ability_not_found", "Ability not found.")


@pytest.mark.parametrize(
    "name", ["test@ability", "test%20ability", "test.ability", "test|ability", "test%5Cability"]
)
def test_a_name_with_invalid_characters_matches_no_route(
    app: App, client_for: ClientFor, subscriber: dict[str, str], name: str
) -> None:
    response = client_for(app).get(f"{BASE}/abilities/{name}", headers=subscriber)
    assert response.status_code == 404


@pytest.mark.parametrize(
    "path", ["/abilities", "/abilities/test/calculator", "/categories", "/categories/math"]
)
def test_reading_needs_the_read_capability(app: App, client_for: ClientFor, path: str) -> None:
    client = client_for(app)
    assert _error(client.get(BASE + path)) == (
        401,
        "rest_forbidden",
        "Sorry, you are not allowed to do that.",
    )
    no_role = _basic(app, "nobody", ())
    assert _error(client.get(BASE + path, headers=no_role))[:2] == (403, "rest_forbidden")


def test_pagination(app: App, client_for: ClientFor, subscriber: dict[str, str]) -> None:
    client = client_for(app)
    url = f"{BASE}/abilities"
    first = client.get(url, params={"per_page": 10}, headers=subscriber)
    assert first.headers["X-SVC-Total"] == str(SHOWN)
    assert first.headers["X-SVC-TotalPages"] == "7"
    assert 'rel="next"' in first.headers["Link"] and 'rel="prev"' not in first.headers["Link"]
    middle = client.get(url, params={"per_page": 10, "page": 3}, headers=subscriber)
    assert 'rel="next"' in middle.headers["Link"] and 'rel="prev"' in middle.headers["Link"]
    last = client.get(url, params={"per_page": 10, "page": 7}, headers=subscriber)
    assert len(last.json()) == 10
    assert 'rel="next"' not in last.headers["Link"] and 'rel="prev"' in last.headers["Link"]
    page1 = client.get(url, params={"per_page": 5}, headers=subscriber).json()
    page2 = client.get(url, params={"per_page": 5, "page": 2}, headers=subscriber).json()
    assert len(page1) == len(page2) == 5
    assert {item["name"] for item in page1}.isdisjoint(item["name"] for item in page2)
    beyond = client.get(url, params={"per_page": 10, "page": 8}, headers=subscriber)
    assert _error(beyond)[:2] == (400, "rest_invalid_page_number")


@pytest.mark.parametrize(
    "params",
    [{"page": 0}, {"page": -1}, {"page": "abc"}, {"per_page": 0}, {"per_page": 1000}],
)
def test_invalid_pagination_parameters(
    app: App, client_for: ClientFor, subscriber: dict[str, str], params: dict[str, Any]
) -> None:
    response = client_for(app).get(f"{BASE}/abilities", params=params, headers=subscriber)
    assert _error(response)[:2] == (400, "rest_invalid_param")


def test_head_request(app: App, client_for: ClientFor, subscriber: dict[str, str]) -> None:
    response = client_for(app).request("HEAD", f"{BASE}/abilities", headers=subscriber)
    assert response.status_code == 200
    assert response.content == b""
    assert response.headers["X-SVC-Total"] == str(SHOWN)


def test_filter_by_category(app: App, client_for: ClientFor, subscriber: dict[str, str]) -> None:
    client = client_for(app)
    math = client.get(f"{BASE}/abilities", params={"category": "math"}, headers=subscriber)
    assert [item["name"] for item in math.json()] == ["test/calculator"]
    none = client.get(f"{BASE}/abilities", params={"category": "nonexistent"}, headers=subscriber)
    assert none.status_code == 200
    assert none.json() == []
    assert none.headers["X-SVC-Total"] == "0"


def test_list_schema(app: App) -> None:
    schema = app.rest_do_request(Request("OPTIONS", "/svc-abilities/v1/abilities")).data["schema"]
    assert schema["title"] == "ability"
    assert schema["type"] == "object"
    assert sorted(schema["properties"]) == sorted(
        ["name", "label", "description", "category", "input_schema", "output_schema", "meta"]
    )


# -- run ---------------------------------------------------------------------------------------


def _run(name: str) -> str:
    return f"{BASE}/abilities/{name}/run"


def test_execute_regular_ability_post(
    app: App, client_for: ClientFor, subscriber: dict[str, str]
) -> None:
    response = client_for(app).post(
        _run("test/calculator"),
        json={"input": {"operation": "add", "a": 5, "b": 3}},
        headers=subscriber,
    )
    assert response.status_code == 200
    assert response.json() == 8


def test_execute_readonly_ability_get_with_bracket_input(
    app: App, client_for: ClientFor, subscriber: dict[str, str]
) -> None:
    client = client_for(app)
    response = client.get(
        _run("test/system-info") + "?input[detail_level]=full", headers=subscriber
    )
    assert response.status_code == 200
    assert response.json() == {"version": "1.0", "detail": "full"}
    # No input is null, which an object schema refuses (as in WordPress).
    missing = client.get(_run("test/system-info"), headers=subscriber)
    assert _error(missing)[:2] == (400, "ability_invalid_input")
    assert client.get(_run("test/system-info") + "?input[other]=1", headers=subscriber).json() == {
        "version": "1.0",
        "detail": None,
    }


def test_get_input_is_coerced_to_the_schema(app: App, client_for: ClientFor) -> None:
    app.register_ability(
        "test/double",
        label="Double",
        description="Doubles a number.",
        category="math",
        input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
        output_schema={"type": "integer"},
        execute_callback=lambda input: input["n"] * 2,
        permission_callback=public,
        annotations={"readonly": True},
    )
    response = client_for(app).get(_run("test/double") + "?input[n]=21")
    assert response.status_code == 200
    assert response.json() == 42


def test_get_request_with_nested_input(app: App, client_for: ClientFor) -> None:
    query = "input[level1][level2][value]=nested&input[array][]=1&input[array][]=2"
    response = client_for(app).get(_run("test/query-params") + "?" + query)
    assert response.status_code == 200
    assert response.json() == {"level1": {"level2": {"value": "nested"}}, "array": ["1", "2"]}


def test_get_request_with_non_object_input(app: App, client_for: ClientFor) -> None:
    response = client_for(app).get(_run("test/query-params"), params={"input": "not-an-array"})
    status, code, message = _error(response)
    assert (status, code) == (400, "ability_invalid_input")
    assert message == (
        'Ability "test/query-params" has invalid input. Reason: input is not of type object.'
    )


def test_post_request_with_non_object_input(
    app: App, client_for: ClientFor, subscriber: dict[str, str]
) -> None:
    response = client_for(app).post(
        _run("test/calculator"), json={"input": "string-value"}, headers=subscriber
    )
    assert _error(response)[:2] == (400, "ability_invalid_input")


@pytest.mark.parametrize(
    ("name", "method", "message"),
    [
        ("test/system-info", "POST", "Read-only abilities require GET method."),
        ("test/calculator", "GET", "Abilities that perform updates require POST method."),
        ("test/calculator", "DELETE", "Abilities that perform updates require POST method."),
        (
            "test/delete-thing",
            "POST",
            "Abilities that perform destructive actions require DELETE method.",
        ),
        (
            "test/delete-thing",
            "GET",
            "Abilities that perform destructive actions require DELETE method.",
        ),
    ],
)
def test_the_wrong_method_is_refused_with_405(
    app: App,
    client_for: ClientFor,
    subscriber: dict[str, str],
    name: str,
    method: str,
    message: str,
) -> None:
    response = client_for(app).request(method, _run(name), headers=subscriber)
    assert _error(response) == (405, "rest_ability_invalid_method", message)


def test_destructive_idempotent_ability_runs_with_delete(
    app: App, client_for: ClientFor, subscriber: dict[str, str], editor: dict[str, str]
) -> None:
    client = client_for(app)
    url = _run("test/delete-thing") + "?input[id]=7"
    assert client.request("DELETE", url, headers=editor).json() == {"deleted": 7}
    refused = client.request("DELETE", url, headers=subscriber)
    assert _error(refused) == (
        403,
        "rest_ability_cannot_execute",
        "Sorry, you are not allowed to execute this ability.",
    )
    anonymous = client.request("DELETE", url)
    assert _error(anonymous)[:2] == (401, "rest_ability_cannot_execute")


def test_contextual_permission_check(app: App, client_for: ClientFor) -> None:
    client = client_for(app)
    wrong = client.post(
        _run("test/restricted"), json={"input": {"secret": "wrong_secret", "data": "test data"}}
    )
    assert _error(wrong)[:2] == (401, "rest_ability_cannot_execute")
    right = client.post(
        _run("test/restricted"), json={"input": {"secret": "valid_secret", "data": "test data"}}
    )
    assert right.status_code == 200
    assert right.json() == "Success: test data"


def test_a_permission_error_gets_the_authorization_status(
    app: App, client_for: ClientFor, subscriber: dict[str, str]
) -> None:
    client = client_for(app)
    url = _run("test/wp-error-permission")
    assert _error(client.post(url)) == (401, "custom_denied", "Custom denial.")
    assert _error(client.post(url, headers=subscriber)) == (403, "custom_denied", "Custom denial.")


@pytest.mark.parametrize("name", ["test/not-show-in-rest", "non/existent"])
def test_run_not_found(app: App, client_for: ClientFor, name: str) -> None:
    response = client_for(app).post(_run(name))
    assert _error(response) == (404, "rest_ability_not_found", "Ability not found.")


def test_null_return_handling(app: App, client_for: ClientFor) -> None:
    # A None result is a 200 without a body, as any svcrest route answering None.
    response = client_for(app).post(_run("test/null-return"))
    assert response.status_code == 200
    assert response.content == b""
    assert app.get_ability("test/null-return").execute() is None  # type: ignore[union-attr]


def test_error_return_handling(app: App, client_for: ClientFor) -> None:
    response = client_for(app).post(_run("test/error-return"))
    assert _error(response) == (500, "test_error", "This is a test error")


def test_output_validation_failure(app: App, client_for: ClientFor) -> None:
    response = client_for(app).post(_run("test/strict-output"))
    assert _error(response) == (
        500,
        "ability_invalid_output",
        'Ability "test/strict-output" has invalid output. Reason: status is a required property'
        " of output.",
    )


def test_input_validation_failure(app: App, client_for: ClientFor) -> None:
    response = client_for(app).post(
        _run("test/restricted"), json={"input": {"other_field": "value"}}
    )
    assert _error(response) == (
        400,
        "ability_invalid_input",
        'Ability "test/restricted" has invalid input. Reason: secret is a required property of'
        " input.",
    )


def test_invalid_json_in_post_body(app: App, client_for: ClientFor) -> None:
    response = client_for(app).post(
        _run("test/calculator"),
        content=b'{"input": {invalid json}',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 400


def test_an_async_ability_runs_over_http(app: App, client_for: ClientFor) -> None:
    response = client_for(app).post(_run("test/async"), json={"input": "hello"})
    assert response.status_code == 200
    assert response.json() == "async hello"


def test_run_schema(app: App) -> None:
    help_data = app.rest_do_request(
        Request("OPTIONS", "/svc-abilities/v1/abilities/test/calculator/run")
    ).data
    assert help_data["schema"]["title"] == "ability-execution"
    assert "result" in help_data["schema"]["properties"]


def test_internal_dispatch_runs_as_the_request_user(app: App) -> None:
    editor = app.users.create("boss", "boss-password-1", roles=("editor",))
    request = Request("DELETE", "/svc-abilities/v1/abilities/test/delete-thing/run")
    request.set_param("input", {"id": 3})
    request.query_params["input"] = {"id": 3}
    assert app.rest_do_request(request).status == 401
    request = Request(
        "DELETE", "/svc-abilities/v1/abilities/test/delete-thing/run", query={"input": {"id": 3}}
    )
    request.user = editor
    response = app.rest_do_request(request)
    assert (response.status, response.data) == (200, {"deleted": 3})


# -- categories --------------------------------------------------------------------------------


def test_get_categories(app: App, client_for: ClientFor, subscriber: dict[str, str]) -> None:
    response = client_for(app).get(f"{BASE}/categories", headers=subscriber)
    assert response.status_code == 200
    assert [item["slug"] for item in response.json()] == ["math", "system", "general"]
    assert response.headers["X-SVC-Total"] == "3"
    assert response.headers["X-SVC-TotalPages"] == "1"


def test_get_category(app: App, client_for: ClientFor, subscriber: dict[str, str]) -> None:
    response = client_for(app).get(f"{BASE}/categories/math", headers=subscriber)
    data = response.json()
    links = data.pop("_links")
    assert data == {
        "slug": "math",
        "label": "Math",
        "description": "Mathematical operations.",
        "meta": {},
    }
    assert links["abilities"] == [{"href": f"{app.home}{BASE}/abilities?category=math"}]
    assert links["self"] == [{"href": f"{app.home}{BASE}/categories/math"}]


def test_get_category_not_found(
    app: App, client_for: ClientFor, subscriber: dict[str, str]
) -> None:
    client = client_for(app)
    response = client.get(f"{BASE}/categories/nonexistent", headers=subscriber)
    assert _error(response) == (
        404,
        "rest_ability_category_not_found",
        "Ability category not found.",
    )
    assert client.get(f"{BASE}/categories/Invalid_Slug", headers=subscriber).status_code == 404


def test_categories_pagination_and_embed(
    app: App, client_for: ClientFor, subscriber: dict[str, str]
) -> None:
    client = client_for(app)
    page = client.get(f"{BASE}/categories", params={"per_page": 2, "page": 2}, headers=subscriber)
    assert [item["slug"] for item in page.json()] == ["general"]
    assert page.headers["X-SVC-TotalPages"] == "2"
    embed = client.get(f"{BASE}/categories/math", params={"context": "embed"}, headers=subscriber)
    body = embed.json()
    body.pop("_links")
    assert body == {"slug": "math", "label": "Math"}


def test_category_schema(app: App) -> None:
    schema = app.rest_do_request(Request("OPTIONS", "/svc-abilities/v1/categories")).data["schema"]
    assert schema["title"] == "ability-category"
    assert sorted(schema["properties"]) == ["description", "label", "meta", "slug"]


# -- the namespace -----------------------------------------------------------------------------


def test_a_site_without_abilities_has_no_abilities_namespace() -> None:
    app = App()
    assert "svc-abilities/v1" not in app.rest_get_server().get_namespaces()
    app.register_ability_category("late", label="Late", description="Registered after start.")
    assert "svc-abilities/v1" in app.rest_get_server().get_namespaces()
    assert app.rest_do_request("/svc-abilities/v1/categories").status == 401


def test_the_routes_are_in_the_openapi_document(app: App) -> None:
    paths = app.openapi()["paths"]
    assert set(paths) >= {
        "/svc-abilities/v1/abilities",
        "/svc-abilities/v1/abilities/{name}",
        "/svc-abilities/v1/abilities/{name}/run",
        "/svc-abilities/v1/categories",
        "/svc-abilities/v1/categories/{slug}",
    }
    assert set(paths["/svc-abilities/v1/abilities/{name}/run"]) >= {"get", "post", "delete"}
    json.dumps(app.openapi())


def test_the_callbacks_run_as_the_http_user(
    app: App, client_for: ClientFor, editor: dict[str, str]
) -> None:
    app.register_ability(
        "test/user-info",
        label="User Info",
        description="Gets the current user.",
        category="system",
        output_schema={
            "type": "object",
            "properties": {"id": {"type": "integer"}, "login": {"type": "string"}},
        },
        execute_callback=lambda: {"id": current_user().id, "login": current_user().login},
        permission_callback=lambda: current_user().is_logged_in,
        annotations={"readonly": True},
    )
    client = client_for(app)
    response = client.get(_run("test/user-info"), headers=editor)
    assert response.status_code == 200
    assert response.json() == {"id": app.users.get_by_login("ed").id, "login": "ed"}  # type: ignore[union-attr]
    assert _error(client.get(_run("test/user-info")))[:2] == (401, "rest_ability_cannot_execute")


def test_empty_input_handling_get_method(app: App, client_for: ClientFor) -> None:
    calls: list[int] = []

    def no_input(*args: Any) -> dict[str, bool]:
        calls.append(len(args))
        return {"input_was_empty": args == (None,)}

    app.register_ability(
        "test/read-only-empty",
        label="Read-only Empty",
        description="Read-only with empty input.",
        category="general",
        execute_callback=no_input,
        permission_callback=public,
        annotations={"readonly": True},
    )
    client = client_for(app)
    response = client.get(_run("test/read-only-empty"))
    assert response.status_code == 200
    assert response.json() == {"input_was_empty": True}
    refused = client.get(_run("test/read-only-empty"), params={"input": "x"})
    assert _error(refused)[:2] == (400, "ability_missing_input_schema")


def test_a_run_checks_the_permission_once_before_the_callback(
    app: App, client_for: ClientFor
) -> None:
    """The run route's permission check runs the ability's permission callback; the run
    itself does not run it again for the same request and input (the Allow header asks once
    more, after the run). A direct ``execute`` checks it, as WordPress's does."""
    asked: list[Any] = []

    def allowed(input: Any) -> bool:
        asked.append(input)
        return True

    ability = app.register_ability(
        "test/counted",
        label="Counted",
        description="Counts its permission checks.",
        category="general",
        input_schema={"type": "integer"},
        output_schema={"type": "integer"},
        execute_callback=lambda input: input * 2,
        permission_callback=allowed,
        annotations={"readonly": True},
    )
    client = client_for(app)
    response = client.get(_run("test/counted"), params={"input": "21"})
    assert response.status_code == 200
    assert response.json() == 42
    assert response.headers["allow"] == "GET, POST, DELETE"
    assert asked == [21, 21]
    asked.clear()
    assert ability is not None
    assert ability.execute(4) == 8
    assert asked == [4]
    assert ability.execute("x").code == "ability_invalid_input"
    assert asked == [4]


def test_the_checked_run_is_used_once(app: App) -> None:
    """The run the permission check allowed is run once without a second check: the run
    route's callback answering the same request again checks the permission again."""
    asked: list[Any] = []

    def allowed(input: Any) -> bool:
        asked.append(input)
        return True

    app.register_ability(
        "test/once",
        label="Once",
        description="Counts its permission checks.",
        category="general",
        input_schema={"type": "integer", "default": 1},
        output_schema={"type": "integer"},
        execute_callback=lambda input: input * 2,
        permission_callback=allowed,
        annotations={"readonly": True},
    )
    route = "/svc-abilities/v1/abilities/test/once/run"
    chosen = app.rest_get_server().table.handler_for(route, "GET")
    assert chosen is not None
    _, handler, params = chosen
    permission: Any = handler.definition["permission_callback"]
    controller = permission.__self__
    request = Request("GET", route)
    request.url_params = dict(params)
    assert controller.can_run(request) is True
    assert asked == [1]
    assert controller.run(request).data == 2
    assert asked == [1]
    again = controller.run(request)  # not allowed by a check any more: the whole run
    assert asyncio.run(again).data == 2
    assert asked == [1, 1]


def test_async_callbacks_run_as_the_request_user(
    app: App, client_for: ClientFor, editor: dict[str, str]
) -> None:
    async def who() -> dict[str, Any]:
        return {"id": current_user().id, "login": current_user().login}

    async def logged_in() -> bool:
        return current_user().is_logged_in

    app.register_ability(
        "test/async-user",
        label="Async user",
        description="The current user, from async callbacks.",
        category="system",
        output_schema={
            "type": "object",
            "properties": {"id": {"type": "integer"}, "login": {"type": "string"}},
        },
        execute_callback=who,
        permission_callback=logged_in,
        annotations={"readonly": True},
    )
    client = client_for(app)
    response = client.get(_run("test/async-user"), headers=editor)
    assert response.status_code == 200
    assert response.json() == {"id": app.users.get_by_login("ed").id, "login": "ed"}  # type: ignore[union-attr]
    assert response.headers["allow"] == "GET, POST, DELETE"
    assert _error(client.get(_run("test/async-user")))[:2] == (401, "rest_ability_cannot_execute")


def _deny(input: Any = None) -> bool:
    return False


# (permission callback, input schema, the query's input, whether the run has nothing to
# check: a public ability that takes no input, run without one)
_RUNS: list[tuple[Any, Any, Any, bool]] = [
    (public, None, None, True),
    (public, None, "x", False),
    (public, {"type": "integer", "default": 3}, None, False),
    (public, {"type": ["integer", "null"]}, None, False),
    (public, {"type": "integer"}, "4", False),
    (_can_read, None, None, False),
    (_deny, None, None, False),
]


@pytest.mark.parametrize(("permission", "schema", "given", "unchecked"), _RUNS)
def test_a_run_with_nothing_to_check_answers_as_the_whole_run(
    app: App, permission: Any, schema: Any, given: Any, unchecked: bool
) -> None:
    """A public ability that takes no input, run without one, has nothing for the
    permission check to hand over: its run answers as WordPress's whole ``execute`` (the
    input and permission checks, the actions, the callback, the output check)."""
    options: dict[str, Any] = {"input_schema": schema} if schema else {}
    app.register_ability(
        "test/plain",
        label="Plain",
        description="Answers what it was given.",
        category="general",
        output_schema={"type": "object"},
        execute_callback=(lambda input: {"got": input}) if schema else (lambda: {"got": None}),
        permission_callback=permission,
        annotations={"readonly": True},
        **options,
    )
    ability = app.abilities.by_name["test/plain"]
    route = "/svc-abilities/v1/abilities/test/plain/run"
    chosen = app.rest_get_server().table.handler_for(route, "GET")
    assert chosen is not None
    _, handler, params = chosen
    permission_check: Any = handler.definition["permission_callback"]
    controller = permission_check.__self__
    request = Request("GET", route, query={} if given is None else {"input": given})
    request.url_params = dict(params)
    before = app.hooks.did_action("svc_before_execute_ability")
    routes._ALLOWED_RUN.set(None)  # nothing left by another test
    verdict = controller.can_run(request)
    if verdict is not True:
        assert not unchecked
        return
    assert (routes._ALLOWED_RUN.get() is None) is unchecked
    answer = controller.run(request)
    if not isinstance(answer, dict):
        answer = asyncio.run(answer) if asyncio.iscoroutine(answer) else answer
        answer = answer.data if hasattr(answer, "data") else answer
    whole = asyncio.run(ability.execute_async(ability.normalize_input(given)))
    assert answer == (whole if isinstance(whole, dict) else whole.to_dict())
    assert app.hooks.did_action("svc_before_execute_ability") == before + 2


# (the ability's options, the request's method, its query)
_PLAIN_REQUESTS: list[tuple[dict[str, Any], str, dict[str, Any]]] = [
    ({"annotations": {"readonly": True}}, "GET", {}),
    ({"annotations": {"readonly": True}}, "GET", {"input": "x"}),
    ({"annotations": {"readonly": True}}, "GET", {"other": "1"}),
    ({"annotations": {"readonly": True}}, "HEAD", {}),
    ({"annotations": {"readonly": True}}, "DELETE", {}),
    ({"annotations": {"readonly": True}, "show_in_rest": False}, "GET", {}),
    ({"annotations": {"destructive": True, "idempotent": True}}, "DELETE", {}),
    ({"annotations": {"destructive": True, "idempotent": True}}, "DELETE", {"input": "1"}),
    ({"annotations": {"destructive": True, "idempotent": True}}, "GET", {}),
    ({"annotations": {"readonly": False}}, "POST", {}),
    ({"annotations": {"readonly": True}, "input_schema": {"type": "integer"}}, "GET", {}),
    ({"annotations": {"readonly": True}, "permission_callback": _deny}, "GET", {}),
]


def _plain_site(options: dict[str, Any]) -> tuple[App, Any, Any]:
    app = App()
    app.register_ability_category("general", label="General", description="General purpose.")
    schema = options.get("input_schema")
    app.register_ability(
        "test/plain",
        label="Plain",
        description="Answers what it was given.",
        category="general",
        output_schema={"type": "object"},
        execute_callback=(lambda input: {"got": input}) if schema else (lambda: {"got": None}),
        permission_callback=options.get("permission_callback", public),
        **{key: value for key, value in options.items() if key != "permission_callback"},
    )
    route = "/svc-abilities/v1/abilities/test/plain/run"
    chosen = app.rest_get_server().table.handler_for(route, "GET")
    assert chosen is not None
    _, handler, params = chosen
    controller: Any = handler.definition["permission_callback"].__self__  # type: ignore[union-attr]
    return app, controller, params


def _outcome(value: Any) -> Any:
    if asyncio.iscoroutine(value):
        value = asyncio.run(value)
    if isinstance(value, RestError):
        return ("error", value.to_dict())
    return ("data", value.data if hasattr(value, "data") else value)


@pytest.mark.parametrize(("options", "method", "query"), _PLAIN_REQUESTS)
def test_a_plain_run_without_input_answers_as_the_general_check_and_run(
    options: dict[str, Any], method: str, query: dict[str, Any]
) -> None:
    """The run route's shortcut for a public ability without input schema asked with its own
    method (GET or DELETE) and no ``input`` in the query: the permission check's verdict,
    what it hands over and the run's answer are those of the general check and run."""
    seen: list[Any] = []
    for general in (False, True):
        app, controller, params = _plain_site(options)
        ability = app.abilities.by_name["test/plain"]
        if general:
            ability.plain_method = ""
        request = Request(method, "/svc-abilities/v1/abilities/test/plain/run", query=query)
        request.url_params = dict(params)
        routes._ALLOWED_RUN.set(None)  # nothing left by another test
        verdict = _outcome(controller.can_run(request))
        handed = routes._ALLOWED_RUN.get() is not None
        answer = _outcome(controller.run(request)) if verdict == ("data", True) else None
        counted = app.hooks.did_action("svc_after_execute_ability")
        seen.append((verdict, handed, answer, counted))
    assert seen[0] == seen[1]
    ability = _plain_site(options)[0].abilities.by_name["test/plain"]
    plain = not options.get("input_schema") and "permission_callback" not in options
    run_method = ability.run_method
    assert ability.plain_method == (run_method if plain and run_method != "POST" else "")


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_response_returned_by_an_ability_is_the_run_routes_answer(
    app: App, client_for: ClientFor, kind: str
) -> None:
    """As WordPress's ``rest_ensure_response`` keeps a ``WP_REST_Response``: the run route
    answers with the callback's own status, headers and data (not a Response wrapping it)."""

    def made() -> Response:
        return Response({"name": "r"}, status=201, headers={"X-Made": "yes"})

    async def made_later() -> Response:
        await asyncio.sleep(0)
        return made()

    app.register_ability(
        "test/made-response",
        label="Made response",
        description="Answers with a response of its own.",
        category="general",
        execute_callback=made if kind == "sync" else made_later,
        permission_callback=public,
        annotations={"readonly": True},
    )
    response = client_for(app).get(_run("test/made-response"))
    assert (response.status_code, response.json(), response.headers["x-made"]) == (
        201,
        {"name": "r"},
        "yes",
    )
