"""The sans-I/O REST response."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from svcrest.http.errors import RestError
from svcrest.http.headers import Headers, HeadersInit
from svcrest.instances import without_init
from svcrest.types import AnswerLike

__all__ = ["Response", "data_response", "rest_ensure_response"]


class Response:
    """Response data, a status, headers, links and the route that produced it."""

    __slots__ = (
        "_headers",
        "_lines",
        "data",
        "links",
        "matched_handler",
        "matched_route",
        "status",
    )

    def __init__(
        self, data: AnswerLike = None, status: int = 200, headers: HeadersInit = None
    ) -> None:
        #: The data to send as JSON. Typed ``Any`` on purpose, as ``httpx.Response.json()``
        #: is: callers index it by what their route returns.
        self.data: Any = data
        self.status = status
        # PERF: the response's own header lines live in a plain list until someone asks for
        # ``headers``; the pipeline's default filters append to it directly. A tuple there is
        # the REST pipeline's own lines, shared as they are (never changed in place: copied
        # on the first change), so that it can tell whether a callback changed them.
        self._headers: Headers | None = None
        self._lines: list[tuple[str, str]] | tuple[tuple[str, str], ...] | None = None
        if headers is not None:
            self.headers = headers
        self.matched_route = ""
        self.matched_handler: Mapping[str, Any] | None = None
        #: rel → list of link objects ``{"href": ..., **attributes}``.
        self.links: dict[str, list[dict[str, Any]]] = {}

    @property
    def headers(self) -> Headers:
        """The response's own header lines (case-insensitive, multi-valued)."""
        headers = self._headers
        if headers is None:
            lines = self._lines
            headers = self._headers = Headers.from_lines(
                lines if type(lines) is list else list(lines or ())
            )
            self._lines = None
        return headers

    @headers.setter
    def headers(self, value: HeadersInit) -> None:
        # PERF: an exact type test first (isinstance on a Mapping subclass costs ~0.3 µs).
        self._headers = (
            value if type(value) is Headers or isinstance(value, Headers) else Headers(value)
        )
        self._lines = None

    def has_headers(self) -> bool:
        """Whether the response has any header line of its own (creates nothing)."""
        headers = self._headers
        if headers is None:
            return bool(self._lines)
        return not headers.is_empty()

    def has_header(self, name: str) -> bool:
        """Whether a header line named ``name`` (any case) is set (creates nothing)."""
        headers = self._headers
        if headers is not None:
            return name in headers
        lines = self._lines
        if lines:
            key = name.lower()
            size = len(key)
            for line in lines:
                # PERF: the length first; a lower-cased copy only of a name of that length
                # (the CORS filter asks past an Allow line: a WSGI GET 257 instructions less).
                if len(line[0]) == size and line[0].lower() == key:
                    return True
        return False

    def add_header_lines(self, lines: Iterable[tuple[str, str]]) -> None:
        """Append header lines (as ``headers.add`` for each; creates no ``Headers``)."""
        headers = self._headers
        own = self._lines
        if headers is not None:
            headers.extend(lines)
        elif own is None:
            self._lines = list(lines)
        elif type(own) is list:
            own.extend(lines)
        else:
            self._lines = [*own, *lines]

    def replace_lines(self, lines: Iterable[tuple[str, str]]) -> None:
        """Make ``lines`` the response's own header lines, in place of every line it had (a
        tuple is kept as it is: it is copied on the first change, never changed in place)."""
        self._headers = None
        self._lines = lines if type(lines) is tuple else list(lines)

    def set_header_line(self, name: str, value: str) -> None:
        """Replace every line of ``name`` with one (as ``headers[name] = value``)."""
        if self._headers is not None or self._lines:
            self.headers[name] = value
        else:
            self._lines = [(name, value)]

    def header_tuple(self) -> tuple[tuple[str, str], ...]:
        """The response's own header lines, in order, as a tuple."""
        headers = self._headers
        if headers is not None:
            return tuple(headers.items_list())
        lines = self._lines
        return tuple(lines) if lines else ()

    def add_link(self, rel: str, href: str, *, embeddable: bool = False, **attributes: Any) -> None:
        """Add a link, sent in the response body under ``_links`` (WordPress's format); an
        ``embeddable`` link is embedded by ``?_embed``."""
        link = {"href": href, **attributes}
        if embeddable:
            link["embeddable"] = True
        self.links.setdefault(rel, []).append(link)

    def set_status(self, status: int) -> None:
        """Change the status."""
        self.status = status

    def header(self, name: str, value: str, replace: bool = True) -> None:
        """Set a header, replacing (default) or adding a line."""
        if replace:
            self.headers[name] = value
        else:
            self.headers.add(name, value)

    def is_error(self) -> bool:
        """Whether the status is 400 or above."""
        return self.status >= 400

    @classmethod
    def from_error(cls, error: RestError) -> Response:
        """The response for an error: its body shape, status and header lines."""
        response = cls(error.to_dict(), error.status)
        for name, value in error.headers:
            response.headers[name] = value
        return response

    def __repr__(self) -> str:
        return f"<Response {self.status} {self.matched_route!r}>"


def data_response(data: Any) -> Response:
    """``Response(data)``: the data, status 200, no header lines, no links.

    PERF: every slot set here, without the class call and its ``__init__`` frame (a WSGI GET
    86,038 → 84,742 instructions, bench/instructions.py, with this written out in dispatch;
    tests/rest/test_lean_pipeline.py reads every slot back): keep it next to ``__init__``."""
    response = without_init(Response)
    response.data = data
    response.status = 200
    response._headers = None
    response._lines = None
    response.matched_route = ""
    response.matched_handler = None
    response.links = {}
    return response


def rest_ensure_response(value: Any) -> Response | RestError:
    """A Response or RestError as it is; anything else wrapped in ``Response(value)``."""
    kind = type(value)
    if kind is dict or kind is list:  # PERF: the common answer of a callback
        return data_response(value)
    if isinstance(value, (Response, RestError)):
        return value
    return Response(value)
