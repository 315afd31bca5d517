"""``/authorize-application?app_name=&success_url=`` (WordPress 5.6's
``authorize-application.php``): a logged-in user approves a third-party app, which gets an
application password.

GET shows the request (or sends an anonymous visitor to ``/login`` and back). POST
(``approve`` or ``reject``, with an ``authorize_application`` nonce bound to the session, from
this origin only) creates the password and redirects to ``success_url`` with ``site_url``,
``user_login`` and ``password``, or shows the password when there is no ``success_url``; a
rejection redirects with ``success=false``. ``success_url`` must be https or on a loopback
host (WordPress's ``invalid_redirect_scheme``).

An app may ask for a scoped password: ``scope`` (REST namespaces, separated by commas or
spaces, or repeated as ``scope[]``) and ``read_only=1``; the page shows the user what the
password will be limited to before approval, and the password is created with that scope.
"""

from __future__ import annotations

import html
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

from svcrest.auth.app_passwords import is_loopback_host
from svcrest.auth.users import (
    MAX_APP_NAME_LENGTH,
    ApplicationPasswordLimitError,
    clean_app_name,
)
from svcrest.http.context import RequestContext
from svcrest.http.exchange import HttpRequest, HttpResponse
from svcrest.http.forms import parse_form
from svcrest.http.scope import clean_scope
from svcrest.site.auth_pages import first_value, is_cross_origin, redirect
from svcrest.site.host import Page, SiteHost
from svcrest.site.pages import html_page, site_request_user

__all__ = [
    "AUTHORIZE_ACTION",
    "AUTHORIZE_PATH",
    "install_authorize_application_page",
    "valid_success_url",
]

#: The nonce action of the approval form.
AUTHORIZE_ACTION = "authorize_application"
#: The page's path under the home (WordPress's ``authorize-application.php``).
AUTHORIZE_PATH = "/authorize-application"


def valid_success_url(url: str) -> bool:
    """Whether ``url`` may receive a password: an absolute https URL, or http to a loopback
    host (WordPress's ``wp_is_authorize_application_redirect_url_valid``: no ``http`` to
    other hosts, no ``javascript:``)."""
    if any(ord(char) < 0x20 for char in url) or "\\" in url:
        return False
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - a bad port raises ValueError
    except ValueError:
        return False
    if not host:
        return False
    scheme = parts.scheme.lower()
    return scheme == "https" or (scheme == "http" and is_loopback_host(host))


def _with_query(url: str, params: dict[str, str]) -> str:
    parts = urlsplit(url)
    query = parts.query + ("&" if parts.query else "") + urlencode(params)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


def _error(app: SiteHost, message: str, status: int = 400) -> HttpResponse:
    return html_page(
        app,
        "Cannot authorize application",
        _card(
            app,
            "<h1>Cannot authorize application</h1>\n"
            f'<p class="error" role="alert">{html.escape(message)}</p>',
        ),
        status=status,
    )


def _card(app: SiteHost, inner: str) -> str:
    """The page's one card, the site's name above it linking home (as on the login page)."""
    return (
        f'<main class="auth">\n<p class="brand"><a href="{html.escape(app.home + "/")}">'
        f'{html.escape(app.name)}</a></p>\n<section class="card">\n{inner}\n</section>\n</main>'
    )


def _check(app: SiteHost, app_name: str, success_url: str) -> HttpResponse | None:
    try:
        clean_app_name(app_name)  # the rule the password's creation applies
    except ValueError as exc:
        if not app_name.strip() or len(app_name.strip()) > MAX_APP_NAME_LENGTH:
            return _error(app, "An application name is required to authorize an application.")
        return _error(app, str(exc))
    if success_url and not valid_success_url(success_url):
        return _error(app, "The success URL must be served over a secure connection.")
    return None


_TRUE = frozenset({"1", "true", "yes", "on"})


def _requested_scope(form: dict[str, object]) -> tuple[tuple[str, ...] | None, bool] | str:
    """The ``scope`` and ``read_only`` an app asks for, or the message of a bad scope."""
    raw = form.get("scope")
    items: list[object] | None
    if raw is None or raw == "":
        items = None
    elif isinstance(raw, str):
        items = list(raw.replace(",", " ").split())
    elif isinstance(raw, list):
        items = list(raw)
    else:
        items = [raw]
    try:
        namespaces = clean_scope(items)
    except ValueError as exc:
        return str(exc)
    return namespaces, first_value(form, "read_only").strip().lower() in _TRUE


def _scope_notice(namespaces: tuple[str, ...] | None, read_only: bool) -> str:
    """What the page tells the user a scoped password will be limited to."""
    lines = []
    if namespaces is not None:
        listed = ", ".join(f"<code>{html.escape(ns)}</code>" for ns in namespaces)
        lines.append(f'<p class="scope">It may be used only for: {listed}.</p>\n')
    if read_only:
        lines.append('<p class="scope">It may only read, never change anything.</p>\n')
    return "".join(lines)


def _scope_fields(namespaces: tuple[str, ...] | None, read_only: bool) -> str:
    fields = ""
    if namespaces is not None:
        value = html.escape(",".join(namespaces))
        fields += f'<input type="hidden" name="scope" value="{value}">\n'
    if read_only:
        fields += '<input type="hidden" name="read_only" value="1">\n'
    return fields


async def _authorize(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
    if http.method == "POST":
        return await _authorize_post(app, http, ctx)
    await site_request_user(app, http, ctx)
    query = parse_form(http.query_string)
    app_name, success_url = first_value(query, "app_name"), first_value(query, "success_url")
    if not ctx.user.is_logged_in:
        back = AUTHORIZE_PATH + ("?" + http.query_string if http.query_string else "")
        return redirect(app.home + "/login?redirect_to=" + quote(back, safe=""))
    problem = _check(app, app_name, success_url)
    if problem is not None:
        return problem
    scope = _requested_scope(query)
    if isinstance(scope, str):
        return _error(app, scope)
    nonce = app.auth.create_nonce(AUTHORIZE_ACTION, ctx.user.id, ctx.session_token)
    name = html.escape(app_name)
    target = html.escape(success_url) if success_url else ""
    where = (
        f"<p>You will be sent to <code>{target}</code> with the new password.</p>\n"
        if success_url
        else "<p>The new password will be shown here, once.</p>\n"
    )
    body = _card(
        app,
        "<h1>Authorize application</h1>\n"
        f"<p>Would you like to give <strong>{name}</strong> access to your account"
        f" <strong>{html.escape(ctx.user.login)}</strong>?</p>\n{_scope_notice(*scope)}{where}"
        '<form method="post" action="authorize-application">\n'
        f'<input type="hidden" name="app_name" value="{name}">\n'
        f'<input type="hidden" name="success_url" value="{target}">\n'
        f"{_scope_fields(*scope)}"
        f'<input type="hidden" name="_wpnonce" value="{html.escape(nonce)}">\n'
        '<button type="submit" name="approve" value="1" class="primary">'
        "Yes, I approve of this connection</button>\n"
        '<button type="submit" name="reject" value="1">No, I do not approve of this'
        " connection</button>\n"
        "</form>",
    )
    page = html_page(app, "Authorize application", body)
    page.headers.append(("Cache-Control", "no-store"))
    return page


async def _authorize_post(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
    if is_cross_origin(app, http):
        return _error(app, "Cross-origin request refused.", 403)
    await site_request_user(app, http, ctx)
    form = parse_form(http.body)
    app_name, success_url = first_value(form, "app_name"), first_value(form, "success_url")
    if not ctx.user.is_logged_in:
        return _error(app, "You must be logged in to authorize an application.", 401)
    nonce = first_value(form, "_wpnonce")
    if not app.auth.verify_nonce(nonce, AUTHORIZE_ACTION, ctx.user.id, ctx.session_token):
        return _error(app, "The link you followed has expired. Please try again.", 403)
    problem = _check(app, app_name, success_url)
    if problem is not None:
        return problem
    scope = _requested_scope(form)
    if isinstance(scope, str):
        return _error(app, scope)
    if first_value(form, "reject"):
        if success_url:
            return redirect(_with_query(success_url, {"success": "false"}))
        return html_page(
            app,
            "Authorize application",
            _card(app, "<h1>Connection rejected</h1>"),
        )
    try:
        namespaces, read_only = scope
        password, _item = app.users.create_application_password(
            ctx.user.id, app_name.strip(), scope=namespaces, read_only=read_only
        )
    except ApplicationPasswordLimitError as exc:
        return _error(app, str(exc), 409)
    if success_url:
        params = {"site_url": app.home, "user_login": ctx.user.login, "password": password}
        return redirect(_with_query(success_url, params))
    page = html_page(
        app,
        "Authorize application",
        _card(
            app,
            "<h1>Your new password</h1>\n"
            f"<p>Your new password for <strong>{html.escape(app_name)}</strong> is:</p>\n"
            f'<p><kbd class="new-application-password">{html.escape(password)}</kbd></p>\n'
            "<p>Be sure to save this in a safe location. You will not be able to retrieve it.</p>",
        ),
    )
    page.headers.append(("Cache-Control", "no-store"))
    return page


def install_authorize_application_page(app: SiteHost) -> None:
    """Register ``/authorize-application`` on ``app``."""
    app.pages[AUTHORIZE_PATH] = Page(_authorize, ("GET", "POST"))
