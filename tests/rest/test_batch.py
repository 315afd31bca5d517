"""``POST /batch/v1``: the cases of WordPress's batch tests (``rest-server.php``, ticket 50244)
and the atomic mode, on both adapters."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from svcrest import App, Request, Response, public
from svcrest.auth.passwords import ScryptParams
from svcrest.demo import register
from tests.conftest import SiteClient

BATCH = "/svc-json/batch/v1"
HOME = "http://batch.test"
NOTE_LINKS = "http://batch.test/svc-json/demo/v1/notes"
ClientFor = Callable[[App], SiteClient]


def _app(calls: list[Any], allow_batch: Any = None) -> App:
    app = App(HOME)

    def callback(request: Request) -> Response:
        calls.append(request.get_param("project"))
        return Response(request.get_param("project"))

    handler: dict[str, Any] = {
        "permission_callback": public,
        "methods": "POST",
        "callback": callback,
        "args": {"project": {"type": "string", "enum": ["gutenberg", "WordPress"]}},
    }
    if allow_batch is not None:
        handler["allow_batch"] = allow_batch
    app.register_rest_route("test-ns/v1", "/test", handler)
    return app


def _invalid_project(message: str = "project is not one of gutenberg and WordPress.") -> Any:
    return {
        "body": {
            "code": "rest_invalid_param",
            "message": "Invalid parameter(s): project",
            "data": {
                "status": 400,
                "params": {"project": message},
                "details": {
                    "project": {
                        "code": "rest_not_in_enum",
                        "message": message,
                        "data": {"param": "project"},
                    }
                },
            },
        },
        "status": 400,
        "headers": {"Allow": "POST"},
    }


def _ok(body: Any) -> dict[str, Any]:
    return {"body": body, "status": 200, "headers": {"Allow": "POST"}}


NOT_ALLOWED = {
    "body": {
        "code": "rest_batch_not_allowed",
        "message": "The requested route does not support batch requests.",
        "data": {"status": 400},
    },
    "status": 400,
    "headers": {"Allow": "POST"},
}


@pytest.mark.parametrize(
    ("allow_batch", "allowed"),
    [
        (None, False),
        (True, False),
        ("v1", False),
        ({"version1": True}, False),
        ({"v1": False}, False),
        ({"v1": True}, True),
    ],
    ids=["missing", "invalid-type", "invalid-type-string", "wrong-version", "false", "valid"],
)
def test_opt_in(client_for: ClientFor, allow_batch: Any, allowed: bool) -> None:
    calls: list[Any] = []
    client = client_for(_app(calls, allow_batch))
    response = client.post(
        BATCH, json={"requests": [{"path": "/test-ns/v1/test", "body": {"project": "WordPress"}}]}
    )
    assert response.status_code == 207
    expected = _ok("WordPress") if allowed else NOT_ALLOWED
    assert response.json() == {"responses": [expected]}
    assert calls == (["WordPress"] if allowed else [])


def test_route_option_and_handler_override_in_help(client_for: ClientFor) -> None:
    app = App(HOME)
    app.register_rest_route(
        "test-ns",
        "/test",
        {
            0: {"permission_callback": public, "methods": "GET", "callback": lambda r: None},
            1: {
                "permission_callback": public,
                "methods": "POST",
                "callback": lambda r: None,
                "allow_batch": False,
            },
            "allow_batch": {"v1": True},
        },
    )
    client = client_for(app)
    endpoints = client.request("OPTIONS", "/svc-json/test-ns/test").json()["endpoints"]
    assert endpoints == [
        {"methods": ["GET"], "args": {}, "allow_batch": {"v1": True}},
        {"methods": ["POST"], "args": {}},
    ]
    index = client.get("/svc-json/").json()["routes"]
    assert index["/test-ns/test"]["endpoints"][0]["allow_batch"] == {"v1": True}
    response = client.post(BATCH, json={"requests": [{"path": "/test-ns/test"}]})
    assert response.json()["responses"][0]["body"]["code"] == "rest_batch_not_allowed"


def test_require_all_validate_runs_nothing_when_one_fails(client_for: ClientFor) -> None:
    calls: list[Any] = []
    client = client_for(_app(calls, {"v1": True}))
    response = client.post(
        BATCH,
        json={
            "validation": "require-all-validate",
            "requests": [
                {"path": "/test-ns/v1/test", "body": {"project": "gutenberg"}},
                {"path": "/test-ns/v1/test", "body": {"project": "buddypress"}},
            ],
        },
    )
    assert response.status_code == 207
    failed = _invalid_project()
    failed["headers"] = {}
    assert response.json() == {"failed": "validation", "responses": [None, failed]}
    assert calls == []


def test_require_all_validate_all_successful(client_for: ClientFor) -> None:
    calls: list[Any] = []
    client = client_for(_app(calls, {"v1": True}))
    response = client.post(
        BATCH,
        json={
            "validation": "require-all-validate",
            "requests": [
                {"path": "/test-ns/v1/test", "body": {"project": "gutenberg"}},
                {"path": "/test-ns/v1/test", "body": {"project": "WordPress"}},
            ],
        },
    )
    assert response.status_code == 207
    assert response.json() == {"responses": [_ok("gutenberg"), _ok("WordPress")]}
    assert calls == ["gutenberg", "WordPress"]


def test_partial_error_in_normal_mode(client_for: ClientFor) -> None:
    calls: list[Any] = []
    client = client_for(_app(calls, {"v1": True}))
    response = client.post(
        BATCH,
        json={
            "requests": [
                {"path": "/test-ns/v1/test", "body": {"project": "gutenberg"}},
                {"path": "/test-ns/v1/test", "body": {"project": "buddypress"}},
            ]
        },
    )
    assert response.status_code == 207
    assert response.json() == {"responses": [_ok("gutenberg"), _invalid_project()]}
    assert calls == ["gutenberg"]


def test_request_parts_reach_the_handler(client_for: ClientFor) -> None:
    seen: list[Any] = []
    app = App(HOME)

    def callback(request: Request) -> Response:
        seen.append(
            (
                request.method,
                request.route,
                request.url_params,
                request.query_params,
                request.body_params,
                request.get_header("my-header"),
                request.get_header("other"),
            )
        )
        return Response("test")

    app.register_rest_route(
        "test-ns/v1",
        r"/test/(?P<id>[\d+])",
        {
            "permission_callback": public,
            "methods": ["POST", "DELETE"],
            "callback": callback,
            "allow_batch": {"v1": True},
        },
    )
    response = client_for(app).post(
        BATCH,
        json={
            "requests": [
                {
                    "method": "DELETE",
                    "path": "/test-ns/v1/test/5?query=param",
                    "headers": {"My-Header": "my-value", "Other": ["a", "b"]},
                    "body": {"project": "gutenberg"},
                }
            ]
        },
    )
    assert response.status_code == 207
    assert response.json() == {
        "responses": [{"body": "test", "status": 200, "headers": {"Allow": "POST, DELETE"}}]
    }
    assert seen == [
        (
            "DELETE",
            "/test-ns/v1/test/5",
            {"id": "5"},
            {"query": "param"},
            {"project": "gutenberg"},
            "my-value",
            "a, b",
        )
    ]


def test_unknown_route_and_unparsable_path(client_for: ClientFor) -> None:
    client = client_for(_app([], {"v1": True}))
    response = client.post(
        BATCH, json={"requests": [{"path": "/nothing/here"}, {"path": "no-slash"}]}
    )
    assert response.status_code == 207
    assert response.json() == {
        "responses": [
            {
                "body": {
                    "code": "rest_no_route",
                    "message": "No route was found matching the URL and request method.",
                    "data": {"status": 404},
                },
                "status": 404,
                "headers": {},
            },
            {
                "body": {
                    "code": "parse_path_failed",
                    "message": "Could not parse the path.",
                    "data": {"status": 400},
                },
                "status": 400,
                "headers": {},
            },
        ]
    }


def _batch_error(param: str, message: str, code: str, at: str | None = None) -> dict[str, Any]:
    return {
        "code": "rest_invalid_param",
        "message": "Invalid parameter(s): " + param,
        "data": {
            "status": 400,
            "params": {param: message},
            "details": {param: {"code": code, "message": message, "data": {"param": at or param}}},
        },
    }


def test_max_batch_size_from_the_filter(client_for: ClientFor) -> None:
    app = _app([], {"v1": True})
    app.hooks.add_filter("rest_get_max_batch_size", lambda size: 5)
    client = client_for(app)
    six = [{"path": "/test-ns/v1/test"}] * 6
    response = client.post(BATCH, json={"requests": six})
    assert response.status_code == 400
    assert response.json() == _batch_error(
        "requests", "requests must contain at most 5 items.", "rest_too_many_items"
    )
    assert client.post(BATCH, json={"requests": six[:5]}).status_code == 207


def test_default_max_batch_size_is_25(client_for: ClientFor) -> None:
    client = client_for(_app([], {"v1": True}))
    many = [{"path": "/test-ns/v1/test"}]
    assert client.post(BATCH, json={"requests": many * 25}).status_code == 207
    response = client.post(BATCH, json={"requests": many * 26})
    assert response.status_code == 400
    assert response.json() == _batch_error(
        "requests", "requests must contain at most 25 items.", "rest_too_many_items"
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"requests": [{"method": "GET", "path": "/test-ns/v1/test"}]},
            _batch_error(
                "requests",
                "requests[0][method] is not one of POST, PUT, PATCH, and DELETE.",
                "rest_not_in_enum",
                "requests[0][method]",
            ),
        ),
        (
            {"requests": [{"method": "POST"}]},
            _batch_error(
                "requests",
                "path is a required property of requests[0].",
                "rest_property_required",
                "requests[0]",
            ),
        ),
        (
            {"validation": "eventually", "requests": []},
            _batch_error(
                "validation",
                "validation is not one of require-all-validate, normal, and atomic.",
                "rest_not_in_enum",
            ),
        ),
        (
            {"validation": "normal"},
            {
                "code": "rest_missing_callback_param",
                "message": "Missing parameter(s): requests",
                "data": {"status": 400, "params": ["requests"]},
            },
        ),
    ],
    ids=["get-method", "no-path", "unknown-validation", "no-requests"],
)
def test_invalid_batch_is_a_400(
    client_for: ClientFor, body: dict[str, Any], expected: dict[str, Any]
) -> None:
    calls: list[Any] = []
    response = client_for(_app(calls, {"v1": True})).post(BATCH, json=body)
    assert response.status_code == 400
    assert response.json() == expected
    assert calls == []


# -- the demo, as the batch's user, and atomic batches ---------------------------------------


@pytest.fixture
def demo(store_location: str | None) -> Iterator[App]:
    """The demo on each store engine (atomic batches are one store transaction)."""
    app = App(HOME, clock=lambda: 1_700_000_000, store=store_location)
    register(app)
    app.users.password_params = ScryptParams(n=16, r=1, p=1)
    app.users.create("ed", "pw", roles=("editor",))
    yield app
    app.store.close()


def _editor(client: SiteClient) -> dict[str, str]:
    assert client.post("/login", data={"log": "ed", "pwd": "pw"}).status_code == 303
    return {"X-SVC-Nonce": client.get("/auth/nonce").json()["nonce"]}


def _note(note_id: int, title: str) -> dict[str, Any]:
    return {
        "id": note_id,
        "title": title,
        "content": "",
        "author": 1,
        "date": "2023-11-14T22:13:20",
        "date_gmt": "2023-11-14T22:13:20",
        "_links": {
            "self": [{"href": f"{NOTE_LINKS}/{note_id}"}],
            "collection": [{"href": NOTE_LINKS}],
            "author": [{"href": f"{HOME}/svc-json/demo/v1/users/1", "embeddable": True}],
        },
    }


def _created(note_id: int, title: str) -> dict[str, Any]:
    return {
        "body": _note(note_id, title),
        "status": 201,
        "headers": {"Location": f"{NOTE_LINKS}/{note_id}", "Allow": "GET, POST"},
    }


def _titles(client: SiteClient) -> list[str]:
    return [note["title"] for note in client.get("/svc-json/demo/v1/notes").json()]


def _creates(*titles: str) -> list[dict[str, Any]]:
    return [{"path": "/demo/v1/notes", "body": {"title": title}} for title in titles]


def test_batch_runs_as_the_cookie_and_nonce_user(demo: App, client_for: ClientFor) -> None:
    client = client_for(demo)
    anonymous = client.post(BATCH, json={"requests": _creates("A")})
    assert anonymous.json()["responses"][0] == {
        "body": {
            "code": "rest_cannot_create",
            "message": "Sorry, you are not allowed to create notes.",
            "data": {"status": 401},
        },
        "status": 401,
        "headers": {"Allow": "GET"},
    }
    headers = _editor(client)
    without_nonce = client.post(BATCH, json={"requests": _creates("A")})
    assert without_nonce.json()["responses"][0]["status"] == 401
    response = client.post(BATCH, json={"requests": _creates("A", "B")}, headers=headers)
    assert response.status_code == 207
    assert response.headers["cache-control"] == "no-store"
    assert response.json() == {"responses": [_created(1, "A"), _created(2, "B")]}


def test_atomic_batch_commits(demo: App, client_for: ClientFor) -> None:
    client = client_for(demo)
    headers = _editor(client)
    body = {
        "validation": "atomic",
        "requests": [
            *_creates("A", "B"),
            {"method": "PATCH", "path": "/demo/v1/notes/1", "body": {"title": "A2"}},
            {"method": "DELETE", "path": "/demo/v1/notes/2"},
        ],
    }
    response = client.post(BATCH, json=body, headers=headers)
    assert response.status_code == 207
    data = response.json()
    assert "failed" not in data
    assert [slot["status"] for slot in data["responses"]] == [201, 201, 200, 200]
    assert data["responses"][2]["body"] == _note(1, "A2")
    assert _titles(client) == ["A2"]


def test_atomic_batch_rolls_back_and_aborts_the_rest(
    demo: App, client_for: ClientFor, engine: str
) -> None:
    client = client_for(demo)
    headers = _editor(client)
    client.post("/svc-json/demo/v1/notes", json={"title": "Kept"}, headers=headers)
    body = {
        "validation": "atomic",
        "requests": [
            *_creates("A"),
            {"method": "PATCH", "path": "/demo/v1/notes/1", "body": {"title": "Changed"}},
            {"method": "DELETE", "path": "/demo/v1/notes/99"},
            *_creates("never"),
        ],
    }
    response = client.post(BATCH, json=body, headers=headers)
    assert response.status_code == 207
    aborted = {
        "body": {
            "code": "rest_batch_aborted",
            "message": "The request was not run: an earlier request of the atomic batch failed.",
            "data": {"status": 424},
        },
        "status": 424,
        "headers": {},
    }
    changed = {
        "body": {**_note(1, "Changed")},
        "status": 200,
        # The note's new version (its etag_callback after the write).
        "headers": {"ETag": '"1-2"', "Allow": "GET, PUT, PATCH, DELETE"},
    }
    missing = {
        "body": {
            "code": "rest_note_invalid_id",
            "message": "Invalid note ID.",
            "data": {"status": 404},
        },
        "status": 404,
        "headers": {"Allow": "GET"},
    }
    assert response.json() == {
        "failed": "atomic",
        "responses": [_created(2, "A"), changed, missing, aborted],
    }
    assert _titles(client) == ["Kept"]  # the create and the update were rolled back
    after = client.post("/svc-json/demo/v1/notes", json={"title": "Next"}, headers=headers)
    # SQLite: the rolled-back insert left no trace. PostgreSQL: nothing of it either but the
    # id it took (sequences are not transactional, so ids have gaps and are never reused).
    assert after.json()["id"] == (2 if engine == "sqlite" else 3)


def test_atomic_batch_refuses_a_route_that_cannot_join(demo: App, client_for: ClientFor) -> None:
    calls: list[Any] = []
    demo.register_rest_route(
        "other/v1",
        "/plain",
        {
            "permission_callback": public,
            "methods": "POST",
            "callback": lambda r: calls.append(1),
            "allow_batch": {"v1": True},
        },
    )
    client = client_for(demo)
    headers = _editor(client)
    body = {"validation": "atomic", "requests": [*_creates("A"), {"path": "/other/v1/plain"}]}
    response = client.post(BATCH, json=body, headers=headers)
    assert response.status_code == 400
    assert response.json() == {
        "code": "rest_batch_not_atomic",
        "message": "The route /other/v1/plain cannot join an atomic batch.",
        "data": {"status": 400, "route": "/other/v1/plain", "request": 1},
    }
    assert (calls, _titles(client)) == ([], [])
    normal = client.post(BATCH, json={"requests": [{"path": "/other/v1/plain"}]}, headers=headers)
    assert (normal.status_code, calls) == (207, [1])


def test_atomic_batch_refuses_an_unknown_route(demo: App, client_for: ClientFor) -> None:
    client = client_for(demo)
    headers = _editor(client)
    body = {"validation": "atomic", "requests": [*_creates("A"), {"path": "/no/route"}]}
    response = client.post(BATCH, json=body, headers=headers)
    assert response.status_code == 400
    assert response.json()["data"] == {"status": 400, "route": "/no/route", "request": 1}
    assert _titles(client) == []


def test_demo_routes_show_allow_batch(demo: App, client_for: ClientFor) -> None:
    data = client_for(demo).request("OPTIONS", "/svc-json/demo/v1/notes").json()
    assert [endpoint["allow_batch"] for endpoint in data["endpoints"]] == [
        {"v1": True, "atomic": True},
        {"v1": True, "atomic": True},
    ]
