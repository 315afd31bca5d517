"""The site pages served outside the REST prefix when no ``site`` app is given.

Every non-REST response carries the discovery ``Link`` header (node-wpapi discovers with
``HEAD {home}/``); HEAD is answered like GET without a body; an unknown path gets a short HTML
404 page, never the REST JSON error.
"""

from __future__ import annotations

import html
import mimetypes
from collections.abc import Awaitable, Callable
from importlib import resources

import orjson

from svcrest.auth.rest_cookie import NONCE_ACTION
from svcrest.http.context import RequestContext
from svcrest.http.exchange import HttpRequest, HttpResponse
from svcrest.http.request import Request
from svcrest.rest.discovery import rsd_document
from svcrest.rest.pipeline import resolve_current_user
from svcrest.site.host import Page, PageHandler, SiteHost

__all__ = [
    "LOGOUT_ACTION",
    "api_settings_script",
    "html_page",
    "install_core_pages",
    "logout_form",
    "script_json",
    "serve_page",
    "site_request_user",
]

HTML_TYPE = "text/html; charset=UTF-8"
#: The nonce action of ``/logout``.
LOGOUT_ACTION = "log-out"


_INLINE_STYLE = (
    "<style>body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:3rem auto;"
    "padding:0 1rem;color:#1d2327}a{color:#2271b1}code{background:#f0f0f1;padding:0 .3em}"
    "</style>\n"
)


def html_page(
    title: str, body: str, *, head: str = "", status: int = 200, stylesheet: str | None = None
) -> HttpResponse:
    """A small HTML page (``title`` is escaped, ``body``/``head`` are not). Its look is a
    small inline style, or the ``stylesheet`` URL given (escaped here), such as the site's
    ``/static/site.css``."""
    style = (
        _INLINE_STYLE
        if stylesheet is None
        else f'<link rel="stylesheet" href="{html.escape(stylesheet)}">\n'
    )
    document = (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n{head}{style}</head>\n<body>\n"
        f"{body}\n</body>\n</html>\n"
    )
    return HttpResponse(
        status,
        [("Content-Type", HTML_TYPE), ("X-Content-Type-Options", "nosniff")],
        document.encode(),
    )


async def site_request_user(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> Request:
    """Build a Request for a site page and resolve its user (auth cookie) into ``ctx``."""
    request = Request.from_http(http.method, http.path, http.query_string, http.headers, http.body)
    await resolve_current_user(app.rest_get_server().plan(), request, ctx)
    return request


def script_json(value: object) -> str:
    """JSON safe inside a ``<script>`` element.

    SECURITY: orjson escapes nothing HTML-special, so ``<``, ``>`` and ``&`` are escaped by
    hand to keep the value inside its script element.
    """
    return (
        orjson.dumps(value)
        .decode()
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
    )


def api_settings_script(app: SiteHost, ctx: RequestContext) -> str:
    """``var svcApiSettings = {root, nonce}`` for a logged-in user ("" otherwise)."""
    if not ctx.user.is_logged_in:
        return ""
    settings = {
        "root": app.get_rest_url(),
        "nonce": app.auth.create_nonce(NONCE_ACTION, ctx.user.id, ctx.session_token),
    }
    return f"<script>var svcApiSettings = {script_json(settings)};</script>\n"


def logout_form(app: SiteHost, ctx: RequestContext) -> str:
    """A small log-out form carrying the ``log-out`` nonce of the current session."""
    nonce = app.auth.create_nonce(LOGOUT_ACTION, ctx.user.id, ctx.session_token)
    return (
        f'<form method="post" action="{html.escape(app.home)}/logout" class="logout">'
        f'<input type="hidden" name="_wpnonce" value="{html.escape(nonce)}">'
        '<button type="submit">Log out</button></form>'
    )


async def _home(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
    await site_request_user(app, http, ctx)
    page = app.hooks.apply_filters("svc_home_page", None, app, ctx, http)
    if page is not None:
        return page  # type: ignore[no-any-return]
    root = app.get_rest_url()
    head = app.rest_output_link_wp_head() + api_settings_script(app, ctx)
    if ctx.user.is_logged_in:
        who = f"Logged in as <strong>{html.escape(ctx.user.login)}</strong>. " + logout_form(
            app, ctx
        )
    else:
        who = '<a href="login">Log in</a> to write.'
    body = (
        f"<h1>{html.escape(app.name)}</h1>\n"
        f"<p>{html.escape(app.description)}</p>\n"
        f'<p>The REST API lives at <a href="{html.escape(root)}"><code>'
        f"{html.escape(root)}</code></a>; read its "
        '<a href="docs" id="api-docs-link">API documentation</a> '
        '(<a href="openapi.json">OpenAPI</a>).</p>\n'
        f"<p>{who}</p>"
    )
    response = html_page(app.name, body, head=head)
    if ctx.user.is_logged_in:
        # SECURITY: the page carries nonces; no cache may keep it.
        response.headers.append(("Cache-Control", "no-store"))
    return response


async def _rsd(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
    return HttpResponse(
        200, [("Content-Type", "application/rsd+xml; charset=UTF-8")], rsd_document(app).encode()
    )


def _static_page(name: str, data: bytes) -> PageHandler:
    content_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
    if name.endswith((".mjs", ".js")):
        content_type = "text/javascript; charset=UTF-8"
    elif content_type.startswith("text/"):
        content_type += "; charset=UTF-8"

    async def serve(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
        return HttpResponse(
            200,
            [
                ("Content-Type", content_type),
                ("X-Content-Type-Options", "nosniff"),
                ("Cache-Control", "no-cache"),
            ],
            data,
        )

    return serve


def install_core_pages(app: SiteHost) -> None:
    """Register the home page, ``/rsd.xml`` and the files of ``svcrest/static``."""
    app.pages["/"] = Page(_home)
    app.pages["/rsd.xml"] = Page(_rsd)
    static = resources.files("svcrest") / "static"
    if static.is_dir():
        for entry in static.iterdir():
            if entry.is_file() and not entry.name.startswith("."):
                app.pages["/static/" + entry.name] = Page(
                    _static_page(entry.name, entry.read_bytes())
                )


def _not_found() -> HttpResponse:
    return html_page(
        "Not found", "<h1>Not found</h1>\n<p>There is nothing at this address.</p>", status=404
    )


def _method_not_allowed(methods: tuple[str, ...]) -> HttpResponse:
    response = html_page("Method not allowed", "<h1>Method not allowed</h1>", status=405)
    allowed = list(methods) + (["HEAD"] if "GET" in methods else [])
    response.headers.append(("Allow", ", ".join(allowed)))
    return response


def _too_large() -> HttpResponse:
    return html_page("Request too large", "<h1>Request too large</h1>", status=413)


async def serve_page(
    app: SiteHost,
    http: HttpRequest,
    ctx: RequestContext,
    read_body: Callable[[], Awaitable[bytes | None]] | None,
) -> HttpResponse:
    """Serve a non-REST request from the site's pages (``ctx`` is its context)."""
    home_path = app.home_path
    path = http.path
    if home_path and (path == home_path or path.startswith(home_path + "/")):
        path = path[len(home_path) :] or "/"
    page = app.pages.get(path)
    if page is None:
        return _not_found()
    body = b"" if read_body is None else await read_body()
    if body is None:
        return _too_large()
    http.body = body
    method = "GET" if http.method == "HEAD" else http.method
    if method not in page.methods:
        return _method_not_allowed(page.methods)
    return await page.handler(app, http, ctx)
