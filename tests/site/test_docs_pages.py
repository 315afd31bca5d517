"""``/openapi.json`` and the ``/docs`` page over both adapters: the document in step with the
registry, the page and its Swagger UI files served by the site itself."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest

import svcrest.demo
from svcrest import App, DoingItWrong, Request
from svcrest.site.docs_pages import swagger_ui_dir
from tests.conftest import SiteClient

HOME = "http://127.0.0.1:8000/blog"
MakeClient = Callable[..., SiteClient]


@pytest.fixture
def demo() -> Iterator[App]:
    app = App(HOME, name="Notes <site>", store=":memory:")
    svcrest.demo.register(app)
    yield app
    app.store.close()


def test_openapi_json_is_the_apps_document(demo: App, client_for: MakeClient) -> None:
    client = client_for(demo)
    answer = client.get("/openapi.json")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json; charset=UTF-8"
    assert answer.headers["link"] == f'<{HOME}/svc-json/>; rel="https://api.w.org/"'
    assert answer.json() == demo.openapi()
    assert answer.json()["info"]["title"] == "Notes <site>"


def test_openapi_json_follows_the_registry(demo: App, client_for: MakeClient) -> None:
    client = client_for(demo)
    assert "/later/v1/x" not in client.get("/openapi.json").json()["paths"]
    # A route left without a check is still served and documented, after a warning.
    with pytest.warns(DoingItWrong, match="for later/v1/x is missing the required"):
        demo.register_rest_route(
            "later/v1", "/x", {"callback": lambda request: {}, "permission_callback": None}
        )
    assert "get" in client.get("/openapi.json").json()["paths"]["/later/v1/x"]


def test_swagger_ui_5_is_installed() -> None:
    located = swagger_ui_dir()
    assert located is not None, "pip install swagger-ui-bundle-v2"
    assert int(located[0].split(".")[0]) >= 5


def test_the_docs_page_loads_only_the_sites_own_files(demo: App, client_for: MakeClient) -> None:
    client = client_for(demo)
    page = client.get("/docs")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=UTF-8"
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy
    assert "script-src 'self';" in policy
    assert "connect-src 'self' http://127.0.0.1:8000;" in policy
    assert "cache-control" not in page.headers  # anonymous: no nonce in it
    html = page.text
    assert "<title>Notes &lt;site&gt; API</title>" in html
    assert 'data-spec-url="/blog/openapi.json"' in html
    assert 'data-nonce=""' in html
    urls = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert urls and all(url.startswith("/blog/") for url in urls), urls
    loaded = [url for url in urls if url.endswith((".js", ".css", ".svg"))]
    assert len(loaded) == 4
    for url in loaded:
        asset = client.get(url.removeprefix("/blog"))
        assert asset.status_code == 200, url
        assert len(asset.content) > (300 if url.endswith(".svg") else 500), url
        assert asset.headers["x-content-type-options"] == "nosniff"
    script = client.get("/static/openapi-docs.js")
    assert "validatorUrl: null" in script.text
    bundle = next(url for url in loaded if url.endswith("swagger-ui-bundle.js"))
    answer = client.get(bundle.removeprefix("/blog"))
    assert answer.headers["content-type"] == "text/javascript; charset=UTF-8"
    assert answer.headers["cache-control"] == "public, max-age=31536000, immutable"
    head = client.request("HEAD", "/docs")
    assert (head.status_code, head.content) == (200, b"")


def test_a_logged_in_docs_page_carries_a_nonce_and_is_not_cached(
    demo: App, client_for: MakeClient
) -> None:
    demo.users.create("ed", "pw-ed-123456", roles=("editor",))
    client = client_for(demo)
    login = client.post("/login", data={"log": "ed", "pwd": "pw-ed-123456"})
    assert login.status_code == 303
    page = client.get("/docs")
    assert page.headers["cache-control"] == "no-store"
    nonce = re.search(r'data-nonce="([0-9a-f]{32})"', page.text)
    assert nonce is not None
    created = client.post(
        "/svc-json/demo/v1/notes",
        json={"title": "With the page's nonce"},
        headers={"X-SVC-Nonce": nonce[1]},
    )
    assert created.status_code == 201


def test_home_pages_link_the_docs(client_for: MakeClient) -> None:
    plain = App(HOME)
    assert '<a href="docs" id="api-docs-link">' in client_for(plain).get("/").text
    demo = App(HOME, store=":memory:")
    svcrest.demo.register(demo)
    try:
        html = client_for(demo).get("/").text
        assert '<a id="api-docs-link" href="/blog/docs">API documentation</a>' in html
    finally:
        demo.store.close()


def test_without_swagger_ui_the_docs_page_says_so(
    demo: App, client_for: MakeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("svcrest.site.docs_pages.swagger_ui_dir", lambda: None)
    page = client_for(demo).get("/docs")
    assert page.status_code == 503
    assert "swagger-ui-bundle-v2" in page.text
    assert '<a href="/blog/openapi.json">' in page.text


def test_internal_requests_are_unaffected(demo: App) -> None:
    assert demo.rest_do_request(Request("GET", "/demo/v1/notes")).status == 200
