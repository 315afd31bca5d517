"""The REST cookie check, as WordPress's: who the cookie says the user is, and the nonce.

- ``determine_current_user`` reads the ``svc_logged_in`` cookie (only when one is sent);
- the cookie actions keep the cookie status on the request context (as WordPress's
  ``rest_cookie_collect_status`` keeps ``$wp_rest_auth_cookie``);
- ``rest_cookie_check_errors`` (``rest_authentication_errors``, priority 100) decides as
  WordPress's function of that name: without a nonce the request is anonymous; an invalid
  nonce is a 403 before any handler runs; a valid one earns a fresh nonce in ``X-SVC-Nonce``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from svcrest.auth.cookies import COOKIE_NAME, parse_cookie_header
from svcrest.auth.service import AuthService
from svcrest.auth.verified_cookies import VerifiedCookie
from svcrest.bounded import BoundedDict
from svcrest.hooks import Hooks
from svcrest.http.context import RequestContext, current_context
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.user import ANONYMOUS, User
from svcrest.rest.auth_schemes import AuthScheme, AuthSchemes, adopt_user

__all__ = [
    "COOKIE_ACTIONS",
    "MAX_REMEMBERED_HEADER",
    "MAX_REMEMBERED_HEADERS",
    "NONCE_ACTION",
    "NONCE_HEADER",
    "NONCE_QUERY",
    "CookieAuth",
    "install_cookie_auth",
    "nonce_from_request",
]

#: The nonce action of REST requests (WordPress's ``wp_rest``).
NONCE_ACTION = "svc_rest"
#: The header of the nonce, and WordPress's one (read in compatibility mode).
NONCE_HEADER = "X-SVC-Nonce"
WP_NONCE_HEADER = "X-WP-Nonce"
#: The query (or form) field of the nonce.
NONCE_QUERY = "_wpnonce"
COOKIE_ACTIONS = (
    "auth_cookie_malformed",
    "auth_cookie_expired",
    "auth_cookie_bad_username",
    "auth_cookie_bad_hash",
    "auth_cookie_bad_session_token",
    "auth_cookie_valid",
)
#: Most ``Cookie`` headers whose auth cookie value :class:`CookieAuth` remembers.
MAX_REMEMBERED_HEADERS = 1024
#: Longest ``Cookie`` header (characters) it remembers: with the bound in entries, at most
#: ~2.5 MB.
MAX_REMEMBERED_HEADER = 1024


def nonce_from_request(request: Request, wordpress_compat: bool = False) -> Any:
    """The nonce a request carries: ``_wpnonce`` (form body, then query string) first, then
    ``X-SVC-Nonce`` (with ``wordpress_compat``, then WordPress's ``X-WP-Nonce``, which
    clients written for WordPress send); None when none is sent. A form body's field wins
    over the query string's, as in WordPress's ``$_REQUEST`` (the GET fields merged under
    the POST ones)."""
    # PERF: no body and no query string (most reads) means no bucket to parse; a request
    # without a body parses none.
    if request.raw_body or request.may_have_query:
        if request.raw_body:
            body = request.body_params
            if "_wpnonce" in body:
                return body["_wpnonce"]
        query = request.query_params
        if "_wpnonce" in query:
            return query["_wpnonce"]
    nonce = request.headers.get_joined("x-svc-nonce")
    if nonce is None and wordpress_compat:
        nonce = request.headers.get_joined("x-wp-nonce")
    return nonce


def _remembered(service: AuthService, value: str) -> VerifiedCookie | None:
    """What the memo of valid cookies holds for ``value`` (a cookie found valid since the
    store last changed: ``validate_cookie``'s memo hit, without its action), or None.
    SECURITY: an entry counts only at the memo's own change mark (any write to the store
    empties it) and until it expires."""
    memo = service.verified_cookies
    # PERF: the service's change mark and clock are callables it holds: read, then called
    # (a method call on them is a generic look-up each time; ~300 instructions a request).
    # A function of the module, not a static method: a static method read through ``self``
    # is not a method CPython 3.11 specialises.
    change_mark = service.change_mark
    if memo is None or change_mark() != memo.mark:
        return None
    known = memo.entries.get(value)
    clock = service.clock
    if known is None or clock() > known.valid_until:
        return None
    return known


class CookieAuth:
    """Cookie authentication and the REST cookie check of one site.

    ``auth`` returns the site's :class:`AuthService` (called on first use: the service opens
    the store lazily); with ``wordpress_compat`` the nonce may come as ``X-WP-Nonce``;
    ``max_headers``: the most ``Cookie`` headers whose auth cookie value is remembered.
    """

    def __init__(
        self,
        auth: Callable[[], AuthService],
        wordpress_compat: bool = False,
        *,
        max_headers: int = MAX_REMEMBERED_HEADERS,
    ) -> None:
        self._auth = auth
        self._wordpress_compat = wordpress_compat
        # PERF: ``Cookie`` header → its auth cookie's value (``parse_cookie_header``'s answer,
        # which costs ~6,000 instructions, against one dict look-up). A pure function's
        # answer: the value is still checked (``validate_cookie``) on every request, so a
        # logout applies as before. SECURITY: only a header whose cookie was just found valid
        # is kept, so an anonymous client cannot add entries; a logged-in one (who can vary
        # the header's other cookies) is held to MAX_REMEMBERED_HEADERS headers of at most
        # MAX_REMEMBERED_HEADER characters, the oldest going first. Written without a lock:
        # a lost race empties it (svcrest.bounded).
        self._headers: BoundedDict[str, str] = BoundedDict(max_headers)
        self._header_values = self._headers.entries  # PERF: read directly
        #: The service ``auth`` returned the first time it was needed (None until then).
        self._service: AuthService | None = None
        #: The ``auth_cookie_valid`` callback keeping the cookie status (registered by
        #: :func:`install_cookie_auth`).
        self.on_valid: Callable[..., None] = _status_collector("auth_cookie_valid")
        # The hooks' version at which ``_quiet`` was worked out (-1: not yet), and whether
        # ``auth_cookie_valid`` then had no callback but ``on_valid``.
        self._checked = -1
        self._quiet = False

    def service(self) -> AuthService:
        """The site's :class:`AuthService`, asked of ``auth`` once (PERF: a property and a
        lambda less on every authenticated request)."""
        service = self._service
        if service is None:
            service = self._service = self._auth()
        return service

    def cookie_user(self, user: User, request: Request) -> User:
        """``determine_current_user``: the user of a valid ``svc_logged_in`` cookie."""
        header = request.headers.get_joined("cookie")
        # PERF: nothing is parsed, and the store is not touched, without our cookie.
        if not header or COOKIE_NAME not in header:
            return user
        value = self._header_values.get(header)
        remembered = value is not None
        service = self._service or self.service()
        if value is None:
            value = parse_cookie_header(header).get(COOKIE_NAME)
            if not value:
                return user
        else:
            hooks = service.hooks
            if hooks.version != self._checked:
                self._check(hooks)
            # PERF: while the cookie status is the one callback of ``auth_cookie_valid``,
            # a remembered cookie is answered here: the action counted and its work done
            # (its call, the callback's and a dict copy less; a plugin's callback on the
            # action turns this off and is called as before).
            known = _remembered(service, value) if self._quiet else None
            if known is not None:
                hooks.count_action("auth_cookie_valid")
                ctx = current_context()
                if ctx is not None:
                    ctx.cookie_status = True
                    ctx.session_token = known.token
                return known.user
        found = service.validate_cookie(value)
        if found is None:
            return user
        if not remembered and len(header) <= MAX_REMEMBERED_HEADER:
            self._headers.put(header, value)
        ctx = current_context()
        if ctx is not None:
            ctx.session_token = found[1]
        return found[0]

    def alone(self, user: User, request: Request) -> Any:
        """The cookie scheme's chain in one call: :meth:`cookie_user`, the user it answers
        made the current one (the context's and the request's), then :meth:`check_errors`
        from None; returns the latter's verdict (the scheme's ``alone``)."""
        ctx = current_context()
        service = self._service
        header = request.headers.get_joined("cookie")
        value = self._header_values.get(header) if header is not None else None
        # PERF: the steady state of a logged-in browser, :meth:`cookie_user`'s memo hit
        # written out (its call less): a remembered header whose cookie the memo holds at
        # the store's current mark, unexpired, while the cookie status is the one callback
        # of ``auth_cookie_valid``. Any other case takes :meth:`cookie_user`.
        if value is not None and ctx is not None and service is not None and self._quiet:
            hooks = service.hooks
            if (
                hooks.version == self._checked
                and (known := _remembered(service, value)) is not None
            ):
                hooks.count_action("auth_cookie_valid")
                ctx.cookie_status = True
                ctx.session_token = known.token
                ctx.user = request.user = known.user
                # Rows 1 and 2 of check_errors let a valid cookie through: its nonce decides
                # (PERF: check_errors' call and tests less).
                return self._nonce_check(ctx, request)
        adopt_user(self.cookie_user(user, request), request)
        return self.check_errors(None, request)

    def _check(self, hooks: Hooks) -> None:
        """Whether ``auth_cookie_valid`` has no callback but :attr:`on_valid`, at the hooks'
        current version."""
        version = hooks.version  # read first: a change meanwhile is seen next time
        self._quiet = hooks.has_only("auth_cookie_valid", (self.on_valid,))
        self._checked = version

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
        return self._nonce_check(ctx, request)

    def _nonce_check(self, ctx: RequestContext, request: Request) -> Any:
        """Rows 3 to 5 of :meth:`check_errors`: the nonce of a request that needs one."""
        # PERF: a request without a body or a query string (most reads) can only carry the
        # header; read here, without nonce_from_request's call.
        if request.raw_body or request.may_have_query or self._wordpress_compat:
            nonce = nonce_from_request(request, self._wordpress_compat)
        else:
            nonce = request.headers.get_joined("x-svc-nonce")
        if nonce is None:  # row 3
            ctx.user = ANONYMOUS
            return True
        auth = self._service or self.service()
        token = ctx.session_token
        user_id = ctx.user.id
        # PERF: the types verify tests known here (~400 instructions less; the token is
        # this module's own, a str).
        if type(nonce) is str and type(user_id) is int:
            verdict = auth.nonces.verified(nonce, NONCE_ACTION, user_id, token)
        else:
            verdict = isinstance(nonce, str) and auth.nonces.verify(
                nonce, NONCE_ACTION, user_id, token
            )
        if not verdict:  # row 4
            return RestError(
                "rest_cookie_invalid_nonce", "Cookie nonce is invalid", {"status": 403}
            )
        # Row 5. PERF: a nonce of the current tick is exactly the fresh one; no second HMAC.
        fresh = nonce if verdict == 1 else auth.create_nonce(NONCE_ACTION, ctx.user.id, token)
        # PERF: RequestContext.add_pending_header written out (a Python call less).
        pending = ctx.pending_headers
        if pending is None:
            ctx.pending_headers = [("X-SVC-Nonce", fresh)]
        else:
            pending.append(("X-SVC-Nonce", fresh))
        return True


def _status_collector(action: str) -> Callable[..., None]:
    """The callback of ``action`` keeping its cookie status on the current request's context
    (whatever the action's arguments). PERF: the status is worked out once, here."""
    status: bool | str = True if action == "auth_cookie_valid" else action[12:]

    def collect(*args: Any) -> None:
        ctx = current_context()
        if ctx is not None:
            ctx.cookie_status = status

    return collect


def install_cookie_auth(
    schemes: AuthSchemes, auth: Callable[[], AuthService], *, wordpress_compat: bool = False
) -> CookieAuth:
    """Add cookie authentication and the REST cookie check to a site's schemes (and the
    cookie actions to its hooks); returns the :class:`CookieAuth`."""
    cookie_auth = CookieAuth(auth, wordpress_compat)
    for action in COOKIE_ACTIONS:
        collector = cookie_auth.on_valid if action == "auth_cookie_valid" else None
        schemes.hooks.add_action(action, collector or _status_collector(action))
    schemes.add(
        AuthScheme(
            name="cookie",
            headers=(NONCE_HEADER,),
            compat_headers=(WP_NONCE_HEADER,),
            # The WordPress nonce header counts in every mode: a request sending it runs the
            # check, which ignores it outside compatibility mode.
            other_lines=("Cookie",) if wordpress_compat else ("Cookie", WP_NONCE_HEADER),
            query_names=(NONCE_QUERY,),
            # SECURITY: an answer carrying a fresh nonce is never compressed (BREACH).
            secret_answer_headers=(NONCE_HEADER, WP_NONCE_HEADER),
            openapi={
                "cookieAuth": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": COOKIE_NAME,
                    "description": "The login cookie set by POST /login; counts only with a nonce.",
                },
                "nonceHeader": {
                    "type": "apiKey",
                    "in": "header",
                    "name": NONCE_HEADER,
                    "description": "The svc_rest nonce (GET /auth/nonce) sent with the cookie.",
                },
                "nonceQuery": {
                    "type": "apiKey",
                    "in": "query",
                    "name": NONCE_QUERY,
                    "description": "The svc_rest nonce as a query (or form) field; wins over "
                    "the header.",
                },
            },
            requirements=(
                {"cookieAuth": [], "nonceHeader": []},
                {"cookieAuth": [], "nonceQuery": []},
            ),
            callbacks=(
                ("determine_current_user", cookie_auth.cookie_user, 10),
                ("rest_authentication_errors", cookie_auth.check_errors, 100),
            ),
            alone=cookie_auth.alone,
        )
    )
    return cookie_auth
