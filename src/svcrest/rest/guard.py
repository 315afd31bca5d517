"""Idempotency keys and rate limits: the route options ``idempotency`` and ``rate_limit``.

A route registered with ``idempotency="optional"`` or ``"required"`` honours the
``Idempotency-Key`` request header of its writes (POST, PUT, PATCH, DELETE) as the IETF draft
``draft-ietf-httpapi-idempotency-key-header`` describes it: the first request with a key
runs and its answer is kept 24 hours; a repeat (same user, key, method, route and body) gets
that answer again with ``Idempotent-Replayed: true`` and runs its callback no more. The key is
reserved in the store after the request's validation and permission check, just before its
callback runs (a refused request keeps no row), so a repeat arriving while the first still
runs answers 409 ``rest_idempotency_in_flight``; a key reused for another request (another
method, route, query string, content type or body: a batch request's body included) answers
422 ``rest_idempotency_mismatch``; a write without a key where one is required answers 400
``rest_idempotency_key_missing``. A first attempt that fails with a 5xx frees its key. The
store keeps a bounded number of keys per owner (the oldest finished ones go first).

A route registered with ``rate_limit={"limit": N, "window": SECONDS}`` (or any route, when a
callback of the filter ``svc_rate_limit`` answers such a value: it receives the route's
value, or None, and the request) counts requests per user or, for anonymous requests, per
client address, in fixed windows kept in the store; with ``"per": "credential"`` (or its
older name ``"application_password"``), each credential of a user counts apart: each
application password, each token of a scheme that declares a ``rate_key``
(:class:`~svcrest.rest.auth_schemes.AuthScheme`).

SECURITY: whom a request counts for, and who owns its keys, is what authentication fixed:
the user's id, and the credential that authenticated the HTTP request as its scheme's
``rate_key`` names it (an application password's uuid), never the bytes of a header (each
spelling of one password, or a made-up ``Authorization`` of a batch request, was a fresh
bucket). A batch's requests share the HTTP request's context, so they count for
the batch's own subject. Every answer carries ``RateLimit-Policy`` and ``RateLimit`` (IETF
``draft-ietf-httpapi-ratelimit-headers``); past the limit the answer is 429
``rest_too_many_requests`` with ``Retry-After``. See docs/guides/idempotency-and-rate-limits.md.

The records themselves live in the site's store (``svcrest.store.request_guards``), reached
through the :class:`GuardedSite` Protocol: this layer never imports the store.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol, runtime_checkable

from svcrest.chains import Chain, Pending, run_chain, settled
from svcrest.http.context import current_context
from svcrest.http.errors import RestError
from svcrest.http.forms import parse_form
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.rest.definition_errors import RouteDefinitionError

__all__ = [
    "IDEMPOTENCY_MODES",
    "WRITE_METHODS",
    "GuardStore",
    "GuardedSite",
    "KeyState",
    "RateLimit",
    "RouteGuard",
    "Ticket",
    "enter_guard",
    "fingerprint",
    "idempotency_owner",
    "idempotent",
    "rate_keys_of",
    "rate_limit_of",
    "rate_subject",
    "route_guard",
]

logger = logging.getLogger("svcrest")

KeyState = Literal["reserved", "done", "in_flight", "mismatch", "full"]
IDEMPOTENCY_MODES = ("optional", "required")
#: What a rate limit counts per: the user (all their credentials together), or each
#: credential apart (``"application_password"``: the older name of ``"credential"``).
RATE_LIMIT_PER = ("user", "credential", "application_password")
#: The methods an idempotency key applies to (the others are idempotent already).
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_WRITES = WRITE_METHODS
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
    policy ``name`` (``"default"`` unless given), counted ``per`` user (the default) or
    ``"credential"`` (``"application_password"``: the same)."""

    __slots__ = ("limit", "name", "per", "window")

    def __init__(self, limit: int, window: int, name: str, per: str = "user") -> None:
        self.limit, self.window, self.name, self.per = limit, window, name, per


def rate_limit_of(value: Any) -> RateLimit | None:
    """``{"limit": N, "window": SECONDS, "name"?: str, "per"?: "user" | "credential" |
    "application_password"}`` checked (None stays None); raises ``ValueError`` for anything
    else."""
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
    per = value.get("per", "user")
    if per not in RATE_LIMIT_PER:
        raise ValueError(
            f"rate_limit per must be 'user', 'credential' or 'application_password': {per!r}"
        )
    assert isinstance(limit, int) and isinstance(window, int)
    return RateLimit(limit, window, name, per)


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
    """What a rate-limited request holds while it runs: its RateLimit header lines;
    :meth:`leave` adds them to the answer."""

    __slots__ = ("answer", "lines")

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []
        #: The answer to send instead of running the request (a 429).
        self.answer: Response | None = None

    def leave(self, response: Response) -> Response:
        """Add the RateLimit lines to ``response``."""
        for name, value in self.lines:
            response.headers[name] = value
        return response


def rate_subject(
    request: Request,
    per: str = "user",
    rate_keys: tuple[Callable[[Request], str | None], ...] = (),
) -> str:
    """Whom a request counts for: the user (any other ``per`` than ``"user"``: the user and
    the credential that authenticated the HTTP request, as the first of the site's schemes'
    ``rate_keys`` to name one says), else the client address. Only identities
    authentication fixed are read."""
    user = request.user
    if user.is_logged_in:
        if per != "user":
            for rate_key in rate_keys:
                key = rate_key(request)
                if key:
                    return f"u{user.id}:{key}"
        return f"u{user.id}"
    ctx = current_context()
    return "a" + (ctx.client if ctx is not None else "")


def rate_keys_of(site: Any) -> tuple[Callable[[Request], str | None], ...]:
    """The ``rate_key`` functions of ``site``'s authentication schemes (none for a site
    without a registry)."""
    schemes = getattr(site, "auth_schemes", None)
    return schemes.rate_keys if schemes is not None else ()


def idempotency_owner(request: Request) -> str:
    """Who owns a request's Idempotency-Key: the user and the credential that authenticated
    the HTTP request (a client's keys are its own), else the client address."""
    return rate_subject(request, "credential", rate_keys_of(request.site))


def _keep(guards: GuardStore, owner: str, key: str, response: Response) -> None:
    """Keep the answer under the reserved key, or free the key after a 5xx or an answer that
    cannot be kept."""
    if response.status >= 500:
        guards.release_key(owner, key)
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
        guards.release_key(owner, key)
        return
    guards.store_answer(owner, key, answer)


def _replayed(answer: str) -> Response:
    kept = json.loads(answer)
    response = Response(kept["d"], kept["s"], [(name, value) for name, value in kept["h"]])
    response.links = kept["l"]
    response.headers["Idempotent-Replayed"] = "true"
    return response


def _sf_string(quoted: str) -> str | None:
    """The text of ``quoted``, one Structured Field String (RFC 8941 §3.3.3: ``"`` ... ``"``
    with ``\\"`` and ``\\\\`` its only escapes), or None when it is not exactly one."""
    out: list[str] = []
    index = 1
    end = len(quoted) - 1
    while index < end:
        char = quoted[index]
        if char == "\\":
            escaped = quoted[index + 1] if index + 1 < end else ""
            if escaped not in ('"', "\\"):
                return None
            out.append(escaped)
            index += 2
            continue
        if char == '"':  # a string closed before the end: something follows it
            return None
        out.append(char)
        index += 1
    return "".join(out)


def _key_of(request: Request) -> str | Response | None:
    """The request's ``Idempotency-Key`` (a structured-field string: quotes optional), None
    without one, or the 400 of a malformed one.

    The header is one Structured Field Item, so a key sent on two lines is malformed: the
    lines reach the site joined with a comma (a WSGI server joins them in the environ), and
    a comma outside the quotes is refused for that reason, as is anything after the closing
    quote. Inside the quotes, ``\\"`` and ``\\\\`` stand for ``"`` and ``\\``."""
    raw = request.headers.get_joined("idempotency-key")
    if raw is None:
        return None
    text = raw.strip()
    key: str | None = text
    if text[:1] == '"':
        key = _sf_string(text) if len(text) >= 2 and text[-1] == '"' else None
    elif "," in text:
        key = None
    if not key or len(key) > MAX_KEY_LENGTH or not key.isascii() or not key.isprintable():
        return _error(
            "rest_idempotency_key_invalid",
            f"The Idempotency-Key header must be 1 to {MAX_KEY_LENGTH} printable ASCII characters.",
            400,
        )
    return key


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def fingerprint(request: Request) -> str:
    """What a key's request is: a SHA-256 over its method, route, query parameters (a nonce
    left out: a fresh one may come with a retry), content type and body (the raw bytes, or
    the parameters of a request built without them: a batch request's ``body``)."""
    digest = hashlib.sha256()
    # The query string as sent when there is one (sanitizing may have changed the params).
    sent = parse_form(request.query_string) if request.query_string else request.query_params
    query = {name: value for name, value in sent.items() if name != "_wpnonce"}
    content_type = (request.headers.get_joined("content-type") or "").strip().lower()
    for part in (request.method, request.route, _canonical(query), content_type):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    if request.raw_body:
        digest.update(b"raw\0")
        digest.update(request.raw_body)
    else:
        built = [request.body_params, request.get_json_params()]
        digest.update(b"params\0")
        digest.update(_canonical(built).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def idempotent(callback: Callable[[Request], Any], mode: str) -> Callable[[Request], Any]:
    """A handler's callback behind its route's ``idempotency`` ``mode`` (fitted to the
    request; wrapped when the route table prepares the handler). It runs after validation
    and the permission check, so a request refused there reserves no key: the key is
    reserved here, the callback runs, its answer is kept (or the key freed after a 5xx); or
    a replay, 409 or 422 answers instead."""

    async def run(request: Request) -> Any:
        if request.method not in _WRITES:
            return await settled(callback(request))
        key = _key_of(request)
        if key is None:
            if mode == "required":
                return _error(
                    "rest_idempotency_key_missing",
                    "This request requires an Idempotency-Key header.",
                    400,
                )
            return await settled(callback(request))
        if type(key) is Response:
            return key
        assert isinstance(key, str)
        guards = _guards(request.site)
        owner = idempotency_owner(request)
        state, answer = guards.reserve_key(owner, key, fingerprint(request))
        if state != "reserved":
            return _unreserved(state, answer)
        try:
            result = await settled(callback(request))
        except RestError as error:
            _kept_or_logged(guards, owner, key, Response.from_error(error))
            raise
        except BaseException:
            _kept_or_logged(guards, owner, key, None)
            raise
        if isinstance(result, RestError):
            answered = Response.from_error(result)
        else:
            answered = result if isinstance(result, Response) else Response(result)
        _kept_or_logged(guards, owner, key, answered)
        return result

    return run


def _kept_or_logged(guards: GuardStore, owner: str, key: str, response: Response | None) -> None:
    """:func:`_keep` (None: the callback failed, the key is freed); a store that fails
    lets the reservation lapse on its own."""
    try:
        if response is None:
            guards.release_key(owner, key)
        else:
            _keep(guards, owner, key, response)
    except Exception:
        logger.exception("The answer of an Idempotency-Key could not be kept")


def _unreserved(state: KeyState, answer: str | None) -> Response:
    """The answer to a key that was not reserved for this request."""
    if state == "done" and answer is not None:
        return _replayed(answer)
    if state == "in_flight":
        return _error(
            "rest_idempotency_in_flight",
            "A request with this Idempotency-Key is still being processed.",
            409,
        )
    if state == "full":
        return _error(
            "rest_idempotency_too_many_keys",
            "Too many requests with an Idempotency-Key are being processed: try again later.",
            429,
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
    filters over the route's value). Answers the :class:`Ticket` to finish the answer with;
    its ``answer`` is the 429 to send instead of running, matched to the route and
    ``handler``. (The idempotency key is the callback's affair: :func:`idempotent`.)"""
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
_NOTHING = Ticket()


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
    if limit is None:
        return _NOTHING
    guards = _guards(site)
    ticket = Ticket()
    subject = rate_subject(request, limit.per, rate_keys_of(site))
    hits, reset = guards.count_request(
        f"{route}|{limit.name}|{limit.window}|{subject}", limit.window
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
