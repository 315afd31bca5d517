"""ResultSet: one page of a read, with the paging headers of the answer."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

import httpx

from svcrest.client.errors import ProxyError

__all__ = [
    "TOTAL_HEADER",
    "TOTAL_PAGES_HEADER",
    "PageTrail",
    "ResultSet",
    "header_int",
    "next_link",
]

#: The response header with the number of records of the whole collection.
TOTAL_HEADER: Final = "X-SVC-Total"
#: The response header with the number of pages of the collection.
TOTAL_PAGES_HEADER: Final = "X-SVC-TotalPages"
#: WordPress's names of the same headers: read when svcrest's are absent (a WordPress site).
_WP_TOTAL: Final = "X-WP-Total"
_WP_TOTAL_PAGES: Final = "X-WP-TotalPages"


def header_int(response: httpx.Response, name: str) -> int | None:
    """The header ``name`` as an int; None when absent or not a decimal integer."""
    value = response.headers.get(name, "").strip()
    return int(value) if value.isdecimal() and len(value) < 20 else None


def _total(response: httpx.Response, name: str, wordpress_name: str) -> int | None:
    found = header_int(response, name)
    return found if found is not None else header_int(response, wordpress_name)


_LINK = re.compile(r"<([^>]*)>([^,]*)")
_REL = re.compile(r';\s*rel\s*=\s*(?:"([^"]*)"|([^\s;]+))', re.IGNORECASE)


def next_link(response: httpx.Response) -> str | None:
    """The URL of the first ``Link`` whose ``rel`` names ``next`` among its space-separated,
    case-insensitive values (resolved against the request URL); the browser module's
    ``nextLink`` reads the header by the same rules."""
    for match in _LINK.finditer(", ".join(response.headers.get_list("link"))):
        rel = _REL.search(match.group(2))
        rels = (rel.group(1) if rel.group(1) is not None else rel.group(2)) if rel else ""
        if "next" in rels.lower().split():
            url = match.group(1)
            if not url:
                return None
            request_url = response.request.url
            return str(request_url.join(url)) if request_url.is_absolute_url else url
    return None


@dataclass(frozen=True)
class ResultSet:
    """What `RestProxy.read_result` returns (Ext JS's ``Ext.data.ResultSet``, for a page).

    ``records`` is the decoded JSON body as a list: a list body as it is, an object body as a
    list of one, an empty body as ``[]``. ``total`` and ``total_pages`` come from the
    ``X-SVC-Total`` and ``X-SVC-TotalPages`` headers of any collection, else from WordPress's
    ``X-WP-Total`` and ``X-WP-TotalPages`` (None when both are absent); ``next_url`` from the
    ``Link`` header with ``rel="next"`` (None on the last page); ``response`` is the
    `httpx.Response`.
    """

    records: list[Any]
    total: int | None
    total_pages: int | None
    next_url: str | None
    response: httpx.Response

    @classmethod
    def from_response(cls, response: httpx.Response, body: Any) -> ResultSet:
        """The result set of ``response``, whose decoded JSON body is ``body``."""
        if body is None:
            records: list[Any] = []
        elif isinstance(body, list):
            records = body
        else:
            records = [body]
        return cls(
            records=records,
            total=_total(response, TOTAL_HEADER, _WP_TOTAL),
            total_pages=_total(response, TOTAL_PAGES_HEADER, _WP_TOTAL_PAGES),
            next_url=next_link(response),
            response=response,
        )


class PageTrail:
    """The ``next`` links a paging loop has followed, to stop at one that leads back.

    A server whose ``Link rel="next"`` names a page already read would otherwise keep a
    client paging forever; :meth:`next_url` raises `ProxyError` ``paging_loop`` instead.
    """

    __slots__ = ("_read",)

    def __init__(self) -> None:
        self._read: set[str] = set()

    def next_url(self, page: ResultSet) -> str | None:
        """The URL of the page after ``page`` (None after the last one)."""
        url = page.next_url
        if url is None:
            return None
        if url in self._read:
            raise ProxyError(
                "paging_loop",
                f"The next page link leads back to a page already read: {url}",
                page.response.status_code,
            )
        self._read.add(url)
        return url
