"""WordPress's paging header names beside svcrest's (``svcrest.rest.compat``)."""

from __future__ import annotations

from svcrest import Response
from svcrest.hooks import Hooks
from svcrest.http.request import Request
from svcrest.rest.compat import PAGING_HEADERS, install_rest_compat, send_wordpress_paging_headers

REQUEST = Request("GET", "/x")


def test_the_paging_headers_get_wordpress_names() -> None:
    response = Response([], 200, {"X-SVC-Total": "12", "X-SVC-TotalPages": "2"})
    assert send_wordpress_paging_headers(response, None, REQUEST) is response
    assert dict(response.headers) == {
        "X-SVC-Total": "12",
        "X-SVC-TotalPages": "2",
        "X-WP-Total": "12",
        "X-WP-TotalPages": "2",
    }
    assert PAGING_HEADERS == (
        ("X-SVC-Total", "X-WP-Total"),
        ("X-SVC-TotalPages", "X-WP-TotalPages"),
    )


def test_a_wordpress_header_already_there_is_kept() -> None:
    response = Response([], 200, {"X-SVC-Total": "12", "X-WP-Total": "99"})
    send_wordpress_paging_headers(response, None, REQUEST)
    assert dict(response.headers) == {"X-SVC-Total": "12", "X-WP-Total": "99"}


def test_answers_without_paging_headers_and_other_values_pass_as_they_are() -> None:
    plain = Response({"a": 1})
    assert send_wordpress_paging_headers(plain, None, REQUEST) is plain
    assert dict(plain.headers) == {}
    assert send_wordpress_paging_headers({"a": 1}, None, REQUEST) == {"a": 1}


def test_install_attaches_the_filter_at_priority_20() -> None:
    hooks = Hooks()
    install_rest_compat(hooks)
    response = Response([], 200, {"X-SVC-TotalPages": "3"})
    filtered = hooks.apply_filters("rest_post_dispatch", response, None, REQUEST)
    assert filtered.headers["X-WP-TotalPages"] == "3"
    assert hooks.has_filter("rest_post_dispatch", send_wordpress_paging_headers) == 20
