"""Access log redaction (issue 13): no nonce or password in a logged request line."""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import MutableMapping
from typing import Any

import pytest

import svcrest
from svcrest import App
from svcrest.http.request_id import ACCESS_LOG, ENV_ACCESS_LOG, LOGGED_REQUEST, _AccessLog
from svcrest.serve.accesslog import RedactSecrets, redact


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/svc-json/?_wpnonce=abc123", "/svc-json/?_wpnonce=[redacted]"),
        ("/a?x=1&_wpnonce=abc&y=2", "/a?x=1&_wpnonce=[redacted]&y=2"),
        ("/login?log=ed&pwd=hunter2", "/login?log=ed&pwd=[redacted]"),
        ("/a?PASSWORD=p;_WPNONCE=n", "/a?PASSWORD=[redacted];_WPNONCE=[redacted]"),
        ("_wpnonce=first", "_wpnonce=[redacted]"),
        ("/a?my_wpnonce=kept&nonce=kept", "/a?my_wpnonce=kept&nonce=kept"),
        ("/plain/path", "/plain/path"),
        ("/n?%5Fwpnonce=abc", "/n?%5Fwpnonce=[redacted]"),
        ("/n?%5F%77%70nonce=abc&a=1", "/n?%5F%77%70nonce=[redacted]&a=1"),
        ("/n?_wpnonce[]=abc&_wpnonce[]=d", "/n?_wpnonce[]=[redacted]&_wpnonce[]=[redacted]"),
        ("/n?_wpnonce%5B%5D=abc", "/n?_wpnonce%5B%5D=[redacted]"),
        ("/n?%70%77%64=hunter2", "/n?%70%77%64=[redacted]"),
        ("/a=b/c?_wpnonce=1", "/a=b/c?_wpnonce=[redacted]"),
        ("/n?_wpnonce=a?b=c&x=1", "/n?_wpnonce=[redacted]&x=1"),
        ("/n?_wpnonce=", "/n?_wpnonce=[redacted]"),
        ("%5Fwpnonce=abc&x=1", "%5Fwpnonce=[redacted]&x=1"),
    ],
    ids=[
        "only",
        "middle",
        "password",
        "upper-case",
        "query-string",
        "other-names",
        "none",
        "encoded-underscore",
        "encoded-letters",
        "brackets",
        "encoded-brackets",
        "encoded-pwd",
        "equals-in-path",
        "question-mark-in-value",
        "empty",
        "encoded-query-string",
    ],
)
def test_redact(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_filter_rewrites_uvicorn_and_granian_records() -> None:
    uvicorn_record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5", "GET", "/n?_wpnonce=S", "1.1", 403),
        None,
    )
    assert RedactSecrets().filter(uvicorn_record) is True
    assert uvicorn_record.getMessage() == '127.0.0.1:5 - "GET /n?_wpnonce=[redacted] HTTP/1.1" 403'
    granian_record = logging.LogRecord(
        "granian.access",
        logging.INFO,
        __file__,
        1,
        "%(path)s?%(query_string)s %(status)d",
        None,
        None,
    )
    granian_record.args = {"path": "/n", "query_string": "_wpnonce=S&a=1", "status": 403}
    assert RedactSecrets().filter(granian_record) is True
    assert granian_record.getMessage() == "/n?_wpnonce=[redacted]&a=1 403"


def test_control_characters_are_escaped_in_both_servers_records() -> None:
    """A decoded ``%0D%0A`` in a path cannot start a forged line; ``%1B`` reaches no terminal."""
    forged = '/n\r\n127.0.0.1 - "GET /admin HTTP/1.1" 200\x1b[2J\x9b\x7f\\'
    granian_record = logging.LogRecord(
        "granian.access", logging.INFO, __file__, 1, '"%(path)s" %(status)d', None, None
    )
    granian_record.args = {"path": forged, "status": 404}
    assert RedactSecrets().filter(granian_record) is True
    assert granian_record.getMessage() == (
        '"/n\\x0d\\x0a127.0.0.1 - "GET /admin HTTP/1.1" 200\\x1b[2J\\x9b\\x7f\\\\" 404'
    )
    uvicorn_record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5", "GET", "/a\nb?_wpnonce=S\x00", "1.1", 404),
        None,
    )
    assert RedactSecrets().filter(uvicorn_record) is True
    message = uvicorn_record.getMessage()
    assert message == '127.0.0.1:5 - "GET /a\\x0ab?_wpnonce=[redacted] HTTP/1.1" 404'
    assert "\n" not in message and "\x1b" not in message
    # A message given whole (no arguments) is escaped too; printable text is untouched.
    whole = logging.LogRecord("x", logging.INFO, __file__, 1, "GET /é\r\n", None, None)
    assert RedactSecrets().filter(whole) is True
    assert whole.getMessage() == "GET /é\\x0d\\x0a"


# -- the request an access-log line names -----------------------------------------------------


def _served_through_asgi(app: Any, path: str = "/svc-json/") -> Any:
    """The request the ASGI adapter left for the access log of one GET, seen when the
    answer's head is sent (where uvicorn writes its line)."""
    seen: list[Any] = []
    scope = {
        "type": "http",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "query_string": b"",
        "headers": [(b"host", b"example.org"), (b"x-request-id", b"line-1")],
        "client": ("127.0.0.1", 5000),
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            seen.append(LOGGED_REQUEST.get())

    async def serve() -> None:  # a fresh context, as a server's task for the request
        await app(scope, receive, send)

    # In an empty context: an earlier test's in-process request may have left one named.
    contextvars.Context().run(asyncio.run, serve())
    return seen[0]


def test_the_adapters_name_the_request_only_for_an_access_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = App("http://example.org")
    monkeypatch.setattr(ACCESS_LOG, "on", False)
    assert _served_through_asgi(app) is None
    monkeypatch.setattr(ACCESS_LOG, "on", True)
    ctx = _served_through_asgi(app)
    assert (ctx.request_id, ctx.matched_route, ctx.user.id) == ("line-1", "/", 0)


def test_a_worker_reads_whether_its_server_logs_access(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SVCREST_ACCESS_LOG", "1")
    assert _AccessLog().on is True
    monkeypatch.setenv("SVCREST_ACCESS_LOG", "0")
    assert _AccessLog().on is False
    monkeypatch.delenv("SVCREST_ACCESS_LOG")
    assert _AccessLog().on is False
    assert ENV_ACCESS_LOG == "SVCREST_ACCESS_LOG"


def test_a_handler_that_raises_is_logged_under_its_route(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    app = App("http://example.org")

    def boom(request: Any) -> Any:
        raise RuntimeError("the handler's own mistake")

    app.register_rest_route(
        "t/v1",
        r"/boom/(?P<id>\d+)",
        {"methods": "GET", "callback": boom, "permission_callback": svcrest.public},
    )
    monkeypatch.setattr(ACCESS_LOG, "on", True)
    with caplog.at_level(logging.ERROR, logger="svcrest"):
        ctx = _served_through_asgi(app, "/svc-json/t/v1/boom/3")
    assert (ctx.request_id, ctx.matched_route, ctx.user.id) == (
        "line-1",
        r"/t/v1/boom/(?P<id>\d+)",
        0,
    )
    (record,) = [record for record in caplog.records if record.name == "svcrest"]
    assert (
        record.getMessage()
        == "Unhandled exception while dispatching GET /t/v1/boom/3 (request line-1)"
    )
    assert record.__dict__["route"] == r"/t/v1/boom/(?P<id>\d+)"
    assert record.__dict__["request_id"] == "line-1"
    assert record.exc_info is not None and str(record.exc_info[1]) == "the handler's own mistake"
