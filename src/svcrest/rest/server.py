"""RestServer: the route table and the dispatch pipeline (WordPress's ``WP_REST_Server``)."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from svcrest.chains import NOT_AWAITABLE, Pending, is_awaitable, run_chain
from svcrest.http.context import current_context
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.response import Response, data_response, rest_ensure_response
from svcrest.http.scope import scope_error
from svcrest.rest.defaults import DEFAULT_FINISH, DEFAULT_STEPS, CorsLines, site_cors
from svcrest.rest.guard import Ticket, enter_guard
from svcrest.rest.plan import PipelinePlan
from svcrest.rest.routing.definitions import Handler
from svcrest.rest.routing.table import RouteEntry, RouteTable, select_handler
from svcrest.rest.schema import schema_keywords_for_help
from svcrest.rest.validation import ArgPlan
from svcrest.syncrun import run_sync

try:  # the compiled build (mypyc) reads the decorator; without mypy_extensions it is a no-op
    from mypy_extensions import mypyc_attr
except ImportError:  # pragma: no cover - mypy_extensions comes with mypy, a dev dependency
    from svcrest.rest.mypyc_stub import mypyc_attr

if TYPE_CHECKING:
    from svcrest.rest.settings import SiteSettings

__all__ = ["RestServer", "internal_error", "no_route_error", "select_handler"]

logger = logging.getLogger("svcrest")

#: Bodies longer than this (bytes) are parsed off the event loop.
OFFLOAD_BODY_SIZE = 256 * 1024
_PLACEHOLDER = re.compile(r"\(\?P<\w+>")
NO_ROUTE_MESSAGE = "No route was found matching the URL and request method."


def internal_error() -> RestError:
    """The 500 answered for an unexpected exception; it never carries the exception text."""
    return RestError("rest_internal_error", "Internal server error.", {"status": 500})


def no_route_error(status: int) -> RestError:
    """``rest_no_route`` with ``status`` (404: no route matched; 405: none for the method)."""
    return RestError("rest_no_route", NO_ROUTE_MESSAGE, {"status": status})


def _enforce_scope(entry: RouteEntry, request: Request) -> None:
    """Raise the 403 of a request outside the scope of the application password that
    authenticated it (:mod:`svcrest.http.scope`); nothing when it has no scope or is inside."""
    ctx = current_context()
    scope = None if ctx is None else ctx.app_password_scope
    if scope is not None and not scope.allows(entry.namespace, entry.route, request.method):
        raise scope_error()


@mypyc_attr(allow_interpreted_subclasses=True)  # ``svc_rest_server_class`` subclasses it
class RestServer:
    """Holds the routes of one App and dispatches requests to their handlers."""

    def __init__(self, app: SiteSettings) -> None:
        self.app = app
        self.hooks = app.hooks
        #: The CORS lines answering each Origin (the site's ``cors``), read by the default
        #: ``rest_pre_serve_request`` filter.
        self.cors: CorsLines = site_cors(app)
        self._plan = PipelinePlan(self.hooks, self.app.auth_schemes, DEFAULT_FINISH, DEFAULT_STEPS)
        self.table = RouteTable()
        #: Root index ``authentication`` entries (scheme name → its description) besides
        #: those of the site's authentication schemes (``app.auth_schemes``).
        self.authentication: dict[str, Any] = {}
        self.table.add(
            "",
            "/",
            {
                "methods": "GET",
                "callback": self.get_index,
                "args": {"context": {"default": "view"}},
            },
        )

    # -- registration -----------------------------------------------------------------------

    def register_route(self, namespace: str, route: str, args: Any, override: bool = False) -> bool:
        """Register handlers for the full route string ``route`` (see ``App.register_rest_route``).

        Adds the namespace index route ``/<namespace>`` the first time a namespace is seen.
        Raises ``RouteDefinitionError`` for a definition that cannot work.
        """
        if namespace and namespace not in self.table.namespaces:
            index_route = "/" + namespace.strip("/")
            if self.table.get(index_route) is None:
                self.table.add(
                    namespace,
                    index_route,
                    {
                        "methods": "GET",
                        "callback": self.get_namespace_index,
                        "args": {
                            "namespace": {"default": namespace},
                            "context": {"default": "view"},
                        },
                    },
                )
        self.table.add(namespace, route, args, override=override)
        return True

    def get_routes(self, namespace: str | None = None) -> dict[str, list[Handler]]:
        """Every full route (optionally of one namespace) mapped to its handlers, in order."""
        return {
            entry.route: list(entry.handlers)
            for entry in self.table
            if namespace is None or entry.namespace == namespace
        }

    def get_route_options(self, route: str) -> dict[str, Any] | None:
        """The options registered for ``route`` (``namespace``, ``schema``, …)."""
        entry = self.table.get(route)
        return None if entry is None else dict(entry.options)

    def get_namespaces(self) -> list[str]:
        """Namespaces in registration order."""
        return self.table.namespaces

    # -- dispatch ---------------------------------------------------------------------------

    def plan(self) -> PipelinePlan:
        """The pipeline's hooks prepared for the current version of the hooks."""
        plan = self._plan
        if plan.version != self.hooks.version:
            plan = self._plan = PipelinePlan(
                self.hooks, self.app.auth_schemes, DEFAULT_FINISH, DEFAULT_STEPS
            )
        return plan

    def dispatch(self, request: Request) -> Response:
        """Dispatch ``request`` from sync code (see ``dispatch_async``)."""
        result: Response = run_sync(lambda: self.dispatch_async(request))
        return result

    async def dispatch_async(self, request: Request) -> Response:
        """Run ``rest_pre_dispatch``, match, validate, check permission and call the handler.

        Always returns a Response; errors become their body shape and status, and an
        unexpected exception is logged and answered with ``internal_error``.
        """
        return await self.dispatch_planned(request, self.plan())

    async def dispatch_planned(self, request: Request, plan: PipelinePlan) -> Response:
        """``dispatch_async`` with the hooks prepared by ``plan`` (the pipeline has it).

        WordPress's ``dispatch`` and ``respond_to_request`` in one coroutine: match, the JSON
        body, argument checks, ``rest_request_before_callbacks``, then the handler's respond
        chain (permission, ``rest_dispatch_request``, the callback: a RestError raised there
        is the answer) and ``rest_request_after_callbacks``. Every chain runs with
        :func:`~svcrest.chains.run_chain`. PERF: one frame for the whole dispatch (a
        coroutine per stage cost ~1 µs).
        """
        request.site = self.app
        ticket: Ticket | None = None
        matched = ""  # the route once matched: an answer made from an exception names it too
        try:
            # PERF: the plan leaves out the default OPTIONS filter for any other method (it
            # answers OPTIONS only), and an empty chain is not run (a call less).
            pre_dispatch = (
                plan.pre_dispatch if request.method == "OPTIONS" else plan.pre_dispatch_no_options
            )
            pre = run_chain(pre_dispatch, None, self, request) if pre_dispatch else None
            if type(pre) is Pending:
                pre = await pre
            if pre is not None:
                return self._as_response(pre)
            chosen = self.table.handler_for(request.route, request.method)
            if chosen is None:
                return await self._unmatched(request, self.table.matches(request.route))
            entry, handler, url_params = chosen
            matched = entry.route
            # SECURITY: a request (or batch, ``_embed``, MCP sub-request) authenticated by a
            # scoped application password reaches only the routes of its scope (the 403 is
            # raised). PERF: one test for an anonymous request (+126 of 113,901 instructions
            # a plain GET, bench/budget.py), a call only for one with a scope.
            if (
                request.user.id
                and (ctx := current_context()) is not None
                and ctx.app_password_scope is not None
            ):
                _enforce_scope(entry, request)
            definition = request.handler = handler.definition
            request.url_params = dict(url_params)
            # Idempotency keys and rate limits (svcrest.rest.guard): an answer instead of a
            # run (a replay, 429, 409…), or the ticket that finishes the answer.
            if (entry.guard is not None or plan.rate_limit) and (
                ticket := await enter_guard(entry, definition, self.app, request, plan.rate_limit)
            ).answer is not None:
                return ticket.answer
            # JSON bodies are parsed on every matched route before anything else runs, then
            # the handler's argument step. PERF: without a body, its plan (prepared at
            # registration) runs here, not in a coroutine, awaited only when a callback
            # answered with an awaitable (~1,500 instructions a GET with args: the internal
            # GET of an ability's run route 90,672 → 89,125).
            result: Any = (
                await self.checked_params(request, definition, handler.arg_plan)
                if request.raw_body
                else None
                if not handler.args
                else ran
                if (ran := handler.arg_plan.run(request, definition["args"])) is None
                or isinstance(ran, RestError)
                else await ran
            )
            # PERF: ``rest_request_before_callbacks`` and ``…_after_callbacks`` are usually
            # empty: no runner call then (the runner's documented idiom, see
            # svcrest.chains). With the respond chain's shortcuts
            # (svcrest.rest.routing.table), an anonymous GET went from 93,532 to 92,102
            # instructions (bench/instructions.py).
            before = plan.before_callbacks
            result = run_chain(before, result, definition, request) if before else result
            if type(result) is Pending:
                result = await result
            if not isinstance(result, RestError):
                built = handler.respond
                respond = (
                    built[1]
                    if built[0] is plan.dispatch_request
                    else handler.respond_for(plan.dispatch_request, matched)[1]
                )
                try:
                    result = respond(request)
                    if type(result) not in NOT_AWAITABLE and is_awaitable(result):
                        result = await result
                except RestError as raised:
                    result = raised
            after = plan.after_callbacks
            result = run_chain(after, result, definition, request) if after else result
            if type(result) is Pending:
                result = await result
            # PERF: the usual answer of a callback made here (a Python call less: a WSGI GET
            # 89,252 → 88,745 instructions, bench/instructions.py), without a class call
            # (``data_response``); ``_as_response`` for the others.
            kind = type(result)
            response = (
                data_response(result) if kind is dict or kind is list else self._as_response(result)
            )
            response.matched_route = matched
            response.matched_handler = definition
        except Exception as raised:  # a RestError is the answer; anything else is logged, 500
            error = (
                raised if isinstance(raised, RestError) else self.unexpected_error(request, matched)
            )
            response = Response.from_error(error)
            response.matched_route = matched
        return response if ticket is None else ticket.leave(response)

    @staticmethod
    async def checked_params(
        request: Request, handler: Handler, plan: ArgPlan | None = None
    ) -> RestError | None:
        """The JSON body parsed, then the handler's argument step (defaults, checks and
        sanitising): the first error, or None (also a batch's validation step). ``plan``:
        the handler's, prepared at registration (``PreparedHandler.arg_plan``); args that
        are not the ones it was prepared for get a plan made now."""
        if request.raw_body:
            try:
                if len(request.raw_body) > OFFLOAD_BODY_SIZE:
                    # A big body is parsed and checked in a worker thread: other requests
                    # keep being answered meanwhile (10 MiB of nested arrays take ~1 s).
                    await asyncio.to_thread(request.parse_json_body)
                else:
                    request.parse_json_body()
            except RestError as invalid_json:
                return invalid_json
        args = handler["args"]
        if not args:
            return None
        result = (ArgPlan(args) if plan is None else plan).run(request, args)
        if result is not None and not isinstance(result, RestError):
            result = await result  # a callback answered with an awaitable
        return result

    @staticmethod
    def unexpected_error(request: Request, route: str = "") -> RestError:
        """Log the exception being handled while dispatching ``request`` (the record names
        the matched ``route`` as ``record.route``); the 500 to answer."""
        logger.exception(
            "Unhandled exception while dispatching %s %s (request %s)",
            request.method,
            request.route,
            request.request_id,
            extra={"route": route},
        )
        return internal_error()

    @staticmethod
    def to_response(result: Response | RestError) -> Response:
        """A Response for ``result`` (errors converted, keeping nothing else)."""
        if isinstance(result, RestError):
            return Response.from_error(result)
        return result

    def _as_response(self, result: Any) -> Response:
        """The Response of a handler's (or ``rest_pre_dispatch``'s) answer; errors converted
        by ``to_response``."""
        kind = type(result)
        if kind is Response:
            return result  # type: ignore[no-any-return]
        if kind is dict or kind is list:  # PERF: the common answer of a callback
            return Response(result)
        return self.to_response(rest_ensure_response(result))

    async def _unmatched(
        self, request: Request, matches: tuple[tuple[RouteEntry, dict[str, str]], ...]
    ) -> Response:
        """The 404 of a route no pattern matches, or the 405 of a method no handler serves."""
        if not matches:
            return Response.from_error(no_route_error(404))
        return await self._method_not_allowed(request, matches)

    async def _method_not_allowed(
        self, request: Request, matches: tuple[tuple[RouteEntry, dict[str, str]], ...]
    ) -> Response:
        """The 405 of a route without a handler for the method, with its Allow header (also
        for internal dispatch, which runs no ``rest_post_dispatch``); none when the caller may
        use no method (spec 4.5)."""
        first, first_params = matches[0]
        response = Response.from_error(no_route_error(405))
        response.matched_route = first.route
        # The permission callbacks asked for Allow see the route's URL params, as in dispatch.
        request.url_params = dict(first_params)
        value = first.allow_value(request)
        if type(value) is Pending:
            value = await value
        if value:
            response.headers["Allow"] = value
        return response

    @staticmethod
    def prepare_response_for_collection(response: Any) -> Any:
        """An item of a list answer: a Response's data with its ``_links`` (WordPress's
        ``prepare_response_for_collection``); anything else as it is."""
        if not isinstance(response, Response):
            return response
        data = response.data
        if response.links and isinstance(data, dict):
            return {**data, "_links": response.links}
        return data

    # -- help data and indexes --------------------------------------------------------------

    def get_data_for_route(
        self, route: str, handlers: list[Handler], context: str = "view"
    ) -> dict[str, Any] | None:
        """WordPress's route data: namespace, methods, endpoints (methods and args help),
        the schema in the ``help`` context, and ``_links.self`` for routes without
        placeholders. In ``view`` context, None when no handler is shown (``show_in_index``
        False on each handler, or as a route option beside the handlers)."""
        options = self.get_route_options(route) or {}
        if context == "view" and options.get("show_in_index") is False:
            return None
        data: dict[str, Any] = {
            "namespace": options.get("namespace", ""),
            "methods": [],
            "endpoints": [],
        }
        if context == "help" and callable(options.get("schema")):
            data["schema"] = options["schema"]()
        methods: dict[str, None] = {}
        for handler in handlers:
            if context == "view" and handler.get("show_in_index") is False:
                continue
            endpoint_methods = list(handler["methods"])
            methods.update(dict.fromkeys(endpoint_methods))
            args = {
                name: schema_keywords_for_help(definition)
                for name, definition in handler["args"].items()
                if isinstance(definition, Mapping)
            }
            endpoint: dict[str, Any] = {"methods": endpoint_methods, "args": args}
            allow_batch = handler.get("allow_batch", options.get("allow_batch"))
            if allow_batch:
                endpoint["allow_batch"] = allow_batch
            data["endpoints"].append(endpoint)
        if not data["endpoints"] and context == "view":
            return None
        data["methods"] = list(methods)
        if not _PLACEHOLDER.search(route):
            data["_links"] = {"self": [{"href": self.app.rest_url(route)}]}
        return data

    def get_data_for_routes(
        self, routes: dict[str, list[Handler]], context: str = "view"
    ) -> dict[str, Any]:
        """Route data for many routes; routes without shown handlers are left out."""
        result: dict[str, Any] = {}
        for route, handlers in routes.items():
            data = self.get_data_for_route(route, handlers, context)
            if data is not None:
                result[route] = data
        return result

    def get_index(self, request: Request) -> Response:
        """The root index ``GET /``: site description, namespaces and every route."""
        app = self.app
        data = {
            "name": app.name,
            "description": app.description,
            "url": app.home,
            "home": app.home,
            "gmt_offset": app.gmt_offset(),
            "timezone_string": app.timezone_string,
            "namespaces": self.get_namespaces(),
            "authentication": {**app.auth_schemes.index_entries(), **self.authentication},
            "routes": self.get_data_for_routes(self.get_routes(), "view"),
        }
        response = Response(data)
        response.add_link("help", "https://developer.wordpress.org/rest-api/")
        return response

    def get_namespace_index(self, request: Request) -> Response | RestError:
        """The namespace index ``GET /<namespace>``: its routes."""
        namespace = request.get_param("namespace")
        if namespace not in self.get_namespaces():
            return RestError(
                "rest_invalid_namespace",
                "The specified namespace could not be found.",
                {"status": 404},
            )
        routes = self.get_routes(namespace)
        data = {"namespace": namespace, "routes": self.get_data_for_routes(routes, "view")}
        response = Response(data)
        response.add_link("up", self.app.rest_url("/"))
        return response
