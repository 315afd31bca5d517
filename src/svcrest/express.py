"""The express lane: ``serve_rest`` for the common request, with the default filters called
directly instead of through the hook chains.

Most requests a site serves are reads: a GET or HEAD without a body, whose query string
names none of the parameters the pipeline reads itself (``_fields``, ``_envelope``,
``_wpnonce``…), anonymous or with the login cookie and a nonce. While the pipeline's filters
are exactly the defaults svcrest installs (cookie authentication, the OPTIONS answer, Allow,
``_fields``, CORS), such a request is answered here by calling those same default callbacks
in the pipeline's order, without the general machinery around them: no filter chains, no
empty body to read, no authentication callbacks without a cookie or nonce, and a handler
without hooks or arguments called directly. The answer is the one ``serve_rest`` gives,
byte for byte; ``tests/test_express.py`` compares the two on generated requests.

A path no route matches gets its 404 here; one whose routes lack the method gets the general
dispatch (its 405 and Allow), and a handler with arguments or hooks around it the general
handler call, both inside the lane.
Anything else (another method, a query string with an underscore, a body, a filter added or
removed anywhere on the pipeline's hooks, a replaced server class) goes the general way:
:func:`serve_express` returns None before any user code has run.

PERF: the lane takes an anonymous GET from ~45 µs to ~13 µs in-process (``bench/RESULTS.md``).
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
from svcrest.http.exchange import HttpResponse, safe_header_line
from svcrest.http.headers import Headers
from svcrest.http.request import Request
from svcrest.http.response import Response, rest_ensure_response
from svcrest.invoke import fitted
from svcrest.server import RestServer, internal_error, no_route_error, select_handler
from svcrest.serving import (
    _data_with_links,
    _envelope,
    _error_http,
    _finish,
    _header_block,
    encode_json,
)

if TYPE_CHECKING:
    from svcrest.app import App

__all__ = ["ExpressLane", "pipeline_is_default", "plain_query", "serve_express"]

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


def pipeline_is_default(app: App, hooks: Hooks, server: RestServer) -> bool:
    """Whether ``server`` is a plain RestServer and every pipeline hook holds exactly the
    default callbacks of ``app`` (nothing added, removed or reordered)."""
    if type(server) is not RestServer:
        return False
    for name, defaults in _DEFAULT_PIPELINE.items():
        registered = hooks.registered(name)
        if len(registered) != len(defaults):
            return False
        for callback, default in zip(registered, defaults, strict=True):
            if not _is_default(callback, default, app):
                return False
    return True


class ExpressLane:
    """Whether an App's pipeline is still the default one, re-checked when its hooks change."""

    __slots__ = ("_app", "_state")

    def __init__(self, app: App) -> None:
        self._app = app
        # (hooks version, usable, a hook around handlers has callbacks): one tuple, so a
        # thread never reads a verdict with another version's.
        self._state: tuple[int, bool, bool] = (-1, False, True)

    def usable(self, server: RestServer) -> bool:
        """True while the lane gives the same answers as the general pipeline."""
        hooks = self._app.hooks
        state = self._state
        if state[0] != hooks.version or type(server) is not RestServer:
            version = hooks.version  # read first: a change while checking is seen next time
            state = self._state = (
                version,
                pipeline_is_default(self._app, hooks, server),
                any(hooks.has_callbacks(name) for name in _HANDLER_HOOKS),
            )
        return state[1]

    @property
    def handler_hooks(self) -> bool:
        """Whether a hook around handlers has callbacks (as of the last ``usable`` check)."""
        return self._state[2]


def _bodiless(index: dict[str, list[str]]) -> bool:
    if "transfer-encoding" in index:
        return False
    length = index.get("content-length")
    return length is None or length == ["0"]


def _authenticate(hooks: Hooks, request: Request, ctx: RequestContext) -> RestError | None:
    """``_authenticate`` of ``serving`` with the default callbacks called directly (the
    cookie's user, then spec 5.1's cookie and nonce check)."""
    (determine_user,) = hooks.registered("determine_current_user")
    (check_errors,) = hooks.registered("rest_authentication_errors")
    user = determine_user(ctx.user, request)
    if user is not None:
        ctx.user = user
    request.user = ctx.user
    result = check_errors(None, request)
    request.user = ctx.user
    return result if isinstance(result, RestError) else None


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
    """The lines ``_finish`` sends before the pending ones for a plain answer: the REST
    block, Allow when there is a method, the CORS lines; with their wire encoding."""
    key = (link, logged_in, allow, origin)
    template = _TEMPLATES.get(key)
    if template is None:
        # SECURITY: Origin is the client's; only short values are kept (bounded memory).
        keep = origin is None or len(origin) <= 256
        block, block_wire = _header_block(link, logged_in, False)
        own = ((("Allow", allow),) if allow else ()) + _cors_lines(origin)
        own_wire = tuple(
            (name.encode("latin-1"), value.encode("latin-1"))
            for name, value in (safe_header_line(*line) for line in own)
        )
        template = (block + own, block_wire + own_wire)
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
    params = request._query_params
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
    index = headers._lookup()
    if not app.express.usable(server) or not _bodiless(index):
        return None
    ctx = RequestContext(is_rest=True, secure=secure, host=host)
    token = _current.set(ctx)
    try:
        request = Request.from_http(method, route, query_string, headers, b"")
        try:
            if "cookie" in index or "x-svc-nonce" in index:
                error = _authenticate(app.hooks, request, ctx)
                if error is not None:
                    failed = Response.from_error(error)
                    return await _finish_general(app, ctx, server, method, request, failed)
            else:
                # Without a cookie or a nonce, authentication leaves the anonymous user and no
                # error: the default callbacks need not run.
                request.user = ctx.user = ANONYMOUS
            return await _dispatch(app, ctx, server, method, request)
        except Exception:
            logger.exception("Unhandled exception while serving %s %s", method, route)
            return _error_http(app, ctx, method, internal_error())
    finally:
        _current.reset(token)


async def _dispatch(
    app: App, ctx: RequestContext, server: RestServer, method: str, request: Request
) -> HttpResponse:
    """Dispatch and finish an authenticated request (``_serve_request`` after ``_authenticate``)."""
    matches = server.table.matches(request.route)
    if not matches:
        # No route: the default ``rest_pre_dispatch`` answers only OPTIONS, so this is the
        # 404 of the general dispatch, with no Allow header and no callback run.
        missing = no_route_error(404).to_dict()
        return _plain_answer(app, ctx, method, request, missing, "", status=404)
    chosen = select_handler(matches, method)
    if chosen is None:  # a 405: the general dispatch, with its Allow header
        result = await server.dispatch_async(request)
        return await _finish_general(app, ctx, server, method, request, result)
    entry, handler, url_params = chosen
    if handler["args"] or app.express.handler_hooks:
        result = await server.dispatch_matched(request, entry, handler, dict(url_params))
        return await _finish_general(app, ctx, server, method, request, result)
    request.url_params = dict(url_params)
    request.handler = handler
    request.parse_json_body()
    try:
        data = _call_direct(request, handler)
        if type(data) is Pending:
            data = await data.awaitable
    except Exception:
        result = server.to_response(server._unexpected(request))
    else:
        if (type(data) is dict or type(data) is list) and _no_output_params(request):
            allow = entry.permissionless_allow()
            if allow is None:  # permission callbacks decide, as in ``rest_send_allow_header``
                allowed = server.allowed_methods_eager(entry, request)
                if not isinstance(allowed, list):
                    allowed = await allowed
                allow = ", ".join(allowed)
            return _plain_answer(app, ctx, method, request, data, allow)
        result = server.matched_response(data, entry, handler)
    return await _finish_general(app, ctx, server, method, request, result)


async def _finish_general(
    app: App,
    ctx: RequestContext,
    server: RestServer,
    method: str,
    request: Request,
    result: Response,
) -> HttpResponse:
    """The rest of ``serve_rest`` after dispatch, with the default filters called directly."""
    posted: Any = rest_send_allow_header(result, server, request)
    if is_awaitable(posted):
        posted = await posted
    posted = rest_filter_response_fields(posted, server, request)
    ensured = rest_ensure_response(posted)
    response = ensured if isinstance(ensured, Response) else Response.from_error(ensured)
    if "_envelope" in request.query_params:  # a callback may have set it
        response = _envelope(response, request)
    rest_send_cors_headers(False, response, request, server)
    return _finish(app, ctx, method, response, _data_with_links(response, request))
