"""The site's MCP tools: its abilities shown in REST, and the routes whose handler says
``"mcp": True`` (or names the one method of it that is a tool: ``"mcp": "PUT"``).

An ability's tool is named after it with ``/`` replaced by ``-``; its input schema is the
ability's (a schema of another type than ``object`` is offered as the ``input`` property of
an object), its output schema too (a non-object output comes back as ``{"result": value}``),
and its annotations become ``readOnlyHint``, ``destructiveHint`` and ``idempotentHint``. A
route's tool is named after its operation's ``operationId`` in the site's OpenAPI document;
its input schema joins the operation's path and query parameters and JSON body, its output
schema is the operation's success schema (an array comes back as ``{"result": [...]}``), and
its annotations follow the method (GET reads; DELETE destroys, idempotently; PUT replaces,
idempotently; PATCH changes; POST adds).

A tool is listed to a caller whose permission callback lets it run (asked without input:
WordPress's ``permission_callback`` with the input's default); a call goes through internal
dispatch of the ability's ``run`` route or of the marked route, as the caller, so the permission
check, argument checks, rate limits and idempotency of REST apply to it again.

The route tools are worked out from the OpenAPI document once per version of the route table
and of the hooks (PERF: building the document takes milliseconds); the ability tools are read
from the registry on each listing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Protocol

import orjson

from svcrest.abilities.ability import Ability
from svcrest.abilities.registry import AbilityRegistry
from svcrest.abilities.routes import NAMESPACE, expected_method
from svcrest.bounded import Memo
from svcrest.http.answer_json import encode_default, one_line, unencodable_reason
from svcrest.http.context import as_current_user
from svcrest.http.errors import RestError
from svcrest.http.headers import Headers
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.http.scope import AppPasswordScope
from svcrest.http.user import User
from svcrest.rest.invoke import fitted
from svcrest.rest.openapi import build_openapi
from svcrest.rest.routing.definitions import Handler, public
from svcrest.rest.routing.template import route_template
from svcrest.rest.server import RestServer, internal_error
from svcrest.rest.settings import SiteSettings

__all__ = [
    "Tool",
    "ToolHost",
    "Toolbox",
    "ability_tool",
    "tool_data_body",
    "tool_result",
    "tool_result_body",
]

logger = logging.getLogger("svcrest")

_BODY_METHODS: Final = frozenset({"POST", "PUT", "PATCH"})
_ANNOTATIONS_BY_METHOD: Final[dict[str, dict[str, bool]]] = {
    "GET": {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True},
    "DELETE": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True},
    "PUT": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True},
    "PATCH": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False},
    "POST": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False},
}
_ABILITY_HINTS: Final = (
    ("readonly", "readOnlyHint"),
    ("destructive", "destructiveHint"),
    ("idempotent", "idempotentHint"),
)
_JSON_OPTIONS: Final = orjson.OPT_NON_STR_KEYS
_EMPTY_INPUT: Final = {"type": "object", "properties": {}}


class ToolHost(SiteSettings, Protocol):
    """What the tools need from the site."""

    abilities: AbilityRegistry

    def rest_get_server(self) -> RestServer:
        """The REST server."""
        ...

    def rest_do_request_async(self, request: Any) -> Awaitable[Response]:
        """Internal dispatch as the current user."""
        ...


def _is_object_schema(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "object"


def _without_meta(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` without ``$schema`` (JSON Schema validators of clients pick their dialect
    from it; WordPress's say draft-04 and use later keywords)."""
    return {key: value for key, value in schema.items() if key != "$schema"}


def _wrapped(schema: Mapping[str, Any], name: str) -> dict[str, Any]:
    return {"type": "object", "properties": {name: dict(schema)}, "required": [name]}


class Tool:
    """One tool: what ``tools/list`` shows, and how ``tools/call`` runs it."""

    __slots__ = (
        "ability",
        "annotations",
        "body",
        "description",
        "direct",
        "handler",
        "input_schema",
        "inputless",
        "method",
        "name",
        "output_schema",
        "path_names",
        "permission",
        "query_input",
        "route",
        "template",
        "title",
        "wrap_input",
        "wrap_output",
    )

    def __init__(self, name: str, description: str, input_schema: dict[str, Any]) -> None:
        self.name = name
        self.description = description
        self.title = ""
        self.input_schema = input_schema
        self.output_schema: dict[str, Any] | None = None
        self.annotations: dict[str, Any] = {}
        self.ability: Ability | None = None
        self.wrap_input = False
        #: True: the result is sent as ``{"result": value}``.
        self.wrap_output = False
        self.method = "GET"
        self.template = ""
        self.path_names: tuple[str, ...] = ()
        #: An ability's run route (made once).
        self.route = ""
        #: True: an ability's tool whose arguments are the run's ``input`` in the query (a
        #: GET or DELETE run, an object input): ``tools/call`` makes its request without
        #: :meth:`request` (PERF: a Python call less).
        self.query_input = False
        #: True: an ability's tool without input schema whose run method is GET or DELETE;
        #: a call without arguments may run it directly (see ``McpEndpoint``).
        self.inputless = False
        #: What the endpoint found out about running the tool directly, for one pipeline
        #: plan, route table and registry (its own business; empty until it asks).
        self.direct: tuple[Any, ...] = ()
        self.body = False
        self.handler: Handler | None = None
        self.permission: Callable[..., Any] | None = None

    def listing(self) -> dict[str, Any]:
        """The tool as ``tools/list`` shows it."""
        entry: dict[str, Any] = {"name": self.name}
        if self.title:
            entry["title"] = self.title
        entry["description"] = self.description
        entry["inputSchema"] = self.input_schema
        if self.output_schema is not None:
            entry["outputSchema"] = self.output_schema
        if self.annotations:
            entry["annotations"] = self.annotations
        return entry

    def request(self, arguments: dict[str, Any], headers: Headers) -> Request | RestError:
        """The internal request running this tool with ``arguments``, or the 400 of a path
        parameter missing or holding a ``/`` (it would name another route). The caller's
        header lines are kept (rate limits count per credential, ``Idempotency-Key``
        applies) and a body is sent as its JSON bytes too (an idempotency key's fingerprint
        covers the arguments)."""
        ability = self.ability
        if ability is not None:
            value: Any = arguments.get("input") if self.wrap_input else (arguments or None)
            route = self.route
            if self.method == "POST":
                return _with_body("POST", route, {"input": value}, headers)
            query = {} if value is None else {"input": value}
            return Request.for_dispatch(self.method, route, headers, query)
        path = self.template
        missing = [name for name in self.path_names if arguments.get(name) in (None, "")]
        if missing:
            return RestError(
                "rest_missing_callback_param",
                f"Missing parameter(s): {', '.join(missing)}",
                {"status": 400, "params": missing},
            )
        for name in self.path_names:
            text = str(arguments[name])
            if "/" in text or isinstance(arguments[name], (dict, list)):
                return RestError(
                    "rest_invalid_param",
                    f"Invalid parameter(s): {name}",
                    {"status": 400, "params": {name: f"{name} is not a path segment."}},
                )
            path = path.replace("{" + name + "}", text)
        rest = {key: value for key, value in arguments.items() if key not in self.path_names}
        if self.body:
            return _with_body(self.method, path, rest, headers)
        return Request.for_dispatch(self.method, path, headers, rest)

    def in_scope(self, scope: AppPasswordScope) -> bool:
        """Whether a call of the tool is inside an application password's ``scope`` (the
        route it runs, with its method)."""
        return scope.allows_path(self.route if self.ability else self.template, self.method)

    async def may_run(self, user: User) -> bool:
        """Whether ``user`` may run the tool, as its permission callback answers without
        input; a callback that fails counts as a refusal (logged without its traceback)."""
        try:
            with as_current_user(user):
                ability = self.ability
                if ability is not None:
                    verdict = await ability.check_permissions_async(ability.normalize_input(None))
                    return verdict is True
                permission = self.permission
                if permission is None:
                    return True
                probe = Request(self.method, self.template)
                probe.user = user
                verdict = permission(probe)
                if hasattr(verdict, "__await__"):
                    verdict = await verdict
                return verdict is True
        except Exception:
            logger.warning("A permission callback failed while listing MCP tool %s", self.name)
            return False


def _with_body(method: str, route: str, body: Any, headers: Headers) -> Request:
    raw = orjson.dumps(body, default=encode_default, option=_JSON_OPTIONS)
    return Request.for_dispatch(method, route, headers, {}, body, raw)


def ability_tool(ability: Ability) -> Tool:
    """The tool of an ability shown in REST."""
    schema = ability.input_schema
    if not schema:
        input_schema: dict[str, Any] = dict(_EMPTY_INPUT)
        wrap_input = False
    elif _is_object_schema(schema):
        input_schema, wrap_input = _without_meta(schema), False
    else:
        input_schema, wrap_input = _wrapped(_without_meta(schema), "input"), True
    tool = Tool(ability.name.replace("/", "-"), ability.description, input_schema)
    tool.title = ability.label
    tool.ability = ability
    tool.wrap_input = wrap_input
    output = ability.output_schema
    if output and _is_object_schema(output):
        tool.output_schema = _without_meta(output)
    elif output:
        tool.output_schema = _wrapped(_without_meta(output), "result")
        tool.wrap_output = True
    else:
        tool.wrap_output = True  # no schema: an object is sent as it is, see tool_result
    tool.annotations = {
        hint: ability.annotations[key]
        for key, hint in _ABILITY_HINTS
        if ability.annotations[key] is not None
    }
    tool.method = expected_method(ability)
    tool.route = f"/{NAMESPACE}/abilities/{ability.name}/run"
    tool.query_input = tool.method != "POST" and not wrap_input
    tool.inputless = tool.query_input and not ability.input_schema
    return tool


def _resolve(schema: Any, components: Mapping[str, Any], depth: int = 0) -> Any:
    """``schema`` with its ``#/components/schemas/…`` references written out (recursion cut
    after a few levels, where a reference becomes ``{}``: any value)."""
    if isinstance(schema, list):
        return [_resolve(item, components, depth) for item in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
        target = components.get(ref.rsplit("/", 1)[1])
        if target is None or depth > 8:
            return {}
        return _resolve(target, components, depth + 1)
    return {key: _resolve(value, components, depth) for key, value in schema.items()}


def _input_schema(operation: Mapping[str, Any], method: str) -> tuple[dict[str, Any], list[str]]:
    """The tool's input schema of an OpenAPI operation, and its path parameters' names."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    path_names: list[str] = []
    for parameter in operation.get("parameters", ()):
        where = parameter.get("in")
        if where not in ("path", "query"):
            continue
        name = parameter["name"]
        own = dict(parameter.get("schema", {}))
        if parameter.get("description"):
            own.setdefault("description", parameter["description"])
        properties[name] = own
        if parameter.get("required"):
            required.append(name)
        if where == "path":
            path_names.append(name)
    content = operation.get("requestBody", {}).get("content", {})
    body = content.get("application/json", {}).get("schema")
    if method in _BODY_METHODS and isinstance(body, dict):
        properties.update(body.get("properties", {}))
        required.extend(name for name in body.get("required", ()) if name not in required)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema, path_names


def _output_schema(operation: Mapping[str, Any], components: Mapping[str, Any]) -> Any:
    for status, answer in operation.get("responses", {}).items():
        if status.startswith("2"):
            schema = answer.get("content", {}).get("application/json", {}).get("schema")
            return _optional(_resolve(schema, components)) if schema else None
    return None


def _optional(schema: Any) -> Any:
    """``schema`` without ``required`` anywhere: an answer holds the fields of its
    ``context`` and ``_fields`` only, and a client checks what it gets against the output
    schema (the MCP SDKs do, and refuse the result when it does not hold)."""
    if isinstance(schema, list):
        return [_optional(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {key: _optional(value) for key, value in schema.items() if key != "required"}


def _first_handler(handlers: list[Handler], method: str) -> Handler | None:
    """The handler the OpenAPI operation of ``method`` describes (the first shown one)."""
    for handler in handlers:
        if handler.get("show_in_index") is not False and method in handler["methods"]:
            return handler
    return None


def _route_tool(
    route: str, method: str, handler: Handler, operation: Mapping[str, Any], components: Any
) -> Tool | None:
    template = route_template(route)
    if template is None or any(not param.named for param in template.params):
        return None  # an unnamed group cannot be filled from arguments
    input_schema, path_names = _input_schema(operation, method)
    callback_doc = operation.get("summary")
    description = handler.get("description") or callback_doc or f"{method} {template.path}"
    tool = Tool(operation["operationId"], str(description), input_schema)
    output = _output_schema(operation, components)
    if isinstance(output, dict) and output:
        if _is_object_schema(output) or ("properties" in output and "type" not in output):
            tool.output_schema = output
        else:
            tool.output_schema = _wrapped(output, "result")
            tool.wrap_output = True
    else:
        tool.wrap_output = True
    tool.annotations = dict(_ANNOTATIONS_BY_METHOD.get(method, {}))
    tool.method = method
    tool.template = template.path
    tool.path_names = tuple(path_names)
    tool.body = method in _BODY_METHODS
    tool.handler = handler
    permission = handler.get("permission_callback")
    tool.permission = None if permission is None or permission is public else fitted(permission)
    return tool


def _marked(marker: Any, method: str) -> bool:
    """Whether a handler's ``"mcp"`` marks its ``method`` as a tool: True marks each of
    its methods, a method name only that one (a controller's update handler takes POST,
    PUT and PATCH, and is one tool)."""
    return marker is True or (isinstance(marker, str) and marker.upper() == method)


def route_tools(server: RestServer, settings: SiteSettings) -> dict[str, Tool]:
    """The tools of the routes whose handler says ``"mcp": True``, by name."""
    document = build_openapi(server, settings)
    components = document.get("components", {}).get("schemas", {})
    routes = server.get_routes()
    tools: dict[str, Tool] = {}
    for item in document.get("paths", {}).values():
        route = item.get("x-svc-route")
        for field, operation in item.items():
            method = field.upper()
            if method not in _ANNOTATIONS_BY_METHOD or not isinstance(operation, dict):
                continue
            handler = _first_handler(routes.get(route, []), method)
            if handler is None or not _marked(handler.get("mcp"), method):
                continue
            tool = _route_tool(route, method, handler, operation, components)
            if tool is not None:
                tools[tool.name] = tool
    return tools


class Toolbox:
    """The tools of one site: the route tools remembered per version of the route table and
    the hooks, the ability tools read from the registry."""

    def __init__(self, host: ToolHost) -> None:
        self.host = host
        self._lock = threading.Lock()
        self._routes: tuple[tuple[int, int], dict[str, Tool]] = ((-1, -1), {})
        #: The tool of each ability called (PERF: made once, not on every call).
        self._ability_tools: Memo[Ability, Tool] = Memo(1024)
        #: ``(version, tools)``: the tools of the abilities shown in REST by name, for that
        #: version of the registry (PERF: a call finds its tool with one look-up, not a
        #: scan of the registry; read it, :meth:`find` makes it).
        self.shown: tuple[int, dict[str, Tool]] = (-1, {})

    def _route_tools(self) -> dict[str, Tool]:
        server = self.host.rest_get_server()
        key = (server.table.version, self.host.hooks.version)
        known, tools = self._routes
        if known == key:
            return tools
        with self._lock:
            if self._routes[0] != key:
                self._routes = (key, route_tools(server, self.host))
            return self._routes[1]

    def all(self) -> list[Tool]:
        """Every tool, abilities first (in registration order)."""
        tools = [
            self._ability_tool(ability)
            for ability in self.host.abilities.get_all()
            if ability.show_in_rest
        ]
        return tools + list(self._route_tools().values())

    def _ability_tool(self, ability: Ability) -> Tool:
        tool = self._ability_tools.get(ability)
        if tool is None:
            tool = self._ability_tools.keep(ability, ability_tool(ability))
        return tool

    def find(self, name: str) -> Tool | None:
        """The tool named ``name``, None when there is none (of two abilities whose names
        give the same tool name, the first registered)."""
        registry = self.host.abilities
        version, tools = self.shown
        if version != registry.version:
            shown: dict[str, Tool] = {}
            for each in registry.get_all():
                if each.show_in_rest and each.name.replace("/", "-") not in shown:
                    shown[each.name.replace("/", "-")] = self._ability_tool(each)
            version, tools = self.shown = (registry.version, shown)
        found = tools.get(name)
        if found is not None:
            return found
        return self._route_tools().get(name)

    async def listed(
        self, user: User, scope: AppPasswordScope | None = None
    ) -> list[dict[str, Any]]:
        """The tools ``user`` may run, as ``tools/list`` shows them; with the ``scope`` of the
        application password the caller authenticated with, only the tools inside it."""
        return [
            tool.listing()
            for tool in self.all()
            if (scope is None or tool.in_scope(scope)) and await tool.may_run(user)
        ]


def tool_result(tool: Tool, response: Response) -> dict[str, Any]:
    """The ``tools/call`` result of the internal answer ``response``: an error (status 400 or
    more) as a tool error carrying the REST error's JSON (``code``, ``message``, ``data``);
    else the data as structured content (wrapped when the tool says so) and as text."""
    data = response.data
    if response.status >= 400:
        text = orjson.dumps(data, default=encode_default, option=_JSON_OPTIONS).decode()
        return {"content": [{"type": "text", "text": text}], "isError": True}
    if tool.wrap_output and (tool.output_schema is not None or not isinstance(data, dict)):
        data = {"result": data}
    encoded = orjson.dumps(data, default=encode_default, option=_JSON_OPTIONS)
    return {
        "content": [{"type": "text", "text": encoded.decode()}],
        # PERF: the bytes made for the text, not the data encoded a second time.
        "structuredContent": orjson.Fragment(encoded),
        "isError": False,
    }


def tool_result_body(ident: str | int | None, tool: Tool, response: Response) -> bytes:
    """The JSON-RPC response carrying :func:`tool_result` of ``response``, the same bytes
    as ``protocol.result_body(ident, tool_result(tool, response))``. PERF: a result's
    envelope written by hand around the data's one encoding (no dicts built, no
    ``Fragment``)."""
    if response.status >= 400:
        try:
            return orjson.dumps(
                {"jsonrpc": "2.0", "id": ident, "result": tool_result(tool, response)},
                default=encode_default,
                option=_JSON_OPTIONS,
            )
        except orjson.JSONEncodeError as error:
            return _unencodable_body(ident, tool, error)
    return tool_data_body(ident, tool, response.data)


def _unencodable_body(ident: str | int | None, tool: Tool, error: orjson.JSONEncodeError) -> bytes:
    """The answer to a call whose result JSON cannot carry (a plugin's mistake: an integer
    past 64 bits, a type no encoder knows), logged on one line: the tool error of the 500
    the REST route answers, never an exception out of the transport."""
    logger.error(
        "The result of the MCP tool %s cannot be sent as JSON: %s; answered rest_internal_error",
        one_line(tool.name),
        unencodable_reason(error),
    )
    text = orjson.dumps(internal_error().to_dict()).decode()
    result = {"content": [{"type": "text", "text": text}], "isError": True}
    return orjson.dumps({"jsonrpc": "2.0", "id": ident, "result": result})


def tool_data_body(ident: str | int | None, tool: Tool, data: Any) -> bytes:
    """:func:`tool_result_body` of a success (status below 400) whose data is ``data``."""
    if tool.wrap_output and (tool.output_schema is not None or not isinstance(data, dict)):
        data = {"result": data}
    try:
        encoded = orjson.dumps(data, default=encode_default, option=_JSON_OPTIONS)
    except orjson.JSONEncodeError as error:
        return _unencodable_body(ident, tool, error)
    return b"".join(
        (
            b'{"jsonrpc":"2.0","id":',
            orjson.dumps(ident),
            b',"result":{"content":[{"type":"text","text":',
            orjson.dumps(encoded.decode()),
            b'}],"structuredContent":',
            encoded,
            b',"isError":false}}',
        )
    )
