"""The protocol-neutral HTTP exchange the ASGI and WSGI adapters translate to and from."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable
from dataclasses import dataclass, field

from svcrest.bounded import Memo
from svcrest.http.headers import Headers

__all__ = [
    "BODILESS_METHODS",
    "USUAL_METHODS",
    "HttpRequest",
    "HttpResponse",
    "HttpStream",
    "announces_body",
    "encode_lines",
    "headers_announce_body",
    "host_name",
    "known_host_name",
    "remembered_host_name",
    "safe_header_line",
    "safe_lines",
    "usual_method",
    "wire_lines",
]

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


# PERF: most header lines (Allow, CORS, a plugin's own) repeat from one response to the next;
# encoding one costs ~0.7 µs. SECURITY: bounded in entries and bytes: only short lines are
# kept (a client can make a line of its own choosing, e.g. an echoed Origin), and the cache
# is emptied when full.
_CACHE_MAX = 1024
_CACHE_LINE = 256


def _line_length(line: tuple[str, str]) -> int:
    return len(line[0]) + len(line[1])


_ENCODED: Memo[tuple[str, str], tuple[bytes, bytes]] = Memo(_CACHE_MAX, _CACHE_LINE, _line_length)
_SAFE: Memo[tuple[str, str], tuple[str, str]] = Memo(_CACHE_MAX, _CACHE_LINE, _line_length)
#: Short lines ``safe_header_line`` leaves as they are (bounded by the same rule). PERF: the
#: WSGI adapter checks an answer's lines against it in one set operation.
_SAFE_AS_IS: set[tuple[str, str]] = set()


def encode_lines(lines: Iterable[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """``wire_lines`` with a bounded memory of recently encoded short lines."""
    cache = _ENCODED
    encoded_of = cache.get  # PERF: read once (see :class:`~svcrest.bounded.Memo`)
    encoded: list[tuple[bytes, bytes]] = []
    for line in lines:
        wire = encoded_of(line)
        if wire is None:
            wire = cache.keep(line, wire_lines((line,))[0])
        encoded.append(wire)
    return encoded


def safe_lines(lines: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """``safe_header_line`` over ``lines``, with the same bounded memory as ``encode_lines``."""
    cache = _SAFE
    as_is = _SAFE_AS_IS
    result: list[tuple[str, str]] = []
    for line in lines:
        safe = cache.get(line)
        if safe is None:
            safe = cache.keep(line, safe_header_line(*line))
        if safe == line and line not in as_is and len(line[0]) + len(line[1]) <= _CACHE_LINE:
            if len(as_is) >= _CACHE_MAX:
                as_is.clear()
            as_is.add(line)
        result.append(safe)
    return result


def host_name(host: str) -> str:
    """The lower-case host of a ``Host`` header value: no port, no IPv6 brackets."""
    if host.startswith("[") and "]" in host:
        return host[1 : host.find("]")].lower()
    return (host.rsplit(":", 1)[0] if ":" in host else host).lower()


# PERF: a Host value → its host name (~3,000 instructions to compute, one dict lookup to
# remember). SECURITY: the value is the client's: bounded in entries and bytes, only values of
# at most ``_HOST_LENGTH`` characters are kept, and the memory is emptied when full.
_HOSTS_MAX = 64
_HOST_LENGTH = 128
_HOST_NAMES: Memo[str, str] = Memo(_HOSTS_MAX, _HOST_LENGTH)


def remembered_host_name(host: str) -> str:
    """``host_name(host)``, remembered for the few Host values a site sees."""
    name = _HOST_NAMES.get(host)
    return _HOST_NAMES.keep(host, host_name(host)) if name is None else name


#: ``known_host_name(host)``: the remembered ``host_name(host)``, or None. PERF: the memory's
#: own ``get`` (no Python frame): the adapters ask it first, then
#: :func:`remembered_host_name`.
known_host_name = _HOST_NAMES.get


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


#: The usual request methods, each as it is: an adapter takes a server's method string from
#: here (PERF: no ``upper()``) and upper-cases only the others.
USUAL_METHODS = {
    method: method for method in ("GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE")
}

#: ``usual_method(method)``: the method as it is when usual, else None. PERF: the dict's own
#: ``get``, bound once for the modules that import it (why: :data:`~svcrest.http.context.
#: current_context`).
usual_method = USUAL_METHODS.get

#: Methods whose requests carry no body unless their headers announce one.
BODILESS_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})


def announces_body(method: str, index: dict[str, list[str]]) -> bool:
    """Whether a request of ``method`` with the header lines ``index`` (``Headers.index()``)
    has a body to read: a GET, HEAD, OPTIONS or DELETE only with ``Transfer-Encoding`` or a
    ``Content-Length`` other than 0 (RFC 9112 §6.3), a request of any other method always.

    PERF: a plain GET is answered without waiting for a body."""
    if method not in BODILESS_METHODS or "transfer-encoding" in index:
        return True
    declared = index.get("content-length")
    return declared is not None and any(value.strip() != "0" for value in declared)


#: The header lines that can announce a body (see ``announces_body``).
_BODY_LINES = frozenset({"transfer-encoding", "content-length"})


def headers_announce_body(method: str, headers: Headers) -> bool:
    """:func:`announces_body` of ``headers``. PERF: a request without either line is
    answered without listing its lines (a WSGI environ's are read on demand)."""
    if method not in BODILESS_METHODS:
        return True
    return headers.has_any(_BODY_LINES) and announces_body(method, headers.index())


# PERF: body length → its encoded ``Content-Length`` line (str, encode and a tuple: ~1,000
# instructions). Bounded: only lengths under ``_LENGTH_LINES_UNDER`` are kept (at most that
# many entries of ~100 bytes).
_LENGTH_LINES_UNDER = 2048
#: (A length measures itself: ``int(n)`` is ``n``.)
_LENGTH_LINES: Memo[int, tuple[bytes, bytes]] = Memo(
    _LENGTH_LINES_UNDER, _LENGTH_LINES_UNDER - 1, int
)
#: ``_LENGTH_LINES.get``, read once (PERF: see :class:`~svcrest.bounded.Memo`).
_length_line = _LENGTH_LINES.get
#: The same as str lines, for WSGI (PERF: a WSGI GET 89,866 → 89,252 instructions,
#: bench/instructions.py; ``str()`` of an int costs ~500).
_SAFE_LENGTH_LINES: Memo[int, tuple[str, str]] = Memo(
    _LENGTH_LINES_UNDER, _LENGTH_LINES_UNDER - 1, int
)
#: ``_SAFE_LENGTH_LINES.get``, read once (PERF: see :class:`~svcrest.bounded.Memo`).
_safe_length_line = _SAFE_LENGTH_LINES.get


@dataclass(slots=True)
class HttpResponse:
    """Status, header lines (duplicates allowed, in order) and the body to send."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    #: The Content-Length to announce when it is not ``len(body)`` (HEAD: the GET length).
    content_length: int | None = None
    #: The first ``len(wire_prefix)`` lines of ``headers`` already encoded for the wire;
    #: those lines are safe already (``safe_header_line`` leaves them as they are).
    #: PERF: constant blocks are encoded once.
    wire_prefix: tuple[tuple[bytes, bytes], ...] = ()
    #: The request's ``X-Request-Id`` (checked or made: safe as it is), sent after every
    #: other line but ``Content-Length``; "" for none. PERF: kept apart from ``headers`` so
    #: a value that differs on every answer never goes through the line memories.
    request_id: str = ""

    def strip_body_for_head(self) -> None:
        """Answer HEAD: keep the length the GET body would have, send no body."""
        self.content_length = len(self.body)
        self.body = b""

    def wire_headers(self) -> list[tuple[bytes, bytes]]:
        """Every header line encoded for the wire, ``Content-Length`` included."""
        prefix = self.wire_prefix
        headers = self.headers
        wire = (
            [*prefix, *encode_lines(headers[len(prefix) :])]
            if len(prefix) < len(headers)
            else [*prefix]
        )
        if self.request_id:
            wire.append((b"X-Request-Id", self.request_id.encode("ascii")))
        status = self.status
        # No Content-Length on 1xx, 204 and 304: RFC 9110 forbids it there.
        if status >= 200 and status != 204 and status != 304:
            length = len(self.body) if self.content_length is None else self.content_length
            line = _length_line(length)
            if line is None:
                line = _LENGTH_LINES.keep(length, (b"Content-Length", str(length).encode("ascii")))
            wire.append(line)
        return wire

    def safe_headers(self) -> list[tuple[str, str]]:
        """Every header line made safe (``Content-Length`` included), as str for WSGI."""
        headers = self.headers
        count = len(self.wire_prefix)
        # PERF: the usual answer has every line in the wire prefix: no slice, no set test
        # (with known_host_name, a WSGI GET 91,660 → 90,497 instructions).
        if count == len(headers):
            safe = [*headers]
        else:
            rest = headers[count:]
            # PERF: the usual lines are remembered as safe already: one set operation in C.
            safe = (
                [*headers]
                if _SAFE_AS_IS.issuperset(rest)
                else [*headers[:count], *safe_lines(rest)]
            )
        if self.request_id:
            safe.append(("X-Request-Id", self.request_id))
        status = self.status
        # No Content-Length on 1xx, 204 and 304: RFC 9110 forbids it there.
        if status >= 200 and status != 204 and status != 304:
            length = len(self.body) if self.content_length is None else self.content_length
            line = _safe_length_line(length)
            if line is None:  # digits: safe as they are
                line = _SAFE_LENGTH_LINES.keep(length, ("Content-Length", str(length)))
            safe.append(line)
        return safe


class HttpStream(HttpResponse):
    """An answer whose body is ``chunks``, sent as they come (ASGI and RSGI only: the adapter
    sends each as soon as it comes and closes ``chunks`` when the client leaves): no
    ``Content-Length``, and nothing for HEAD."""

    __slots__ = ("chunks",)

    def __init__(
        self,
        status: int,
        headers: list[tuple[str, str]],
        wire_prefix: tuple[tuple[bytes, bytes], ...],
        chunks: AsyncGenerator[bytes, None],
    ) -> None:
        super().__init__(status, headers, b"", None, wire_prefix)
        self.chunks = chunks

    def wire_headers(self) -> list[tuple[bytes, bytes]]:
        """Every header line encoded for the wire, without ``Content-Length``."""
        wire = super().wire_headers()
        if wire and wire[-1][0] == b"Content-Length":
            wire.pop()
        return wire
