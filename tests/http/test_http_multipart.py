"""multipart/form-data bodies, form bodies by method, ``+json`` types and ``set_param``
(the parameter cases of WordPress's ``rest-request.php`` tests)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from svcrest import App, Request, RestError, public
from svcrest.http.forms import MAX_FIELDS
from svcrest.http.multipart import UploadedFile, parse_multipart
from tests.conftest import SiteClient

BOUNDARY = "XyZzy"
CONTENT_TYPE = f"multipart/form-data; boundary={BOUNDARY}"


def multipart(*parts: tuple[str, str | None, str | None, bytes]) -> bytes:
    """A body of (name, filename, content type, data) parts."""
    chunks: list[bytes] = []
    for name, filename, content_type, data in parts:
        disposition = f'form-data; name="{name}"'
        if filename is not None:
            disposition += f'; filename="{filename}"'
        head = f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n"
        if content_type is not None:
            head += f"Content-Type: {content_type}\r\n"
        chunks.append(head.encode() + b"\r\n" + data + b"\r\n")
    return b"".join(chunks) + f"--{BOUNDARY}--\r\n".encode()


def test_multipart_fields_and_files() -> None:
    body = multipart(
        ("title", None, None, "Caf\u00e9".encode()),
        ("tags[]", None, None, b"a"),
        ("tags[]", None, None, b"b"),
        ("meta[k]", None, None, b"v"),
        ("upload", "note.txt", "text/plain", b"hello\r\nworld"),
        ("pics[]", "1.png", "image/png", b"\x89PNG1"),
        ("pics[]", "2.png", None, b"\x89PNG2"),
    )
    params, files = parse_multipart(body, CONTENT_TYPE)
    assert params == {"title": "Caf\u00e9", "tags": ["a", "b"], "meta": {"k": "v"}}
    assert files == {
        "upload": UploadedFile("upload", "note.txt", "text/plain", b"hello\r\nworld"),
        "pics": [
            UploadedFile("pics[]", "1.png", "image/png", b"\x89PNG1"),
            UploadedFile("pics[]", "2.png", "application/octet-stream", b"\x89PNG2"),
        ],
    }
    upload = files["upload"]
    assert isinstance(upload, UploadedFile)
    assert upload.size == 12


def test_request_reads_a_multipart_body_as_form_params() -> None:
    body = multipart(("title", None, None, b"T"), ("file", "a.bin", None, b"\x00\x01"))
    request = Request("POST", "/x", headers={"Content-Type": CONTENT_TYPE}, raw_body=body)
    assert request.get_params() == {"title": "T"}
    assert request.body_params == {"title": "T"}
    assert request.files == {
        "file": UploadedFile("file", "a.bin", "application/octet-stream", b"\x00\x01")
    }


@pytest.mark.parametrize(
    ("body", "content_type", "reason"),
    [
        (
            b'--XyZzy\r\nContent-Disposition: form-data; name="a"\r\n\r\nx',
            CONTENT_TYPE,
            "truncated body",
        ),
        (b"no boundary here at all", CONTENT_TYPE, "malformed body"),
        (multipart(("a", None, None, b"x")), "multipart/form-data", "missing or invalid boundary"),
        (
            b'--XyZzy\r\nContent-Disposition: attachment; name="a"\r\n\r\nx\r\n--XyZzy--\r\n',
            CONTENT_TYPE,
            "a part without a form-data name",
        ),
        (
            b"--XyZzy\r\nContent-Disposition: form-data\r\n\r\nx\r\n--XyZzy--\r\n",
            CONTENT_TYPE,
            "a part without a form-data name",
        ),
    ],
    ids=["truncated", "no-parts", "no-boundary", "not-form-data", "no-name"],
)
def test_malformed_multipart_is_a_400(body: bytes, content_type: str, reason: str) -> None:
    with pytest.raises(RestError) as caught:
        parse_multipart(body, content_type)
    assert caught.value.to_dict() == {
        "code": "rest_invalid_multipart",
        "message": "Invalid multipart/form-data body.",
        "data": {"status": 400, "reason": reason},
    }


def _invalid(reason: str) -> dict[str, Any]:
    return {
        "code": "rest_invalid_multipart",
        "message": "Invalid multipart/form-data body.",
        "data": {"status": 400, "reason": reason},
    }


def test_a_thousand_parts_are_accepted() -> None:
    body = multipart(*[("f[]", None, None, b"x")] * MAX_FIELDS)
    params, _ = parse_multipart(body, CONTENT_TYPE)
    assert params == {"f": ["x"] * MAX_FIELDS}


@pytest.mark.parametrize("count", [MAX_FIELDS + 1, 152_000], ids=["1001", "152k"])
def test_more_than_a_thousand_parts_are_refused_before_parsing(count: int) -> None:
    body = multipart(*[("f[]", None, None, b"x")] * count)
    with pytest.raises(RestError) as caught:
        parse_multipart(body, CONTENT_TYPE)
    assert caught.value.to_dict() == _invalid("more than 1000 parts")


@pytest.mark.parametrize("name", ["a" + "[x]" * 65, "a" + "[]" * 65], ids=["keys", "indexes"])
def test_a_field_nested_deeper_than_64_levels_is_refused(name: str) -> None:
    body = multipart(("title", None, None, b"T"), (name, None, None, b"x"))
    with pytest.raises(RestError) as caught:
        parse_multipart(body, CONTENT_TYPE)
    assert caught.value.to_dict() == _invalid("a field nested deeper than 64 levels")
    deepest = multipart(("a" + "[x]" * 64, None, None, b"x"))
    params, _ = parse_multipart(deepest, CONTENT_TYPE)
    assert params != {}


def _echo_app() -> App:
    app = App()

    def echo(request: Request) -> dict[str, Any]:
        files = {
            name: [entry.filename, entry.size] if isinstance(entry, UploadedFile) else len(entry)
            for name, entry in request.files.items()
        }
        return {"params": request.get_params(), "files": files}

    app.register_rest_route(
        "t/v1",
        "/echo",
        {
            "permission_callback": public,
            "methods": ["GET", "POST", "PUT", "PATCH", "DELETE"],
            "callback": echo,
        },
    )
    return app


def test_multipart_over_http(client_for: Callable[[App], SiteClient]) -> None:
    client = client_for(_echo_app())
    response = client.post(
        "/svc-json/t/v1/echo?q=1",
        data={"title": "T", "tags[]": ["a", "b"]},
        files={"upload": ("note.txt", b"hello", "text/plain")},
    )
    assert response.status_code == 200
    assert response.json() == {
        "params": {"q": "1", "title": "T", "tags": ["a", "b"]},
        "files": {"upload": ["note.txt", 5]},
    }


def test_malformed_multipart_over_http(client_for: Callable[[App], SiteClient]) -> None:
    client = client_for(_echo_app())
    response = client.post(
        "/svc-json/t/v1/echo",
        content=b'--XyZzy\r\nContent-Disposition: form-data; name="a"\r\n\r\nx',
        headers={"Content-Type": CONTENT_TYPE},
    )
    assert response.status_code == 400
    assert response.json() == {
        "code": "rest_invalid_multipart",
        "message": "Invalid multipart/form-data body.",
        "data": {"status": 400, "reason": "truncated body"},
    }


def test_a_too_deep_multipart_field_over_http(client_for: Callable[[App], SiteClient]) -> None:
    client = client_for(_echo_app())
    response = client.post(
        "/svc-json/t/v1/echo",
        content=multipart(("title", None, None, b"T"), ("a" + "[x]" * 65, None, None, b"x")),
        headers={"Content-Type": CONTENT_TYPE},
    )
    assert response.status_code == 400
    assert response.json() == _invalid("a field nested deeper than 64 levels")


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("GET", {}),
        ("POST", {"a": "1"}),
        ("PUT", {"a": "1"}),
        ("PATCH", {"a": "1"}),
        ("DELETE", {"a": "1"}),
    ],
)
def test_form_body_params_only_for_writes(
    client_for: Callable[[App], SiteClient], method: str, expected: dict[str, str]
) -> None:
    client = client_for(_echo_app())
    response = client.request(
        method,
        "/svc-json/t/v1/echo",
        content=b"a=1",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 200
    assert response.json() == {"params": expected, "files": {}}


def test_get_ignores_a_multipart_body() -> None:
    body = multipart(("a", None, None, b"1"), ("f", "x", None, b"y"))
    request = Request("GET", "/x", headers={"Content-Type": CONTENT_TYPE}, raw_body=body)
    assert (request.body_params, request.files, request.get_params()) == ({}, {}, {})


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",
        "application/JSON; charset=utf-8",
        "application/activity+json",
        "application/vnd.api+json",
        "application/merge-patch+json; charset=UTF-8",
    ],
)
def test_every_plus_json_type_is_json(content_type: str) -> None:
    request = Request("POST", "/x", headers={"Content-Type": content_type}, raw_body=b'{"a": 1}')
    assert request.get_params() == {"a": 1}


@pytest.mark.parametrize(
    "content_type", ["text/json", "application/jsonx", "application/x-json-stream"]
)
def test_other_types_are_not_json(content_type: str) -> None:
    request = Request("POST", "/x", headers={"Content-Type": content_type}, raw_body=b'{"a": 1}')
    assert request.get_params() == {}


def test_set_param_updates_every_bucket_holding_the_name() -> None:
    request = Request(
        "POST",
        "/x",
        query={"param": "query", "only_query": "q"},
        headers={"Content-Type": "application/json"},
        raw_body=b'{"param": "json"}',
    )
    request.default_params = {"param": "default"}
    request.set_param("param", "new")
    assert (request.json_params, request.query_params["param"]) == ({"param": "new"}, "new")
    assert request.default_params == {"param": "default"}
    assert request.get_param("param") == "new"
    request.set_param("only_query", "changed")
    assert request.query_params == {"param": "new", "only_query": "changed"}
    assert request.json_params == {"param": "new"}


def test_set_param_of_a_default_only_name_goes_to_the_body() -> None:
    request = Request("POST", "/x", headers={"Content-Type": "application/json"}, raw_body=b"{}")
    request.default_params = {"param": "default"}
    request.set_param("param", "set")
    assert (request.get_param("param"), request.json_params) == ("set", {"param": "set"})
    assert request.default_params == {"param": "default"}


def _null_app() -> App:
    app = App()
    app.register_rest_route(
        "t/v1",
        "/null",
        {
            "permission_callback": public,
            "methods": "POST",
            "callback": lambda request: {"list": request.get_param("list")},
            "args": {"list": {"type": "array"}, "maybe": {"type": ["string", "null"]}},
        },
    )
    return app


def test_a_json_null_is_validated(client_for: Callable[[App], SiteClient]) -> None:
    client = client_for(_null_app())
    response = client.post("/svc-json/t/v1/null", json={"list": None})
    assert response.status_code == 400
    assert response.json() == {
        "code": "rest_invalid_param",
        "message": "Invalid parameter(s): list",
        "data": {
            "status": 400,
            "params": {"list": "list is not of type array."},
            "details": {
                "list": {
                    "code": "rest_invalid_type",
                    "message": "list is not of type array.",
                    "data": {"param": "list"},
                }
            },
        },
    }
    allowed = client.post("/svc-json/t/v1/null", json={"maybe": None, "list": [1]})
    assert (allowed.status_code, allowed.json()) == (200, {"list": [1]})
    absent = client.post("/svc-json/t/v1/null", json={})
    assert (absent.status_code, absent.json()) == (200, {"list": None})
