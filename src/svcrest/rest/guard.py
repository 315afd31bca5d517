"""Idempotency keys and rate limits: the route options ``idempotency`` and ``rate_limit``.

A route registered with ``idempotency="optional"`` or ``"required"`` honours the
``Idempotency-Key`` request header of its writes (POST, PUT, PATCH, DELETE) as the IETF draft
``draft-ietf-httpapi-idempotency-key-header`` describes it: the first request with a key
runs and its answer is kept 24 hours; a repeat (same user, key, method, route and body) gets
that answer again with ``Idempotent-Replayed: true`` and runs nothing. The key is reserved in
the store before the callback runs, so a repeat arriving while the first still runs answers
409 ``rest_idempotency_in_flight``; a key reused for another request answers 422
``rest_idempotency_mismatch``; a write without a key where one is required answers 400
``rest_idempotency_key_missing``. A first attempt that fails with a 5xx frees its key.

A route registered with ``rate_limit={"limit": N, "window": SECONDS}`` (or any route, when a
callback of the filter ``svc_rate_limit`` answers such a value: it receives the route's
value, or None, and the request) counts requests per user (per application password with
Basic authentication) or, for anonymous requests, per client address, in fixed windows kept
in the store. Every answer carries ``RateLimit-Policy`` and ``RateLimit`` (IETF
``draft-ietf-httpapi-ratelimit-headers``); past the limit the answer is 429
``rest_too_many_requests`` with ``Retry-After``. See docs/guides/idempotency-and-rate-limits.md.

The records themselves live in the site's store (``svcrest.store.request_guards``), reached
through the :class:`GuardedSite` Protocol: this layer never imports the store.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from typing import Any, Literal, Protocol, runtime_checkable

from svcrest.chains import Chain, Pending, run_chain
from svcrest.http.context import current_context
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.rest.routing.definitions import RouteDefinitionError

__all__ = [
    "IDEMPOTENCY_MODES",
    "GuardStore",
    "GuardedSite",
    "KeyState",
    "RateLimit",
    "RouteGuard",
    "Ticket",
    "enter_guard",
    "rate_limit_of",
    "route_guard",
]

logger = logging.getLogger("svcrest")

KeyState = Literal["reserved", "done", "in_flight", "mismatch"]
IDEMPOTENCY_MODES = ("optional", "required")
#: The methods an idempotency key applies to (the others are idempotent already).
_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: Longest key accepted (a UUID is 36 characters).
MAX_KEY_LENGTH = 255
#: Header lines never kept with a stored answer: the replay sets its own.
_NOT_REPLAYED = frozenset({"set-cookie", "ratelimit", "ratelimit-policy", "retry-after"})


class GuardStore(Protocol):
    """Where idempotency records and rate-limit counts live (the site's store)."""

    def reserve_key(
        self, owner: str, key: str, fingerprint: str
    ) -> tuple[KeyState, str | None]: ...

    def store_answer(self, owner: str, key: str, answer: str) -> None: ...

    def release_key(self, owner: str, key: str) -> None: ...

    def count_request(self, bucket: str, window: int) -> tuple[int, int]: ...


@runtime_checkable
class GuardedSite(Protocol):
    """A site that keeps idempotency records and rate-limit counts (the App does)."""

    @property
    def request_guards(self) -> GuardStore: ...


class RateLimit:
    """A checked ``rate_limit`` value: ``limit`` requests a ``window`` of seconds, under the
    policy ``name`` (``"default"`` unless given)."""

    __slots__ = ("limit", "name", "window")

    def __init__(self, limit: int, window: int, name: str) -> None:
        self.limit, self.window, self.name = limit, window, name


def rate_limit_of(value: Any) -> RateLimit | None:
    """``{"limit": N, "window": SECONDS, "name"?: str}`` checked (None stays None); raises
    ``ValueError`` for anything else."""
    if value is None:
        return None
    if isinstance(value, RateLimit):
        return value
    if not isinstance(value, Mapping):
        raise ValueError(f"rate_limit must be a mapping with limit and window: {value!r}")
    limit, window, name = value.get("limit"), value.get("window"), value.get("name", "default")
    for label, number in (("limit", limit), ("window", window)):
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise ValueError(f"rate_limit {label} must be a whole number above 0: {number!r}")
    if not isinstance(name, str) or not name or not name.isascii() or '"' in name:
        raise ValueError(f"rate_limit name must be a plain ASCII string: {name!r}")
    assert isinstance(limit, int) and isinstance(window, int)
    return RateLimit(limit, window, name)


class RouteGuard:
    """A route's ``idempotency`` mode (None: keys ignored) and ``rate_limit``."""

    __slots__ = ("idempotency", "rate_limit")

    def __init__(self, idempotency: str | None, rate_limit: RateLimit | None) -> None:
        self.idempotency, self.rate_limit = idempotency, rate_limit


def route_guard(options: Mapping[str, Any]) -> RouteGuard | None:
    """The guard of a route's options; None when it has neither option (PERF: such a route
    pays one attribute test a request). Raises ``RouteDefinitionError`` for a bad value."""
    mode = options.get("idempotency")
    if mode is not None and mode not in IDEMPOTENCY_MODES:
        raise RouteDefinitionError(f"idempotency must be 'optional' or 'required': {mode!r}")
    try:
        limit = rate_limit_of(options.get("rate_limit"))
    except ValueError as exc:
        raise RouteDefinitionError(str(exc)) from None
    if mode is None and limit is None:
        return None
    return RouteGuard(mode, limit)


def _error(code: str, message: str, status: int) -> Response:
    return Response.from_error(RestError(code, message, {"status": status}))


def _guards(site: Any) -> GuardStore:
    if isinstance(site, GuardedSite):
        return site.request_guards
    raise RestError(
        "svc_guards_unavailable",
        "This site cannot keep idempotency keys or rate limits.",
        {"status": 500},
    )


class Ticket:
    """What a guarded request holds while it runs: its reserved key and its RateLimit
    header lines; :meth:`leave` finishes it with the answer."""

    __slots__ = ("answer", "guards", "key", "lines", "owner")

    def __init__(self, guards: GuardStore | None) -> None:
        self.guards = guards
        self.owner = self.key = ""
        self.lines: list[tuple[str, str]] = []
        #: The answer to send instead of running the request (a replay, 429, 409…).
        self.answer: Response | None = None

    def leave(self, response: Response) -> Response:
        """Keep the answer under the reserved key (or free the key after a 5xx), and add
        the RateLimit lines."""
        if self.key and self.guards is not None:
            try:
                self._keep(response)
            except Exception:  # the store failed: the reservation lapses on its own
                logger.exception("The answer of an Idempotency-Key could not be kept")
        for name, value in self.lines:
            response.headers[name] = value
        return response

    def _keep(self, response: Response) -> None:
        assert self.guards is not None
        if response.status >= 500:
            self.guards.release_key(self.owner, self.key)
            return
        lines = [
            [name, value]
            for name, value in response.headers.items_list()
            if name.lower() not in _NOT_REPLAYED
        ]
        try:
            answer = json.dumps(
                {"s": response.status, "h": lines, "d": response.data, "l": response.links},
                separators=(",", ":"),
            )
        except (TypeError, ValueError):
            logger.warning("An answer of %s cannot be kept for replays", response.matched_route)
            self.guards.release_key(self.owner, self.key)
            return
        self.guards.store_answer(self.owner, self.key, answer)


def _replayed(answer: str) -> Response:
    kept = json.loads(answer)
    response = Response(kept["d"], kept["s"], [(name, value) for name, value in kept["h"]])
    response.links = kept["l"]
    response.headers["Idempotent-Replayed"] = "true"
    return response


def _key_of(request: Request) -> str | Response | None:
    """The request's ``Idempotency-Key`` (a structured-field string: quotes optional), None
    without one, or the 400 of a malformed one."""
    raw = request.headers.get_joined("idempotency-key")
    if raw is None:
        return None
    key = raw.strip()
    if len(key) >= 2 and key[0] == key[-1] == '"':
        key = key[1:-1]
    if not key or len(key) > MAX_KEY_LENGTH or not key.isascii() or not key.isprintable():
        return _error(
            "rest_idempotency_key_invalid",
            f"The Idempotency-Key header must be 1 to {MAX_KEY_LENGTH} printable ASCII characters.",
            400,
        )
    return key


def _subject(request: Request) -> str:
    """Whom a request counts for: the user (and the application password of Basic
    authentication), else the client address."""
    user = request.user
    if user.is_logged_in:
        authorization = request.headers.get_joined("authorization") or ""
        if authorization[:6].lower() == "basic ":
            digest = hashlib.blake2b(authorization.encode(), digest_size=12).hexdigest()
            return f"u{user.id}:p{digest}"
        return f"u{user.id}"
    ctx = current_context()
    return "a" + (ctx.client if ctx is not None else "")


def _idempotency(
    mode: str, guards: GuardStore, request: Request, ticket: Ticket
) -> Response | None:
    """Reserve the request's key (noting it on ``ticket``), or the answer instead of a run."""
    key = _key_of(request)
    if key is None:
        if mode != "required":
            return None
        return _error(
            "rest_idempotency_key_missing",
            "This request requires an Idempotency-Key header.",
            400,
        )
    if type(key) is Response:
        return key
    assert isinstance(key, str)
    owner = _subject(request)
    body = hashlib.sha256(request.raw_body or b"").hexdigest()
    fingerprint = f"{request.method} {request.route} {body}"
    state, answer = guards.reserve_key(owner, key, fingerprint)
    if state == "reserved":
        ticket.owner, ticket.key = owner, key
        return None
    if state == "done" and answer is not None:
        return _replayed(answer)
    if state == "in_flight":
        return _error(
            "rest_idempotency_in_flight",
            "A request with this Idempotency-Key is still being processed.",
            409,
        )
    return _error(
        "rest_idempotency_mismatch",
        "This Idempotency-Key was used for another request.",
        422,
    )


async def enter_guard(
    entry: RouteEntryLike,
    handler: Mapping[str, Any],
    site: Any,
    request: Request,
    rate_filters: Chain,
) -> Ticket:
    """Before a request of the route ``entry`` runs: its rate limit (``svc_rate_limit``
    filters over the route's value), then its idempotency key. Answers the :class:`Ticket`
    to finish the answer with; its ``answer`` is the Response to send instead of running
    (429, a replay, 400/409/422), matched to the route and ``handler``."""
    ticket = await _checked(entry.guard, site, request, rate_filters, entry.route)
    if ticket.answer is not None:
        ticket.answer.matched_route, ticket.answer.matched_handler = entry.route, handler
    return ticket


class RouteEntryLike(Protocol):
    """What :func:`enter_guard` reads of a route (a ``RouteEntry``)."""

    @property
    def route(self) -> str: ...

    @property
    def guard(self) -> RouteGuard | None: ...


#: The ticket of a request nothing applies to.
_NOTHING = Ticket(None)


async def _checked(
    guard: RouteGuard | None, site: Any, request: Request, rate_filters: Chain, route: str
) -> Ticket:
    limit = guard.rate_limit if guard is not None else None
    if rate_filters:
        chosen = run_chain(rate_filters, limit, request)
        if type(chosen) is Pending:
            chosen = await chosen
        try:
            limit = rate_limit_of(chosen)
        except ValueError as exc:
            logger.warning("svc_rate_limit answered a bad value, ignored: %s", exc)
            limit = guard.rate_limit if guard is not None else None
    mode = guard.idempotency if guard is not None and request.method in _WRITES else None
    if limit is None and mode is None:
        return _NOTHING
    guards = _guards(site)
    ticket = Ticket(guards)
    if limit is not None:
        hits, reset = guards.count_request(
            f"{route}|{limit.name}|{limit.window}|{_subject(request)}", limit.window
        )
        name = limit.name
        ticket.lines = [
            ("RateLimit-Policy", f'"{name}";q={limit.limit};w={limit.window}'),
            ("RateLimit", f'"{name}";r={max(limit.limit - hits, 0)};t={reset}'),
        ]
        if hits > limit.limit:
            refused = _error("rest_too_many_requests", "Too many requests: try again later.", 429)
            refused.headers["Retry-After"] = str(reset)
            ticket.answer = ticket.leave(refused)
            return ticket
    if mode is not None:
        early = _idempotency(mode, guards, request, ticket)
        if early is not None:
            ticket.answer = ticket.leave(early)
    return ticket
