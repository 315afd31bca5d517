"""The route table: registration in order, options, namespaces and the compiled matcher,
with each route's handlers prepared for dispatch whenever they change."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from svcrest.blocking import offload
from svcrest.bounded import Memo
from svcrest.chains import NOT_AWAITABLE, Chain, Pending, as_pending, is_awaitable, run_chain
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.rest.conditional import guarded
from svcrest.rest.guard import (
    IDEMPOTENCY_MODES,
    WRITE_METHODS,
    RouteGuard,
    idempotent,
    route_guard,
)
from svcrest.rest.invoke import fitted
from svcrest.rest.routing.definitions import (
    Handler,
    RoutePatternError,
    public,
    shared_route_args,
    split_route_args,
)
from svcrest.rest.routing.matcher import (
    CompiledMatcher,
    RoutePattern,
    literal_length,
    literal_prefix,
)
from svcrest.rest.typed import ReturnedSchema
from svcrest.rest.validation import ArgPlan

__all__ = [
    "MEMO_PATH",
    "MEMO_SIZE",
    "AllowShortcut",
    "PreparedHandler",
    "RouteEntry",
    "RouteTable",
    "refusal",
    "select_handler",
]

logger = logging.getLogger("svcrest")

MEMO_SIZE = 2048
MEMO_PATH = 512
#: The most handlers a route's :class:`AllowShortcut` answers for (its values are made for
#: every mask: 2 ** n of them).
_SHORTCUT_MOST = 6


class AllowShortcut(NamedTuple):
    """The route option ``allow_shortcut``: which of the route's handlers the caller may
    use, told without asking their permission callbacks when that is cheaply known (the
    ``Allow`` header, which WordPress's ``rest_send_allow_header`` makes by asking every
    handler's callback, on every answer of the route).

    ``covers``: the permission callbacks it answers for, one a handler in the route's order
    (compared, ``==``, with the route's own whenever its handlers change: a handler added
    or replaced later turns the shortcut off). ``verdicts(request)``: a mask whose bit ``i``
    says handler ``i``'s callback would answer exactly True, or None when it must be asked
    (so are all of them then); it must answer as the callbacks would, and a handler without
    a callback (or ``public``) is always allowed. An exception from it asks the callbacks."""

    covers: tuple[Callable[..., Any] | None, ...]
    verdicts: Callable[[Request], int | None]


def refusal(allowed: Any, request: Request) -> RestError:
    """The error of a permission callback that did not answer exactly True."""
    if isinstance(allowed, RestError):
        return allowed
    status = 403 if request.user.is_logged_in else 401
    return RestError("rest_forbidden", "Sorry, you are not allowed to do that.", {"status": status})


def _refused_for_allow(request: Request) -> bool:
    """A permission callback failed while the Allow header was computed: its methods are
    not allowed. SECURITY: Allow is computed for every answer of a route, errors included,
    so a callback that fails on odd input (a 4,301-digit id given to ``int()``) must not turn
    the answer into a 500; logged without the traceback (a client can cause it at will)."""
    logger.warning(
        "A permission callback failed while computing Allow for %s %s",
        request.method,
        request.route,
        exc_info=False,
    )
    return False


class PreparedHandler:
    """A registered handler made ready for dispatch, when the route table changes.

    ``definition`` is the handler as registered (the dict hooks and responses see);
    ``permission`` its permission callback fitted to the request alone, None without one or
    for ``public`` (it allows everyone: known without a call); ``callback`` the fitted
    callback (None for a handler registered without one). PERF: fitting a callback reads its
    signature; done here, no request looks a callback up (1 to 3 look-ups a request before).
    """

    __slots__ = (
        "arg_plan",
        "args",
        "ask_allow",
        "ask_allow_alone",
        "callback",
        "definition",
        "methods",
        "permission",
        "respond",
    )

    def __init__(
        self,
        definition: Handler,
        options: Mapping[str, Any] | None = None,
        url_names: Iterable[str] | None = None,
    ) -> None:
        self.definition = definition
        self.methods = definition["methods"]
        self.args = definition["args"]
        #: The argument step (defaults validated and sanitised, required names, each
        #: schema's quick checks), prepared here. PERF: not per request.
        self.arg_plan = ArgPlan(self.args, url_names=url_names)
        permission = definition.get("permission_callback")
        self.permission = None if permission is None or permission is public else fitted(permission)
        callback = definition["callback"]
        self.callback = None if callback is None else fitted(callback)
        # An ``etag_callback`` (handler key, else route option) guards the callback with
        # If-None-Match / If-Match (svcrest.rest.conditional); prepared here, not per request.
        route = options or {}
        etag = definition.get("etag_callback", route.get("etag_callback"))
        if etag is not None:
            required = bool(definition.get("require_if_match", route.get("require_if_match")))
            if definition.get("blocking") and callable(etag):
                etag = offload(etag)  # a version read may wait for the store, as the callback
            self.callback = guarded(self.callback, fitted(etag), required)
        # An ``idempotency`` route option reserves a write's key after its validation and
        # permission check, around the callback (svcrest.rest.guard). PERF: only a handler
        # of a write method is wrapped (a read on the same route stays a plain call).
        mode = route.get("idempotency")
        if (
            mode in IDEMPOTENCY_MODES
            and self.callback is not None
            and not WRITE_METHODS.isdisjoint(self.methods)
        ):
            self.callback = idempotent(self.callback, mode)
        methods = tuple(self.methods)
        #: The step of the route's Allow chain asking this handler (see :class:`RouteEntry`),
        #: and the same for a route with this handler alone.
        self.ask_allow = _allow_asker(self.permission, methods, False)
        self.ask_allow_alone = _allow_asker(self.permission, methods, True)
        #: The respond step for one ``rest_dispatch_request`` chain: that chain and the step
        #: (:meth:`respond_for`); one tuple, so threads read a consistent pair.
        self.respond: tuple[Chain | None, Callable[[Request], Any]] = (None, _unprepared)

    def respond_for(
        self, dispatch_request: Chain, route: str
    ) -> tuple[Chain | None, Callable[[Request], Any]]:
        """:attr:`respond` for ``dispatch_request`` (``rest_dispatch_request``'s callbacks as
        the pipeline plan prepared them) on ``route`` (the pattern of this handler's route),
        built once per plan.

        The respond step is called with the request; it answers the handler's result (or an
        awaitable of it) and raises the RestError of a refusal: the permission callback,
        ``rest_dispatch_request``'s callbacks over ``(value, request, route, handler)`` from
        None, and the callback. PERF: without ``rest_dispatch_request`` callbacks the step is
        the callback itself, or the permission gate calling it (no chain run: a Python call
        less a request)."""
        built = self.respond
        if built[0] is dispatch_request:
            return built
        permission, callback = self.permission, self.callback
        step: Callable[[Request], Any]
        if not dispatch_request and callback is not None:
            step = callback if permission is None else _gate(permission, callback)
        else:
            gate = () if permission is None else (_link(_gate(permission, None)),)
            chain = (*gate, *dispatch_request, _caller(callback))
            step = _chained(chain, route, self.definition)
        self.respond = built = (dispatch_request, step)
        return built


def _unprepared(request: Request) -> Any:
    """The respond step before :meth:`PreparedHandler.respond_for` built one (never run)."""
    raise RuntimeError("respond step not prepared")


def _gate(permission: Callable[..., Any], then: Callable[..., Any] | None) -> Callable[..., Any]:
    """A respond step asking the permission callback first; anything but True is refused
    (raised). Then the callback ``then`` answers, or, without one, the step answers None
    (``rest_dispatch_request`` starts from it)."""

    def gate(request: Request) -> Any:
        verdict = permission(request)
        if verdict is not True:
            if type(verdict) not in NOT_AWAITABLE and is_awaitable(verdict):
                return _verdict_later(verdict, request, then)
            raise refusal(verdict, request)
        return None if then is None else then(request)

    return gate


def _link(step: Callable[[Request], Any]) -> Callable[..., Any]:
    """``step`` (of the request alone) as the first link of a respond chain."""

    def link(value: Any, request: Request, route: str, handler: Handler) -> Any:
        return step(request)

    return link


def _chained(chain: Chain, route: str, handler: Handler) -> Callable[[Request], Any]:
    """The respond step running ``chain`` over ``(value, request, route, handler)`` from
    None."""

    def respond(request: Request) -> Any:
        return run_chain(chain, None, request, route, handler)

    return respond


async def _verdict_later(pending: Any, request: Request, then: Callable[..., Any] | None) -> Any:
    """A gate's awaitable verdict, awaited; then as :func:`_gate` goes on."""
    verdict = await pending
    if verdict is not True:
        raise refusal(verdict, request)
    if then is None:
        return None
    result = run_chain((then,), request)
    return await result if type(result) is Pending else result


def _caller(callback: Callable[..., Any] | None) -> Callable[..., Any]:
    """The last step of a respond chain: the handler's callback, unless
    ``rest_dispatch_request`` answered."""

    def call(result: Any, request: Request, route: str, handler: Handler) -> Any:
        if result is not None:
            return result
        if callback is None:
            raise RestError(
                "rest_invalid_handler", "The handler for the route is invalid.", {"status": 500}
            )
        return callback(request)

    return call


def _allow_asker(
    permission: Callable[..., Any] | None, methods: tuple[str, ...], alone: bool
) -> Callable[[dict[str, bool], Request], Any]:
    """A step of a route's Allow chain: the handler's permission callback asked, its verdict
    (only exactly True allows; a callback that raises refuses) noted for each of
    ``methods`` in ``allowed``; a coroutine doing so for an awaitable verdict. For the
    ``alone`` handler of its route, the step answers the Allow value (PERF: no dict to
    merge, no last step)."""
    joined = ", ".join(methods)

    def ask(allowed: dict[str, bool], request: Request) -> Any:
        if permission is None:
            verdict: Any = True
        else:
            try:
                verdict = permission(request)
            except RestError:
                verdict = False
            except Exception:
                verdict = _refused_for_allow(request)
            if type(verdict) not in NOT_AWAITABLE and is_awaitable(verdict):
                return _noted_later(verdict, allowed, methods, alone, request)
        if alone:  # PERF: :func:`_noted` written out (a Python call less a request)
            return joined if verdict is True else ""
        for method in methods:
            allowed[method] = verdict is True
        return allowed

    return ask


def _noted(verdict: Any, allowed: dict[str, bool], methods: tuple[str, ...], alone: bool) -> Any:
    """An Allow step's answer once its verdict is known (see :func:`_allow_asker`)."""
    if alone:
        return ", ".join(methods) if verdict is True else ""
    for method in methods:
        allowed[method] = verdict is True
    return allowed


async def _noted_later(
    pending: Any, allowed: dict[str, bool], methods: tuple[str, ...], alone: bool, request: Request
) -> Any:
    """An Allow step's awaitable verdict, awaited and noted (see :func:`_allow_asker`)."""
    try:
        verdict = await pending
    except RestError:
        verdict = False
    except Exception:
        verdict = _refused_for_allow(request)
    return _noted(verdict, allowed, methods, alone)


def _allowed_value(allowed: dict[str, bool], request: Request) -> str:
    """The last step of an Allow chain: the allowed methods, in order, ", "-joined."""
    # PERF: filter in C, not a comprehension's frame.
    return ", ".join(filter(allowed.__getitem__, allowed))


@dataclass(slots=True)
class RouteEntry:
    """One full route: its pattern, its handlers in order and its route options, and the
    handlers prepared for dispatch (:meth:`prepare`, after every change of ``handlers``)."""

    route: str
    namespace: str
    pattern: RoutePattern
    handlers: list[Handler] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    #: The route-level ``args`` of every registration of this route, which every handler
    #: shares (under its own definitions): a handler registered before or after them still
    #: gets ``id`` validated and coerced from ``(?P<id>\d+)``.
    shared_args: dict[str, Any] = field(default_factory=dict)
    #: The handlers prepared, in order.
    prepared: tuple[PreparedHandler, ...] = field(init=False, default=(), repr=False, compare=False)
    #: The Allow value when no handler has a permission callback (``public`` counts as
    #: none: it allows everyone): every method in order of first appearance, ", "-joined;
    #: None when some handler has one (it must be asked on each request). PERF: a plain
    #: field, read by the Allow header on every request.
    permissionless_allow: str | None = field(init=False, default=None, repr=False, compare=False)
    #: When some handler has a permission callback: the chain over ``(allowed, request)``
    #: that asks each handler in order (a method in several handlers takes the last one's
    #: answer) and answers the Allow value (run with :func:`svcrest.chains.run_chain` from
    #: an empty dict: :meth:`allow_value`).
    allow_chain: Chain = field(init=False, default=(), repr=False, compare=False)
    #: The route's :class:`AllowShortcut`'s ``verdicts`` while it covers the handlers, else
    #: None; :attr:`allow_values` holds the Allow value of each of its masks.
    allow_verdicts: Callable[[Request], int | None] | None = field(
        init=False, default=None, repr=False, compare=False
    )
    allow_values: tuple[str, ...] = field(init=False, default=(), repr=False, compare=False)
    #: The ``idempotency`` and ``rate_limit`` options (``svcrest.rest.guard``); None
    #: without them.
    guard: RouteGuard | None = field(init=False, default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.prepare()

    def prepare(self) -> None:
        """Prepare the handlers, :attr:`permissionless_allow` and :attr:`allow_chain` (after
        ``handlers`` changed)."""
        url_names = tuple(self.pattern.tail.groupindex)
        prepared = tuple(
            PreparedHandler(handler, self.options, url_names) for handler in self.handlers
        )
        value: str | None = None
        chain: Chain = ()
        if all(handler.permission is None for handler in prepared):
            methods = (method for handler in prepared for method in handler.methods)
            value = ", ".join(dict.fromkeys(methods))
        elif len(prepared) == 1:
            chain = (prepared[0].ask_allow_alone,)
        else:
            chain = (*(handler.ask_allow for handler in prepared), _allowed_value)
        self.prepared, self.permissionless_allow, self.allow_chain = prepared, value, chain
        self.allow_verdicts, self.allow_values = _shortcut(self.options, prepared, chain)
        self.guard = route_guard(self.options)

    def allow_value(self, request: Request) -> Any:
        """The ``Allow`` value of this route for the caller of ``request``: the methods it
        may use, in order, ", "-joined ("" for none); a
        :data:`~svcrest.chains.Pending` of it while an ``async`` permission callback answers.

        The one answer of the Allow header (the default ``rest_post_dispatch`` filter) and
        of the 405's: remembered for a route without permission callbacks
        (:attr:`permissionless_allow`), else what they answer (:attr:`allow_chain`: only
        exactly True allows; a method in several handlers takes the last one's answer)."""
        remembered = self.permissionless_allow
        if remembered is not None:
            return remembered
        verdicts = self.allow_verdicts
        if verdicts is not None:
            # PERF: the route's shortcut, when it knows (a StoreCollection item GET:
            # 191,063 → 175,631 instructions, bench/budget.py: three permission checks and
            # the chain's steps not run). A route without one pays this test (the cookie +
            # nonce GET 109,225 → 109,275); tested only for routes of several handlers, the
            # item GET counted 174,978 against 174,154 here, so it stays first.
            try:
                mask = verdicts(request)
            except Exception:  # the callbacks asked: they answer a failure as they do
                mask = None
            if mask is not None:
                return self.allow_values[mask]
        chain = self.allow_chain
        if len(chain) > 1:
            return run_chain(chain, {}, request)
        # PERF: a route's one handler asked directly (no runner call: a cookie + nonce GET
        # ~1,000 instructions less, bench/budget.py); it answers the value itself.
        value = chain[0]({}, request)
        return value if type(value) is str else as_pending(value)


def _shortcut(
    options: Mapping[str, Any], prepared: tuple[PreparedHandler, ...], chain: Chain
) -> tuple[Callable[[Request], int | None] | None, tuple[str, ...]]:
    """A route's :class:`AllowShortcut` (its ``verdicts``, and the Allow value of each mask)
    when ``options`` hold one covering the ``prepared`` handlers' permission callbacks and
    some handler has one (``chain``); else ``(None, ())``."""
    shortcut = options.get("allow_shortcut")
    if not chain or not isinstance(shortcut, AllowShortcut) or len(prepared) > _SHORTCUT_MOST:
        return None, ()
    own = tuple(handler.definition.get("permission_callback") for handler in prepared)
    if tuple(shortcut.covers) != own:
        return None, ()
    values = []
    for mask in range(1 << len(prepared)):
        allowed: dict[str, bool] = {}  # as the chain notes them: the last handler's answer
        for index, handler in enumerate(prepared):
            for method in handler.methods:
                allowed[method] = bool(mask >> index & 1)
        values.append(", ".join(method for method, yes in allowed.items() if yes))
    return shortcut.verdicts, tuple(values)


def select_handler(
    matches: tuple[tuple[RouteEntry, dict[str, str]], ...], method: str
) -> tuple[RouteEntry, PreparedHandler, dict[str, str]] | None:
    """The first handler, over the matching routes in order, that serves ``method``, with its
    route and URL params (shared: copy before changing); None when there is none (a 405).

    HEAD is served by a GET handler unless the handler declares HEAD itself.
    """
    for entry, url_params in matches:
        for handler in entry.prepared:
            allowed = handler.methods
            if allowed.get(method) or (
                method == "HEAD" and allowed.get("GET") and not allowed.get("HEAD")
            ):
                return entry, handler, url_params
    return None


def _method_and_path_length(key: tuple[str, str]) -> int:
    return len(key[0]) + len(key[1])


class RouteTable:
    """Routes in registration order; compiles its matcher on first use after a change.

    SECURITY/PERF: compiling happens under a lock, once per change of the table, never per
    request.
    """

    def __init__(self) -> None:
        self._entries: dict[str, RouteEntry] = {}
        self._ordered: list[RouteEntry] = []
        self._namespaces: dict[str, None] = {}
        self._matcher: CompiledMatcher | None = None
        # The matcher the remembered matches were found with, and path → matches.
        self._memo: tuple[
            CompiledMatcher | None, Memo[str, tuple[tuple[RouteEntry, dict[str, str]], ...]]
        ] = (None, Memo(MEMO_SIZE, MEMO_PATH))
        # The table's version the chosen handlers were found in, and (method, path) → the
        # handler chosen (:meth:`handler_for`).
        self._chosen: tuple[
            int, Memo[tuple[str, str], tuple[RouteEntry, PreparedHandler, dict[str, str]]]
        ] = (-1, Memo(MEMO_SIZE, MEMO_PATH, _method_and_path_length))
        self._lock = threading.Lock()
        #: Counts the changes of the table (each ``add``): what is derived from the routes
        #: outside dispatch (the MCP tools) is rebuilt when it moves.
        self.version = 0
        #: ``get(route)``: the entry registered under exactly ``route``, or None. PERF: the
        #: entries' own ``dict.get`` (no Python frame: the Allow header asks on every request).
        self.get: Callable[[str], RouteEntry | None] = self._entries.get

    def add(
        self, namespace: str, full_route: str, args: Any, *, override: bool = False
    ) -> RouteEntry:
        """Register or merge ``full_route``; raises ``RouteDefinitionError`` for a bad
        definition or an invalid regular expression (nothing is registered then)."""
        handlers, options = split_route_args(args)
        shared = shared_route_args(args)
        try:
            pattern = RoutePattern(full_route)
        except re.error as exc:
            # The error is in the regex tail: its position counted in the full route.
            offset = literal_length(literal_prefix(full_route), full_route)
            position = None if exc.pos is None else offset + exc.pos
            raise RoutePatternError(full_route, exc.msg, position) from None
        options.setdefault("namespace", namespace)
        route_guard(options)  # a bad idempotency or rate_limit option raises here
        with self._lock:
            entry = self._entries.get(full_route)
            if entry is None:
                entry = RouteEntry(full_route, namespace, pattern, handlers, options, shared)
                self._entries[full_route] = entry
                self._ordered.append(entry)
                self._matcher = None
            else:
                if override:
                    entry.handlers = handlers
                    entry.options = options
                    entry.namespace = namespace
                    entry.shared_args = shared
                else:
                    if isinstance(options.get("schema"), ReturnedSchema) and entry.options.get(
                        "schema"
                    ):
                        # A schema a return annotation gives does not replace the route's:
                        # the new handlers document their own answers (response_schema).
                        del options["schema"]
                    entry.handlers.extend(handlers)
                    entry.options.update(options)
                    entry.shared_args.update(shared)
                    for handler in entry.handlers:
                        handler["args"] = {**entry.shared_args, **handler["args"]}
                entry.prepare()  # a new entry is prepared when it is made
            if namespace:
                self._namespaces.setdefault(namespace, None)
            self.version += 1
        return entry

    def __iter__(self) -> Iterator[RouteEntry]:
        return iter(list(self._ordered))

    def __len__(self) -> int:
        return len(self._ordered)

    @property
    def namespaces(self) -> list[str]:
        """Namespaces in registration order."""
        return list(self._namespaces)

    def _compiled(self) -> CompiledMatcher:
        matcher = self._matcher
        if matcher is None:
            with self._lock:
                matcher = self._matcher
                if matcher is None:
                    matcher = CompiledMatcher([entry.pattern for entry in self._ordered])
                    self._matcher = matcher
        return matcher

    def matches(self, path: str) -> tuple[tuple[RouteEntry, dict[str, str]], ...]:
        """The entries whose pattern matches ``path`` fully, in registration order, with their
        URL params; remembered for recently seen paths, so the params dicts are shared with
        the memory (copy before changing them).

        PERF: a site serves the same few paths again and again; a remembered path costs one
        dict lookup instead of a trie walk and a regex (~2 µs). SECURITY: the memory is
        bounded (``MEMO_SIZE`` paths of at most ``MEMO_PATH`` characters, emptied when
        full), so unique paths cannot grow it; it is dropped whenever the table changes.
        """
        matcher = self._matcher or self._compiled()
        memo = self._memo
        if memo[0] is not matcher:
            memo = self._memo = (matcher, Memo(MEMO_SIZE, MEMO_PATH))
        found = memo[1].get(path)
        if found is None:
            ordered = self._ordered
            found = memo[1].keep(
                path,
                tuple((ordered[index], params) for index, params in matcher.iter_matches(path)),
            )
        return found

    def handler_for(
        self, path: str, method: str
    ) -> tuple[RouteEntry, PreparedHandler, dict[str, str]] | None:
        """:func:`select_handler` over :meth:`matches`: the handler serving ``method`` on
        ``path``, its route and URL params (shared: copy before changing them); None when
        there is none (ask :meth:`matches` which answer that is: 404 or 405).

        PERF: remembered as the matches are (a Python call less a request than matching
        and choosing: a WSGI GET 94,468 → 92,962 instructions, bench/budget.py's child).
        SECURITY: bounded as they are (a method counts in the key's length), and dropped
        whenever the table changes (:attr:`version`)."""
        memo = self._chosen
        version = self.version
        if memo[0] != version:  # a merge prepares a route's handlers again: by version
            memo = self._chosen = (version, Memo(MEMO_SIZE, MEMO_PATH, _method_and_path_length))
        key = (method, path)
        # PERF: the memo's ``get`` read, then called (see :class:`~svcrest.bounded.Memo`).
        chosen = memo[1].get
        found = chosen(key)
        if found is None:
            found = select_handler(self.matches(path), method)
            if found is not None:
                memo[1].keep(key, found)
        return found

    def first_match(self, path: str) -> tuple[RouteEntry, dict[str, str]] | None:
        """The first entry matching ``path`` (the route OPTIONS describes), with its own copy
        of the URL params."""
        found = self.matches(path)
        if not found:
            return None
        entry, params = found[0]
        return entry, dict(params)
