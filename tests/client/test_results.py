"""A page of a read (``svcrest.client.results``): records, totals and the next link."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from svcrest.client.errors import ProxyError
from svcrest.client.results import PageTrail, ResultSet, header_int, next_link

URL = "http://example.org/svc-json/demo/v1/notes?page=1"


def answer(headers: list[tuple[str, str]] | None = None, url: str = URL) -> httpx.Response:
    return httpx.Response(200, headers=headers or [], request=httpx.Request("GET", url))


@pytest.mark.parametrize(
    ("value", "number"),
    [("12", 12), (" 7 ", 7), ("-1", None), ("1.5", None), ("", None), ("9" * 20, None)],
)
def test_header_int(value: str, number: int | None) -> None:
    assert header_int(answer([("X-SVC-Total", value)]), "X-SVC-Total") == number


@pytest.mark.parametrize(
    ("links", "expected"),
    [
        (['<?page=2>; rel="next"'], "http://example.org/svc-json/demo/v1/notes?page=2"),
        (['<http://a.test/p2>; rel="prev", <http://a.test/p3>; rel=next'], "http://a.test/p3"),
        (['<http://a.test/p3>; REL="Next Last"'], "http://a.test/p3"),
        (['<http://a.test/p1>; rel="prev"', '<http://a.test/p3>; rel="next"'], "http://a.test/p3"),
        (['<http://a.test/p3>; rel="nextish"'], None),
        (['<>; rel="next"'], None),
        ([], None),
    ],
    ids=["relative", "second-of-two", "case-and-several", "two-lines", "not-next", "empty", "none"],
)
def test_next_link(links: list[str], expected: str | None) -> None:
    assert next_link(answer([("Link", link) for link in links])) == expected


@pytest.mark.parametrize(
    ("body", "records"),
    [(None, []), ([1, 2], [1, 2]), ({"id": 1}, [{"id": 1}])],
)
def test_records_of_a_body(body: Any, records: list[Any]) -> None:
    assert ResultSet.from_response(answer(), body).records == records


def test_totals_fall_back_to_wordpress_names() -> None:
    ours = ResultSet.from_response(
        answer([("X-SVC-Total", "5"), ("X-SVC-TotalPages", "2"), ("X-WP-Total", "9")]), []
    )
    assert (ours.total, ours.total_pages, ours.next_url) == (5, 2, None)
    wordpress = ResultSet.from_response(answer([("X-WP-Total", "9"), ("X-WP-TotalPages", "3")]), [])
    assert (wordpress.total, wordpress.total_pages) == (9, 3)
    neither = ResultSet.from_response(answer(), [])
    assert (neither.total, neither.total_pages) == (None, None)


def test_a_trail_stops_at_a_link_leading_back() -> None:
    trail = PageTrail()
    first = ResultSet.from_response(answer([("Link", '<http://a.test/p2>; rel="next"')]), [])
    assert trail.next_url(first) == "http://a.test/p2"
    with pytest.raises(ProxyError) as raised:
        trail.next_url(first)
    assert (raised.value.code, raised.value.status) == ("paging_loop", 200)
    assert raised.value.message == (
        "The next page link leads back to a page already read: http://a.test/p2"
    )
    assert trail.next_url(ResultSet.from_response(answer(), [])) is None
