"""The one REST pipeline: WordPress's ``serve_request``, from an HTTP request to its answer.

Every REST request takes this path, whatever its method, body, hooks or authentication
scheme: :func:`serve_rest` builds the :class:`Request`, runs authentication (one chain:
``determine_current_user``, ``rest_authentication_errors``) and the server's dispatch, then
:func:`finish_hooks` (``rest_post_dispatch``, ``_envelope``, ``rest_pre_serve_request``), and
the answer step (:mod:`svcrest.rest.answer`: format, body, validator, 304, coding) turns the
result into the HTTP answer.

Every hook chain runs through :func:`svcrest.chains.run_chain`: plainly until a callback
answers with an awaitable, then in one coroutine awaited here (authentication whose chain
holds one scheme's callbacks only is that scheme's ``alone`` function, one call). Speed
comes from preparing, not from a second path: the hooks' chains are fitted once per version
of the registry (:class:`~svcrest.rest.plan.PipelinePlan`), so a hook with one more callback
costs that call; routes prepare their handlers (fitted callbacks, the Allow value or chain)
when the table changes and remember their matches; the default filters append to a
response's plain list of header lines (no ``Headers`` object unless someone asks for one);
and the REST header block is encoded for the wire once per discovery Link value.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from time import perf_counter
from typing import TYPE_CHECKING, Any

from svcrest.chains import Pending, run_chain
from svcrest.http.context import RequestContext
from svcrest.http.errors import RestError
from svcrest.http.exchange import HttpRequest, HttpResponse
from svcrest.http.forms import MIN_BOUNDED_LENGTH, parse_query
from svcrest.http.request import Request
from svcrest.http.response import Response, rest_ensure_response
from svcrest.rest.answer import answer, error_answer, finish
from svcrest.rest.embed import EnvelopeResponse, embed_answer
from svcrest.rest.fields import links_wanted
from svcrest.rest.timing import server_timing_line
from svcrest.rest.tracing import child_span
from svcrest.rest.urls import rest_route_of
from svcrest.rest.wire import JSON_CONTENT_TYPE

if TYPE_CHECKING:
    from svcrest.rest.plan import PipelinePlan
    from svcrest.rest.server import RestServer

__all__ = [
    "JSON_CONTENT_TYPE",
    "error_answer",
    "finish",
    "finish_hooks",
    "posted_response",
    "resolve_current_user",
    "serve_rest",
]

#: ``Request.from_http``, bound once. PERF: a class method looked up on its class makes a
#: bound method at every call (a WSGI GET 88,355 → 87,987 instructions, bench/instructions.py).
_request_of = Request.from_http


def _method_override(request: Request) -> str:
    """``?_method=``, else ``X-HTTP-Method-Override`` (the caller asks for a POST only): the
    method it gave the request, "" when none did. As WordPress's ``isset``, one that is there
    applies even when it is empty or blank, and then the header is not read: the request's
    method becomes "", which no handler has (405 ``rest_no_route``), so a form's empty
    ``_method`` field never runs the POST handler. A ``_method`` array is no override."""
    override = request.query_param("_method")
    if not isinstance(override, str):
        override = request.get_header("X-HTTP-Method-Override")
        if override is None:
            return ""
    method = request.method = override.strip().upper()
    return method


def _jsonp_disabled() -> RestError:
    """WordPress's answer to ``_jsonp`` when the ``rest_jsonp_enabled`` filter says no:
    svcrest never offers JSONP (a callback wrapping a cookie-authenticated answer would be
    readable by any site that includes it as a script)."""
    return RestError(
        "rest_callback_disabled", "JSONP support is disabled on this site.", {"status": 400}
    )


def _refused_query(request: Request) -> RestError | None:
    """The 400 of a query string past PHP's limits (``parse_query``), or of one carrying
    ``_jsonp`` (any value, empty or an array too, as WordPress's ``isset``), else None; the
    parameters are parsed by then (by ``parse_query`` when the query string was long enough
    to break a limit)."""
    query_string = request.query_string or ""
    if len(query_string) >= MIN_BOUNDED_LENGTH:
        try:
            request.query_params = parse_query(query_string)
        except RestError as refused:
            return refused
    # SECURITY: refused before authentication, the method override and dispatch, as
    # WordPress does with JSONP off; the callback is never reflected. PERF: the query
    # string is parsed here instead of by ``_envelope``'s look-up later (every request with
    # a query string parses it; one without never comes here).
    if "_jsonp" in request.query_params:
        return _jsonp_disabled()
    return None


def data_with_links(response: Response, request: Request) -> Any:
    """The response's data with its ``_links`` (unless ``_fields`` leaves them out: it
    keeps them when it lists ``_links`` or ``_embedded``)."""
    data = response.data
    if not response.links or not isinstance(data, dict):
        return data
    fields = request.query_param("_fields")
    if fields is not None and not links_wanted(fields):
        return data
    return {**data, "_links": response.links}


def envelope_response(response: Response, request: Request) -> Response:
    """WordPress's ``_envelope``: status and headers moved into a 200 body (``_embed``
    embeds inside ``body``: the envelope keeps the response)."""
    body = {
        "body": data_with_links(response, request),
        "status": response.status,
        "headers": dict(response.headers.items()),
    }
    enveloped = EnvelopeResponse(body, response)
    enveloped.matched_route = response.matched_route
    enveloped.matched_handler = response.matched_handler
    return enveloped


async def resolve_current_user(plan: PipelinePlan, request: Request, ctx: RequestContext) -> None:
    """``determine_current_user`` (the auth cookie, other schemes) into ``ctx.user`` and
    ``request.user``; the anonymous user stays when no callback names one."""
    user = run_chain(plan.determine_current_user, ctx.user, request)
    if type(user) is Pending:
        user = await user
    if user is not None:
        ctx.user = user
    request.user = ctx.user


async def finish_hooks(
    plan: PipelinePlan, server: RestServer, request: Request, result: Response
) -> Response:
    """The rest of WordPress's ``serve_request`` after dispatch: ``rest_post_dispatch``,
    ``_envelope``, ``rest_pre_serve_request`` (a callback answering True there has served the
    body itself: the data is dropped). :func:`serve_rest` runs them for a request with a
    query string, or when a hook does not start with its default filter (else the plan's
    default step: :func:`~svcrest.rest.defaults.default_own_lines`, or
    :class:`~svcrest.rest.defaults.StepWithCallbacks` when a hook has callbacks after its
    default filter)."""
    # PERF: without a query string, without the ``_fields`` filter (``plan.query_only``: a
    # WSGI GET 109,562 → 107,995 instructions, bench/instructions.py); an empty chain not
    # run (a site without the default filters pays no runner call).
    post = plan.post_dispatch if request.may_have_query else plan.post_dispatch_no_query
    posted = run_chain(post, result, server, request) if post else result
    if type(posted) is Pending:
        posted = await posted
    # PERF: a call less when there is no work.
    if posted is not result or request.may_have_query:
        result = posted_response(posted, result, request)
    pre_serve = plan.pre_serve
    served = run_chain(pre_serve, False, result, request, server) if pre_serve else False
    if type(served) is Pending:
        served = await served
    if served:
        result.data = None
    return result


def posted_response(posted: Any, result: Response, request: Request) -> Response:
    """The response ``rest_post_dispatch`` answered (``result`` given to it), as a response
    (an error's own response), in WordPress's ``_envelope`` when the query string asks for
    one."""
    # PERF: each step only when it has work.
    if posted is not result:
        ensured = rest_ensure_response(posted)
        result = Response.from_error(ensured) if isinstance(ensured, RestError) else ensured
    if request.may_have_query and "_envelope" in request.query_params:
        return envelope_response(result, request)
    return result


def too_large_error(limit: int) -> RestError:
    """The 413 of a body longer than the site allows."""
    return RestError(
        "rest_request_too_large",
        "The request body is too large.",
        {"status": 413, "max_body_size": limit},
    )


async def serve_rest(
    server: RestServer,
    http: HttpRequest,
    route: str,
    ctx: RequestContext,
    read_body: Callable[[], Awaitable[bytes | None]] | None,
) -> HttpResponse:
    """Serve one REST request (``ctx`` is its context, already current).

    ``read_body`` returns an awaitable of the body, or of None when it is longer than the
    site's ``max_body_size`` (SECURITY: never read past the limit); None for a request
    without a body.
    """
    settings = server.app
    # PERF: the clock read only for Server-Timing (without it, three tests instead of three
    # calls of ``float()``: a WSGI GET ~330 instructions less, bench/budget.py).
    timed = settings.server_timing
    started = perf_counter() if timed else 0.0
    if read_body is None:
        body = b""
    else:
        read = await read_body()
        if read is None:
            return error_answer(
                settings, ctx, too_large_error(settings.max_body_size), http.headers
            )
        body = http.body = read
    request = _request_of(http.method, route, http.query_string, http.headers, body)
    # SECURITY: a query string past PHP's limits (1000 parameters, 64 levels of brackets) is
    # refused, never read truncated; so is ``_jsonp`` (WordPress's ``rest_callback_disabled``).
    # PERF: asked only of a request with a query string (a plain GET without one: 112,186
    # instructions, 112,184 before; bench/instructions.py).
    if request.may_have_query and (refused := _refused_query(request)):
        return error_answer(settings, ctx, refused, http.headers)
    ctx.method_overridden = _method_override(request) if request.method == "POST" else ""
    plan = server.plan()
    error: RestError | None = None
    # ``determine_current_user``, then ``rest_authentication_errors`` (one chain): only the
    # callbacks of the schemes whose credentials the request carries, and those of no
    # scheme (PERF: without credentials, usually none; a cookie request skips Basic's).
    authenticate = plan.authenticate_by_carried[
        plan.rule.carried(request.headers, request.query_string, request.raw_body)
    ]
    if authenticate is None:
        request.user = ctx.user
    else:
        verdict = authenticate(ctx.user, request)
        request.user = ctx.user
        # PERF: True (a valid cookie and nonce) is neither pending nor an error.
        if verdict is not True:
            if type(verdict) is Pending:
                verdict = await verdict
                request.user = ctx.user
            error = verdict if isinstance(verdict, RestError) else None
    authenticated = perf_counter() if timed else 0.0
    result = (
        Response.from_error(error)
        if error is not None
        else await server.dispatch_planned(request, plan)
    )
    dispatched = perf_counter() if timed else 0.0
    ctx.matched_route = result.matched_route
    step = plan.default_step
    if step is not None and not request.may_have_query:
        # PERF: the default filters' work (Allow, CORS) as one step, see DEFAULT_FINISH;
        # with the callbacks after them when a hook has some (it then answers the response
        # and its lines: StepWithCallbacks).
        own = step(result, server, request)
        if not isinstance(own, tuple):  # PreparedLines too (a tuple)
            own = await own
        if plan.after_default:
            result, own = own
    else:
        result = await finish_hooks(plan, server, request, result)
        own = result.header_tuple()
    # PERF: without a query string (and no parameter set by a filter) there is no ``_embed``.
    if request.may_have_query and "_embed" in request.query_params:
        data = await embed_answer(settings, request, result, _embed_fetcher(server), rest_route_of)
    else:
        data = data_with_links(result, request) if result.links else result.data
    answered = answer(settings, ctx, request, result, own, data)
    if timed:
        answered.headers.append(
            server_timing_line(started, authenticated, dispatched, perf_counter())
        )
    return answered


def _embed_fetcher(server: RestServer) -> Callable[[Request], Awaitable[Any]]:
    """``?_embed``'s internal requests: dispatch, then the finishing hooks."""

    async def fetch(inner: Request) -> Any:
        with child_span("_embed", inner.method, inner.route):
            response = await server.dispatch_async(inner)
        response = await finish_hooks(server.plan(), server, inner, response)
        return data_with_links(response, inner)

    return fetch
