"""URL building (spec 4.1, 4.3) and discovery (spec 4.7)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from svcrest import App, public
from svcrest.http.context import REQUEST_CONTEXT, RequestContext
from svcrest.rest.urls import rest_route_of, rewrite_rules
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
HOME = "http://example.org"


@pytest.mark.parametrize(
    ("path", "pretty", "expected"),
    [
        ("", True, "http://example.org/svc-json/"),
        ("/", True, "http://example.org/svc-json/"),
        ("/demo/v1/items", True, "http://example.org/svc-json/demo/v1/items"),
        ("demo/v1/items", True, "http://example.org/svc-json/demo/v1/items"),
        ("///demo/v1", True, "http://example.org/svc-json/demo/v1"),
        ("", False, "http://example.org/?rest_route=/"),
        ("/demo/v1/items", False, "http://example.org/?rest_route=/demo/v1/items"),
        ("demo/v1/items", False, "http://example.org/?rest_route=/demo/v1/items"),
        ("//demo", False, "http://example.org/?rest_route=/demo"),
        ("/a b&c#d", False, "http://example.org/?rest_route=/a%20b%26c%23d"),
        (
            "/demo/v1/items?per_page=5",
            False,
            "http://example.org/?rest_route=/demo/v1/items&per_page=5",
        ),
    ],
)
def test_rest_url(path: str, pretty: bool, expected: str) -> None:
    app = App(HOME, pretty_permalinks=pretty)
    assert app.rest_url(path) == expected
    assert app.get_rest_url(None, path or "/") == expected


def test_home_with_path_and_trailing_slash() -> None:
    app = App("http://example.org/blog/")
    assert app.rest_url("/x") == "http://example.org/blog/svc-json/x"
    plain = App("http://example.org/blog", pretty_permalinks=False)
    assert plain.rest_url("/x") == "http://example.org/blog/?rest_route=/x"


def test_prefix_filter() -> None:
    app = App(HOME)
    app.hooks.add_filter("rest_url_prefix", lambda prefix: "api/")
    assert app.rest_get_url_prefix() == "api"
    assert app.rest_url("/x") == "http://example.org/api/x"


def test_multisite() -> None:
    app = App(HOME)
    app.add_site(2, "http://two.example.org")
    app.add_site(3, "http://three.example.org/sub", pretty_permalinks=False)
    assert app.get_rest_url(2, "/a") == "http://two.example.org/svc-json/a"
    assert app.get_rest_url(3, "/a") == "http://three.example.org/sub/?rest_route=/a"
    assert app.get_rest_url(1, "/a") == "http://example.org/svc-json/a"
    with pytest.raises(ValueError, match="unknown blog id 9"):
        app.get_rest_url(9)


@pytest.mark.parametrize(
    ("scheme", "expected"),
    [
        ("rest", "http://example.org/svc-json/a"),
        ("json", "http://example.org/svc-json/a"),
        ("https", "https://example.org/svc-json/a"),
        ("http", "http://example.org/svc-json/a"),
        ("relative", "/svc-json/a"),
    ],
)
def test_scheme_argument(scheme: str, expected: str) -> None:
    assert App(HOME).get_rest_url(None, "/a", scheme) == expected


@pytest.mark.parametrize(
    ("secure", "host", "expected"),
    [
        (True, "example.org", "https://example.org/svc-json/"),
        (True, "other.org", "http://example.org/svc-json/"),
        (False, "example.org", "http://example.org/svc-json/"),
    ],
    ids=["tls-same-host", "tls-other-host", "plain"],
)
def test_https_forced_when_request_is_tls_on_home_host(
    secure: bool, host: str, expected: str
) -> None:
    app = App(HOME)
    token = REQUEST_CONTEXT.set(RequestContext(is_rest=True, secure=secure, host=host))
    try:
        assert app.rest_url() == expected
    finally:
        REQUEST_CONTEXT.reset(token)


def test_https_forcing_over_http(client_for: ClientFor) -> None:
    app = App(HOME)
    app.register_rest_route(
        "demo/v1", "/u", {"permission_callback": public, "callback": lambda r: app.rest_url("/x")}
    )
    client = client_for(app, "https://example.org")
    assert client.get("/svc-json/demo/v1/u").json() == "https://example.org/svc-json/x"


def test_rest_url_filter_receives_url_path_blog_scheme() -> None:
    app = App(HOME)
    seen: list[tuple[Any, ...]] = []

    def record(url: str, path: str, blog_id: int, scheme: str) -> str:
        seen.append((url, path, blog_id, scheme))
        return url + "?filtered"

    app.hooks.add_filter("rest_url", record)
    assert app.rest_url("demo") == "http://example.org/svc-json/demo?filtered"
    assert seen == [("http://example.org/svc-json/demo", "/demo", 1, "json")]


def test_rewrite_rules_as_data() -> None:
    assert rewrite_rules("svc-json") == [
        ("^svc-json/?$", "index.php?rest_route=/"),
        ("^svc-json/(.*)?", "index.php?rest_route=/$matches[1]"),
    ]


def test_discovery_strings() -> None:
    app = App("http://example.org/a&b")
    root = "http://example.org/a&amp;b/svc-json/"
    assert app.rest_output_rsd() == (
        f'\t<api name="SVC-API" blogID="1" preferred="false" apiLink="{root}" />\n'
    )
    assert app.rest_output_link_wp_head() == f"<link rel='https://api.w.org/' href='{root}' />\n"
    assert app.rest_output_link_header() == (
        '<http://example.org/a&b/svc-json/>; rel="https://api.w.org/"'
    )


def test_discovery_silent_with_empty_root(client_for: ClientFor) -> None:
    app = App(HOME)
    app.hooks.add_filter("rest_url", lambda url, path, blog_id, scheme: "")
    assert app.rest_output_rsd() == ""
    assert app.rest_output_link_wp_head() == ""
    assert app.rest_output_link_header() is None
    client = client_for(app, HOME)
    assert "link" not in client.get("/").headers
    assert "link" not in client.get("/svc-json/").headers
    assert "<api " not in client.get("/rsd.xml").text


def test_link_header_cannot_be_split() -> None:
    app = App(HOME)
    app.hooks.add_filter("rest_url", lambda url, path, b, s: url + "\r\nX: y<>")
    assert app.rest_output_link_header() == (
        '<http://example.org/svc-json/%0D%0AX:%20y%3C%3E>; rel="https://api.w.org/"'
    )


def test_site_pages_carry_discovery(client_for: ClientFor) -> None:
    client = client_for(App(HOME), HOME)
    link = '<http://example.org/svc-json/>; rel="https://api.w.org/"'
    home = client.get("/")
    assert home.status_code == 200
    assert home.headers.get_list("link") == [link]
    assert "<link rel='https://api.w.org/' href='http://example.org/svc-json/' />" in home.text
    head = client.request("HEAD", "/")
    assert (head.status_code, head.content, head.headers.get_list("link")) == (200, b"", [link])
    rsd = client.get("/rsd.xml")
    assert rsd.headers["content-type"] == "application/rsd+xml; charset=UTF-8"
    assert rsd.text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<rsd version="1.0"')
    assert (
        '\t\t\t<api name="SVC-API" blogID="1" preferred="false" '
        'apiLink="http://example.org/svc-json/" />\n'
    ) in rsd.text


def test_root_index_fields(client_for: ClientFor) -> None:
    app = App(HOME, name="My site", description="Tests", timezone="+05:30")
    app.register_rest_route(
        "demo/v1", "/a", {"permission_callback": public, "callback": lambda r: 1}
    )
    data = client_for(app, HOME).get("/svc-json/").json()
    assert {
        k: data[k]
        for k in (
            "name",
            "description",
            "url",
            "home",
            "gmt_offset",
            "timezone_string",
            "namespaces",
            "authentication",
        )
    } == {
        "name": "My site",
        "description": "Tests",
        "url": HOME,
        "home": HOME,
        "gmt_offset": 5.5,
        "timezone_string": "",
        "namespaces": ["svc/v2", "demo/v1"],
        "authentication": {
            "application-passwords": {
                "endpoints": {"authorization": "http://example.org/authorize-application"}
            }
        },
    }
    assert data["routes"]["/demo/v1/a"] == {
        "namespace": "demo/v1",
        "methods": ["GET"],
        "endpoints": [{"methods": ["GET"], "args": {}}],
        "_links": {"self": [{"href": "http://example.org/svc-json/demo/v1/a"}]},
    }
    assert "/demo/v1" in data["routes"]


def test_namespace_index(client_for: ClientFor) -> None:
    app = App(HOME)
    app.register_rest_route(
        "demo/v1", "/a", {"permission_callback": public, "callback": lambda r: 1}
    )
    app.register_rest_route(
        "other/v1", "/b", {"permission_callback": public, "callback": lambda r: 1}
    )
    client = client_for(app, HOME)
    data = client.get("/svc-json/demo/v1").json()
    assert data["namespace"] == "demo/v1"
    assert sorted(data["routes"]) == ["/demo/v1", "/demo/v1/a"]
    assert data["_links"] == {"up": [{"href": "http://example.org/svc-json/"}]}


def test_iana_timezone_gmt_offset_follows_dst() -> None:
    winter = App(HOME, timezone="America/New_York", clock=lambda: 1484566200.0)
    summer = App(HOME, timezone="America/New_York", clock=lambda: 1499000000.0)
    assert (winter.gmt_offset(), summer.gmt_offset()) == (-5, -4)
    assert winter.timezone_string == "America/New_York"


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="home must be an absolute http"):
        App("example.org")
    with pytest.raises(ValueError):
        App(HOME, timezone="Mars/Olympus")


@pytest.mark.parametrize(
    ("path", "query", "route"),
    [
        ("/wp/svc-json", "", "/"),
        ("/wp/svc-json/", "", "/"),
        ("/wp/svc-json//", "", "/"),
        ("/wp/svc-json/a/b", "", "/a/b"),
        ("/wp/svc-json/a/b/", "", "/a/b"),
        ("/wp/svc-json/a/b//", "", "/a/b/"),
        ("/wp/svc-jsonx/a", "", None),
        ("/wp/svc-jsonx/a", "rest_route=/c/d/", "/c/d"),
        ("/wp/other", "rest_route=c", "/c"),
        ("/wp/other", "rest_route=", None),
        ("/wp/other", "", None),
        ("/wp", "", None),
    ],
)
def test_rest_route_of_a_path_and_query(path: str, query: str, route: str | None) -> None:
    assert rest_route_of("/wp/svc-json", path, query) == route
