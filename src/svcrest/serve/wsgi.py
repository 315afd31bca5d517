"""The WSGI adapter: the same site as the ASGI app, for WSGI servers."""

from __future__ import annotations

import http as http_status
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from contextvars import copy_context as _copy_context
from typing import Any

from svcrest.http.environ import Environ, EnvironHeaders
from svcrest.http.errors import BodyReadError
from svcrest.http.exchange import (
    BODILESS_METHODS,
    HttpRequest,
    HttpResponse,
    headers_announce_body,
    known_host_name,
    remembered_host_name,
    usual_method,
)
from svcrest.http.request_id import ACCESS_LOG, LOGGED_REQUEST
from svcrest.instances import without_init
from svcrest.serve.bodies import PacedBodyReads
from svcrest.site.host import SiteHost
from svcrest.site.respond import SiteForward, body_error_page, respond
from svcrest.syncrun import run_in_context

__all__ = ["WSGIAdapter"]

StartResponse = Callable[..., Any]


def _wsgi_str(value: str) -> str:
    """WSGI hands bytes over as Latin-1 strings (PEP 3333); the URL path is UTF-8. A server
    that already decoded the path (characters beyond Latin-1) is taken at its word."""
    if value.isascii():
        return value
    try:
        raw = value.encode("latin-1")
    except UnicodeEncodeError:
        return value
    return raw.decode("utf-8", "replace")


def _request(environ: Environ) -> HttpRequest:
    """The request of ``environ``; its header lines are read from the environ on demand
    (:class:`EnvironHeaders`). The one place an :class:`HttpRequest` is made from an
    environ."""
    host = environ.get("HTTP_HOST") or environ.get("SERVER_NAME", "")
    path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
    query = environ.get("QUERY_STRING", "")
    method = environ.get("REQUEST_METHOD", "GET")
    # PERF: every field set here, in field order, without the generated ``__init__``'s frame
    # (a WSGI GET 90,787 → 89,866 instructions, bench/instructions.py; keywords cost more);
    # tests/http/test_context.py reads every field back. The usual methods as they are,
    # ASCII (most paths and queries) without decoding.
    http = without_init(HttpRequest)
    http.method = usual_method(method) or str(method).upper()
    http.path = (path if path.isascii() else _wsgi_str(path)) or "/"
    http.query_string = query if query.isascii() else _wsgi_str(query)
    # PERF: the headers made as their ``__init__`` makes them, without its frame (a class call
    # with a Python ``__init__``: a WSGI GET 86,038 → 85,057 instructions).
    headers = without_init(EnvironHeaders)
    headers._listed_lines = None
    headers._environ = environ
    http.headers = headers
    http.body = b""
    http.scheme = environ.get("wsgi.url_scheme", "http")
    http.host = known_host_name(host) or remembered_host_name(host)  # PERF: seen before, no call
    http.client = environ.get("REMOTE_ADDR", "")
    return http


# PERF: the status line of each status code, made once (HTTPStatus lookups cost ~1 µs).
# Bounded: only the three-digit codes.
_STATUS_LINES: dict[int, str] = {}


def _status_line(status: int) -> str:
    line = _STATUS_LINES.get(status)
    if line is None:
        try:
            line = f"{status} {http_status.HTTPStatus(status).phrase}"
        except ValueError:
            line = f"{status} Unknown"
        if 100 <= status <= 999:
            _STATUS_LINES[status] = line
    return line


def _body_reader(
    environ: Environ, limit: int, reads: PacedBodyReads
) -> Callable[[], Awaitable[bytes | None]]:
    """The reader of a request's body (see ``_read_body``)."""

    async def read_body() -> bytes | None:
        return _read_body(environ, limit, reads)

    return read_body


def _read_body(environ: Environ, limit: int, reads: PacedBodyReads) -> bytes | None:
    """The body, or None past ``limit``. A body without Content-Length is read only when the
    server says the stream ends on its own (``wsgi.input_terminated``, as for chunked
    uploads); SECURITY: never more than the limit plus one byte, and within the body
    deadline (``reads`` raises ``BodyReadError``)."""
    stream = environ.get("wsgi.input")
    client = environ.get("REMOTE_ADDR") or ""
    raw_length = str(environ.get("CONTENT_LENGTH") or "").strip()
    if raw_length.isascii() and raw_length.isdigit():  # SECURITY: RFC 9110 digits only
        length = int(raw_length)
        if length > limit:
            return None
        return reads.read(stream, length, client) if stream is not None and length else b""
    if stream is None or not environ.get("wsgi.input_terminated"):
        return b""
    body = reads.read(stream, limit + 1, client)
    return None if len(body) > limit else body


class WSGIAdapter:
    """A WSGI application serving a site (``app.wsgi``).

    The async pipeline runs on a private event loop per server thread; a request whose
    callbacks are all plain finishes without the loop (see ``svcrest.syncrun``). Bodies are
    read within a deadline, by few server threads at once (see ``svcrest.serve.bodies``).
    """

    def __init__(self, host: SiteHost) -> None:
        self.host = host
        self._body_reads = PacedBodyReads()

    async def _site_response(
        self, http: HttpRequest, environ: Environ, lines: tuple[tuple[str, str], ...]
    ) -> HttpResponse:
        """The wrapped ASGI site app's answer to a non-REST request, collected."""
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": http.method,
            "scheme": http.scheme,
            "path": http.path,
            "raw_path": http.path.encode(),
            "query_string": http.query_string.encode(),
            "root_path": "",
            "headers": [
                (name.lower().encode("latin-1"), value.encode("latin-1", "replace"))
                for name, value in http.headers.items_list()
            ],
            "client": (http.client, 0),
            "server": (environ.get("SERVER_NAME", ""), int(environ.get("SERVER_PORT", 0) or 0)),
        }
        sent = False
        collected = HttpResponse(500)
        parts: list[bytes] = []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": http.body, "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                collected.status = message["status"]
                collected.headers = [
                    (n.decode("latin-1"), v.decode("latin-1"))
                    for n, v in message["headers"]
                    if n.lower() != b"content-length"  # the adapter sends its own
                ]
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))

        site = self.host.site
        assert site is not None  # respond forwards only when there is a site app
        await site(scope, receive, send)
        collected.body = b"".join(parts)
        collected.headers.extend(lines)
        return collected

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        host = self.host
        check = host.process_check  # an in-memory store split by several workers: refused
        if check.pending or check.refusal is not None:
            check.decide(host.store_in_memory, environ.get("wsgi.multiprocess"))
            if check.refusal is not None:
                start_response(_status_line(503), check.refusal.safe_headers())
                return [check.refusal.body]
        http = _request(environ)
        # PERF: a request with neither body line is answered without asking its headers
        # (two Python calls less; with the status line and Content-Length written out, a
        # WSGI GET went from 112,919 to 109,562 instructions, bench/instructions.py).
        announced = http.method not in BODILESS_METHODS or (
            ("CONTENT_LENGTH" in environ or "HTTP_TRANSFER_ENCODING" in environ)
            and headers_announce_body(http.method, http.headers)
        )
        reader = _body_reader(environ, host.max_body_size, self._body_reads) if announced else None
        # This request has its own server thread: "blocking" callbacks run on it, in place
        # (``inline``). The pipeline runs in a context of its own (as a Task would), so what
        # it sets in context variables never reaches the next request served by this thread.
        context = _copy_context()
        # PERF: the client's request id read here (no header look-up call).
        sent_id = environ.get("HTTP_X_REQUEST_ID", "")
        answer = run_in_context(respond(host, http, reader, sent_id), context, True)
        if ACCESS_LOG.on:  # the request as respond named it, for the server's access-log line
            LOGGED_REQUEST.set(context.get(LOGGED_REQUEST))
        if type(answer) is SiteForward:
            try:
                if announced:
                    http.body = _read_body(environ, host.max_body_size, self._body_reads) or b""
            except BodyReadError as exc:
                answer = body_error_page(exc.error)
            else:
                answer = run_in_context(
                    self._site_response(http, environ, answer.lines), _copy_context(), True
                )
        status = answer.status
        start_response(_STATUS_LINES.get(status) or _status_line(status), answer.safe_headers())
        return [answer.body]
