"""Basic authentication with application passwords (DESIGN §10, WordPress 5.6 semantics).

- ``determine_current_user`` (after the cookie): a REST request with ``Authorization: Basic
  base64(login:application password)`` is that user; no nonce is needed, since the cookie
  check lets a user set by another scheme pass. Wrong credentials leave the request anonymous
  and keep the error (WordPress's ``$wp_rest_application_password_status``) on the context.
- ``rest_authentication_errors`` (priority 90, before the cookie check): that error as a 401,
  or True for a request the application password authenticated.

Application passwords work over https or to a loopback host; elsewhere a request offering one
answers 401 ``application_passwords_disabled``.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
from collections.abc import Callable
from typing import Any

from svcrest.auth.throttle import LoginThrottle
from svcrest.auth.users import UserStore
from svcrest.hooks import Hooks
from svcrest.http.context import RequestContext, current_context
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.user import User
from svcrest.rest.plan import inert_without_credentials

__all__ = [
    "ApplicationPasswordAuth",
    "application_passwords_available",
    "basic_credentials",
    "install_application_password_auth",
    "is_loopback_host",
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


def application_passwords_available(ctx: RequestContext) -> bool:
    """Application passwords are accepted over https or on a loopback host."""
    return ctx.secure or is_loopback_host(ctx.host)


def too_many_attempts() -> RestError:
    """The 429 of a throttled login attempt (sent with a ``Retry-After`` header)."""
    return RestError(
        "svc_too_many_login_attempts",
        "Too many failed login attempts. Try again later.",
        {"status": 429},
    )


class ApplicationPasswordAuth:
    """The application password scheme of one site; ``users`` returns its :class:`UserStore`."""

    def __init__(
        self, users: Callable[[], UserStore], throttle: Callable[[], LoginThrottle] | None = None
    ) -> None:
        self._users = users
        self._throttle = throttle

    @inert_without_credentials
    def basic_user(self, user: User, request: Request) -> User:
        """``determine_current_user`` (WordPress's ``wp_validate_application_password``)."""
        if user is not None and user.is_logged_in:
            return user
        credentials = basic_credentials(request.headers.get_joined("authorization"))
        ctx = current_context()
        if credentials is None or ctx is None or not ctx.is_rest:
            return user
        if not application_passwords_available(ctx):
            ctx.auth_error = RestError(
                "application_passwords_disabled",
                "Application passwords are not available.",
                {"status": 401},
            )
            return user
        login, password = credentials
        throttle = self._throttle() if self._throttle is not None else None
        if throttle is not None:
            wait = throttle.retry_after(login, ctx.client)
            if wait is not None:
                ctx.auth_error = too_many_attempts()
                ctx.add_pending_header("Retry-After", str(wait))
                return user
        found = self._users().authenticate_application_password(login, password, ctx.client)
        if found is None:
            if throttle is not None:
                throttle.record_failure(login, ctx.client)
            ctx.auth_error = RestError(
                "incorrect_password",
                "The provided password is an invalid application password.",
                {"status": 401},
            )
            return user
        ctx.auth_error = True
        return found

    @inert_without_credentials
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


def install_application_password_auth(
    hooks: Hooks,
    users: Callable[[], UserStore],
    throttle: Callable[[], LoginThrottle] | None = None,
) -> None:
    """Attach Basic authentication with application passwords to ``hooks`` (attempts counted
    by ``throttle`` when given)."""
    scheme = ApplicationPasswordAuth(users, throttle)
    hooks.add_filter("determine_current_user", scheme.basic_user, 20)
    hooks.add_filter("rest_authentication_errors", scheme.check_errors, 90)
