"""An OpenAPI 3.1.0 document of the routes shown in the index (docs/guides/openapi.md).

:func:`build_openapi` reads the registry each time it is called, so a route registered later
is in the next document. What it writes:

- each full route becomes a path (``routing.template``): named groups are ``{name}`` path
  parameters whose schema keeps the group's regex as ``pattern``; unnamed groups are
  parameters ``{group1}``… the handler never receives; a route no template describes is left
  out and listed under ``x-svc-undocumented-routes``, as is a route whose template another
  route already took (the first registered keeps it, as in dispatch);
- one operation per method of each shown handler (``show_in_index`` not False, on the
  handler or as a route option, WordPress's form, which hides the whole route); the first
  handler of a method serves it, so later handlers of that method are left out; methods
  OpenAPI has no field for are left out; ``operationId`` is the method and the path in
  ``snake_case`` (``get_demo_v1_notes_id``), with ``_2``… on a clash, in registration order;
- GET, HEAD, DELETE (and OPTIONS, TRACE) args are query parameters; POST, PUT and PATCH args a
  JSON and form ``requestBody`` object whose ``required`` lists the required args without a
  default; path parameters are only path parameters;
- the success answer: the handler's own ``response_schema`` (a schema or a callable returning
  one) when it has one; else the route's ``schema``, as an array of it for the GET of a
  *collection* (a route with a sibling ``<route>/(?P<…>…)`` that has the same ``schema``,
  WordPress's controller layout), which also answers POST with 201; the index routes get
  their own schemas. Object schemas get an optional ``_links``;
- every documented 4xx (400 with parameters, 401 and 403 with a permission callback, 404
  with path parameters, and ``4XX`` for the rest) refers to the shared ``Error`` schema;
- security: the document's requirements are none or any of the site's authentication
  schemes (``svcrest.rest.auth_schemes``: the cookie with a nonce, header or ``_wpnonce``,
  and HTTP Basic with application passwords by default): the permission callback of each
  route decides. An operation whose ``permission_callback`` is ``svcrest.public``, and the
  index routes, have ``security: []``: they need no authentication, and Swagger UI shows no
  padlock on them;
- ``info.version`` is the site's own version (``App(version=...)``), else
  ``REST_API_VERSION``; dates are ``format: date-time`` in what clients send and WordPress's
  offset-less shape (a ``pattern`` with an example) in answers (``rest.schema.dialect``).

The ``svc_openapi_document`` filter receives the finished document and the server.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from svcrest.constants import REST_API_VERSION
from svcrest.rest.openapi_guard import document_guard
from svcrest.rest.routing.definitions import Handler, public
from svcrest.rest.routing.template import RouteTemplate, route_template
from svcrest.rest.schema.dialect import to_openapi_schema
from svcrest.rest.server import RestServer
from svcrest.rest.settings import SiteSettings
from svcrest.rest.typed import ReturnedSchema

__all__ = [
    "ERROR_SCHEMA",
    "OPENAPI_VERSION",
    "build_openapi",
    "is_public",
    "rest_root_for_servers",
    "security_schemes",
]

logger = logging.getLogger("svcrest")

OPENAPI_VERSION: Final = "3.1.0"
ERROR_SCHEMA: Final = "Error"
LINKS_SCHEMA: Final = "Links"
DOCUMENT_FILTER: Final = "svc_openapi_document"

_OPERATION_METHODS: Final = ("GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE")
_BODY_METHODS: Final = frozenset({"POST", "PUT", "PATCH"})
_TEMPLATE_PARAM = re.compile(r"\{[^}]*\}")
_NOT_ID = re.compile(r"[^A-Za-z0-9]+")
_NOT_COMPONENT = re.compile(r"[^A-Za-z0-9._-]+")
_JSON = "application/json"
_FORM = "application/x-www-form-urlencoded"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _error_response(description: str) -> dict[str, Any]:
    return {"description": description, "content": {_JSON: {"schema": _ref(ERROR_SCHEMA)}}}


_ERROR: Final = {
    "type": "object",
    "description": "A REST error; data.status is the HTTP status.",
    "required": ["code", "message", "data"],
    "properties": {
        "code": {"type": "string"},
        "message": {"type": "string"},
        "data": {
            "type": "object",
            "required": ["status"],
            "properties": {
                "status": {"type": "integer"},
                # The names of the missing parameters, or a message per invalid one.
                "params": {
                    "type": ["array", "object"],
                    "items": {"type": "string"},
                    "additionalProperties": {"type": "string"},
                },
                "details": {"type": "object"},
            },
        },
    },
}
_LINKS: Final = {
    "type": "object",
    "description": "Links by relation (WordPress's _links).",
    "additionalProperties": {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["href"],
            "properties": {"href": {"type": "string"}, "embeddable": {"type": "boolean"}},
        },
    },
}
_STRINGS: Final = {"type": "array", "items": {"type": "string"}}
_ROUTE_DATA: Final = {
    "type": "object",
    "required": ["namespace", "methods", "endpoints"],
    "properties": {
        "namespace": {"type": "string"},
        "methods": _STRINGS,
        "endpoints": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["methods", "args"],
                "properties": {"methods": _STRINGS, "args": {"type": "object"}},
            },
        },
        "schema": {"type": "object"},
        "_links": _ref(LINKS_SCHEMA),
    },
}
_ROUTES: Final = {"type": "object", "additionalProperties": _ref("RouteData")}
_ROOT_INDEX: Final = {
    "type": "object",
    "required": [
        "name", "description", "url", "home", "gmt_offset", "timezone_string", "namespaces",
        "authentication", "routes",
    ],
    "properties": {
        "name": {"type": "string"},
        "description": {"type": "string"},
        "url": {"type": "string"},
        "home": {"type": "string"},
        "gmt_offset": {"type": "number"},
        "timezone_string": {"type": "string"},
        "namespaces": _STRINGS,
        "authentication": {"type": "object"},
        "routes": _ROUTES,
        "_links": _ref(LINKS_SCHEMA),
    },
}  # fmt: skip
_NAMESPACE_INDEX: Final = {
    "type": "object",
    "required": ["namespace", "routes"],
    "properties": {
        "namespace": {"type": "string"},
        "routes": _ROUTES,
        "_links": _ref(LINKS_SCHEMA),
    },
}
_TOTAL_HEADERS: Final = {
    "X-SVC-Total": {"description": "The number of items.", "schema": {"type": "integer"}},
    "X-SVC-TotalPages": {"description": "The number of pages.", "schema": {"type": "integer"}},
}

_ETAG_HEADER: Final = {
    "description": (
        "The strong validator of this answer: sent back in If-None-Match it gets a 304 while "
        "the answer is unchanged; in If-Match it makes a write fail with 412 once changed."
    ),
    "schema": {"type": "string"},
}
_READS: Final = frozenset({"GET", "HEAD"})
_CONDITIONAL_WRITES: Final = frozenset({"PUT", "PATCH", "DELETE"})


def _header_parameter(name: str, description: str, required: bool) -> dict[str, Any]:
    return {
        "name": name,
        "in": "header",
        "required": required,
        "description": description,
        "schema": {"type": "string"},
    }


def conditional_parameters(method: str, etag: bool, required: bool) -> list[dict[str, Any]]:
    """The ``If-None-Match`` header of a GET or HEAD; ``If-Match`` of a PUT, PATCH or DELETE
    whose route has an ``etag_callback`` (required with ``require_if_match``)."""
    if method in _READS:
        text = "An ETag read before (a list, weak tags and * too): 304 when it is current."
        return [_header_parameter("If-None-Match", text, False)]
    if etag and method in _CONDITIONAL_WRITES:
        text = "The ETag read before: 412 when the resource has changed since."
        return [_header_parameter("If-Match", text, required)]
    return []


def add_conditional_responses(
    responses: dict[str, Any], method: str, status: str, etag: bool, required: bool
) -> None:
    """The ``ETag`` header of a 200 GET / HEAD (and of a PUT or PATCH with an
    ``etag_callback``), its 304, and the 412 and 428 of conditional writes."""
    success = responses.get(status)
    if method in _READS:
        if success is not None and status == "200":
            success.setdefault("headers", {})["ETag"] = dict(_ETAG_HEADER)
        responses["304"] = {
            "description": "Not Modified: If-None-Match names the current ETag (no body).",
            "headers": {"ETag": dict(_ETAG_HEADER)},
        }
        return
    if not etag or method not in _CONDITIONAL_WRITES:
        return
    if success is not None and method != "DELETE":
        success.setdefault("headers", {})["ETag"] = dict(_ETAG_HEADER)
    failed = _error_response("rest_precondition_failed: If-Match names no current ETag.")
    failed["headers"] = {"ETag": dict(_ETAG_HEADER)}
    responses["412"] = failed
    if required:
        responses["428"] = _error_response("rest_precondition_required: If-Match is missing.")


def security_schemes(settings: SiteSettings) -> dict[str, Any]:
    """The ways to authenticate, as the site's authentication schemes declare them (the
    auth cookie with a nonce, HTTP Basic with application passwords, any added one)."""
    return settings.auth_schemes.openapi_schemes()


def rest_root_for_servers(settings: SiteSettings) -> str:
    """The REST root as an OpenAPI server URL: without its trailing slash, since every path
    starts with one. Plain-permalink sites (``?rest_route=``) are also served under the
    prefix, so that path is used for them."""
    root = settings.rest_url("/")
    if "?" in root or not root.endswith("/"):
        scheme, _, rest = settings.home.partition("://")
        origin = scheme + "://" + rest.split("/", 1)[0]
        return origin + settings.rest_base_path()
    return root.rstrip("/")


def _summary(callback: Any) -> str | None:
    """The first line of a plain function's or method's docstring."""
    if not (inspect.isfunction(callback) or inspect.ismethod(callback)):
        return None
    doc = inspect.getdoc(callback)
    if not doc:
        return None
    # Swagger UI shows summaries as plain text: reST literals lose their backquotes.
    return doc.strip().split("\n\n", 1)[0].replace("\n", " ").replace("``", "")


def _query_style(schema: Mapping[str, Any]) -> dict[str, Any]:
    """How a query value is written so that svcrest reads it back: objects as ``a[b]=1``
    (PHP-style keys), arrays comma-separated (WordPress splits a string on commas)."""
    kind = schema.get("type")
    types = set(kind) if isinstance(kind, list) else {kind}
    if types == {"object"}:
        return {"style": "deepObject", "explode": True}
    if "array" in types:
        return {"style": "form", "explode": False}
    return {}


def is_public(handler: Handler) -> bool:
    """Whether a handler declares that it needs no authentication: its
    ``permission_callback`` is ``svcrest.public`` (WordPress's ``__return_true``). Its
    operations get ``security: []`` (so do the index routes); every other operation keeps the
    document's requirements (anonymous, cookie + nonce, or Basic), since its permission
    callback may look at the user, and so may the requests of a batch, whose route has no
    permission callback."""
    return handler.get("permission_callback") is public


def _is_required(arg: Mapping[str, Any]) -> bool:
    return bool(arg.get("required", False)) and "default" not in arg


class _Builder:
    """One document: components found along the way, operation ids given out."""

    def __init__(self, server: RestServer, settings: SiteSettings) -> None:
        self.server = server
        self.settings = settings
        self.components: dict[str, Any] = {
            ERROR_SCHEMA: copy.deepcopy(_ERROR),
            LINKS_SCHEMA: copy.deepcopy(_LINKS),
        }
        self.schema_names: dict[Any, str] = {}
        self.operation_ids: set[str] = set()
        self.undocumented: list[str] = []
        self.routes = server.get_routes()
        self.options = {route: server.get_route_options(route) or {} for route in self.routes}
        self.item_schemas = self._item_schemas()

    def _item_schemas(self) -> dict[str, list[Any]]:
        """Route → the ``schema`` options of the routes below it that start with a named group
        (``/things`` → the schema of ``/things/(?P<id>…)``). PERF: one pass over the routes,
        so a table of 10,000 routes costs no quadratic scan."""
        found: dict[str, list[Any]] = {}
        for route in self.routes:
            schema = self.options[route].get("schema")
            if not callable(schema):
                continue
            start = route.find("/(?P<")
            while start > 0:
                found.setdefault(route[:start], []).append(schema)
                start = route.find("/(?P<", start + 1)
        return found

    # -- the document -----------------------------------------------------------------------

    def document(self) -> dict[str, Any]:
        paths: dict[str, dict[str, Any]] = {}
        owners: dict[str, str] = {}  # template with {} for names → its path
        for route, handlers in self.routes.items():
            shown = [handler for handler in handlers if handler.get("show_in_index") is not False]
            if not shown or self.options[route].get("show_in_index") is False:
                continue
            template = route_template(route)
            key = None if template is None else _TEMPLATE_PARAM.sub("{}", template.path)
            if template is None or key is None or owners.get(key, template.path) != template.path:
                self.undocumented.append(route)
                continue
            owners[key] = template.path
            item = paths.setdefault(template.path, {"x-svc-route": route})
            if item["x-svc-route"] != route:
                self.undocumented.append(route)
                continue
            for handler in shown:
                for method in handler["methods"]:
                    field = method.lower()
                    if method in _OPERATION_METHODS and field not in item:
                        item[field] = self.operation(route, template, handler, method)
        info: dict[str, Any] = {
            "title": self.settings.name,
            "version": self.settings.version or REST_API_VERSION,
        }
        if self.settings.description:
            info["description"] = self.settings.description
        document: dict[str, Any] = {
            "openapi": OPENAPI_VERSION,
            "info": info,
            "servers": [{"url": rest_root_for_servers(self.settings)}],
            "tags": [{"name": namespace} for namespace in self.server.get_namespaces()],
            "paths": paths,
            "components": {
                "schemas": self.components,
                "securitySchemes": security_schemes(self.settings),
            },
            "security": self.settings.auth_schemes.openapi_requirements(),
        }
        if self.undocumented:
            document["x-svc-undocumented-routes"] = self.undocumented
        result = self.settings.hooks.apply_filters(DOCUMENT_FILTER, document, self.server)
        return result if isinstance(result, dict) else document

    # -- operations -------------------------------------------------------------------------

    def operation_id(self, method: str, path: str) -> str:
        base = method.lower() + "_" + (_NOT_ID.sub("_", path).strip("_").lower() or "root")
        candidate, count = base, 1
        while candidate in self.operation_ids:
            count += 1
            candidate = f"{base}_{count}"
        self.operation_ids.add(candidate)
        return candidate

    def operation(
        self, route: str, template: RouteTemplate, handler: Handler, method: str
    ) -> dict[str, Any]:
        operation: dict[str, Any] = {"operationId": self.operation_id(method, template.path)}
        namespace = self.options[route].get("namespace")
        if namespace:
            operation["tags"] = [namespace]
        summary = self.index_summary(handler, namespace) or _summary(handler.get("callback"))
        if summary:
            operation["summary"] = summary
        args = {str(name): arg for name, arg in handler["args"].items() if isinstance(arg, Mapping)}
        parameters = self.path_parameters(template, args)
        path_names = {param["name"] for param in parameters}
        own = {name: arg for name, arg in args.items() if name not in path_names}
        if method in _BODY_METHODS:
            if own:
                operation["requestBody"] = self.request_body(own)
        else:
            parameters += [self.query_parameter(name, arg) for name, arg in own.items()]
        route_options = self.options[route]
        etag = handler.get("etag_callback", route_options.get("etag_callback")) is not None
        required = bool(handler.get("require_if_match", route_options.get("require_if_match")))
        parameters += conditional_parameters(method, etag, required)
        if parameters:
            operation["parameters"] = parameters
        responses = self.responses(
            route, handler, method, has_params=bool(own), has_path_params=bool(template.params)
        )
        success = next(iter(responses))
        add_conditional_responses(responses, method, success, etag, required)
        operation["responses"] = responses
        document_guard(operation, self.options[route], method)
        if is_public(handler) or self.is_index(handler):
            operation["security"] = []  # no padlock in Swagger UI
        return operation

    @staticmethod
    def path_parameters(
        template: RouteTemplate, args: Mapping[str, Mapping[str, Any]]
    ) -> list[dict[str, Any]]:
        parameters: list[dict[str, Any]] = []
        for param in template.params:
            arg = args.get(param.name) if param.named else None
            schema = to_openapi_schema(arg, request=True) if arg is not None else {"type": "string"}
            schema.pop("default", None)
            schema["pattern"] = param.pattern
            entry: dict[str, Any] = {"name": param.name, "in": "path", "required": True}
            description = schema.pop("description", None)
            if not param.named:
                description = (
                    "Part of the route pattern (an unnamed group): the handler does not "
                    "receive it as a parameter."
                )
                entry["x-svc-unnamed-group"] = True
            if isinstance(description, str) and description:
                entry["description"] = description
            entry["schema"] = schema
            parameters.append(entry)
        return parameters

    @staticmethod
    def query_parameter(name: str, arg: Mapping[str, Any]) -> dict[str, Any]:
        schema = to_openapi_schema(arg, request=True)
        entry: dict[str, Any] = {"name": name, "in": "query", "required": _is_required(arg)}
        description = schema.pop("description", None)
        if isinstance(description, str) and description:
            entry["description"] = description
        entry.update(_query_style(schema))
        entry["schema"] = schema
        return entry

    @staticmethod
    def request_body(args: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        def body_schema() -> dict[str, Any]:
            schema: dict[str, Any] = {
                "type": "object",
                "properties": {
                    name: to_openapi_schema(arg, request=True) for name, arg in args.items()
                },
            }
            if required:
                schema["required"] = required
            return schema

        required = [name for name, arg in args.items() if _is_required(arg)]
        form: dict[str, Any] = {"schema": body_schema()}
        encoding = {
            name: style
            for name, prop in form["schema"]["properties"].items()
            if (style := _query_style(prop))
        }
        if encoding:
            form["encoding"] = encoding
        return {
            "required": bool(required),
            "content": {_JSON: {"schema": body_schema()}, _FORM: form},
        }

    # -- responses --------------------------------------------------------------------------

    def responses(
        self, route: str, handler: Handler, method: str, *, has_params: bool, has_path_params: bool
    ) -> dict[str, Any]:
        collection = self.is_collection(route)
        status = handler.get("response_status")
        if not isinstance(status, int) or isinstance(status, bool):
            status = 201 if collection and method == "POST" else 200
        success: dict[str, Any] = {"description": "Created" if status == 201 else "OK"}
        if method != "HEAD":
            schema = self.success_schema(route, handler, method, collection)
            success["content"] = {_JSON: {"schema": schema}}
        if collection and method in ("GET", "HEAD") and self.own_answer(route, handler) is None:
            success["headers"] = copy.deepcopy(_TOTAL_HEADERS)
        responses: dict[str, Any] = {str(status): success}
        if has_params or method in _BODY_METHODS:
            responses["400"] = _error_response("Missing or invalid parameters, or invalid JSON.")
        if handler.get("permission_callback") not in (None, public):
            responses["401"] = _error_response("Not allowed without logging in.")
            responses["403"] = _error_response("Not allowed for this user, or an invalid nonce.")
        if has_path_params:
            responses["404"] = _error_response("Nothing found at this address.")
        responses["4XX"] = _error_response("Another client error.")
        return responses

    def success_schema(
        self, route: str, handler: Handler, method: str, collection: bool
    ) -> dict[str, Any]:
        explicit = self.own_answer(route, handler)
        if isinstance(explicit, ReturnedSchema):
            return self.returned_schema(explicit, route)
        if explicit is not None:
            resolved = self.call_schema(explicit, route)
            return {} if resolved is None else to_openapi_schema(resolved)
        callback = handler.get("callback")
        if callback == self.server.get_index:
            return self.builtin("RootIndex", _ROOT_INDEX)
        if callback == self.server.get_namespace_index:
            return self.builtin("NamespaceIndex", _NAMESPACE_INDEX)
        item = self.route_schema(route)
        if item is None:
            return {}
        if collection and method == "GET":
            return {"type": "array", "items": item}
        return item

    def index_summary(self, handler: Handler, namespace: Any) -> str | None:
        """The summary of an index route (its callback's docstring speaks of all of them)."""
        callback = handler.get("callback")
        if callback == self.server.get_index:
            return "The site's name and description, its namespaces and every route."
        if callback == self.server.get_namespace_index and namespace:
            return f"The routes of the {namespace} namespace."
        return None

    def own_answer(self, route: str, handler: Handler) -> Any:
        """The handler's own ``response_schema``, None without one; one its return
        annotation gives that is the route's ``schema`` is the route's (None)."""
        explicit = handler.get("response_schema")
        if isinstance(explicit, ReturnedSchema) and explicit == self.options[route].get("schema"):
            return None
        return explicit

    def returned_schema(self, source: ReturnedSchema, route: str) -> dict[str, Any]:
        """The answer a return annotation gives: a ``$ref`` to its class's component, or an
        array of them for ``list[X]``."""
        schema = source.schema
        if schema.get("type") == "array" and isinstance(schema.get("items"), Mapping):
            items = ReturnedSchema({"$schema": schema.get("$schema"), **schema["items"]})
            return {"type": "array", "items": self.component(items, route) or {}}
        return self.component(source, route) or {}

    def is_index(self, handler: Handler) -> bool:
        """Whether ``handler`` serves the server's index or a namespace's (open to all)."""
        callback = handler.get("callback")
        return callback == self.server.get_index or callback == self.server.get_namespace_index

    def builtin(self, name: str, schema: Mapping[str, Any]) -> dict[str, str]:
        self.components[name] = copy.deepcopy(schema)
        self.components["RouteData"] = copy.deepcopy(_ROUTE_DATA)
        return _ref(name)

    def is_collection(self, route: str) -> bool:
        """Whether another route is ``route/(?P<…>…)…`` with the same ``schema`` option."""
        schema = self.options[route].get("schema")
        if not callable(schema):
            return False
        return any(other == schema for other in self.item_schemas.get(route.rstrip("/"), ()))

    def call_schema(self, source: Any, route: str) -> Mapping[str, Any] | None:
        """A schema option's value (a callable is called); None when it fails or is not a
        mapping (logged: the document leaves the schema out rather than failing)."""
        try:
            value = source() if callable(source) else source
        except Exception:
            logger.exception("The schema of route %s failed; OpenAPI leaves it out", route)
            return None
        return value if isinstance(value, Mapping) else None

    def route_schema(self, route: str) -> dict[str, str] | None:
        """A ``$ref`` to the component of the route's ``schema`` (one per schema callable)."""
        source = self.options[route].get("schema")
        if not callable(source):
            return None
        return self.component(source, route)

    def component(self, source: Callable[[], Any], route: str) -> dict[str, str] | None:
        """A ``$ref`` to the component of the schema ``source`` returns (one per source;
        named by its title)."""
        try:
            known = self.schema_names.get(source)
        except TypeError:  # an unhashable callable: its component is not shared
            known = None
        if known is not None:
            return _ref(known)
        resolved = self.call_schema(source, route)
        if resolved is None:
            return None
        schema = self.with_links(to_openapi_schema(resolved))
        title = resolved.get("title")
        base = _NOT_COMPONENT.sub("_", title if isinstance(title, str) and title else route)
        base = base.strip("_") or "schema"
        name, count = base, 1
        while name in self.components and self.components[name] != schema:
            count += 1
            name = f"{base}_{count}"
        self.components[name] = schema
        with contextlib.suppress(TypeError):
            self.schema_names[source] = name
        return _ref(name)

    @staticmethod
    def with_links(schema: dict[str, Any]) -> dict[str, Any]:
        """An object schema with an optional ``_links`` (added to answers that carry links)."""
        if schema.get("type") == "object" or "properties" in schema:
            properties = schema.setdefault("properties", {})
            if isinstance(properties, dict):
                properties.setdefault("_links", _ref(LINKS_SCHEMA))
        return schema


def build_openapi(server: RestServer, settings: SiteSettings) -> dict[str, Any]:
    """The OpenAPI 3.1.0 document of ``server``'s routes for the site ``settings``; a new
    dict on every call (built from the registry as it is now)."""
    return _Builder(server, settings).document()
