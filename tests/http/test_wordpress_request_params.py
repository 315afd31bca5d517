"""WordPress's ``Tests_REST_Request`` parameter cases (``rest-request.php``) as our own.

Our one deliberate difference: a URL capture wins over every other source (WordPress reads
it after the body and the query string). Each case therefore checks the URL's value first,
then drops the capture and checks that the next source is exactly the one WordPress reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest

from svcrest import App, Request, public
from svcrest.http.jsonbody import is_json_content_type
from tests.conftest import SiteClient

JSON_BODY = orjson.dumps({"source": "json", "has_json_params": True})


def request_with_parameters(method: str, content_type: str | None = None) -> Request:
    """WordPress's ``request_with_parameters``: every source holds ``source`` and its own
    ``has_*_params``; the JSON is the raw body (read only under a JSON content type)."""
    headers = {"Content-Type": content_type} if content_type is not None else None
    request = Request(
        method,
        "/test",
        query={"source": "query", "has_query_params": True},
        body={"source": "body", "has_body_params": True},
        headers=headers,
        raw_body=JSON_BODY,
    )
    request.url_params = {"source": "url", "has_url_params": True}
    request.default_params = {"source": "defaults", "has_default_params": True}
    return request


def next_source(request: Request) -> Any:
    """``source`` as WordPress reads it: the URL capture (which wins here) dropped."""
    assert request.get_param("source") == "url"
    del request.url_params["source"]
    return request.get_param("source")


@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS"])
def test_parameter_order(method: str) -> None:
    request = request_with_parameters(method)
    assert next_source(request) == "query"
    assert request.get_param("has_url_params") is True
    assert request.get_param("has_query_params") is True
    assert request.get_param("has_default_params") is True
    # Neither the form body nor the JSON body is read by a GET.
    assert request.get_param("has_body_params") is None
    assert request.get_param("has_json_params") is None
    assert "has_body_params" not in request
    assert request.get_params() == {
        "source": "query",
        "has_url_params": True,
        "has_query_params": True,
        "has_default_params": True,
    }


def test_a_get_given_a_body_sets_new_parameters_in_the_query_string() -> None:
    request = request_with_parameters("GET")
    request["added"] = 1
    assert request.query_params["added"] == 1
    assert request.get_param("added") == 1
    assert "added" not in request.body_params


def test_a_get_with_a_json_content_type_reads_its_json_body() -> None:
    # WordPress reads the JSON body of any method that declares a JSON content type.
    request = request_with_parameters("GET", "application/json")
    assert next_source(request) == "json"
    assert request.get_param("has_json_params") is True
    assert request.get_param("has_body_params") is None


def test_parameter_order_post() -> None:
    request = request_with_parameters("POST", "application/x-www-form-urlencoded")
    assert next_source(request) == "body"
    for name in ("has_url_params", "has_query_params", "has_body_params", "has_default_params"):
        assert request.get_param(name) is True
    assert request.get_param("has_json_params") is None


def test_parameter_order_json() -> None:
    request = request_with_parameters("POST", "application/json")
    assert next_source(request) == "json"
    for source in ("url", "query", "body", "json", "default"):
        assert request.get_param(f"has_{source}_params") is True


def test_parameter_order_json_invalid() -> None:
    request = request_with_parameters("POST", "application/json")
    request.raw_body = b"{ this is not json }"
    assert next_source(request) == "body"
    for name in ("has_url_params", "has_query_params", "has_body_params", "has_default_params"):
        assert request.get_param(name) is True
    assert request.get_param("has_json_params") is None


def test_parameter_merging() -> None:
    request = request_with_parameters("POST")
    request.raw_body = b""
    assert request.get_params() == {
        "source": "url",
        "has_default_params": True,
        "has_query_params": True,
        "has_body_params": True,
        "has_url_params": True,
    }


ALTERNATE_JSON = [
    ("application/ld+json", "json", True),
    ('application/ld+json; profile="https://www.w3.org/ns/activitystreams"', "json", True),
    ("application/activity+json", "json", True),
    ("application/json+oembed", "json", True),
    ("application/nojson", "body", None),
    ("application/no.json", "body", None),
]


@pytest.mark.parametrize(("content_type", "source", "accept_json"), ALTERNATE_JSON)
def test_alternate_json_content_type(content_type: str, source: str, accept_json: Any) -> None:
    request = request_with_parameters("POST", content_type)
    assert next_source(request) == source
    assert request.get_param("has_json_params") is accept_json


@pytest.mark.parametrize(
    ("content_type", "is_json"), [(case[0], case[2] is True) for case in ALTERNATE_JSON]
)
def test_is_json_content_type(content_type: str, is_json: bool) -> None:
    request = request_with_parameters("GET", content_type)
    assert request.is_json_content_type() is is_json
    assert is_json_content_type(content_type) is is_json


def test_content_type_cache() -> None:
    request = request_with_parameters("GET")
    assert request.is_json_content_type() is False
    for content_type, expected in [
        ("application/json", True),
        ("application/activity+json", True),
        ("application/nojson", False),
        ("application/json", True),
        ("APPLICATION/JSON+OEMBED; charset=utf-8", True),
    ]:
        request.set_header("Content-Type", content_type)
        assert request.is_json_content_type() is expected
    del request.headers["Content-Type"]
    assert request.is_json_content_type() is False


# -- over HTTP, on both adapters --------------------------------------------------------------


def _echo_app() -> App:
    app = App("http://params.test")
    app.register_rest_route(
        "test",
        r"/echo/(?P<source>\w+)",
        {
            "methods": "GET, POST",
            "permission_callback": public,
            "callback": lambda request: request.get_params(),
        },
    )
    return app


def test_a_json_oembed_body_is_json_over_http(
    client_for: Callable[[App], SiteClient],
) -> None:
    client = client_for(_echo_app())
    response = client.post(
        "/svc-json/test/echo/url?q=1",
        content=b'{"source": "json", "title": "T"}',
        headers={"Content-Type": "application/json+oembed"},
    )
    assert response.status_code == 200
    assert response.json() == {"source": "url", "title": "T", "q": "1"}
    invalid = client.post(
        "/svc-json/test/echo/url",
        content=b"{bad",
        headers={"Content-Type": "application/json+oembed"},
    )
    assert invalid.status_code == 400
    assert invalid.json()["code"] == "rest_invalid_json"


def test_a_get_reads_no_form_body_over_http(client_for: Callable[[App], SiteClient]) -> None:
    response = client_for(_echo_app()).request(
        "GET",
        "/svc-json/test/echo/url?q=query",
        content=b"q=body&extra=body",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 200
    assert response.json() == {"source": "url", "q": "query"}
