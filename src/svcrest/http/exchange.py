"""The protocol-neutral HTTP exchange the ASGI and WSGI adapters translate to and from."""

from __future__ import annotations

from dataclasses import dataclass, field

from svcrest.http.headers import Headers

__all__ = ["HttpRequest", "HttpResponse"]


@dataclass(slots=True)
class HttpRequest:
    """An HTTP request as the adapters hand it over: ``path`` is percent-decoded UTF-8."""

    method: str
    path: str
    query_string: str = ""
    headers: Headers = field(default_factory=Headers)
    body: bytes = b""
    scheme: str = "http"
    host: str = ""
    client: str = ""
    #: The body was longer than the App's ``max_body_size`` and was not read.
    body_too_large: bool = False


@dataclass(slots=True)
class HttpResponse:
    """Status, header lines (duplicates allowed, in order) and the body to send."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
