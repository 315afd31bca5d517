"""The sans-I/O REST response."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from svcrest.http.errors import RestError
from svcrest.http.headers import Headers, HeadersInit
from svcrest.types import JSON

__all__ = ["Response", "rest_ensure_response"]


class Response:
    """Response data, a status, headers, links and the route that produced it."""

    __slots__ = ("data", "headers", "links", "matched_handler", "matched_route", "status")

    def __init__(self, data: JSON = None, status: int = 200, headers: HeadersInit = None) -> None:
        self.data: JSON = data
        self.status = status
        # PERF: an exact type test first (isinstance on a Mapping subclass costs ~0.3 µs).
        self.headers = (
            headers
            if type(headers) is Headers or isinstance(headers, Headers)
            else Headers(headers)
        )
        self.matched_route = ""
        self.matched_handler: Mapping[str, Any] | None = None
        #: rel → list of link objects ``{"href": ..., **attributes}``.
        self.links: dict[str, list[dict[str, Any]]] = {}

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
        """The response for an error: its body shape and status."""
        return cls(error.to_dict(), error.status)

    def __repr__(self) -> str:
        return f"<Response {self.status} {self.matched_route!r}>"


def rest_ensure_response(value: Any) -> Response | RestError:
    """A Response or RestError as it is; anything else wrapped in ``Response(value)``."""
    if isinstance(value, (Response, RestError)):
        return value
    return Response(value)
