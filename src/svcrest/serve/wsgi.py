"""The WSGI adapter: the same site as the ASGI app, for WSGI servers."""

from __future__ import annotations

import http as http_status
from collections.abc import Callable, Iterable, MutableMapping
from typing import Any

from svcrest.blocking import inline
from svcrest.http.exchange import HttpRequest, HttpResponse, host_name
from svcrest.http.headers import Headers
from svcrest.site.host import SiteHost
from svcrest.site.respond import SiteForward, respond
from svcrest.syncrun import run_sync

__all__ = ["WSGIAdapter"]

StartResponse = Callable[..., Any]
#: Methods whose requests carry no body unless the headers announce one.
_BODILESS_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})
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


def _headers(environ: Environ) -> Headers:
    """The request's header lines (``HTTP_X_Y`` as ``X-Y``), decoded and indexed in one pass
    as the ASGI adapter does."""
    lines: list[tuple[str, str]] = []
    index: dict[str, list[str]] = {}
    for key, value in environ.items():
        if key[:5] == "HTTP_":
            name = key[5:].replace("_", "-").lower()
        elif (key == "CONTENT_TYPE" or key == "CONTENT_LENGTH") and value:
            name = key.replace("_", "-").lower()
        else:
            continue
        lines.append((name.title(), value))
        values = index.get(name)
        if values is None:
            index[name] = [value]
        else:
            values.append(value)
    return Headers.from_lines(lines, index)


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

    def _request(self, environ: Environ) -> HttpRequest:
        headers = _headers(environ)
        host = host_name(headers.get_joined("host") or environ.get("SERVER_NAME", ""))
        path = _wsgi_str(environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")) or "/"
        # PERF: positional arguments (a dataclass's keyword parsing costs ~1 µs).
        return HttpRequest(
            str(environ.get("REQUEST_METHOD", "GET")).upper(),
            path,
            _wsgi_str(environ.get("QUERY_STRING", "")),
            headers,
            b"",
            environ.get("wsgi.url_scheme", "http"),
            host,
            environ.get("REMOTE_ADDR", ""),
        )

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
        http = self._request(environ)
        limit = host.max_body_size

        async def read_body() -> bytes | None:
            return _read_body(environ, limit)

        # A body reader only for a request with a body, as the ASGI adapter decides. PERF: a
        # GET without Content-Length or Transfer-Encoding has no body (RFC 9112 §6.3).
        reader = (
            None
            if http.method in _BODILESS_METHODS
            and not environ.get("HTTP_TRANSFER_ENCODING")
            and str(environ.get("CONTENT_LENGTH") or "0").strip() == "0"
            else read_body
        )
        # This request has its own server thread: "blocking" callbacks run on it, in place.
        with inline():
            answer = run_sync(lambda: respond(host, http, reader))
        if type(answer) is SiteForward:
            http.body = _read_body(environ, limit) or b""
            lines = answer.lines
            answer = run_sync(lambda: self._site_response(http, environ, lines))
        start_response(_status_line(answer.status), answer.safe_headers())
        return [answer.body]
