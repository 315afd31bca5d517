"""The REST cookie check, as WordPress's: who the cookie says the user is, and the nonce.

- ``determine_current_user`` reads the ``svc_logged_in`` cookie (only when one is sent);
- ``rest_cookie_collect_status`` keeps the cookie status (WordPress's
  ``$wp_rest_auth_cookie``) on the request context;
- ``rest_cookie_check_errors`` (``rest_authentication_errors``, priority 100) decides as
  WordPress's function of that name: without a nonce the request is anonymous; an invalid
  nonce is a 403 before any handler runs; a valid one earns a fresh nonce in ``X-SVC-Nonce``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from svcrest.auth.cookies import COOKIE_NAME, parse_cookie_header
from svcrest.auth.service import AuthService
from svcrest.hooks import Hooks
from svcrest.http.context import current_context
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.user import ANONYMOUS, User
from svcrest.rest.plan import inert_without_credentials

__all__ = [
    "COOKIE_ACTIONS",
    "NONCE_ACTION",
    "CookieAuth",
    "install_cookie_auth",
    "nonce_from_request",
    "rest_cookie_collect_status",
]

#: The nonce action of REST requests (WordPress's ``wp_rest``).
NONCE_ACTION = "svc_rest"
COOKIE_ACTIONS = (
    "auth_cookie_malformed",
    "auth_cookie_expired",
    "auth_cookie_bad_username",
    "auth_cookie_bad_hash",
    "auth_cookie_bad_session_token",
    "auth_cookie_valid",
)


def rest_cookie_collect_status(action: str) -> None:
    """The cookie status, as WordPress's ``rest_cookie_collect_status`` keeps it: True for
    ``auth_cookie_valid``, else the action name without its first 12 characters; kept on the
    current request's context."""
    ctx = current_context()
    if ctx is not None:
        ctx.cookie_status = True if action == "auth_cookie_valid" else action[12:]


def nonce_from_request(request: Request, wordpress_compat: bool = False) -> Any:
    """The nonce a request carries: ``_wpnonce`` (query or form body) first, then
    ``X-SVC-Nonce`` (with ``wordpress_compat``, then WordPress's ``X-WP-Nonce``, which
    clients written for WordPress send); None when none is sent."""
    # PERF: no body and no query string (most reads) means no bucket to parse.
    if request.raw_body or request.has_query_string():
        for bucket in (request.query_params, request.body_params):
            if "_wpnonce" in bucket:
                return bucket["_wpnonce"]
    nonce = request.headers.get_joined("x-svc-nonce")
    if nonce is None and wordpress_compat:
        nonce = request.headers.get_joined("x-wp-nonce")
    return nonce


class CookieAuth:
    """Cookie authentication and the REST cookie check of one site.

    ``auth`` returns the site's :class:`AuthService` (called on use: the service opens the
    store lazily); with ``wordpress_compat`` the nonce may come as ``X-WP-Nonce``.
    """

    def __init__(self, auth: Callable[[], AuthService], wordpress_compat: bool = False) -> None:
        self._auth = auth
        self._wordpress_compat = wordpress_compat

    @inert_without_credentials
    def cookie_user(self, user: User, request: Request) -> User:
        """``determine_current_user``: the user of a valid ``svc_logged_in`` cookie."""
        header = request.headers.get_joined("cookie")
        # PERF: nothing is parsed, and the store is not touched, without our cookie.
        if not header or COOKIE_NAME not in header:
            return user
        value = parse_cookie_header(header).get(COOKIE_NAME)
        if not value:
            return user
        found = self._auth().validate_cookie(value)
        if found is None:
            return user
        ctx = current_context()
        if ctx is not None:
            ctx.session_token = found[1]
        return found[0]

    @inert_without_credentials
    def check_errors(self, result: Any, request: Request) -> Any:
        """``rest_authentication_errors`` at priority 100, deciding as WordPress's
        ``rest_cookie_check_errors``: an earlier verdict stands (row 1); a user authenticated
        some other way needs no nonce (row 2); no nonce means anonymous (row 3); a bad nonce
        is a 403 (row 4); a good one is answered with a fresh nonce (row 5)."""
        if result is not None and result is not False and result != "":  # row 1
            return result
        ctx = current_context()
        if ctx is None:
            return result
        if ctx.cookie_status is not True and ctx.user.is_logged_in:  # row 2
            return result
        nonce = nonce_from_request(request, self._wordpress_compat)
        if nonce is None:  # row 3
            ctx.user = ANONYMOUS
            return True
        auth = self._auth()
        token = ctx.session_token
        verdict = (
            auth.verify_nonce(nonce, NONCE_ACTION, ctx.user.id, token)
            if isinstance(nonce, str)
            else False
        )
        if not verdict:  # row 4
            return RestError(
                "rest_cookie_invalid_nonce", "Cookie nonce is invalid", {"status": 403}
            )
        # Row 5. PERF: a nonce of the current tick is exactly the fresh one; no second HMAC.
        fresh = nonce if verdict == 1 else auth.create_nonce(NONCE_ACTION, ctx.user.id, token)
        ctx.add_pending_header("X-SVC-Nonce", fresh)
        return True


def _status_collector(action: str) -> Callable[..., None]:
    def collect(*args: Any) -> None:
        rest_cookie_collect_status(action)

    return collect


def install_cookie_auth(
    hooks: Hooks, auth: Callable[[], AuthService], *, wordpress_compat: bool = False
) -> None:
    """Attach cookie authentication and the REST cookie check to ``hooks``."""
    cookie_auth = CookieAuth(auth, wordpress_compat)
    hooks.add_filter("determine_current_user", cookie_auth.cookie_user)
    for action in COOKIE_ACTIONS:
        hooks.add_action(action, _status_collector(action))
    hooks.add_filter("rest_authentication_errors", cookie_auth.check_errors, 100)
