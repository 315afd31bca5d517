"""WordPress client compatibility for site pages: the nonce refresh endpoint.

``@wordpress/api-fetch`` refreshes a stale nonce by fetching
``{home}/wp-admin/admin-ajax.php?action=rest-nonce`` and reading the answer as text. With the
site's ``wordpress_compat`` on, that address answers the current user's REST nonce as
``text/plain`` (same-origin requests only, never cached); another ``action`` answers 400 with
the body ``0``, as WordPress's ``admin-ajax.php`` does for an unknown action.
"""

from __future__ import annotations

from svcrest.auth.rest_cookie import NONCE_ACTION
from svcrest.http.context import RequestContext
from svcrest.http.exchange import HttpRequest, HttpResponse
from svcrest.http.forms import parse_form
from svcrest.site.auth_pages import is_cross_origin
from svcrest.site.host import Page, SiteHost
from svcrest.site.pages import site_request_user

__all__ = ["ADMIN_AJAX_PATH", "install_wordpress_compat_pages"]

ADMIN_AJAX_PATH = "/wp-admin/admin-ajax.php"
_TEXT_HEADERS = (
    ("Content-Type", "text/plain; charset=UTF-8"),
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
)


async def _admin_ajax(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
    if parse_form(http.query_string).get("action") != "rest-nonce":
        return HttpResponse(400, list(_TEXT_HEADERS), b"0")
    if is_cross_origin(app, http):
        # SECURITY: a nonce must never reach another origin.
        return HttpResponse(403, list(_TEXT_HEADERS), b"-1")
    await site_request_user(app, http, ctx)
    nonce = app.auth.create_nonce(NONCE_ACTION, ctx.user.id, ctx.session_token)
    return HttpResponse(200, list(_TEXT_HEADERS), nonce.encode("ascii"))


def install_wordpress_compat_pages(app: SiteHost) -> None:
    """Register ``/wp-admin/admin-ajax.php`` (``action=rest-nonce``) on ``app``."""
    app.pages[ADMIN_AJAX_PATH] = Page(_admin_ajax, ("GET", "POST"))
