"""granian's access line written by svcrest (``svcrest serve`` on granian's ASGI interface):
byte for byte the line granian's ``--access-log`` writes through the launcher's logging
configuration, text and JSON, from the same request."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import io
import json
import logging
import logging.config
import os
import sys
import time
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import httpx
import pytest

import svcrest
from svcrest import App
from svcrest.http.context import RequestContext
from svcrest.http.request_id import ACCESS_LOG, LOGGED_REQUEST
from svcrest.http.user import User
from svcrest.serve import accesslog
from svcrest.serve.accesslog import (
    ASGI_FACTORY,
    ENV_ACCESS_TARGET,
    GRANIAN_FORMAT,
    AccessLine,
    AccessLogged,
    asgi_from_env,
)
from svcrest.serve.launcher import _log_config

#: A request's arrival (``time.time``), its clock (``perf_counter``) then and at the line.
ARRIVED = 1_795_000_000.25
CLOCK = 1_000.0
ANSWERED = CLOCK + 0.00123456
#: When the line is written (the JSON ``time``).
WRITTEN = ARRIVED + 0.0125


def _scope(
    path: str = "/svc-json/",
    query: bytes = b"",
    method: str = "GET",
    version: str = "1.1",
    client: str = "127.0.0.1",
) -> dict[str, Any]:
    return {
        "type": "http",
        "http_version": version,
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode("utf-8", "surrogateescape"),
        "query_string": query,
        "root_path": "",
        "headers": [(b"host", b"example.org")],
        "client": (client, 50000),
        "server": ("127.0.0.1", 8000),
    }


@pytest.fixture
def access_stream(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``configure(log_format)``: the launcher's logging configuration for granian applied,
    its access handler writing to a ``StringIO`` it returns; the clocks fixed. The root
    logger is put back afterwards (the JSON configuration gives it a handler and a level)."""
    from granian.log import LOGGING_CONFIG

    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", root.handlers[:])
    monkeypatch.setattr(root, "level", root.level)
    monkeypatch.setattr(time, "perf_counter", lambda: ANSWERED)
    monkeypatch.setattr(time, "time", lambda: WRITTEN)
    monkeypatch.setattr(accesslog, "perf_counter", lambda: ANSWERED)
    monkeypatch.setattr(accesslog, "time", lambda: WRITTEN)
    logger = logging.getLogger("granian.access")
    saved = (logger.handlers[:], logger.filters[:], logger.propagate, logger.level)

    def configure(log_format: str) -> io.StringIO:
        logging.config.dictConfig(_log_config(LOGGING_CONFIG, "access", log_format))
        stream = io.StringIO()
        (handler,) = logger.handlers
        assert isinstance(handler, logging.StreamHandler)
        handler.setStream(stream)
        return stream

    yield configure
    logger.handlers[:], logger.filters[:] = saved[0], saved[1]
    logger.propagate, logger.level = saved[2], saved[3]


def _granian_line(configure: Any, log_format: str, scope: dict[str, Any], status: int) -> str:
    """What granian's own access logger (``granian.asgi._build_access_logger`` with its
    default format) writes through the launcher's configuration."""
    from granian.asgi import _build_access_logger
    from granian.log import DEFAULT_ACCESSLOG_FMT

    assert DEFAULT_ACCESSLOG_FMT == GRANIAN_FORMAT
    stream: io.StringIO = configure(log_format)
    logger = _build_access_logger(DEFAULT_ACCESSLOG_FMT)  # type: ignore[no-untyped-call]
    logger(ARRIVED, CLOCK, scope, status)
    return stream.getvalue()


def _svcrest_line(configure: Any, log_format: str, scope: dict[str, Any], status: int) -> str:
    stream: io.StringIO = configure(log_format)
    line = AccessLine(log_format)
    line.write(scope, status, ARRIVED, CLOCK)
    assert line.resolve() is True  # straight to the handler, no record
    return stream.getvalue()


def _both(
    configure: Any, log_format: str, scope: dict[str, Any], status: int, ctx: Any
) -> tuple[str, str]:
    token = LOGGED_REQUEST.set(ctx)
    try:
        return (
            _granian_line(configure, log_format, scope, status),
            _svcrest_line(configure, log_format, scope, status),
        )
    finally:
        LOGGED_REQUEST.reset(token)


_EDITOR = RequestContext(
    is_rest=True, user=User(5, "editor"), request_id="edge-1", matched_route=r"/d/v1/n/(?P<id>\d+)"
)

_CASES = [
    ("/svc-json/demo/v1/items/42", b"", "GET"),
    ("/a\x1b[2Jb", b"", "GET"),
    ("/a\\b", b"", "GET"),
    ("/n\r\n127.0.0.1 - x", b"", "GET"),
    ("/c1\x85\x9b\x7f", b"", "GET"),
    ("/nbsp\xa0é", b"", "GET"),
    ("/n", b"_wpnonce=abc&x=1", "GET"),
    ("/n", b"%5Fwpnonce[]=abc", "POST"),
    ("/n", b"%5F%77%70nonce=abc&a=1", "GET"),
    ("/n", b"PassWord=p\x00", "PUT"),
    ("/n", b"pwd=hunter2;password=x&_WPNONCE=y", "DELETE"),
    ("/n", b"_wpnonce=ab\x85cd\xa0ef&x=1", "GET"),
    ("/n", b"x=\x1b", "GET"),
    ("/a;pwd=1", b"", "GET"),
    ("/a=b", b"page=2", "HEAD"),
    ("/", b"", "G\x1bT"),
    ("/", b"", "PROPFIND"),
]
_IDS = [
    "plain",
    "escape",
    "backslash",
    "decoded-crlf",
    "c1-and-del",
    "printable-unicode",
    "nonce",
    "encoded-nonce-brackets",
    "encoded-nonce-letters",
    "password-and-nul",
    "three-secrets",
    "unicode-spaces-in-secret",
    "control-in-query",
    "secret-in-path",
    "head-equals-kept",
    "control-in-method",
    "other-method",
]


@pytest.mark.parametrize("log_format", ["text", "json"])
@pytest.mark.parametrize(("path", "query", "method"), _CASES, ids=_IDS)
def test_the_line_is_granian_s_byte_for_byte(
    access_stream: Any, log_format: str, path: str, query: bytes, method: str
) -> None:
    scope = _scope(path, query, method)
    granian, svcrest_line = _both(access_stream, log_format, scope, 200, _EDITOR)
    assert svcrest_line == granian
    assert svcrest_line.count("\n") == 1 and svcrest_line.endswith("\n")
    for secret in ("abc", "hunter2", "ab\x85cd"):
        assert f"={secret}" not in svcrest_line


@pytest.mark.parametrize("log_format", ["text", "json"])
@pytest.mark.parametrize(
    ("status", "version", "ctx"),
    [
        (200, "1.1", None),
        (304, "1.0", RequestContext(request_id="-")),
        (408, "1.1", RequestContext(request_id="")),
        (500, "2", _EDITOR),
        (503, "1.1", RequestContext(request_id="a.b:c-d_e")),
    ],
    ids=["no-request", "id-dash", "no-id", "http2-500", "client-id"],
)
def test_statuses_protocols_and_ids(
    access_stream: Any, log_format: str, status: int, version: str, ctx: Any
) -> None:
    scope = _scope("/x", b"q=1", version=version, client="::1")
    granian, svcrest_line = _both(access_stream, log_format, scope, status, ctx)
    assert svcrest_line == granian


def test_the_text_and_json_lines_exactly(access_stream: Any) -> None:
    """The bytes themselves (the local time zone of the test's process)."""
    from datetime import datetime

    stamp = datetime.fromtimestamp(ARRIVED).astimezone().strftime("%Y-%m-%d %H:%M:%S %z")
    scope = _scope("/n\x1b", b"_wpnonce=abc&x=1", "POST")
    text, _ = _both(access_stream, "text", scope, 403, _EDITOR)
    assert text == f'[{stamp}] 127.0.0.1 - "POST /n\\x1b HTTP/1.1" 403 1.235 request_id=edge-1\n'
    line, _ = _both(access_stream, "json", scope, 403, _EDITOR)
    assert json.loads(line) == {
        "time": "2026-11-18T11:06:40.262+00:00",
        "level": "INFO",
        "logger": "granian.access",
        "message": f'[{stamp}] 127.0.0.1 - "POST /n\\x1b HTTP/1.1" 403 1.235',
        "request_id": "edge-1",
        "method": "POST",
        "route": r"/d/v1/n/(?P<id>\d+)",
        "status": 403,
        "duration_ms": 1.235,
        "user_id": 5,
        "path": "/n\\x1b?_wpnonce=[redacted]&x=1",
    }


def test_a_stamp_is_made_once_a_second_and_exactly(access_stream: Any) -> None:
    """The date is made once a second; a time in its second's last microsecond (which
    ``datetime`` rounds to the next second) gets the next second's date, as granian's."""
    from datetime import datetime

    stamps = accesslog._Stamps()
    zone = datetime.now().astimezone().tzinfo

    def granian(seconds: float) -> str:
        return datetime.fromtimestamp(seconds, tz=zone).strftime("%Y-%m-%d %H:%M:%S %z")

    for seconds in (ARRIVED, ARRIVED + 0.5, 1_795_000_000.9999996, ARRIVED + 0.7, ARRIVED + 1):
        assert stamps.made(seconds) == granian(seconds)
    assert granian(1_795_000_000.9999996) == granian(1_795_000_001.0)


# -- through the wrapper, around the App --------------------------------------------------------


def _app() -> App:
    app = App("http://example.org")

    def boom(request: Any) -> Any:
        raise RuntimeError("the handler's own mistake")

    app.register_rest_route(
        "t/v1", "/boom", {"methods": "GET", "callback": boom, "permission_callback": svcrest.public}
    )
    return app


def _run_alone(serve: Any) -> None:
    """Run the coroutine function ``serve`` in a fresh context with the launcher's handler
    alone on the access logger (pytest's log capture joins every logger that does not
    propagate)."""
    logger = logging.getLogger("granian.access")
    handlers = logger.handlers[:]
    logger.handlers[:] = [handler for handler in handlers if type(handler) is logging.StreamHandler]
    try:
        contextvars.Context().run(asyncio.run, serve())
    finally:
        logger.handlers[:] = handlers


def _served(
    app: Any,
    scope: dict[str, Any],
    receive: Any = None,
    fail_at: str = "",
) -> tuple[list[str], list[Any]]:
    """Serve ``scope`` through :class:`AccessLogged` in a fresh context (a server's task);
    the events in order: each message sent (its type) and ``line`` when the line is written;
    and the exception that left the application (if any)."""
    events: list[str] = []
    raised: list[Any] = []

    class Recorder(AccessLine):
        __slots__ = ()

        def write(self, scope: Any, status: int, started: float, clock: float) -> None:
            events.append(f"line {status}")
            super().write(scope, status, started, clock)

    async def default_receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        events.append(message["type"])
        if message["type"] == fail_at:
            raise OSError("the client went away")

    async def serve() -> None:
        try:
            await AccessLogged(app, Recorder("text"))(scope, receive or default_receive, send)
        except Exception as exc:
            raised.append(exc)

    _run_alone(serve)
    return events, raised


@pytest.fixture
def logged_requests(access_stream: Any, monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    monkeypatch.setattr(ACCESS_LOG, "on", True)
    stream: io.StringIO = access_stream("text")
    return stream


def test_the_line_comes_after_the_answer(logged_requests: io.StringIO) -> None:
    headers = [(b"host", b"example.org"), (b"x-request-id", b"r-1")]
    events, raised = _served(_app(), {**_scope(), "headers": headers})
    assert (events, raised) == (["http.response.start", "http.response.body", "line 200"], [])
    assert logged_requests.getvalue().endswith(
        ' "GET /svc-json/ HTTP/1.1" 200 0.000 request_id=r-1\n'
    )


def test_head_and_a_handler_s_500(logged_requests: io.StringIO) -> None:
    app = _app()
    assert _served(app, _scope(method="HEAD"))[0][-1] == "line 200"
    assert _served(app, _scope("/svc-json/t/v1/boom"))[0][-1] == "line 500"
    first, second = logged_requests.getvalue().splitlines()
    assert ' "HEAD /svc-json/ HTTP/1.1" 200 0.000 request_id=' in first
    assert ' "GET /svc-json/t/v1/boom HTTP/1.1" 500 0.000 request_id=' in second


def test_a_client_that_leaves_gets_the_500_granian_logs(logged_requests: io.StringIO) -> None:
    """When ``send`` raises (the client went away), the exception goes on to the server and
    the line says 500, as granian's does for an application that raised."""
    events, raised = _served(_app(), _scope(), fail_at="http.response.body")
    assert events == ["http.response.start", "http.response.body", "line 500"]
    assert [str(exc) for exc in raised] == ["the client went away"]
    assert ' "GET /svc-json/ HTTP/1.1" 500 0.000 request_id=' in logged_requests.getvalue()


def test_a_slow_body_s_408(logged_requests: io.StringIO, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SVCREST_BODY_TIMEOUT", "0.05")

    async def silent() -> dict[str, Any]:
        await asyncio.sleep(5)
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = _scope("/svc-json/t/v1/boom", method="POST")
    scope["headers"] = [(b"host", b"example.org"), (b"content-length", b"10")]
    events, raised = _served(_app(), scope, receive=silent)
    assert (events[-1], raised) == ("line 408", [])
    assert (
        ' "POST /svc-json/t/v1/boom HTTP/1.1" 408 0.000 request_id=' in logged_requests.getvalue()
    )


def test_a_wrapped_site_s_streamed_answer_and_its_exception(
    logged_requests: io.StringIO,
) -> None:
    """A page of the wrapped site app: the status it sent, after its last chunk; 500 when
    it raised after its answer's head."""

    async def site(scope: Any, receive: Any, send: Any) -> None:
        if scope["path"] == "/silent":  # no answer at all: granian answers and logs 500
            return
        await send({"type": "http.response.start", "status": 206, "headers": []})
        for chunk in (b"a", b"b"):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        if scope["path"] == "/fails":
            raise RuntimeError("the site's mistake")
        await send({"type": "http.response.body", "body": b""})

    app = App("http://example.org", site=site)
    events, raised = _served(app, _scope("/page"))
    assert events == ["http.response.start", *["http.response.body"] * 3, "line 206"]
    assert raised == []
    events, raised = _served(app, _scope("/fails"))
    assert events[-1] == "line 500" and [str(exc) for exc in raised] == ["the site's mistake"]
    assert _served(app, _scope("/silent")) == (["line 500"], [])
    first, second, third = logged_requests.getvalue().splitlines()
    assert ' "GET /page HTTP/1.1" 206 0.000 request_id=' in first
    assert ' "GET /fails HTTP/1.1" 500 0.000 request_id=' in second
    assert ' "GET /silent HTTP/1.1" 500 0.000 request_id=' in third


def test_lifespan_passes_through(logged_requests: io.StringIO) -> None:
    messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    sent: list[str] = []

    async def receive() -> Any:
        return next(messages)

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message["type"])

    asyncio.run(AccessLogged(_app(), AccessLine())({"type": "lifespan"}, receive, send))
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert logged_requests.getvalue() == ""


def test_a_logger_configured_otherwise_gets_granian_s_record(
    access_stream: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """When the access logger is not the launcher's (here a second handler: a plugin's or
    a user's), each line is granian's own record handed to the logger, its handlers and
    filters doing what they do."""
    stream = access_stream("text")
    logger = logging.getLogger("granian.access")
    with caplog.at_level(logging.INFO, logger="granian.access"):
        logger.addHandler(caplog.handler)
        try:
            line = AccessLine("text")
            token = LOGGED_REQUEST.set(_EDITOR)
            try:
                line.write(_scope("/n\x1b", b"pwd=1"), 200, ARRIVED, CLOCK)
            finally:
                LOGGED_REQUEST.reset(token)
            assert line.resolve() is False
        finally:
            logger.removeHandler(caplog.handler)
    (record,) = caplog.records
    assert record.msg == GRANIAN_FORMAT
    assert isinstance(record.args, dict)
    assert (record.args["path"], record.args["query_string"]) == ("/n\\x1b", "pwd=[redacted]")
    assert stream.getvalue().endswith(' "GET /n\\x1b HTTP/1.1" 200 1.235 request_id=edge-1\n')


def test_the_worker_factory_wraps_the_site(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_ACCESS_TARGET, "tests.serve.test_access_line:_app")
    monkeypatch.setenv("SVCREST_LOG_FORMAT", "json")
    wrapped = asgi_from_env()
    assert isinstance(wrapped, AccessLogged) and isinstance(wrapped.app, App)
    assert wrapped.line._json is True
    assert ASGI_FACTORY == "svcrest.serve.accesslog:asgi_from_env"


# -- under granian: the status from granian's own record ----------------------------------------


class _Protocol:
    """A stand-in for granian's ASGI protocol: ``send`` one of its methods, and
    ``sent_response_code`` as granian keeps it (500 until the answer's head went out with
    its first body part, then the head's status)."""

    def __init__(self) -> None:
        self.sent_response_code = 500
        self.messages: list[str] = []
        self._status = 500

    async def send(self, message: MutableMapping[str, Any]) -> None:
        self.messages.append(message["type"])
        if message["type"] == "http.response.start":
            self._status = message["status"]
        else:
            self.sent_response_code = self._status


def _streaming_site(scope: Any, receive: Any, send: Any) -> Any:
    async def site() -> None:
        if scope["path"] == "/silent":
            return
        if scope["path"] == "/early":
            raise RuntimeError("before the head")
        await send({"type": "http.response.start", "status": 206, "headers": []})
        if scope["path"] == "/head-only":
            raise RuntimeError("after the head, before its body")
        await send({"type": "http.response.body", "body": b"a", "more_body": True})
        if scope["path"] == "/fails":
            raise RuntimeError("after a part")
        await send({"type": "http.response.body", "body": b""})

    return site()


@pytest.mark.parametrize(
    ("path", "status", "error"),
    [
        ("/page", 206, ""),
        ("/fails", 206, "after a part"),
        ("/head-only", 500, "after the head, before its body"),
        ("/early", 500, "before the head"),
        ("/silent", 500, ""),
    ],
)
def test_under_granian_the_status_is_granian_s_own_record(
    logged_requests: io.StringIO, path: str, status: int, error: str
) -> None:
    """With granian's ``send`` the site gets that very ``send`` (no wrapper) and the line
    has the status granian's own log reads from its protocol: a streamed answer that fails
    after its head went out is logged with its status, as granian's ``--access-log`` logs it
    (checked against granian 2.8: 206); an answer whose head never went out, 500."""
    protocol = _Protocol()
    seen: list[Any] = []

    async def site(scope: Any, receive: Any, send: Any) -> None:
        seen.append(send)
        await _streaming_site(scope, receive, send)

    send = protocol.send
    wrapped = AccessLogged(site, AccessLine("text"), protocol=_Protocol)
    raised: list[str] = []

    async def serve() -> None:
        try:
            await wrapped(_scope(path), None, send)
        except RuntimeError as exc:
            raised.append(str(exc))

    _run_alone(serve)
    assert seen == [send] and seen[0] is send
    assert raised == ([error] if error else [])
    assert logged_requests.getvalue().endswith(
        f' "GET {path} HTTP/1.1" {status} 0.000 request_id=-\n'
    )


def test_the_default_protocol_is_granian_s() -> None:
    """The wrapper knows granian's protocol class by default, and that class has the
    ``sent_response_code`` its log reads and the ``send`` it hands an application."""
    from granian._granian import ASGIHTTPProtocol  # type: ignore[attr-defined]

    wrapped = AccessLogged(_app(), AccessLine())
    assert wrapped.protocol is ASGIHTTPProtocol
    assert hasattr(ASGIHTTPProtocol, "sent_response_code")
    assert hasattr(ASGIHTTPProtocol, "send")


def test_a_granian_keeping_no_status_record_gets_its_send_watched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A granian whose ASGI protocol has no ``sent_response_code`` (or no such protocol):
    no protocol is known, so every ``send`` is watched and its status read as it passes."""
    fake = type(sys)("granian._granian")

    class ASGIHTTPProtocol:
        def send(self, message: Any) -> None: ...

    fake.ASGIHTTPProtocol = ASGIHTTPProtocol  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "granian._granian", fake)
    assert AccessLogged(_app(), AccessLine()).protocol is None
    del fake.ASGIHTTPProtocol
    assert AccessLogged(_app(), AccessLine()).protocol is None


def test_another_send_is_watched_as_before(logged_requests: io.StringIO) -> None:
    """A ``send`` that is a method of anything but the protocol (or a plain function) is
    wrapped: the status read as the head passes, 500 when the site raised."""

    class Other(_Protocol):
        pass

    for path, status in (("/page", 206), ("/fails", 500)):
        other = Other()
        wrapped = AccessLogged(_streaming_site, AccessLine("text"), protocol=_Protocol)

        async def serve(wrapped: Any = wrapped, other: Other = other, path: str = path) -> None:
            with contextlib.suppress(RuntimeError):
                await wrapped(_scope(path), None, other.send)

        _run_alone(serve)
        assert other.messages[0] == "http.response.start"
        assert logged_requests.getvalue().endswith(
            f' "GET {path} HTTP/1.1" {status} 0.000 request_id=-\n'
        )


# -- the JSON line's parts, as json.dumps and datetime write them --------------------------------


def test_the_json_time_is_datetime_s_to_the_millisecond() -> None:
    """The JSON ``time`` made once a second is ``datetime``'s for every time: half
    microseconds rounded half to even, a time rounding up to the next second, a second
    met again after a later one."""
    import random
    from datetime import UTC, datetime

    stamps = accesslog._UtcStamps()
    chooser = random.Random(43)
    base = 1_795_000_000
    times = [base + 0.25, base + 0.9999995, base + 0.0000005, base + 0.0000015, base + 0.999]
    times += [base + 1.9999996, base + 1.5, base + 0.5, base + 2.0]
    for _ in range(20_000):
        second = base + chooser.randrange(4)
        times.append(second + chooser.randrange(1_000_000) / 1e6 + chooser.choice([0, 5e-7]))
        times.append(second + chooser.random())
    for seconds in times:
        wanted = datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")
        assert stamps.made(seconds) == wanted, seconds


def test_the_json_duration_is_json_dumps_of_round() -> None:
    import random

    chooser = random.Random(44)
    values = [0.0, -0.0, 0.0004, 0.0005, 0.0015, 2.675, 123.4565, 1.2345678, 99_999_999_999.9995]
    values += [1e11, 5e12, -1.0005, float(10**16)]
    for _ in range(20_000):
        values.append(chooser.randrange(10**7) / 1000 + chooser.choice([0.0005, -0.0005, 0.0]))
        values.append(chooser.uniform(0, 100))
        values.append(chooser.expovariate(0.001))
    for value in values:
        wanted = json.dumps(round(value, 3))
        assert accesslog._json_milliseconds(value, f"{value:.3f}") == wanted, value


@pytest.mark.parametrize(
    "ctx",
    [
        None,
        RequestContext(request_id="-"),
        RequestContext(
            user=User(7, 'é"\\'), request_id="r.1", matched_route='/a/(?P<x>[^/"]+)\u2028'
        ),
    ],
    ids=["no-request", "id-dash", "route-to-escape"],
)
@pytest.mark.parametrize(
    ("path", "query", "method"),
    [
        ('/q"uote\\é\u2028', b"a=%22&pwd=x", "GET"),
        ("/n", b'%5Fwpnonce=abc&x=\xe9"', "POST"),
        ("/\x00\x7f", b"", 'G"T'),
    ],
    ids=["quote-backslash-unicode", "nonce-latin1-quote", "nul-del-quote-method"],
)
def test_a_json_line_to_escape_is_granian_s_byte_for_byte(
    access_stream: Any, ctx: Any, path: str, query: bytes, method: str
) -> None:
    """Strings JSON escapes (quotes, backslashes, non-ASCII, U+2028) in every field."""
    granian, svcrest_line = _both(access_stream, "json", _scope(path, query, method), 200, ctx)
    assert svcrest_line == granian
    assert "abc" not in svcrest_line and "=x" not in svcrest_line


def test_an_unusual_status_is_written_as_granian_writes_it(access_stream: Any) -> None:
    """A status outside 100-599 (a site's own number), in both formats."""
    for log_format in ("text", "json"):
        granian, svcrest_line = _both(access_stream, log_format, _scope(), 999, _EDITOR)
        assert svcrest_line == granian
        assert " 999 " in svcrest_line


def _bare_site() -> Any:
    """The streaming site alone (an ASGI callable), for granian's own access log."""

    async def site(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await _streaming_site(scope, receive, send)

    return site


_bare = _bare_site()


@pytest.mark.slow
def test_a_real_granian_logs_the_status_granian_s_own_log_writes(tmp_path: Path) -> None:
    """granian itself (its worker, its protocol): svcrest's line has the status granian's
    ``--access-log`` writes for the same site, also where the site fails mid-answer."""
    from tests.e2e.test_serving_options import free_port, running

    root = Path(__file__).resolve().parents[2]
    env = {"PYTHONPATH": f"{root}{os.pathsep}{root / 'src'}"}
    statuses: dict[str, list[str]] = {}
    for name, options, target in (
        ("granian", ["--access-log"], "tests.serve.test_access_line:_bare"),
        ("svcrest", ["--factory"], ASGI_FACTORY),
    ):
        port = free_port()
        command = [sys.executable, "-m", "granian", "--interface", "asgi", "--port", str(port)]
        command += [*options, target]
        served_env = {**env, ENV_ACCESS_TARGET: "tests.serve.test_access_line:_bare_site"}
        with running(command, tmp_path, port, env=served_env) as served:
            for path in ("/page", "/fails", "/head-only", "/early", "/silent"):
                with contextlib.suppress(httpx.HTTPError):
                    httpx.get(f"{served.url}{path}")
            deadline = time.monotonic() + 10
            while served.output().count(' "GET /') < 5:
                assert time.monotonic() < deadline, served.output()[-3000:]
                time.sleep(0.05)
            lines = [line for line in served.output().splitlines() if ' "GET /' in line]
        statuses[name] = [line.split('" ')[1].split()[0] for line in lines]
    assert statuses["svcrest"] == statuses["granian"] == ["206", "206", "500", "500", "500"]


# -- the JSON line's query string: the redaction's quick test ---------------------------------


@pytest.mark.parametrize(
    "query",
    [
        b"_WPNONCE=x",
        b"PwD=x",
        b"pAsSwOrD[]=x",
        b"%5Fwpnonce=x",
        b"_wp%6Eonce=x",
        b"_wp%6eonce=x",
        b"pass%77ord=x",
        b"%70wd=x",
        b"%50WD=x",
        b"x=1&_wpnonce[]=y",
        b"a=b;pwd=x",
        b"a=b;PASSWORD=c&d=e",
        b"q=%0D%0A&pwd=x",
        b"pwd=x\x00y",
        b"_wpnonce=ab\x85cd\xa0ef&x=1",
    ],
)
def test_every_spelling_of_a_secret_is_still_redacted(query: bytes) -> None:
    cleaned = accesslog._clean_query(query)
    assert cleaned == accesslog._clean(query.decode("latin-1"))
    assert "[redacted]" in cleaned
    assert "=x" not in cleaned.replace("q=", "") and "=ab" not in cleaned


def test_the_quick_test_writes_what_the_full_cleaning_writes() -> None:
    """Random query strings made of the secret names' letters in both cases, percent signs
    and hexadecimal digits, separators, brackets, ``+``, controls and latin-1 bytes: the
    quick path and :func:`_clean` write the same text for each."""
    import random

    chooser = random.Random(45)
    pieces = [b"_wpnonce", b"pwd", b"password", b"nonce", b"PWD", b"PassWord", b"_WP", b"NONC"]
    pieces += [b"%", b"%5F", b"%5f", b"%77", b"%6E", b"+", b"=", b"&", b";", b"[", b"]", b"?"]
    pieces += [b"a", b"x", b"1", b"\x00", b"\x1b", b"\x7f", b"\x85", b"\xa0", b"\xe9", b"\\"]
    for _ in range(20_000):
        query = b"".join(chooser.choice(pieces) for _ in range(chooser.randrange(1, 12)))
        assert accesslog._clean_query(query) == accesslog._clean(query.decode("latin-1")), query
    for query in (b"page=2&per_page=10", b"x=\x1b", b"a\\b=c", b"s=\xe9t\xe9", b"+=+"):
        assert accesslog._clean_query(query) == accesslog._clean(query.decode("latin-1"))
