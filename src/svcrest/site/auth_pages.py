"""The site's auth pages: ``/login``, ``/logout`` and ``/auth/nonce``.

``POST /login`` takes the form (``application/x-www-form-urlencoded``: ``log``, ``pwd``,
``rememberme``, ``redirect_to``; answered with a 303 redirect) or the same fields as a JSON
object (``application/json``; answered ``200 {"user": {...}}`` without a redirect, for
scripts and single-page apps); any other body type is a 415 naming the two.

SECURITY: a login posted from another origin is refused (403, no cookie), whatever its body
type; the redirect after login stays on this site; a login ends the session the browser
already had (session rotation); every login answer is ``no-store``; ``/logout`` needs a
``log-out`` nonce bound to the session (a JSON ``POST /logout``, a script's, the REST nonce
in ``X-SVC-Nonce``), and ``/auth/nonce`` answers only same-origin requests
and never sends CORS headers. The username kept in the form after a failed login is escaped.
"""

from __future__ import annotations

import asyncio
import html
from typing import Any
from urllib.parse import urlsplit

import orjson

from svcrest.auth.app_passwords import too_many_attempts
from svcrest.auth.rest_cookie import NONCE_ACTION, NONCE_HEADER
from svcrest.auth.service import IssuedCookie
from svcrest.http.context import RequestContext
from svcrest.http.errors import RestError
from svcrest.http.exchange import HttpRequest, HttpResponse
from svcrest.http.forms import parse_form
from svcrest.http.jsonbody import decode_json_body, is_json_content_type
from svcrest.http.user import User
from svcrest.site.host import Page, SiteHost
from svcrest.site.pages import LOGOUT_ACTION, html_page, site_request_user

__all__ = [
    "LOGGED_OUT_NOTICE",
    "first_value",
    "install_auth_pages",
    "is_cross_origin",
    "redirect",
    "safe_redirect",
]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_LOGIN_FAILED = "Unknown username or incorrect password."
#: What ``POST /login`` reads (answered in ``Accept-Post`` with a 415 for anything else).
_LOGIN_MEDIA_TYPES = "application/x-www-form-urlencoded, application/json"
_JSON_HEADERS = (
    ("Content-Type", "application/json; charset=UTF-8"),
    ("X-Content-Type-Options", "nosniff"),
    ("Cache-Control", "no-store"),
)
#: The notice of ``/login?loggedout=true`` (where ``/logout`` sends the browser).
LOGGED_OUT_NOTICE = "You are now logged out."


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


def redirect(location: str, cookie: str | None = None) -> HttpResponse:
    """A 303 to ``location`` that no cache keeps, setting ``cookie`` when given."""
    headers = [("Location", location), ("Cache-Control", "no-store")]
    if cookie is not None:
        headers.append(("Set-Cookie", cookie))
    return HttpResponse(303, headers, b"")


def _login_form(
    app: SiteHost,
    *,
    error: str = "",
    notice: str = "",
    login: str = "",
    redirect_to: str = "",
    status: int = 200,
) -> HttpResponse:
    """The login page. ``login`` (kept after a failed attempt) and every message are escaped;
    the username field has the focus, or the password field once a username is kept."""
    home = html.escape(app.home + "/")
    name = html.escape(app.name)
    message = ""
    if notice:
        message += f'<p class="notice" role="status">{html.escape(notice)}</p>\n'
    if error:
        message += f'<p class="error" role="alert">{html.escape(error)}</p>\n'
    focus_login, focus_password = ("", " autofocus") if login else (" autofocus", "")
    body = (
        '<main class="auth">\n'
        f'<p class="brand"><a href="{home}">{name}</a></p>\n'
        '<section class="card">\n'
        f"<h1>Log in to {name}</h1>\n{message}"
        '<form method="post" action="login">\n'
        '<label>Username <input name="log" autocomplete="username" autocapitalize="none"'
        f' spellcheck="false" required value="{html.escape(login)}"{focus_login}></label>\n'
        '<label>Password <input name="pwd" type="password" autocomplete="current-password"'
        f" required{focus_password}></label>\n"
        '<label class="check"><input name="rememberme" type="checkbox" value="forever">'
        " Remember me</label>\n"
        f'<input type="hidden" name="redirect_to" value="{html.escape(redirect_to)}">\n'
        '<button type="submit" class="primary">Log in</button>\n'
        "</form>\n</section>\n"
        f'<p class="back"><a href="{home}">&larr; Back to {name}</a></p>\n'
        "</main>"
    )
    response = html_page(app, "Log in", body, status=status)
    response.headers.append(("Cache-Control", "no-store"))
    return response


def first_value(form: dict[str, object], name: str) -> str:
    """The form field ``name`` as text ("" when absent or not text)."""
    value = form.get(name)
    return value if isinstance(value, str) else ""


async def _login_get(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
    query = parse_form(http.query_string)
    notice = LOGGED_OUT_NOTICE if first_value(query, "loggedout") == "true" else ""
    return _login_form(app, notice=notice, redirect_to=first_value(query, "redirect_to"))


def _json_answer(status: int, value: object, cookie: str | None = None) -> HttpResponse:
    headers = list(_JSON_HEADERS)
    if cookie is not None:
        headers.append(("Set-Cookie", cookie))
    return HttpResponse(status, headers, orjson.dumps(value))


def _json_error(status: int, code: str, message: str) -> HttpResponse:
    return _json_answer(status, {"code": code, "message": message, "data": {"status": status}})


def _user_json(user: User) -> dict[str, Any]:
    return {
        "id": user.id,
        "login": user.login,
        "display_name": user.display_name or user.login,
        "roles": list(user.roles),
    }


def _secure(app: SiteHost, http: HttpRequest) -> bool:
    """Whether the auth cookie is ``Secure``: the request came over https (or was forwarded
    as https by a trusted proxy), or the site's home is an https address (behind a TLS proxy
    whose forwarded headers the server does not read, the browser still speaks https)."""
    return http.scheme == "https" or app.home.startswith("https://")


async def _check_login(
    app: SiteHost, http: HttpRequest, login: str, password: str
) -> tuple[User | None, int | None]:
    """``(the user, None)`` when ``password`` is ``login``'s, ``(None, None)`` when not, or
    ``(None, seconds to wait)`` when the throttle refuses the attempt.

    SECURITY: the attempt is counted before the password is checked, so parallel guesses
    stop at the limit exactly; a right password uncounts it. Every path not refused runs one
    scrypt verification (an empty login too), so timing tells nothing about logins.
    """
    reservation = app.throttle.reserve(login, http.client)
    if reservation.retry_after is not None:
        return None, reservation.retry_after
    # PERF: scrypt takes ~50 ms; keep it off the event loop.
    user = await asyncio.to_thread(app.users.authenticate, login, password)
    if user is not None:
        app.throttle.succeeded(reservation)
    return user, None


async def _start_session(
    app: SiteHost, http: HttpRequest, ctx: RequestContext, user: User, remember: bool
) -> IssuedCookie:
    """Start a session for ``user`` and sign its cookie. Session rotation: a session this
    browser already had ends first."""
    await site_request_user(app, http, ctx)
    if ctx.user.is_logged_in and ctx.session_token:
        app.auth.log_out(ctx.user.id, ctx.session_token)
    return app.auth.log_in(
        user,
        remember=remember,
        ip=http.client,
        user_agent=http.headers.get("user-agent") or "",
        secure=_secure(app, http),
    )


#: The 429 of a throttled login, as Basic authentication answers it.
_THROTTLED = too_many_attempts()


async def _login_form_post(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
    form = parse_form(http.body)
    login, password = first_value(form, "log"), first_value(form, "pwd")
    redirect_to = first_value(form, "redirect_to")
    remember = bool(first_value(form, "rememberme"))
    user, wait = await _check_login(app, http, login, password)
    if wait is not None:
        page = _login_form(
            app,
            error=_THROTTLED.message,
            login=login,
            redirect_to=redirect_to,
            status=_THROTTLED.status,
        )
        page.headers.append(("Retry-After", str(wait)))
        return page
    if user is None:
        return _login_form(
            app, error=_LOGIN_FAILED, login=login, redirect_to=redirect_to, status=403
        )
    issued = await _start_session(app, http, ctx, user, remember)
    return redirect(safe_redirect(app, redirect_to), issued.set_cookie_header())


_JSON_FIELDS = 'Send a JSON object {"log": "…", "pwd": "…"} ("rememberme": true is optional).'


async def _login_json_post(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
    """The JSON login: ``{"log": ..., "pwd": ..., "rememberme": true}`` (``rememberme``
    optional: a boolean) answered ``{"user": {...}}``, or an error in the REST shape."""
    try:
        fields = decode_json_body(http.body)
    except RestError:
        fields = None
    if not isinstance(fields, dict):
        return _json_error(400, "svc_login_invalid_body", _JSON_FIELDS)
    login, password = fields.get("log"), fields.get("pwd")
    remember = fields.get("rememberme", False)
    if not isinstance(login, str) or not isinstance(password, str) or type(remember) is not bool:
        return _json_error(400, "svc_login_invalid_body", _JSON_FIELDS)
    user, wait = await _check_login(app, http, login, password)
    if wait is not None:
        answer = _json_error(_THROTTLED.status, _THROTTLED.code, _THROTTLED.message)
        answer.headers.append(("Retry-After", str(wait)))
        return answer
    if user is None:
        return _json_error(403, "svc_login_failed", _LOGIN_FAILED)
    issued = await _start_session(app, http, ctx, user, remember)
    return _json_answer(200, {"user": _user_json(issued.user)}, issued.set_cookie_header())


async def _login_post(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
    content_type = http.headers.get("content-type") or ""
    as_json = is_json_content_type(content_type)
    if is_cross_origin(app, http):
        if as_json:
            return _json_error(403, "svc_login_cross_origin", "Cross-origin login refused.")
        return html_page(app, "Forbidden", "<h1>Cross-origin login refused</h1>", status=403)
    if as_json:
        return await _login_json_post(app, http, ctx)
    media = content_type.split(";", 1)[0].strip().lower()
    if media in ("", "application/x-www-form-urlencoded"):
        return await _login_form_post(app, http, ctx)
    response = _json_error(
        415,
        "svc_login_unsupported_media_type",
        f"POST /login reads {_LOGIN_MEDIA_TYPES} bodies, not {media}.",
    )
    response.headers.append(("Accept-Post", _LOGIN_MEDIA_TYPES))
    return response


async def _login(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
    if http.method == "POST":
        return await _login_post(app, http, ctx)
    return await _login_get(app, http, ctx)


async def _logout_json(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
    """The JSON log-out of scripts (``svcrest.client.RestProxy.logout``): the session's REST
    nonce in ``X-SVC-Nonce`` (the one ``/auth/nonce`` gives), answered ``200 {"logged_out":
    true}`` with the cookie cleared; ``false`` when there was no session. SECURITY: the same
    proof as a REST write (a nonce only this site's own pages can read), and never from
    another origin."""
    if is_cross_origin(app, http):
        return _json_error(403, "svc_logout_cross_origin", "Cross-origin log-out refused.")
    await site_request_user(app, http, ctx)
    clear = app.auth.clear_cookie_header(_secure(app, http))
    if not ctx.user.is_logged_in:
        return _json_answer(200, {"logged_out": False}, clear)
    nonce = http.headers.get(NONCE_HEADER.lower()) or ""
    if not app.auth.verify_nonce(nonce, NONCE_ACTION, ctx.user.id, ctx.session_token):
        return _json_error(403, "rest_cookie_invalid_nonce", "Cookie nonce is invalid")
    app.auth.log_out(ctx.user.id, ctx.session_token)
    return _json_answer(200, {"logged_out": True}, clear)


async def _logout(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
    if is_json_content_type(http.headers.get("content-type") or ""):
        return await _logout_json(app, http, ctx)
    await site_request_user(app, http, ctx)
    nonce = first_value(parse_form(http.body), "_wpnonce") or first_value(
        parse_form(http.query_string), "_wpnonce"
    )
    if not ctx.user.is_logged_in:
        return redirect(
            app.home + "/login?loggedout=true", app.auth.clear_cookie_header(_secure(app, http))
        )
    if not app.auth.verify_nonce(nonce, LOGOUT_ACTION, ctx.user.id, ctx.session_token):
        return html_page(
            app, "Forbidden", "<h1>The log-out link has expired. Please try again.</h1>", status=403
        )
    app.auth.log_out(ctx.user.id, ctx.session_token)
    return redirect(
        app.home + "/login?loggedout=true", app.auth.clear_cookie_header(_secure(app, http))
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
