"""The REST pipeline's hooks, prepared once per version of the registry.

The pipeline runs each of its hooks' chains with :func:`svcrest.chains.run_chain` (awaiting
an ``async`` callback's answer where it comes), over callbacks already fitted to the hook's
arguments. A hook with one extra callback therefore costs that callback's call, nothing more.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from svcrest.chains import Chain, run_chain
from svcrest.hooks import Hooks
from svcrest.http.request import Request
from svcrest.rest.auth_schemes import AUTH_HOOKS, AuthSchemes, adopt_user

__all__ = ["PIPELINE_HOOKS", "PipelinePlan", "leaves_query", "options_only", "query_only"]

F = TypeVar("F", bound=Callable[..., Any])
_OPTIONS_ONLY = "svc_options_only"
_QUERY_ONLY = "svc_query_only"
_LEAVES_QUERY = "svc_leaves_query"
# Marked functions that take no attributes (compiled by mypyc, in the opt-in compiled build),
# per marker: set at import by the modules that define them (never per request).
_COMPILED_MARKS: dict[str, set[Callable[..., Any]]] = {
    _OPTIONS_ONLY: set(),
    _QUERY_ONLY: set(),
    _LEAVES_QUERY: set(),
}


def _mark(function: F, marker: str) -> F:
    try:
        setattr(function, marker, True)
    except AttributeError:  # a compiled function
        _COMPILED_MARKS[marker].add(function)
    return function


def options_only(function: F) -> F:
    """Mark a ``rest_pre_dispatch`` callback that returns its first argument unchanged, and
    does nothing else, for every method but OPTIONS (the default OPTIONS filter). While such
    callbacks run first in the chain (nothing before them can change the method), a request
    of another method skips them: the same answer without their calls."""
    return _mark(function, _OPTIONS_ONLY)


def query_only(function: F) -> F:
    """Mark a ``rest_post_dispatch`` callback that returns its first argument unchanged, and
    does nothing else, for a request without query parameters (the default ``_fields``
    filter). While only callbacks marked :func:`leaves_query` (or this) run before it, a
    request without a query string skips it: the same answer without its call."""
    return _mark(function, _QUERY_ONLY)


def leaves_query(function: F) -> F:
    """Mark a ``rest_post_dispatch`` callback that never gives the request a query parameter
    (the default Allow filter): a :func:`query_only` callback after it may still be
    skipped."""
    return _mark(function, _LEAVES_QUERY)


def _marked(callback: Callable[..., Any], marker: str) -> bool:
    if getattr(callback, marker, False):
        return True
    compiled = _COMPILED_MARKS[marker]
    if not compiled:
        return False
    try:
        return callback in compiled
    except TypeError:  # an unhashable callable object
        return False


def _without_leading(chain: Chain, marker: str) -> Chain:
    """``chain`` without the callbacks marked ``marker`` that run before any other."""
    start = 0
    while start < len(chain) and _marked(chain[start], marker):
        start += 1
    return chain[start:]


def _without_query_only(chain: Chain) -> Chain:
    """``chain`` without the :func:`query_only` callbacks that only callbacks leaving the
    query alone run before (see :func:`leaves_query`)."""
    kept: list[Callable[..., Any]] = []
    clean = True
    for callback in chain:
        if clean and _marked(callback, _QUERY_ONLY):
            continue
        clean = clean and _marked(callback, _LEAVES_QUERY)
        kept.append(callback)
    return tuple(kept)


#: Each hook of the pipeline and how many arguments its callbacks receive, in run order.
PIPELINE_HOOKS: tuple[tuple[str, int], ...] = (
    ("determine_current_user", 2),
    ("rest_authentication_errors", 2),
    ("rest_pre_dispatch", 3),
    ("rest_request_before_callbacks", 3),
    ("rest_dispatch_request", 4),
    ("rest_request_after_callbacks", 3),
    ("rest_post_dispatch", 3),
    ("rest_pre_serve_request", 4),
)


class PipelinePlan:
    """The fitted callbacks of every pipeline hook for one version of ``hooks``."""

    __slots__ = (
        "after_callbacks",
        "after_default",
        "authenticate_by_carried",
        "authentication",
        "authentication_anonymous",
        "authentication_by_carried",
        "authentication_errors",
        "before_callbacks",
        "default_finish",
        "default_step",
        "determine_current_user",
        "dispatch_request",
        "post_dispatch",
        "post_dispatch_after_default",
        "post_dispatch_no_query",
        "pre_dispatch",
        "pre_dispatch_no_options",
        "pre_serve",
        "pre_serve_after_default",
        "rate_limit",
        "rule",
        "schemes",
        "version",
    )

    def __init__(
        self,
        hooks: Hooks,
        schemes: AuthSchemes | None = None,
        default_finish: tuple[Chain, Chain] | None = None,
        default_steps: tuple[Callable[..., Any], Callable[[Chain, Chain], Any]] | None = None,
    ) -> None:
        self.version = hooks.version  # read first: a change while preparing is seen next time
        chains = [hooks.prepared(name, count) for name, count in PIPELINE_HOOKS]
        (
            self.determine_current_user,
            self.authentication_errors,
            self.pre_dispatch,
            self.before_callbacks,
            self.dispatch_request,
            self.after_callbacks,
            self.post_dispatch,
            self.pre_serve,
        ) = chains
        #: Authentication as one chain over ``(value, request)``, started from the current
        #: user: ``determine_current_user``, :func:`adopt_user`, ``rest_authentication_errors``.
        self.authentication: Chain = (
            *self.determine_current_user,
            adopt_user,
            *self.authentication_errors,
        )
        #: ``rest_post_dispatch`` for a request without query parameters (the default
        #: ``_fields`` filter left out: PERF, see :func:`query_only`).
        self.post_dispatch_no_query = _without_query_only(self.post_dispatch)
        #: Whether ``rest_post_dispatch`` (without a query string) and
        #: ``rest_pre_serve_request`` each start with their default filter (the chains of
        #: ``default_finish``): the pipeline then runs their work as one step, and the
        #: callbacks after them (:attr:`post_dispatch_after_default`,
        #: :attr:`pre_serve_after_default`) around it.
        self.default_finish = default_finish is not None and default_finish == (
            self.post_dispatch_no_query[:1],
            self.pre_serve[:1],
        )
        #: ``rest_post_dispatch``'s callbacks after its default one (without a query string).
        self.post_dispatch_after_default: Chain = self.post_dispatch_no_query[1:]
        #: ``rest_pre_serve_request``'s callbacks after its default one.
        self.pre_serve_after_default: Chain = self.pre_serve[1:]
        #: Whether either hook has callbacks after its default one.
        self.after_default = bool(self.post_dispatch_after_default or self.pre_serve_after_default)
        #: The default step the pipeline runs, None when :attr:`default_finish` is False: of
        #: ``default_steps``, the first (it answers the response's own lines), or, while a
        #: hook has callbacks after its default one, the step the second makes of them (it
        #: answers the response and its lines). PERF: chosen here, not per request.
        self.default_step: Callable[..., Any] | None = None
        if self.default_finish and default_steps is not None:
            step, with_callbacks = default_steps
            self.default_step = (
                with_callbacks(self.post_dispatch_after_default, self.pre_serve_after_default)
                if self.after_default
                else step
            )
        #: ``svc_rate_limit`` over ``(value, request)`` (``svcrest.rest.guard``).
        self.rate_limit: Chain = hooks.prepared("svc_rate_limit", 2)
        #: ``rest_pre_dispatch`` for a request whose method is not OPTIONS.
        self.pre_dispatch_no_options = _without_leading(self.pre_dispatch, _OPTIONS_ONLY)
        #: The site's authentication schemes (an empty registry when none is given).
        self.schemes = schemes if schemes is not None else AuthSchemes(hooks)
        rule = self.schemes.rule
        #: Whose credentials a request may carry (the rule the chains below were prepared
        #: for): ``rule.carried(headers, query, body)`` answers the bits that index them.
        self.rule = rule
        #: Authentication per set of carried credentials (indexed by ``carried``'s bits):
        #: the chain without the callbacks of the schemes the request carries nothing of,
        #: None when nothing but the user's adoption is left (the request keeps the current
        #: user without a call). PERF: a cookie request skips the application password
        #: scheme's two callbacks.
        skipped = [rule.without(mask) for mask in range(1 << rule.width)]
        self.authentication_by_carried: tuple[Chain | None, ...] = tuple(
            self._chain_for(hooks, own) for own in skipped
        )
        #: What the pipeline calls per set of carried credentials, ``(user, request)`` →
        #: the verdict (None where :attr:`authentication_by_carried` is None): a scheme's
        #: ``alone`` function when the chain holds that scheme's callbacks and nothing else,
        #: else the chain through :func:`~svcrest.chains.run_chain`. PERF: a cookie + nonce
        #: GET 126,042 → 122,847 instructions (bench/budget.py's auth child).
        self.authenticate_by_carried: tuple[Callable[[Any, Request], Any] | None, ...] = tuple(
            None if chain is None else self._alone(hooks, own) or partial(run_chain, chain)
            for chain, own in zip(self.authentication_by_carried, skipped, strict=True)
        )
        #: Authentication for a request that carries no scheme's credentials: the chain
        #: without the schemes' callbacks, None when none other is left.
        self.authentication_anonymous = self.authentication_by_carried[0]

    def _chain_for(self, hooks: Hooks, skipped: list[Callable[..., Any]]) -> Chain | None:
        user = _others(hooks, "determine_current_user", self.determine_current_user, skipped)
        errors = _others(hooks, "rest_authentication_errors", self.authentication_errors, skipped)
        if not user and not errors:
            return None
        return (*user, adopt_user, *errors)

    def _alone(
        self, hooks: Hooks, skipped: list[Callable[..., Any]]
    ) -> Callable[[Any, Request], Any] | None:
        """The ``alone`` function of the scheme whose callbacks are the only ones left on
        the authentication hooks once ``skipped`` are left out; None when there is none."""
        left = {
            hook: Counter(c for c in hooks.registered(hook) if c not in skipped)
            for hook in AUTH_HOOKS
        }
        for scheme in self.schemes.schemes:
            if scheme.alone is not None and left == {
                hook: Counter(c for on, c, _ in scheme.callbacks if on == hook)
                for hook in AUTH_HOOKS
            }:
                return scheme.alone
        return None


def _others(hooks: Hooks, name: str, chain: Chain, own: list[Callable[..., Any]]) -> Chain:
    """The fitted callbacks of ``chain`` (hook ``name``) whose registered callback is not one
    of ``own``."""
    registered = hooks.registered(name)
    return tuple(
        fitted for fitted, callback in zip(chain, registered, strict=True) if callback not in own
    )
