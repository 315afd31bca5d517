"""Per-request state, kept in a ContextVar so concurrent requests never see each other's.

The HTTP layer opens a :class:`RequestContext` for every request it serves; code running inside
that request (callbacks, hooks, internal ``rest_do_request`` calls) reads it with
:func:`current_context`. Plain code outside any HTTP request sees ``None``.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from svcrest.http.exchange import HttpRequest
from svcrest.http.user import ANONYMOUS, User

__all__ = ["RequestContext", "current_context", "is_rest_request"]


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
    ``method_overridden``: ``X-HTTP-Method-Override`` or ``?_method=`` changed the method.
    ``request_id``: the request's ``X-Request-Id`` (docs/guides/operating.md).
    ``matched_route``: the pattern of the REST route that answered ("" when none did), as
    ``get_routes()`` names it: the ``route`` label of the request metrics.
    ``app_password_uuid``: the uuid of the application password that authenticated the
    request ("" for any other), as WordPress's ``rest_get_authenticated_app_password()``:
    rate limits and idempotency keys count by it, never by the bytes of a header.
    """

    is_rest: bool = False
    user: User = ANONYMOUS
    cookie_status: bool | str | None = None
    session_token: str = ""
    pending_headers: list[tuple[str, str]] | None = None
    secure: bool = False
    host: str = ""
    method_overridden: bool = False
    client: str = ""
    auth_error: Any = None
    request_id: str = ""
    matched_route: str = ""
    app_password_uuid: str = ""

    @classmethod
    def serving(cls, http: HttpRequest, is_rest: bool) -> RequestContext:
        """The context of ``http`` being served (its ``request_id`` set already): anonymous,
        nothing pending. The one construction by position; every other names its fields."""
        # PERF: by position, in field order (keywords cost ~0.35 µs a request): keep it next
        # to the fields; tests/http/test_context.py reads every field back.
        return cls(
            is_rest,
            ANONYMOUS,
            None,
            "",
            None,
            http.scheme == "https",
            http.host,
            False,
            http.client,
            None,
            http.request_id,
        )

    def add_pending_header(self, name: str, value: str) -> None:
        """Add a header line to the response being built."""
        if self.pending_headers is None:
            self.pending_headers = [(name, value)]
        else:
            self.pending_headers.append((name, value))


_current: ContextVar[RequestContext | None] = ContextVar("svcrest_request_context", default=None)


#: ``current_context()``: the context of the HTTP request being served, or None outside one.
#: PERF: the context variable's own ``get``, no Python frame (an authenticated request asks
#: for its context four times or more).
current_context = _current.get


def is_rest_request() -> bool:
    """True while serving an HTTP request under the REST prefix or with ``rest_route``
    (WordPress's ``REST_REQUEST`` constant); False in plain code, and in ``rest_do_request``
    called from plain code."""
    ctx = _current.get()
    return ctx is not None and ctx.is_rest
