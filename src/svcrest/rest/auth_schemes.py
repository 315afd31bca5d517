"""The authentication schemes of a site, each declaring itself once.

An :class:`AuthScheme` says where its credentials travel (header lines, query or form
fields), how the OpenAPI document and the root index describe it, and which callbacks of
``determine_current_user`` and ``rest_authentication_errors`` implement it. A site's
:class:`AuthSchemes` registry attaches those callbacks to the site's hooks, and the REST
layer builds from it, and only from it:

- whose credentials a request may carry (``rule``, a :class:`CredentialRule`: one function
  for the REST pipeline, the MCP endpoint and a stream's reauthentication): a request runs
  the callbacks of the schemes whose credentials it may carry and skips the others', so a
  cookie request costs no application password callback, an unrelated callback costs its
  own call only, and a site whose every callback belongs to a scheme answers a request
  carrying none as anonymous without calling any;
- the CORS ``Access-Control-Allow-Headers`` value;
- the OpenAPI ``securitySchemes`` and ``security`` requirements;
- the root index's ``authentication`` entries;
- the header lines that keep an answer from being compressed (``secret_lines``: answer lines
  carrying a secret; ``secret_request_lines``: request lines whose value is one);
- whom a rate limit ``per`` credential counts a request for (``rate_keys``).

The cookie with a nonce (``svcrest.auth.rest_cookie``) and Basic authentication with
application passwords (``svcrest.auth.app_passwords``) are the built-in ones; adding a scheme
is one :meth:`AuthSchemes.add` call (docs/guides/authentication.md, "Your own
authentication").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from svcrest.hooks import Hooks
from svcrest.http.compression import ALWAYS_SECRET_LINES
from svcrest.http.context import current_context
from svcrest.http.headers import Headers
from svcrest.http.request import Request

__all__ = [
    "AUTH_HOOKS",
    "CHOSEN_ONE_BY_ONE",
    "CONTENT_ALLOW_HEADERS",
    "AuthScheme",
    "AuthSchemes",
    "CredentialRule",
    "adopt_user",
]

#: The hooks a scheme's callbacks may be attached to.
AUTH_HOOKS = frozenset({"determine_current_user", "rest_authentication_errors"})
#: The request headers browsers may send to the REST API besides the schemes' own ones: the
#: body's description, the validators of conditional writes and reads, and the key of an
#: idempotent retry.
CONTENT_ALLOW_HEADERS = (
    "Content-Disposition",
    "Content-MD5",
    "Content-Type",
    "If-Match",
    "If-None-Match",
    "Idempotency-Key",
)
#: How many schemes (the first added) a request's credentials choose one by one; the schemes
#: after them share one choice (all their callbacks run when it carries any one's
#: credentials), so a site has at most ``2 ** (CHOSEN_ONE_BY_ONE + 1)`` authentication chains.
CHOSEN_ONE_BY_ONE = 6


def adopt_user(user: Any, request: Request) -> None:
    """The step of the authentication chain between its two hooks (and of a scheme's
    ``alone`` function between its two callbacks): the user
    ``determine_current_user`` answered becomes the current one (the context's and the
    request's; the anonymous user stays for None), and ``rest_authentication_errors`` starts
    from None."""
    # PERF: the variable's own ``get``, bound once (see current_context).
    ctx = current_context()
    if ctx is None:
        if user is not None:
            request.user = user
        return
    if user is not None:
        ctx.user = user
    request.user = ctx.user


@dataclass(frozen=True, kw_only=True)
class AuthScheme:
    """One way a REST request authenticates.

    - ``name``: the scheme's name (the key of its root index entry);
    - ``headers``: the request header lines that carry its credentials, as clients spell
      them (listed in CORS ``Access-Control-Allow-Headers``); ``compat_headers`` the ones
      accepted only in WordPress compatibility mode (listed after the others);
      ``other_lines``: lines that carry its credentials without a CORS listing (``Cookie``:
      browsers send it by themselves);
    - ``query_names``: query or form fields that carry its credentials: a request with a
      body, or a query string naming one (or percent-encoding anything), may carry them;
    - ``openapi``: its OpenAPI security schemes (name → object) and ``requirements`` the
      security requirements that use them;
    - ``index``: returns its root index ``authentication`` entry (None: no entry);
    - ``callbacks``: ``(hook, callback, priority)`` on ``determine_current_user`` or
      ``rest_authentication_errors``. Each must do nothing for a request that carries none of
      the scheme's credentials: such a request skips them;
    - ``secret_headers``: request header lines whose value is a secret credential (a bearer
      token); ``secret_answer_headers``: answer header lines carrying a secret the scheme
      hands out (a fresh nonce). SECURITY: an answer to a request carrying one of the first,
      or carrying one of the second, is never compressed (BREACH: a secret compressed next to
      text an attacker chose leaks through the length);
    - ``rate_key``: the credential that authenticated a request, as a short id (never the
      secret itself), None when the scheme did not authenticate it: rate limits with
      ``"per": "credential"`` (and idempotency keys) count each credential of a user apart,
      as each application password counts apart;
    - ``alone``: one function ``(user, request)`` doing exactly what the scheme's callbacks
      do with the user's adoption between them (the user ``determine_current_user`` answers
      made the current one, then ``rest_authentication_errors`` run from None: its answer
      returned), used for a request whose chain holds the scheme's callbacks and nothing else
      (PERF: the chain runner's call and a call per callback saved; any other callback on
      either hook, or one of the scheme's removed, runs the chain as usual).
    """

    name: str
    headers: tuple[str, ...] = ()
    compat_headers: tuple[str, ...] = ()
    other_lines: tuple[str, ...] = ()
    query_names: tuple[str, ...] = ()
    openapi: Mapping[str, Mapping[str, Any]] | None = None
    requirements: tuple[Mapping[str, list[str]], ...] = ()
    index: Callable[[], Mapping[str, Any]] | None = None
    callbacks: tuple[tuple[str, Callable[..., Any], int], ...] = ()
    secret_headers: tuple[str, ...] = ()
    secret_answer_headers: tuple[str, ...] = ()
    rate_key: Callable[[Request], str | None] | None = None
    alone: Callable[[Any, Request], Any] | None = None


def _header_list(names: list[str]) -> list[str]:
    """``names`` without repeats (case-insensitive), sorted: the same value whatever order
    the schemes were added in."""
    unique: dict[str, str] = {}
    for name in names:
        unique.setdefault(name.lower(), name)
    return sorted(unique.values(), key=str.lower)


class CredentialRule:
    """Whose credentials a request may carry, for one set of schemes (a snapshot: adding a
    scheme makes a new rule).

    :meth:`carried` answers with bits, one per scheme (``1 << i`` for the ``i``-th scheme
    added, the schemes from :data:`CHOSEN_ONE_BY_ONE` on sharing one bit): set when the
    request has a header line of the scheme (``headers``, ``compat_headers``,
    ``other_lines``) or, for a scheme taking query or form fields, a body or a query string
    naming such a field or percent-encoding anything. A scheme declaring no carrier at all
    counts whenever another's credentials are there. 0: the request carries none.

    ``callbacks``: each bit and the callbacks of its schemes, which a request without that
    bit skips (the chains are prepared per set of bits, by the REST plan).
    """

    __slots__ = ("callbacks", "field_bits", "first", "lines", "others", "query_markers", "width")

    def __init__(self, schemes: list[AuthScheme]) -> None:
        bits = [1 << min(index, CHOSEN_ONE_BY_ONE) for index in range(len(schemes))]
        #: How many bits :meth:`carried` may set (its answers are below ``1 << width``).
        self.width = min(len(schemes), CHOSEN_ONE_BY_ONE + 1)
        lines = [_carrier_lines(scheme) for scheme in schemes]
        #: The lower-case header names that may carry credentials of some scheme.
        self.lines: frozenset[str] = frozenset().union(*lines)
        with_lines = [(bit, own) for bit, own in zip(bits, lines, strict=True) if own]
        # PERF: the first scheme with header lines (the cookie's, on an App) is tested last,
        # and only when another scheme's lines are there too: without them, a request with
        # some scheme's lines has its lines (a cookie request: two set tests, not three).
        self.first: tuple[int, frozenset[str]] = with_lines[0] if with_lines else (0, frozenset())
        self.others: tuple[tuple[int, frozenset[str]], ...] = tuple(with_lines[1:])
        # The name without its leading underscores: PHP-style parsing turns a leading space
        # or dot of a field name into one.
        markers = dict.fromkeys(name.lstrip("_") for s in schemes for name in s.query_names)
        #: Finds in a raw query string what may name a credential field (None: no scheme
        #: takes a field).
        self.query_markers: re.Pattern[str] | None = (
            re.compile("|".join(["%", *map(re.escape, markers)])) if markers else None
        )
        self.field_bits = 0
        always = 0
        for bit, scheme, own in zip(bits, schemes, lines, strict=True):
            if scheme.query_names:
                self.field_bits |= bit
            elif not own:
                always |= bit
        # PERF: a scheme without carriers rides along with the field schemes' bits, and the
        # header schemes' bits carry it through ``first`` and ``others`` below.
        if always:
            self.field_bits |= always
            self.first = (self.first[0] | always, self.first[1])
            self.others = tuple((bit | always, own) for bit, own in self.others)
        callbacks: dict[int, list[Callable[..., Any]]] = {}
        for bit, scheme in zip(bits, schemes, strict=True):
            callbacks.setdefault(bit, []).extend(callback for _, callback, _ in scheme.callbacks)
        self.callbacks: tuple[tuple[int, tuple[Callable[..., Any], ...]], ...] = tuple(
            (bit, tuple(own)) for bit, own in callbacks.items()
        )

    def carried(self, headers: Headers, query: str | None, body: bytes | None) -> int:
        """The bits of the schemes whose credentials a request with ``headers``, the raw
        ``query`` string and ``body`` may carry (see the class); 0 for none."""
        mask = 0
        if headers.has_any(self.lines):
            for bit, own in self.others:
                if headers.has_any(own):
                    mask |= bit
            first_bit, first = self.first
            if not mask or headers.has_any(first):
                mask |= first_bit
        markers = self.query_markers
        # PERF: one regex search, not ``any()`` over a generator (2 Python calls a request
        # with a query string: 29 bytecodes and one call against 61 and three, bench/opcodes.py).
        if markers is not None and (body or (query and markers.search(query) is not None)):
            mask |= self.field_bits
        return mask

    def without(self, mask: int) -> list[Callable[..., Any]]:
        """The callbacks of the schemes whose bits ``mask`` lacks (a request carrying
        ``mask`` skips them)."""
        return [callback for bit, own in self.callbacks if not bit & mask for callback in own]


def _carrier_lines(scheme: AuthScheme) -> frozenset[str]:
    """The lower-case header names carrying ``scheme``'s credentials."""
    return frozenset(
        name.lower() for name in (*scheme.headers, *scheme.compat_headers, *scheme.other_lines)
    )


class AuthSchemes:
    """The authentication schemes of one site, in the order they were added (the order of
    the OpenAPI document's schemes); ``hooks``: the site's hooks."""

    __slots__ = (
        "allow_headers",
        "allow_headers_compat",
        "credential_lines",
        "hooks",
        "rate_keys",
        "rule",
        "scheme_callbacks",
        "schemes",
        "secret_lines",
        "secret_request_lines",
    )

    def __init__(self, hooks: Hooks) -> None:
        #: The site's hooks, which the schemes' callbacks are attached to.
        self.hooks = hooks
        #: The schemes, in the order they were added.
        self.schemes: list[AuthScheme] = []
        #: Whose credentials a request may carry (a new rule per added scheme).
        self.rule = CredentialRule([])
        #: The lower-case header names that may carry credentials of some scheme.
        self.credential_lines: frozenset[str] = frozenset()
        #: The callbacks the schemes attached (skipped for a request without credentials).
        self.scheme_callbacks: list[Callable[..., Any]] = []
        self.allow_headers = self.allow_headers_compat = ""
        #: The lower-case answer header lines that keep an answer from being compressed (a
        #: cookie being set, the schemes' ``secret_answer_headers``).
        self.secret_lines: frozenset[str] = ALWAYS_SECRET_LINES
        #: The lower-case request header lines that keep the answer to a request carrying
        #: one from being compressed (the schemes' ``secret_headers``; often none).
        self.secret_request_lines: frozenset[str] = frozenset()
        #: The schemes' ``rate_key`` functions, in the order the schemes were added.
        self.rate_keys: tuple[Callable[[Request], str | None], ...] = ()
        self._describe()

    def add(self, scheme: AuthScheme) -> AuthScheme:
        """Add ``scheme`` and attach its callbacks to the site's hooks; returns it.

        Raises ValueError for a name already taken, a scheme without callbacks, or a
        callback on another hook."""
        if any(known.name == scheme.name for known in self.schemes):
            raise ValueError(f"an authentication scheme named {scheme.name!r} is already added")
        if not scheme.callbacks:
            raise ValueError(f"the authentication scheme {scheme.name!r} has no callbacks")
        for hook, _, _ in scheme.callbacks:
            if hook not in AUTH_HOOKS:
                raise ValueError(f"an authentication scheme's callback cannot be on {hook!r}")
        self.schemes.append(scheme)
        self._describe()
        for hook, callback, priority in scheme.callbacks:
            self.scheme_callbacks.append(callback)
            self.hooks.add_filter(hook, callback, priority)  # a new version of the hooks
        return scheme

    def _describe(self) -> None:
        """Work out what the REST layer reads per request, once per added scheme."""
        schemes = self.schemes
        self.rule = CredentialRule(schemes)
        self.credential_lines = self.rule.lines
        main = ", ".join(
            [*_header_list([name for s in schemes for name in s.headers]), *CONTENT_ALLOW_HEADERS]
        )
        compat = _header_list([name for s in schemes for name in s.compat_headers])
        self.allow_headers = main
        self.allow_headers_compat = ", ".join([main, *compat])
        self.secret_lines = ALWAYS_SECRET_LINES | {
            name.lower() for s in schemes for name in s.secret_answer_headers
        }
        self.secret_request_lines = frozenset(
            name.lower() for s in schemes for name in s.secret_headers
        )
        self.rate_keys = tuple(s.rate_key for s in schemes if s.rate_key is not None)

    def carries_credentials(self, request: Request) -> bool:
        """Whether ``request`` may carry some scheme's credentials: one of their header
        lines, or (with a scheme taking a query or form field) a body or a query string
        that names such a field or percent-encodes anything (:meth:`CredentialRule.carried`
        is not 0)."""
        return self.rule.carried(request.headers, request.query_string, request.raw_body) != 0

    def lines_carry_credentials(self, headers: Headers, query_string: str | None) -> bool:
        """:meth:`carries_credentials` of a request without a body, asked of its header
        lines and query string before any request is built (an endpoint outside the REST
        routes, as MCP's, whose body is not a form)."""
        return self.rule.carried(headers, query_string, None) != 0

    def openapi_schemes(self) -> dict[str, Any]:
        """The OpenAPI ``components.securitySchemes`` (fresh dicts)."""
        return {
            name: dict(value)
            for scheme in self.schemes
            if scheme.openapi
            for name, value in scheme.openapi.items()
        }

    def openapi_requirements(self) -> list[dict[str, list[str]]]:
        """The OpenAPI ``security`` requirements: anonymous first, then each scheme's."""
        return [
            {},
            *(
                {name: list(scopes) for name, scopes in requirement.items()}
                for scheme in self.schemes
                for requirement in scheme.requirements
            ),
        ]

    def index_entries(self) -> dict[str, Any]:
        """The root index's ``authentication`` entries (scheme name → its entry)."""
        return {scheme.name: dict(scheme.index()) for scheme in self.schemes if scheme.index}
