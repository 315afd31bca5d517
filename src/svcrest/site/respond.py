"""The one entry point of every HTTP request: REST, a site page, or the wrapped site app.

Both adapters call :func:`respond` once per request. It decides once whether the request is
REST, opens the request context, catches what nothing else caught (a 500 that never carries
the exception text), adds the discovery ``Link`` header to every non-REST answer and strips
HEAD bodies (a POST's overridden to HEAD too): each of these happens here and nowhere else.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from time import perf_counter

from svcrest.auth.session_cache import SETTLE_UNTIL, wait_settled
from svcrest.http.context import REQUEST_CONTEXT, RequestContext
from svcrest.http.errors import BodyReadError, RestError
from svcrest.http.exchange import HttpRequest, HttpResponse
from svcrest.http.headers import Headers
from svcrest.http.request_id import ACCESS_LOG, LOGGED_REQUEST, REQUEST_IDS, checked_request_id
from svcrest.rest.answer import error_answer
from svcrest.rest.pipeline import serve_rest
from svcrest.rest.server import internal_error
from svcrest.rest.tracing import traced
from svcrest.rest.urls import rest_route_of
from svcrest.site.edge import request_edge
from svcrest.site.host import SiteHost
from svcrest.site.pages import serve_page

__all__ = ["BodyReader", "SiteForward", "body_error_page", "respond"]

logger = logging.getLogger("svcrest")

#: Reads the request body: its bytes, or None when it is longer than ``max_body_size``; raises
#: ``BodyReadError`` when the client is too slow.
BodyReader = Callable[[], Awaitable[bytes | None]]

#: ``RequestContext.serving``, bound once. PERF: a class method looked up on its class makes
#: a bound method at every call (a WSGI GET 88,649 → 88,355 instructions,
#: bench/instructions.py).
_serving_context = RequestContext.serving

# PERF: the context variables' methods bound once (why: :data:`~svcrest.http.context.
# current_context`; these three calls cost a request ~700 instructions otherwise).
_enter_context = REQUEST_CONTEXT.set
_leave_context = REQUEST_CONTEXT.reset
_settle_until = SETTLE_UNTIL.get


@dataclass(frozen=True, slots=True)
class SiteForward:
    """The request is not REST and the App wraps a ``site`` app: the adapter hands the
    request to it and adds ``lines`` (the discovery Link header) to its answer."""

    lines: tuple[tuple[str, str], ...]


def _link_lines(host: SiteHost) -> tuple[tuple[str, str], ...]:
    link = host.rest_output_link_header()
    return () if link is None else (("Link", link),)


def _plain_500() -> HttpResponse:
    return HttpResponse(
        500, [("Content-Type", "text/plain; charset=UTF-8")], b"Internal server error."
    )


def body_error_page(error: RestError) -> HttpResponse:
    """The short text answer of an error met outside dispatch (a body that could not be read,
    a store's 503) to a request outside REST, with the error's own header lines."""
    return HttpResponse(
        error.status,
        [("Content-Type", "text/plain; charset=UTF-8"), *error.headers],
        error.message.encode(),
    )


def _outside_dispatch(
    host: SiteHost, ctx: RequestContext, rest: bool, error: RestError, headers: Headers
) -> HttpResponse:
    """A REST request gets ``error`` in the JSON error shape, a page its text form."""
    return error_answer(host, ctx, error, headers) if rest else body_error_page(error)


def _failed(host: SiteHost, ctx: RequestContext, http: HttpRequest, rest: bool) -> HttpResponse:
    """The 500 of an exception nothing caught (being handled), logged with the request's id
    and route; never the exception's text."""
    logger.exception(
        "Unhandled exception while serving %s %s (request %s)",
        http.method,
        http.path,
        ctx.request_id,
        extra={"request_id": ctx.request_id, "route": ctx.matched_route},
    )
    try:
        return error_answer(host, ctx, internal_error(), http.headers) if rest else _plain_500()
    except Exception:
        logger.exception("Unhandled exception while answering the 500")
        return _plain_500()


async def respond(
    host: SiteHost, http: HttpRequest, read_body: BodyReader | None, sent_id: str = ""
) -> HttpResponse | SiteForward:
    """Serve one HTTP request of ``host``'s site (``read_body`` None: it has no body).

    Every answer carries the request's ``X-Request-Id``: ``sent_id`` (the one the client sent,
    as the adapter read it) when valid, else a new one; the request's context holds it
    (``ctx.request_id``). The site's observers (:mod:`svcrest.site.edge`) are told of it."""
    edge = host.request_edge or request_edge(host)
    started = perf_counter() if edge.observer is not None else 0.0
    # PERF: a new id made in C (~200 instructions; ~3,500 with a look-up and a call before).
    request_id = checked_request_id(sent_id) if sent_id else next(REQUEST_IDS.made)
    route = rest_route_of(host.rest_base_path(), http.path, http.query_string)
    ctx = _serving_context(http, route is not None, request_id)
    if ACCESS_LOG.on:  # the server's access-log line names the request (id, route, user)
        LOGGED_REQUEST.set(ctx)
    if route is None and host.site is not None:
        return SiteForward((*_link_lines(host), ("X-Request-Id", request_id)))
    token = _enter_context(ctx)
    try:
        if type(route) is str:
            # PERF: the server as created already (a Python call less a request).
            server = host.rest_server or host.rest_get_server()
            answer = serve_rest(server, http, route, ctx, read_body)
            tracer = edge.tracer
            response = await (
                answer if tracer is None else traced(tracer, answer, http.method, ctx)
            )
        elif isinstance(route, RestError):
            response = error_answer(host, ctx, route, http.headers)
        else:
            response = await serve_page(host, http, ctx, read_body)
            response.headers.extend(_link_lines(host))
    except BodyReadError as exc:
        response = _outside_dispatch(host, ctx, route is not None, exc.error, http.headers)
    except RestError as error:  # a store's 503 (busy, unavailable) met outside dispatch
        response = _outside_dispatch(host, ctx, route is not None, error, http.headers)
    except Exception:
        response = _failed(host, ctx, http, route is not None)
    finally:
        _leave_context(token)
    if _settle_until():  # a revocation deferred its wait: hold the answer until it passed
        await wait_settled()
    if http.method == "HEAD":
        response.strip_body_for_head()
    elif ctx.method_overridden == "HEAD":
        # Still the answer to a POST: no body, and a Content-Length of 0, not the GET's
        # length (the client reads the length it is told). The pipeline's override decided
        # the method; it is not read again here.
        response.body = b""
    response.request_id = request_id
    if started:
        edge.record(http.method, ctx, response.status, started)
    return response
