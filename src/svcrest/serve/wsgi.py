"""The WSGI adapter: the same site as the ASGI app, for WSGI servers."""

from __future__ import annotations

import http as http_status
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from itertools import filterfalse
from typing import Any

from svcrest.blocking import inline_context
from svcrest.http.exchange import HttpRequest, HttpResponse, announces_body, host_name
from svcrest.http.headers import Headers
from svcrest.site.host import SiteHost
from svcrest.site.respond import SiteForward, respond
from svcrest.syncrun import run_in_context

__all__ = ["WSGIAdapter"]

StartResponse = Callable[..., Any]
#: The usual request methods, as they are (others are upper-cased).
_METHODS = {
    method: method for method in ("GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE")
}
Environ = MutableMapping[str, Any]


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


def _header_names(key: str) -> tuple[str, str]:
    """The header line name of an environ key (``HTTP_X_Y`` → ``X-Y``, ``CONTENT_TYPE`` →
    ``Content-Type``) and its lower-cased form."""
    name = (key[5:] if key[:5] == "HTTP_" else key).replace("_", "-").lower()
    return name.title(), name


#: The request headers most clients send: their environ keys are named once, in
#: ``_HEADER_KEYS`` (PERF: naming a line costs three string methods).
_COMMON_HEADERS = (
    "accept",
    "accept-encoding",
    "accept-language",
    "authorization",
    "cache-control",
    "connection",
    "cookie",
    "dnt",
    "forwarded",
    "host",
    "if-modified-since",
    "if-none-match",
    "origin",
    "pragma",
    "priority",
    "referer",
    "sec-ch-ua",
    "sec-ch-ua-mobile",
    "sec-ch-ua-platform",
    "sec-fetch-dest",
    "sec-fetch-mode",
    "sec-fetch-site",
    "sec-fetch-user",
    "te",
    "transfer-encoding",
    "upgrade-insecure-requests",
    "user-agent",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-proto",
    "x-http-method-override",
    "x-real-ip",
    "x-requested-with",
    "x-svc-nonce",
    "x-wp-nonce",
)
#: The environ keys that are not header lines: the CGI and WSGI variables, and the keys met
#: that do not start with ``HTTP_`` (granian also puts every environment variable of the
#: server process in each environ: dozens). PERF: they are skipped in C, by one set look-up
#: each (naming a key costs a slice); a process's servers reuse the same few dozen keys.
#: SECURITY: a client's header lines all become ``HTTP_`` keys, so only the server adds to
#: it, and never more than ``_NOT_HEADERS_MAX`` keys of at most ``_NOT_HEADER_LENGTH``.
_NOT_HEADERS: set[str] = set(
    {
        "AUTH_TYPE",
        "GATEWAY_INTERFACE",
        "HTTPS",
        "PATH_INFO",
        "PATH_TRANSLATED",
        "QUERY_STRING",
        "RAW_URI",
        "REMOTE_ADDR",
        "REMOTE_HOST",
        "REMOTE_PORT",
        "REMOTE_USER",
        "REQUEST_METHOD",
        "REQUEST_URI",
        "SCRIPT_NAME",
        "SERVER_NAME",
        "SERVER_PORT",
        "SERVER_PROTOCOL",
        "SERVER_SOFTWARE",
        "gunicorn.socket",
        "wsgi.errors",
        "wsgi.file_wrapper",
        "wsgi.input",
        "wsgi.input_terminated",
        "wsgi.multiprocess",
        "wsgi.multithread",
        "wsgi.run_once",
        "wsgi.url_scheme",
        "wsgi.version",
    }
)
_NOT_HEADERS_MAX = 1024
_NOT_HEADER_LENGTH = 256
_is_not_header = _NOT_HEADERS.__contains__
#: The header lines most clients send, by environ key: their names (see ``_header_names``).
#: PERF: a table made once, of fixed names, never of what a client sends (other keys are
#: named one by one).
_HEADER_KEYS: dict[str, tuple[str, str]] = {
    **{
        key: _header_names(key)
        for key in ("HTTP_" + name.upper().replace("-", "_") for name in _COMMON_HEADERS)
    },
    "CONTENT_TYPE": _header_names("CONTENT_TYPE"),
    "CONTENT_LENGTH": _header_names("CONTENT_LENGTH"),
}


def _request(environ: Environ) -> HttpRequest:
    """The request of ``environ``, its headers indexed (lower-cased name → values).

    The header lines are ``HTTP_X_Y`` as ``X-Y``, and ``CONTENT_TYPE`` and ``CONTENT_LENGTH``
    when not empty, decoded and indexed in one pass as the ASGI adapter does.
    """
    lines: list[tuple[str, str]] = []
    index: dict[str, list[str]] = {}
    for key in filterfalse(_is_not_header, environ):
        names = _HEADER_KEYS.get(key)
        if names is None:
            if key[:5] != "HTTP_":
                if len(_NOT_HEADERS) < _NOT_HEADERS_MAX and len(key) <= _NOT_HEADER_LENGTH:
                    _NOT_HEADERS.add(key)
                continue
            names = _header_names(key)
        value = environ[key]
        if not value and (key == "CONTENT_TYPE" or key == "CONTENT_LENGTH"):
            continue
        title, name = names
        lines.append((title, value))
        if name in index:
            index[name].append(value)
        else:
            index[name] = [value]
    host = index.get("host")
    named = (host[0] if len(host) == 1 else ", ".join(host)) if host else ""
    path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
    query = environ.get("QUERY_STRING", "")
    method = environ.get("REQUEST_METHOD", "GET")
    # PERF: positional arguments (a dataclass's keyword parsing costs ~1 µs); the usual
    # methods as they are, ASCII (most paths and queries) without decoding.
    http = HttpRequest(
        _METHODS.get(method) or str(method).upper(),
        (path if path.isascii() else _wsgi_str(path)) or "/",
        query if query.isascii() else _wsgi_str(query),
        Headers.from_lines(lines, index),
        b"",
        environ.get("wsgi.url_scheme", "http"),
        host_name(named or environ.get("SERVER_NAME", "")),
        environ.get("REMOTE_ADDR", ""),
    )
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


def _body_reader(environ: Environ, limit: int) -> Callable[[], Awaitable[bytes | None]]:
    """The reader of a request's body (see ``_read_body``)."""

    async def read_body() -> bytes | None:
        return _read_body(environ, limit)

    return read_body


def _read_body(environ: Environ, limit: int) -> bytes | None:
    """The body, or None past ``limit``. A body without Content-Length is read only when the
    server says the stream ends on its own (``wsgi.input_terminated``, as for chunked
    uploads); SECURITY: never more than the limit plus one byte."""
    stream = environ.get("wsgi.input")
    raw_length = str(environ.get("CONTENT_LENGTH") or "").strip()
    if raw_length.isdigit():
        length = int(raw_length)
        if length > limit:
            return None
        return stream.read(length) if stream is not None and length else b""
    if stream is None or not environ.get("wsgi.input_terminated"):
        return b""
    body: bytes = stream.read(limit + 1)
    return None if len(body) > limit else body


class WSGIAdapter:
    """A WSGI application serving a site (``app.wsgi``).

    The async pipeline runs on a private event loop per server thread; a request whose
    callbacks are all plain finishes without the loop (see ``svcrest.syncrun``).
    """

    def __init__(self, host: SiteHost) -> None:
        self.host = host

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
        http = _request(environ)
        reader = (
            _body_reader(environ, host.max_body_size)
            if announces_body(http.method, http.headers.index())
            else None
        )
        # This request has its own server thread: "blocking" callbacks run on it, in place.
        # The pipeline runs in a context of its own (as a Task would), so what it sets in
        # context variables never reaches the next request served by this thread.
        answer = run_in_context(respond(host, http, reader), inline_context())
        if type(answer) is SiteForward:
            http.body = _read_body(environ, host.max_body_size) or b""
            answer = run_in_context(
                self._site_response(http, environ, answer.lines), inline_context()
            )
        start_response(_status_line(answer.status), answer.safe_headers())
        return [answer.body]
