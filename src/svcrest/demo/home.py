"""The demo site's home page: a small notes UI on top of ``/static/svc-rest.mjs``.

``install_home_page(app)`` adds a ``svc_home_page`` filter. The page it renders keeps what the
core home page promises (the discovery ``<link>`` tag, and ``svcApiSettings = {root, nonce}``
for a logged-in user) and loads ``/static/site.css`` and the favicon (the look it shares
with the login page), ``/static/demo.css`` and ``/static/demo.js``; the script builds
the notes list, the paging and the forms in the browser. A logged-out visitor gets the list
read-only and a "Log in" link.

Every URL of the page is local to the site (a path: ``/static/demo.js``, ``data-root``
``/svc-json/``), so the page works under any host name the site answers; only the discovery
tags and ``svcApiSettings.root`` keep WordPress's absolute form, and the script does not use
that root.

SECURITY: every user-supplied value (user name, site name and description) is HTML-escaped
here; note data never reaches this page and is rendered by ``demo.js`` with ``textContent``.
The settings JSON escapes ``<``, ``>`` and ``&`` so that it cannot end its script element.
The page carries a nonce for a logged-in user, so it is never cacheable.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from svcrest.demo.notes import EDIT_CAPABILITY, NAMESPACE, REST_BASE
from svcrest.http.exchange import HttpRequest, HttpResponse
from svcrest.site.pages import api_settings_script, logout_form, site_head

if TYPE_CHECKING:
    from svcrest.app import App
    from svcrest.http.context import RequestContext

__all__ = ["HOME_PAGE_FILTER", "install_home_page", "render_home_page"]

#: The filter the core home page asks for a replacement page.
HOME_PAGE_FILTER = "svc_home_page"


def install_home_page(app: App) -> None:
    """Make the demo notes UI the home page of ``app`` (calling it twice adds it once)."""
    if app.hooks.has_filter(HOME_PAGE_FILTER, render_home_page) is False:
        app.hooks.add_filter(HOME_PAGE_FILTER, render_home_page)


def _local(app: App, url: str) -> str:
    """``url`` without the origin of the site's home (``/svc-json/``, ``/blog/login``), so that
    the page works under every host name the site answers (``localhost`` as well as
    ``127.0.0.1``): an absolute URL of another host would make the module script and its
    requests cross-origin, which the browser blocks, and send them without the cookie."""
    parts = urlsplit(app.home)
    origin = f"{parts.scheme}://{parts.netloc}"
    return url[len(origin) :] or "/" if url.startswith(origin) else url


def _head(app: App, ctx: RequestContext, root: str) -> str:
    static = html.escape(app.home_path + "/static/")
    head = app.rest_output_link_wp_head() + api_settings_script(app, ctx)
    head += site_head(app) + (
        f'<link rel="stylesheet" href="{static}demo.css">\n'
        f'<script type="module" src="{static}demo.js"></script>\n'
    )
    return head


def _account(app: App, ctx: RequestContext) -> str:
    if not ctx.user.is_logged_in:
        login = html.escape(app.home_path + "/login")
        return f'<a class="button" id="login-link" href="{login}">Log in</a>'
    name = html.escape(ctx.user.display_name or ctx.user.login)
    return (
        f'<span class="who">Logged in as <strong id="current-user">{name}</strong></span>'
        + logout_form(app, ctx)
    )


def _composer() -> str:
    return (
        '<section class="card composer" aria-labelledby="composer-title">\n'
        '<h2 id="composer-title">New note</h2>\n'
        '<form id="note-create" class="note-form" autocomplete="off">\n'
        '<label>Title <input name="title" required maxlength="255"></label>\n'
        '<label>Content <textarea name="content" rows="2"></textarea></label>\n'
        '<div class="actions"><button type="submit" class="primary">Add note</button></div>\n'
        "</form>\n</section>\n"
    )


def _body(app: App, ctx: RequestContext, root: str, can_edit: bool) -> str:
    description = (
        f'<p class="tagline">{html.escape(app.description)}</p>' if app.description else ""
    )
    intro = (
        ""
        if ctx.user.is_logged_in
        else '<p class="notice">Anyone can read these notes. Log in to write.</p>\n'
    )
    notes_root = html.escape(_local(app, root))
    return (
        '<header class="topbar">\n'
        f'<div class="brand"><h1>{html.escape(app.name)}</h1>{description}</div>\n'
        f'<div class="account">{_account(app, ctx)}</div>\n'
        "</header>\n"
        f'<main id="notes-app" data-root="{notes_root}" data-route="{NAMESPACE}/{REST_BASE}" '
        f'data-login="{html.escape(app.home_path + "/login")}" '
        f'data-nonce-url="{html.escape(app.home_path + "/auth/nonce")}" '
        f'data-can-edit="{"true" if can_edit else "false"}">\n'
        f"{intro}{_composer() if can_edit else ''}"
        '<section class="notes" aria-labelledby="notes-title">\n'
        '<div class="list-head"><h2 id="notes-title">Notes</h2>'
        '<span id="notes-total" class="muted"></span></div>\n'
        '<p id="notes-message" class="message" role="status" aria-live="polite"></p>\n'
        '<ol id="notes-list" class="note-list" aria-busy="true"></ol>\n'
        '<p id="notes-empty" class="empty" hidden>No notes yet.</p>\n'
        '<nav class="pager" aria-label="Pages">\n'
        '<button type="button" id="page-prev" disabled>&larr; Previous</button>\n'
        '<span id="page-info" class="muted"></span>\n'
        '<button type="button" id="page-next" disabled>Next &rarr;</button>\n'
        "</nav>\n</section>\n"
        "<noscript><p>This page needs JavaScript.</p></noscript>\n"
        "</main>\n"
        f'<footer class="footer">The REST API lives at <a href="{notes_root}">'
        f"<code>{notes_root}</code></a>; read its "
        f'<a id="api-docs-link" href="{html.escape(app.home_path)}/docs">API documentation</a>.'
        "</footer>"
    )


def render_home_page(
    page: HttpResponse | None, app: App, ctx: RequestContext, http: HttpRequest | None = None
) -> HttpResponse | None:
    """The ``svc_home_page`` filter: the demo page, unless an earlier filter made one."""
    if page is not None:
        return page
    root = app.get_rest_url()
    can_edit = ctx.user.can(EDIT_CAPABILITY)
    document = (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(app.name)}</title>\n{_head(app, ctx, root)}</head>\n"
        f"<body>\n{_body(app, ctx, root, can_edit)}\n</body>\n</html>\n"
    )
    return HttpResponse(
        200,
        [
            ("Content-Type", "text/html; charset=UTF-8"),
            ("X-Content-Type-Options", "nosniff"),
            ("Cache-Control", "no-store"),
            ("Referrer-Policy", "same-origin"),
        ],
        document.encode(),
    )
