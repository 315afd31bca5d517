"""Idempotency keys and rate limits (the route options ``idempotency`` and ``rate_limit``,
the filters ``svc_rate_limit`` and ``svc_batch_route_options``), on both adapters."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from svcrest import App, Request, Response, public
from svcrest.app import DoingItWrong
from svcrest.auth.passwords import ScryptParams
from svcrest.rest.definition_errors import RouteDefinitionError
from tests.conftest import Clock, SiteClient

HOME = "http://127.0.0.1:8000"
THINGS = "/svc-json/guard/v1/things"
BATCH = "/svc-json/batch/v1"
ClientFor = Callable[[App], SiteClient]
#: 1,000,030 is 10 s into a 60 s window: its reset is 50 s away.
NOW = 1_000_030.0
FAST = ScryptParams(n=16, r=1, p=1)


def _app(
    options: dict[str, Any],
    calls: list[Any],
    clock: Clock | None = None,
    batch_options: dict[str, Any] | None = None,
) -> App:
    app = App(HOME, clock=clock or Clock(NOW))
    if batch_options is not None:  # read when the REST server is made (the first route)
        app.hooks.add_filter("svc_batch_route_options", lambda options: batch_options)

    def create(request: Request) -> Response:
        calls.append(request.get_param("title"))
        if request.get_param("title") == "boom" and len(calls) == 1:
            raise RuntimeError("the first attempt fails")
        return Response({"id": len(calls), "title": request.get_param("title")}, 201)

    app.register_rest_route(
        "guard/v1",
        "/things",
        {
            0: {"methods": "POST", "callback": create, "permission_callback": public},
            1: {
                "methods": "GET",
                "callback": lambda request: {"count": len(calls)},
                "permission_callback": public,
            },
            "allow_batch": {"v1": True},
            **options,
        },
    )
    return app


def _basic(app: App, login: str) -> str:
    """A new user's Basic credentials (an application password)."""
    app.users.password_params = FAST
    user = app.users.create(login, f"{login}-pw")
    password, _ = app.users.create_application_password(user.id, "cli")
    return base64.b64encode(f"{login}:{password}".encode()).decode()


def _post(client: SiteClient, title: str, key: str | None = None) -> httpx.Response:
    headers = {} if key is None else {"Idempotency-Key": key}
    return client.post(THINGS, json={"title": title}, headers=headers)


def test_a_repeat_answers_the_stored_answer_and_runs_nothing(client_for: ClientFor) -> None:
    calls: list[Any] = []
    client = client_for(_app({"idempotency": "optional"}, calls))
    first = _post(client, "milk", '"k-1"')
    assert first.status_code == 201
    assert first.json() == {"id": 1, "title": "milk"}
    assert "idempotent-replayed" not in first.headers
    again = _post(client, "milk", '"k-1"')
    assert again.status_code == 201
    assert again.json() == {"id": 1, "title": "milk"}
    assert again.headers["idempotent-replayed"] == "true"
    assert calls == ["milk"]
    # A key given without the structured-field quotes is the same key.
    assert _post(client, "milk", "k-1").headers["idempotent-replayed"] == "true"
    # Without a key (optional), every request runs.
    assert _post(client, "milk").json() == {"id": 2, "title": "milk"}
    assert calls == ["milk", "milk"]


def test_the_same_key_for_another_request_is_a_mismatch(client_for: ClientFor) -> None:
    calls: list[Any] = []
    client = client_for(_app({"idempotency": "optional"}, calls))
    assert _post(client, "milk", "k-2").status_code == 201
    other = _post(client, "eggs", "k-2")
    assert other.status_code == 422
    assert other.json() == {
        "code": "rest_idempotency_mismatch",
        "message": "This Idempotency-Key was used for another request.",
        "data": {"status": 422},
    }
    assert calls == ["milk"]


def test_a_required_key_missing_is_a_400(client_for: ClientFor) -> None:
    calls: list[Any] = []
    client = client_for(_app({"idempotency": "required"}, calls))
    missing = _post(client, "milk")
    assert missing.status_code == 400
    assert missing.json() == {
        "code": "rest_idempotency_key_missing",
        "message": "This request requires an Idempotency-Key header.",
        "data": {"status": 400},
    }
    assert calls == []
    # A GET needs no key: reads are idempotent already.
    assert client.get(THINGS).json() == {"count": 0}
    bad = _post(client, "milk", "x" * 256)
    assert bad.status_code == 400
    assert bad.json()["code"] == "rest_idempotency_key_invalid"


def test_a_failed_first_attempt_frees_its_key(client_for: ClientFor) -> None:
    calls: list[Any] = []
    client = client_for(_app({"idempotency": "required"}, calls))
    failed = _post(client, "boom", "k-3")
    assert failed.status_code == 500
    retried = _post(client, "boom", "k-3")
    assert retried.status_code == 201
    assert "idempotent-replayed" not in retried.headers
    assert _post(client, "boom", "k-3").headers["idempotent-replayed"] == "true"
    assert calls == ["boom", "boom"]


def test_the_same_key_while_the_first_runs_is_a_409(client_for: ClientFor) -> None:
    app = App(HOME, clock=Clock(NOW))
    inner: list[httpx.Response] = []

    def second() -> httpx.Response:
        transport = httpx.WSGITransport(app=app.wsgi)
        with httpx.Client(transport=transport, base_url=HOME) as nested:
            headers = {"Idempotency-Key": "k"}
            return nested.post("/svc-json/guard/v1/slow", json={"a": 1}, headers=headers)

    async def slow(request: Request) -> Response:
        if not inner:  # a second request with the same key arrives while this one runs
            inner.append(await asyncio.to_thread(second))
        return Response({"done": True})

    app.register_rest_route(
        "guard/v1",
        "/slow",
        {
            0: {"methods": "POST", "callback": slow, "permission_callback": public},
            "idempotency": "required",
        },
    )
    client = client_for(app)
    first = client.post("/svc-json/guard/v1/slow", json={"a": 1}, headers={"Idempotency-Key": "k"})
    assert first.status_code == 200
    assert inner[0].status_code == 409
    assert inner[0].json() == {
        "code": "rest_idempotency_in_flight",
        "message": "A request with this Idempotency-Key is still being processed.",
        "data": {"status": 409},
    }


def test_keys_belong_to_their_user(client_for: ClientFor) -> None:
    calls: list[Any] = []
    app = _app({"idempotency": "optional"}, calls)
    token = _basic(app, "ada")
    client = client_for(app)
    assert _post(client, "milk", "shared").status_code == 201
    signed_in = client.post(
        THINGS,
        json={"title": "milk"},
        headers={"Idempotency-Key": "shared", "Authorization": f"Basic {token}"},
    )
    assert signed_in.status_code == 201
    assert "idempotent-replayed" not in signed_in.headers
    assert calls == ["milk", "milk"]


def test_rate_limit_headers_and_429(client_for: ClientFor) -> None:
    clock = Clock(NOW)
    calls: list[Any] = []
    client = client_for(_app({"rate_limit": {"limit": 3, "window": 60}}, calls, clock))
    remaining = []
    for _ in range(3):
        answer = client.get(THINGS)
        assert answer.status_code == 200
        assert answer.headers["ratelimit-policy"] == '"default";q=3;w=60'
        remaining.append(answer.headers["ratelimit"])
    assert remaining == ['"default";r=2;t=50', '"default";r=1;t=50', '"default";r=0;t=50']
    refused = _post(client, "milk")
    assert refused.status_code == 429
    assert refused.json() == {
        "code": "rest_too_many_requests",
        "message": "Too many requests: try again later.",
        "data": {"status": 429},
    }
    assert refused.headers["retry-after"] == "50"
    assert refused.headers["ratelimit"] == '"default";r=0;t=50'
    assert calls == []
    clock.now += 50  # the next window
    again = client.get(THINGS)
    assert again.status_code == 200
    assert again.headers["ratelimit"] == '"default";r=2;t=60'


def test_rate_limit_headers_are_exposed_to_cors(client_for: ClientFor) -> None:
    client = client_for(_app({"rate_limit": {"limit": 3, "window": 60}}, []))
    answer = client.get(THINGS, headers={"Origin": "http://elsewhere.test"})
    exposed = [name.strip() for name in answer.headers["access-control-expose-headers"].split(",")]
    assert {"RateLimit", "RateLimit-Policy", "Retry-After", "Idempotent-Replayed"} <= set(exposed)
    allowed = answer.headers["access-control-allow-headers"]
    assert "Idempotency-Key" in [name.strip() for name in allowed.split(",")]


def test_users_and_addresses_count_apart(client_for: ClientFor) -> None:
    app = _app({"rate_limit": {"limit": 1, "window": 60}}, [])
    token = _basic(app, "bob")
    client = client_for(app)
    assert client.get(THINGS).status_code == 200
    assert client.get(THINGS).status_code == 429
    signed_in = client.get(THINGS, headers={"Authorization": f"Basic {token}"})
    assert signed_in.status_code == 200
    assert signed_in.headers["ratelimit"] == '"default";r=0;t=50'
    assert client.get(THINGS, headers={"Authorization": f"Basic {token}"}).status_code == 429


def test_the_site_wide_filter_gets_the_routes_value(client_for: ClientFor) -> None:
    app = _app({}, [])
    seen: list[Any] = []

    def site_limit(value: Any, request: Request) -> Any:
        seen.append((value, request.route))
        return {"limit": 2, "window": 10, "name": "site"} if value is None else value

    app.hooks.add_filter("svc_rate_limit", site_limit)
    client = client_for(app)
    answer = client.get(THINGS)
    assert answer.headers["ratelimit-policy"] == '"site";q=2;w=10'
    assert answer.headers["ratelimit"] == '"site";r=1;t=10'
    assert seen == [(None, "/guard/v1/things")]


def test_each_batch_request_counts_once(client_for: ClientFor) -> None:
    calls: list[Any] = []
    client = client_for(_app({"rate_limit": {"limit": 2, "window": 60}}, calls))
    requests = [{"path": "/guard/v1/things", "body": {"title": str(n)}} for n in range(3)]
    answer = client.post(BATCH, json={"validation": "require-all-validate", "requests": requests})
    assert answer.status_code == 207
    slots = answer.json()["responses"]
    assert [slot["status"] for slot in slots] == [201, 201, 429]
    assert slots[1]["headers"]["RateLimit"] == '"default";r=0;t=50'
    assert slots[2]["body"]["code"] == "rest_too_many_requests"
    assert calls == ["0", "1"]


def test_the_batch_route_takes_an_idempotency_option(client_for: ClientFor) -> None:
    calls: list[Any] = []
    app = _app({}, calls, batch_options={"idempotency": "required"})
    client = client_for(app)
    batch = {"requests": [{"path": "/guard/v1/things", "body": {"title": "a"}}]}
    assert client.post(BATCH, json=batch).json()["code"] == "rest_idempotency_key_missing"
    first = client.post(BATCH, json=batch, headers={"Idempotency-Key": "b-1"})
    again = client.post(BATCH, json=batch, headers={"Idempotency-Key": "b-1"})
    assert first.status_code == again.status_code == 207
    assert again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    assert calls == ["a"]


@pytest.mark.parametrize(
    "options",
    [
        {"idempotency": "always"},
        {"rate_limit": {"limit": 0, "window": 60}},
        {"rate_limit": {"limit": 5}},
        {"rate_limit": {"limit": 5, "window": True}},
        {"rate_limit": 5},
        {"rate_limit": {"limit": 5, "window": 60, "name": 'a"b'}},
    ],
    ids=["mode", "zero", "no-window", "bool-window", "number", "quote-in-name"],
)
def test_bad_options_are_refused_at_registration(options: dict[str, Any]) -> None:
    app = App(HOME)
    handler = {"callback": lambda request: None, "permission_callback": public}
    with pytest.warns(DoingItWrong, match="idempotency|rate_limit"):
        assert app.register_rest_route("guard/v1", "/bad", {0: handler, **options}) is False
    assert app.rest_get_server().table.get("/guard/v1/bad") is None
    with pytest.raises(RouteDefinitionError):
        app.rest_get_server().register_route("guard/v1", "/guard/v1/bad", {0: handler, **options})


def test_openapi_documents_the_key_the_headers_and_the_answers() -> None:
    from svcrest.rest.openapi import build_openapi

    app = _app({"idempotency": "required", "rate_limit": {"limit": 3, "window": 60}}, [])
    document = build_openapi(app.rest_get_server(), app)
    post = document["paths"]["/guard/v1/things"]["post"]
    assert post["parameters"] == [
        {
            "name": "Idempotency-Key",
            "in": "header",
            "required": True,
            "description": "A unique key of this write (a UUID): a retry with the same key"
            " gets the first answer again instead of running twice (IETF"
            " draft-ietf-httpapi-idempotency-key-header). Kept 24 hours.",
            "schema": {"type": "string", "minLength": 1, "maxLength": 257},
        }
    ]
    responses = post["responses"]
    assert sorted(responses) == ["200", "400", "409", "422", "429", "4XX"]
    assert sorted(responses["200"]["headers"]) == [
        "Idempotent-Replayed",
        "RateLimit",
        "RateLimit-Policy",
    ]
    assert responses["429"]["description"] == "Too many requests (3 requests per 60 s)."
    assert sorted(responses["429"]["headers"]) == ["RateLimit", "RateLimit-Policy", "Retry-After"]
    assert responses["409"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"
    }
    get = document["paths"]["/guard/v1/things"]["get"]
    # Reads take no key: their one parameter is the validator every GET documents.
    assert [parameter["name"] for parameter in get["parameters"]] == ["If-None-Match"]
    assert sorted(get["responses"]) == ["200", "304", "429", "4XX"]
    plain = _app({}, [])
    untouched = build_openapi(plain.rest_get_server(), plain)["paths"]["/guard/v1/things"]
    assert sorted(untouched["post"]["responses"]) == ["200", "400", "4XX"]


# -- whom a request counts for: identities authentication fixed, never header bytes ----------


def _password(app: App, login: str) -> tuple[int, str]:
    """A new user's id and the base64 of ``login:`` one new application password."""
    app.users.password_params = FAST
    user = app.users.create(login, f"{login}-pw")
    password, _ = app.users.create_application_password(user.id, "one")
    return user.id, base64.b64encode(f"{login}:{password}".encode()).decode()


def test_made_up_authorization_in_a_batch_gets_no_fresh_bucket(client_for: ClientFor) -> None:
    """25 batch requests, each with an Authorization of its own, through a limit of 10 a
    minute: 10 pass (each was a fresh bucket, and all 25 passed)."""
    calls: list[Any] = []
    app = _app({"rate_limit": {"limit": 10, "window": 60}}, calls)
    _, token = _password(app, "eve")
    client = client_for(app)
    requests = [
        {
            "path": "/guard/v1/things",
            "body": {"title": str(n)},
            "headers": {"Authorization": "Basic " + base64.b64encode(f"x{n}:y".encode()).decode()},
        }
        for n in range(25)
    ]
    answer = client.post(
        BATCH, json={"requests": requests}, headers={"Authorization": f"Basic {token}"}
    )
    assert answer.status_code == 207
    statuses = [slot["status"] for slot in answer.json()["responses"]]
    assert statuses == [201] * 10 + [429] * 15
    assert len(calls) == 10
    # The batch's user has no request left on the route, outside a batch too.
    alone = client.get(THINGS, headers={"Authorization": f"Basic {token}"})
    assert alone.status_code == 429


@pytest.mark.parametrize(
    "spellings",
    [["Basic {t}", "basic {t}", "BASIC  {t}", " Basic {t} ", "bAsIc {t}  "]],
    ids=["case-and-spaces"],
)
def test_every_spelling_of_one_password_shares_its_bucket(
    client_for: ClientFor, spellings: list[str]
) -> None:
    app = _app({"rate_limit": {"limit": 3, "window": 60}}, [])
    _, token = _password(app, "ann")
    client = client_for(app)
    statuses = []
    for spelling in spellings:
        header = spelling.format(t=token)
        answer = client.get(THINGS, headers={"Authorization": header})
        statuses.append(answer.status_code)
    assert statuses == [200, 200, 200, 429, 429]


def test_a_users_passwords_share_the_users_limit(client_for: ClientFor) -> None:
    """Thirty passwords of one user through a limit of 3: 3 pass (each password was a
    bucket of its own: 90 passed)."""
    app = _app({"rate_limit": {"limit": 3, "window": 60}}, [])
    user_id, first = _password(app, "max")
    tokens = [first]
    for n in range(29):
        password, _ = app.users.create_application_password(user_id, f"app {n}")
        tokens.append(base64.b64encode(f"max:{password}".encode()).decode())
    client = client_for(app)
    statuses = [
        client.get(THINGS, headers={"Authorization": f"Basic {token}"}).status_code
        for token in tokens
    ]
    assert statuses == [200] * 3 + [429] * 27


def test_per_application_password_counts_each_password_apart(client_for: ClientFor) -> None:
    limit = {"limit": 1, "window": 60, "per": "application_password"}
    app = _app({"rate_limit": limit}, [])
    user_id, first = _password(app, "kim")
    password, _ = app.users.create_application_password(user_id, "two")
    second = base64.b64encode(f"kim:{password}".encode()).decode()
    client = client_for(app)
    for token in (first, second):
        assert client.get(THINGS, headers={"Authorization": f"Basic {token}"}).status_code == 200
        again = client.get(THINGS, headers={"Authorization": f"basic  {token}"})
        assert again.status_code == 429
    bad: dict[Any, Any] = {
        0: {"callback": lambda request: None, "permission_callback": public},
        "rate_limit": {"limit": 1, "window": 60, "per": "header"},
    }
    with pytest.warns(DoingItWrong, match="rate_limit"):
        assert app.register_rest_route("guard/v1", "/bad-per", bad) is False


def test_idempotency_keys_belong_to_the_password_not_its_spelling(
    client_for: ClientFor,
) -> None:
    calls: list[Any] = []
    app = _app({"idempotency": "optional"}, calls)
    _, token = _password(app, "ida")
    client = client_for(app)
    first = client.post(
        THINGS,
        json={"title": "milk"},
        headers={"Idempotency-Key": "k", "Authorization": f"Basic {token}"},
    )
    again = client.post(
        THINGS,
        json={"title": "milk"},
        headers={"Idempotency-Key": "k", "Authorization": f"basic   {token}"},
    )
    assert first.status_code == again.status_code == 201
    assert again.headers["idempotent-replayed"] == "true"
    assert calls == ["milk"]
    # In a batch, a made-up Authorization does not make the key someone else's.
    batch = {
        "requests": [
            {
                "path": "/guard/v1/things",
                "body": {"title": "eggs"},
                "headers": {"Idempotency-Key": "b", "Authorization": f"Basic {n}"},
            }
            for n in ("x", "y")
        ]
    }
    answer = client.post(BATCH, json=batch, headers={"Authorization": f"Basic {token}"})
    slots = answer.json()["responses"]
    assert [slot["status"] for slot in slots] == [201, 201]
    assert slots[1]["headers"]["Idempotent-Replayed"] == "true"
    assert calls == ["milk", "eggs"]


# -- what a key's request is: body, query string and content type -----------------------------

MISMATCH = {
    "code": "rest_idempotency_mismatch",
    "message": "This Idempotency-Key was used for another request.",
    "data": {"status": 422},
}


def test_a_batch_requests_body_is_part_of_its_keys_request(client_for: ClientFor) -> None:
    calls: list[Any] = []
    client = client_for(_app({"idempotency": "optional"}, calls))

    def batch(title: str) -> dict[str, Any]:
        item = {"path": "/guard/v1/things", "body": {"title": title}}
        item["headers"] = {"Idempotency-Key": "same"}
        return {"requests": [item]}

    first = client.post(BATCH, json=batch("milk")).json()["responses"][0]
    assert first["status"] == 201
    again = client.post(BATCH, json=batch("milk")).json()["responses"][0]
    assert again["headers"]["Idempotent-Replayed"] == "true"
    other = client.post(BATCH, json=batch("eggs")).json()["responses"][0]
    assert (other["status"], other["body"]) == (422, MISMATCH)
    assert calls == ["milk"]


def test_the_query_string_is_part_of_a_keys_request(client_for: ClientFor) -> None:
    calls: list[Any] = []
    client = client_for(_app({"idempotency": "optional"}, calls))
    body, key = {"title": "milk"}, {"Idempotency-Key": "q"}
    assert client.post(THINGS + "?title=a", json=body, headers=key).status_code == 201
    replay = client.post(THINGS + "?title=a", json=body, headers=key)
    assert replay.headers["idempotent-replayed"] == "true"
    other = client.post(THINGS + "?title=b", json=body, headers=key)
    assert (other.status_code, other.json()) == (422, MISMATCH)
    # In a batch request's path too.
    item = {"path": "/guard/v1/things?x=1", "headers": {"Idempotency-Key": "bq"}}
    assert client.post(BATCH, json={"requests": [item]}).json()["responses"][0]["status"] == 201
    item["path"] = "/guard/v1/things?x=2"
    slot = client.post(BATCH, json={"requests": [item]}).json()["responses"][0]
    assert slot["status"] == 422
    assert calls == ["milk", None]


def test_the_content_type_is_part_of_a_keys_request(client_for: ClientFor) -> None:
    calls: list[Any] = []
    client = client_for(_app({"idempotency": "optional"}, calls))
    plain = {"Idempotency-Key": "ct", "Content-Type": "text/plain"}
    first = client.post(THINGS, content=b"title=milk", headers=plain)
    assert first.json() == {"id": 1, "title": None}
    form = {"Idempotency-Key": "ct", "Content-Type": "application/x-www-form-urlencoded"}
    other = client.post(THINGS, content=b"title=milk", headers=form)
    assert (other.status_code, other.json()) == (422, MISMATCH)
    assert calls == [None]


# -- refused requests keep no key, and an owner's keys are bounded ----------------------------


def _key_rows(app: App) -> int:
    app.request_guards  # noqa: B018 - the table is made on first use
    with app.store.read() as conn:
        return int(conn.execute("SELECT COUNT(*) FROM idempotency_keys").fetchone()[0])


def test_a_refused_request_reserves_no_key(client_for: ClientFor) -> None:
    """Keys were reserved before the permission check: an anonymous client stored a row per
    key, kept 24 hours."""
    calls: list[Any] = []
    app = App(HOME, clock=Clock(NOW))
    app.register_rest_route(
        "guard/v1",
        "/private",
        {
            0: {
                "methods": "POST",
                "callback": lambda request: calls.append(1),
                "permission_callback": lambda request: request.user.can("edit_notes"),
                "args": {"n": {"type": "integer"}},
            },
            "idempotency": "required",
        },
    )
    client = client_for(app)
    for n in range(20):
        refused = client.post(
            "/svc-json/guard/v1/private", json={"n": n}, headers={"Idempotency-Key": f"k{n}"}
        )
        assert refused.status_code == 401
        assert refused.json()["code"] == "rest_forbidden"
        invalid = client.post(
            "/svc-json/guard/v1/private", json={"n": "x"}, headers={"Idempotency-Key": f"v{n}"}
        )
        assert invalid.status_code == 400
    # A missing key is not asked for before the permission is.
    assert client.post("/svc-json/guard/v1/private", json={}).status_code == 401
    assert _key_rows(app) == 0
    assert calls == []


def test_an_anonymous_clients_keys_are_bounded(client_for: ClientFor) -> None:
    calls: list[Any] = []
    app = _app({"idempotency": "optional"}, calls)
    app.request_guards.keys_per_owner = 5
    client = client_for(app)
    for n in range(12):
        assert _post(client, f"t{n}", f"k{n}").status_code == 201
    assert _key_rows(app) == 5
    # The newest five replay; the oldest were forgotten, so k0 runs again.
    assert _post(client, "t11", "k11").headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in _post(client, "t0", "k0").headers
    assert _key_rows(app) == 5
    assert len(calls) == 13


def test_only_write_handlers_of_an_idempotent_route_are_wrapped() -> None:
    """A read of a route with ``idempotency`` stays a plain call (no coroutine a GET)."""
    import inspect

    app = _app({"idempotency": "optional"}, [])
    entry = app.rest_get_server().table.get("/guard/v1/things")
    assert entry is not None
    post, get = entry.prepared
    assert inspect.iscoroutinefunction(post.callback)
    assert not inspect.iscoroutinefunction(get.callback)
    assert get.callback is not None and get.callback(Request("GET", "/guard/v1/things")) == {
        "count": 0
    }
