"""Collection paging for plugins: totals headers and ``Link`` rel next/prev (WordPress's
``X-WP-Total`` / ``X-WP-TotalPages`` convention; docs/guides/batch-embed-paging.md).

WordPress's controllers each repeat the same lines (``X-WP-Total``, ``X-WP-TotalPages``, the
``rest_post_invalid_page_number`` check, ``Link`` headers built with ``add_query_arg``);
:func:`paginate` is that code once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode

from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.response import Response

__all__ = ["invalid_page_number", "paginate", "set_total_headers"]

_PAGE = "page"


def invalid_page_number() -> RestError:
    """The 400 of a page past the last one."""
    return RestError(
        "rest_invalid_page_number",
        "The page number requested is larger than the number of pages available.",
        {"status": 400},
    )


def set_total_headers(response: Response, total: int, per_page: int) -> int:
    """Set ``X-SVC-Total`` and ``X-SVC-TotalPages``; returns the number of pages."""
    pages = -(-total // per_page) if total > 0 else 0
    response.header("X-SVC-Total", str(total))
    response.header("X-SVC-TotalPages", str(pages))
    return pages


def _query_pairs(request: Request) -> list[tuple[str, str]]:
    """The request's query string as pairs, in order (from a mapping: its scalar values)."""
    raw = request.query_string
    if raw is not None:
        return parse_qsl(raw, keep_blank_values=True)
    return [
        (name, str(value))
        for name, value in request.query_params.items()
        if isinstance(value, str | int | float) and not isinstance(value, bool)
    ]


def page_url(request: Request, page: int) -> str:
    """The URL of ``request`` with its ``page`` query parameter set to ``page`` (in the
    position it had, else last); the other parameters are kept as they were sent."""
    pairs: list[tuple[str, str]] = []
    placed = False
    for name, value in _query_pairs(request):
        if name == "rest_route":
            continue  # a plain-permalink REST URL carries it already
        if name == _PAGE:
            if not placed:
                pairs.append((_PAGE, str(page)))
                placed = True
            continue
        pairs.append((name, value))
    if not placed:
        pairs.append((_PAGE, str(page)))
    site = request.site
    base = site.rest_url(request.route) if site is not None else request.route
    joiner = "&" if "?" in base else "?"
    return f"{base}{joiner}{urlencode(pairs)}"


def paginate(
    request: Request, items: Sequence[Any], *, total: int, page: int, per_page: int
) -> Response:
    """One page of a collection: a Response of ``items`` with ``X-SVC-Total``,
    ``X-SVC-TotalPages`` and ``Link`` headers to the previous and next pages (the request's
    URL with ``page`` replaced).

    ``total`` counts every item of the collection, ``page`` (from 1) and ``per_page`` say which
    window ``items`` is. A page past the last answers 400 ``rest_invalid_page_number``; an
    empty collection answers 200 with both totals 0 and no links, whatever the page.
    """
    if per_page < 1:
        raise ValueError(f"per_page must be at least 1, not {per_page}")
    if total > 0 and not 1 <= page <= -(-total // per_page):
        return Response.from_error(invalid_page_number())
    response = Response(list(items))
    pages = set_total_headers(response, total, per_page)
    if pages:
        if page > 1:
            response.header("Link", f'<{page_url(request, page - 1)}>; rel="prev"', False)
        if page < pages:
            response.header("Link", f'<{page_url(request, page + 1)}>; rel="next"', False)
    return response
