"""``App(wordpress_compat=True)``: clients written for WordPress work unchanged (X-WP-Nonce,
X-WP-Total/X-WP-TotalPages, the admin-ajax nonce refresh), on both adapters."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from svcrest import App
from svcrest.demo import register
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
HOME = "http://127.0.0.1:8000"
NOTES = "/svc-json/demo/v1/notes"
NOW = 1_700_000_000.0


def make_site(compat: bool) -> App:
    app = App(HOME, secret_key="compat-secret", clock=lambda: NOW, wordpress_compat=compat)
    register(app)
    app.users.create("ed", "ed-password-1", roles=("editor",))
    return app


def log_in(client: SiteClient) -> str:
    """Log ``ed`` in; the ``svc_rest`` nonce of the session."""
    assert client.post("/login", data={"log": "ed", "pwd": "ed-password-1"}).status_code == 303
    return str(client.get("/auth/nonce").json()["nonce"])


@pytest.mark.parametrize("compat", [True, False])
def test_x_wp_nonce_is_read_only_in_compat_mode(client_for: ClientFor, compat: bool) -> None:
    client = client_for(make_site(compat))
    nonce = log_in(client)
    created = client.post(NOTES, json={"title": "via X-WP-Nonce"}, headers={"X-WP-Nonce": nonce})
    if compat:
        assert created.status_code == 201
        assert created.json()["title"] == "via X-WP-Nonce"
        assert created.headers["x-svc-nonce"] == nonce
    else:  # the cookie alone is anonymous
        assert created.status_code == 401
        assert created.json()["code"] == "rest_cannot_create"


def test_a_bad_x_wp_nonce_is_refused(client_for: ClientFor) -> None:
    client = client_for(make_site(True))
    log_in(client)
    refused = client.get(NOTES, headers={"X-WP-Nonce": "0123456789abcdef0123456789abcdef"})
    assert refused.status_code == 403
    assert refused.json()["code"] == "rest_cookie_invalid_nonce"


@pytest.mark.parametrize("compat", [True, False])
def test_wordpress_paging_headers_beside_ours(client_for: ClientFor, compat: bool) -> None:
    client = client_for(make_site(compat))
    nonce = log_in(client)
    for title in ("one", "two", "three"):
        client.post(NOTES, json={"title": title}, headers={"X-SVC-Nonce": nonce})
    page = client.get(NOTES + "?per_page=2", headers={"Origin": "http://example.com"})
    assert page.status_code == 200
    assert (page.headers["x-svc-total"], page.headers["x-svc-totalpages"]) == ("3", "2")
    expose = page.headers["access-control-expose-headers"]
    allow_headers = page.headers["access-control-allow-headers"]
    if compat:
        assert (page.headers["x-wp-total"], page.headers["x-wp-totalpages"]) == ("3", "2")
        assert (
            expose == "X-SVC-Total, X-SVC-TotalPages, Link, ETag, RateLimit, RateLimit-Policy,"
            " Retry-After, Idempotent-Replayed, X-Request-Id, X-WP-Total, X-WP-TotalPages"
        )
        assert allow_headers == (
            "Authorization, X-SVC-Nonce, Content-Disposition, Content-MD5, Content-Type,"
            " If-Match, If-None-Match, Idempotency-Key, X-WP-Nonce"
        )
    else:
        assert "x-wp-total" not in page.headers
        assert (
            expose == "X-SVC-Total, X-SVC-TotalPages, Link, ETag, RateLimit, RateLimit-Policy,"
            " Retry-After, Idempotent-Replayed, X-Request-Id"
        )


def test_admin_ajax_answers_the_rest_nonce_as_text(client_for: ClientFor) -> None:
    app = make_site(True)
    client = client_for(app)
    anonymous = client.get("/wp-admin/admin-ajax.php?action=rest-nonce")
    assert anonymous.status_code == 200
    assert anonymous.headers["content-type"] == "text/plain; charset=UTF-8"
    assert anonymous.headers["cache-control"] == "no-store"
    assert app.auth.verify_nonce(anonymous.text, "svc_rest", 0, "") == 1
    nonce = log_in(client)
    refreshed = client.get("/wp-admin/admin-ajax.php?action=rest-nonce")
    assert (refreshed.status_code, refreshed.text) == (200, nonce)


def test_admin_ajax_refuses_other_origins_and_actions(client_for: ClientFor) -> None:
    client = client_for(make_site(True))
    log_in(client)
    other = client.get(
        "/wp-admin/admin-ajax.php?action=rest-nonce", headers={"Origin": "https://evil.example"}
    )
    assert (other.status_code, other.text) == (403, "-1")
    assert "access-control-allow-origin" not in other.headers
    unknown = client.get("/wp-admin/admin-ajax.php?action=heartbeat")
    assert (unknown.status_code, unknown.text) == (400, "0")


def test_admin_ajax_exists_only_in_compat_mode(client_for: ClientFor) -> None:
    client = client_for(make_site(False))
    assert client.get("/wp-admin/admin-ajax.php?action=rest-nonce").status_code == 404
