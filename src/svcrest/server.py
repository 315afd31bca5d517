"""RestServer: the route table and the dispatch pipeline (WordPress's ``WP_REST_Server``)."""

from __future__ import annotations

import logging
import re
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from svcrest.hooks import Pending, is_awaitable
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.response import Response, rest_ensure_response
from svcrest.invoke import call_maybe_async, fitted
from svcrest.routing.table import RouteEntry, RouteTable
from svcrest.schema import schema_keywords_for_help
from svcrest.syncrun import run_sync
from svcrest.validation import apply_defaults, check_params, sanitize_params

if TYPE_CHECKING:
    from svcrest.app import App

__all__ = ["RestServer", "internal_error", "no_route_error", "select_handler"]

logger = logging.getLogger("svcrest")

_PLACEHOLDER = re.compile(r"\(\?P<\w+>")
NO_ROUTE_MESSAGE = "No route was found matching the URL and request method."


def internal_error() -> RestError:
    """The 500 answered for an unexpected exception; it never carries the exception text."""
    return RestError("rest_internal_error", "Internal server error.", {"status": 500})


def no_route_error(status: int) -> RestError:
    """``rest_no_route`` with ``status`` (404: no route matched; 405: none for the method)."""
    return RestError("rest_no_route", NO_ROUTE_MESSAGE, {"status": status})


def select_handler(
    matches: tuple[tuple[RouteEntry, dict[str, str]], ...], method: str
) -> tuple[RouteEntry, dict[str, Any], dict[str, str]] | None:
    """The first handler, over the matching routes in order, that serves ``method``, with its
    route and URL params (shared: copy before changing); None when there is none (a 405).

    HEAD is served by a GET handler unless the handler declares HEAD itself.
    """
    for entry, url_params in matches:
        for handler in entry.handlers:
            allowed = handler["methods"]
            if allowed.get(method) or (
                method == "HEAD" and allowed.get("GET") and not allowed.get("HEAD")
            ):
                return entry, handler, url_params
    return None


class RestServer:
    """Holds the routes of one App and dispatches requests to their handlers."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.hooks = app.hooks
        self.table = RouteTable()
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

    def get_routes(self, namespace: str | None = None) -> dict[str, list[dict[str, Any]]]:
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

    def dispatch(self, request: Request) -> Response:
        """Dispatch ``request`` from sync code (see ``dispatch_async``)."""
        result: Response = run_sync(lambda: self.dispatch_async(request))
        return result

    async def dispatch_async(self, request: Request) -> Response:
        """Run ``rest_pre_dispatch``, match, validate, check permission and call the handler.

        Always returns a Response; errors become their body shape and status.
        """
        return await self._guarded(self._dispatch(request), request)

    async def dispatch_matched(
        self,
        request: Request,
        entry: RouteEntry,
        handler: dict[str, Any],
        url_params: dict[str, str],
    ) -> Response:
        """``dispatch_async`` for a request whose route and handler are already known and
        whose ``rest_pre_dispatch`` filters answered None (the express lane)."""
        return await self._guarded(self._respond(request, entry, handler, url_params), request)

    async def _guarded(
        self, work: Coroutine[Any, Any, Response | RestError], request: Request
    ) -> Response:
        """The Response of ``work``: a raised RestError is answered, anything else logged and
        answered with ``internal_error``."""
        try:
            result = await work
        except RestError as error:
            result = error
        except Exception:
            result = self.unexpected_error(request)
        return self.to_response(result)

    @staticmethod
    def unexpected_error(request: Request) -> RestError:
        """Log the exception being handled while dispatching ``request``; the 500 to answer."""
        logger.exception(
            "Unhandled exception while dispatching %s %s", request.method, request.route
        )
        return internal_error()

    @staticmethod
    def to_response(result: Response | RestError) -> Response:
        """A Response for ``result`` (errors converted, keeping nothing else)."""
        if isinstance(result, RestError):
            return Response.from_error(result)
        return result

    async def _dispatch(self, request: Request) -> Response | RestError:
        hooks = self.hooks
        if hooks.has_callbacks("rest_pre_dispatch"):
            pre = hooks.apply_filters_eager("rest_pre_dispatch", None, self, request)
            if type(pre) is Pending:
                pre = await pre.awaitable
            if pre is not None:
                return rest_ensure_response(pre)
        matches = self.table.matches(request.route)
        if not matches:
            return no_route_error(404)
        chosen = select_handler(matches, request.method)
        if chosen is not None:
            entry, handler, url_params = chosen
            return await self._respond(request, entry, handler, dict(url_params))
        first, first_params = matches[0]
        error = no_route_error(405)
        response = Response.from_error(error)
        response.matched_route = first.route
        # The permission callbacks asked for Allow see the route's URL params, as in dispatch.
        request.url_params = dict(first_params)
        allowed = await self.allowed_methods(first, request)
        response.headers["Allow"] = ", ".join(allowed)
        return response

    async def _respond(
        self,
        request: Request,
        entry: RouteEntry,
        handler: dict[str, Any],
        url_params: dict[str, str],
    ) -> Response | RestError:
        request.url_params = url_params
        request.handler = handler
        result = await self._run_handler(request, entry, handler)
        return self.matched_response(result, entry, handler)

    @staticmethod
    def matched_response(result: Any, entry: RouteEntry, handler: dict[str, Any]) -> Response:
        """A handler's result as the Response of its route and handler."""
        response = rest_ensure_response(result)
        if isinstance(response, RestError):
            response = Response.from_error(response)
        response.matched_route = entry.route
        response.matched_handler = handler
        return response

    async def _run_handler(
        self, request: Request, entry: RouteEntry, handler: dict[str, Any]
    ) -> Any:
        hooks = self.hooks
        # JSON bodies are parsed on every matched route before anything else runs.
        error: RestError | None = None
        try:
            request.parse_json_body()
        except RestError as invalid_json:
            error = invalid_json
        args = handler["args"]
        if error is None and args:
            apply_defaults(request, args)
            error = await check_params(request, args)
            if error is None:
                error = await sanitize_params(request, args)
        result: Any = error
        if hooks.has_callbacks("rest_request_before_callbacks"):
            result = hooks.apply_filters_eager(
                "rest_request_before_callbacks", error, handler, request
            )
            if type(result) is Pending:
                result = await result.awaitable
        if not isinstance(result, RestError):
            result = await self._permitted_call(request, entry, handler)
        if hooks.has_callbacks("rest_request_after_callbacks"):
            result = hooks.apply_filters_eager(
                "rest_request_after_callbacks", result, handler, request
            )
            if type(result) is Pending:
                result = await result.awaitable
        return result

    async def _permitted_call(
        self, request: Request, entry: RouteEntry, handler: dict[str, Any]
    ) -> Any:
        permission = handler.get("permission_callback")
        if permission is not None:
            try:
                allowed = await call_maybe_async(permission, request)
            except RestError as raised:
                allowed = raised
            if isinstance(allowed, RestError):
                return allowed
            if allowed is not True:
                status = 403 if request.user.is_logged_in else 401
                return RestError(
                    "rest_forbidden", "Sorry, you are not allowed to do that.", {"status": status}
                )
        if self.hooks.has_callbacks("rest_dispatch_request"):
            dispatched = self.hooks.apply_filters_eager(
                "rest_dispatch_request", None, request, entry.route, handler
            )
            if type(dispatched) is Pending:
                dispatched = await dispatched.awaitable
            if dispatched is not None:
                return dispatched
        callback = handler["callback"]
        if callback is None:
            return RestError(
                "rest_invalid_handler", "The handler for the route is invalid.", {"status": 500}
            )
        try:
            return await call_maybe_async(callback, request)
        except RestError as raised:
            return raised

    # -- Allow ------------------------------------------------------------------------------

    async def allowed_methods(self, entry: RouteEntry, request: Request) -> list[str]:
        """The methods of ``entry`` the caller may use (the Allow header), upper case, in order.

        A handler's permission_callback decides for each of its methods (only exactly True
        allows); a method in several handlers takes the last handler's answer.
        """
        result = self.allowed_methods_eager(entry, request)
        return result if isinstance(result, list) else await result

    def allowed_methods_eager(
        self, entry: RouteEntry, request: Request
    ) -> list[str] | Coroutine[Any, Any, list[str]]:
        """``allowed_methods`` run synchronously while the permission callbacks are plain;
        from the first awaitable answer on, a coroutine finishes the work."""
        allowed: dict[str, bool] = {}
        handlers = entry.handlers
        for position, handler in enumerate(handlers):
            verdict: Any = True
            permission = handler.get("permission_callback")
            if permission is not None:
                try:
                    verdict = fitted(permission)(request)
                except RestError:
                    verdict = False
                if is_awaitable(verdict):
                    return self._allowed_rest(handlers, position, verdict, allowed, request)
            for method in handler["methods"]:
                allowed[method] = verdict is True
        return [method for method, ok in allowed.items() if ok]

    @staticmethod
    async def _allowed_rest(
        handlers: list[dict[str, Any]],
        position: int,
        pending: Any,
        allowed: dict[str, bool],
        request: Request,
    ) -> list[str]:
        for index in range(position, len(handlers)):
            handler = handlers[index]
            permission = handler.get("permission_callback")
            verdict: Any = True
            if index == position:
                verdict = pending
            elif permission is not None:
                verdict = fitted(permission)(request)
            try:
                if is_awaitable(verdict):
                    verdict = await verdict
            except RestError:
                verdict = False
            for method in handler["methods"]:
                allowed[method] = verdict is True
        return [method for method, ok in allowed.items() if ok]

    # -- help data and indexes --------------------------------------------------------------

    def get_data_for_route(
        self, route: str, handlers: list[dict[str, Any]], context: str = "view"
    ) -> dict[str, Any] | None:
        """WordPress's route data: namespace, methods, endpoints (methods and args help),
        the schema in the ``help`` context, and ``_links.self`` for routes without
        placeholders. In ``view`` context, None when no handler is shown (``show_in_index``
        False)."""
        options = self.get_route_options(route) or {}
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
            data["endpoints"].append({"methods": endpoint_methods, "args": args})
        if not data["endpoints"] and context == "view":
            return None
        data["methods"] = list(methods)
        if not _PLACEHOLDER.search(route):
            data["_links"] = {"self": [{"href": self.app.rest_url(route)}]}
        return data

    def get_data_for_routes(
        self, routes: dict[str, list[dict[str, Any]]], context: str = "view"
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
            "authentication": {},
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
