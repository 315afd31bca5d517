"""Hostile ``_method`` / ``X-HTTP-Method-Override``, ``_envelope`` and ``_jsonp`` on both
adapters (WordPress's ``serve_request``). An override counts on POST only; an unknown,
empty, blank, NUL or 5,000-character method answers 405 ``rest_no_route`` with ``Allow``
and is never reflected. ``_envelope`` (any value, an array too) wraps every answer, errors
included (a 404, 401, 405, 415, invalid JSON, a raising callback without its text), in a
200. ``_jsonp`` is not offered: any request carrying it (empty, an array too) answers
WordPress's 400 ``rest_callback_disabled`` in JSON with ``nosniff``, before authentication,
the override and dispatch, and a callback name is never reflected. (The ordinary cases are
in tests/test_serving.py and tests/rest/.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from svcrest import App, Request, RestError, public
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
ECHO = "/svc-json/t/v1/echo"
ALLOWED = "GET, POST, PUT, PATCH, DELETE"
NOT_ALLOWED = {
    "code": "rest_no_route",
    "message": "No route was found matching the URL and request method.",
    "data": {"status": 405},
}


def make_app() -> App:
    app = App("http://127.0.0.1:8000")

    def echo(request: Request) -> dict[str, Any]:
        return {"method": request.method}

    def boom(request: Request) -> Any:
        raise ValueError("secret text of the failure")

    app.register_rest_route(
        "t/v1", "/echo", {"methods": ALLOWED, "callback": echo, "permission_callback": public}
    )
    app.register_rest_route(
        "t/v1",
        "/teapot",
        {
            "methods": "GET, POST",
            "callback": lambda request: RestError("t_teapot", "Short.", {"status": 418, "x": 1}),
            "permission_callback": public,
        },
    )
    app.register_rest_route("t/v1", "/boom", {"callback": boom, "permission_callback": public})
    app.register_rest_route(
        "t/v1", "/secret", {"callback": lambda r: {}, "permission_callback": lambda r: False}
    )
    return app


@pytest.mark.parametrize(
    ("query", "headers", "method"),
    [
        ("?_method=PUT", {"X-HTTP-Method-Override": "DELETE"}, "PUT"),  # the parameter first
        ("?_method[]=PUT", {}, "POST"),  # not a string: no override
        ("?_method[a]=DELETE", {}, "POST"),
        ("", {"X-HTTP-Method-Override": "  patch  "}, "PATCH"),
    ],
    ids=["parameter-over-header", "parameter-list", "parameter-map", "header-padded"],
)
def test_method_override_sources(
    client_for: ClientFor, query: str, headers: dict[str, str], method: str
) -> None:
    response = client_for(make_app()).post(ECHO + query, headers=headers)
    assert (response.status_code, response.json()) == (200, {"method": method})


@pytest.mark.parametrize(
    ("query", "headers"),
    [
        ("?_method=FOO", {}),
        ("?_method=G%20ET", {}),
        ("?_method=%00", {}),
        ("?_method=%3Cscript%3Ealert(1)%3C/script%3E", {}),
        ("?_method=" + "X" * 5000, {}),
        ("", {"X-HTTP-Method-Override": "TRACE"}),
        ("", {"X-HTTP-Method-Override": "CONNECT"}),
        ("", {"X-HTTP-Method-Override": "<script>"}),
        ("", {"X-HTTP-Method-Override": "Y" * 5000}),
        # WordPress's ``isset``: a parameter or header that is there is the override, even
        # empty or blank (a method no handler has); the header is not read after an empty
        # parameter.
        ("?_method=", {}),
        ("?_method", {}),
        ("?_method=%20", {}),
        ("?_method=", {"X-HTTP-Method-Override": "PUT"}),
        ("", {"X-HTTP-Method-Override": ""}),
        ("", {"X-HTTP-Method-Override": " "}),
    ],
    ids=[
        "unknown",
        "inner-blank",
        "nul",
        "markup",
        "5000-characters",
        "trace",
        "connect",
        "header-markup",
        "header-5000-characters",
        "empty",
        "no-value",
        "blank",
        "empty-before-header",
        "header-empty",
        "header-blank",
    ],
)
def test_an_unknown_override_is_a_405_never_reflected(
    client_for: ClientFor, query: str, headers: dict[str, str]
) -> None:
    response = client_for(make_app()).post(ECHO + query, headers=headers)
    assert (response.status_code, response.json()) == (405, NOT_ALLOWED)
    assert response.headers["allow"] == ALLOWED
    for sent in ("FOO", "script", "XXXXX", "YYYYY", "TRACE", "CONNECT"):
        assert sent.lower() not in response.text.lower()
        assert all(sent.lower() not in value.lower() for value in response.headers.values())


@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "DELETE"])
def test_an_override_on_another_method_than_post_is_ignored(
    client_for: ClientFor, method: str
) -> None:
    client = client_for(make_app())
    for override in ({"X-HTTP-Method-Override": "FOO"}, {}):
        query = "" if override else "?_method=FOO"
        response = client.request(method, ECHO + query, headers=override)
        assert (response.status_code, response.json()) == (200, {"method": method})


def test_an_override_to_options_answers_the_route_help(client_for: ClientFor) -> None:
    response = client_for(make_app()).post(ECHO, headers={"X-HTTP-Method-Override": "OPTIONS"})
    assert response.status_code == 200
    assert response.json()["endpoints"] == [{"methods": ALLOWED.split(", "), "args": {}}]


def test_an_override_to_head_sends_no_body(client_for: ClientFor) -> None:
    response = client_for(make_app()).post(ECHO, headers={"X-HTTP-Method-Override": "HEAD"})
    assert (response.status_code, response.content) == (200, b"")


@pytest.mark.parametrize(
    ("url", "headers", "status"),
    [
        (ECHO + "?_method=HEAD", {}, 200),
        (ECHO + "?_method=head", {}, 200),
        (ECHO, {"X-HTTP-Method-Override": " head "}, 200),
        (ECHO + "?_method[]=GET", {"X-HTTP-Method-Override": "HEAD"}, 200),  # not a string
        (ECHO + "?_method=HEAD&_envelope", {}, 200),
        ("/svc-json/t/v1/teapot?_method=HEAD", {}, 418),
        ("/svc-json/t/v1/nothing?_method=HEAD", {}, 404),
        ("/svc-json/t/v1/secret", {"X-HTTP-Method-Override": "HEAD"}, 401),
    ],
    ids=[
        "parameter",
        "lower-case",
        "header-padded",
        "list-then-header",
        "envelope",
        "error",
        "no-route",
        "refused",
    ],
)
def test_an_override_to_head_answers_the_post_without_a_body(
    client_for: ClientFor, url: str, headers: dict[str, str], status: int
) -> None:
    # WordPress's serve_request sends nothing after the headers for HEAD, whatever the
    # status. The request line is still a POST: its Content-Length is the body's, 0.
    response = client_for(make_app()).post(url, headers=headers)
    assert (response.status_code, response.content) == (status, b"")
    assert response.headers["content-length"] == "0"


@pytest.mark.parametrize(
    ("url", "headers"),
    [
        (ECHO + "?_method=GET", {"X-HTTP-Method-Override": "HEAD"}),  # the parameter wins
        (ECHO + "?_method=HEADX", {}),
        (ECHO, {"X-HTTP-Method-Override": "GET"}),
    ],
    ids=["parameter-over-header", "not-head", "get"],
)
def test_an_override_to_another_method_keeps_the_body(
    client_for: ClientFor, url: str, headers: dict[str, str]
) -> None:
    response = client_for(make_app()).post(url, headers=headers)
    if "HEADX" in url:
        assert (response.status_code, response.json()) == (405, NOT_ALLOWED)
    else:
        assert (response.status_code, response.json()) == (200, {"method": "GET"})


def test_head_on_the_request_line_keeps_the_get_length(client_for: ClientFor) -> None:
    response = client_for(make_app()).request("HEAD", ECHO)
    assert (response.status_code, response.content) == (200, b"")
    assert response.headers["content-length"] == str(len(b'{"method":"HEAD"}'))


# -- _envelope -----------------------------------------------------------------------------------


def _envelope(body: Any, status: int, headers: dict[str, str] | None = None) -> dict[str, Any]:
    return {"body": body, "status": status, "headers": headers or {}}


@pytest.mark.parametrize(
    ("method", "url", "kwargs", "expected"),
    [
        ("GET", ECHO + "?_envelope=0", {}, _envelope({"method": "GET"}, 200, {"Allow": ALLOWED})),
        ("GET", ECHO + "?_envelope[]=1", {}, _envelope({"method": "GET"}, 200, {"Allow": ALLOWED})),
        (
            "GET",
            "/svc-json/t/v1/teapot?_envelope",
            {},
            _envelope(
                {"code": "t_teapot", "message": "Short.", "data": {"status": 418, "x": 1}},
                418,
                {"Allow": "GET, POST"},
            ),
        ),
        (
            "GET",
            "/svc-json/t/v1/nothing?_envelope",
            {},
            _envelope({**NOT_ALLOWED, "data": {"status": 404}}, 404),
        ),
        (
            "GET",
            "/svc-json/t/v1/secret?_envelope",
            {},
            _envelope(
                {
                    "code": "rest_forbidden",
                    "message": "Sorry, you are not allowed to do that.",
                    "data": {"status": 401},
                },
                401,
            ),
        ),
        (
            "GET",
            "/svc-json/t/v1/boom?_envelope",
            {},
            _envelope(
                {
                    "code": "rest_internal_error",
                    "message": "Internal server error.",
                    "data": {"status": 500},
                },
                500,
                {"Allow": "GET"},
            ),
        ),
        (
            "POST",
            ECHO + "?_envelope&_method=FOO",
            {},
            _envelope(NOT_ALLOWED, 405, {"Allow": ALLOWED}),
        ),
        (
            "POST",
            ECHO + "?_envelope",
            {
                "content": b"x" * 100,
                "headers": {"Content-Type": "application/json", "Content-Encoding": "gzip"},
            },
            _envelope(
                {
                    "code": "rest_unsupported_content_encoding",
                    "message": "Request bodies must be sent without a content coding.",
                    "data": {"status": 415},
                },
                415,
                {"Accept-Encoding": "identity", "Allow": ALLOWED},
            ),
        ),
    ],
    ids=[
        "value-0",
        "array",
        "error",
        "no-route",
        "refused",
        "raises",
        "unknown-override",
        "coded-body",
    ],
)
def test_envelope_wraps_every_answer_in_a_200(
    client_for: ClientFor, method: str, url: str, kwargs: dict[str, Any], expected: Any
) -> None:
    response = client_for(make_app()).request(method, url, **kwargs)
    assert (response.status_code, response.json()) == (200, expected)
    assert b"secret text" not in response.content


def test_envelope_of_invalid_json(client_for: ClientFor) -> None:
    response = client_for(make_app()).post(
        ECHO + "?_envelope", content=b"{", headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 200
    envelope = response.json()
    assert (envelope["status"], envelope["body"]["code"]) == (400, "rest_invalid_json")


def test_envelope_never_answers_304(client_for: ClientFor) -> None:
    response = client_for(make_app()).get(ECHO + "?_envelope", headers={"If-None-Match": "*"})
    assert response.status_code == 200
    assert response.json()["status"] == 200


# -- _jsonp --------------------------------------------------------------------------------------

HOSTILE_CALLBACKS = [
    "cb",
    "alert(1)//",
    "<script>alert(1)</script>",
    "a\u2028b",
    "x" * 5000,
    "jQuery123.cb[0]",
]


@pytest.mark.parametrize("callback", HOSTILE_CALLBACKS, ids=repr)
def test_jsonp_is_not_offered_and_a_callback_is_never_reflected(
    client_for: ClientFor, callback: str
) -> None:
    response = client_for(make_app()).get(ECHO, params={"_jsonp": callback})
    assert response.headers["content-type"] == "application/json; charset=UTF-8"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert callback not in response.text
    assert response.text.startswith("{")


CALLBACK_DISABLED = {
    "code": "rest_callback_disabled",
    "message": "JSONP support is disabled on this site.",
    "data": {"status": 400},
}


@pytest.mark.parametrize("callback", ["cb", "alert(1)//"], ids=["plain", "hostile"])
def test_jsonp_answers_wordpress_rest_callback_disabled(
    client_for: ClientFor, callback: str
) -> None:
    response = client_for(make_app()).get(ECHO, params={"_jsonp": callback})
    assert response.status_code == 400
    assert response.json() == CALLBACK_DISABLED


@pytest.mark.parametrize(
    ("method", "url", "headers"),
    [
        ("GET", ECHO + "?_jsonp=", {}),  # WordPress's isset: an empty value counts
        ("GET", ECHO + "?_jsonp", {}),
        ("GET", ECHO + "?_jsonp[]=cb", {}),
        ("GET", ECHO + "?_jsonp[a]=cb", {}),
        ("GET", ECHO + "?%5Fjsonp=cb", {}),
        ("GET", "/?rest_route=/t/v1/echo&_jsonp=cb", {}),
        ("GET", "/svc-json/t/v1/nothing?_jsonp=cb", {}),  # before routing
        ("GET", "/svc-json/t/v1/boom?_jsonp=cb", {}),  # the callback never runs
        ("GET", "/svc-json/t/v1/secret?_jsonp=cb", {}),  # before the permission check
        # Before authentication: a wrong application password would be a 401.
        ("GET", "/svc-json/t/v1/secret?_jsonp=cb", {"Authorization": "Basic YWRtaW46bm9wZQ=="}),
        ("POST", ECHO + "?_jsonp=cb&_method=FOO", {}),  # before the override (a 405)
        ("POST", ECHO + "?_jsonp=cb", {"X-HTTP-Method-Override": "FOO"}),
        ("GET", ECHO + "?_jsonp=cb&_envelope", {}),  # not enveloped: WordPress returns first
        ("GET", ECHO + "?_jsonp=cb&_embed", {}),
        ("DELETE", ECHO + "?_jsonp=cb", {}),
    ],
    ids=[
        "empty",
        "no-value",
        "list",
        "map",
        "encoded-name",
        "rest_route",
        "no-route",
        "raising-callback",
        "refused-permission",
        "bad-basic-credentials",
        "override-parameter",
        "override-header",
        "envelope",
        "embed",
        "delete",
    ],
)
def test_any_jsonp_is_refused_before_authentication_and_dispatch(
    client_for: ClientFor, method: str, url: str, headers: dict[str, str]
) -> None:
    response = client_for(make_app()).request(method, url, headers=headers)
    assert (response.status_code, response.json()) == (400, CALLBACK_DISABLED)
    assert response.headers["content-type"] == "application/json; charset=UTF-8"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "allow" not in response.headers


def test_head_with_jsonp_is_a_bodiless_400(client_for: ClientFor) -> None:
    response = client_for(make_app()).request("HEAD", ECHO + "?_jsonp=cb")
    assert (response.status_code, response.content) == (400, b"")


@pytest.mark.parametrize(
    "query", ["?_JSONP=cb", "?jsonp=cb", "?callback=cb", "?_jsonpx=cb", "?x=_jsonp"]
)
def test_other_names_are_not_jsonp(client_for: ClientFor, query: str) -> None:
    # PHP's $_GET keys are case-sensitive: only ``_jsonp`` itself is WordPress's parameter.
    response = client_for(make_app()).get(ECHO + query)
    assert (response.status_code, response.json()) == (200, {"method": "GET"})


def test_a_batch_item_with_jsonp_is_served(client_for: ClientFor) -> None:
    # WordPress checks ``_jsonp`` in serve_request only: a batch's own requests never see it.
    app = make_app()
    app.register_rest_route(
        "t/v1",
        "/batched",
        {
            "methods": "POST",
            "callback": lambda request: {"method": request.method},
            "permission_callback": public,
            "allow_batch": {"v1": True},
        },
    )
    response = client_for(app).post(
        "/svc-json/batch/v1",
        json={"requests": [{"method": "POST", "path": "/t/v1/batched?_jsonp=cb"}]},
    )
    assert response.status_code == 207
    assert response.json()["responses"][0]["body"] == {"method": "POST"}
