"""WordPress client compatibility for REST answers: WordPress's paging header names.

Clients written for WordPress (``wpapi``'s ``_paging``, ``@wordpress/api-fetch``'s
``parse: false`` users) read ``X-WP-Total`` and ``X-WP-TotalPages``; with the site's
``wordpress_compat`` on, every answer that carries svcrest's ``X-SVC-Total`` /
``X-SVC-TotalPages`` carries WordPress's names too, with the same values.
"""

from __future__ import annotations

from typing import Any

from svcrest.hooks import Hooks
from svcrest.http.request import Request
from svcrest.http.response import Response

__all__ = ["PAGING_HEADERS", "install_rest_compat", "send_wordpress_paging_headers"]

#: svcrest's paging header → WordPress's name for it.
PAGING_HEADERS = (("X-SVC-Total", "X-WP-Total"), ("X-SVC-TotalPages", "X-WP-TotalPages"))


def send_wordpress_paging_headers(response: Any, server: Any, request: Request) -> Any:
    """``rest_post_dispatch``: add ``X-WP-Total`` / ``X-WP-TotalPages`` beside svcrest's."""
    if isinstance(response, Response) and response.has_headers():
        headers = response.headers
        for ours, theirs in PAGING_HEADERS:
            value = headers.get(ours)
            if value is not None and theirs not in headers:
                headers[theirs] = value
    return response


def install_rest_compat(hooks: Hooks) -> None:
    """Attach the REST side of WordPress client compatibility to ``hooks``."""
    hooks.add_filter("rest_post_dispatch", send_wordpress_paging_headers, 20)
