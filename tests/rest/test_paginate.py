"""``svcrest.paginate``: totals headers, Link rel prev/next, the page past the last."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from svcrest import App, Request, Response, paginate, public
from tests.conftest import SiteClient

ITEMS = list(range(1, 24))  # 23 items


def _app(pretty: bool = True) -> App:
    app = App("http://example.org/blog", pretty_permalinks=pretty)

    def listing(request: Request) -> Response:
        page = int(request.get_param("page") or 1)
        per_page = int(request.get_param("per_page") or 10)
        window = ITEMS[(page - 1) * per_page : page * per_page]
        return paginate(request, window, total=len(ITEMS), page=page, per_page=per_page)

    def empty(request: Request) -> Response:
        return paginate(request, [], total=0, page=int(request.get_param("page") or 1), per_page=5)

    app.register_rest_route("t/v1", "/items", {"permission_callback": public, "callback": listing})
    app.register_rest_route("t/v1", "/empty", {"permission_callback": public, "callback": empty})
    return app


@pytest.mark.parametrize(
    ("query", "data", "links"),
    [
        ("", list(range(1, 11)), ['<{root}/t/v1/items?page=2>; rel="next"']),
        (
            "?per_page=5&page=2&tags[]=a&tags[]=b&s=x%20y",
            [6, 7, 8, 9, 10],
            [
                '<{root}/t/v1/items?per_page=5&page=1&tags%5B%5D=a&tags%5B%5D=b&s=x+y>; rel="prev"',
                '<{root}/t/v1/items?per_page=5&page=3&tags%5B%5D=a&tags%5B%5D=b&s=x+y>; rel="next"',
            ],
        ),
        ("?page=3", [21, 22, 23], ['<{root}/t/v1/items?page=2>; rel="prev"']),
        ("?per_page=23", ITEMS, []),
    ],
    ids=["first", "middle-keeps-query", "last", "single-page"],
)
def test_pages_over_http(
    client_for: Callable[[App], SiteClient], query: str, data: list[int], links: list[str]
) -> None:
    response = client_for(_app()).get(f"/svc-json/t/v1/items{query}")
    root = "http://example.org/blog/svc-json"
    assert response.status_code == 200
    assert response.json() == data
    assert response.headers["X-SVC-Total"] == "23"
    per_page = 23 if "per_page=23" in query else 5 if "per_page=5" in query else 10
    assert response.headers["X-SVC-TotalPages"] == str(-(-23 // per_page))
    assert response.headers.get_list("Link") == [
        f'<{root}/>; rel="https://api.w.org/"',
        *(link.format(root=root) for link in links),
    ]


def test_plain_permalink_links(client_for: Callable[[App], SiteClient]) -> None:
    response = client_for(_app(pretty=False)).get(
        "/", params={"rest_route": "/t/v1/items", "page": "2"}
    )
    assert response.headers.get_list("Link")[1:] == [
        '<http://example.org/blog/?rest_route=/t/v1/items&page=1>; rel="prev"',
        '<http://example.org/blog/?rest_route=/t/v1/items&page=3>; rel="next"',
    ]


@pytest.mark.parametrize("page", ["4", "99", "0"])
def test_page_out_of_range(client_for: Callable[[App], SiteClient], page: str) -> None:
    response = client_for(_app()).get(f"/svc-json/t/v1/items?page={page}")
    assert response.status_code == 400
    assert response.json() == {
        "code": "rest_invalid_page_number",
        "message": "The page number requested is larger than the number of pages available.",
        "data": {"status": 400},
    }
    assert "X-SVC-Total" not in response.headers


@pytest.mark.parametrize("page", ["1", "3"])
def test_empty_collection(client_for: Callable[[App], SiteClient], page: str) -> None:
    response = client_for(_app()).get(f"/svc-json/t/v1/empty?page={page}")
    assert response.status_code == 200
    assert response.json() == []
    assert (response.headers["X-SVC-Total"], response.headers["X-SVC-TotalPages"]) == ("0", "0")
    assert response.headers.get_list("Link") == [
        '<http://example.org/blog/svc-json/>; rel="https://api.w.org/"'
    ]


def test_internal_request_from_a_mapping_query() -> None:
    app = _app()
    response = app.rest_do_request(
        Request("GET", "/t/v1/items", query={"per_page": 10, "page": 2, "flag": True})
    )
    assert response.data == list(range(11, 21))
    assert response.headers.get_list("Link") == [
        '<http://example.org/blog/svc-json/t/v1/items?per_page=10&page=1>; rel="prev"',
        '<http://example.org/blog/svc-json/t/v1/items?per_page=10&page=3>; rel="next"',
    ]


def test_without_a_dispatching_server_links_are_relative() -> None:
    response = paginate(Request("GET", "/t/v1/items"), [1], total=3, page=2, per_page=1)
    assert response.headers.get_list("Link") == [
        '</t/v1/items?page=1>; rel="prev"',
        '</t/v1/items?page=3>; rel="next"',
    ]


def test_per_page_must_be_positive() -> None:
    with pytest.raises(ValueError, match="per_page must be at least 1, not 0"):
        paginate(Request(), [], total=0, page=1, per_page=0)
