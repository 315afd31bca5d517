"""Hostile ``POST /batch/v1`` bodies on both adapters (WordPress 5.6's batch controller):
``requests`` of the wrong type or too many, items of the wrong shape (``method``, ``path``,
``body``, ``headers``), bodies that are not JSON objects; each is a 400 of the batch itself
naming the part (``rest_invalid_param`` with WordPress's messages), and nothing runs. Paths
that are absolute URLs, protocol-relative, hold ``..``, ``?rest_route=``, query strings past
PHP's limits, ``_envelope``, fragments or NUL answer in their own slot (as WordPress reads
them: the URL's path, its query string), never a 500; a nested batch is refused in its slot;
an item's ``headers`` never change its method or its user. (The ported WordPress cases are in
tests/rest/test_batch.py.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from svcrest import App, Request, Response, public
from svcrest.auth.passwords import ScryptParams
from svcrest.demo import register
from tests.conftest import SiteClient
from tests.rest.test_batch import _batch_error, _creates, _editor, _titles

ClientFor = Callable[..., SiteClient]
HOME = "http://127.0.0.1:8000"
BATCH = "/svc-json/batch/v1"
W = "/t/v1/w"
ALLOW = {"Allow": "POST, PUT, PATCH, DELETE"}
NO_ROUTE = {
    "code": "rest_no_route",
    "message": "No route was found matching the URL and request method.",
    "data": {"status": 404},
}
PARSE_FAILED = {
    "code": "parse_path_failed",
    "message": "Could not parse the path.",
    "data": {"status": 400},
}


def make_app(calls: list[Any]) -> App:
    app = App(HOME)

    def echo(request: Request) -> Response:
        calls.append(request.route)
        return Response(
            {
                "method": request.method,
                "route": request.route,
                "query": request.query_params,
                "body": request.body_params,
                "user": request.user.id,
            }
        )

    app.register_rest_route(
        "t/v1",
        "/w",
        {
            "methods": "POST, PUT, PATCH, DELETE",
            "callback": echo,
            "permission_callback": public,
            "allow_batch": {"v1": True},
            "args": {"n": {"type": "integer"}},
        },
    )
    app.register_rest_route(
        "t/v1",
        "/solo",
        {"methods": "POST", "callback": echo, "permission_callback": public},
    )
    return app


def _items_error(message: str, code: str, at: str) -> dict[str, Any]:
    return _batch_error("requests", message, code, at)


NOT_OBJECT_0 = _items_error(
    "requests[0] is not of type object.", "rest_invalid_type", "requests[0]"
)
MISSING = {
    "code": "rest_missing_callback_param",
    "message": "Missing parameter(s): requests",
    "data": {"status": 400, "params": ["requests"]},
}
NOT_IN_METHODS = _items_error(
    "requests[0][method] is not one of POST, PUT, PATCH, and DELETE.",
    "rest_not_in_enum",
    "requests[0][method]",
)


def _not_of_type(part: str, kind: str) -> dict[str, Any]:
    at = f"requests[0][{part}]"
    return _items_error(f"{at} is not of type {kind}.", "rest_invalid_type", at)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"requests": "x"}, NOT_OBJECT_0),  # a string is a list of one (wp_parse_list)
        (
            {"requests": {"a": {"path": W}}},
            _batch_error("requests", "requests is not of type array.", "rest_invalid_type"),
        ),
        ({"requests": None}, MISSING),
        ({"requests": [1]}, NOT_OBJECT_0),
        ({"requests": [None]}, NOT_OBJECT_0),
        ({"requests": [[{"path": W}]]}, NOT_OBJECT_0),
        (
            {"requests": [{"path": W}] * 1000},
            _batch_error(
                "requests", "requests must contain at most 25 items.", "rest_too_many_items"
            ),
        ),
        ({"requests": [{"path": 5}]}, _not_of_type("path", "string")),
        ({"requests": [{"path": None}]}, _not_of_type("path", "string")),
        ({"requests": [{"path": [W]}]}, _not_of_type("path", "string")),
        ({"requests": [{"path": W, "method": "post"}]}, NOT_IN_METHODS),
        ({"requests": [{"path": W, "method": ""}]}, NOT_IN_METHODS),
        ({"requests": [{"path": W, "method": "OPTIONS"}]}, NOT_IN_METHODS),
        ({"requests": [{"path": W, "method": 1}]}, _not_of_type("method", "string")),
        ({"requests": [{"path": W, "method": None}]}, _not_of_type("method", "string")),
        ({"requests": [{"path": W, "body": "n=1"}]}, _not_of_type("body", "object")),
        ({"requests": [{"path": W, "body": [1]}]}, _not_of_type("body", "object")),
        ({"requests": [{"path": W, "body": None}]}, _not_of_type("body", "object")),
        ({"requests": [{"path": W, "headers": ["a"]}]}, _not_of_type("headers", "object")),
        ({"requests": [{"path": W, "headers": None}]}, _not_of_type("headers", "object")),
        (
            {"requests": [{"path": W, "headers": {"x-a": [["a"]]}}]},
            _items_error(
                "requests[0][headers][x-a][0] is not of type string.",
                "rest_invalid_type",
                "requests[0][headers][x-a][0]",
            ),
        ),
        (
            {"validation": 1, "requests": []},
            _batch_error("validation", "validation is not of type string.", "rest_invalid_type"),
        ),
        (
            {"validation": "ATOMIC", "requests": []},
            _batch_error(
                "validation",
                "validation is not one of require-all-validate, normal, and atomic.",
                "rest_not_in_enum",
            ),
        ),
    ],
    ids=[
        "requests-string",
        "requests-object",
        "requests-null",
        "item-number",
        "item-null",
        "item-list",
        "1000-requests",
        "path-number",
        "path-null",
        "path-list",
        "method-lower-case",
        "method-empty",
        "method-options",
        "method-number",
        "method-null",
        "body-string",
        "body-list",
        "body-null",
        "headers-list",
        "headers-null",
        "header-nested-list",
        "validation-number",
        "validation-upper-case",
    ],
)
def test_a_malformed_batch_is_a_400_and_runs_nothing(
    client_for: ClientFor, body: dict[str, Any], expected: dict[str, Any]
) -> None:
    calls: list[Any] = []
    response = client_for(make_app(calls)).post(BATCH, json=body)
    assert (response.status_code, response.json(), calls) == (400, expected, [])


@pytest.mark.parametrize(
    ("content", "content_type", "expected"),
    [
        (b"[]", "application/json", MISSING),
        (b'"requests"', "application/json", MISSING),
        (b"1", "application/json", MISSING),
        (b"null", "application/json", MISSING),
        (b"requests=x", "application/x-www-form-urlencoded", NOT_OBJECT_0),
        (b"", "application/json", MISSING),
    ],
    ids=["json-list", "json-string", "json-number", "json-null", "form-string", "empty"],
)
def test_a_batch_body_that_is_not_an_object_is_a_400(
    client_for: ClientFor, content: bytes, content_type: str, expected: dict[str, Any]
) -> None:
    calls: list[Any] = []
    response = client_for(make_app(calls)).post(
        BATCH, content=content, headers={"Content-Type": content_type}
    )
    assert (response.status_code, response.json(), calls) == (400, expected, [])


def test_a_batch_body_that_is_not_json_is_rest_invalid_json(client_for: ClientFor) -> None:
    response = client_for(make_app([])).post(
        BATCH, content=b'{"requests": [', headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["code"] == "rest_invalid_json"


def _ran(query: dict[str, Any] | None = None, method: str = "POST") -> dict[str, Any]:
    return {
        "body": {"method": method, "route": W, "query": query or {}, "body": {}, "user": 0},
        "status": 200,
        "headers": ALLOW,
    }


def _failed(body: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
    return {"body": body, "status": body["data"]["status"], "headers": headers or {}}


NOT_IN_BATCH = {
    "code": "rest_batch_not_allowed",
    "message": "The requested route does not support batch requests.",
    "data": {"status": 400},
}
TOO_MANY_PARAMETERS = {
    "code": "rest_invalid_query_string",
    "message": "Invalid query string.",
    "data": {"status": 400, "reason": "more than 1000 parameters"},
}
TOO_DEEP = {
    "code": "rest_invalid_query_string",
    "message": "Invalid query string.",
    "data": {"status": 400, "reason": "a parameter nested deeper than 64 levels"},
}


@pytest.mark.parametrize(
    ("item", "slot", "ran"),
    [
        ({"path": "http://evil.example" + W}, _ran(), True),  # WordPress reads the path
        ({"path": "//evil.example" + W}, _ran(), True),
        ({"path": W + "#fragment"}, _ran(), True),
        ({"path": W + "?rest_route=/batch/v1"}, _ran({"rest_route": "/batch/v1"}), True),
        ({"path": W + "?n=5&x[]=1"}, _ran({"n": 5, "x": ["1"]}), True),
        ({"path": W, "headers": {"X-HTTP-Method-Override": "DELETE"}}, _ran(), True),
        ({"path": W + "?_method=DELETE"}, _ran({"_method": "DELETE"}), True),
        ({"path": W, "headers": {"Authorization": "Basic ZWQ6cHc="}}, _ran(), True),
        ({"path": W, "headers": {"x-a\r\nSet-Cookie": "a\r\nb: c"}}, _ran(), True),
        ({"path": W, "method": "DELETE", "body": []}, _ran(method="DELETE"), True),
        ({"path": "/t/v1/../v1/w"}, _failed(NO_ROUTE), False),
        ({"path": "/t/v1/%77"}, _failed(NO_ROUTE), False),
        ({"path": W + "\x00"}, _failed(NO_ROUTE), False),
        (
            {"path": "/?rest_route=" + W},
            _failed({**NO_ROUTE, "data": {"status": 405}}, {"Allow": "GET"}),
            False,
        ),
        ({"path": ""}, _failed(PARSE_FAILED), False),
        ({"path": "t/v1/w"}, _failed(PARSE_FAILED), False),
        ({"path": "http://[::1" + W}, _failed(PARSE_FAILED), False),
        (
            {"path": "/batch/v1", "body": {"requests": [{"path": W}]}},
            _failed(NOT_IN_BATCH, {"Allow": "POST"}),
            False,
        ),
        (
            {"path": "/t/v1/solo"},
            _failed(NOT_IN_BATCH, {"Allow": "POST"}),
            False,
        ),
        (
            {"path": W + "?" + "&".join(f"p{n}=1" for n in range(1001))},
            _failed(TOO_MANY_PARAMETERS, ALLOW),
            False,
        ),
        ({"path": W + "?a" + "[b]" * 65 + "=1"}, _failed(TOO_DEEP, ALLOW), False),
    ],
    ids=[
        "absolute-url",
        "protocol-relative",
        "fragment",
        "rest-route-in-query",
        "query-string",
        "method-override-header",
        "method-override-param",
        "forged-basic",
        "crlf-header",
        "empty-body-list",
        "dot-dot",
        "percent-encoded",
        "nul",
        "plain-permalink-form",
        "empty",
        "no-slash",
        "broken-ipv6-host",
        "nested-batch",
        "route-not-in-batches",
        "1001-parameters",
        "65-levels",
    ],
)
def test_a_hostile_path_answers_in_its_slot(
    client_for: ClientFor, item: dict[str, Any], slot: dict[str, Any], ran: bool
) -> None:
    calls: list[Any] = []
    response = client_for(make_app(calls)).post(BATCH, json={"requests": [item, {"path": W}]})
    assert response.status_code == 207
    assert response.json() == {"responses": [slot, _ran()]}
    assert calls == ([W, W] if ran else [W])


@pytest.mark.parametrize("status", [200, 400, 404], ids=["ok", "invalid", "no-route"])
def test_envelope_in_an_items_path_is_one_envelope_with_the_items_status(
    client_for: ClientFor, status: int
) -> None:
    path = {200: W, 400: W + "?n=x&", 404: "/t/v1/nothing"}[status]
    response = client_for(make_app([])).post(
        BATCH, json={"requests": [{"path": path + ("&" if "?" in path else "?") + "_envelope"}]}
    )
    assert response.status_code == 207
    (slot,) = response.json()["responses"]
    assert slot["status"] == status
    assert set(slot) == {"body", "status", "headers"}
    body = slot["body"]
    if status == 200:
        assert body["query"] == {"_envelope": ""}
    else:
        assert body["data"]["status"] == status


def test_require_all_validate_with_every_kind_of_failure_runs_nothing(
    client_for: ClientFor,
) -> None:
    calls: list[Any] = []
    body = {
        "validation": "require-all-validate",
        "requests": [
            {"path": W, "body": {"n": 1}},
            {"path": W, "body": {"n": "x"}},
            {"path": "/t/v1/nothing"},
            {"path": "no-slash"},
            {"path": "/t/v1/solo"},
            {"path": W + "?" + "&".join(f"p{n}=1" for n in range(1001))},
        ],
    }
    response = client_for(make_app(calls)).post(BATCH, json=body)
    assert response.status_code == 207
    data = response.json()
    assert data["failed"] == "validation"
    assert [None if slot is None else slot["status"] for slot in data["responses"]] == [
        None,
        400,
        404,
        400,
        400,
        400,
    ]
    assert [None if slot is None else slot["body"]["code"] for slot in data["responses"]] == [
        None,
        "rest_invalid_param",
        "rest_no_route",
        "parse_path_failed",
        "rest_batch_not_allowed",
        "rest_invalid_query_string",
    ]
    assert calls == []


# -- atomic batches -----------------------------------------------------------------------------


@pytest.fixture
def demo() -> App:
    app = App(HOME, clock=lambda: 1_700_000_000)
    register(app)
    app.users.password_params = ScryptParams(n=16, r=1, p=1)
    app.users.create("ed", "pw", roles=("editor",))
    return app


@pytest.mark.parametrize(
    "failing",
    [
        {"method": "DELETE", "path": "/demo/v1/notes/99?_envelope"},
        {"method": "PATCH", "path": "/demo/v1/notes/1?_envelope=1", "body": {"title": 5}},
        {
            "path": "/demo/v1/notes?" + "&".join(f"p{n}=1" for n in range(1001)),
            "body": {"title": "B"},
        },
    ],
    ids=["enveloped-404", "enveloped-400", "query-past-limits"],
)
def test_an_atomic_batch_rolls_back_whatever_the_failing_items_path_asks(
    demo: App, client_for: ClientFor, failing: dict[str, Any]
) -> None:
    client = client_for(demo)
    headers = _editor(client)
    client.post("/svc-json/demo/v1/notes", json={"title": "Kept"}, headers=headers)
    body = {"validation": "atomic", "requests": [*_creates("A"), failing, *_creates("never")]}
    response = client.post(BATCH, json=body, headers=headers)
    assert response.status_code == 207
    data = response.json()
    assert data["failed"] == "atomic"
    assert [slot["status"] for slot in data["responses"]][1:] in ([404, 424], [400, 424])
    assert _titles(client) == ["Kept"]
