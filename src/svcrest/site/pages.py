"""The site pages served outside the REST prefix when no ``site`` app is given.

Every non-REST response carries the discovery ``Link`` header (node-wpapi discovers with
``HEAD {home}/``); HEAD is answered like GET without a body; an unknown path gets a short HTML
404 page, never the REST JSON error. Every HTML page has the site's look (``/static/site.css``
and ``/static/favicon.svg``) and refuses to be framed (``X-Frame-Options: DENY`` and
``Content-Security-Policy: frame-ancestors 'none'``); the answers of a ``site`` app are its own.
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
    "FAVICON_PATH",
    "FRAME_ANCESTORS",
    "FRAME_OPTIONS",
    "LOGOUT_ACTION",
    "STYLESHEET_PATH",
    "api_settings_script",
    "forbid_framing",
    "html_page",
    "install_core_pages",
    "logout_form",
    "script_json",
    "serve_page",
    "site_head",
    "site_request_user",
]

HTML_TYPE = "text/html; charset=UTF-8"
#: The nonce action of ``/logout``.
LOGOUT_ACTION = "log-out"
#: The site's stylesheet and icon, under the home (files of ``svcrest/static``).
STYLESHEET_PATH = "/static/site.css"
FAVICON_PATH = "/static/favicon.svg"
#: What every HTML page of the site sends so that no other page can frame it.
FRAME_OPTIONS = "DENY"
FRAME_ANCESTORS = "frame-ancestors 'none'"
_HTML_TYPES = ("text/html", "application/xhtml+xml")


def site_head(app: SiteHost) -> str:
    """The ``<link>`` tags of the site's look: ``/static/site.css`` and the favicon (paths of
    the site, so a page opened under another of its host names loads them from there)."""
    static = html.escape(app.home_path)
    return (
        f'<link rel="icon" type="image/svg+xml" href="{static}{FAVICON_PATH}">\n'
        f'<link rel="stylesheet" href="{static}{STYLESHEET_PATH}">\n'
    )


def html_page(
    app: SiteHost, title: str, body: str, *, head: str = "", status: int = 200
) -> HttpResponse:
    """A small HTML page of ``app`` in the site's look (:func:`site_head`); ``title`` is
    escaped, ``body`` and ``head`` are not."""
    document = (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n{head}{site_head(app)}</head>\n<body>\n"
        f"{body}\n</body>\n</html>\n"
    )
    return HttpResponse(
        status,
        [("Content-Type", HTML_TYPE), ("X-Content-Type-Options", "nosniff")],
        document.encode(),
    )


def _is_html(headers: list[tuple[str, str]]) -> bool:
    for name, value in headers:
        if name.lower() == "content-type":
            return value.split(";", 1)[0].strip().lower() in _HTML_TYPES
    return False


def _names_frame_ancestors(policy: str) -> bool:
    return any(
        directive.strip().split(None, 1)[:1] == ["frame-ancestors"]
        for directive in policy.lower().split(";")
    )


def forbid_framing(response: HttpResponse) -> HttpResponse:
    """Make an HTML answer unframeable: ``X-Frame-Options: DENY`` and the CSP directive
    ``frame-ancestors 'none'`` (merged into the page's own ``Content-Security-Policy`` when
    it sends one, so that the page keeps one policy). A page whose policy names
    ``frame-ancestors`` itself chose who may frame it, and is left as it is; a page that
    sends its own ``X-Frame-Options`` keeps it. Other answers (JSON, files, redirects) are
    left alone.

    SECURITY: a framed ``/authorize-application`` page let a same-site page get a click on
    "Yes, I approve" (clickjacking); every site page refuses to be framed.
    """
    headers = response.headers
    if not _is_html(headers):
        return response
    policies = [
        index
        for index, (name, _) in enumerate(headers)
        if name.lower() == "content-security-policy"
    ]
    if any(_names_frame_ancestors(headers[index][1]) for index in policies):
        return response
    if not any(name.lower() == "x-frame-options" for name, _ in headers):
        headers.append(("X-Frame-Options", FRAME_OPTIONS))
    if policies:
        if policies[0] < len(response.wire_prefix):  # that line was encoded already
            response.wire_prefix = ()
        name, policy = headers[policies[0]]
        policy = policy.strip().rstrip(";").strip()
        headers[policies[0]] = (name, f"{policy}; {FRAME_ANCESTORS}" if policy else FRAME_ANCESTORS)
    else:
        headers.append(("Content-Security-Policy", FRAME_ANCESTORS))
    return response


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
    """A small log-out form carrying the ``log-out`` nonce of the current session; it posts to
    the site's path, so it works under any host name the site answers."""
    nonce = app.auth.create_nonce(LOGOUT_ACTION, ctx.user.id, ctx.session_token)
    return (
        f'<form method="post" action="{html.escape(app.home_path)}/logout" class="logout">'
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
    response = html_page(app, app.name, body, head=head)
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
    if name.endswith(".svg"):  # the system's MIME table may lack it
        content_type = "image/svg+xml"
    elif name.endswith((".mjs", ".js")):
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


def _not_found(app: SiteHost) -> HttpResponse:
    home = html.escape(app.home + "/")
    return html_page(
        app,
        "Not found",
        '<main class="auth">\n<section class="card">\n<h1>Not found</h1>\n'
        "<p>There is nothing at this address.</p>\n</section>\n"
        f'<p class="back"><a href="{home}">&larr; Back to {html.escape(app.name)}</a></p>\n'
        "</main>",
        status=404,
    )


def _method_not_allowed(app: SiteHost, page: Page) -> HttpResponse:
    methods = page.methods
    if page.refuse is not None:
        response = page.refuse(405, "Method Not Allowed")
    else:
        response = html_page(app, "Method not allowed", "<h1>Method not allowed</h1>", status=405)
    allowed = list(methods) + (["HEAD"] if "GET" in methods else [])
    response.headers.append(("Allow", ", ".join(allowed)))
    return response


def _too_large(app: SiteHost, page: Page) -> HttpResponse:
    if page.refuse is not None:
        return page.refuse(413, "Request Too Large")
    return html_page(app, "Request too large", "<h1>Request too large</h1>", status=413)


async def serve_page(
    app: SiteHost,
    http: HttpRequest,
    ctx: RequestContext,
    read_body: Callable[[], Awaitable[bytes | None]] | None,
) -> HttpResponse:
    """Serve a non-REST request from the site's pages (``ctx`` is its context); every
    HTML answer refuses to be framed (:func:`forbid_framing`)."""
    home_path = app.home_path
    path = http.path
    if home_path and (path == home_path or path.startswith(home_path + "/")):
        path = path[len(home_path) :] or "/"
    page = app.pages.get(path)
    if page is None:
        return forbid_framing(_not_found(app))
    body = b"" if read_body is None else await read_body()
    if body is None:
        return forbid_framing(_too_large(app, page))
    http.body = body
    method = "GET" if http.method == "HEAD" else http.method
    if method not in page.methods:
        return forbid_framing(_method_not_allowed(app, page))
    response = await page.handler(app, http, ctx)
    # PERF: a page that never answers HTML is not read for it (an MCP ping 3,300
    # instructions less, bench/mcp_call.py --instructions).
    return forbid_framing(response) if page.html else response
