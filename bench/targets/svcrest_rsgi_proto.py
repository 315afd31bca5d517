"""Prototype: svcrest_plain over RSGI (measurement only)."""
from __future__ import annotations

from typing import Any

from svcrest.http.exchange import USUAL_METHODS, HttpRequest, HttpResponse, known_host_name, remembered_host_name
from svcrest.http.headers import Headers
from svcrest.site.respond import respond
from svcrest_plain import app


def _headers(raw: Any) -> Headers:
    items = raw.items()
    return Headers.from_lines(items)


async def rsgi(scope: Any, protocol: Any) -> None:
    headers = _headers(scope.headers)
    host_line = headers.get_joined("host") or ""
    method = scope.method
    http = HttpRequest(
        USUAL_METHODS.get(method) or method.upper(),
        scope.path,
        scope.query_string,
        headers,
        b"",
        scope.scheme,
        known_host_name(host_line) or remembered_host_name(host_line),
        scope.client.rpartition(":")[0],
    )
    answer = await respond(app, http, None, headers.get_joined("x-request-id") or "")
    assert type(answer) is HttpResponse
    protocol.response_bytes(answer.status, answer.safe_headers(), answer.body)


class _Target:
    __rsgi__ = staticmethod(rsgi)


target = _Target()
