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
    assert f'<a class="button" id="login-link" href="{HOME}/login">Log in</a>' in page
    assert 'data-can-edit="false"' in page
    assert 'id="note-create"' not in page
    assert "<h1>Notes &amp; &lt;Co&gt;</h1>" in page
    assert "A &quot;demo&quot;" in page
    assert f'<script type="module" src="{HOME}/static/demo.js"></script>' in page
    assert f'<link rel="stylesheet" href="{HOME}/static/demo.css">' in page
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
