"""Per-request state, kept in a ContextVar so concurrent requests never see each other's.

The HTTP layer opens a :class:`RequestContext` for every request it serves; code running inside
that request (callbacks, hooks, internal ``rest_do_request`` calls) reads it with
:func:`current_context`. Plain code outside any HTTP request sees ``None``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from svcrest.http.exchange import HttpRequest
from svcrest.http.scope import AppPasswordScope
from svcrest.http.user import ANONYMOUS, User
from svcrest.instances import without_init

__all__ = [
    "DISPATCH_USER",
    "REQUEST_CONTEXT",
    "RequestContext",
    "as_current_user",
    "current_context",
    "current_user",
    "dispatch_user",
    "enter_dispatch_user",
    "is_rest_request",
    "leave_dispatch_user",
]


@dataclass(slots=True)
class RequestContext:
    """State of one HTTP request being served.

    ``is_rest``: the request is under the REST prefix or carries ``rest_route`` (REST_REQUEST).
    ``user``: the current user (``ANONYMOUS`` until authentication says otherwise).
    ``cookie_status``: as WordPress's ``$wp_rest_auth_cookie``, True after
    ``auth_cookie_valid``, else the action name without its first 12 characters
    (``"malformed"``, ``"expired"``, …), None when no cookie was checked.
    ``session_token``: the token of the valid auth cookie ("" otherwise).
    ``pending_headers``: headers to add to the response being built (deprecation notices…),
    None until the first (:meth:`add_pending_header`).
    ``secure`` / ``host``: whether the request came over TLS and the host it named.
    ``client``: the client's address as the server saw it ("" when unknown).
    ``auth_error``: an error an authentication scheme found while determining the user
    (application passwords), answered by its ``rest_authentication_errors`` callback.
    ``method_overridden``: the method ``X-HTTP-Method-Override`` or ``?_method=`` gave a
    POST ("" when neither did, or when the one there was empty: the 405 of a method "").
    ``request_id``: the request's ``X-Request-Id`` (docs/guides/operating.md).
    ``matched_route``: the pattern of the REST route that answered ("" when none did), as
    ``get_routes()`` names it, also when its handler raised: the ``route`` of the access and
    JSON logs, and of the request metrics (which write it as its OpenAPI path).
    ``app_password_uuid``: the uuid of the application password that authenticated the
    request ("" for any other), as WordPress's ``rest_get_authenticated_app_password()``:
    rate limits and idempotency keys count by it, never by the bytes of a header.
    ``app_password_scope``: the scope of that password when it was created with one (the
    namespaces it may reach, read-only or not; None for any other request): dispatch answers
    403 ``rest_application_password_scope`` to a route outside it, for internal requests
    (batch, ``_embed``, MCP tools) too.
    """

    is_rest: bool = False
    user: User = ANONYMOUS
    cookie_status: bool | str | None = None
    session_token: str = ""
    pending_headers: list[tuple[str, str]] | None = None
    secure: bool = False
    host: str = ""
    method_overridden: str = ""
    client: str = ""
    auth_error: Any = None
    request_id: str = ""
    matched_route: str = ""
    app_password_uuid: str = ""
    app_password_scope: AppPasswordScope | None = None

    @classmethod
    def serving(cls, http: HttpRequest, is_rest: bool, request_id: str) -> RequestContext:
        """The context of ``http`` being served under ``request_id``: anonymous, nothing
        pending. The one construction that sets the fields one by one; every other passes
        them to the class by name."""
        # PERF: every field set here, in field order, without the generated ``__init__``'s
        # frame (a WSGI GET ~1,000 instructions less, bench/budget.py): keep it next to the
        # fields; tests/http/test_context.py reads every field back.
        ctx = without_init(cls)
        ctx.is_rest = is_rest
        ctx.user = ANONYMOUS
        ctx.cookie_status = None
        ctx.session_token = ""
        ctx.pending_headers = None
        ctx.secure = http.scheme == "https"
        ctx.host = http.host
        ctx.method_overridden = ""
        ctx.client = http.client
        ctx.auth_error = None
        ctx.request_id = request_id
        ctx.matched_route = ""
        ctx.app_password_uuid = ""
        ctx.app_password_scope = None
        return ctx

    def add_pending_header(self, name: str, value: str) -> None:
        """Add a header line to the response being built."""
        if self.pending_headers is None:
            self.pending_headers = [(name, value)]
        else:
            self.pending_headers.append((name, value))


#: The context variable holding the :class:`RequestContext` of the request being served: the
#: HTTP layer sets and resets it around each request; other layers read it with its ``get``
#: (or :func:`current_context`, the same bound method).
REQUEST_CONTEXT: ContextVar[RequestContext | None] = ContextVar(
    "svcrest_request_context", default=None
)


#: ``current_context()``: the context of the HTTP request being served, or None outside one.
#: PERF: the context variable's own ``get``, no Python frame (an authenticated request asks
#: for its context four times or more). Modules that import a context variable call its
#: methods through names like this one, bound once: CPython 3.11 compiles ``NAME.method()``
#: for a name an import bound as an attribute load and a call, a bound method made at every
#: call (~240 instructions; tests/test_bound_lookups.py keeps the request path free of it).
current_context = REQUEST_CONTEXT.get


def is_rest_request() -> bool:
    """True while serving an HTTP request under the REST prefix or with ``rest_route``
    (WordPress's ``REST_REQUEST`` constant); False in plain code, and in ``rest_do_request``
    called from plain code."""
    ctx = REQUEST_CONTEXT.get()
    return ctx is not None and ctx.is_rest


#: The user an internal dispatch (``rest_do_request``) or an ability run is running as, None
#: outside one: it outranks the HTTP request's user in :func:`current_user`.
DISPATCH_USER: ContextVar[User | None] = ContextVar("svcrest_dispatch_user", default=None)
#: ``DISPATCH_USER``'s ``get``, ``set`` and ``reset``, bound once (PERF: see
#: :data:`current_context`).
dispatch_user = DISPATCH_USER.get
enter_dispatch_user = DISPATCH_USER.set
leave_dispatch_user = DISPATCH_USER.reset


def current_user() -> User:
    """The user the current request runs as (WordPress's ``wp_get_current_user``): the user of
    the internal dispatch or ability run under way, else the user the HTTP request being
    served authenticated as, else the anonymous user (id 0)."""
    user = DISPATCH_USER.get()
    if user is not None:
        return user
    ctx = REQUEST_CONTEXT.get()
    return ANONYMOUS if ctx is None else ctx.user


@contextmanager
def as_current_user(user: User) -> Iterator[User]:
    """Run the ``with`` block as ``user`` (what :func:`current_user` answers inside it)."""
    token = DISPATCH_USER.set(user)
    try:
        yield user
    finally:
        DISPATCH_USER.reset(token)
