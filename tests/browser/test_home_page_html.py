"""The demo home page's HTML (no browser needed): what it embeds, escapes and links."""

from __future__ import annotations

import re
from collections.abc import Callable

import orjson

import svcrest.demo
from svcrest import App
from svcrest.demo.home import HOME_PAGE_FILTER, install_home_page, render_home_page
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
HOME = "http://127.0.0.1:8000"
SETTINGS = re.compile(r"<script>var svcApiSettings = (.*?);</script>")


def make_app() -> App:
    app = App(HOME, name="Notes & <Co>", description='A "demo"')
    svcrest.demo.register(app)
    install_home_page(app)
    return app


def log_in(client: SiteClient, login: str, password: str) -> None:
    response = client.post("/login", data={"log": login, "pwd": password})
    assert response.status_code == 303, response.text


def test_installing_twice_adds_the_filter_once() -> None:
    app = make_app()
    install_home_page(app)
    assert app.hooks.has_filter(HOME_PAGE_FILTER, render_home_page) == 10
    assert app.hooks.apply_filters(HOME_PAGE_FILTER, "earlier page", app, None) == "earlier page"


def test_logged_out_page(client_for: ClientFor) -> None:
    client = client_for(make_app())
    response = client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=UTF-8"
    page = response.text
    assert f"<link rel='https://api.w.org/' href='{HOME}/svc-json/' />" in page
    assert "svcApiSettings" not in page
    assert '<a class="button" id="login-link" href="/login">Log in</a>' in page
    assert 'data-can-edit="false"' in page
    assert 'id="note-create"' not in page
    assert "<h1>Notes &amp; &lt;Co&gt;</h1>" in page
    assert "A &quot;demo&quot;" in page
    assert '<script type="module" src="/static/demo.js"></script>' in page
    assert '<link rel="stylesheet" href="/static/demo.css">' in page
    assert response.headers.get_list("link") == [f'<{HOME}/svc-json/>; rel="https://api.w.org/"']


def test_logged_in_page(client_for: ClientFor) -> None:
    app = make_app()
    user = app.users.create(
        "ed", "ed-password", roles=("editor",), display_name="</script><b>Ed</b>"
    )
    client = client_for(app)
    log_in(client, "ed", "ed-password")
    response = client.get("/")
    page = response.text
    assert response.headers["cache-control"] == "no-store"  # it carries nonces
    found = SETTINGS.search(page)
    assert found is not None
    settings = orjson.loads(found.group(1))
    assert settings["root"] == f"{HOME}/svc-json/"
    token = client.cookies["svc_logged_in"].split("|")[2]
    assert app.auth.verify_nonce(settings["nonce"], "svc_rest", user.id, token) == 1
    assert '<strong id="current-user">&lt;/script&gt;&lt;b&gt;Ed&lt;/b&gt;</strong>' in page
    assert 'class="logout"' in page
    assert 'data-can-edit="true"' in page
    assert 'id="note-create"' in page
    assert f"<link rel='https://api.w.org/' href='{HOME}/svc-json/' />" in page


def test_readers_get_no_composer(client_for: ClientFor) -> None:
    app = make_app()
    app.users.create("sub", "sub-password", roles=("subscriber",))
    client = client_for(app)
    log_in(client, "sub", "sub-password")
    page = client.get("/").text
    assert '<strong id="current-user">sub</strong>' in page
    assert 'data-can-edit="false"' in page
    assert 'id="note-create"' not in page


def test_demo_assets_are_served(client_for: ClientFor) -> None:
    client = client_for(make_app())
    script = client.get("/static/demo.js")
    assert script.status_code == 200
    assert script.headers["content-type"] == "text/javascript; charset=UTF-8"
    assert 'from "./svc-rest.mjs"' in script.text
    assert "innerHTML" not in script.text  # note data is only ever set as text
    style = client.get("/static/demo.css")
    assert style.status_code == 200
    assert style.headers["content-type"].startswith("text/css")


#: Every URL-valued attribute of a page (href, src, action, data-root, data-login, …).
URL_ATTRIBUTE = re.compile(r'\b(href|src|action|data-root|data-login|data-nonce-url)="([^"]*)"')


def page_urls(page: str) -> list[tuple[str, str]]:
    """(attribute, value) of every URL attribute, without the discovery ``<link>`` tag (which
    keeps WordPress's absolute form, single-quoted)."""
    return URL_ATTRIBUTE.findall(page)


def test_the_page_works_under_another_host_name(client_for: ClientFor) -> None:
    # Opened as http://localhost:8000/ while the site's home names 127.0.0.1: an absolute
    # 127.0.0.1 URL would make the module script and the API cross-origin (blocked).
    app = make_app()
    app.users.create("ed", "ed-password", roles=("editor",))
    client = client_for(app, "http://localhost:8000")
    for logged_in in (False, True):
        if logged_in:
            log_in(client, "ed", "ed-password")
        page = client.get("/").text
        urls = page_urls(page)
        assert urls, page
        assert [(name, url) for name, url in urls if not url.startswith("/")] == []
        assert ("src", "/static/demo.js") in urls
        assert ("data-root", "/svc-json/") in urls
        assert ("data-nonce-url", "/auth/nonce") in urls
        assert ("data-login", "/login") in urls
    assert ("action", "/logout") in urls


def test_the_page_under_a_home_path(client_for: ClientFor) -> None:
    app = App("http://127.0.0.1:8000/blog", name="Blog")
    svcrest.demo.register(app)
    install_home_page(app)
    app.users.create("ed", "ed-password", roles=("editor",))
    client = client_for(app)
    log_in(client, "ed", "ed-password")
    urls = page_urls(client.get("/").text)
    for expected in [
        ("src", "/blog/static/demo.js"),
        ("href", "/blog/static/demo.css"),
        ("href", "/blog/static/site.css"),
        ("data-root", "/blog/svc-json/"),
        ("data-nonce-url", "/blog/auth/nonce"),
        ("data-login", "/blog/login"),
        ("action", "/blog/logout"),
        ("href", "/blog/docs"),
    ]:
        assert expected in urls


def test_the_script_reads_its_paths_from_the_page(client_for: ClientFor) -> None:
    script = client_for(make_app()).get("/static/demo.js").text
    constructed = re.search(r"this\.client = new RestClient\(\{(.*?)\}\);", script, re.DOTALL)
    assert constructed is not None
    options = constructed.group(1)
    assert "root: root.dataset.root" in options
    assert "nonceUrl: root.dataset.nonceUrl" in options
    assert "settings.root" not in script  # svcApiSettings.root names the home's host
