"""The site's auth pages: ``/login``, ``/logout`` and ``/auth/nonce``.

SECURITY: a login form posted from another origin is refused (403, no cookie), the redirect
after login stays on this site, ``/logout`` needs a ``log-out`` nonce bound to the session,
and ``/auth/nonce`` answers only same-origin requests and never sends CORS headers.
"""

from __future__ import annotations

import asyncio
import html
from urllib.parse import urlsplit

import orjson

from svcrest.auth.rest_cookie import NONCE_ACTION
from svcrest.http.context import RequestContext
from svcrest.http.exchange import HttpRequest, HttpResponse
from svcrest.http.forms import parse_form
from svcrest.site.host import Page, SiteHost
from svcrest.site.pages import LOGOUT_ACTION, html_page, site_request_user

__all__ = ["install_auth_pages", "is_cross_origin", "safe_redirect"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin_of(url: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[scheme]


def is_cross_origin(app: SiteHost, http: HttpRequest) -> bool:
    """Whether a browser sent this request from another origin than the site's home.

    ``Origin`` decides when present (``null`` is another origin); otherwise
    ``Sec-Fetch-Site`` other than ``same-origin``/``none`` does. Requests with neither (non-
    browser clients) are not cross-origin.
    """
    origin = http.headers.get("origin")
    if origin is not None:
        return _origin_of(origin.strip()) != _origin_of(app.home)
    fetch_site = http.headers.get("sec-fetch-site")
    return fetch_site is not None and fetch_site.strip().lower() not in ("same-origin", "none")


def safe_redirect(app: SiteHost, target: str | None) -> str:
    """``target`` when it stays on this site, else the home page. SECURITY: refuses other
    hosts, scheme-relative (``//evil``) and backslash tricks (``/\\evil``)."""
    home = app.home + "/"
    if not target or any(ord(char) < 0x20 for char in target) or "\\" in target:
        return home
    if target.startswith("/") and not target.startswith("//"):
        return _origin_url(app) + target
    if _origin_of(target) is not None and _origin_of(target) == _origin_of(app.home):
        return target
    return home


def _origin_url(app: SiteHost) -> str:
    parts = urlsplit(app.home)
    return f"{parts.scheme}://{parts.netloc}"


def _redirect(location: str, cookie: str | None = None) -> HttpResponse:
    headers = [("Location", location), ("Cache-Control", "no-store")]
    if cookie is not None:
        headers.append(("Set-Cookie", cookie))
    return HttpResponse(303, headers, b"")


def _login_form(
    app: SiteHost, *, error: str = "", redirect_to: str = "", status: int = 200
) -> HttpResponse:
    message = f'<p role="alert" class="error">{html.escape(error)}</p>\n' if error else ""
    body = (
        f"<h1>Log in to {html.escape(app.name)}</h1>\n{message}"
        '<form method="post" action="login">\n'
        '<p><label>Username<br><input name="log" autocomplete="username" required></label></p>\n'
        '<p><label>Password<br><input name="pwd" type="password" '
        'autocomplete="current-password" required></label></p>\n'
        '<p><label><input name="rememberme" type="checkbox" value="forever"> Remember me'
        "</label></p>\n"
        f'<input type="hidden" name="redirect_to" value="{html.escape(redirect_to)}">\n'
        '<p><button type="submit">Log in</button></p>\n</form>'
    )
    response = html_page("Log in", body, status=status)
    response.headers.append(("Cache-Control", "no-store"))
    return response


def _first(form: dict[str, object], name: str) -> str:
    value = form.get(name)
    return value if isinstance(value, str) else ""


async def _login_get(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
    redirect_to = _first(parse_form(http.query_string), "redirect_to")
    return _login_form(app, redirect_to=redirect_to)


async def _login_post(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
    if is_cross_origin(app, http):
        return html_page("Forbidden", "<h1>Cross-origin login refused</h1>", status=403)
    form = parse_form(http.body)
    login, password = _first(form, "log"), _first(form, "pwd")
    redirect_to = _first(form, "redirect_to")
    # PERF: scrypt takes ~50 ms; keep it off the event loop.
    user = await asyncio.to_thread(app.users.authenticate, login, password) if login else None
    if user is None:
        return _login_form(
            app,
            error="Unknown username or incorrect password.",
            redirect_to=redirect_to,
            status=403,
        )
    # Session rotation: a session this browser already had is ended before a new one starts.
    await site_request_user(app, http, ctx)
    if ctx.user.is_logged_in and ctx.session_token:
        app.auth.log_out(ctx.user.id, ctx.session_token)
    issued = app.auth.log_in(
        user,
        remember=bool(_first(form, "rememberme")),
        ip=http.client,
        user_agent=http.headers.get("user-agent") or "",
        secure=http.scheme == "https",
    )
    return _redirect(safe_redirect(app, redirect_to), issued.set_cookie_header())


async def _login(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
    if http.method == "POST":
        return await _login_post(app, http, ctx)
    return await _login_get(app, http, ctx)


async def _logout(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
    await site_request_user(app, http, ctx)
    nonce = _first(parse_form(http.body), "_wpnonce") or _first(
        parse_form(http.query_string), "_wpnonce"
    )
    if not ctx.user.is_logged_in:
        return _redirect(
            app.home + "/login?loggedout=true", app.auth.clear_cookie_header(http.scheme == "https")
        )
    if not app.auth.verify_nonce(nonce, LOGOUT_ACTION, ctx.user.id, ctx.session_token):
        return html_page(
            "Forbidden", "<h1>The log-out link has expired. Please try again.</h1>", status=403
        )
    app.auth.log_out(ctx.user.id, ctx.session_token)
    return _redirect(
        app.home + "/login?loggedout=true", app.auth.clear_cookie_header(http.scheme == "https")
    )


async def _nonce(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
    headers = [
        ("Content-Type", "application/json; charset=UTF-8"),
        ("Cache-Control", "no-store"),
        ("X-Content-Type-Options", "nosniff"),
    ]
    if is_cross_origin(app, http):
        body = {
            "code": "rest_forbidden_origin",
            "message": "Cross-origin request refused.",
            "data": {"status": 403},
        }
        return HttpResponse(403, headers, orjson.dumps(body))
    await site_request_user(app, http, ctx)
    nonce = app.auth.create_nonce(NONCE_ACTION, ctx.user.id, ctx.session_token)
    return HttpResponse(200, headers, orjson.dumps({"nonce": nonce}))


def install_auth_pages(app: SiteHost) -> None:
    """Register ``/login``, ``/logout`` and ``/auth/nonce`` on ``app``."""
    app.pages["/login"] = Page(_login, ("GET", "POST"))
    app.pages["/logout"] = Page(_logout, ("POST",))
    app.pages["/auth/nonce"] = Page(_nonce, ("GET",))
