"""Access log redaction (issue 13): no nonce or password in a logged request line."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import signal
import subprocess
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import httpx
import pytest

import svcrest
from svcrest import App
from svcrest.http.context import RequestContext
from svcrest.http.request_id import ACCESS_LOG, ENV_ACCESS_LOG, LOGGED_REQUEST, _AccessLog
from svcrest.serve.accesslog import (
    ACCESS_FORMAT,
    AccessFormatter,
    RedactSecrets,
    redact,
)


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
        ("/n?_wpnonce=ab\x85cd\xa0ef&x=1", "/n?_wpnonce=[redacted]&x=1"),
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
        "unicode-spaces-in-value",
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


# -- each line exactly, through the launcher's own configuration ------------------------------

#: granian's access format (``granian.log.DEFAULT_ACCESSLOG_FMT``, which ``svcrest serve``
#: keeps) and the fields of its record.
GRANIAN_FORMAT = '[%(time)s] %(addr)s - "%(method)s %(path)s %(protocol)s" %(status)d %(dt_ms).3f'


def _granian_record(path: str, query: str = "", method: str = "GET") -> logging.LogRecord:
    record = logging.LogRecord(
        "granian.access", logging.INFO, __file__, 1, GRANIAN_FORMAT, None, None
    )
    record.args = {
        "addr": "127.0.0.1",
        "time": "2026-11-28 16:50:00 +0000",
        "dt_ms": 1.23456,
        "status": 200,
        "path": path,
        "query_string": query,
        "method": method,
        "scheme": "http",
        "protocol": "HTTP/1.1",
    }
    return record


def _access_line(server: str, record: logging.LogRecord) -> str:
    """``record`` written as the access handler of ``svcrest serve``'s text configuration
    for ``server`` writes it: its filter, then its formatter."""
    import logging.config

    from svcrest.serve.launcher import _log_config

    if server == "granian":
        from granian.log import LOGGING_CONFIG
    else:
        from uvicorn.config import LOGGING_CONFIG
    config = _log_config(LOGGING_CONFIG, "access")
    configurator = logging.config.DictConfigurator(config)
    formatter = configurator.configure_formatter(dict(config["formatters"]["access"]))
    token = LOGGED_REQUEST.set(RequestContext(request_id="edge-1"))
    try:
        assert RedactSecrets().filter(record) is True
    finally:
        LOGGED_REQUEST.reset(token)
    line: str = formatter.format(record)
    return line


_GRANIAN_LINE = (
    '[2026-11-28 16:50:00 +0000] 127.0.0.1 - "GET {} HTTP/1.1" 200 1.235 request_id=edge-1'
)


@pytest.mark.parametrize(
    ("path", "query", "logged_path", "logged_query"),
    [
        ("/svc-json/demo/v1/items/42", "", "/svc-json/demo/v1/items/42", ""),
        ("/a\x1b[2Jb", "", "/a\\x1b[2Jb", ""),
        ("/a\\b", "", "/a\\\\b", ""),
        ("/n\r\n127.0.0.1 - x", "", "/n\\x0d\\x0a127.0.0.1 - x", ""),
        ("/c1\x85\x9b\x7f", "", "/c1\\x85\\x9b\\x7f", ""),
        ("/nbsp\xa0é", "", "/nbsp\xa0é", ""),
        ("/n", "_wpnonce=abc&x=1", "/n", "_wpnonce=[redacted]&x=1"),
        ("/n", "%5Fwpnonce[]=abc", "/n", "%5Fwpnonce[]=[redacted]"),
        ("/n", "PassWord=p\x00", "/n", "PassWord=[redacted]"),
        ("/n", "x=\x1b", "/n", "x=\\x1b"),
        ("/a;pwd=1", "", "/a;pwd=[redacted]", ""),
        ("/a=b", "page=2", "/a=b", "page=2"),
    ],
    ids=[
        "plain",
        "escape",
        "backslash",
        "decoded-crlf",
        "c1-and-del",
        "printable-unicode",
        "nonce",
        "encoded-nonce-brackets",
        "password-and-nul",
        "control-in-query",
        "secret-in-path",
        "equals-kept",
    ],
)
def test_a_granian_line_exactly(path: str, query: str, logged_path: str, logged_query: str) -> None:
    record = _granian_record(path, query)
    assert _access_line("granian", record) == _GRANIAN_LINE.format(logged_path)
    assert isinstance(record.args, dict)
    assert (record.args["path"], record.args["query_string"]) == (logged_path, logged_query)


def test_a_granian_method_and_header_are_escaped() -> None:
    record = _granian_record("/", "", method="G\x1bT")
    assert _access_line("granian", record) == _GRANIAN_LINE.format("/").replace("GET", "G\\x1bT")
    # A header's value (granian's ``%(header{…})s``, field ``_h0``) comes from the client too.
    record = logging.LogRecord(
        "granian.access", logging.INFO, __file__, 1, "%(path)s %(_h0)s", None, None
    )
    record.args = {"path": "/", "_h0": "agent\r\nx=1\\", "time": "t", "addr": "a"}
    assert _access_line("granian", record) == "/ agent\\x0d\\x0ax=1\\\\ request_id=edge-1"


@pytest.mark.parametrize(
    ("client", "path", "logged"),
    [
        ("127.0.0.1:5", "/svc-json/", '127.0.0.1:5 - "GET /svc-json/ HTTP/1.1" 200'),
        (
            "127.0.0.1:5",
            "/a\x1b\\?pwd=x",
            '127.0.0.1:5 - "GET /a\\x1b\\\\?pwd=[redacted] HTTP/1.1" 200',
        ),
        (
            "1.2.3.4\r\n:0",
            "/?%5Fwpnonce[]=n",
            '1.2.3.4\\x0d\\x0a:0 - "GET /?%5Fwpnonce[]=[redacted] HTTP/1.1" 200',
        ),
        ("127.0.0.1:5", "/\x9b", '127.0.0.1:5 - "GET /\\x9b HTTP/1.1" 200'),
    ],
    ids=["plain", "escape-and-password", "forwarded-address-and-nonce", "c1"],
)
def test_a_uvicorn_line_exactly(client: str, path: str, logged: str) -> None:
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        (client, "GET", path, "1.1", 200),
        None,
    )
    # uvicorn's AccessFormatter: level prefix, its line, the status phrase (no colours
    # off a terminal).
    assert _access_line("uvicorn", record) == f"INFO:     {logged} OK request_id=edge-1"


def test_plain_values_run_no_regular_expression(monkeypatch: pytest.MonkeyPatch) -> None:
    """PERF: a line without ``=`` nor control character is left as it is, without the
    redacting and escaping expressions; the constant message is cleaned once."""
    from svcrest.serve import accesslog

    calls: list[str] = []

    def counted(name: str) -> Any:
        real = getattr(accesslog, name)

        def call(text: str) -> Any:
            calls.append(name)
            return real(text)

        return call

    for name in ("redact", "escape_controls"):
        monkeypatch.setattr(accesslog, name, counted(name))
    log_filter = RedactSecrets()
    for _ in range(3):
        assert log_filter.filter(_granian_record("/svc-json/demo/v1/items/42")) is True
    assert calls == []
    record = _granian_record("/a\x1b", "_wpnonce=1")
    assert log_filter.filter(record) is True
    assert calls == ["escape_controls", "redact"]


def test_the_access_formatter_writes_logging_formatter_s_line() -> None:
    """granian's text configuration names :class:`AccessFormatter`, which writes what
    ``logging.Formatter(ACCESS_FORMAT)`` writes, an exception's traceback included."""
    from granian.log import LOGGING_CONFIG

    from svcrest.serve.launcher import _log_config

    access = _log_config(LOGGING_CONFIG, "access")["formatters"]["access"]
    assert access["()"] == "svcrest.serve.accesslog.AccessFormatter"
    assert access["fmt"] == ACCESS_FORMAT == "%(message)s request_id=%(request_id)s"
    plain = logging.Formatter(ACCESS_FORMAT)
    record = _granian_record("/a\x1b", "pwd=1")
    record.request_id = "r-1"
    assert AccessFormatter(ACCESS_FORMAT).format(record) == plain.format(record)
    assert plain.format(record).endswith(" 200 1.235 request_id=r-1")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        failed = logging.LogRecord(
            "granian.access", logging.ERROR, "x", 1, "m %s", ("a",), sys.exc_info()
        )
    failed.request_id = "-"
    line = AccessFormatter(ACCESS_FORMAT).format(failed)
    assert line == plain.format(failed)
    assert line.startswith("m a request_id=-\nTraceback") and line.endswith("RuntimeError: boom")


# -- every line written at a stop ------------------------------------------------------------------


#: The environment of a process whose standard output is buffered, as it is by default
#: off a terminal (``PYTHONUNBUFFERED`` would write each line at once, flushed or not).
_BUFFERED = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}

_WORKER = """
import logging.config, multiprocessing, sys
from granian.log import LOGGING_CONFIG
from svcrest.serve.launcher import _log_config
from tests.serve.test_accesslog import _granian_record


def worker():  # as a granian worker: configured in the forked process, then returns
    config = _log_config(LOGGING_CONFIG, "access", sys.argv[1])
    logging.config.dictConfig(config)
    logger = logging.getLogger("granian.access")
    for number in range(3):
        logger.handle(_granian_record(f"/line/{number}"))


process = multiprocessing.get_context("fork").Process(target=worker)
process.start()
process.join()
logging.config.dictConfig(_log_config(LOGGING_CONFIG, "access", sys.argv[1]))
logging.getLogger("granian.access").handle(_granian_record("/main"))
"""


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_every_line_is_written_when_a_worker_or_the_process_ends(
    tmp_path: Path, log_format: str
) -> None:
    """Every access line is on standard output when a worker (a forked process, as granian's)
    or the process ends, with standard output buffered as it is off a terminal."""
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(script), log_format],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=root,
        env={**_BUFFERED, "PYTHONPATH": str(root)},
    )
    assert done.returncode == 0, done.stderr
    paths = [f"/line/{number}" for number in range(3)] + ["/main"]
    lines = done.stdout.splitlines()
    assert len(lines) == 4, done.stdout
    for line, path in zip(lines, paths, strict=True):
        assert f"GET {path} HTTP/1.1" in line, line


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("server", ["granian", "uvicorn"])
def test_the_last_lines_are_written_at_sigterm(tmp_path: Path, server: str, workers: str) -> None:
    """A server stopped right after its last answers has written their lines."""
    from tests.e2e.test_serving_options import free_port, running, serve_command

    port = free_port()
    command = serve_command(port, "--server", server, "--workers", workers)
    with running(command, tmp_path, port, env={"PYTHONUNBUFFERED": ""}) as served:
        for number in range(20):
            httpx.get(
                f"{served.url}/svc-json/?n={number}", headers={"X-Request-Id": f"stop-{number}"}
            )
        served.process.send_signal(signal.SIGTERM)
        served.process.wait(timeout=30)
        output = served.output()
    for number in range(20):
        assert f"request_id=stop-{number}" in output, output[-3000:]
