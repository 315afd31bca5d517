"""AuthService: logging in and out, the auth cookie check and nonces, for one site.

The HTTP layer reads the ``svc_logged_in`` cookie (:func:`parse_cookie_header`), asks
:meth:`AuthService.validate_cookie` who the user is, and sends the headers of
:meth:`AuthService.log_in` / :meth:`AuthService.clear_cookie_header`. The REST cookie check
(WordPress's ``rest_cookie_check_errors`` and ``rest_cookie_collect_status``) listens to the
``auth_cookie_*`` actions fired here.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from email.utils import formatdate
from typing import Literal

from svcrest.auth.cookies import (
    COOKIE_NAME,
    COOKIE_SCHEME,
    CookieElements,
    cookie_hmac,
    format_auth_cookie,
    parse_auth_cookie,
    parse_cookie_header,
)
from svcrest.auth.nonces import NonceManager
from svcrest.auth.passwords import password_fragment
from svcrest.auth.session_cache import (
    DEFAULT_MAX_ENTRIES,
    CachedSession,
    SessionCache,
    open_session_cache,
)
from svcrest.auth.sessions import SessionManager, hash_token
from svcrest.auth.users import UserStore
from svcrest.auth.verified_cookies import (
    CookieSignature,
    KnownSignatures,
    VerifiedCookie,
    VerifiedCookies,
)
from svcrest.hooks import Hooks
from svcrest.http.user import User
from svcrest.store.base import ChangeMarkingStore, Store

__all__ = [
    "COOKIE_NAME",
    "REMEMBER_LIFETIME",
    "SECRET_KEY_OPTION",
    "SESSION_CACHE_FILTER",
    "SESSION_LIFETIME",
    "AuthService",
    "IssuedCookie",
    "ensure_secret_key",
    "parse_cookie_header",
]

#: Server-side lifetime of a login without "remember me": 2 days.
SESSION_LIFETIME = 2 * 86400
#: Lifetime of a login with "remember me": 14 days (also the cookie's Max-Age).
REMEMBER_LIFETIME = 14 * 86400
#: The option holding the generated site secret.
SECRET_KEY_OPTION = "svc_secret_key"
#: The filter giving the most sessions the cookie check caches (0 turns the cache off).
SESSION_CACHE_FILTER = "svc_session_cache_entries"

_ATTRIBUTES = "Path=/; HttpOnly; SameSite=Lax"


def ensure_secret_key(store: Store, secret_key: str | bytes | None = None) -> bytes:
    """The site secret: ``secret_key`` when given, else the one persisted in ``store``.

    The persisted secret is generated once (``secrets.token_urlsafe(48)``, 384 bits) and stored
    with ``add_option``, so every process sharing the store ends up with the same secret.
    """
    if isinstance(secret_key, str):
        secret_key = secret_key.encode("utf-8")
    if secret_key:
        return secret_key
    return store.add_option(SECRET_KEY_OPTION, secrets.token_urlsafe(48)).encode("ascii")


def _no_mark() -> int | None:
    """The change mark of a store that cannot tell (none)."""
    return None


def _set_cookie(value: str, secure: bool, expiry: str) -> str:
    return f"{COOKIE_NAME}={value}; {_ATTRIBUTES}{'; Secure' if secure else ''}{expiry}"


@dataclass(frozen=True, slots=True)
class IssuedCookie:
    """An auth cookie just issued by :meth:`AuthService.log_in`.

    ``expiration`` is the server-side end of the session (Unix seconds), always set;
    ``max_age`` is the browser lifetime in seconds for a "remember me" login and None for a
    session cookie (dropped when the browser closes).
    """

    value: str
    token: str
    expiration: int
    user: User
    max_age: int | None
    secure: bool

    def set_cookie_header(self) -> str:
        """The value of the ``Set-Cookie`` response header for this cookie.

        ``svc_logged_in=<value>; Path=/; HttpOnly; SameSite=Lax`` plus ``; Secure`` under
        https, plus ``; Expires=<RFC 1123 GMT>; Max-Age=<seconds>`` for a remembered login.
        """
        expiry = ""
        if self.max_age is not None:
            expires = formatdate(self.expiration, usegmt=True)
            expiry = f"; Expires={expires}; Max-Age={self.max_age}"
        return _set_cookie(self.value, self.secure, expiry)


class AuthService:
    """Cookie authentication and nonces for one site.

    ``secret_key``: the site secret (see ``ensure_secret_key``); ``clock``: Unix seconds;
    ``secret_key_fallbacks``: earlier secrets whose cookies and nonces still verify (new ones
    are signed with ``secret_key``). A cookie check reads the user and the session from the
    store, or on a store with a notification channel (PostgreSQL) from the cache of sessions
    this process verified (``svcrest.auth.session_cache``; the filter
    ``svc_session_cache_entries``, default 10,000, sets its size, 0 turns it off): either way
    a logout, a password change, a role change or a deleted user on one host applies on every
    host sharing the store from the next request.
    Actions fired on ``hooks``: exactly one ``auth_cookie_*`` action per
    ``validate_cookie`` call with a non-empty value, ``svc_login`` (login, user) after
    ``log_in`` and ``svc_logout`` (user id) after ``log_out``.
    """

    def __init__(
        self,
        store: Store,
        hooks: Hooks,
        users: UserStore,
        secret_key: bytes,
        clock: Callable[[], float],
        *,
        secret_key_fallbacks: Sequence[bytes] = (),
    ) -> None:
        if not isinstance(secret_key, bytes) or not secret_key:
            raise ValueError("secret_key must be non-empty bytes")
        if any(not isinstance(key, bytes) or not key for key in secret_key_fallbacks):
            raise ValueError("every secret key fallback must be non-empty bytes")
        self.store = store
        self.hooks = hooks
        self.users = users
        self.clock = clock
        self.sessions = SessionManager(store, clock)
        self.nonces = NonceManager(secret_key, clock, fallbacks=secret_key_fallbacks)
        self._secret = secret_key
        self._fallbacks = tuple(secret_key_fallbacks)
        entries = int(hooks.apply_filters(SESSION_CACHE_FILTER, DEFAULT_MAX_ENTRIES))
        #: The cache of verified sessions, None when off or the store cannot invalidate it.
        self.session_cache: SessionCache | None = open_session_cache(store, entries)
        #: The memo of valid cookies, on a store that marks its changes (SQLite), else None.
        self.verified_cookies: VerifiedCookies | None = None
        #: The store's change mark (``ChangeMarkingStore.change_mark``) while there is a
        #: memo; else a function answering None.
        self.change_mark: Callable[[], int | None] = _no_mark
        if isinstance(store, ChangeMarkingStore) and entries > 0:
            self.verified_cookies = VerifiedCookies(entries)
            self.change_mark = store.change_mark
        #: Cookies whose HMAC was found right, with their password fragment (None when off).
        self.known_signatures = KnownSignatures() if entries > 0 else None

    # -- nonces ----------------------------------------------------------------------------------

    def create_nonce(self, action: str, user_id: int = 0, token: str = "") -> str:
        """A nonce for ``action``, ``user_id`` and session ``token``: valid for 12 to 24 hours
        (see ``svcrest.auth.nonces``)."""
        return self.nonces.create(action, user_id, token)

    def verify_nonce(
        self, nonce: object, action: str, user_id: int = 0, token: str = ""
    ) -> Literal[1, 2, False]:
        """1 (this tick), 2 (previous tick) or False; never raises."""
        return self.nonces.verify(nonce, action, user_id, token)

    # -- cookies ---------------------------------------------------------------------------------

    def log_in(
        self, user: User, *, remember: bool, ip: str, user_agent: str, secure: bool
    ) -> IssuedCookie:
        """Start a server-side session for ``user`` and sign its cookie.

        Lifetime: 14 days with ``remember`` (a persistent cookie), else 2 days (a browser
        session cookie; the server-side expiration still applies). Raises ValueError for the
        anonymous user or a user not in the store.
        """
        encoded = self.users.password_hash(user.id) if user.is_logged_in else None
        if encoded is None:
            raise ValueError(f"cannot log in user {user.id!r}: no such user")
        lifetime = REMEMBER_LIFETIME if remember else SESSION_LIFETIME
        expiration = int(self.clock()) + lifetime
        token = self.sessions.create(user.id, expiration, ip, user_agent)
        value = format_auth_cookie(
            self._secret, user.login, expiration, token, password_fragment(encoded)
        )
        cookie = IssuedCookie(
            value=value,
            token=token,
            expiration=expiration,
            user=user,
            max_age=lifetime if remember else None,
            secure=secure,
        )
        self.hooks.do_action("svc_login", user.login, user)
        return cookie

    def log_out(self, user_id: int, token: str) -> None:
        """End the session ``token`` of ``user_id`` (the cookie's third field)."""
        self.sessions.destroy(user_id, token)
        self.hooks.do_action("svc_logout", user_id)

    def clear_cookie_header(self, secure: bool) -> str:
        """A ``Set-Cookie`` header value that makes the browser drop the auth cookie."""
        return _set_cookie("", secure, "; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0")

    def validate_cookie(self, value: str | None) -> tuple[User, str] | None:
        """The (user, session token) of a valid auth cookie value, else None; never raises on
        any value (store errors propagate).

        An absent or empty value fires nothing. Otherwise exactly one action fires, the first
        that applies of: ``auth_cookie_malformed`` (value, ``"logged_in"``),
        ``auth_cookie_expired`` (elements), ``auth_cookie_bad_username`` (elements),
        ``auth_cookie_bad_hash`` (elements), ``auth_cookie_bad_session_token`` (elements),
        ``auth_cookie_valid`` (elements, user). ``elements`` is a dict with ``username``,
        ``expiration``, ``token``, ``hmac`` and ``scheme``.
        """
        if value is None or value == "":
            return None
        now = float(self.clock())  # one reading for the cookie's and the session's expiry
        memo = self.verified_cookies
        mark = None
        if memo is not None:
            # PERF: a cookie found valid since the last write to the database is answered
            # from the memo (svcrest.auth.verified_cookies says why that is safe).
            mark = self.change_mark()
            if mark is not None:
                # PERF: VerifiedCookies.get written out for the hit at the memo's own mark
                # (a Python call less a check); any other mark takes the method, which
                # empties the memo for a newer one.
                known = memo.entries.get(value) if mark == memo.mark else memo.get(value, mark, now)
                if known is not None and now <= known.valid_until:
                    self.hooks.do_action("auth_cookie_valid", dict(known.elements), known.user)
                    return known.user, known.token
        signatures = self.known_signatures
        signature = signatures.get(value) if signatures is not None else None
        elements = signature.elements if signature is not None else parse_auth_cookie(value)
        if elements is None:
            self.hooks.do_action("auth_cookie_malformed", value, COOKIE_SCHEME)
            return None
        info = elements.as_dict()
        # WordPress's rule: the cookie is good up to and including its expiration second.
        if elements.expiration < now:
            self.hooks.do_action("auth_cookie_expired", info)
            return None
        found = self._user_and_session(value, elements, signature, now)
        if found is None:
            self.hooks.do_action("auth_cookie_bad_username", info)
            return None
        user, hash_ok, session_expiration = found
        if not hash_ok:
            self.hooks.do_action("auth_cookie_bad_hash", info)
            return None
        if session_expiration is None or session_expiration < now:
            self.hooks.do_action("auth_cookie_bad_session_token", info)
            return None
        if memo is not None and mark is not None:
            valid_until = min(elements.expiration, session_expiration)
            memo.put(value, mark, VerifiedCookie(user, elements.token, dict(info), valid_until))
        self.hooks.do_action("auth_cookie_valid", info, user)
        return user, elements.token

    def _user_and_session(
        self,
        value: str,
        elements: CookieElements,
        signature: CookieSignature | None,
        now: float,
    ) -> tuple[User, bool, int | None] | None:
        """The cookie's user, whether its HMAC matches and its session's expiration (None:
        no such session); None for no such user. From the session cache when it holds the
        session (live at ``now``), else from the store in one statement (the actions fire
        after it, so their callbacks may write). ``signature``: what is known of ``value``
        (its HMAC is right for one password fragment), or None."""
        token_hash = signature.token_hash if signature is not None else hash_token(elements.token)
        cache = self.session_cache
        key = (elements.login, token_hash)
        ticket = -1
        if cache is not None:
            cached, ticket = cache.lookup(key)
            if cached is not None:
                # SECURITY: the cache holds no verdict: the HMAC and the expiration are
                # checked on every hit, as for a read.
                if cached.expiration < now:
                    cache.discard(key)
                hash_ok = self._signed(value, elements, signature, token_hash, cached.fragment)
                return cached.user, hash_ok, cached.expiration
        record = self.users.get_auth_record_with_session(elements.login, token_hash)
        if record is None:
            return None
        user, encoded, expiration = record
        fragment = password_fragment(encoded)
        hash_ok = self._signed(value, elements, signature, token_hash, fragment)
        if cache is not None and hash_ok and expiration is not None and expiration >= now:
            cache.put(key, ticket, CachedSession(user, fragment, expiration))
        return user, hash_ok, expiration

    def _signed(
        self,
        value: str,
        elements: CookieElements,
        signature: CookieSignature | None,
        token_hash: str,
        fragment: str,
    ) -> bool:
        """Whether cookie ``value`` was signed for the password ``fragment``: known without
        an HMAC when it was found so before (PERF: two HMACs a check), else computed."""
        # Both fragments come from the server (the store or the session cache), not from the
        # client: a plain comparison.
        if signature is not None and signature.fragment == fragment:
            return True
        if not self._hmac_matches(elements, fragment):
            return False
        if self.known_signatures is not None:
            self.known_signatures.put(value, CookieSignature(elements, token_hash, fragment))
        return True

    def _hmac_matches(self, elements: CookieElements, fragment: str) -> bool:
        """Whether the cookie was signed with the secret or one of its fallbacks."""
        given = elements.hmac.encode("ascii")
        for secret in (self._secret, *self._fallbacks):
            expected = cookie_hmac(
                secret,
                elements.login_field,
                elements.expiration_field,
                elements.token,
                fragment,
            )
            # SECURITY: constant-time comparison on bytes (both are ASCII hex by now).
            if hmac.compare_digest(expected.encode("ascii"), given):
                return True
        return False
