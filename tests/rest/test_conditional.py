"""ETag, If-None-Match (304), If-Match (412), require_if_match (428) and content codings, on
both adapters, in batches and on the demo's notes (docs/guides/http-semantics.md)."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Callable, Iterator
from hashlib import blake2b
from typing import Any

import brotli
import pytest
import zstandard

from svcrest import App, DoingItWrong, Request, Response, public
from svcrest.auth.passwords import ScryptParams
from svcrest.demo import register
from tests.conftest import SiteClient, raw_request

ClientFor = Callable[..., SiteClient]
HOME = "http://127.0.0.1:8000"
THING = "/svc-json/t/v1/thing"
PLAIN = "/svc-json/t/v1/plain"
BIG = "/svc-json/t/v1/big"
NOTES = "/svc-json/demo/v1/notes"
BATCH = "/svc-json/batch/v1"
#: A body of more than 1 KiB (compressible).
BIG_DATA = {"text": "svcrest " * 300}


def _tag(body: bytes) -> str:
    return '"' + blake2b(body, digest_size=16).hexdigest() + '"'


class Thing:
    """A versioned resource with an etag_callback, counting callback calls."""

    def __init__(self) -> None:
        self.version = 1
        self.calls = 0
        self.versions_read = 0

    def etag(self, request: Request) -> str | None:
        self.versions_read += 1
        return None if self.version == 0 else f"v{self.version}"

    def get(self, request: Request) -> dict[str, Any]:
        self.calls += 1
        return {"version": self.version}

    def put(self, request: Request) -> dict[str, Any]:
        self.calls += 1
        self.version += 1
        return {"version": self.version}

    def delete(self, request: Request) -> dict[str, Any]:
        self.calls += 1
        return {"deleted": True}


def _app(thing: Thing, **options: Any) -> App:
    app = App(HOME)
    app.register_rest_route(
        "t/v1",
        "/thing",
        {
            0: {"methods": "GET", "callback": thing.get, "permission_callback": public},
            1: {"methods": "PUT, PATCH", "callback": thing.put, "permission_callback": public},
            2: {"methods": "DELETE", "callback": thing.delete, "permission_callback": public},
            "etag_callback": thing.etag,
            **options,
        },
    )
    app.register_rest_route(
        "t/v1",
        "/plain",
        {
            "methods": "GET, POST",
            "callback": lambda request: {"a": 1, "b": "two"},
            "permission_callback": public,
        },
    )
    app.register_rest_route(
        "t/v1",
        "/big",
        {
            "methods": "GET, POST",
            "callback": lambda request: BIG_DATA,
            "permission_callback": public,
        },
    )
    return app


@pytest.fixture
def thing() -> Thing:
    return Thing()


# -- ETag on every 200 GET / HEAD -----------------------------------------------------------


def test_a_get_carries_the_strong_etag_of_its_exact_body(client_for: ClientFor) -> None:
    client = client_for(_app(Thing()))
    answer = client.get(PLAIN)
    assert answer.status_code == 200
    assert answer.content == b'{"a":1,"b":"two"}'
    assert answer.headers["etag"] == _tag(b'{"a":1,"b":"two"}')
    head = client.request("HEAD", PLAIN)
    assert (head.status_code, head.content, head.headers["etag"]) == (
        200,
        b"",
        _tag(b'{"a":1,"b":"two"}'),
    )
    # After _fields: the tag of the bytes sent.
    fields = client.get(PLAIN + "?_fields=a")
    assert fields.content == b'{"a":1}'
    assert fields.headers["etag"] == _tag(b'{"a":1}')


@pytest.mark.parametrize(
    "header",
    [
        pytest.param("{tag}", id="exact"),
        pytest.param("W/{tag}", id="weak"),
        pytest.param('"other", {tag}', id="list"),
        pytest.param("*", id="star"),
    ],
)
def test_if_none_match_naming_the_tag_answers_304(client_for: ClientFor, header: str) -> None:
    client = client_for(_app(Thing()))
    tag = _tag(b'{"a":1,"b":"two"}')
    answer = client.get(PLAIN, headers={"If-None-Match": header.format(tag=tag)})
    assert answer.status_code == 304
    assert answer.content == b""
    assert answer.headers["etag"] == tag
    assert answer.headers["vary"] == "Origin"  # as its 200 (too short to be compressed)
    assert "content-length" not in answer.headers
    assert "cache-control" not in answer.headers  # anonymous: as its 200


def test_a_304_for_a_logged_in_user_keeps_no_store(client_for: ClientFor) -> None:
    app = _app(Thing())
    app.users.password_params = ScryptParams(n=16, r=1, p=1)
    app.users.create("ed", "pw", roles=("editor",))
    client = client_for(app)
    assert client.post("/login", data={"log": "ed", "pwd": "pw"}).status_code == 303
    nonce = {"X-SVC-Nonce": client.get("/auth/nonce").json()["nonce"]}
    first = client.get(PLAIN, headers=nonce)
    again = client.get(PLAIN, headers={**nonce, "If-None-Match": first.headers["etag"]})
    assert (again.status_code, again.headers["cache-control"]) == (304, "no-store")
    assert again.headers["etag"] == first.headers["etag"]


def test_if_none_match_naming_another_tag_answers_200(client_for: ClientFor) -> None:
    answer = client_for(_app(Thing())).get(PLAIN, headers={"If-None-Match": '"stale", W/"x"'})
    assert answer.status_code == 200
    assert answer.content == b'{"a":1,"b":"two"}'


def test_envelope_posts_and_errors_carry_no_etag(client_for: ClientFor) -> None:
    client = client_for(_app(Thing()))
    tag = _tag(b'{"a":1,"b":"two"}')
    envelope = client.get(PLAIN + "?_envelope", headers={"If-None-Match": tag})
    assert envelope.status_code == 200
    assert envelope.json()["status"] == 200
    assert "etag" not in envelope.headers
    posted = client.post(PLAIN)
    assert (posted.status_code, "etag" in posted.headers) == (200, False)
    missing = client.get("/svc-json/t/v1/nope", headers={"If-None-Match": "*"})
    assert (missing.status_code, "etag" in missing.headers) == (404, False)


# -- etag_callback -----------------------------------------------------------------------------


def test_the_etag_callback_value_is_the_quoted_etag(client_for: ClientFor, thing: Thing) -> None:
    client = client_for(_app(thing))
    answer = client.get(THING)
    assert (answer.status_code, answer.headers["etag"], answer.json()) == (
        200,
        '"v1"',
        {"version": 1},
    )
    assert thing.calls == 1


def test_a_matching_etag_callback_answers_304_without_the_callback(
    client_for: ClientFor, thing: Thing
) -> None:
    client = client_for(_app(thing))
    answer = client.get(THING, headers={"If-None-Match": '"v1"'})
    assert (answer.status_code, answer.content, answer.headers["etag"]) == (304, b"", '"v1"')
    assert (thing.calls, thing.versions_read) == (0, 1)
    head = client.request("HEAD", THING, headers={"If-None-Match": 'W/"v1"'})
    assert (head.status_code, thing.calls) == (304, 0)


def test_an_envelope_never_answers_304(client_for: ClientFor, thing: Thing) -> None:
    answer = client_for(_app(thing)).get(THING + "?_envelope", headers={"If-None-Match": '"v1"'})
    assert answer.status_code == 200
    assert "etag" not in answer.headers
    assert answer.json() == {
        "body": {"version": 1},
        "status": 200,
        "headers": {"ETag": '"v1"', "Allow": "GET, PUT, PATCH, DELETE"},
    }
    assert thing.calls == 1


def test_an_etag_callback_answering_none_leaves_the_body_hash(
    client_for: ClientFor, thing: Thing
) -> None:
    thing.version = 0
    answer = client_for(_app(thing)).get(THING, headers={"If-None-Match": '"v0"'})
    assert answer.status_code == 200
    assert answer.headers["etag"] == _tag(b'{"version":0}')


def test_an_async_etag_callback(client_for: ClientFor) -> None:
    app = App(HOME)

    async def version(request: Request) -> str:
        await asyncio.sleep(0)
        return "a1"

    app.register_rest_route(
        "t/v1",
        "/async",
        {
            "methods": "GET",
            "callback": lambda request: {"ok": True},
            "permission_callback": public,
            "etag_callback": version,
        },
    )
    client = client_for(app)
    assert client.get("/svc-json/t/v1/async").headers["etag"] == '"a1"'
    assert client.get("/svc-json/t/v1/async", headers={"If-None-Match": '"a1"'}).status_code == 304


def test_the_etag_callback_runs_after_the_permission_check(client_for: ClientFor) -> None:
    app = App(HOME)
    read: list[str] = []

    def version(request: Request) -> str:
        read.append("read")
        return "v1"

    app.register_rest_route(
        "t/v1",
        "/private",
        {
            "methods": "GET",
            "callback": lambda request: {"secret": 1},
            "permission_callback": lambda request: False,
            "etag_callback": version,
        },
    )
    answer = client_for(app).get("/svc-json/t/v1/private", headers={"If-None-Match": '"v1"'})
    assert (answer.status_code, answer.json()["code"], read) == (401, "rest_forbidden", [])


def test_a_version_that_is_not_a_token_answers_500(client_for: ClientFor) -> None:
    app = App(HOME)
    app.register_rest_route(
        "t/v1",
        "/bad",
        {
            "methods": "GET",
            "callback": lambda request: {},
            "permission_callback": public,
            "etag_callback": lambda request: 'v"1',
        },
    )
    answer = client_for(app).get("/svc-json/t/v1/bad")
    assert (answer.status_code, answer.json()["code"]) == (500, "rest_internal_error")


def test_an_etag_callback_that_cannot_be_called_is_refused_at_registration() -> None:
    app = App(HOME)
    with pytest.warns(DoingItWrong, match="the route option 'etag_callback' must be callable"):
        registered = app.register_rest_route(
            "t/v1",
            "/x",
            {
                "methods": "GET",
                "callback": lambda request: {},
                "permission_callback": public,
                "etag_callback": "v1",
            },
        )
    assert registered is False
    assert "/t/v1/x" not in app.rest_get_server().get_routes()


# -- If-Match / 412 / 428 --------------------------------------------------------------------


def test_a_stale_if_match_answers_412_before_the_callback(
    client_for: ClientFor, thing: Thing
) -> None:
    client = client_for(_app(thing))
    answer = client.request("PUT", THING, headers={"If-Match": '"v0"'})
    assert answer.status_code == 412
    assert answer.json() == {
        "code": "rest_precondition_failed",
        "message": "The resource has changed since it was read (If-Match does not match).",
        "data": {"status": 412},
    }
    assert answer.headers["etag"] == '"v1"'
    assert answer.headers["cache-control"] == "no-store"
    assert thing.calls == 0


@pytest.mark.parametrize("header", ['"v1"', '"x", "v1"', "*", '"v1-gzip"'])
def test_a_matching_if_match_runs_the_write_and_tags_the_new_version(
    client_for: ClientFor, thing: Thing, header: str
) -> None:
    answer = client_for(_app(thing)).request("PATCH", THING, headers={"If-Match": header})
    assert (answer.status_code, answer.json(), answer.headers["etag"]) == (
        200,
        {"version": 2},
        '"v2"',
    )


def test_a_weak_if_match_never_matches(client_for: ClientFor, thing: Thing) -> None:
    answer = client_for(_app(thing)).request("PUT", THING, headers={"If-Match": 'W/"v1"'})
    assert answer.status_code == 412


def test_if_match_on_a_resource_without_a_version_answers_412(
    client_for: ClientFor, thing: Thing
) -> None:
    thing.version = 0
    answer = client_for(_app(thing)).request("DELETE", THING, headers={"If-Match": "*"})
    assert (answer.status_code, "etag" in answer.headers, thing.calls) == (412, False, 0)


def test_a_delete_with_a_stale_if_match_answers_412(client_for: ClientFor, thing: Thing) -> None:
    client = client_for(_app(thing))
    assert client.request("DELETE", THING, headers={"If-Match": '"v9"'}).status_code == 412
    ok = client.request("DELETE", THING, headers={"If-Match": '"v1"'})
    assert (ok.status_code, ok.json(), thing.calls) == (200, {"deleted": True}, 1)


def test_require_if_match_answers_428_without_one(client_for: ClientFor, thing: Thing) -> None:
    client = client_for(_app(thing, require_if_match=True))
    for method in ("PUT", "PATCH", "DELETE"):
        answer = client.request(method, THING)
        assert answer.status_code == 428
        assert answer.json() == {
            "code": "rest_precondition_required",
            "message": "This request must be conditional: send If-Match with the ETag you read.",
            "data": {"status": 428},
        }
    assert thing.calls == 0
    assert client.get(THING).status_code == 200  # reads need no If-Match
    assert client.request("PUT", THING, headers={"If-Match": '"v1"'}).status_code == 200


def test_without_require_if_match_a_write_without_one_runs(
    client_for: ClientFor, thing: Thing
) -> None:
    answer = client_for(_app(thing)).request("PUT", THING)
    assert (answer.status_code, answer.headers["etag"]) == (200, '"v2"')


# -- content codings ----------------------------------------------------------------------------


def _raw(
    app: App, adapter: str, method: str, path: str, **headers: str
) -> tuple[int, dict[str, list[str]], bytes]:
    lines = [(name.replace("_", "-").encode(), value.encode()) for name, value in headers.items()]
    status, answer_lines, body = raw_request(app, adapter, method, path, lines)
    found: dict[str, list[str]] = {}
    for name, value in answer_lines:
        found.setdefault(name.lower(), []).append(value)
    return status, found, body


IDENTITY = b'{"text":"' + b"svcrest " * 300 + b'"}'
DECODERS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.decompress,
    "br": brotli.decompress,
    "zstd": lambda body: zstandard.ZstdDecompressor().decompress(body),
}


@pytest.mark.parametrize(
    ("accept", "coding"),
    [
        ("gzip", "gzip"),
        ("gzip, deflate, br, zstd", "br"),
        ("zstd", "zstd"),
        ("br;q=0.5, gzip", "gzip"),
        ("*", "br"),
        ("gzip;q=0, identity", None),
        ("deflate", None),
    ],
)
def test_a_large_answer_is_compressed_as_the_client_accepts(
    adapter: str, accept: str, coding: str | None
) -> None:
    app = _app(Thing())
    status, headers, body = _raw(app, adapter, "GET", BIG, accept_encoding=accept)
    assert status == 200
    assert headers["vary"] == ["Origin", "Accept-Encoding"]
    if coding is None:
        assert (body, "content-encoding" in headers) == (IDENTITY, False)
        assert headers["etag"] == [_tag(IDENTITY)]
        return
    assert headers["content-encoding"] == [coding]
    assert DECODERS[coding](body) == IDENTITY
    assert headers["content-length"] == [str(len(body))]
    assert headers["etag"] == [_tag(IDENTITY)[:-1] + f'-{coding}"']


def test_a_coded_answer_304s_on_either_tag(adapter: str) -> None:
    app = _app(Thing())
    gzip_tag = _tag(IDENTITY)[:-1] + '-gzip"'
    for sent in (_tag(IDENTITY), gzip_tag):
        status, headers, body = _raw(
            app, adapter, "GET", BIG, accept_encoding="gzip", if_none_match=sent
        )
        assert (status, body, headers["etag"]) == (304, b"", [gzip_tag])
        assert headers["vary"] == ["Origin", "Accept-Encoding"]
    status, headers, _ = _raw(app, adapter, "GET", BIG, if_none_match=gzip_tag)
    assert (status, headers["etag"]) == (304, [_tag(IDENTITY)])


def test_a_head_announces_the_coded_length(adapter: str) -> None:
    app = _app(Thing())
    _, got, body = _raw(app, adapter, "GET", BIG, accept_encoding="gzip")
    status, headers, head_body = _raw(app, adapter, "HEAD", BIG, accept_encoding="gzip")
    assert (status, head_body, headers["content-length"]) == (200, b"", [str(len(body))])
    assert headers["etag"] == got["etag"]


def test_other_statuses_are_compressed_without_an_etag(adapter: str) -> None:
    status, headers, body = _raw(_app(Thing()), adapter, "POST", BIG, accept_encoding="gzip")
    assert (status, headers["content-encoding"], "etag" in headers) == (200, ["gzip"], False)
    assert gzip.decompress(body) == IDENTITY


def test_a_small_answer_is_sent_as_it_is(adapter: str) -> None:
    status, headers, body = _raw(_app(Thing()), adapter, "GET", PLAIN, accept_encoding="gzip")
    assert (status, body, "content-encoding" in headers) == (200, b'{"a":1,"b":"two"}', False)
    assert headers["vary"] == ["Origin"]


def _secret_app(answer: Callable[[Request], Any]) -> App:
    app = App(HOME)
    app.register_rest_route(
        "t/v1", "/secret", {"methods": "GET", "callback": answer, "permission_callback": public}
    )
    return app


def _with_cookie(request: Request) -> Response:
    response = Response(BIG_DATA)
    response.header("Set-Cookie", "a=b; HttpOnly")
    return response


def _with_nonce_header(request: Request) -> Response:
    response = Response(BIG_DATA)
    response.header("X-SVC-Nonce", "abc123")
    return response


def _with_wp_nonce_header(request: Request) -> Response:
    response = Response(BIG_DATA)
    response.header("X-WP-Nonce", "abc123")
    return response


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(lambda request: {**BIG_DATA, "nonce": "abc123"}, id="nonce-in-body"),
        pytest.param(lambda request: {**BIG_DATA, "Nonce": "abc123"}, id="Nonce-in-body"),
        pytest.param(lambda request: {**BIG_DATA, "wpNONCE": "abc123"}, id="NONCE-in-body"),
        pytest.param(_with_cookie, id="set-cookie"),
        pytest.param(_with_nonce_header, id="nonce-header"),
        pytest.param(_with_wp_nonce_header, id="wp-nonce-header"),
    ],
)
def test_an_answer_with_a_secret_is_never_compressed(
    adapter: str, answer: Callable[[Request], Any]
) -> None:
    status, headers, body = _raw(
        _secret_app(answer), adapter, "GET", "/svc-json/t/v1/secret", accept_encoding="gzip, br"
    )
    assert status == 200
    assert "content-encoding" not in headers
    assert headers["vary"] == ["Origin"]
    assert headers["etag"] == [_tag(body)]


# -- the demo's notes and batches -------------------------------------------------------------


@pytest.fixture
def demo(store_location: str | None) -> Iterator[App]:
    app = App(HOME, clock=lambda: 1_700_000_000, store=store_location)
    register(app)
    app.users.password_params = ScryptParams(n=16, r=1, p=1)
    app.users.create("ed", "pw", roles=("editor",))
    yield app
    app.store.close()


def _editor(client: SiteClient) -> dict[str, str]:
    assert client.post("/login", data={"log": "ed", "pwd": "pw"}).status_code == 303
    return {"X-SVC-Nonce": client.get("/auth/nonce").json()["nonce"]}


def test_the_notes_etag_is_their_revision(demo: App, client_for: ClientFor) -> None:
    client = client_for(demo)
    headers = _editor(client)
    created = client.post(NOTES, json={"title": "One"}, headers=headers)
    assert created.status_code == 201
    read = client.get(NOTES + "/1", headers=headers)
    assert read.headers["etag"] == '"1-1"'
    assert (
        client.get(NOTES + "/1", headers={**headers, "If-None-Match": '"1-1"'}).status_code == 304
    )
    stale = client.request(
        "PATCH", NOTES + "/1", json={"title": "Two"}, headers={**headers, "If-Match": '"1-0"'}
    )
    assert (stale.status_code, stale.json()["code"], stale.headers["etag"]) == (
        412,
        "rest_precondition_failed",
        '"1-1"',
    )
    assert client.get(NOTES + "/1").json()["title"] == "One"
    changed = client.request(
        "PATCH", NOTES + "/1", json={"title": "Two"}, headers={**headers, "If-Match": '"1-1"'}
    )
    assert (changed.status_code, changed.headers["etag"]) == (200, '"1-2"')
    again = client.get(NOTES + "/1", headers={"If-None-Match": '"1-1"'})
    assert (again.status_code, again.json()["title"], again.headers["etag"]) == (
        200,
        "Two",
        '"1-2"',
    )
    deleted = client.request("DELETE", NOTES + "/1", headers={**headers, "If-Match": '"1-1"'})
    assert deleted.status_code == 412


def test_batch_requests_honour_their_own_if_match(demo: App, client_for: ClientFor) -> None:
    client = client_for(demo)
    headers = _editor(client)
    client.post(NOTES, json={"title": "One"}, headers=headers)
    body = {
        "requests": [
            {
                "method": "PATCH",
                "path": "/demo/v1/notes/1",
                "body": {"title": "Stale"},
                "headers": {"If-Match": '"1-9"'},
            },
            {
                "method": "PATCH",
                "path": "/demo/v1/notes/1",
                "body": {"title": "Fresh"},
                "headers": {"If-Match": '"1-1"'},
            },
        ]
    }
    answer = client.post(BATCH, json=body, headers=headers)
    assert answer.status_code == 207
    stale, fresh = answer.json()["responses"]
    assert stale["status"] == 412
    assert stale["body"]["code"] == "rest_precondition_failed"
    assert stale["headers"]["ETag"] == '"1-1"'
    assert (fresh["status"], fresh["headers"]["ETag"]) == (200, '"1-2"')
    assert client.get(NOTES + "/1").json()["title"] == "Fresh"


def test_a_412_rolls_an_atomic_batch_back(demo: App, client_for: ClientFor) -> None:
    client = client_for(demo)
    headers = _editor(client)
    client.post(NOTES, json={"title": "One"}, headers=headers)
    body = {
        "validation": "atomic",
        "requests": [
            {"method": "PATCH", "path": "/demo/v1/notes/1", "body": {"title": "Changed"}},
            {"path": "/demo/v1/notes", "body": {"title": "Added"}},
            {
                "method": "DELETE",
                "path": "/demo/v1/notes/1",
                "headers": {"If-Match": '"1-1"'},  # stale: the first request made 1-2
            },
        ],
    }
    answer = client.post(BATCH, json=body, headers=headers)
    assert answer.status_code == 207
    data = answer.json()
    assert data["failed"] == "atomic"
    assert [slot["status"] for slot in data["responses"]] == [200, 201, 412]
    assert [note["title"] for note in client.get(NOTES).json()] == ["One"]
    assert client.get(NOTES + "/1").headers["etag"] == '"1-1"'
