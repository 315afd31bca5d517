"""Serving over HTTP (both adapters): REST detection, headers, HEAD, overrides, bad input."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest

from svcrest import App, Request, Response, RestError, is_rest_request, public
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
ROOT_LINK = '<http://127.0.0.1:8000/svc-json/>; rel="https://api.w.org/"'


def make_app(**kwargs: Any) -> App:
    app = App(**kwargs)
    app.register_rest_route(
        "demo/v1",
        r"/items/(?P<id>\d+)",
        [
            {
                "permission_callback": public,
                "methods": "GET",
                "callback": lambda r: {"id": int(r["id"]), "title": "item"},
            },
            {
                "permission_callback": public,
                "methods": "PUT, DELETE",
                "callback": lambda r: {"method": r.method},
            },
        ],
    )
    app.register_rest_route(
        "demo/v1",
        "/echo",
        {
            "permission_callback": public,
            "methods": "GET, POST, PUT, PATCH, DELETE",
            "callback": lambda r: {"method": r.method, "params": r.get_params()},
        },
    )
    return app


def test_prefix_path_is_rest(client_for: ClientFor) -> None:
    client = client_for(make_app())
    response = client.get("/svc-json/demo/v1/items/42")
    assert response.status_code == 200
    assert response.json() == {"id": 42, "title": "item"}


@pytest.mark.parametrize("path", ["/svc-json", "/svc-json/"])
def test_prefix_alone_is_the_root_index(client_for: ClientFor, path: str) -> None:
    response = client_for(make_app()).get(path)
    assert response.status_code == 200
    assert response.json()["namespaces"] == ["svc/v2", "demo/v1"]


def test_one_trailing_slash_is_ignored(client_for: ClientFor) -> None:
    client = client_for(make_app())
    assert client.get("/svc-json/demo/v1/items/42/").status_code == 200
    assert client.get("/svc-json/demo/v1/items/42//").status_code == 404


def test_prefix_must_end_a_segment(client_for: ClientFor) -> None:
    response = client_for(make_app()).get("/svc-jsonx/demo/v1/items/42")
    assert response.status_code == 404
    assert response.headers["content-type"] == "text/html; charset=UTF-8"


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("/?rest_route=/demo/v1/items/42", 200),
        ("/?rest_route=/demo/v1/items/42/", 200),
        ("/anything?rest_route=/demo/v1/items/42", 200),
        ("/?rest_route=demo/v1/items/42", 200),
        ("/?rest_route=/", 200),
    ],
)
def test_rest_route_query_variable(client_for: ClientFor, url: str, status: int) -> None:
    response = client_for(make_app()).get(url)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json; charset=UTF-8"


def test_empty_rest_route_is_not_rest(client_for: ClientFor) -> None:
    response = client_for(make_app()).get("/?rest_route=")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=UTF-8"


def test_non_string_rest_route_is_400(client_for: ClientFor) -> None:
    response = client_for(make_app()).get("/?rest_route[]=/a")
    assert response.status_code == 400
    assert response.json()["code"] == "rest_path_invalid_type"


def test_default_rest_headers_each_on_its_own_line(client_for: ClientFor) -> None:
    response = client_for(make_app()).get("/svc-json/demo/v1/items/1")
    lines = [(k.lower(), v) for k, v in response.headers.multi_items()]
    for line in [
        ("content-type", "application/json; charset=UTF-8"),
        ("x-content-type-options", "nosniff"),
        ("x-robots-tag", "noindex"),
        ("link", ROOT_LINK),
        ("vary", "Origin"),
        (
            "access-control-expose-headers",
            "X-SVC-Total, X-SVC-TotalPages, Link, ETag, RateLimit, RateLimit-Policy, Retry-After,"
            " Idempotent-Replayed, X-Request-Id",
        ),
        (
            "access-control-allow-headers",
            "Authorization, X-SVC-Nonce, Content-Disposition, Content-MD5, Content-Type,"
            " If-Match, If-None-Match, Idempotency-Key",
        ),
        ("allow", "GET, PUT, DELETE"),
    ]:
        assert line in lines
    assert "cache-control" not in response.headers  # anonymous


def test_error_responses_carry_default_headers(client_for: ClientFor) -> None:
    response = client_for(make_app()).get("/svc-json/nope")
    assert response.status_code == 404
    assert response.json() == {
        "code": "rest_no_route",
        "message": "No route was found matching the URL and request method.",
        "data": {"status": 404},
    }
    assert response.headers["vary"] == "Origin"
    assert response.headers["x-content-type-options"] == "nosniff"


def test_405_with_allow(client_for: ClientFor) -> None:
    response = client_for(make_app()).post("/svc-json/demo/v1/items/1")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, PUT, DELETE"
    assert response.json()["code"] == "rest_no_route"


def test_head_runs_get_without_body(client_for: ClientFor) -> None:
    client = client_for(make_app())
    get = client.get("/svc-json/demo/v1/items/42")
    head = client.request("HEAD", "/svc-json/demo/v1/items/42")
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-length"] == str(len(get.content))


@pytest.mark.parametrize(
    ("method", "url", "headers", "expected"),
    [
        ("POST", "/svc-json/demo/v1/echo", {"X-HTTP-Method-Override": "PUT"}, "PUT"),
        ("POST", "/svc-json/demo/v1/echo?_method=delete", {}, "DELETE"),
        ("GET", "/svc-json/demo/v1/echo?_method=DELETE", {}, "GET"),
        ("PUT", "/svc-json/demo/v1/echo", {"X-HTTP-Method-Override": "DELETE"}, "PUT"),
    ],
    ids=["header-on-post", "query-on-post", "ignored-on-get", "ignored-on-put"],
)
def test_method_override_on_post_only(
    client_for: ClientFor, method: str, url: str, headers: dict[str, str], expected: str
) -> None:
    response = client_for(make_app()).request(method, url, headers=headers)
    assert response.json()["method"] == expected


def test_envelope(client_for: ClientFor) -> None:
    app = make_app()
    app.register_rest_route(
        "demo/v1",
        "/gone",
        {
            "permission_callback": public,
            "callback": lambda r: Response({"x": 1}, 410, {"X-Thing": "yes"}),
        },
    )
    client = client_for(app)
    for url in ("/svc-json/demo/v1/gone?_envelope", "/svc-json/demo/v1/gone?_envelope=1"):
        response = client.get(url)
        assert response.status_code == 200
        assert response.json() == {
            "body": {"x": 1},
            "status": 410,
            "headers": {"X-Thing": "yes", "Allow": "GET"},
        }


def test_fields(client_for: ClientFor) -> None:
    app = make_app()
    app.register_rest_route(
        "demo/v1",
        "/rich",
        {
            "permission_callback": public,
            "callback": lambda r: [{"a": 1, "b": {"c": 2, "d": 3}, "e": 4}, {"a": 5}],
        },
    )
    client = client_for(app)
    assert client.get("/svc-json/demo/v1/rich?_fields=a,b.c").json() == [
        {"a": 1, "b": {"c": 2}},
        {"a": 5},
    ]
    assert client.get("/svc-json/demo/v1/rich?_fields[]=e").json() == [{"e": 4}, {}]


def test_links_are_sent_under__links(client_for: ClientFor) -> None:
    app = make_app()

    def linked(request: Request) -> Response:
        response = Response({"id": 1})
        response.add_link("self", "http://127.0.0.1:8000/svc-json/demo/v1/linked")
        response.add_link("author", "http://x/users/1", embeddable=True)
        return response

    app.register_rest_route(
        "demo/v1", "/linked", {"permission_callback": public, "callback": linked}
    )
    body = client_for(app).get("/svc-json/demo/v1/linked").json()
    assert body == {
        "id": 1,
        "_links": {
            "self": [{"href": "http://127.0.0.1:8000/svc-json/demo/v1/linked"}],
            "author": [{"href": "http://x/users/1", "embeddable": True}],
        },
    }


@pytest.mark.parametrize("status", [204, 200])
def test_no_content_bodies_are_empty(client_for: ClientFor, status: int) -> None:
    app = make_app()
    app.register_rest_route(
        "demo/v1",
        "/empty",
        {
            "permission_callback": public,
            "callback": lambda r: Response(None if status == 200 else "x", status),
        },
    )
    response = client_for(app).get("/svc-json/demo/v1/empty")
    assert response.status_code == status
    assert response.content == b""
    assert response.headers.get("content-length") == (None if status == 204 else "0")


def test_json_body_reaches_params(client_for: ClientFor) -> None:
    response = client_for(make_app()).post("/svc-json/demo/v1/echo", json={"a": [1, 2]})
    assert response.json()["params"] == {"a": [1, 2]}


def test_form_body_reaches_params(client_for: ClientFor) -> None:
    response = client_for(make_app()).post(
        "/svc-json/demo/v1/echo", data={"a": "1", "b[]": ["x", "y"]}
    )
    assert response.json()["params"] == {"a": "1", "b": ["x", "y"]}


@pytest.mark.parametrize(
    "body",
    [b"{bad", b"NaN", b"[" * 600 + b"]" * 600, b"\xff\xfe\xfd", b"123456789012345678901234567"],
    ids=["malformed", "nan", "too-deep", "invalid-utf8", "huge-int"],
)
def test_bad_json_is_400_and_nothing_runs(client_for: ClientFor, body: bytes) -> None:
    app = App()
    ran: list[str] = []
    app.register_rest_route(
        "demo/v1",
        "/w",
        {"permission_callback": public, "methods": "POST", "callback": lambda r: ran.append("x")},
    )
    response = client_for(app).post(
        "/svc-json/demo/v1/w", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["code"] == "rest_invalid_json"
    assert ran == []


def test_body_over_the_limit_is_413(client_for: ClientFor) -> None:
    app = make_app(max_body_size=1024)
    response = client_for(app).post("/svc-json/demo/v1/echo", content=b"x" * 2048)
    assert response.status_code == 413
    assert response.json() == {
        "code": "rest_request_too_large",
        "message": "The request body is too large.",
        "data": {"status": 413, "max_body_size": 1024},
    }


def test_unexpected_exception_is_a_clean_500(
    client_for: ClientFor, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app()

    def boom(request: Request) -> None:
        raise RuntimeError("internal detail")

    app.register_rest_route("demo/v1", "/boom", {"permission_callback": public, "callback": boom})
    response = client_for(app).get("/svc-json/demo/v1/boom")
    assert response.status_code == 500
    assert response.json() == {
        "code": "rest_internal_error",
        "message": "Internal server error.",
        "data": {"status": 500},
    }
    assert "internal detail" not in response.text


def test_unserialisable_data_is_a_clean_500(client_for: ClientFor) -> None:
    app = make_app()
    app.register_rest_route(
        "demo/v1", "/obj", {"permission_callback": public, "callback": lambda r: {"x": object()}}
    )
    response = client_for(app).get("/svc-json/demo/v1/obj")
    assert response.status_code == 500
    assert response.json()["code"] == "rest_internal_error"


def test_exception_in_a_hook_is_a_clean_500(client_for: ClientFor) -> None:
    app = make_app()

    def broken(response: Any, server: Any, request: Any) -> Any:
        raise KeyError("hook")

    app.hooks.add_filter("rest_post_dispatch", broken)
    response = client_for(app).get("/svc-json/demo/v1/items/1")
    assert response.status_code == 500
    assert response.json()["code"] == "rest_internal_error"


def test_authentication_error_filter_stops_dispatch(client_for: ClientFor) -> None:
    app = make_app()
    app.hooks.add_filter(
        "rest_authentication_errors",
        lambda result, request: RestError("locked", "Locked.", {"status": 423}),
    )
    response = client_for(app).get("/svc-json/demo/v1/items/1")
    assert response.status_code == 423
    assert response.json()["code"] == "locked"


def test_is_rest_request_only_while_serving_rest(client_for: ClientFor) -> None:
    app = make_app()
    seen: list[bool] = []

    def flag(request: Request) -> str:
        seen.append(is_rest_request())
        return "ok"

    app.register_rest_route("demo/v1", "/flag", {"permission_callback": public, "callback": flag})
    client_for(app).get("/svc-json/demo/v1/flag")
    app.rest_do_request("/demo/v1/flag")
    assert seen == [True, False]
    assert is_rest_request() is False


def test_non_rest_404_is_html_with_link(client_for: ClientFor) -> None:
    response = client_for(make_app()).get("/no/such/page")
    assert response.status_code == 404
    assert response.headers["content-type"] == "text/html; charset=UTF-8"
    assert response.headers.get_list("link") == [ROOT_LINK]
    assert "rest_no_route" not in response.text


def test_filtered_prefix_changes_what_is_served(client_for: ClientFor) -> None:
    app = make_app()
    app.hooks.add_filter("rest_url_prefix", lambda prefix: "api")
    client = client_for(app)
    assert client.get("/api/demo/v1/items/3").json() == {"id": 3, "title": "item"}
    assert client.get("/svc-json/demo/v1/items/3").status_code == 404


def test_home_with_a_path(client_for: ClientFor) -> None:
    app = make_app(home="http://127.0.0.1:8000/blog")
    client = client_for(app, "http://127.0.0.1:8000")
    assert client.get("/blog/svc-json/demo/v1/items/3").status_code == 200
    assert client.get("/svc-json/demo/v1/items/3").status_code == 404


def test_site_app_answers_non_rest_requests_with_link(client_for: ClientFor) -> None:
    async def site(scope: Any, receive: Any, send: Any) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/plain"), (b"link", b"<x>; rel=y")],
            }
        )
        await send({"type": "http.response.body", "body": b"site:" + scope["path"].encode()})

    app = make_app(site=site)
    client = client_for(app)
    response = client.get("/hello")
    assert response.text == "site:/hello"
    assert response.headers.get_list("link") == ["<x>; rel=y", ROOT_LINK]
    assert client.get("/svc-json/demo/v1/items/9").json()["id"] == 9


def test_concurrent_requests_do_not_share_state() -> None:
    app = App()

    async def who(request: Request) -> dict[str, Any]:
        tag = request.get_header("X-Tag")
        app.deprecated_function(f"fn_{tag}", "1.0")
        await asyncio.sleep(0.001)
        return {"tag": tag, "rest": is_rest_request()}

    app.register_rest_route("demo/v1", "/who", {"permission_callback": public, "callback": who})

    async def main() -> list[httpx.Response]:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url=app.home
        ) as client:
            return await asyncio.gather(
                *(
                    client.get("/svc-json/demo/v1/who", headers={"X-Tag": str(i)})
                    for i in range(150)
                )
            )

    for index, response in enumerate(asyncio.run(main())):
        assert response.json() == {"tag": str(index), "rest": True}
        assert response.headers.get_list("x-svc-deprecatedfunction") == [
            f"fn_{index} (since 1.0; no alternative available)"
        ]


def test_lifespan_is_answered() -> None:
    app = App()
    sent: list[dict[str, Any]] = []
    messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])

    async def receive() -> dict[str, Any]:
        return next(messages)

    async def send(message: Any) -> None:
        sent.append(message)

    asyncio.run(app({"type": "lifespan"}, receive, send))
    assert sent == [{"type": "lifespan.startup.complete"}, {"type": "lifespan.shutdown.complete"}]


@pytest.mark.parametrize(("size", "status"), [(100, 200), (2048, 413)])
def test_wsgi_chunked_body_without_length(size: int, status: int) -> None:
    import io

    app = make_app(max_body_size=1024)
    body = b'{"a": "' + b"x" * (size - 9) + b'"}'
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/svc-json/demo/v1/echo",
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "wsgi.url_scheme": "http",
        "CONTENT_TYPE": "application/json",
        "wsgi.input": io.BytesIO(body),
        "wsgi.input_terminated": True,
    }
    statuses: list[str] = []
    chunks = app.wsgi(environ, lambda line, headers: statuses.append(line))
    assert statuses[0].startswith(str(status))
    if status == 200:
        assert orjson.loads(b"".join(chunks))["params"] == {"a": "x" * (size - 9)}


def test_multi_segment_prefix_keeps_site_pages(client_for: ClientFor) -> None:
    app = make_app(home="http://127.0.0.1:8000/blog")
    app.hooks.add_filter("rest_url_prefix", lambda prefix: "api/v2")
    client = client_for(app, "http://127.0.0.1:8000")
    assert client.get("/blog/api/v2/demo/v1/items/3").json() == {"id": 3, "title": "item"}
    assert client.get("/blog/rsd.xml").status_code == 200
    assert client.get("/blog/api/rsd.xml").status_code == 404


def test_spec_shaped_one_argument_filters_work(client_for: ClientFor) -> None:
    app = make_app()
    seen: list[Any] = []

    def served(value: Any) -> Any:
        seen.append(value)
        return value

    app.hooks.add_filter("rest_pre_serve_request", served)
    app.hooks.add_filter("rest_authentication_errors", lambda result: result)
    app.hooks.add_filter("rest_post_dispatch", lambda response: response)
    app.hooks.add_filter("rest_pre_dispatch", lambda response: response)
    response = client_for(app).get("/svc-json/demo/v1/items/5", headers={"Origin": "http://a.b"})
    assert response.json() == {"id": 5, "title": "item"}
    assert response.headers["access-control-allow-origin"] == "http://a.b"
    assert seen == [False]
