"""``Access-Control-Allow-Methods``: the spec's list by default, ``App(cors_allow_methods=...)``
replacing it, current WordPress's list (with PATCH) under ``wordpress_compat=True``; and a
browser's preflight check of a cross-origin PATCH, passed only when the list has PATCH."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from svcrest import App, Request, public
from svcrest.rest.defaults import MAX_ORIGIN_LENGTH, CorsLines
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
ORIGIN = "https://app.example"
SPEC = "POST, GET, OPTIONS, PUT, DELETE"
WORDPRESS = "OPTIONS, GET, POST, PUT, PATCH, DELETE"
ITEM = "/svc-json/demo/v1/items/5"


def make_app(**options: Any) -> App:
    app = App(**options)
    app.register_rest_route(
        "demo/v1",
        r"/items/(?P<id>\d+)",
        {
            "permission_callback": public,
            "methods": "GET, PUT, PATCH",
            "callback": lambda request: {"id": request["id"], "method": request.method},
        },
    )
    return app


def preflight(client: SiteClient, method: str, headers: str = "content-type") -> httpx.Response:
    return client.request(
        "OPTIONS",
        ITEM,
        headers={
            "Origin": ORIGIN,
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": headers,
        },
    )


def passes_preflight(response: httpx.Response, method: str, headers: str) -> bool:
    """The Fetch standard's CORS-preflight check of a credentialed request: an ok status, the
    origin echoed, credentials allowed, the method listed (methods compare case-sensitively)
    and every requested header listed (header names compare case-insensitively)."""
    allowed_methods = [
        name.strip() for name in response.headers.get("access-control-allow-methods", "").split(",")
    ]
    allowed_headers = {
        name.strip().lower()
        for name in response.headers.get("access-control-allow-headers", "").split(",")
    }
    return (
        200 <= response.status_code <= 299
        and response.headers.get("access-control-allow-origin") == ORIGIN
        and response.headers.get("access-control-allow-credentials") == "true"
        and method in allowed_methods
        and all(name.strip().lower() in allowed_headers for name in headers.split(","))
    )


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        pytest.param({}, SPEC, id="default-spec"),
        pytest.param({"wordpress_compat": True}, WORDPRESS, id="wordpress-compat"),
        pytest.param(
            {"cors_allow_methods": "get, Patch ,DELETE"}, "GET, PATCH, DELETE", id="string"
        ),
        pytest.param(
            {"cors_allow_methods": ["GET", "POST", "PATCH", "GET"]}, "GET, POST, PATCH", id="list"
        ),
        pytest.param(
            {"cors_allow_methods": ("GET",), "wordpress_compat": True}, "GET", id="option-wins"
        ),
    ],
)
def test_allow_methods(client_for: ClientFor, options: dict[str, Any], expected: str) -> None:
    client = client_for(make_app(**options))
    for response in (
        preflight(client, "PUT"),
        client.get(ITEM, headers={"Origin": ORIGIN}),
        client.get("/svc-json/nothing", headers={"Origin": ORIGIN}),
    ):
        assert response.headers["access-control-allow-methods"] == expected
        assert response.headers["access-control-allow-origin"] == ORIGIN


def test_internal_dispatch_sends_no_cors() -> None:
    response = make_app(wordpress_compat=True).rest_do_request(
        Request("GET", "/demo/v1/items/5", headers={"Origin": ORIGIN})
    )
    assert "Access-Control-Allow-Methods" not in response.headers


def test_two_sites_in_one_process_keep_their_own_lists(client_for: ClientFor) -> None:
    spec = client_for(make_app())
    compat = client_for(make_app(wordpress_compat=True))
    for _ in range(2):  # the second round reads what each site remembered
        for client, expected in ((spec, SPEC), (compat, WORDPRESS)):
            answer = client.get(ITEM, headers={"Origin": ORIGIN})
            assert answer.headers["access-control-allow-methods"] == expected


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"wordpress_compat": True}, id="wordpress-compat"),
        pytest.param({"cors_allow_methods": "GET, PUT, PATCH, OPTIONS"}, id="option"),
    ],
)
def test_a_cross_origin_patch_passes_its_preflight(
    client_for: ClientFor, options: dict[str, Any]
) -> None:
    client = client_for(make_app(**options))
    requested = "content-type, x-svc-nonce"
    assert passes_preflight(preflight(client, "PATCH", requested), "PATCH", requested)
    answer = client.request(
        "PATCH", ITEM, json={}, headers={"Origin": ORIGIN, "Content-Type": "application/json"}
    )
    assert answer.status_code == 200
    assert answer.json() == {"id": "5", "method": "PATCH"}
    assert answer.headers["access-control-allow-origin"] == ORIGIN


def test_the_spec_list_fails_a_patch_preflight(client_for: ClientFor) -> None:
    client = client_for(make_app())
    assert passes_preflight(preflight(client, "PUT"), "PUT", "content-type")
    assert not passes_preflight(preflight(client, "PATCH"), "PATCH", "content-type")


@pytest.mark.parametrize(
    "methods",
    ["", "GET,", "PA TCH", "GET\r\nX-Injected: 1", "GET;", [], ["GET", ""], [1], "GÉT"],
    ids=repr,
)
def test_bad_lists_are_refused(methods: Any) -> None:
    with pytest.raises(ValueError, match="cors_allow_methods"):
        App(cors_allow_methods=methods)


def test_the_option_is_keyword_only() -> None:
    parameter = inspect.signature(App).parameters["cors_allow_methods"]
    assert parameter.kind is inspect.Parameter.KEYWORD_ONLY
    assert parameter.default is None


def test_the_cors_lines_of_each_origin_are_remembered_within_bounds() -> None:
    cors = CorsLines("GET, POST")
    assert cors.lines("https://a.example") == (
        ("Access-Control-Allow-Origin", "https://a.example"),
        ("Access-Control-Allow-Methods", "GET, POST"),
        ("Access-Control-Allow-Credentials", "true"),
    )
    assert cors.lines("https://a.example/path") == ()
    assert cors.lines("null")[0] == ("Access-Control-Allow-Origin", "null")
    assert set(cors.memo) == {"https://a.example", "https://a.example/path", "null"}
    # A value longer than an Origin can be is answered (refused) but never kept.
    long = "https://" + "a" * MAX_ORIGIN_LENGTH + ".example"
    assert cors.lines(long) == ()
    assert long not in cors.memo
    # Many origins: the memory is emptied when full, never larger than its bound.
    for n in range(1000):
        assert cors.lines(f"https://h{n}.example")[0][1] == f"https://h{n}.example"
        assert len(cors.memo) <= 256
    # 3 kept before, emptied on the 254th, 510th and 766th new origin: 1 + 234 after.
    assert len(cors.memo) == 235
