"""``--log-format json``: one object a line with exact fields, from both servers' access
records (redacted) and from the site's own records."""

from __future__ import annotations

import json
import logging
import re
import sys

from svcrest.http.context import RequestContext
from svcrest.http.request_id import LOGGED_REQUEST
from svcrest.http.user import User
from svcrest.serve.accesslog import RedactSecrets
from svcrest.serve.jsonlog import JsonFormatter, json_line
from svcrest.serve.launcher import _log_config

TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00")


def _line(record: logging.LogRecord, answered: RequestContext | None) -> dict[str, object]:
    token = LOGGED_REQUEST.set(answered)
    try:
        RedactSecrets().filter(record)
    finally:
        LOGGED_REQUEST.reset(token)
    fields = json.loads(JsonFormatter().format(record))
    assert TIME.fullmatch(fields.pop("time")), fields
    return dict(fields)


def _answered() -> RequestContext:
    return RequestContext(
        is_rest=True,
        user=User(5, "editor"),
        request_id="edge-1",
        matched_route=r"/demo/v1/notes/(?P<id>\d+)",
    )


def test_a_uvicorn_access_line() -> None:
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        "h11_impl.py",
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", "/svc-json/demo/v1/notes/3?_wpnonce=abc", "1.1", 200),
        None,
    )
    assert _line(record, _answered()) == {
        "level": "INFO",
        "logger": "uvicorn.access",
        "message": '127.0.0.1:5000 - "GET /svc-json/demo/v1/notes/3?_wpnonce=[redacted] HTTP/1.1"'
        " 200",
        "request_id": "edge-1",
        "method": "GET",
        "route": r"/demo/v1/notes/(?P<id>\d+)",
        "status": 200,
        "duration_ms": None,
        "user_id": 5,
        "path": "/svc-json/demo/v1/notes/3?_wpnonce=[redacted]",
    }


def test_a_granian_access_line() -> None:
    args = {
        "addr": "127.0.0.1",
        "method": "POST",
        "path": "/login",
        "query_string": "pwd=hunter2&x=1",
        "status": 303,
        "dt_ms": 1.23456,
        "protocol": "HTTP/1.1",
        "time": "t",
    }
    record = logging.LogRecord(
        "granian.access", logging.INFO, "log.py", 1, '"%(method)s %(path)s" %(status)d', None, None
    )
    record.args = args
    answered = RequestContext(request_id="0123456789abcdef0123456789abcdef")
    assert _line(record, answered) == {
        "level": "INFO",
        "logger": "granian.access",
        "message": '"POST /login" 303',
        "request_id": "0123456789abcdef0123456789abcdef",
        "method": "POST",
        "route": "",
        "status": 303,
        "duration_ms": 1.235,
        "user_id": 0,
        "path": "/login?pwd=[redacted]&x=1",
    }


def test_a_site_record_with_its_exception() -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        record = logging.LogRecord(
            "svcrest", logging.ERROR, "x.py", 1, "failed %s", ("here",), sys.exc_info()
        )
    record.request_id = "r-9"
    fields = json.loads(JsonFormatter().format(record))
    assert fields.pop("exception").endswith("RuntimeError: boom")
    assert TIME.fullmatch(fields.pop("time"))
    assert fields == {
        "level": "ERROR",
        "logger": "svcrest",
        "message": "failed here",
        "request_id": "r-9",
        "method": None,
        "route": None,
        "status": None,
        "duration_ms": None,
        "user_id": None,
        "path": None,
    }


def test_the_json_config_replaces_every_formatter() -> None:
    base = {
        "version": 1,
        "formatters": {"default": {"fmt": "%(message)s"}, "access": {"fmt": "%(message)s"}},
        "handlers": {"access": {"formatter": "access"}},
    }
    config = _log_config(base, "access", "json")
    json_formatter = {"()": "svcrest.serve.jsonlog.JsonFormatter"}
    assert config["formatters"] == {"default": json_formatter, "access": json_formatter}
    assert config["handlers"]["access"]["filters"] == ["svcrest_redact"]
    # Every other record (svcrest's, a plugin's, Python's warnings) through one JSON handler.
    assert config["handlers"]["svcrest_site"] == {
        "()": "svcrest.serve.jsonlog.site_handler",
        "formatter": "access",
    }
    assert config["root"] == {"handlers": ["svcrest_site"], "level": "WARNING"}
    text = _log_config(base, "access")
    assert text["formatters"]["access"] == {"fmt": "%(message)s request_id=%(request_id)s"}
    assert "root" not in text
    assert set(text["handlers"]) == {"access"}


def test_a_line_of_the_command_line() -> None:
    fields = json.loads(json_line("Serving http://127.0.0.1:8000/"))
    assert TIME.fullmatch(fields.pop("time"))
    assert fields == {
        "level": "INFO",
        "logger": "svcrest",
        "message": "Serving http://127.0.0.1:8000/",
        "request_id": None,
        "method": None,
        "route": None,
        "status": None,
        "duration_ms": None,
        "user_id": None,
        "path": None,
    }
    fields = json.loads(json_line("failed", level=logging.ERROR, exception="Traceback …"))
    assert (fields["level"], fields["message"], fields["exception"]) == (
        "ERROR",
        "failed",
        "Traceback …",
    )


def _raw_line(record: logging.LogRecord) -> str:
    """The JSON line written for ``record``, its time replaced by ``T``."""
    token = LOGGED_REQUEST.set(_answered())
    try:
        RedactSecrets().filter(record)
    finally:
        LOGGED_REQUEST.reset(token)
    return TIME.sub("T", JsonFormatter().format(record))


def test_granian_json_lines_exactly() -> None:
    """Every shape of a client's path and query string, in the exact bytes of its line."""
    cases = [
        ("/plain", "", "/plain", "/plain"),
        ("/e\x1b\\", "", "/e\\\\x1b\\\\\\\\", "/e\\\\x1b\\\\\\\\"),
        (
            "/n\r\n",
            "%5Fwpnonce[]=abc",
            "/n\\\\x0d\\\\x0a",
            "/n\\\\x0d\\\\x0a?%5Fwpnonce[]=[redacted]",
        ),
        ("/c1\x9b", "_wpnonce=n&a=\x85", "/c1\\\\x9b", "/c1\\\\x9b?_wpnonce=[redacted]&a=\\\\x85"),
        ("/u\xa0é", "x=é", "/u\\u00a0\\u00e9", "/u\\u00a0\\u00e9?x=\\u00e9"),
    ]
    for path, query, message_path, logged_path in cases:
        record = logging.LogRecord(
            "granian.access", logging.INFO, "log.py", 1, '"%(method)s %(path)s"', None, None
        )
        record.args = {
            "addr": "127.0.0.1",
            "time": "t",
            "dt_ms": 2.0,
            "status": 200,
            "path": path,
            "query_string": query,
            "method": "GET",
            "scheme": "http",
            "protocol": "HTTP/1.1",
        }
        assert _raw_line(record) == (
            '{"time": "T", "level": "INFO", "logger": "granian.access", "message": '
            f'"\\"GET {message_path}\\"", "request_id": "edge-1", "method": "GET", '
            '"route": "/demo/v1/notes/(?P<id>\\\\d+)", "status": 200, "duration_ms": 2.0, '
            f'"user_id": 5, "path": "{logged_path}"}}'
        ), (path, query)
