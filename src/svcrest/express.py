"""The express lane: ``serve_rest`` for the common request, with the default filters called
directly instead of through the hook chains.

Most requests a site serves are reads: a GET or HEAD without a body, whose query string
names none of the parameters the pipeline reads itself (``_fields``, ``_envelope``,
``_wpnonce``…), anonymous or with the login cookie and a nonce. Such a request is answered
here. Each pipeline hook that still holds exactly the default callbacks svcrest installs
(cookie authentication, the OPTIONS answer, Allow and ``_fields``, CORS) has those callbacks
called directly, in the pipeline's order; a hook with any other callbacks has its filter
chain run as the general pipeline runs it. Around that, the lane skips what such a request
does not need: reading an empty body, the authentication callbacks without a cookie or
nonce (while they are the defaults), a coroutine for a plain handler without hooks or
arguments around it, and, while the finishing hooks are the defaults, assembling a plain
dict/list answer from a pre-encoded header template. The answer is the one ``serve_rest``
gives, byte for byte; ``tests/test_express.py`` compares the two on generated requests,
with and without extra filters on each hook.

A path no route matches gets its 404 here; one whose routes lack the method gets the general
dispatch (its 405 and Allow), as does every request while ``rest_pre_dispatch`` has callbacks
of its own, and a handler with arguments or hooks around it gets the general handler call.
Anything else (another method, a query string with an underscore, a body, a replaced server
class, ``app.express.enabled = False``) goes the general way: :func:`serve_express` returns
None before any user code has run.

PERF: the lane takes an anonymous GET from ~44 µs to ~12 µs in-process (``bench/RESULTS.md``).
"""

from __future__ import annotations

import logging
from types import MethodType
from typing import TYPE_CHECKING, Any

from svcrest.auth.rest_cookie import CookieAuth
from svcrest.auth.user import ANONYMOUS
from svcrest.context import RequestContext, _current
from svcrest.defaults import (
    CORS_ALLOW_METHODS,
    rest_filter_response_fields,
    rest_handle_options_request,
    rest_send_allow_header,
    rest_send_cors_headers,
    sanitize_origin,
)
from svcrest.hooks import Hooks, Pending, is_awaitable
from svcrest.http.errors import RestError
from svcrest.http.exchange import HttpResponse, wire_lines
from svcrest.http.headers import Headers
from svcrest.http.request import Request
from svcrest.http.response import Response, rest_ensure_response
from svcrest.invoke import fitted
from svcrest.server import RestServer, internal_error, no_route_error, select_handler
from svcrest.serving import (
    authenticate,
    data_with_links,
    encode_json,
    envelope_response,
    error_http,
    finish_http,
    header_block,
    post_dispatch,
    pre_serve,
)

if TYPE_CHECKING:
    from svcrest.app import App

__all__ = ["ExpressLane", "default_hooks", "plain_query", "serve_express"]

logger = logging.getLogger("svcrest")

#: The pipeline hooks and the default callbacks the lane replaces, in their run order.
_DEFAULT_PIPELINE: dict[str, tuple[Any, ...]] = {
    "determine_current_user": (CookieAuth.cookie_user,),
    "rest_authentication_errors": (CookieAuth.check_errors,),
    "rest_pre_dispatch": (rest_handle_options_request,),
    "rest_post_dispatch": (rest_send_allow_header, rest_filter_response_fields),
    "rest_pre_serve_request": (rest_send_cors_headers,),
}


def _is_default(callback: Any, default: Any, app: App) -> bool:
    if isinstance(callback, MethodType):  # a default bound to this App's CookieAuth
        return callback.__func__ is default and getattr(callback.__self__, "app", None) is app
    return callback is default


def default_hooks(app: App, hooks: Hooks) -> frozenset[str]:
    """The pipeline hooks that hold exactly ``app``'s default callbacks (nothing added,
    removed or reordered): the lane calls those callbacks directly and runs the others'
    filter chains as the general pipeline does."""
    found = set()
    for name, defaults in _DEFAULT_PIPELINE.items():
        registered = hooks.registered(name)
        if len(registered) == len(defaults) and all(
            _is_default(callback, default, app)
            for callback, default in zip(registered, defaults, strict=True)
        ):
            found.add(name)
    return frozenset(found)


class ExpressLane:
    """An App's express lane: on unless ``enabled`` is set False, and which pipeline hooks
    still hold their defaults (re-read whenever the hooks change)."""

    __slots__ = ("_app", "_state", "enabled")

    def __init__(self, app: App) -> None:
        self._app = app
        #: Set False to serve every request through the general pipeline.
        self.enabled = True
        # (hooks version, default hooks, a hook around handlers has callbacks): one tuple,
        # so a thread never reads one version's facts with another's.
        self._state: tuple[int, frozenset[str], bool] = (-1, frozenset(), True)

    def usable(self, server: RestServer) -> bool:
        """Whether the lane may serve requests (on, and the server class not replaced)."""
        return self.enabled and type(server) is RestServer

    def facts(self) -> tuple[frozenset[str], bool]:
        """The pipeline hooks holding their defaults, and whether a hook around handlers has
        callbacks."""
        hooks = self._app.hooks
        state = self._state
        if state[0] != hooks.version:
            version = hooks.version  # read first: a change while reading is seen next time
            state = self._state = (
                version,
                default_hooks(self._app, hooks),
                any(hooks.has_callbacks(name) for name in _HANDLER_HOOKS),
            )
        return state[1], state[2]


def _bodiless(index: dict[str, list[str]]) -> bool:
    if "transfer-encoding" in index:
        return False
    length = index.get("content-length")
    return length is None or length == ["0"]


def _authenticate(hooks: Hooks, request: Request, ctx: RequestContext) -> RestError | None:
    """``serving.authenticate`` with the default callbacks called directly (the cookie's
    user, then spec 5.1's cookie and nonce check)."""
    (determine_user,) = hooks.registered("determine_current_user")
    (check_errors,) = hooks.registered("rest_authentication_errors")
    user = determine_user(ctx.user, request)
    if user is not None:
        ctx.user = user
    request.user = ctx.user
    result = check_errors(None, request)
    request.user = ctx.user
    return result if isinstance(result, RestError) else None


_AUTH_HOOKS = frozenset({"determine_current_user", "rest_authentication_errors"})
_FINISH_HOOKS = frozenset({"rest_post_dispatch", "rest_pre_serve_request"})
#: Hooks around a handler; without callbacks on them, the handler is called directly.
_HANDLER_HOOKS = (
    "rest_request_before_callbacks",
    "rest_dispatch_request",
    "rest_request_after_callbacks",
)
#: (Link value, logged in, Allow value, Origin) → the header lines of a plain answer, and
#: their wire encoding. Bounded: emptied when full.
_TEMPLATES: dict[
    tuple[str | None, bool, str, str | None],
    tuple[tuple[tuple[str, str], ...], tuple[tuple[bytes, bytes], ...]],
] = {}
_TEMPLATES_MAX = 1024


def _cors_lines(origin: str | None) -> tuple[tuple[str, str], ...]:
    """The CORS lines ``rest_send_cors_headers`` adds to a response without any."""
    allowed = None if origin is None else sanitize_origin(origin)
    if allowed is None:
        return ()
    return (
        ("Access-Control-Allow-Origin", allowed),
        ("Access-Control-Allow-Methods", CORS_ALLOW_METHODS),
        ("Access-Control-Allow-Credentials", "true"),
    )


def _template(
    link: str | None, logged_in: bool, allow: str, origin: str | None
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[bytes, bytes], ...]]:
    """The lines ``finish_http`` sends before the pending ones for a plain answer: the REST
    block, Allow when there is a method, the CORS lines; with their wire encoding."""
    key = (link, logged_in, allow, origin)
    template = _TEMPLATES.get(key)
    if template is None:
        # SECURITY: Origin is the client's; only short values are kept (bounded memory).
        keep = origin is None or len(origin) <= 256
        block, block_wire = header_block(link, logged_in, False)
        own = ((("Allow", allow),) if allow else ()) + _cors_lines(origin)
        template = (block + own, block_wire + wire_lines(own))
        if keep:
            if len(_TEMPLATES) >= _TEMPLATES_MAX:
                _TEMPLATES.clear()
            _TEMPLATES[key] = template
    return template


def _refusal(request: Request, permitted: Any) -> RestError:
    """What a permission callback's answer other than True becomes."""
    if isinstance(permitted, RestError):
        return permitted
    status = 403 if request.user.is_logged_in else 401
    return RestError("rest_forbidden", "Sorry, you are not allowed to do that.", {"status": status})


def _call_direct(request: Request, handler: dict[str, Any]) -> Any:
    """``RestServer._permitted_call`` for a handler without hooks around it: the handler's
    result (a RestError for a refusal), computed synchronously while its callbacks are plain;
    from the first awaitable answer on, a :class:`Pending` whose ``awaitable`` finishes.
    Exceptions other than RestError propagate."""
    try:
        permission = handler.get("permission_callback")
        if permission is not None:
            permitted = fitted(permission)(request)
            if is_awaitable(permitted):
                return Pending(_finish_permitted(request, handler, permitted))
            if permitted is not True:
                return _refusal(request, permitted)
        return _call_callback(request, handler)
    except RestError as raised:
        return raised


def _call_callback(request: Request, handler: dict[str, Any]) -> Any:
    callback = handler["callback"]
    if callback is None:
        return RestError(
            "rest_invalid_handler", "The handler for the route is invalid.", {"status": 500}
        )
    result = fitted(callback)(request)
    return Pending(_awaited(result)) if is_awaitable(result) else result


async def _finish_permitted(request: Request, handler: dict[str, Any], pending: Any) -> Any:
    try:
        permitted = await pending
        if permitted is not True:
            return _refusal(request, permitted)
        result = _call_callback(request, handler)
        return await result.awaitable if type(result) is Pending else result
    except RestError as raised:
        return raised


async def _awaited(pending: Any) -> Any:
    try:
        return await pending
    except RestError as raised:
        return raised


def _no_output_params(request: Request) -> bool:
    """No ``_fields`` or ``_envelope`` parameter (the query string had none: only a callback
    can have set one)."""
    params = request.parsed_query_params()
    return not params or ("_fields" not in params and "_envelope" not in params)


def _plain_answer(
    app: App,
    ctx: RequestContext,
    method: str,
    request: Request,
    data: Any,
    allow: str,
    status: int = 200,
) -> HttpResponse:
    """The general pipeline's answer for plain data (a dict or a list) a handler returned,
    with ``allow`` the Allow header's value ("" for none, as for a 404's error body)."""
    lines, wire = _template(
        app.rest_output_link_header(),
        ctx.user.is_logged_in,
        allow,
        request.headers.get_joined("origin"),
    )
    pending = ctx.pending_headers
    answer = HttpResponse(
        status, [*lines, *pending] if pending else list(lines), encode_json(data), wire_prefix=wire
    )
    if method == "HEAD":
        answer.strip_body_for_head()
    return answer


def plain_query(query_string: str) -> bool:
    """Whether a query string can name none of the parameters the pipeline itself reads
    (``_fields``, ``_envelope``, ``_wpnonce``, ``_method``, ``rest_route``): every one has an
    underscore, written as ``_`` or ``%5F``."""
    return "_" not in query_string and "%5f" not in query_string.lower()


async def serve_express(
    app: App,
    method: str,
    route: str,
    headers: Headers,
    secure: bool,
    host: str,
    query_string: str = "",
) -> HttpResponse | None:
    """Serve a GET or HEAD of ``route`` (already split from the REST prefix, without a body,
    with a query string that passes :func:`plain_query`) the way ``serve_rest`` would; None
    when the request or the App needs the general pipeline (nothing has run then)."""
    server = app.rest_get_server()
    lane = app.express
    index = headers.index()
    if not lane.usable(server) or not _bodiless(index):
        return None
    defaults, handler_hooks = lane.facts()
    ctx = RequestContext(is_rest=True, secure=secure, host=host)
    token = _current.set(ctx)
    try:
        request = Request.from_http(method, route, query_string, headers, b"")
        try:
            if not defaults >= _AUTH_HOOKS:
                error = await authenticate(app, request, ctx)
            elif "cookie" in index or "x-svc-nonce" in index:
                error = _authenticate(app.hooks, request, ctx)
            else:
                # Without a cookie or a nonce, the default authentication callbacks leave the
                # anonymous user and no error: they need not run.
                error = None
                request.user = ctx.user = ANONYMOUS
            outcome: HttpResponse | Response
            if error is not None:
                outcome = Response.from_error(error)
            elif "rest_pre_dispatch" not in defaults:
                outcome = await server.dispatch_async(request)
            else:
                plain = defaults >= _FINISH_HOOKS
                outcome = await _dispatch(app, ctx, server, method, request, plain, handler_hooks)
            if isinstance(outcome, HttpResponse):
                return outcome
            return await _finish_general(app, ctx, server, method, request, outcome, defaults)
        except Exception:
            logger.exception("Unhandled exception while serving %s %s", method, route)
            return error_http(app, ctx, method, internal_error())
    finally:
        _current.reset(token)


async def _dispatch(
    app: App,
    ctx: RequestContext,
    server: RestServer,
    method: str,
    request: Request,
    plain: bool,
    handler_hooks: bool,
) -> HttpResponse | Response:
    """``RestServer.dispatch_async`` after a default ``rest_pre_dispatch`` (which answers
    only OPTIONS). With ``plain`` (the finishing hooks hold their defaults), a plain answer
    comes back finished, as an HttpResponse."""
    matches = server.table.matches(request.route)
    if not matches:
        # The 404 of the general dispatch: no Allow header, no callback run.
        missing = no_route_error(404)
        if plain:
            return _plain_answer(app, ctx, method, request, missing.to_dict(), "", status=404)
        return Response.from_error(missing)
    chosen = select_handler(matches, method)
    if chosen is None:  # a 405: the general dispatch, with its Allow header
        return await server.dispatch_async(request)
    entry, handler, url_params = chosen
    if handler["args"] or handler_hooks:
        return await server.dispatch_matched(request, entry, handler, dict(url_params))
    request.url_params = dict(url_params)
    request.handler = handler
    request.parse_json_body()
    try:
        data = _call_direct(request, handler)
        if type(data) is Pending:
            data = await data.awaitable
    except Exception:
        return server.to_response(server.unexpected_error(request))
    if plain and (type(data) is dict or type(data) is list) and _no_output_params(request):
        allow = entry.permissionless_allow()
        if allow is None:  # permission callbacks decide, as in ``rest_send_allow_header``
            allowed = server.allowed_methods_eager(entry, request)
            if not isinstance(allowed, list):
                allowed = await allowed
            allow = ", ".join(allowed)
        return _plain_answer(app, ctx, method, request, data, allow)
    return server.matched_response(data, entry, handler)


async def _finish_general(
    app: App,
    ctx: RequestContext,
    server: RestServer,
    method: str,
    request: Request,
    result: Response,
    defaults: frozenset[str],
) -> HttpResponse:
    """The rest of ``serve_rest`` after dispatch: a default hook's callbacks called
    directly, any other hook's filter chain run."""
    hooks = app.hooks
    if "rest_post_dispatch" in defaults:
        posted: Any = rest_send_allow_header(result, server, request)
        if is_awaitable(posted):
            posted = await posted
        ensured = rest_ensure_response(rest_filter_response_fields(posted, server, request))
        response = ensured if isinstance(ensured, Response) else Response.from_error(ensured)
    else:
        response = await post_dispatch(hooks, server, request, result)
    if "_envelope" in request.query_params:  # a callback may have set it
        response = envelope_response(response, request)
    if "rest_pre_serve_request" in defaults:
        rest_send_cors_headers(False, response, request, server)
    elif await pre_serve(hooks, server, request, response):
        response.data = None
    return finish_http(app, ctx, method, response, data_with_links(response, request))
