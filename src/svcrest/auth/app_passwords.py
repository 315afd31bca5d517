"""Basic authentication with application passwords (WordPress 5.6 semantics; see
docs/guides/authentication.md).

- ``determine_current_user`` (after the cookie): a REST request with ``Authorization: Basic
  base64(login:application password)`` is that user; no nonce is needed, since the cookie
  check lets a user set by another scheme pass. Wrong credentials leave the request anonymous
  and keep the error (WordPress's ``$wp_rest_application_password_status``) on the context.
- ``rest_authentication_errors`` (priority 90, before the cookie check): that error as a 401,
  or True for a request the application password authenticated.

Application passwords work over https (the request's, or the site's home when it is https) or
from this machine to a loopback host; elsewhere a request offering one answers 401
``application_passwords_disabled``. Attempts are throttled with the login form's counts
(:class:`svcrest.auth.throttle.LoginThrottle`), checked and counted before the password is.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from svcrest.auth.throttle import LoginThrottle
from svcrest.auth.users import UserStore
from svcrest.http.context import RequestContext, current_context
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.scope import AppPasswordScope
from svcrest.http.user import User
from svcrest.rest.auth_schemes import AuthScheme, AuthSchemes

__all__ = [
    "ApplicationPasswordAuth",
    "application_passwords_available",
    "basic_credentials",
    "install_application_password_auth",
    "is_loopback_address",
    "is_loopback_host",
    "password_key",
    "too_many_attempts",
]


def basic_credentials(header: str | None) -> tuple[str, str] | None:
    """``(login, password)`` of an ``Authorization: Basic`` header, None for no header, another
    scheme, or one that does not decode (as PHP leaves ``PHP_AUTH_USER`` unset)."""
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    login, colon, password = decoded.partition(":")
    if not colon:
        return None
    return login, password


def is_loopback_host(host: str) -> bool:
    """Whether a ``Host`` value (with or without a port) names this machine's loopback."""
    host = host.strip().lower()
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else host[1:]
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    host = host.rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback_address(address: str) -> bool:
    """Whether a peer address (as the server reports it) is this machine's loopback:
    ``127.0.0.0/8``, ``::1`` or an IPv4-mapped ``::ffff:127.x.x.x``."""
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_loopback
    return ip.is_loopback


def _https_home(home: str) -> bool:
    return urlsplit(home).scheme.lower() == "https" if home else False


def application_passwords_available(ctx: RequestContext, home: str = "") -> bool:
    """Whether application passwords are accepted on this request: it came over https; or
    the site's ``home`` is https (TLS ends at a proxy whose headers are not trusted); or it
    came from this machine (a loopback peer address) to a loopback host, as in development.

    SECURITY: the ``Host`` header alone decides nothing: any client can send
    ``Host: localhost``. The peer address is the connection's, or the forwarded one only when
    the server trusts proxy headers; a loopback peer that named another host may be a proxy
    on this machine relaying outside traffic, so it needs a loopback ``Host`` too.
    """
    if ctx.secure or _https_home(home):
        return True
    return is_loopback_address(ctx.client) and is_loopback_host(ctx.host)


def too_many_attempts() -> RestError:
    """The 429 of a throttled login attempt (sent with a ``Retry-After`` header)."""
    return RestError(
        "svc_too_many_login_attempts",
        "Too many failed login attempts. Try again later.",
        {"status": 429},
    )


class ApplicationPasswordAuth:
    """The application password scheme of one site; ``users`` returns its :class:`UserStore`,
    ``throttle`` its :class:`LoginThrottle` (None: not throttled), ``home`` its home address
    (None: only the request decides where application passwords work)."""

    def __init__(
        self,
        users: Callable[[], UserStore],
        throttle: Callable[[], LoginThrottle] | None = None,
        home: Callable[[], str] | None = None,
    ) -> None:
        self._users = users
        self._throttle = throttle
        self._home = home

    def basic_user(self, user: User, request: Request) -> User:
        """``determine_current_user`` (WordPress's ``wp_validate_application_password``)."""
        if user is not None and user.is_logged_in:
            return user
        credentials = basic_credentials(request.headers.get_joined("authorization"))
        ctx = current_context()
        if credentials is None or ctx is None or not ctx.is_rest:
            return user
        home = self._home() if self._home is not None else ""
        if not application_passwords_available(ctx, home):
            ctx.auth_error = RestError(
                "application_passwords_disabled",
                "Application passwords are not available.",
                {"status": 401},
            )
            return user
        login, password = credentials
        users = self._users()

        def check() -> tuple[User, str, AppPasswordScope | None] | None:
            return users.verify_application_password(login, password, ctx.client)

        wait = None
        if self._throttle is None:
            found = check()
        else:
            # SECURITY: counted and checked under one lock, so parallel guesses stop at the
            # limit exactly.
            found, wait = self._throttle().attempt(login, ctx.client, check)
        if wait is not None:
            ctx.auth_error = too_many_attempts()
            ctx.add_pending_header("Retry-After", str(wait))
            return user
        if found is None:
            ctx.auth_error = RestError(
                "incorrect_password",
                "The provided password is an invalid application password.",
                {"status": 401},
            )
            return user
        ctx.auth_error = True
        # The password's identity, fixed now: rate limits and idempotency keys count by it.
        ctx.app_password_uuid = found[1]
        # Dispatch refuses a route outside a scoped password's namespaces (or, read-only,
        # a method that writes): see svcrest.http.scope.
        ctx.app_password_scope = found[2]
        return found[0]

    def check_errors(self, result: Any, request: Request) -> Any:
        """``rest_authentication_errors`` at priority 90 (WordPress's
        ``rest_application_password_check_errors``): an earlier verdict stands; then the
        scheme's error, or True for a request it authenticated."""
        if result is not None and result is not False and result != "":
            return result
        ctx = current_context()
        if ctx is None or ctx.auth_error is None:
            return result
        return ctx.auth_error


def password_key(request: Request) -> str | None:
    """The rate-limit key of the application password that authenticated the HTTP request
    being served (``p`` and its uuid, as WordPress's ``rest_get_authenticated_app_password``
    names it), None for any other request: never the bytes of the header, so each spelling
    of one password is one key."""
    ctx = current_context()
    uuid = ctx.app_password_uuid if ctx is not None else ""
    return "p" + uuid if uuid else None


def install_application_password_auth(
    schemes: AuthSchemes,
    users: Callable[[], UserStore],
    throttle: Callable[[], LoginThrottle] | None = None,
    home: Callable[[], str] | None = None,
    *,
    authorize_url: Callable[[], str] | None = None,
) -> ApplicationPasswordAuth:
    """Add Basic authentication with application passwords to a site's schemes (attempts
    counted by ``throttle`` when given; ``home``: see :class:`ApplicationPasswordAuth`;
    ``authorize_url``: the page where a user approves an application, named in the root
    index as WordPress does)."""
    scheme = ApplicationPasswordAuth(users, throttle, home)

    def index() -> dict[str, Any]:
        return {"endpoints": {"authorization": authorize_url()}} if authorize_url else {}

    schemes.add(
        AuthScheme(
            name="application-passwords",
            headers=("Authorization",),
            openapi={
                "basicAuth": {
                    "type": "http",
                    "scheme": "basic",
                    "description": "A login and one of its application passwords.",
                }
            },
            requirements=({"basicAuth": []},),
            index=index if authorize_url is not None else None,
            callbacks=(
                ("determine_current_user", scheme.basic_user, 20),
                ("rest_authentication_errors", scheme.check_errors, 90),
            ),
            rate_key=password_key,
        )
    )
    return scheme
