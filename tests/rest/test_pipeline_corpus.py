"""One pipeline: a corpus of requests answered identically however the pipeline is reached.

Two Apps get the same routes; the second also has a pass-through callback on every hook of
the pipeline (the prepared pipeline must not change an answer when a hook gains a callback).
Every request goes to both over ASGI and to the first over WSGI: status, header lines (in
order) and body must be identical, byte for byte. Exact answers are pinned where it matters.
"""

from __future__ import annotations

import asyncio
import io
import re
import warnings
from collections.abc import Callable, MutableMapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svcrest import App, RestError, public
from svcrest.auth.nonces import NonceManager
from svcrest.http.request import Request
from svcrest.http.response import Response

Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


async def _async_item(request: Request) -> dict[str, Any]:
    return {"id": request["id"], "async": True}


async def _async_allowed(request: Request) -> bool:
    return True


async def _async_raises(request: Request) -> Any:
    raise RestError("async_nope", "Not now.", {"status": 423})


async def _async_denied(request: Request) -> Any:
    return False


def _with_links(request: Request) -> Response:
    response = Response({"id": 1}, 201, {"X-Custom": "yes"})
    response.add_link("self", "http://example.org/1")
    return response


def _own_content_type(request: Request) -> Response:
    return Response({"text": "t"}, 200, {"Content-Type": "application/vnd.x+json"})


def _sets_fields(request: Request) -> dict[str, Any]:
    request["_fields"] = "a"
    return {"a": 1, "b": 2}


def _sets_envelope(request: Request) -> dict[str, Any]:
    request["_envelope"] = "1"
    return {"a": 1}


def _fails(request: Request) -> Any:
    raise ValueError("boom")


def _raises_rest_error(request: Request) -> Any:
    raise RestError("nope", "Not here.", {"status": 409})


def _counting_permission(calls: list[str]) -> Callable[[Request], bool]:
    def permission(request: Request) -> bool:
        calls.append(request.route)
        return True

    return permission


NOW = 1_800_000_000.0
SECRET = "pipeline-test-secret"


def build_app(calls: list[str], store: str | None = None) -> App:
    """An App whose routes exercise every kind of answer."""
    app = App("http://example.org", store=store, secret_key=SECRET, clock=lambda: NOW)

    def deprecated(request: Request) -> dict[str, Any]:
        app.deprecated_function("old_thing", "1.0", "new_thing")
        return {"old": True}

    def read(request: Request) -> dict[str, Any]:
        return {"id": int(request["id"]), "title": "item", "user": request.user.id}

    def read_private(request: Request) -> dict[str, Any]:
        return {"login": request.user.login}

    routes: dict[str, Any] = {
        r"/items/(?P<id>\d+)": [
            {"permission_callback": public, "methods": "GET", "callback": read},
            {"methods": "POST", "callback": read, "permission_callback": lambda r: False},
        ],
        "/list": {
            "permission_callback": public,
            "methods": "GET",
            "callback": lambda request: [1, 2, {"three": 3}],
        },
        "/echo": {
            "permission_callback": public,
            "methods": "GET",
            "callback": lambda request: {"q": request["q"], "all": request.get_params()},
        },
        "/scalar": {
            "permission_callback": public,
            "methods": "GET",
            "callback": lambda request: "text",
        },
        "/none": {
            "permission_callback": public,
            "methods": "GET",
            "callback": lambda request: None,
        },
        "/async/(?P<id>\\d+)": {
            "methods": "GET",
            "callback": _async_item,
            "permission_callback": _async_allowed,
        },
        "/async-only": {"permission_callback": public, "methods": "GET", "callback": _async_item},
        "/async-raises": {
            "permission_callback": public,
            "methods": "GET",
            "callback": _async_raises,
        },
        "/async-denied": {
            "methods": "GET",
            "callback": _async_item,
            "permission_callback": _async_denied,
        },
        "/async-permission-raises": {
            "methods": "GET",
            "callback": _async_item,
            "permission_callback": _async_raises,
        },
        "/links": {"permission_callback": public, "methods": "GET", "callback": _with_links},
        "/ctype": {"permission_callback": public, "methods": "GET", "callback": _own_content_type},
        "/fields": {"permission_callback": public, "methods": "GET", "callback": _sets_fields},
        "/envelope": {"permission_callback": public, "methods": "GET", "callback": _sets_envelope},
        "/fails": {"permission_callback": public, "methods": "GET", "callback": _fails},
        "/raises": {
            "permission_callback": public,
            "methods": "GET",
            "callback": _raises_rest_error,
        },
        "/returns-error": {
            "permission_callback": public,
            "methods": "GET",
            "callback": lambda request: RestError("gone", "Gone.", {"status": 410}),
        },
        "/denied": {"methods": "GET", "callback": read, "permission_callback": lambda r: False},
        "/private": {
            "methods": "GET",
            "callback": read_private,
            "permission_callback": lambda request: request.user.is_logged_in,
        },
        "/denied-error": {
            "methods": "GET",
            "callback": read,
            "permission_callback": lambda r: RestError("custom", "Custom.", {"status": 418}),
        },
        "/counted": {
            "methods": "GET",
            "callback": lambda request: {"ok": True},
            "permission_callback": _counting_permission(calls),
        },
        "/deprecated": {"permission_callback": public, "methods": "GET", "callback": deprecated},
        "/head-own": [
            {
                "permission_callback": public,
                "methods": "HEAD",
                "callback": lambda request: {"head": True},
            },
            {
                "permission_callback": public,
                "methods": "GET",
                "callback": lambda request: {"get": True},
            },
        ],
        "/args": {
            "permission_callback": public,
            "methods": "GET",
            "callback": lambda request: {"page": request["page"]},
            "args": {"page": {"type": "integer", "default": 1}},
        },
        "/no-callback": {"permission_callback": public, "methods": "GET", "callback": None},
        "/post-only": {"permission_callback": public, "methods": "POST", "callback": read},
    }
    for route, handlers in routes.items():
        app.register_rest_route("test/v1", route, handlers)
    return app


def run_asgi(app: App, method: str, target: str, headers: list[tuple[bytes, bytes]]) -> Answer:
    """One request (``target`` is the path and query) through the ASGI callable; the answer
    as sent."""
    path, _, query = target.partition("?")
    sent: list[MutableMapping[str, Any]] = []
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": headers,
        "server": ("example.org", 80),
        "client": ("127.0.0.1", 5000),
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start, body = sent
    return start["status"], _made_id(list(start["headers"])), body["body"]


_MADE_ID = re.compile(rb"[0-9a-f]{32}")


def _made_id(wire: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``wire`` with the ``X-Request-Id`` the site made (32 hexadecimal digits, checked)
    read as ``<made>``, so that two answers compare equal."""
    name, value = wire[-2] if wire[-1][0] == b"Content-Length" else wire[-1]
    assert name == b"X-Request-Id"
    assert _MADE_ID.fullmatch(value), value
    return [(n, b"<made>" if n == b"X-Request-Id" else v) for n, v in wire]


def run_wsgi(app: App, method: str, target: str, headers: list[tuple[bytes, bytes]]) -> Answer:
    """One request through the WSGI callable; the answer as sent, in ASGI's shape."""
    path, _, query = target.partition("?")
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": path.encode().decode("latin-1"),
        "QUERY_STRING": query,
        "SERVER_NAME": "example.org",
        "SERVER_PORT": "80",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b""),
    }
    for name, value in headers:
        key = name.decode("latin-1").upper().replace("-", "_")
        if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            key = "HTTP_" + key
        text = value.decode("latin-1")
        # A WSGI server joins repeated header lines with a comma.
        environ[key] = environ[key] + "," + text if key in environ else text
    started: list[Any] = []

    def start_response(status: str, response_headers: list[tuple[str, str]]) -> None:
        started.extend([status, response_headers])

    body = b"".join(app.wsgi(environ, start_response))
    status, response_headers = started
    wire = [(n.encode("latin-1"), v.encode("latin-1")) for n, v in response_headers]
    return int(status.split()[0]), _made_id(wire), body


RUNNERS = {"asgi": run_asgi, "wsgi": run_wsgi}


#: A pass-through callback on every hook of the pipeline, (name, callback, priority).
PASS_THROUGH: list[tuple[str, Callable[..., Any], int]] = [
    ("determine_current_user", lambda user, request: user, 5),
    ("rest_authentication_errors", lambda result, request: result, 5),
    ("rest_pre_dispatch", lambda result, server, request: result, 20),
    ("rest_request_before_callbacks", lambda response, handler, request: response, 10),
    ("rest_dispatch_request", lambda result, request, route, handler: result, 10),
    ("rest_request_after_callbacks", lambda response, handler, request: response, 10),
    ("rest_post_dispatch", lambda result, server, request: result, 5),
    ("rest_pre_serve_request", lambda served, result, request, server: served, 20),
]


class Pair:
    """The same site twice, sharing one store: ``fast`` as it is, ``general`` with a
    pass-through callback on every pipeline hook. ``cookie``, ``nonce`` and ``old_nonce``
    (of the previous tick) belong to a logged-in editor."""

    def __init__(self, store: str) -> None:
        self.fast_calls: list[str] = []
        self.general_calls: list[str] = []
        self.fast = build_app(self.fast_calls, store)
        self.general = build_app(self.general_calls, store)
        for name, callback, priority in PASS_THROUGH:
            self.general.hooks.add_filter(name, callback, priority)
        auth = self.fast.auth
        user = self.fast.users.create("editor", "editor-password-123", roles=("editor",))
        issued = auth.log_in(user, remember=False, ip="", user_agent="", secure=False)
        self.cookie = f"svc_logged_in={issued.value}".encode()
        self.nonce = auth.create_nonce("svc_rest", user.id, issued.token).encode()
        earlier = NonceManager(SECRET.encode(), lambda: NOW - 43_200)
        self.old_nonce = earlier.create("svc_rest", user.id, issued.token).encode()
        self.anonymous_nonce = auth.create_nonce("svc_rest", 0, "").encode()

    def both(
        self, method: str, path: str, headers: list[tuple[bytes, bytes]], adapter: str = "asgi"
    ) -> tuple[Answer, Answer]:
        """The answer of ``fast`` over ``adapter`` and of ``general`` over the other adapter;
        also checks that ``fast`` answers the same over both adapters."""
        other = "wsgi" if adapter == "asgi" else "asgi"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            first = RUNNERS[adapter](self.fast, method, path, headers)
            assert RUNNERS[other](self.fast, method, path, headers) == first
            return first, RUNNERS[other](self.general, method, path, headers)

    def credentials(self, which: str) -> list[tuple[bytes, bytes]]:
        """Request headers for one authentication situation."""
        forged = self.cookie[:-4] + b"0000"
        return {
            "none": [],
            "cookie": [(b"cookie", self.cookie)],
            "cookie+nonce": [(b"cookie", b"a=1; " + self.cookie), (b"x-svc-nonce", self.nonce)],
            "cookie+old nonce": [(b"cookie", self.cookie), (b"x-svc-nonce", self.old_nonce)],
            "cookie+bad nonce": [(b"cookie", self.cookie), (b"x-svc-nonce", b"0" * 10)],
            "forged cookie+nonce": [(b"cookie", forged), (b"x-svc-nonce", self.nonce)],
            "anonymous nonce": [(b"x-svc-nonce", self.anonymous_nonce)],
            "other cookie": [(b"Cookie", b"other=1")],
            "malformed cookie": [(b"cookie", b"svc_logged_in=x|y")],
        }[which]


CREDENTIALS = [
    "none",
    "cookie",
    "cookie+nonce",
    "cookie+old nonce",
    "cookie+bad nonce",
    "forged cookie+nonce",
    "anonymous nonce",
    "other cookie",
    "malformed cookie",
]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Pair:
    return Pair(str(tmp_path_factory.mktemp("pipeline") / "site.db"))


PATHS = [
    "/svc-json/test/v1/items/42",
    "/svc-json/test/v1/items/42/",
    "/svc-json/TEST/v1/Items/7",
    "/svc-json/test/v1/list",
    "/svc-json/test/v1/echo?q=caf%C3%A9&n=1",
    "/svc-json/test/v1/args?page=3",
    "/svc-json/test/v1/args?page=x",
    "/svc-json/test/v1/scalar",
    "/svc-json/test/v1/none",
    "/svc-json/test/v1/async/5",
    "/svc-json/test/v1/async-only",
    "/svc-json/test/v1/async-raises",
    "/svc-json/test/v1/async-denied",
    "/svc-json/test/v1/async-permission-raises",
    "/svc-json/test/v1/links",
    "/svc-json/test/v1/ctype",
    "/svc-json/test/v1/fields",
    "/svc-json/test/v1/envelope",
    "/svc-json/test/v1/fails",
    "/svc-json/test/v1/raises",
    "/svc-json/test/v1/returns-error",
    "/svc-json/test/v1/denied",
    "/svc-json/test/v1/private",
    "/svc-json/test/v1/denied-error",
    "/svc-json/test/v1/counted",
    "/svc-json/test/v1/deprecated",
    "/svc-json/test/v1/head-own",
    "/svc-json/test/v1/args",
    "/svc-json/test/v1/no-callback",
    "/svc-json/test/v1/post-only",
    "/svc-json/test/v1/nothing",
    "/svc-json/test/v1",
    "/svc-json/",
    "/svc-json",
]
ORIGINS = [
    None,
    b"http://example.com",
    b"https://a.example.org:8443",
    b"null",
    b"http://evil.example/path",
    b"javascript:alert(1)",
]


QUERIES = [
    "",
    "",
    "?q=1",
    "?page=2&q=a+b",
    "?_fields=id",
    "?%5Ffields=id",
    "?%5ffields=id",
    "?_envelope",
    "?_envelope=1&q=2",
    "?_wpnonce=0123456789",
    "?_method=DELETE",
    "?rest_route=/test/v1/list",
    "?q=%ZZ&r",
    "?=&&=x",
]


def _headers(origin: bytes | None, extra: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    headers = [(b"host", b"example.org")]
    if origin is not None:
        headers.append((b"origin", origin))
    return headers + extra


@pytest.mark.parametrize("method", ["GET", "HEAD"])
@pytest.mark.parametrize("path", PATHS)
def test_every_route_answers_the_same(pair: Pair, adapter: str, method: str, path: str) -> None:
    for origin in ORIGINS:
        fast, general = pair.both(method, path, _headers(origin, []), adapter)
        assert fast == general


@pytest.mark.parametrize("query", QUERIES)
def test_query_strings_answer_the_same(pair: Pair, adapter: str, query: str) -> None:
    for path in ("/svc-json/test/v1/echo", "/svc-json/test/v1/items/5", "/svc-json/test/v1/x"):
        fast, general = pair.both("GET", path + query, _headers(b"http://a.example", []), adapter)
        assert fast == general


def test_a_plain_read_answers_exactly(pair: Pair, adapter: str) -> None:
    status, headers, body = RUNNERS[adapter](
        pair.fast, "GET", "/svc-json/test/v1/items/42", _headers(b"http://example.com", [])
    )
    assert status == 200
    assert body == b'{"id":42,"title":"item","user":0}'
    assert headers == [
        (b"Content-Type", b"application/json; charset=UTF-8"),
        (b"X-Content-Type-Options", b"nosniff"),
        (b"X-Robots-Tag", b"noindex"),
        (b"Link", b'<http://example.org/svc-json/>; rel="https://api.w.org/"'),
        (b"Vary", b"Origin"),
        (
            b"Access-Control-Expose-Headers",
            b"X-SVC-Total, X-SVC-TotalPages, Link, ETag, RateLimit, RateLimit-Policy, Retry-After,"
            b" Idempotent-Replayed, X-Request-Id",
        ),
        (
            b"Access-Control-Allow-Headers",
            b"Authorization, X-SVC-Nonce, Content-Disposition, Content-MD5, Content-Type,"
            b" If-Match, If-None-Match, Idempotency-Key",
        ),
        (b"Allow", b"GET"),
        (b"Access-Control-Allow-Origin", b"http://example.com"),
        (b"Access-Control-Allow-Methods", b"POST, GET, OPTIONS, PUT, DELETE"),
        (b"Access-Control-Allow-Credentials", b"true"),
        # The strong validator of the exact body sent (BLAKE2b, 16 bytes).
        (b"ETag", b'"597ea6530a16816f533e5d87c8a9537d"'),
        (b"X-Request-Id", b"<made>"),
        (b"Content-Length", b"33"),
    ]


def test_permission_callbacks_run_once_per_answer_and_for_allow(pair: Pair) -> None:
    pair.fast_calls.clear()
    pair.general_calls.clear()
    fast, general = pair.both("GET", "/svc-json/test/v1/counted", _headers(None, []))
    assert fast == general
    # Once before the callback, once for the Allow header: ``fast`` answered over both
    # adapters, ``general`` over one.
    assert pair.fast_calls == ["/test/v1/counted"] * 4
    assert pair.general_calls == ["/test/v1/counted"] * 2


@pytest.mark.parametrize("which", CREDENTIALS)
@pytest.mark.parametrize(
    "path", ["/svc-json/test/v1/items/42", "/svc-json/test/v1/private", "/svc-json/test/v1/list"]
)
def test_authenticated_reads_answer_the_same(
    pair: Pair, adapter: str, which: str, path: str
) -> None:
    headers = _headers(b"http://example.com", pair.credentials(which))
    fast, general = pair.both("GET", path, headers, adapter)
    assert fast == general


def test_a_valid_cookie_and_nonce_log_the_editor_in(pair: Pair) -> None:
    fast, general = pair.both(
        "GET", "/svc-json/test/v1/private", _headers(None, pair.credentials("cookie+nonce"))
    )
    assert fast == general
    status, headers, body = fast
    assert (status, body) == (200, b'{"login":"editor"}')
    assert (b"Cache-Control", b"no-store") in headers
    refreshed = run_asgi(
        pair.fast, "GET", "/svc-json/test/v1/private", pair.credentials("cookie+old nonce")
    )
    assert (b"X-SVC-Nonce", pair.nonce) in refreshed[1]
    denied = run_asgi(
        pair.fast, "GET", "/svc-json/test/v1/private", pair.credentials("cookie+bad nonce")
    )
    assert denied[0] == 403
    assert b'"code":"rest_cookie_invalid_nonce"' in denied[2]


@pytest.mark.parametrize(
    "extra",
    [
        [(b"content-length", b"2"), (b"content-type", b"application/json")],
        [(b"transfer-encoding", b"chunked")],
    ],
)
def test_reads_announcing_a_body_answer_the_same(
    pair: Pair, adapter: str, extra: list[tuple[bytes, bytes]]
) -> None:
    fast, general = pair.both("GET", "/svc-json/test/v1/items/42", _headers(None, extra), adapter)
    assert fast == general
    assert fast[0] == 200


def _tag(name: str) -> Callable[..., Any]:
    """A filter that marks the response it sees with a header (or passes other values)."""

    def tag(value: Any, *args: Any) -> Any:
        if isinstance(value, Response):
            value.header("X-Tag", name, replace=False)
        for arg in args:
            if isinstance(arg, Response):
                arg.header("X-Tag", name, replace=False)
        return value

    return tag


def _other_user(user: Any, request: Request) -> Any:
    """``determine_current_user`` answering for a header of its own."""
    return user


def _refuse_on_header(result: Any, request: Request) -> Any:
    if request.get_header("X-Refuse"):
        return RestError("refused", "Refused.", {"status": 451})
    return result


def _served_by_filter(served: Any, result: Any, request: Request, server: Any) -> Any:
    return served or bool(request.get_header("X-Served"))


EXTRA_FILTERS: dict[str, list[tuple[str, Callable[..., Any], int]]] = {
    "determine_current_user": [("determine_current_user", _other_user, 5)],
    "rest_authentication_errors": [("rest_authentication_errors", _refuse_on_header, 5)],
    "rest_pre_dispatch": [("rest_pre_dispatch", _tag("pre"), 20)],
    "rest_post_dispatch": [("rest_post_dispatch", _tag("post"), 5)],
    "rest_pre_serve_request": [
        ("rest_pre_serve_request", _tag("serve"), 20),
        ("rest_pre_serve_request", _served_by_filter, 30),
    ],
    "rest_request_before_callbacks": [("rest_request_before_callbacks", _tag("before"), 10)],
    "rest_request_after_callbacks": [("rest_request_after_callbacks", _tag("after"), 10)],
}


@pytest.mark.parametrize("hook", sorted(EXTRA_FILTERS))
def test_extra_filters_answer_the_same_on_both_adapters(
    tmp_path: Any, adapter: str, hook: str
) -> None:
    pair = Pair(str(tmp_path / "site.db"))
    for app in (pair.fast, pair.general):
        for name, callback, priority in EXTRA_FILTERS[hook]:
            app.hooks.add_filter(name, callback, priority)
    extras: list[list[tuple[bytes, bytes]]] = [
        [],
        [(b"x-refuse", b"1")],
        [(b"x-served", b"1")],
        pair.credentials("cookie+nonce"),
    ]
    for path in PATHS[:12]:
        for extra in extras:
            headers = _headers(b"http://example.com", extra)
            fast, general = pair.both("GET", path, headers, adapter)
            assert fast == general, (path, extra)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    method=st.sampled_from(["GET", "HEAD"]),
    path=st.sampled_from(PATHS)
    | st.builds(
        lambda segment, tail: f"/svc-json/test/v1/{segment}{tail}",
        st.sampled_from(["items", "ITEMS", "async", "list", "args", "x"]),
        st.sampled_from(["", "/", "/1", "/01", "/-1", "/1/2", "/%", "/é", "/9" * 3]),
    ),
    origin=st.sampled_from(ORIGINS) | st.binary(max_size=30),
    duplicate_origin=st.booleans(),
    which=st.sampled_from(CREDENTIALS),
    adapter=st.sampled_from(sorted(RUNNERS)),
    query=st.sampled_from(QUERIES),
)
def test_generated_reads_answer_the_same(
    pair: Pair,
    method: str,
    path: str,
    origin: bytes | None,
    duplicate_origin: bool,
    which: str,
    adapter: str,
    query: str,
) -> None:
    extra = [(b"origin", b"http://second.example")] if duplicate_origin else []
    headers = _headers(origin, extra + pair.credentials(which))
    target = path + query if "?" not in path else path
    fast, general = pair.both(method, target, headers, adapter)
    assert fast == general
