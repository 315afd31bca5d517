"""The WordPress-style conveniences of Request and Response."""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

import pytest

from svcrest import App, Request, Response, public
from svcrest.http.environ import EnvironHeaders
from svcrest.http.exchange import announces_body, headers_announce_body
from svcrest.http.headers import Headers


def test_response_status_and_header_helpers() -> None:
    response = Response({"a": 1})
    response.set_status(201)
    response.header("Link", "<a>")
    response.header("Link", "<b>", replace=False)
    response.header("X-One", "1")
    response.header("x-one", "2")
    assert response.status == 201
    assert response.headers.get_list("link") == ["<a>", "<b>"]
    assert response.headers.get_list("X-One") == ["2"]
    assert (response.is_error(), Response(None, 404).is_error()) == (False, True)


@pytest.mark.parametrize(
    ("method", "route", "query_string", "body"),
    [("GET", "/r", "", b""), ("POST", "/svc/v1/x", "a=1&b[]=2", b'{"x": 1}')],
)
def test_from_http_sets_every_slot_as_the_one_initialiser_does(
    method: str, route: str, query_string: str, body: bytes
) -> None:
    """``from_http`` sets each slot as ``_fill`` sets it for the same parts, none left
    unset."""
    headers = Headers([("Accept", "application/json")])
    made = Request.from_http(method, route, query_string, headers, body)
    filled = object.__new__(Request)
    filled._fill(method, route, headers, body, query_string, None, query_string != "", None)
    for name in Request.__slots__:
        assert getattr(made, name) == getattr(filled, name), name
        assert type(getattr(made, name)) is type(getattr(filled, name)), name
    assert made.url_params is not filled.url_params  # each request its own dicts
    assert made.user is filled.user


def test_may_have_query_is_false_only_while_no_query_parameter_can_exist() -> None:
    assert Request.from_http("GET", "/r", "", Headers(), b"").may_have_query is False
    assert Request.from_http("GET", "/r", "a=1", Headers(), b"").may_have_query is True
    assert Request("GET", "/r").may_have_query is False
    assert Request("GET", "/r", query={"a": 1}).may_have_query is True
    handed_out = Request.from_http("GET", "/r", "", Headers(), b"")
    assert handed_out.query_params == {}
    assert handed_out.may_have_query is True  # its reader may add to the bucket
    replaced = Request("GET", "/r")
    replaced.query_params = {}
    assert replaced.may_have_query is True
    by_set_param = Request.from_http("GET", "/r", "", Headers(), b"")
    by_set_param.set_param("x", 1)
    assert (by_set_param.may_have_query, by_set_param.query_params) == (True, {"x": 1})
    url_read = Request.from_http("GET", "/r", "", Headers(), b"")
    url_read.url_params = {"id": "7"}
    assert (url_read["id"], url_read.may_have_query) == ("7", False)


def test_request_json_and_header_helpers() -> None:
    request = Request(
        "POST", "/x", headers={"Content-Type": "application/json"}, raw_body=b"[1, 2]"
    )
    assert request.get_json_params() == [1, 2]
    assert request.json_params == {}  # only a JSON object gives parameters
    request.set_header("X_Custom", "v")
    assert request.get_header("x-custom") == "v"


@pytest.mark.parametrize(
    ("method", "lines", "expected"),
    [
        ("GET", {}, False),
        ("HEAD", {"content-length": ["0"]}, False),
        ("DELETE", {"content-length": [" 0 "]}, False),
        ("OPTIONS", {"content-length": ["0", "0"]}, False),
        ("GET", {"content-length": ["12"]}, True),
        ("GET", {"content-length": ["0", "3"]}, True),
        ("GET", {"transfer-encoding": ["chunked"]}, True),
        ("POST", {}, True),
        ("PUT", {"content-length": ["0"]}, True),
        ("PATCH", {}, True),
    ],
)
def test_which_requests_announce_a_body(
    method: str, lines: dict[str, list[str]], expected: bool
) -> None:
    assert announces_body(method, lines) is expected
    listed = [(name, value) for name, values in lines.items() for value in values]
    assert headers_announce_body(method, Headers(listed)) is expected
    if all(len(values) == 1 for values in lines.values()):
        # The same lines as a WSGI server hands them over: one environ key a line.
        keys = {"content-length": "CONTENT_LENGTH", "transfer-encoding": "HTTP_TRANSFER_ENCODING"}
        environ = {keys[name]: values[0] for name, values in lines.items()}
        assert headers_announce_body(method, EnvironHeaders(environ)) is expected


@pytest.mark.parametrize("length", [None, b"0", b" 0"])
def test_the_asgi_adapter_never_waits_for_the_body_of_a_plain_get(length: bytes | None) -> None:
    app = App("http://site.test")
    app.register_rest_route(
        "t/v1",
        "/x",
        {"methods": "GET", "callback": lambda request: 1, "permission_callback": public},
    )
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        raise AssertionError("a GET without a body announced is answered without reading one")

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    headers = [(b"host", b"site.test")] + ([(b"content-length", length)] if length else [])
    scope = {"type": "http", "method": "GET", "path": "/svc-json/t/v1/x", "headers": headers}
    asyncio.run(app(scope, receive, send))
    assert (sent[0]["status"], sent[1]["body"]) == (200, b"1")


def test_query_param_reads_without_handing_out_the_bucket() -> None:
    plain = Request.from_http("GET", "/x", "", Headers([]), b"")
    assert plain.query_param("_fields") is None
    assert plain.query_param("_fields", "all") == "all"
    assert plain.may_have_query is False  # the getter would have set it
    queried = Request.from_http("GET", "/x", "_fields=id,title&a[b]=1", Headers([]), b"")
    assert queried.query_param("_fields") == "id,title"
    assert queried.query_param("a") == {"b": "1"}
    assert queried.query_param("missing", 3) == 3
    queried.query_params["late"] = "set"
    assert queried.query_param("late") == "set"
    built = Request("GET", "/x")
    built.set_param("_fields", "id")
    assert built.query_param("_fields") == "id"


@pytest.mark.parametrize(
    ("method", "query", "json", "raw"),
    [
        ("GET", {}, None, b""),
        ("GET", {"input": {"a": "1"}}, None, b""),
        ("POST", {}, {"input": [1, 2]}, b'{"input":[1,2]}'),
        ("DELETE", {"input": "x"}, None, b""),
    ],
    ids=["bare", "query", "json", "delete"],
)
def test_for_dispatch_builds_what_the_keyword_constructor_builds(
    method: str, query: dict[str, Any], json: Any, raw: bytes
) -> None:
    headers = Headers([("Authorization", "Basic x"), ("Idempotency-Key", "k")])
    made = Request.for_dispatch(method, "/t/v1/x", headers, dict(query), json, raw)
    expected = Request(method, "/t/v1/x", query=query, json=json, raw_body=raw, headers=headers)
    for name in ("method", "route", "raw_body", "query_string", "may_have_query", "user"):
        assert getattr(made, name) == getattr(expected, name), name
    assert made.headers is headers
    assert made.query_params == expected.query_params == query
    assert made.json_params == expected.json_params == ({} if json is None else json)
    assert made.get_params() == expected.get_params()
    assert made.url_params == {} and made.default_params == {} and made.body_params == {}


def test_lone_url_params_only_when_no_other_bucket_can_hold_a_parameter() -> None:
    """``lone_url_params``: the URL parameters of a request whose buckets are the URL, the
    query and the defaults with no query parameter possible; None otherwise."""
    json_type = {"Content-Type": "application/json"}
    cases: list[tuple[Request, bool]] = [
        (Request("GET", "/r"), True),
        (Request("HEAD", "/r"), True),
        (Request("GET", "/r", query={"a": "1"}), False),
        (Request("POST", "/r"), False),
        (Request("DELETE", "/r"), False),
        (Request("GET", "/r", raw_body=b'{"a": 1}', headers=json_type), False),
        (Request("GET", "/r", raw_body=b"a=1"), True),
        (Request("GET", "/r", json={"a": 1}, headers=json_type), False),
        (Request.from_http("GET", "/r", "", Headers(), b""), True),
        (Request.from_http("GET", "/r", "a=1", Headers(), b""), False),
    ]
    for request, lone in cases:
        request.url_params = {"id": "7"}
        assert request.lone_url_params() == ({"id": "7"} if lone else None)
        buckets = request.param_buckets()
        if lone:  # what param_buckets walks: the URL, an empty query, the defaults
            assert len(buckets) == 3 and not buckets[1]
    handed = Request("GET", "/r")
    _ = handed.query_params  # the bucket handed out: a parameter may be set in it
    assert handed.lone_url_params() is None


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("query", ["", "context=edit&extra=1"])
def test_a_param_read_answers_as_the_buckets_walk_and_hands_out_no_empty_query(
    method: str, query: str
) -> None:
    """``get_param`` of a request whose query can hold nothing answers from the defaults
    without handing out the query bucket (``may_have_query`` stays false); its answers are
    the buckets' walk's, for every name and method."""

    def made() -> Request:
        request = Request.from_http(method, "/x", query, Headers([]), b"")
        request.url_params = {"id": "7"}
        request.default_params = {"context": "view", "none": None}
        return request

    for name in ("id", "context", "extra", "none", "missing"):
        read, walked = made(), made()
        general = next((b[name] for b in walked.param_buckets() if name in b), None)
        assert read.get_param(name) == general, name
        expected = bool(query) or (method == "POST" and name not in ("id",))
        assert read.may_have_query is expected, name
