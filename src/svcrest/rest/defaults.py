"""The default filters (WordPress's ``default-filters.php`` for REST), attached by one function
on ``rest_api_init``.

- OPTIONS answered with route help data (``rest_handle_options_request``) on
  ``rest_pre_dispatch``;
- the Allow header (``rest_send_allow_header``) and ``_fields`` filtering on
  ``rest_post_dispatch``;
- CORS headers (``rest_send_cors_headers``) on ``rest_pre_serve_request``;
- deprecation headers on ``deprecated_function_run`` / ``deprecated_argument_run``,
  with the ``deprecated_*_trigger_error`` filters answering False during REST requests.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, Final, Protocol

from svcrest.chains import NOT_AWAITABLE, Chain, Pending, is_awaitable, run_chain, run_chain_async
from svcrest.hooks import Hooks
from svcrest.http.context import current_context, is_rest_request
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.response import Response, rest_ensure_response
from svcrest.rest.fields import filter_response_fields
from svcrest.rest.plan import leaves_query, options_only, query_only
from svcrest.rest.routing.definitions import Handler
from svcrest.rest.routing.table import RouteTable
from svcrest.rest.wire import prepared_lines


class ServerView(Protocol):
    """What the default filters use of the REST server (``svcrest.rest.server.RestServer``
    satisfies it; a Protocol, so this module does not import the server)."""

    hooks: Hooks
    table: RouteTable
    #: The site's CORS lines (:func:`site_cors`).
    cors: CorsLines

    def get_data_for_route(
        self, route: str, handlers: list[Handler], context: str = "view"
    ) -> dict[str, Any] | None:
        """WordPress's route data (OPTIONS help)."""
        ...


__all__ = [
    "CORS_ALLOW_METHODS",
    "DEFAULT_FINISH",
    "DEFAULT_STEPS",
    "WORDPRESS_CORS_ALLOW_METHODS",
    "CorsLines",
    "StepWithCallbacks",
    "cors_allow_methods_value",
    "cors_lines",
    "default_own_lines",
    "register_default_filters",
    "rest_handle_deprecated_argument",
    "rest_handle_deprecated_function",
    "rest_handle_options_request",
    "rest_send_allow_header",
    "rest_send_cors_headers",
    "sanitize_origin",
    "site_cors",
    "step_with_callbacks",
]

#: ``Access-Control-Allow-Methods`` by default: WordPress 4.4's list, which the spec keeps
#: (a browser then refuses a cross-origin PATCH at its preflight).
CORS_ALLOW_METHODS = "POST, GET, OPTIONS, PUT, DELETE"
#: Current WordPress's list (``rest_send_cors_headers``, with PATCH), sent under
#: ``App(wordpress_compat=True)`` unless ``cors_allow_methods`` says otherwise.
WORDPRESS_CORS_ALLOW_METHODS = "OPTIONS, GET, POST, PUT, PATCH, DELETE"
#: An HTTP method name (RFC 9110's token): no spaces, commas or control characters.
_METHOD_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_ORIGIN = re.compile(
    r"https?://(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*"
    r"[A-Za-z0-9])?)*\.?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?",
    re.IGNORECASE,
)


@options_only
def rest_handle_options_request(result: Any, server: ServerView, request: Request) -> Any:
    """Answer OPTIONS with the help data of the first matching route (as WordPress does)."""
    if result is not None or request.method != "OPTIONS":
        return result
    response = Response([])
    match = server.table.first_match(request.route)
    if match is not None:
        entry, url_params = match
        # The URL captures are the request's params, as in a normal dispatch, so permission
        # callbacks asked for the Allow header can read them.
        request.url_params = url_params
        response.matched_route = entry.route
        data = server.get_data_for_route(entry.route, entry.handlers, "help")
        response.data = data if data is not None else []
    return response


@leaves_query
def rest_send_allow_header(response: Any, server: ServerView, request: Request) -> Any:
    """The methods the caller may use on the matched route, as ``Allow`` (as WordPress does).

    Returns the response, or a coroutine of it when a permission callback is async.
    """
    if not isinstance(response, Response) or not response.matched_route:
        return response
    entry = server.table.get(response.matched_route)
    if entry is None:
        return response
    value = entry.allow_value(request)  # no header when nothing is allowed
    if type(value) is Pending:
        return _allow_later(value, response)
    if value:
        response.set_header_line("Allow", value)
    return response


async def _allow_later(pending: Any, response: Response) -> Response:
    """:func:`rest_send_allow_header` once an ``async`` permission callback has answered."""
    value = await pending
    if value:
        response.set_header_line("Allow", value)
    return response


@query_only
def rest_filter_response_fields(response: Any, server: ServerView, request: Request) -> Any:
    """WordPress's ``rest_filter_response_fields``: with the query parameter ``_fields``,
    keep only the requested (possibly nested, dotted) fields of the answer, or of each
    object of a list answer. An error, and the answer of a handler registered with
    ``fields_applied=True`` (its callback applied ``_fields`` itself, to the parts they
    name), are left whole; the request is never changed."""
    if not request.may_have_query:  # PERF: no query string, no ``_fields``
        return response
    if not isinstance(response, Response) or response.is_error():
        return response
    fields = request.query_param("_fields")
    if fields is None:
        return response
    handler = response.matched_handler
    if handler is not None and handler.get("fields_applied") is True:
        return response
    response.data = filter_response_fields(response.data, fields)
    return response


#: The longest Origin echoed (a scheme, a 253-character DNS name and a port fit easily).
MAX_ORIGIN_LENGTH = 300


def sanitize_origin(origin: str) -> str | None:
    """The Origin to echo, or None. SECURITY: only ``http``/``https`` origins made of a host
    and an optional port, or the literal ``null``; anything with control characters, a path,
    credentials or non-ASCII characters is refused (never echoed, never split a header).
    Longer values are refused before any other work."""
    if origin == "null":
        return origin
    if len(origin) > MAX_ORIGIN_LENGTH or not origin.isascii():
        return None
    return origin if _ORIGIN.fullmatch(origin) else None


def cors_allow_methods_value(methods: str | Iterable[str]) -> str:
    """The ``Access-Control-Allow-Methods`` value of ``methods`` (a comma-separated string or
    names), upper-cased, without repeats, in the order given. Raises ValueError for an empty
    list or a name that is not an HTTP method token. SECURITY: tokens only, so no value can
    split the header."""
    names = methods.split(",") if isinstance(methods, str) else list(methods)
    kept: dict[str, None] = {}
    for name in names:
        token = name.strip() if isinstance(name, str) else name
        if not isinstance(token, str) or not _METHOD_TOKEN.fullmatch(token):
            raise ValueError(f"cors_allow_methods: {token!r} is not an HTTP method name")
        kept[token.upper()] = None
    if not kept:
        raise ValueError("cors_allow_methods must name at least one method")
    return ", ".join(kept)


# PERF: an Origin → the CORS lines to send for it (a regex and three tuples, ~1.5 µs, saved
# for the few origins a site sees). SECURITY: bounded in entries and bytes: only values of at
# most MAX_ORIGIN_LENGTH characters are kept, and the memory is emptied when full.
_CORS_LINES_MAX = 256
#: The names of the CORS lines :func:`rest_send_cors_headers` sends, in their order.
_CORS_NAMES: Final = (
    "Access-Control-Allow-Origin",
    "Access-Control-Allow-Methods",
    "Access-Control-Allow-Credentials",
)


class _CorsMemo(dict[str, tuple[tuple[str, str], ...]]):
    """Origin → CORS lines, computed on a miss (:meth:`__missing__`): a hit is the dict's
    own look-up, in C. SECURITY: bounded in entries and bytes (see :data:`_CORS_LINES_MAX`)."""

    __slots__ = ("methods",)

    def __init__(self, methods: str) -> None:
        super().__init__()
        self.methods = methods

    def __missing__(self, origin: str) -> tuple[tuple[str, str], ...]:
        allowed = sanitize_origin(origin)
        lines: tuple[tuple[str, str], ...] = ()
        if allowed is not None:
            lines = tuple(zip(_CORS_NAMES, (allowed, self.methods, "true"), strict=True))
        if len(origin) <= MAX_ORIGIN_LENGTH:
            if len(self) >= _CORS_LINES_MAX:
                self.clear()
            self[origin] = lines
        return lines


class _OwnLinesMemo(dict[tuple[str, str], tuple[tuple[str, str], ...]]):
    """(``Allow`` value, Origin) → a response's own lines after the default filters (the
    ``Allow`` line, then the CORS lines), made once and known to the answer step by identity
    (:func:`~svcrest.rest.wire.prepared_lines`). SECURITY: bounded like :class:`_CorsMemo`
    (the ``Allow`` values are the site's routes' method lists)."""

    __slots__ = ("cors",)

    def __init__(self, cors: _CorsMemo) -> None:
        super().__init__()
        self.cors = cors

    def __missing__(self, key: tuple[str, str]) -> tuple[tuple[str, str], ...]:
        value, origin = key
        lines = self.cors[origin]
        own = (("Allow", value), *lines) if value else lines
        if len(origin) <= MAX_ORIGIN_LENGTH:
            if len(self) >= _CORS_LINES_MAX:
                self.clear()
            self[key] = own = prepared_lines(own)
        return own


class _AllowLinesMemo(dict[str, tuple[tuple[str, str], ...]]):
    """``Allow`` value → the one ``Allow`` line (none for ""), made once and known to the
    answer step by identity (:func:`~svcrest.rest.wire.prepared_lines`). SECURITY: bounded
    (the values are the routes' method lists, each a handful of names)."""

    __slots__ = ()

    def __missing__(self, value: str) -> tuple[tuple[str, str], ...]:
        own = prepared_lines((("Allow", value),) if value else ())
        if len(self) >= _CORS_LINES_MAX:
            self.clear()
        self[value] = own
        return own


#: The ``Allow`` lines of responses without an Origin to answer (see :class:`_AllowLinesMemo`).
_ALLOW_LINES = _AllowLinesMemo()


class CorsLines:
    """The CORS header lines a site sends for each Origin, with its
    ``Access-Control-Allow-Methods`` (one per site: ``App(cors_allow_methods=...)``).

    ``lines(origin)`` answers them: remembered for the few origins a site sees (one look-up
    in C), computed and kept on the first request from an origin. ``own[value, origin]``
    answers a response's own lines after the default filters (its ``Allow`` line of
    ``value``, none for "", then the CORS lines), likewise remembered."""

    __slots__ = ("lines", "memo", "methods", "own")

    def __init__(self, methods: str = CORS_ALLOW_METHODS) -> None:
        self.methods = methods
        self.memo = _CorsMemo(methods)
        self.own = _OwnLinesMemo(self.memo)
        #: ``lines(origin)``: the CORS header lines answering ``origin``; none for an origin
        #: not echoed. PERF: the memory's own bound ``__getitem__`` (no Python frame on a
        #: hit; a method computing on a miss cost a request with an Origin a Python call).
        self.lines: Callable[[str], tuple[tuple[str, str], ...]] = self.memo.__getitem__


#: The lines of a server whose site names no methods (the spec's default list).
_DEFAULT_CORS = CorsLines()


def site_cors(site: Any) -> CorsLines:
    """The CORS lines of ``site`` (its ``cors``), or the spec's default methods' for a site
    settings object without any: what a REST server holds as its ``cors``."""
    cors: CorsLines | None = getattr(site, "cors", None)
    return cors or _DEFAULT_CORS


def cors_lines(origin: str) -> tuple[tuple[str, str], ...]:
    """The CORS header lines answering ``origin`` with the default methods; none for an
    origin not echoed."""
    return _DEFAULT_CORS.lines(origin)


def rest_send_cors_headers(served: Any, response: Any, request: Request, server: Any) -> Any:
    """With an Origin, allow it (sanitised), the site's CORS methods and credentials (as
    WordPress does)."""
    origin = request.headers.get_joined("origin")
    if origin is not None and isinstance(response, Response):
        lines = server.cors.lines(origin)
        if lines:
            # PERF: usually none is set yet, and adding beats three replacing writes.
            if response.has_header("access-control-allow-origin"):
                headers = response.headers
                for name, value in lines:
                    headers[name] = value
            else:
                response.add_header_lines(lines)
    return served


def _cors_of(request: Request, server: Any) -> tuple[tuple[str, str], ...]:
    """The CORS lines :func:`rest_send_cors_headers` adds for ``request`` (none without an
    ``Origin``, or for one not echoed)."""
    origin = request.headers.get_joined("origin")
    if origin is None:
        return ()
    cors: CorsLines = server.cors
    return cors.lines(origin)


def default_own_lines(response: Response, server: Any, request: Request, cors: bool = True) -> Any:
    """The own header lines ``response`` has after the default ``rest_post_dispatch`` and
    ``rest_pre_serve_request`` filters, when each is its hook's first callback (the
    pipeline's plan says so: :data:`DEFAULT_FINISH`): ``Allow``
    (:func:`rest_send_allow_header`), then, unless ``cors`` is False (callbacks of
    ``rest_post_dispatch`` run before them), the CORS lines (:func:`rest_send_cors_headers`),
    as one step. A tuple, or an awaitable of it while an ``async`` permission callback
    answers for ``Allow``.

    PERF: for a response without lines of its own (the usual one) the lines are made as a
    tuple, without the two chains' runs, the filters' calls and the response's list (a WSGI
    GET 105,230 → 97,508 instructions, bench/budget.py's child); a response with lines of
    its own goes through the filters themselves, unless they are a plain list the filters
    would only add to (:func:`_added_to_lines`)."""
    if response.has_headers():
        added = _added_to_lines(response, server, request, cors)
        if added is not None:
            return added
        allowed = rest_send_allow_header(response, server, request)
        if not isinstance(allowed, Response):
            return _own_lines_later(allowed, server, request, cors)
        if cors:
            rest_send_cors_headers(False, response, request, server)
        return response.header_tuple()
    route = response.matched_route
    # PERF: the table's ``get`` (a function it holds) read, then called: ``obj.get(...)`` is
    # a generic method look-up for it (~150 instructions).
    entry_of = server.table.get
    entry = entry_of(route) if route else None
    if entry is None:
        value = ""
    else:
        # PERF: a route's remembered value read in place (allow_value's first step; with
        # the CORS memory read in place below, a WSGI GET 95,632 → 94,468 instructions).
        value = entry.permissionless_allow
        if value is None:
            value = entry.allow_value(request)
            if type(value) is not str:
                return _allow_lines_later(value, server, request, cors)
    origin = request.headers.get_joined("origin") if cors else None
    # PERF: the lines remembered, each the same tuple for every answer of its route (and
    # Origin), which the answer step knows by identity (bench/budget.py's WSGI GET 77,604 →
    # 76,187 instructions: its header lines found without hashing the own lines).
    if origin is None:
        return _ALLOW_LINES[value]
    return server.cors.own[value, origin]


#: The lower-case names of the lines the default filters set (``Allow``, the CORS lines).
_DEFAULT_FILTER_LINES = frozenset({"allow", *(name.lower() for name in _CORS_NAMES)})


def _added_to_lines(response: Response, server: Any, request: Request, cors: bool) -> Any:
    """:func:`default_own_lines` of a response whose own lines are a plain list (no
    ``Headers`` made) holding none of the lines the filters set, on a route of the table:
    its lines, then ``Allow`` (the remembered value, else the permission callbacks asked, as
    :func:`rest_send_allow_header` asks them), then the CORS lines, which is what the filters
    leave (each adds its lines after the others); an awaitable of them while an ``async``
    permission callback answers; None for any other response.

    PERF: a StoreCollection item GET (its own ``ETag`` line) makes no ``Headers`` and runs
    neither filter (bench/budget.py: 228,785 → 219,831 instructions)."""
    lines = response._lines
    route = response.matched_route
    if response._headers is not None or not lines or not route:
        return None
    for name, _ in lines:
        if name.lower() in _DEFAULT_FILTER_LINES:
            return None
    entry_of = server.table.get  # PERF: as in default_own_lines
    entry = entry_of(route)
    if entry is None:
        return None
    value = entry.permissionless_allow
    if value is None:
        value = entry.allow_value(request)
        if type(value) is not str:
            return _added_later(value, tuple(lines), server, request, cors)
    return _with_allow(tuple(lines), value, server, request, cors)


def _with_allow(
    lines: tuple[tuple[str, str], ...], value: str, server: Any, request: Request, cors: bool
) -> tuple[tuple[str, str], ...]:
    """``lines``, then ``Allow: value`` (none for ""), then the CORS lines unless ``cors``
    is False (see :func:`_added_to_lines`)."""
    allow: tuple[tuple[str, str], ...] = (("Allow", value),) if value else ()
    origin = request.headers.get_joined("origin") if cors else None
    if origin is None:
        return (*lines, *allow)
    lines_of = server.cors.lines  # PERF: as in default_own_lines
    return (*lines, *allow, *lines_of(origin))


async def _added_later(
    pending: Any, lines: tuple[tuple[str, str], ...], server: Any, request: Request, cors: bool
) -> tuple[tuple[str, str], ...]:
    """:func:`_added_to_lines` once an ``async`` permission callback has answered for
    ``Allow``."""
    value = await pending
    return _with_allow(lines, value, server, request, cors)


async def _own_lines_later(allowed: Any, server: Any, request: Request, cors: bool) -> Any:
    """:func:`default_own_lines` of a response with lines of its own, once an ``async``
    permission callback has answered for ``Allow``."""
    response: Response = await allowed
    if cors:
        rest_send_cors_headers(False, response, request, server)
    return response.header_tuple()


async def _allow_lines_later(pending: Any, server: Any, request: Request, cors: bool) -> Any:
    """:func:`default_own_lines` of a response without lines of its own, once an ``async``
    permission callback has answered for ``Allow``."""
    value = await pending
    lines = _cors_of(request, server) if cors else ()
    return (("Allow", value), *lines) if value else lines


def _posted(posted: Any, response: Response) -> Response:
    """The response a ``rest_post_dispatch`` callback answered (``response`` given to it), as
    a response (an error's own response): the pipeline's ``posted_response`` for a request
    without a query string (no ``_envelope``)."""
    if posted is not response:
        ensured = rest_ensure_response(posted)
        response = Response.from_error(ensured) if isinstance(ensured, RestError) else ensured
    return response


# The stages at which :meth:`StepWithCallbacks.run` may go on in a coroutine: awaiting the
# step's lines, a ``rest_post_dispatch`` callback's answer, a ``rest_pre_serve_request`` one's.
_LINES, _POSTED, _SERVED = 0, 1, 2


def _as_call(chain: Chain) -> Callable[..., Any]:
    """``chain`` as one call answering as :func:`~svcrest.chains.run_chain` does: its one
    callback itself, or the runner bound to it."""
    return chain[0] if len(chain) == 1 else partial(run_chain, chain)


def _bare_allow(response: Response, server: Any) -> str | None:
    """The remembered ``Allow`` value of ``response``'s route ("" without a route) when the
    response has no header lines of its own (the usual case of :class:`StepWithCallbacks`);
    None otherwise, or while the value needs the route's permission chain asked.

    PERF: the response's line slots read in place (its ``_lines`` is None whenever it has a
    ``Headers``), a method call each less."""
    if response._lines or response._headers is not None:
        return None
    route = response.matched_route
    entry = server.table.get(route) if route else None
    return "" if entry is None else entry.permissionless_allow


class StepWithCallbacks:
    """The default step (:func:`default_own_lines`) of a site whose ``rest_post_dispatch``
    (``post``, for a request without a query string) or ``rest_pre_serve_request``
    (``pre``) has callbacks after its default filter, with those callbacks run around it:
    ``post``'s on the response with its ``Allow`` line, then the CORS filter, then
    ``pre``'s (one answering True has served the body itself: the data is dropped). Each
    callback sees the response as the general chains leave it, and may answer with an
    awaitable.

    :meth:`run` answers the response and its own lines after them, as a tuple, or an
    awaitable of it from the first answer that must be awaited.

    PERF: one frame in place of the default step's (its usual case written out), the step's
    lines put on the response as the tuple they are (the response copies them on its first
    change) and taken back as they are while no callback changed them, a chain of one
    callback called directly, and the CORS lines added to the step's tuple while no
    callback touched it: one plain extra filter costs an ASGI GET 1,892 instructions on
    ``rest_pre_serve_request`` (5,962 with the step and the general chains run after it)
    and 2,474 on ``rest_post_dispatch`` (9,839), bench/instructions.py; the filter's own
    call, with ``*args``, is ~770 of it, the usual case's test in one function
    (:func:`_bare_allow`, shared by the three runs) ~400, each hook's stage in one method
    (:meth:`_post`, :meth:`_serve`, shared by the runs) ~500 (1,376 and 1,776 with each
    stage written out twice)."""

    __slots__ = ("post", "post_call", "pre", "pre_call")

    def __init__(self, post: Chain, pre: Chain) -> None:
        self.post = post
        self.pre = pre
        #: Each chain as one call (its callback when it has one).
        self.post_call = _as_call(post)
        self.pre_call = _as_call(pre)

    def run(self, response: Response, server: Any, request: Request) -> Any:
        """The response and its own lines after the defaults and the callbacks (see the
        class)."""
        # PERF: default_own_lines's usual case written out; the response's line slots set
        # in place (a method call each less).
        value = _bare_allow(response, server)
        bare = value is not None
        if value is not None:
            own = (("Allow", value),) if value else ()
        else:  # lines of its own, or a permission chain to ask
            own = default_own_lines(response, server, request, False)
            if not isinstance(own, tuple):  # PreparedLines too
                return self._later(_LINES, own, response, server, request)
            response._headers = None
        response._lines = own
        if self.post:
            posted = self._post(response, server, request)
            if not isinstance(posted, Response):
                return posted  # awaits a callback's answer
            response = posted
        origin = request.headers.get_joined("origin")
        if origin is not None:
            # The CORS filter: its lines after the step's while nothing touched them.
            if bare and response._lines is own:
                lines = server.cors.lines(origin)
                response._lines = own = (*own, *lines)
            else:
                rest_send_cors_headers(False, response, request, server)
        if self.pre:
            return self._serve(response, own, server, request)
        return response, own if response._lines is own else response.header_tuple()

    def run_pre(self, response: Response, server: Any, request: Request) -> Any:
        """:meth:`run` of a step without ``rest_post_dispatch`` callbacks (``pre``'s only).

        PERF: the usual case (a response without lines of its own, ``Allow`` remembered)
        with the CORS lines made in the step's tuple at once; any other through :meth:`run`
        (an ASGI GET with one plain extra ``rest_pre_serve_request`` filter: 95,230 → 94,311
        instructions, bench/instructions.py)."""
        value = _bare_allow(response, server)
        if value is None:
            return self.run(response, server, request)
        origin = request.headers.get_joined("origin")
        own: tuple[tuple[str, str], ...]
        if origin is None:
            own = (("Allow", value),) if value else ()
        else:
            lines = server.cors.lines(origin)
            own = (("Allow", value), *lines) if value else lines
        response._lines = own
        return self._serve(response, own, server, request)

    def run_post(self, response: Response, server: Any, request: Request) -> Any:
        """:meth:`run` of a step without ``rest_pre_serve_request`` callbacks (``post``'s
        only).

        PERF: the usual case (a response without lines of its own, ``Allow`` remembered, the
        response answered as it was given) without :meth:`run`'s tests for the other cases;
        any other through :meth:`run` or the general CORS filter (an ASGI GET with one plain
        extra ``rest_post_dispatch`` filter: 95,245 → 94,744 instructions,
        bench/instructions.py)."""
        value = _bare_allow(response, server)
        if value is None:
            return self.run(response, server, request)
        own: tuple[tuple[str, str], ...] = (("Allow", value),) if value else ()
        response._lines = own
        posted = self._post(response, server, request)
        if not isinstance(posted, Response):
            return posted  # awaits a callback's answer
        response = posted
        origin = request.headers.get_joined("origin")
        if response._lines is own:
            if origin is None:
                return response, own
            # The CORS filter: its lines after the step's, which nothing touched.
            lines = server.cors.lines(origin)
            response._lines = own = (*own, *lines)
            return response, own
        if origin is not None:
            rest_send_cors_headers(False, response, request, server)
        return response, response.header_tuple()

    def _post(self, response: Response, server: Any, request: Request) -> Any:
        """``rest_post_dispatch``'s callbacks on ``response``: the response they leave, or
        the rest of the step as a coroutine once one answers with an awaitable."""
        posted = self.post_call(response, server, request)
        if posted is response:
            return response
        if type(posted) not in NOT_AWAITABLE and is_awaitable(posted):
            return self._later(_POSTED, posted, response, server, request)
        return _posted(posted, response)

    def _serve(
        self, response: Response, own: tuple[tuple[str, str], ...], server: Any, request: Request
    ) -> Any:
        """``rest_pre_serve_request``'s callbacks on ``response`` (whose lines are the step's
        ``own`` until a callback changes them), and the step's answer (see :meth:`run`)."""
        served = self.pre_call(False, response, request, server)
        if served is not False:
            if type(served) not in NOT_AWAITABLE and is_awaitable(served):
                return self._later(_SERVED, served, response, server, request)
            if served:
                response.data = None
        return response, own if response._lines is own else response.header_tuple()

    async def _later(
        self, stage: int, pending: Any, response: Response, server: Any, request: Request
    ) -> tuple[Response, tuple[tuple[str, str], ...]]:
        """:meth:`run` from its first answer that must be awaited (``pending``): the step's
        lines (``stage`` ``_LINES``), a ``rest_post_dispatch`` callback's answer (``_POSTED``:
        the rest of that chain has run) or a ``rest_pre_serve_request`` one's (``_SERVED``)."""
        value = await pending
        if stage == _LINES:
            response.replace_lines(value)
            value = await run_chain_async(self.post, response, (server, request))
            stage = _POSTED
        if stage == _POSTED:
            response = _posted(value, response)
            rest_send_cors_headers(False, response, request, server)
            value = await run_chain_async(self.pre, False, (response, request, server))
        if value:
            response.data = None
        return response, response.header_tuple()


#: The start of the ``rest_post_dispatch`` chain (for a request without a query string) and
#: of the ``rest_pre_serve_request`` chain of a site with the default filters: the pipeline
#: then runs them as :func:`default_own_lines` (and the later callbacks of each hook around
#: it, :class:`StepWithCallbacks`).
DEFAULT_FINISH = ((rest_send_allow_header,), (rest_send_cors_headers,))


def step_with_callbacks(post: Chain, pre: Chain) -> Callable[..., Any]:
    """The default step with the callbacks after the default filters (``post``:
    ``rest_post_dispatch``'s, ``pre``: ``rest_pre_serve_request``'s) run around it: a
    :class:`StepWithCallbacks`'s ``run``, its ``run_pre`` without ``post``, its ``run_post``
    without ``pre``."""
    step = StepWithCallbacks(post, pre)
    if not post:
        return step.run_pre
    return step.run if pre else step.run_post


#: The default step, and the maker of the step with callbacks after the default filters
#: (from the callbacks after each): the pipeline's plan picks one.
DEFAULT_STEPS = (default_own_lines, step_with_callbacks)


def _header_safe(text: str) -> str:
    """ASCII without control characters (header values must not be split)."""
    ascii_text = text.encode("ascii", "backslashreplace").decode("ascii")
    return "".join(char if 0x20 <= ord(char) < 0x7F else " " for char in ascii_text)


def _add_pending_header(name: str, value: str) -> None:
    ctx = current_context()
    if ctx is not None and ctx.is_rest:
        ctx.add_pending_header(name, _header_safe(value))


def _deprecation_value(function: str, version: str, detail: str | None) -> str:
    """The deprecation header value: ``<function> (since <version>; <detail>)``."""
    return f"{function} (since {version}; {detail or 'no alternative available'})"


def rest_handle_deprecated_function(function: str, replacement: str | None, version: str) -> None:
    """Record ``X-SVC-DeprecatedFunction`` on the current REST response (WordPress sends
    ``X-WP-DeprecatedFunction``)."""
    detail = f"use {replacement} instead" if replacement else None
    _add_pending_header("X-SVC-DeprecatedFunction", _deprecation_value(function, version, detail))


def rest_handle_deprecated_argument(function: str, message: str | None, version: str) -> None:
    """Record ``X-SVC-DeprecatedParam`` on the current REST response (WordPress sends
    ``X-WP-DeprecatedParam``)."""
    _add_pending_header("X-SVC-DeprecatedParam", _deprecation_value(function, version, message))


def rest_deprecated_trigger_error(flag: Any) -> Any:
    """No PHP-style notice during a REST request: False there, unchanged elsewhere."""
    return False if is_rest_request() else flag


def register_default_filters(server: ServerView) -> None:
    """Attach every default filter and action to the server's hooks (on ``rest_api_init``)."""
    hooks = server.hooks
    hooks.add_filter("rest_pre_dispatch", rest_handle_options_request)
    hooks.add_filter("rest_post_dispatch", rest_send_allow_header)
    hooks.add_filter("rest_post_dispatch", rest_filter_response_fields)
    hooks.add_filter("rest_pre_serve_request", rest_send_cors_headers)
    hooks.add_action("deprecated_function_run", rest_handle_deprecated_function)
    hooks.add_action("deprecated_argument_run", rest_handle_deprecated_argument)
    hooks.add_filter("deprecated_function_trigger_error", rest_deprecated_trigger_error)
    hooks.add_filter("deprecated_argument_trigger_error", rest_deprecated_trigger_error)
