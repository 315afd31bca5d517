"""Every HTML page of the site refuses to be framed (clickjacking) and has the site's look.

A same-site page could frame ``/authorize-application`` and get one click on "Yes, I approve":
every HTML answer of the site's own pages sends ``X-Frame-Options: DENY`` and
``Content-Security-Policy: frame-ancestors 'none'`` (merged into a page's own policy), links
``/static/site.css`` and ``/static/favicon.svg``; a ``site`` app's answers are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

import svcrest.demo
import svcrest.site.docs_pages
from svcrest import App
from svcrest.auth.passwords import ScryptParams
from svcrest.http.exchange import HttpResponse
from svcrest.site.pages import forbid_framing
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
HOME = "http://127.0.0.1:8000"
FAST = ScryptParams(n=16, r=1, p=1)
DENY = "DENY"
NONE = "frame-ancestors 'none'"
FAVICON = '<link rel="icon" type="image/svg+xml" href="/static/favicon.svg">'
STYLESHEET = '<link rel="stylesheet" href="/static/site.css">'
#: The docs page's own policy, with ``frame-ancestors 'none'`` merged in.
DOCS_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self' http://127.0.0.1:8000; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
AUTHORIZE = "/authorize-application?app_name=My+App&success_url=https%3A%2F%2Fapp.example%2Fcb"


@pytest.fixture
def app() -> Iterator[App]:
    made = App(HOME, secret_key="test-secret", max_body_size=1024)
    made.users.password_params = FAST
    made.users.create("alice", "alice-pw", roles=("editor",))
    yield made
    made.store.close()


def logged_in(client_for: ClientFor, app: App) -> SiteClient:
    client = client_for(app)
    assert client.post("/login", data={"log": "alice", "pwd": "alice-pw"}).status_code == 303
    return client


def assert_unframeable(response: httpx.Response, status: int) -> None:
    """One X-Frame-Options and one policy, with the exact values."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "text/html; charset=UTF-8"
    assert response.headers.get_list("x-frame-options") == [DENY]
    assert response.headers.get_list("content-security-policy") == [NONE]


def assert_site_look(response: httpx.Response) -> None:
    assert FAVICON in response.text
    assert STYLESHEET in response.text
    assert "<style>" not in response.text


def form_nonce(text: str) -> str:
    match = re.search(r'name="_wpnonce" value="([0-9a-f]+)"', text)
    assert match is not None
    return match.group(1)


# -- anonymous pages ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status"),
    [
        pytest.param("GET", "/", {}, 200, id="home"),
        pytest.param("HEAD", "/", {}, 200, id="home-head"),
        pytest.param("GET", "/login", {}, 200, id="login"),
        pytest.param("GET", "/login?loggedout=true", {}, 200, id="logged-out"),
        pytest.param(
            "POST", "/login", {"data": {"log": "alice", "pwd": "wrong"}}, 403, id="login-failed"
        ),
        pytest.param(
            "POST",
            "/login",
            {"data": {"log": "alice", "pwd": "x"}, "headers": {"Origin": "https://evil.test"}},
            403,
            id="login-cross-origin",
        ),
        pytest.param("GET", "/nothing/here", {}, 404, id="not-found"),
        pytest.param("GET", "/logout", {}, 405, id="method-not-allowed"),
        pytest.param("POST", "/login", {"content": b"x" * 2048}, 413, id="too-large"),
    ],
)
def test_anonymous_html_pages_refuse_framing(
    app: App,
    client_for: ClientFor,
    method: str,
    path: str,
    kwargs: dict[str, Any],
    status: int,
) -> None:
    response = client_for(app).request(method, path, **kwargs)
    assert_unframeable(response, status)
    if method != "HEAD":
        assert_site_look(response)


def test_the_404_page_has_the_sites_look(app: App, client_for: ClientFor) -> None:
    response = client_for(app).get("/no/such/page")
    assert_unframeable(response, 404)
    assert_site_look(response)
    assert '<section class="card">\n<h1>Not found</h1>' in response.text
    assert f'<p class="back"><a href="{HOME}/">&larr; Back to svcrest</a></p>' in response.text


# -- logged-in pages ---------------------------------------------------------------------------


def test_logged_in_home_refuses_framing(app: App, client_for: ClientFor) -> None:
    client = logged_in(client_for, app)
    response = client.get("/")
    assert_unframeable(response, 200)
    assert_site_look(response)
    assert "Logged in as <strong>alice</strong>" in response.text


def test_logout_with_a_stale_nonce_refuses_framing(app: App, client_for: ClientFor) -> None:
    client = logged_in(client_for, app)
    assert_unframeable(client.post("/logout", data={"_wpnonce": "0"}), 403)


def test_authorize_application_refuses_framing_in_every_answer(
    app: App, client_for: ClientFor
) -> None:
    client = logged_in(client_for, app)
    page = client.get(AUTHORIZE)
    assert_unframeable(page, 200)
    assert_site_look(page)
    assert page.headers["cache-control"] == "no-store"
    assert '<p class="brand"><a href="http://127.0.0.1:8000/">svcrest</a></p>' in page.text
    assert '<button type="submit" name="approve" value="1" class="primary">' in page.text
    nonce = form_nonce(page.text)
    error = client.get("/authorize-application?app_name=&success_url=")
    assert_unframeable(error, 400)
    assert_site_look(error)
    assert '<p class="error" role="alert">' in error.text
    stale = client.post("/authorize-application", data={"app_name": "A", "_wpnonce": "0"})
    assert_unframeable(stale, 403)
    rejected = client.post(
        "/authorize-application", data={"app_name": "A", "_wpnonce": nonce, "reject": "1"}
    )
    assert_unframeable(rejected, 200)
    assert "<h1>Connection rejected</h1>" in rejected.text
    shown = client.post(
        "/authorize-application", data={"app_name": "A", "_wpnonce": nonce, "approve": "1"}
    )
    assert_unframeable(shown, 200)
    assert_site_look(shown)
    assert 'class="new-application-password"' in shown.text


def test_the_demo_home_page_refuses_framing(client_for: ClientFor) -> None:
    app = App(HOME, store=":memory:")
    svcrest.demo.register(app)
    try:
        response = client_for(app).get("/")
        assert_unframeable(response, 200)
        assert FAVICON in response.text
        assert 'id="login-link"' in response.text  # the demo's page, not the core one
    finally:
        app.store.close()


# -- pages with their own policy ---------------------------------------------------------------


def test_the_docs_page_gets_frame_ancestors_merged_into_its_policy(
    app: App, client_for: ClientFor
) -> None:
    response = client_for(app).get("/docs")
    assert response.status_code == 200
    assert response.headers.get_list("x-frame-options") == [DENY]
    assert response.headers.get_list("content-security-policy") == [DOCS_POLICY]
    assert '<link rel="icon" type="image/svg+xml" href="/static/favicon.svg">' in response.text


def test_the_docs_page_without_swagger_ui_refuses_framing(
    app: App, client_for: ClientFor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(svcrest.site.docs_pages, "swagger_ui_dir", lambda: None)
    response = client_for(app).get("/docs")
    assert_unframeable(response, 503)
    assert_site_look(response)


def test_a_replaced_home_page_with_its_own_policy_keeps_one_policy(
    app: App, client_for: ClientFor
) -> None:
    def page(current: object, *args: object) -> HttpResponse:
        return HttpResponse(
            200,
            [
                ("Content-Type", "text/html"),
                ("Content-Security-Policy", "default-src 'self';"),
            ],
            b"<!doctype html><p>mine</p>",
        )

    app.hooks.add_filter("svc_home_page", page)
    response = client_for(app).get("/")
    assert response.headers.get_list("x-frame-options") == [DENY]
    assert response.headers.get_list("content-security-policy") == [
        "default-src 'self'; frame-ancestors 'none'"
    ]


# -- answers that are not HTML pages -----------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/openapi.json", "/static/site.css", "/static/favicon.svg", "/rsd.xml", "/auth/nonce"],
)
def test_answers_that_are_not_html_are_left_alone(
    app: App, client_for: ClientFor, path: str
) -> None:
    response = client_for(app).get(path)
    assert response.status_code == 200
    assert "x-frame-options" not in response.headers
    assert "content-security-policy" not in response.headers


def test_redirects_and_rest_answers_are_left_alone(app: App, client_for: ClientFor) -> None:
    client = client_for(app)
    redirect = client.get(AUTHORIZE)
    assert redirect.status_code == 303
    rest = client.get("/svc-json/")
    assert rest.status_code == 200
    for response in (redirect, rest):
        assert "x-frame-options" not in response.headers
        assert "content-security-policy" not in response.headers


def test_the_favicon_is_served_from_static(app: App, client_for: ClientFor) -> None:
    response = client_for(app).get("/static/favicon.svg")
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/svg+xml"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.text.startswith('<svg xmlns="http://www.w3.org/2000/svg"')
    assert "<script" not in response.text


def test_a_site_apps_answers_are_its_own(client_for: ClientFor) -> None:
    async def site(scope: Any, receive: Any, send: Any) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/html; charset=utf-8")],
            }
        )
        await send({"type": "http.response.body", "body": b"<p>framed on purpose</p>"})

    app = App(HOME, site=site)
    response = client_for(app).get("/widget")
    assert response.text == "<p>framed on purpose</p>"
    assert "x-frame-options" not in response.headers
    assert "content-security-policy" not in response.headers


# -- forbid_framing itself ---------------------------------------------------------------------


def _html(*lines: tuple[str, str]) -> HttpResponse:
    return HttpResponse(200, [("Content-Type", "text/html; charset=UTF-8"), *lines], b"")


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        pytest.param(
            [],
            [("X-Frame-Options", DENY), ("Content-Security-Policy", NONE)],
            id="no-policy",
        ),
        pytest.param(
            [("content-security-policy", "img-src 'self' ; ")],
            [("content-security-policy", f"img-src 'self'; {NONE}"), ("X-Frame-Options", DENY)],
            id="merged-into-the-page-policy",
        ),
        pytest.param(
            [("Content-Security-Policy", "")],
            [("Content-Security-Policy", NONE), ("X-Frame-Options", DENY)],
            id="empty-policy",
        ),
        pytest.param(
            [("Content-Security-Policy", "default-src 'self'; Frame-Ancestors https://a.test")],
            [("Content-Security-Policy", "default-src 'self'; Frame-Ancestors https://a.test")],
            id="the-page-chose-its-framers",
        ),
        pytest.param(
            [("X-Frame-Options", "SAMEORIGIN")],
            [("X-Frame-Options", "SAMEORIGIN"), ("Content-Security-Policy", NONE)],
            id="own-x-frame-options-kept",
        ),
        pytest.param(
            [("Content-Security-Policy", "frame-src 'none'")],
            [
                ("Content-Security-Policy", f"frame-src 'none'; {NONE}"),
                ("X-Frame-Options", DENY),
            ],
            id="frame-src-is-another-directive",
        ),
    ],
)
def test_forbid_framing(lines: list[tuple[str, str]], expected: list[tuple[str, str]]) -> None:
    response = forbid_framing(_html(*lines))
    assert response.headers == [("Content-Type", "text/html; charset=UTF-8"), *expected]


@pytest.mark.parametrize(
    "content_type", ["application/json", "text/plain; charset=UTF-8", "text/css", None]
)
def test_forbid_framing_leaves_other_types_alone(content_type: str | None) -> None:
    lines = [] if content_type is None else [("Content-Type", content_type)]
    assert forbid_framing(HttpResponse(200, list(lines), b"")).headers == lines


def test_forbid_framing_reads_xhtml_and_any_case() -> None:
    response = forbid_framing(HttpResponse(200, [("content-type", "Application/XHTML+XML")]))
    assert response.headers[1:] == [("X-Frame-Options", DENY), ("Content-Security-Policy", NONE)]


def test_forbid_framing_merges_into_a_line_encoded_already() -> None:
    response = HttpResponse(
        200,
        [("Content-Type", "text/html"), ("Content-Security-Policy", "img-src 'self'")],
        b"",
        wire_prefix=(
            (b"Content-Type", b"text/html"),
            (b"Content-Security-Policy", b"img-src 'self'"),
        ),
    )
    assert forbid_framing(response).wire_headers() == [
        (b"Content-Type", b"text/html"),
        (b"Content-Security-Policy", f"img-src 'self'; {NONE}".encode()),
        (b"X-Frame-Options", b"DENY"),
        (b"Content-Length", b"0"),
    ]


def test_a_page_that_never_answers_html_is_not_read_for_framing(
    app: App, client_for: ClientFor
) -> None:
    from svcrest.http.context import RequestContext
    from svcrest.http.exchange import HttpRequest
    from svcrest.site.host import Page, SiteHost

    async def answer(site: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
        return HttpResponse(200, [("Content-Type", "text/html")], b"<p>")

    app.pages["/framed"] = Page(answer)
    app.pages["/api-only"] = Page(answer, html=False)
    client = client_for(app)
    assert client.get("/framed").headers["x-frame-options"] == DENY
    left = client.get("/api-only")
    assert left.status_code == 200
    assert "x-frame-options" not in left.headers
    assert "content-security-policy" not in left.headers
    # Its refusals are the site's own HTML pages, framed as ever.
    assert client.request("DELETE", "/api-only").headers["x-frame-options"] == DENY


def test_mcp_answers_carry_no_framing_lines(client_for: ClientFor) -> None:
    client = client_for(App(HOME, mcp=True))
    response = client.post(
        "/mcp",
        content=b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert "x-frame-options" not in response.headers
    assert "content-security-policy" not in response.headers
