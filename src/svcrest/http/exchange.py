"""The protocol-neutral HTTP exchange the ASGI and WSGI adapters translate to and from."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from svcrest.http.headers import Headers

__all__ = ["HttpRequest", "HttpResponse", "host_name", "safe_header_line", "wire_lines"]

_FORBIDDEN_IN_HEADERS = str.maketrans("", "", "\r\n\x00")


def safe_header_line(name: str, value: str) -> tuple[str, str]:
    """A header line both adapters can send. SECURITY: CR, LF and NUL are removed so no
    value can split a header; characters outside Latin-1 become ``?``."""
    return (
        name.translate(_FORBIDDEN_IN_HEADERS).encode("latin-1", "replace").decode("latin-1"),
        value.translate(_FORBIDDEN_IN_HEADERS).encode("latin-1", "replace").decode("latin-1"),
    )


def wire_lines(lines: Iterable[tuple[str, str]]) -> tuple[tuple[bytes, bytes], ...]:
    """Header lines made safe by ``safe_header_line`` and encoded for the wire (Latin-1)."""
    return tuple(
        (name.encode("latin-1"), value.encode("latin-1"))
        for name, value in (safe_header_line(*line) for line in lines)
    )


def host_name(host: str) -> str:
    """The lower-case host of a ``Host`` header value: no port, no IPv6 brackets."""
    if host.startswith("[") and "]" in host:
        return host[1 : host.find("]")].lower()
    return (host.rsplit(":", 1)[0] if ":" in host else host).lower()


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
    #: The Content-Length to announce when it is not ``len(body)`` (HEAD: the GET length).
    content_length: int | None = None
    #: The first ``len(wire_prefix)`` lines of ``headers`` already encoded for the wire
    #: (made safe by ``safe_header_line``); PERF: constant blocks are encoded once.
    wire_prefix: tuple[tuple[bytes, bytes], ...] = ()

    def strip_body_for_head(self) -> None:
        """Answer HEAD: keep the length the GET body would have, send no body."""
        self.content_length = len(self.body)
        self.body = b""

    def length_header(self) -> list[tuple[str, str]]:
        """The ``Content-Length`` line the adapters add (none for 1xx, 204 and 304, which
        RFC 9110 forbids it on)."""
        if self.status < 200 or self.status in (204, 304):
            return []
        length = len(self.body) if self.content_length is None else self.content_length
        return [("Content-Length", str(length))]
