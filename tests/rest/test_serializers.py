"""Response formats chosen by ``Accept`` (docs/guides/response-formats.md): JSON alone by
default, MessagePack once registered, on both adapters."""

from __future__ import annotations

import gzip
import logging
from collections.abc import Callable
from hashlib import blake2b
from typing import Any

import msgpack
import orjson
import pytest

from svcrest import App, Request, Response, Serializer, msgpack_serializer, public
from svcrest.http.answer_json import UnencodableValue
from tests.conftest import SiteClient, raw_request

ClientFor = Callable[..., SiteClient]
HOME = "http://127.0.0.1:8000"
PLAIN = "/svc-json/t/v1/plain"
THING = "/svc-json/t/v1/thing"
BIG = "/svc-json/t/v1/big"
BATCH = "/svc-json/batch/v1"
PLAIN_JSON = b'{"a":1,"b":"two"}'
PLAIN_MSGPACK = b"\x82\xa1a\x01\xa1b\xa3two"
BIG_DATA = {"text": "svcrest " * 300}
MSGPACK = [(b"accept", b"application/msgpack")]
#: The REST header lines every answer of these apps starts with (before its own lines).
BLOCK = [
    ("X-Content-Type-Options", "nosniff"),
    ("X-Robots-Tag", "noindex"),
    ("Link", '<http://127.0.0.1:8000/svc-json/>; rel="https://api.w.org/"'),
    ("Vary", "Origin"),
    (
        "Access-Control-Expose-Headers",
        "X-SVC-Total, X-SVC-TotalPages, Link, ETag, RateLimit, RateLimit-Policy, Retry-After,"
        " Idempotent-Replayed, X-Request-Id",
    ),
    (
        "Access-Control-Allow-Headers",
        "Authorization, X-SVC-Nonce, Content-Disposition, Content-MD5, Content-Type,"
        " If-Match, If-None-Match, Idempotency-Key",
    ),
]
JSON_LINE = ("Content-Type", "application/json; charset=UTF-8")
MSGPACK_LINES = [("Content-Type", "application/msgpack"), ("Vary", "Accept")]
NEGOTIATED_JSON = [JSON_LINE, ("Vary", "Accept")]


def _tag(body: bytes) -> str:
    return '"' + blake2b(body, digest_size=16).hexdigest() + '"'


def _app(*, formats: bool = True, **options: Any) -> App:
    app = App(HOME, **options)
    version = {"v": 1}

    def put(request: Request) -> dict[str, Any]:
        version["v"] += 1
        return {"version": version["v"]}

    def typed(request: Request) -> Response:
        return Response("<p>hi</p>", 200, {"Content-Type": "text/html"})

    app.register_rest_route(
        "t/v1",
        "/plain",
        {
            "methods": "GET, POST",
            "callback": lambda request: {"a": 1, "b": "two"},
            "permission_callback": public,
            "allow_batch": {"v1": True},
        },
    )
    app.register_rest_route(
        "t/v1",
        "/thing",
        {
            0: {
                "methods": "GET",
                "callback": lambda request: {"version": version["v"]},
                "permission_callback": public,
            },
            1: {"methods": "PUT", "callback": put, "permission_callback": public},
            "etag_callback": lambda request: f"v{version['v']}",
        },
    )
    app.register_rest_route(
        "t/v1",
        "/big",
        {"methods": "GET", "callback": lambda request: BIG_DATA, "permission_callback": public},
    )
    app.register_rest_route(
        "t/v1",
        "/bytes",
        {
            "methods": "GET",
            "callback": lambda request: {"x": object()},
            "permission_callback": public,
        },
    )
    app.register_rest_route(
        "t/v1", "/typed", {"methods": "GET", "callback": typed, "permission_callback": public}
    )
    app.register_rest_route(
        "t/v1",
        "/huge",
        {"methods": "GET", "callback": lambda request: {"n": 2**70}, "permission_callback": public},
    )
    if formats:
        app.add_serializer(msgpack_serializer())
    return app


def _raw(
    app: App, adapter: str, method: str, path: str, headers: list[tuple[bytes, bytes]]
) -> tuple[int, list[tuple[str, str]], bytes]:
    """An answer's status, header lines (without X-Request-Id and Content-Length) and body."""
    status, lines, body = raw_request(app, adapter, method, path, headers)
    kept = [line for line in lines if line[0] not in ("X-Request-Id", "Content-Length")]
    return status, kept, body


def _header(lines: list[tuple[str, str]], name: str) -> list[str]:
    return [value for key, value in lines if key.lower() == name.lower()]


# -- JSON alone ------------------------------------------------------------------------------


def test_a_site_without_other_formats_answers_json_whatever_accept_says(adapter: str) -> None:
    app = _app(formats=False)
    for accept in ([], MSGPACK):
        status, lines, body = _raw(app, adapter, "GET", PLAIN, accept)
        assert (status, body) == (200, PLAIN_JSON)
        assert lines == [
            JSON_LINE,
            *BLOCK,
            ("Allow", "GET, POST"),
            ("ETag", _tag(PLAIN_JSON)),
        ]


def test_one_site_with_formats_leaves_another_without_them_unchanged(adapter: str) -> None:
    """The header memos are shared by every site of a process: keyed on the format."""
    _raw(_app(), adapter, "GET", PLAIN, [])
    _raw(_app(), adapter, "GET", PLAIN, MSGPACK)
    _, lines, body = _raw(_app(formats=False), adapter, "GET", PLAIN, [])
    assert body == PLAIN_JSON
    assert _header(lines, "Vary") == ["Origin"]
    assert _header(lines, "Content-Type") == ["application/json; charset=UTF-8"]


# -- the choice by Accept --------------------------------------------------------------------


def test_a_msgpack_answer(adapter: str) -> None:
    status, lines, body = _raw(_app(), adapter, "GET", PLAIN, MSGPACK)
    assert (status, body) == (200, PLAIN_MSGPACK)
    assert msgpack.unpackb(body) == {"a": 1, "b": "two"}
    assert lines == [*BLOCK, *MSGPACK_LINES, ("Allow", "GET, POST"), ("ETag", _tag(PLAIN_MSGPACK))]


def test_json_stays_the_default_and_says_it_varies(adapter: str) -> None:
    status, lines, body = _raw(_app(), adapter, "GET", PLAIN, [])
    assert (status, body) == (200, PLAIN_JSON)
    assert lines == [*BLOCK, *NEGOTIATED_JSON, ("Allow", "GET, POST"), ("ETag", _tag(PLAIN_JSON))]


@pytest.mark.parametrize(
    ("accept", "chosen"),
    [
        pytest.param("application/msgpack", "msgpack", id="msgpack"),
        pytest.param("application/x-msgpack", "msgpack", id="x-msgpack"),
        pytest.param("APPLICATION/MsgPack", "msgpack", id="case"),
        pytest.param("application/json, application/msgpack", "json", id="tie-json-first"),
        pytest.param("application/json;q=0.5, application/msgpack", "msgpack", id="q-higher"),
        pytest.param("application/msgpack;q=0.9, application/json;q=0.8", "msgpack", id="q-order"),
        pytest.param("*/*", "json", id="star"),
        pytest.param("application/*", "json", id="type-star"),
        pytest.param("application/*;q=0.1, application/msgpack;q=0.2", "msgpack", id="specific"),
        pytest.param("application/json;q=0, */*;q=0.5", "msgpack", id="json-refused"),
        pytest.param("text/html", "json", id="none-acceptable"),
        pytest.param("application/msgpack;q=0", "json", id="msgpack-refused"),
        pytest.param("application/msgpack;q=x, application/json;q=0.1", "json", id="bad-q"),
        pytest.param("application/msgpack; charset=x; q=1", "msgpack", id="params"),
    ],
)
def test_the_format_follows_accept_weights(adapter: str, accept: str, chosen: str) -> None:
    _, lines, body = _raw(_app(), adapter, "GET", PLAIN, [(b"accept", accept.encode())])
    if chosen == "msgpack":
        assert (body, _header(lines, "Content-Type")) == (PLAIN_MSGPACK, ["application/msgpack"])
    else:
        assert body == PLAIN_JSON
        assert _header(lines, "Content-Type") == ["application/json; charset=UTF-8"]
    assert _header(lines, "Vary") == ["Origin", "Accept"]


def test_a_response_with_its_own_content_type_keeps_it(adapter: str) -> None:
    _, lines, body = _raw(_app(), adapter, "GET", "/svc-json/t/v1/typed", MSGPACK)
    assert body == b'"<p>hi</p>"'
    assert _header(lines, "Content-Type") == ["text/html"]
    assert _header(lines, "Vary") == ["Origin"]


# -- errors ----------------------------------------------------------------------------------


def test_errors_are_answered_in_the_format_asked_for(adapter: str) -> None:
    status, lines, body = _raw(_app(), adapter, "GET", "/svc-json/t/v1/none", MSGPACK)
    assert status == 404
    assert msgpack.unpackb(body) == {
        "code": "rest_no_route",
        "message": "No route was found matching the URL and request method.",
        "data": {"status": 404},
    }
    assert lines == [*BLOCK, ("Cache-Control", "no-store"), *MSGPACK_LINES]


def test_an_error_outside_dispatch_too(client_for: ClientFor) -> None:
    client = client_for(_app(max_body_size=10))
    answer = client.post(PLAIN, content=b"x" * 100, headers={"Accept": "application/msgpack"})
    assert (answer.status_code, answer.headers["content-type"]) == (413, "application/msgpack")
    assert msgpack.unpackb(answer.content) == {
        "code": "rest_request_too_large",
        "message": "The request body is too large.",
        "data": {"status": 413, "max_body_size": 10},
    }
    route_error = client.get("/?rest_route[a]=b", headers={"Accept": "application/msgpack"})
    assert route_error.status_code == 400
    assert route_error.headers["content-type"] == "application/msgpack"
    assert msgpack.unpackb(route_error.content)["data"] == {"status": 400}


def test_an_answer_msgpack_cannot_hold_is_a_logged_500(
    client_for: ClientFor, caplog: pytest.LogCaptureFixture
) -> None:
    client = client_for(_app())
    with caplog.at_level(logging.ERROR, logger="svcrest"):
        answer = client.get("/svc-json/t/v1/bytes", headers={"Accept": "application/msgpack"})
    assert (answer.status_code, answer.headers["content-type"]) == (500, "application/msgpack")
    assert msgpack.unpackb(answer.content)["code"] == "rest_internal_error"
    assert [record.getMessage() for record in caplog.records] == [
        "The answer of GET /t/v1/bytes (route /t/v1/bytes) cannot be sent as JSON: it holds a"
        " value of type object (answers may hold JSON values, Decimal, set,"
        " frozenset, UUID, datetime, date, dataclasses, Enums, pydantic models and msgspec"
        " structs); answered 500"
    ]
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="svcrest"):
        answer = client.get("/svc-json/t/v1/huge", headers={"Accept": "application/msgpack"})
    assert msgpack.unpackb(answer.content)["data"] == {"status": 500}
    assert [record.getMessage() for record in caplog.records] == [
        "The answer of GET /t/v1/huge (route /t/v1/huge) cannot be sent as JSON: Integer"
        " exceeds 64-bit range; answered 500"
    ]


def test_a_format_that_refuses_an_answer_is_a_logged_500(
    client_for: ClientFor, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(data: Any) -> bytes:
        if isinstance(data, dict) and "code" in data:
            return repr(data).encode()
        raise UnencodableValue("a value CSV cannot hold (a nested object)")

    app = _app(formats=False)
    app.add_serializer(Serializer("text/csv", "text/csv", refuse, "csv"))
    client = client_for(app)
    with caplog.at_level(logging.ERROR, logger="svcrest"):
        answer = client.get(PLAIN, headers={"Accept": "text/csv"})
    assert (answer.status_code, answer.headers["content-type"]) == (500, "text/csv")
    assert answer.content.startswith(b"{'code': 'rest_internal_error'")
    assert [record.getMessage() for record in caplog.records] == [
        "The answer of GET /t/v1/plain (route /t/v1/plain) cannot be sent as the format asked"
        " for: it holds a value CSV cannot hold (a nested object) (answers may hold JSON values,"
        " Decimal, set, frozenset, UUID, datetime, date, dataclasses, Enums, pydantic models"
        " and msgspec structs); answered 500"
    ]


# -- validators, codings, HEAD, OPTIONS ------------------------------------------------------


def test_each_format_has_its_own_etag_and_304(adapter: str) -> None:
    app = _app()
    _, json_lines, _ = _raw(app, adapter, "GET", PLAIN, [])
    _, pack_lines, _ = _raw(app, adapter, "GET", PLAIN, MSGPACK)
    assert _header(json_lines, "ETag") == [_tag(PLAIN_JSON)]
    assert _header(pack_lines, "ETag") == [_tag(PLAIN_MSGPACK)]
    status, lines, body = _raw(
        app, adapter, "GET", PLAIN, [*MSGPACK, (b"if-none-match", _tag(PLAIN_MSGPACK).encode())]
    )
    assert (status, body) == (304, b"")
    assert lines == [*BLOCK, *MSGPACK_LINES, ("Allow", "GET, POST"), ("ETag", _tag(PLAIN_MSGPACK))]
    # The JSON tag does not name the msgpack answer.
    status, _, body = _raw(
        app, adapter, "GET", PLAIN, [*MSGPACK, (b"if-none-match", _tag(PLAIN_JSON).encode())]
    )
    assert (status, body) == (200, PLAIN_MSGPACK)


def test_a_route_version_gets_the_format_suffix(adapter: str) -> None:
    app = _app()
    _, json_lines, _ = _raw(app, adapter, "GET", THING, [])
    _, pack_lines, body = _raw(app, adapter, "GET", THING, MSGPACK)
    assert _header(json_lines, "ETag") == ['"v1"']
    assert _header(pack_lines, "ETag") == ['"v1-msgpack"']
    assert msgpack.unpackb(body) == {"version": 1}
    status, lines, body = _raw(
        app, adapter, "GET", THING, [*MSGPACK, (b"if-none-match", b'"v1-msgpack"')]
    )
    assert (status, body, _header(lines, "ETag")) == (304, b"", ['"v1-msgpack"'])
    assert _header(lines, "Content-Type") == ["application/msgpack"]
    # A write naming the msgpack tag names the same version.
    status, lines, body = _raw(
        app, adapter, "PUT", THING, [*MSGPACK, (b"if-match", b'"v1-msgpack"')]
    )
    assert (status, msgpack.unpackb(body), _header(lines, "ETag")) == (
        200,
        {"version": 2},
        ['"v2-msgpack"'],
    )
    status, _, _ = _raw(app, adapter, "PUT", THING, [*MSGPACK, (b"if-match", b'"v1-msgpack"')])
    assert status == 412


def test_formats_are_each_sites_own(adapter: str) -> None:
    """Two sites in one process: a format registered on one names no tag variant on the
    other (a JSON-only site's ``"v1"`` is not named by ``"v1-msgpack"``)."""
    with_msgpack = _app()
    json_only = _app(formats=False)
    assert (
        _raw(with_msgpack, adapter, "GET", THING, [(b"if-none-match", b'"v1-msgpack"')])[0] == 304
    )
    status, lines, body = _raw(
        json_only, adapter, "GET", THING, [(b"if-none-match", b'"v1-msgpack"')]
    )
    assert (status, _header(lines, "ETag")) == (200, ['"v1"'])
    assert orjson.loads(body) == {"version": 1}
    status, _, _ = _raw(json_only, adapter, "PUT", THING, [(b"if-match", b'"v1-msgpack"')])
    assert status == 412
    status, _, _ = _raw(json_only, adapter, "PUT", THING, [(b"if-match", b'"v1"')])
    assert status == 200


def test_a_large_msgpack_answer_is_compressed(adapter: str) -> None:
    app = _app()
    identity = msgpack.packb(BIG_DATA)
    status, lines, body = _raw(app, adapter, "GET", BIG, [*MSGPACK, (b"accept-encoding", b"gzip")])
    assert status == 200
    assert gzip.decompress(body) == identity
    assert msgpack.unpackb(gzip.decompress(body)) == BIG_DATA
    assert _header(lines, "Content-Encoding") == ["gzip"]
    assert _header(lines, "Vary") == ["Origin", "Accept", "Accept-Encoding"]
    assert _header(lines, "ETag") == [_tag(identity)[:-1] + '-gzip"']
    status, _, body = _raw(
        app,
        adapter,
        "GET",
        BIG,
        [*MSGPACK, (b"accept-encoding", b"gzip"), (b"if-none-match", _tag(identity).encode())],
    )
    assert (status, body) == (304, b"")


def test_head_announces_the_msgpack_answer(adapter: str) -> None:
    app = _app()
    _, got, body = raw_request(app, adapter, "GET", PLAIN, MSGPACK)
    status, lines, head_body = raw_request(app, adapter, "HEAD", PLAIN, MSGPACK)
    assert (status, head_body) == (200, b"")
    assert (
        _header(lines, "Content-Length")
        == [str(len(PLAIN_MSGPACK))]
        == _header(got, "Content-Length")
    )
    assert _header(lines, "Content-Type") == ["application/msgpack"]
    assert _header(lines, "ETag") == [_tag(PLAIN_MSGPACK)]
    assert body == PLAIN_MSGPACK


def test_options_answers_in_the_format_asked_for(client_for: ClientFor) -> None:
    client = client_for(_app())
    as_json = client.request("OPTIONS", PLAIN)
    as_msgpack = client.request("OPTIONS", PLAIN, headers={"Accept": "application/msgpack"})
    assert as_msgpack.status_code == as_json.status_code == 200
    assert as_msgpack.headers["content-type"] == "application/msgpack"
    assert as_msgpack.headers["allow"] == as_json.headers["allow"] == "GET, POST"
    assert msgpack.unpackb(as_msgpack.content) == as_json.json()


# -- batches and _embed ----------------------------------------------------------------------


def test_a_batch_holds_its_answers_as_values(client_for: ClientFor) -> None:
    client = client_for(_app())
    requests = {"requests": [{"path": "/t/v1/plain"}, {"path": "/t/v1/none", "method": "POST"}]}
    as_json = client.post(BATCH, json=requests)
    as_msgpack = client.post(BATCH, json=requests, headers={"Accept": "application/msgpack"})
    assert as_msgpack.status_code == as_json.status_code == 207
    assert as_msgpack.headers["content-type"] == "application/msgpack"
    decoded = msgpack.unpackb(as_msgpack.content)
    assert decoded == as_json.json()
    assert decoded["responses"][0]["body"] == {"a": 1, "b": "two"}
    assert decoded["responses"][1]["body"]["code"] == "rest_no_route"


def test_embedded_answers_are_values_too(client_for: ClientFor) -> None:
    app = _app()

    def linked(request: Request) -> Response:
        response = Response({"id": 1})
        response.add_link("up", f"{HOME}/svc-json/t/v1/plain", embeddable=True)
        return response

    app.register_rest_route("t/v1", "/linked", {"callback": linked, "permission_callback": public})
    client = client_for(app)
    as_json = client.get("/svc-json/t/v1/linked?_embed")
    as_msgpack = client.get(
        "/svc-json/t/v1/linked?_embed", headers={"Accept": "application/msgpack"}
    )
    decoded = msgpack.unpackb(as_msgpack.content)
    assert decoded == as_json.json()
    assert decoded["_embedded"] == {"up": [{"a": 1, "b": "two"}]}


# -- values and registration -----------------------------------------------------------------


def test_msgpack_holds_what_json_holds(client_for: ClientFor) -> None:
    import datetime as dt
    import uuid
    from decimal import Decimal

    data = {
        "when": dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.UTC),
        "price": Decimal("19.90"),
        "tags": {"b", "a"},
        "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    }
    app = _app()
    app.register_rest_route(
        "t/v1", "/values", {"callback": lambda request: data, "permission_callback": public}
    )
    client = client_for(app)
    as_msgpack = client.get("/svc-json/t/v1/values", headers={"Accept": "application/msgpack"})
    assert (
        msgpack.unpackb(as_msgpack.content)
        == orjson.loads(client.get("/svc-json/t/v1/values").content)
        == {
            "when": "2024-05-06T07:08:09+00:00",
            "price": 19.9,
            "tags": ["a", "b"],
            "id": "12345678-1234-5678-1234-567812345678",
        }
    )


def test_registration_mistakes_raise() -> None:
    app = _app()
    with pytest.raises(ValueError, match="two serializers answer for 'application/msgpack'"):
        app.add_serializer(msgpack_serializer())
    with pytest.raises(ValueError, match="type/subtype"):
        Serializer("msgpack", "application/msgpack", bytes, "pack")
    with pytest.raises(ValueError, match="tag_suffix"):
        Serializer("application/cbor", "application/cbor", bytes, "")


def test_a_format_of_ones_own(client_for: ClientFor) -> None:
    """Any ``(data) -> bytes`` function makes a format; registration order breaks ties."""
    app = _app(formats=False)
    app.add_serializer(
        Serializer(
            "text/plain", "text/plain; charset=UTF-8", lambda data: repr(data).encode(), "text"
        )
    )
    client = client_for(app)
    answer = client.get(PLAIN, headers={"Accept": "text/plain"})
    assert (answer.content, answer.headers["content-type"]) == (
        b"{'a': 1, 'b': 'two'}",
        "text/plain; charset=UTF-8",
    )
    assert client.get(PLAIN, headers={"Accept": "text/*, application/json"}).content == PLAIN_JSON
