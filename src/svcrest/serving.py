"""Serving over HTTP: which requests are REST, and WordPress's ``serve_request`` pipeline.

The adapters (``asgi.py``, ``wsgi.py``) turn their protocol into an ``HttpRequest`` and call
:func:`handle_http`; everything here is protocol-neutral.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import orjson

from svcrest.auth.current_user import resolve_current_user
from svcrest.context import RequestContext, _current
from svcrest.hooks import Pending
from svcrest.http.errors import RestError
from svcrest.http.exchange import HttpRequest, HttpResponse, wire_lines
from svcrest.http.forms import parse_form
from svcrest.http.request import Request
from svcrest.http.response import Response, rest_ensure_response
from svcrest.pages import serve_page
from svcrest.server import internal_error

if TYPE_CHECKING:
    from svcrest.app import App
    from svcrest.hooks import Hooks
    from svcrest.server import RestServer

__all__ = ["JSON_CONTENT_TYPE", "encode_json", "handle_http", "rest_route_of"]

logger = logging.getLogger("svcrest")

JSON_CONTENT_TYPE = "application/json; charset=UTF-8"
_STATIC_REST_HEADERS = (
    ("Content-Type", JSON_CONTENT_TYPE),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Robots-Tag", "noindex"),
)
_CORS_SUPPORT_HEADERS = (
    ("Vary", "Origin"),
    ("Access-Control-Expose-Headers", "X-SVC-Total, X-SVC-TotalPages, Link"),
    (
        "Access-Control-Allow-Headers",
        "Authorization, X-SVC-Nonce, Content-Disposition, Content-MD5, Content-Type",
    ),
)
_NO_BODY_STATUSES = frozenset({204, 304})


def encode_json(data: Any) -> bytes:
    """Response JSON (orjson; non-string keys allowed, as PHP arrays would be)."""
    return orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS)


def rest_route_of(app: App, path: str, query_string: str) -> str | RestError | None:
    """The REST route a request addresses, None when it is not a REST request.

    The path is REST when it is ``<home path>/<prefix>`` or below it (``/svc-jsonx`` is
    not); otherwise a non-empty ``rest_route`` query variable makes it one. One trailing
    slash is ignored; the prefix alone is the root ``/``.
    """
    base = app.rest_base_path()
    if path == base or path.startswith(base + "/"):
        route = path[len(base) :] or "/"
    elif "rest_route" in query_string:
        value = parse_form(query_string).get("rest_route")
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            return RestError(
                "rest_invalid_route", "The rest_route parameter must be a string.", {"status": 400}
            )
        route = "/" + value.lstrip("/")
    else:
        return None
    if len(route) > 1 and route.endswith("/"):
        route = route[:-1]
    return route


def _method_override(request: Request) -> None:
    """``X-HTTP-Method-Override`` or ``?_method=`` on POST only."""
    if request.method != "POST":
        return
    override = request.query_params.get("_method")
    if not isinstance(override, str) or not override:
        override = request.get_header("X-HTTP-Method-Override")
    if isinstance(override, str) and override.strip():
        request.method = override.strip().upper()


def data_with_links(response: Response, request: Request) -> Any:
    data = response.data
    if not response.links or not isinstance(data, dict):
        return data
    fields = request.query_params.get("_fields")
    if fields is not None:
        from svcrest.fields import parse_fields

        if "_links" not in parse_fields(fields):
            return data
    return {**data, "_links": response.links}


def envelope_response(response: Response, request: Request) -> Response:
    body = {
        "body": data_with_links(response, request),
        "status": response.status,
        "headers": dict(response.headers.items()),
    }
    enveloped = Response(body, 200)
    enveloped.matched_route = response.matched_route
    enveloped.matched_handler = response.matched_handler
    return enveloped


async def authenticate(app: App, request: Request, ctx: RequestContext) -> RestError | None:
    """``determine_current_user`` and ``rest_authentication_errors``: the error to answer
    with, or None; ``request.user`` is the current user afterwards."""
    hooks = app.hooks
    await resolve_current_user(app, request, ctx)
    result = hooks.apply_filters_eager("rest_authentication_errors", None, request)
    if type(result) is Pending:
        result = await result.awaitable
    request.user = ctx.user
    return result if isinstance(result, RestError) else None


async def post_dispatch(
    hooks: Hooks, server: RestServer, request: Request, result: Response
) -> Response:
    """``rest_post_dispatch`` over a dispatched result, as a Response."""
    posted = hooks.apply_filters_eager("rest_post_dispatch", result, server, request)
    if type(posted) is Pending:
        posted = await posted.awaitable
    ensured = rest_ensure_response(posted)
    return Response.from_error(ensured) if isinstance(ensured, RestError) else ensured


async def pre_serve(hooks: Hooks, server: RestServer, request: Request, result: Response) -> bool:
    """``rest_pre_serve_request``: True when a callback says it served the body itself."""
    served = hooks.apply_filters_eager("rest_pre_serve_request", False, result, request, server)
    if type(served) is Pending:
        served = await served.awaitable
    return bool(served)


async def _serve_request(
    app: App, server: RestServer, request: Request, ctx: RequestContext
) -> Response:
    hooks = app.hooks
    error = await authenticate(app, request, ctx)
    result: Response = (
        Response.from_error(error) if error is not None else await server.dispatch_async(request)
    )
    result = await post_dispatch(hooks, server, request, result)
    if "_envelope" in request.query_params:
        result = envelope_response(result, request)
    if await pre_serve(hooks, server, request, result):
        result.data = None
    return result


# PERF: (Link value, logged in, the response sets its own Content-Type) → the REST header
# lines every response starts with, and their wire encoding. Bounded: Link values are few.
_HEADER_BLOCKS: dict[
    tuple[str | None, bool, bool],
    tuple[tuple[tuple[str, str], ...], tuple[tuple[bytes, bytes], ...]],
] = {}


def header_block(
    link: str | None, logged_in: bool, own_content_type: bool
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[bytes, bytes], ...]]:
    key = (link, logged_in, own_content_type)
    block = _HEADER_BLOCKS.get(key)
    if block is None:
        lines = [
            item
            for item in _STATIC_REST_HEADERS
            if not own_content_type or item[0] != "Content-Type"
        ]
        if link is not None:
            lines.append(("Link", link))
        lines.extend(_CORS_SUPPORT_HEADERS)
        if logged_in:
            lines.append(("Cache-Control", "no-store"))
        if len(_HEADER_BLOCKS) >= 64:
            _HEADER_BLOCKS.clear()
        block = _HEADER_BLOCKS[key] = (tuple(lines), wire_lines(lines))
    return block


def finish_http(
    app: App, ctx: RequestContext, method: str, response: Response, data: Any
) -> HttpResponse:
    own_headers = response.headers
    lines, wire = header_block(
        app.rest_output_link_header(), ctx.user.is_logged_in, "content-type" in own_headers
    )
    headers = [*lines, *own_headers.items_list(), *ctx.pending_headers]
    status = response.status
    body = b"" if data is None or status in _NO_BODY_STATUSES else encode_json(data)
    response_out = HttpResponse(status, headers, body, wire_prefix=wire)
    if method == "HEAD":
        response_out.strip_body_for_head()
    return response_out


def error_http(app: App, ctx: RequestContext, method: str, error: RestError) -> HttpResponse:
    return finish_http(app, ctx, method, Response.from_error(error), error.to_dict())


async def serve_rest(app: App, http: HttpRequest, route: str) -> HttpResponse:
    """Serve one REST request (WordPress's ``serve_request``) inside its own request context."""
    ctx = RequestContext(is_rest=True, secure=http.scheme == "https", host=http.host)
    token = _current.set(ctx)
    try:
        if http.body_too_large:
            return error_http(
                app,
                ctx,
                http.method,
                RestError(
                    "rest_request_too_large",
                    "The request body is too large.",
                    {"status": 413, "max_body_size": app.max_body_size},
                ),
            )
        request = Request.from_http(http.method, route, http.query_string, http.headers, http.body)
        _method_override(request)
        server = app.rest_get_server()
        try:
            response = await _serve_request(app, server, request, ctx)
            data = data_with_links(response, request)
            return finish_http(app, ctx, http.method, response, data)
        except Exception:
            logger.exception("Unhandled exception while serving %s %s", http.method, route)
            return error_http(app, ctx, http.method, internal_error())
    finally:
        _current.reset(token)


async def handle_http(app: App, http: HttpRequest) -> HttpResponse:
    """Serve any request of the site: REST under the prefix, else the App's pages."""
    route = rest_route_of(app, http.path, http.query_string)
    if isinstance(route, RestError):
        ctx = RequestContext(is_rest=True)
        return error_http(app, ctx, http.method, route)
    if route is not None:
        return await serve_rest(app, http, route)
    return await serve_page(app, http)
