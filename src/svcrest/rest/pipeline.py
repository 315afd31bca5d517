"""The one REST pipeline: WordPress's ``serve_request``, from an HTTP request to its answer.

Every REST request takes this path, whatever its method, body, hooks or authentication
scheme: :func:`serve_rest` builds the :class:`Request`, runs authentication (one chain:
``determine_current_user``, ``rest_authentication_errors``) and the server's dispatch, then
:func:`finish_hooks` (``rest_post_dispatch``, ``_envelope``, ``rest_pre_serve_request``), and
:func:`finish` turns the result into header lines and JSON bytes.

Every hook chain runs through :func:`svcrest.chains.run_chain`: plainly until a callback
answers with an awaitable, then in one coroutine awaited here. Speed comes from preparing,
not from a second path: the hooks' chains are fitted once per version of the registry
(:class:`~svcrest.rest.plan.PipelinePlan`), so a hook with one more callback costs that
call; routes prepare their handlers (fitted callbacks, the Allow value or chain) when the
table changes and remember their matches; the default filters
append to a response's plain list of header lines (no ``Headers`` object unless someone asks
for one); and the REST header block is encoded for the wire once per discovery Link value.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from time import perf_counter
from typing import TYPE_CHECKING, Any

import orjson

from svcrest.chains import Pending, run_chain
from svcrest.http.answer_json import (
    UnencodableValue,
    encode_default,
    one_line,
    unencodable_reason,
)
from svcrest.http.compression import MIN_SIZE
from svcrest.http.context import RequestContext
from svcrest.http.errors import RestError
from svcrest.http.exchange import (
    HttpRequest,
    HttpResponse,
)
from svcrest.http.forms import MIN_BOUNDED_LENGTH, parse_query
from svcrest.http.headers import Headers
from svcrest.http.request import Request
from svcrest.http.response import Response, rest_ensure_response
from svcrest.rest.conditional import (
    READS,
    coded_answer,
    not_modified,
    remembered_tag_line,
    tag_line,
)
from svcrest.rest.embed import EnvelopeResponse, embed_answer
from svcrest.rest.fields import links_wanted
from svcrest.rest.server import internal_error
from svcrest.rest.timing import server_timing_line
from svcrest.rest.tracing import child_span
from svcrest.rest.urls import rest_route_of
from svcrest.rest.wire import JSON_CONTENT_TYPE, answer_lines

if TYPE_CHECKING:
    from svcrest.http.serializers import Serializer
    from svcrest.rest.plan import PipelinePlan
    from svcrest.rest.server import RestServer
    from svcrest.rest.settings import SiteSettings

__all__ = [
    "JSON_CONTENT_TYPE",
    "error_answer",
    "finish",
    "finish_hooks",
    "posted_response",
    "resolve_current_user",
    "serve_rest",
]

logger = logging.getLogger("svcrest")

_NO_BODY_STATUSES = frozenset({204, 304})
#: The pipeline's clock, by ``server_timing``: ``float()`` is 0.0, so without Server-Timing
#: no clock is read (3 calls of ~30 ns a request).
_CLOCKS: tuple[Callable[[], float], Callable[[], float]] = (float, perf_counter)
_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS


def _method_override(request: Request) -> bool:
    """``X-HTTP-Method-Override`` or ``?_method=`` (the caller asks for a POST only); True
    when one applied."""
    override = request.query_param("_method")
    if not isinstance(override, str) or not override:
        override = request.get_header("X-HTTP-Method-Override")
    if isinstance(override, str) and override.strip():
        request.method = override.strip().upper()
        return True
    return False


def _refused_query(request: Request) -> RestError | None:
    """The 400 of a query string past PHP's limits (``parse_query``), else None (with the
    parameters parsed when the query string was long enough to break a limit: a shorter one
    is parsed on first read)."""
    query_string = request.query_string or ""
    if len(query_string) < MIN_BOUNDED_LENGTH:
        return None
    try:
        request.query_params = parse_query(query_string)
    except RestError as refused:
        return refused
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
    body itself: the data is dropped). :func:`serve_rest` runs the same steps in its own
    frame."""
    posted = run_chain(plan.post_dispatch, result, server, request)
    if type(posted) is Pending:
        posted = await posted
    result = posted_response(posted, result, request)
    served = run_chain(plan.pre_serve, False, result, request, server)
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


def finish(
    settings: SiteSettings,
    ctx: RequestContext,
    status: int,
    own_lines: tuple[tuple[str, str], ...],
    data: Any,
    serializer: Serializer | None = None,
) -> HttpResponse:
    """The HTTP answer of a REST response: the REST header block, the response's own header
    lines, the pending ones (nonce, deprecations), and the body (none for ``data`` None, 204
    and 304): JSON, or in ``serializer``'s format (its Content-Type is then among
    ``own_lines``: :meth:`~svcrest.http.serializers.Serializers.negotiate`); no validator
    (see :func:`serve_rest`)."""
    lines, wire, _ = answer_lines(settings, ctx, status, own_lines)
    pending = ctx.pending_headers
    body = encoded_body(status, data, serializer)
    return HttpResponse(status, [*lines, *pending] if pending else [*lines], body, None, wire)


def encoded_body(status: int, data: Any, serializer: Serializer | None = None) -> bytes:
    """The bytes of an answer's ``data`` (none for None, 204 and 304): JSON, or in
    ``serializer``'s format."""
    if data is None or status in _NO_BODY_STATUSES:
        return b""
    if serializer is not None:
        return serializer.encode(data)
    # PERF: orjson calls ``default`` only for what it cannot encode itself (Decimal, set…);
    # passing it costs a plain answer nothing measurable (``{"ok": true}``: 386 ns without,
    # 390 ns with, medians of 40 interleaved timeit rounds on a loaded machine).
    return orjson.dumps(data, default=encode_default, option=_JSON_OPTIONS)


def error_answer(
    settings: SiteSettings,
    ctx: RequestContext,
    error: RestError,
    headers: Headers | None = None,
) -> HttpResponse:
    """The HTTP answer of an error raised outside dispatch (413, a bad ``rest_route``, 500,
    a store's 503 met by the cookie check), with the error's own header lines; in the
    format the request's ``headers`` accept when the site has more than JSON."""
    own = error.headers
    serializers = settings.serializers
    if serializers is None or headers is None:
        return finish(settings, ctx, error.status, own, error.to_dict())
    serializer, own = serializers.negotiate(headers.get_joined("accept"), error.status, own)
    return finish(settings, ctx, error.status, own, error.to_dict(), serializer)


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
    clock = _CLOCKS[settings.server_timing]
    started = clock()
    if read_body is None:
        body = b""
    else:
        read = await read_body()
        if read is None:
            return error_answer(
                settings, ctx, too_large_error(settings.max_body_size), http.headers
            )
        body = http.body = read
    request = Request.from_http(http.method, route, http.query_string, http.headers, body)
    # SECURITY: a query string past PHP's limits (1000 parameters, 64 levels of brackets) is
    # refused, never read truncated. PERF: asked only of a request with a query string (a
    # plain GET without one: 112,186 instructions, 112,184 before; bench/instructions.py),
    # and only one long enough to break a limit is parsed here.
    if request.may_have_query and (refused := _refused_query(request)):
        return error_answer(settings, ctx, refused, http.headers)
    ctx.method_overridden = request.method == "POST" and _method_override(request)
    plan = server.plan()
    error: RestError | None = None
    # ``determine_current_user``, then ``rest_authentication_errors`` (one chain); without
    # any scheme's credentials, only the callbacks of no scheme (PERF: usually none).
    authentication = (
        plan.authentication
        if plan.schemes.carries_credentials(request)
        else plan.authentication_anonymous
    )
    if authentication is None:
        request.user = ctx.user
    else:
        verdict = run_chain(authentication, ctx.user, request)
        if type(verdict) is Pending:
            verdict = await verdict
        request.user = ctx.user
        error = verdict if isinstance(verdict, RestError) else None
    authenticated = clock()
    result = (
        Response.from_error(error)
        if error is not None
        else await server.dispatch_planned(request, plan)
    )
    dispatched = clock()
    ctx.matched_route = result.matched_route
    # PERF: :func:`finish_hooks` in this frame (a coroutine of its own costs ~0.4 µs);
    # without a query string, without the ``_fields`` filter (``plan.query_only``: a WSGI
    # GET 109,562 → 107,995 instructions, bench/instructions.py).
    posted = run_chain(
        plan.post_dispatch if request.may_have_query else plan.post_dispatch_no_query,
        result,
        server,
        request,
    )
    if type(posted) is Pending:
        posted = await posted
    # PERF: a call less when there is no work (1 of the 44 Python calls of a plain GET).
    if posted is not result or request.may_have_query:
        result = posted_response(posted, result, request)
    served = run_chain(plan.pre_serve, False, result, request, server)
    if type(served) is Pending:
        served = await served
    if served:
        result.data = None
    own = result.header_tuple()
    # PERF: without a query string (and no parameter set by a filter) there is no ``_embed``.
    if request.may_have_query and "_embed" in request.query_params:
        data = await embed_answer(settings, request, result, _embed_fetcher(server), rest_route_of)
    else:
        data = data_with_links(result, request) if result.links else result.data
    answer = _answer(settings, ctx, request, result, own, data)
    if started:
        answer.headers.append(
            server_timing_line(started, authenticated, dispatched, perf_counter())
        )
    return answer


def _answer(
    settings: SiteSettings,
    ctx: RequestContext,
    request: Request,
    result: Response,
    own: tuple[tuple[str, str], ...],
    data: Any,
) -> HttpResponse:
    """The HTTP answer of a finished response: its header lines and body, JSON or the format
    ``Accept`` chose among the site's (a 500 when it has no such form); a 200 to a GET or HEAD
    (not an ``_envelope``) with its ``ETag``, a 304 when ``If-None-Match`` names it; a body of
    ``MIN_SIZE`` or more in the content coding the client prefers
    (:mod:`svcrest.rest.conditional`)."""
    status = result.status
    serializers = settings.serializers
    # PERF: a site that answers JSON only (the usual one) chooses nothing: one attribute
    # read, no call (+324 of 118,226 instructions a plain GET; bench/instructions.py).
    serializer = None
    if serializers is not None:
        serializer, own = serializers.negotiate(request.headers.get_joined("accept"), status, own)
    lines, wire, own_tag = answer_lines(settings, ctx, status, own)
    try:
        # PERF: :func:`encoded_body` written out (a Python call, ~700 instructions, less a
        # request: the answer step went from 247 to 177 bytecodes with its calls folded).
        if data is None or status in _NO_BODY_STATUSES:
            body = b""
        elif serializer is None:
            body = orjson.dumps(data, default=encode_default, option=_JSON_OPTIONS)
        else:
            body = serializer.encode(data)
    except (orjson.JSONEncodeError, UnencodableValue) as error:
        return _unencodable(settings, ctx, request, result, error)
    tagged = status == 200 and request.method in READS and type(result) is not EnvelopeResponse
    short = len(body) < MIN_SIZE
    tag = None
    if tagged and short:
        # PERF: the usual answer, a short body validated by its remembered ETag line, added
        # to the lines before the answer is made (no insertion, no second tuple).
        if own_tag < 0:
            found = remembered_tag_line(body)
            line, line_wire = found if found is not None else tag_line(body)
            lines = (*lines, line)
            wire = (*wire, line_wire)
            tag = line[1]
        else:
            tag = lines[own_tag][1]
    pending = ctx.pending_headers
    answer = HttpResponse(status, [*lines, *pending] if pending else [*lines], body, None, wire)
    if not short:
        return coded_answer(answer, request, own_tag, tagged)
    if tag is not None and not_modified(request, tag):
        answer.status = 304  # with the 200's lines (ETag, Cache-Control, Vary), no body
        answer.body = b""
    return answer


def _unencodable(
    settings: SiteSettings,
    ctx: RequestContext,
    request: Request,
    result: Response,
    error: orjson.JSONEncodeError | UnencodableValue,
) -> HttpResponse:
    """The 500 of an answer its format cannot hold, logged on one line naming the route and why
    (a plugin's mistake, not the client's: no traceback). SECURITY: the method and path
    come from the client: control characters are escaped, so the line stays one line."""
    logger.error(
        "The answer of %s %s (route %s) cannot be sent as %s: %s; answered 500",
        one_line(request.method),
        one_line(request.route),
        one_line(result.matched_route or "none"),
        # orjson's error is a TypeError: a format's own refusal is the narrower class.
        "the format asked for" if isinstance(error, UnencodableValue) else "JSON",
        unencodable_reason(error),
    )
    return error_answer(settings, ctx, internal_error(), request.headers)


def _embed_fetcher(server: RestServer) -> Callable[[Request], Awaitable[Any]]:
    """``?_embed``'s internal requests: dispatch, then the finishing hooks."""

    async def fetch(inner: Request) -> Any:
        with child_span("_embed", inner.method, inner.route):
            response = await server.dispatch_async(inner)
        response = await finish_hooks(server.plan(), server, inner, response)
        return data_with_links(response, inner)

    return fetch
