"""The WSGI adapter: the same site as the ASGI app, for WSGI servers."""

from __future__ import annotations

import http as http_status
import logging
from collections.abc import Callable, Iterable, MutableMapping
from typing import TYPE_CHECKING, Any

from svcrest.express import plain_query, serve_express
from svcrest.http.exchange import HttpRequest, HttpResponse, host_name, safe_header_line
from svcrest.http.headers import Headers
from svcrest.serving import handle_http, rest_route_of
from svcrest.syncrun import run_sync

if TYPE_CHECKING:
    from svcrest.app import App

__all__ = ["WSGIAdapter"]

logger = logging.getLogger("svcrest")

StartResponse = Callable[..., Any]
Environ = MutableMapping[str, Any]


def _wsgi_str(value: str) -> str:
    """WSGI hands bytes over as Latin-1 strings (PEP 3333); the URL path is UTF-8. A server
    that already decoded the path (characters beyond Latin-1) is taken at its word."""
    try:
        raw = value.encode("latin-1")
    except UnicodeEncodeError:
        return value
    return raw.decode("utf-8", "replace")


def _headers(environ: Environ) -> Headers:
    headers = Headers()
    for key, value in environ.items():
        if key.startswith("HTTP_"):
            headers.add(key[5:].replace("_", "-").title(), value)
        elif key in ("CONTENT_TYPE", "CONTENT_LENGTH") and value:
            headers.add(key.replace("_", "-").title(), value)
    return headers


def _status_line(status: int) -> str:
    try:
        return f"{status} {http_status.HTTPStatus(status).phrase}"
    except ValueError:
        return f"{status} Unknown"


class WSGIAdapter:
    """A WSGI application serving an App (``app.wsgi``).

    The async pipeline runs on a private event loop per server thread.
    """

    def __init__(self, app: App) -> None:
        self.app = app

    def _read_body(self, environ: Environ) -> tuple[bytes, bool]:
        """The body, or (b"", True) past the App's limit. A body without Content-Length is
        read only when the server says the stream ends on its own (``wsgi.input_terminated``,
        as for chunked uploads); SECURITY: never more than the limit plus one byte."""
        limit = self.app.max_body_size
        stream = environ.get("wsgi.input")
        raw_length = str(environ.get("CONTENT_LENGTH") or "").strip()
        if raw_length.isdigit():
            length = int(raw_length)
            if length > limit:
                return b"", True
            return (stream.read(length) if stream is not None and length else b""), False
        if stream is None or not environ.get("wsgi.input_terminated"):
            return b"", False
        body = stream.read(limit + 1)
        return (b"", True) if len(body) > limit else (body, False)

    def _request(self, environ: Environ) -> HttpRequest:
        headers = _headers(environ)
        host = host_name(headers.get("host") or environ.get("SERVER_NAME", ""))
        path = _wsgi_str(environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")) or "/"
        return HttpRequest(
            method=str(environ.get("REQUEST_METHOD", "GET")).upper(),
            path=path,
            query_string=_wsgi_str(environ.get("QUERY_STRING", "")),
            headers=headers,
            scheme=environ.get("wsgi.url_scheme", "http"),
            host=host,
            client=environ.get("REMOTE_ADDR", ""),
        )

    async def _site_response(self, http: HttpRequest, environ: Environ) -> HttpResponse:
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

        await self.app.site(scope, receive, send)
        collected.body = b"".join(parts)
        link = self.app.rest_output_link_header()
        if link is not None:
            collected.headers.append(("Link", link))
        return collected

    def _express(self, http: HttpRequest) -> HttpResponse | None:
        """The express lane's answer to a read (see ``svcrest.express``), None for the
        general way."""
        method = http.method
        query = http.query_string
        if (method != "GET" and method != "HEAD") or not plain_query(query):
            return None
        route = rest_route_of(self.app, http.path, "")
        if type(route) is not str:
            return None
        secure = http.scheme == "https"
        answer: HttpResponse | None = run_sync(
            lambda: serve_express(self.app, method, route, http.headers, secure, http.host, query)
        )
        return answer

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        try:
            http = self._request(environ)
            response = self._express(http)
            if response is None:
                http.body, http.body_too_large = self._read_body(environ)
                if (
                    self.app.site is not None
                    and rest_route_of(self.app, http.path, http.query_string) is None
                ):
                    response = run_sync(lambda: self._site_response(http, environ))
                else:
                    response = run_sync(lambda: handle_http(self.app, http))
        except Exception:
            logger.exception("Unhandled exception in the WSGI adapter")
            response = HttpResponse(
                500, [("Content-Type", "text/plain; charset=UTF-8")], b"Internal server error."
            )
        headers = [
            safe_header_line(name, value)
            for name, value in [*response.headers, *response.length_header()]
        ]
        start_response(_status_line(response.status), headers)
        return [response.body]
