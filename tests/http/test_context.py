"""The request context and the HTTP request each adapter builds: every field from its own
source (both are built by position, for speed: a swap of two string fields would type-check,
so this test gives each field a value of its own and reads each back)."""

from __future__ import annotations

import asyncio
import dataclasses
import io
from collections.abc import MutableMapping
from typing import Any

import pytest

from svcrest import App, Request, public
from svcrest.http.context import RequestContext, current_context
from svcrest.http.exchange import HttpRequest
from svcrest.http.headers import Headers
from svcrest.http.user import ANONYMOUS

SEEN: list[dict[str, Any]] = []


def _see(request: Request) -> dict[str, bool]:
    ctx = current_context()
    assert ctx is not None
    SEEN.append(
        {
            "ctx": (ctx.is_rest, ctx.secure, ctx.host, ctx.client, ctx.request_id),
            "request": (request.method, request.route, request.query_string),
        }
    )
    return {"ok": True}


@pytest.fixture
def app() -> App:
    site = App("https://fields.example")
    site.register_rest_route(
        "f/v1", "/see", {"methods": "GET", "callback": _see, "permission_callback": public}
    )
    SEEN.clear()
    return site


EXPECTED = {
    "ctx": (True, True, "h.example", "10.1.2.3", "id-77"),
    "request": ("GET", "/f/v1/see", "q=1"),
}


def test_the_asgi_adapter_fills_every_field(app: App) -> None:
    scope = {
        "type": "http",
        "method": "GET",
        "scheme": "https",
        "path": "/svc-json/f/v1/see",
        "query_string": b"q=1",
        "headers": [(b"host", b"h.example:8443"), (b"x-request-id", b"id-77")],
        "client": ("10.1.2.3", 5000),
        "server": ("s.example", 8443),
    }
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 200
    (seen,) = SEEN
    assert {key: seen[key] for key in EXPECTED} == EXPECTED


def test_the_wsgi_adapter_fills_every_field(app: App) -> None:
    environ = {
        "REQUEST_METHOD": "GET",
        "SCRIPT_NAME": "",
        "PATH_INFO": "/svc-json/f/v1/see",
        "QUERY_STRING": "q=1",
        "SERVER_NAME": "s.example",
        "SERVER_PORT": "8443",
        "REMOTE_ADDR": "10.1.2.3",
        "HTTP_HOST": "h.example:8443",
        "HTTP_X_REQUEST_ID": "id-77",
        "wsgi.url_scheme": "https",
        "wsgi.input": io.BytesIO(b""),
    }
    started: list[str] = []
    body = b"".join(app.wsgi(environ, lambda status, headers: started.append(status)))
    assert (started, body) == (["200 OK"], b'{"ok":true}')
    (seen,) = SEEN
    assert {key: seen[key] for key in EXPECTED} == EXPECTED


def test_the_serving_factory_sets_every_field() -> None:
    http = HttpRequest("GET", "/svc-json/", "", Headers(), b"", "https", "a.example", "10.0.0.7")
    ctx = RequestContext.serving(http, True, "r-1")
    fields = {field.name: getattr(ctx, field.name) for field in dataclasses.fields(ctx)}
    assert fields == {
        "is_rest": True,
        "user": ANONYMOUS,
        "cookie_status": None,
        "session_token": "",
        "pending_headers": None,
        "secure": True,
        "host": "a.example",
        "method_overridden": "",
        "client": "10.0.0.7",
        "auth_error": None,
        "request_id": "r-1",
        "matched_route": "",
        "app_password_uuid": "",
        "app_password_scope": None,
    }
    assert ctx == RequestContext(
        is_rest=True, secure=True, host="a.example", client="10.0.0.7", request_id="r-1"
    )


def test_each_adapter_sets_every_request_field() -> None:
    """Both adapters set the fields one by one (no generated ``__init__``): a field added to
    ``HttpRequest`` and not set by one of them fails here."""
    from svcrest.serve.asgi import _request as asgi_request
    from svcrest.serve.wsgi import _request as wsgi_request

    environ = {
        "REQUEST_METHOD": "get",
        "PATH_INFO": "/svc-json/f/v1/see",
        "QUERY_STRING": "q=1",
        "SERVER_NAME": "s.example",
        "REMOTE_ADDR": "10.1.2.3",
        "HTTP_HOST": "H.example:8443",
        "wsgi.url_scheme": "https",
    }
    scope = {
        "type": "http",
        "method": "get",
        "scheme": "https",
        "path": "/svc-json/f/v1/see",
        "query_string": b"q=1",
        "headers": [(b"host", b"H.example:8443")],
        "client": ("10.1.2.3", 5000),
    }
    expected = {
        "method": "GET",
        "path": "/svc-json/f/v1/see",
        "query_string": "q=1",
        "headers": [("Host", "H.example:8443")],
        "body": b"",
        "scheme": "https",
        "host": "h.example",
        "client": "10.1.2.3",
    }
    for http in (wsgi_request(environ), asgi_request(scope)[0]):
        fields = {field.name: getattr(http, field.name) for field in dataclasses.fields(http)}
        fields["headers"] = [(name.title(), value) for name, value in http.headers.items_list()]
        assert fields == expected
