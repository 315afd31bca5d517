"""``<home>/mcp``: the Model Context Protocol's Streamable HTTP transport.

A POST carries one JSON-RPC message. A request is answered with one JSON-RPC response, as
``application/json`` or, for a client that accepts only ``text/event-stream``, as one SSE
``message`` event; a notification or a response to the server gets 202 with no body. GET
answers 405 (the server offers no stream of its own), DELETE ends the session.

In order, a POST is: refused 403 when its ``Origin`` is not the site's (DNS rebinding: a page
of another site reaching a server on the loopback; the ``svc_mcp_allowed_origin`` filter
may allow more), authenticated on its own by the site's schemes exactly as a REST request
(application passwords over Basic, plugins' bearer schemes; the cookie needs its nonce), a
401/403 in the REST error shape when its credentials are refused, then read: a parse error
-32700 and an invalid message -32600 answer 400. ``initialize`` issues the ``Mcp-Session-Id``
every later request must carry (400 without, 404 for one not issued here or ended); a session
grants nothing: each request is its own caller.

Methods: ``initialize``, ``ping``, ``tools/list`` (the tools the caller may run:
:mod:`svcrest.site.mcp.tools`), ``tools/call`` (an unknown tool is -32602; anything the
REST API refuses or fails is a tool result with ``isError: true`` carrying the REST error),
``resources/list`` and ``resources/read`` (the REST index and the OpenAPI document, as the
caller sees them; an unknown URI is -32002), ``notifications/initialized``; any other method
is -32601.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

import orjson

from svcrest.abilities.routes import AbilitiesController
from svcrest.bounded import BoundedDict, Memo
from svcrest.chains import Pending, run_chain
from svcrest.constants import REST_API_VERSION
from svcrest.http.context import RequestContext, enter_dispatch_user, leave_dispatch_user
from svcrest.http.errors import RestError
from svcrest.http.exchange import HttpRequest, HttpResponse, wire_lines
from svcrest.http.headers import Headers
from svcrest.http.qvalues import q_weights
from svcrest.http.request import Request
from svcrest.http.response import Response, data_response, rest_ensure_response
from svcrest.http.scope import scope_error
from svcrest.http.scope_headers import ScopeHeaders, raw_names
from svcrest.instances import without_init
from svcrest.rest.openapi import build_openapi
from svcrest.rest.plan import PipelinePlan
from svcrest.rest.server import RestServer
from svcrest.site.host import Page, SiteHost
from svcrest.site.mcp import protocol
from svcrest.site.mcp.protocol import Message, ProtocolError
from svcrest.site.mcp.tools import (
    Tool,
    Toolbox,
    ToolHost,
    tool_data_body,
    tool_result,
    tool_result_body,
)

__all__ = ["MCP_PATH", "McpEndpoint", "McpHost", "install_mcp_page"]


MCP_PATH: Final = "/mcp"
SESSION_HEADER: Final = "Mcp-Session-Id"
#: The header names as looked up (lower case: PERF, no lowering per request).
_SESSION_NAME: Final = "mcp-session-id"
VERSION_HEADER: Final = "mcp-protocol-version"
ORIGIN_FILTER: Final = "svc_mcp_allowed_origin"
#: Ended sessions remembered (each worker process its own; the oldest forgotten first).
ENDED_SESSIONS: Final = 10_000
#: Session ids whose signature was checked (PERF: an HMAC is ~1.5 µs a request).
CHECKED_SESSIONS: Final = 4096
_JSON_TYPE: Final = "application/json"
_SSE_TYPE: Final = "text/event-stream"
_OPENAPI_NAME: Final = "openapi.json"
#: The versions as a request's line carries them.
_VERSIONS: Final = frozenset(version.encode() for version in protocol.SUPPORTED_VERSIONS)
#: The request's lines the endpoint reads, in the order :func:`_lines_of` gives them.
_LINE_NAMES: Final = ("origin", "content-type", "accept", _SESSION_NAME, VERSION_HEADER)
_RAW_JSON_TYPE: Final = _JSON_TYPE.encode()
_FOREIGN: Final = "Forbidden: foreign Origin"
_DISPATCH_ASYNC: Final = RestServer.dispatch_async
_DISPATCH_PLANNED: Final = RestServer.dispatch_planned


class McpHost(SiteHost, ToolHost, Protocol):
    """What the endpoint needs from the site."""

    @property
    def secret_key(self) -> bytes:
        """The key session ids are signed with."""
        ...


#: The first lines of a JSON answer and of an SSE one, and their wire form (PERF: encoded
#: once; with the lower-case look-ups, a ping 131,414 → ~123,500 instructions).
_JSON_LINES: Final = (("Content-Type", _JSON_TYPE), ("Cache-Control", "no-store"))
_SSE_LINES: Final = (("Content-Type", _SSE_TYPE), ("Cache-Control", "no-store"))
_JSON_WIRE: Final = tuple(wire_lines(_JSON_LINES))
_SSE_WIRE: Final = tuple(wire_lines(_SSE_LINES))


def _plain(status: int, body: bytes = b"", extra: tuple[tuple[str, str], ...] = ()) -> HttpResponse:
    if not body:
        return HttpResponse(status, [("Cache-Control", "no-store"), *extra])
    return HttpResponse(status, [*_JSON_LINES, *extra], body, wire_prefix=_JSON_WIRE)


def _refusal(status: int, error: ProtocolError) -> HttpResponse:
    return _plain(status, protocol.error_body(None, error))


def _page_refusal(status: int, reason: str) -> HttpResponse:
    """The site's refusal of a request before the endpoint reads it (a body past the
    limit, another method), as the transport's other refusals: a JSON-RPC error."""
    return _refusal(status, ProtocolError(protocol.INVALID_REQUEST, reason))


def _answered(answer_type: str, body: bytes, extra: tuple[tuple[str, str], ...]) -> HttpResponse:
    """The 200 carrying a JSON-RPC answer, as JSON or as one SSE ``message`` event."""
    # PERF: every field set here, without the generated ``__init__`` (a class call with a
    # Python ``__init__``: a ping 93,784 → 91,935 instructions, bench/mcp_call.py).
    answer = without_init(HttpResponse)
    answer.status = 200
    if answer_type == _SSE_TYPE:
        answer.headers = [*_SSE_LINES, *extra]
        answer.body = b"event: message\ndata: " + body + b"\n\n"
        answer.wire_prefix = _SSE_WIRE
    else:
        answer.headers = [*_JSON_LINES, *extra]
        answer.body = body
        answer.wire_prefix = _JSON_WIRE
    answer.content_length = None
    answer.request_id = ""
    return answer


_Line = bytes | None


class _ToolRun(tuple[Tool, Request]):
    """A ``tools/call`` about to run: ``(tool, its internal request)``, for :meth:`serve`
    to dispatch (PERF: a tuple made without a Python-level constructor)."""

    __slots__ = ()


class _DirectCall(tuple[Tool]):
    """A ``tools/call`` without arguments nor an application password's scope of an
    ability's tool without input (:attr:`Tool.inputless`): ``(tool,)``, for :meth:`serve`
    to run directly when nothing on the run route's dispatch can change its answer (see
    :meth:`McpEndpoint._direct_of`)."""

    __slots__ = ()


#: :attr:`Tool.direct` of a tool whose calls are dispatched: ``(plan, route table version,
#: registry version, "", args, len(args), None)``; of one run directly, the run route's
#: pattern, its handler's args and their number, and the abilities' controller.
_Direct = tuple[Any, int, int, str, Any, int, Any]


def _lines_of(headers: Headers) -> tuple[_Line, _Line, _Line, _Line, _Line]:
    """The values of the lines named in ``_LINE_NAMES`` as Latin-1 bytes (None: absent).
    PERF: from an ASGI scope's own pairs, one dict look-up each while every name came once
    (a ``get_joined`` is a Python call and a decoding: a ping 108,437 → 101,137
    instructions, bench/mcp_call.py --instructions)."""
    single = headers.single if type(headers) is ScopeHeaders else None
    if single is not None:
        get = single.get
        return (
            get(b"origin"),
            get(b"content-type"),
            get(b"accept"),
            get(b"mcp-session-id"),
            get(b"mcp-protocol-version"),
        )
    origin, content_type, accept, session, version = (
        None if value is None else value.encode("latin-1", "replace")
        for value in map(headers.get_joined, _LINE_NAMES)
    )
    return origin, content_type, accept, session, version


#: ``Accept`` values → the answer's type (PERF: ~0.5 µs a request; a client sends the same
#: value each time). Bounded in entries and in the length of a value kept.
_ANSWER_TYPES: Memo[bytes, str | None] = Memo(256, 512)


def _answer_type_of(content_type: _Line, accept: _Line) -> str | HttpResponse:
    """The answer's type by the request's ``Content-Type`` and ``Accept``, or the 415 or 406
    refusing it."""
    if content_type != _RAW_JSON_TYPE and (  # PERF: the usual value read as it is
        content_type is None or content_type.split(b";", 1)[0].strip().lower() != _RAW_JSON_TYPE
    ):
        error = ProtocolError(
            protocol.INVALID_REQUEST,
            "Unsupported Media Type: Content-Type must be application/json",
        )
        return _refusal(415, error)
    # PERF: an ``Accept`` value read before answered from the memory without a call.
    known = _ANSWER_TYPES.entries.get(accept, "") if accept else _JSON_TYPE
    answer_type = known if known != "" else _answer_type(accept)
    if answer_type is None:
        error = ProtocolError(
            protocol.INVALID_REQUEST,
            "Not Acceptable: Client must accept application/json or text/event-stream",
        )
        return _refusal(406, error)
    return answer_type


def _answer_type(accept: _Line) -> str | None:
    """``application/json`` when the client takes it (or says nothing), else
    ``text/event-stream`` when it takes that, else None (406)."""
    if not accept:
        return _JSON_TYPE
    known = _ANSWER_TYPES.entries.get(accept, "")  # "" is no answer: not kept yet
    if known != "":
        return known
    return _ANSWER_TYPES.keep(accept, _read_accept(accept.decode("latin-1")))


def _read_accept(accept: str) -> str | None:
    weights = q_weights(accept)
    if _weight(weights, _JSON_TYPE) > 0.0:
        return _JSON_TYPE
    if _weight(weights, _SSE_TYPE) > 0.0:
        return _SSE_TYPE
    return None


def _weight(weights: dict[str, float], media_type: str) -> float:
    """The weight of ``media_type`` in an ``Accept`` list: the most specific range naming
    it wins (RFC 9110 §12.5.1), so ``application/json;q=0, */*`` refuses JSON; 0 (not
    acceptable) when no range names it."""
    kind = media_type.split("/", 1)[0]
    for media_range in (media_type, kind + "/*", "*/*"):
        weight = weights.get(media_range)
        if weight is not None:
            return weight
    return 0.0


def _response_of(answer: Any) -> Response:
    """The Response the run route's dispatch makes of its callback's answer."""
    kind = type(answer)
    if kind is dict or kind is list:
        return data_response(answer)
    return RestServer.to_response(rest_ensure_response(answer))


def _own_dispatch(host: Any) -> bool:
    """Whether ``host``'s ``rest_do_request_async`` is the site's own (the one svcrest's
    ``App`` defines), which sets the current user and runs the server's dispatch."""
    method = getattr(type(host), "rest_do_request_async", None)
    return getattr(method, "__qualname__", "") == "App.rest_do_request_async" and (
        getattr(method, "__module__", "") == "svcrest.app"
    )


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class McpEndpoint:
    """The endpoint of one site (its tools and its ended sessions)."""

    def __init__(self, host: McpHost) -> None:
        self.host = host
        self.tools = Toolbox(host)
        #: Whether the host's internal dispatch is the site's own (not one of a subclass):
        #: a tool's call then runs the server's dispatch itself (see :meth:`serve`).
        self._plain_dispatch = _own_dispatch(host)
        #: Session ids as the requests' lines carry them (Latin-1 bytes).
        self._ended: BoundedDict[bytes, bool] = BoundedDict(ENDED_SESSIONS)
        self._checked: Memo[bytes, bool] = Memo(CHECKED_SESSIONS, protocol.MAX_SESSION_ID)
        self._lock = threading.Lock()
        #: The schemes' credential line names and their raw bytes (see _authenticate).
        self._probe: tuple[frozenset[str], frozenset[bytes]] = (frozenset(), frozenset())
        #: The methods: each answers a dict, a coroutine of one, or (``tools/call``) the
        #: tool to run; an unknown one raises (:meth:`_unknown`). PERF: found by one
        #: look-up in :meth:`serve`, not through a method of its own.
        self._methods: dict[str, Callable[[Message, HttpRequest, RequestContext], Any]] = {
            "initialize": self._initialize,
            "ping": self._ping,
            "tools/list": self._tools_list,
            "tools/call": self._tools_call,
            "resources/list": self._resources_list,
            "resources/read": self._resources_read,
        }

    # -- HTTP -------------------------------------------------------------------------------

    async def serve(self, app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
        """The page handler of ``/mcp`` (POST and DELETE; GET gets 405 from the site).

        PERF: one coroutine for a request and its answer; the steps before the method are
        plain calls (with the message read by type tests and no framing read: a ping 121,460 →
        108,437 instructions, bench/mcp_call.py --instructions)."""
        headers = http.headers
        single = headers.single if type(headers) is ScopeHeaders else None
        if single is not None:
            # PERF: :func:`_lines_of` of an ASGI scope's lines written out (a Python call
            # and a tuple less: tools/call 137,135 → 136,384 instructions, bench/mcp_call.py).
            get = single.get
            origin = get(b"origin")
            content_type = get(b"content-type")
            accept = get(b"accept")
            session = get(b"mcp-session-id")
            version = get(b"mcp-protocol-version")
        else:
            origin, content_type, accept, session, version = _lines_of(headers)
        if origin is not None and not self._origin_allowed(origin.decode("latin-1")):
            return _refusal(403, ProtocolError(protocol.INVALID_REQUEST, _FOREIGN))
        # An API request, as WordPress's MCP adapter is a REST route: the schemes that work
        # on REST requests only (application passwords) work here, and code in the tools
        # sees ``is_rest_request()``.
        ctx.is_rest = True
        host = self.host
        server = host.rest_server or host.rest_get_server()
        # PERF: the pipeline's plan asked once for the authentication and a tool's dispatch
        # (a Python call less: tools/call 138,035 → 137,135 instructions, bench/mcp_call.py).
        plan = server.plan()
        verdict = self._authenticate(http, ctx, plan)
        if type(verdict) is Pending:
            verdict = await verdict
            plan = server.plan()  # the hooks may have changed meanwhile
        if isinstance(verdict, RestError):  # with the scheme's lines (Retry-After…)
            lines = (*verdict.headers, *(ctx.pending_headers or ()))
            return _plain(verdict.status, orjson.dumps(verdict.to_dict()), lines)
        if http.method == "DELETE":
            return self._end_session(session, version)
        admitted = self._admit(http.body, content_type, accept, session, version)
        if isinstance(admitted, HttpResponse):  # the refusal
            return admitted
        answer_type, message = admitted
        extra: tuple[tuple[str, str], ...] = (
            ((SESSION_HEADER, protocol.new_session_id(self.host.secret_key)),)
            if message.method == "initialize"
            else ()
        )
        try:
            method = self._methods.get(message.method or "", self._unknown)
            result = method(message, http, ctx)
            if type(result) is _DirectCall:
                result = self._direct_call(result[0], message.id, server, plan, http, ctx)
            if type(result) is _ToolRun:
                # PERF: the tool's internal dispatch (its request made by :meth:`_tools_call`)
                # awaited here, not in a coroutine of its own, as the caller
                # (``current_user()`` answers it), and its answer's envelope written around
                # the data's one encoding.
                internal = result[1]
                token = enter_dispatch_user(ctx.user)
                try:
                    if self._plain_dispatch and type(server).dispatch_async is _DISPATCH_ASYNC:
                        # PERF: what the site's ``rest_do_request_async`` runs, a coroutine
                        # and a context look-up less (tools/call 167,394 → 165,661
                        # instructions).
                        response = await server.dispatch_planned(internal, plan)
                    else:
                        response = await host.rest_do_request_async(internal)
                finally:
                    leave_dispatch_user(token)
                # The request's metrics and access log name the route the tool ran.
                ctx.matched_route = response.matched_route
                body = tool_result_body(message.id, result[0], response)
            else:
                if type(result) is not dict and type(result) is not bytes:
                    result = await result  # a method that runs something: its coroutine
                body = result if type(result) is bytes else protocol.result_body(message.id, result)
        except ProtocolError as error:
            body = protocol.error_body(message.id, error)
        return _answered(answer_type, body, extra)

    def _origin_allowed(self, origin: str) -> bool:
        """Whether a request with this ``Origin`` may reach the endpoint: the site's own, or
        one the filter allows. SECURITY: a browser page of another origin whose name
        resolves to this server (DNS rebinding) must not reach the tools; requests without
        ``Origin`` do not come from a page."""
        allowed = origin.lower() == _origin_of(self.host.home)
        if self.host.hooks.has_filter(ORIGIN_FILTER):
            allowed = self.host.hooks.apply_filters(ORIGIN_FILTER, allowed, origin) is True
        return allowed

    def _authenticate(self, http: HttpRequest, ctx: RequestContext, plan: PipelinePlan) -> Any:
        """The request's user by the site's schemes, as a REST request's (the user is then
        ``ctx.user``): None or the chain's answer (a RestError refuses), a coroutine of it
        when a scheme awaits. No body is read (the JSON-RPC message is not a form), and
        without any scheme's credentials no request is built (PERF). ``plan``: the server's
        pipeline plan."""
        schemes = plan.schemes
        headers = http.headers
        single = headers.single if type(headers) is ScopeHeaders else None
        if single is None or http.query_string:
            carries = schemes.lines_carry_credentials(headers, http.query_string)
        else:
            # PERF: without a query string, the credential lines' raw names tested against
            # the scope's own pairs (what ``lines_carry_credentials`` answers, two calls
            # less), the names made bytes once per set of schemes.
            names, raw = self._probe
            if names is not schemes.credential_lines:
                names = schemes.credential_lines
                self._probe = (names, raw := raw_names(names))
            carries = not raw.isdisjoint(single)
        chain = plan.authentication if carries else plan.authentication_anonymous
        if chain is None:
            return None
        request = Request.from_http(http.method, http.path, http.query_string, http.headers, b"")
        return run_chain(chain, ctx.user, request)

    def _admit(
        self,
        body: bytes,
        content_type: _Line,
        accept: _Line,
        session: _Line,
        version: _Line,
    ) -> tuple[str, Message] | HttpResponse:
        """The answer's type and the request message of a POST that may go on, else the
        202 of a notification or a response to the server that may, or the refusal: 415 or
        406 by its lines, 400 for a message that is not one, 400 or 404 for a session
        missing, not issued here or ended, or a version not served (``initialize`` needs
        no session). PERF: one call for the three steps, the usual values (JSON, an
        ``Accept`` and a session seen before) read without a call: a ping and a
        ``tools/call`` ~1,500 instructions less (bench/mcp_call.py --instructions)."""
        known = _ANSWER_TYPES.entries.get(accept, "") if accept else _JSON_TYPE
        if content_type == _RAW_JSON_TYPE and known:
            answer_type = known
        else:
            chosen = _answer_type_of(content_type, accept)
            if isinstance(chosen, HttpResponse):
                return chosen
            answer_type = chosen
        try:
            message = protocol.read_message(body)
        except ProtocolError as error:
            return _refusal(400, error)
        if message.method == "initialize":
            return (answer_type, message) if message.is_request else _plain(202)
        if (
            session is None
            or self._checked.entries.get(session) is not True
            or session in self._ended.entries
            or (version is not None and version not in _VERSIONS)
        ):
            problem = self._session_problem(session, version)
            if problem is not None:
                return problem
        if not message.is_request:
            return _plain(202)  # a notification or a response to the server: no answer
        return answer_type, message

    def _session_problem(self, session: _Line, version: _Line) -> HttpResponse | None:
        """The refusal of a request without a session issued here and still open, or of a
        protocol version not served; None when it may go on."""
        if session is None:
            error = ProtocolError(protocol.INVALID_REQUEST, "Bad Request: Missing session ID")
            return _refusal(400, error)
        valid = self._checked.get(session)
        if valid is None:
            text = session.decode("latin-1")
            valid = self._checked.keep(
                session, protocol.session_id_valid(self.host.secret_key, text)
            )
        if not valid or session in self._ended.entries:
            return _refusal(404, ProtocolError(protocol.INVALID_REQUEST, "Session not found"))
        if version is not None and version not in _VERSIONS:
            error = ProtocolError(
                protocol.INVALID_REQUEST,
                f"Bad Request: Unsupported protocol version: {version.decode('latin-1')}",
            )
            return _refusal(400, error)
        return None

    def _end_session(self, session: _Line, version: _Line) -> HttpResponse:
        problem = self._session_problem(session, version)
        if problem is not None or session is None:
            return problem or _plain(400)
        with self._lock:
            self._ended.put(session, True)
        return _plain(204)

    @staticmethod
    def _unknown(message: Message, http: HttpRequest, ctx: RequestContext) -> Any:
        """The answer of a method not served: the JSON-RPC error."""
        raise ProtocolError(protocol.METHOD_NOT_FOUND, "Method not found")

    # -- methods ----------------------------------------------------------------------------

    def _initialize(
        self, message: Message, http: HttpRequest, ctx: RequestContext
    ) -> dict[str, Any]:
        host = self.host
        result: dict[str, Any] = {
            "protocolVersion": protocol.negotiate_version(message.params.get("protocolVersion")),
            "capabilities": {
                "tools": {"listChanged": False},
                "resources": {"subscribe": False, "listChanged": False},
            },
            "serverInfo": {"name": host.name, "version": host.version or REST_API_VERSION},
        }
        if host.description:
            result["instructions"] = host.description
        return result

    def _ping(self, message: Message, http: HttpRequest, ctx: RequestContext) -> Any:
        return {}

    def _tools_list(self, message: Message, http: HttpRequest, ctx: RequestContext) -> Any:
        return self._listed(ctx)

    async def _listed(self, ctx: RequestContext) -> dict[str, Any]:
        return {"tools": await self.tools.listed(ctx.user, ctx.app_password_scope)}

    def _tools_call(self, message: Message, http: HttpRequest, ctx: RequestContext) -> Any:
        """The tool's result: a dict when it is refused before it runs, else the tool and
        its internal request, for :meth:`serve` to dispatch."""
        name = message.params.get("name")
        arguments = message.params.get("arguments")
        if arguments is None:
            arguments = {}
        if type(name) is not str or not isinstance(arguments, dict):
            raise ProtocolError(protocol.INVALID_PARAMS, "Invalid params")
        # PERF: an ability's tool found in the registry's version of the names without a
        # call (the look-up of :meth:`Toolbox.find`).
        version, shown = self.tools.shown
        tool = shown.get(name) if version == self.host.abilities.version else None
        if tool is None:
            tool = self.tools.find(name)
        if tool is None:
            raise ProtocolError(protocol.INVALID_PARAMS, f"Unknown tool: {name}")
        scope = ctx.app_password_scope
        if scope is not None and not tool.in_scope(scope):
            # Internal dispatch would refuse it too; refused before reading the arguments.
            return tool_result(tool, Response.from_error(scope_error()))
        if tool.inputless and not arguments and scope is None:
            return _DirectCall((tool,))
        if tool.query_input:
            # PERF: :meth:`Tool.request` of an ability's tool whose arguments are the
            # query's ``input``, written out (tools/call 150,280 → 148,560 instructions,
            # bench/mcp_call.py).
            query = {"input": arguments} if arguments else {}
            internal = Request.for_dispatch(tool.method, tool.route, http.headers, query)
        else:
            made = tool.request(arguments, http.headers)
            if isinstance(made, RestError):
                return tool_result(tool, Response.from_error(made))
            internal = made
        internal.user = ctx.user
        return _ToolRun((tool, internal))

    def _direct_call(
        self,
        tool: Tool,
        ident: str | int | None,
        server: RestServer,
        plan: PipelinePlan,
        http: HttpRequest,
        ctx: RequestContext,
    ) -> Any:
        """A call of an ability's tool without input or arguments (:class:`_DirectCall`): its
        JSON-RPC answer, a coroutine of it, or the :class:`_ToolRun` to dispatch.

        Run directly when :meth:`_direct_of` found that the run route's dispatch would add
        nothing to the ability's run: what the run route's permission check and callback
        do for it (``AbilitiesController.direct_answer``: the permission callback asked
        once, the actions, the callback, the output check), as the caller, with the same
        answer or refusal, the same 500 and log line of a callback that fails, and the run
        route named for the metrics and the access log. PERF: no internal request, match,
        argument step, permission gate nor Response (tools/call 127,875 → 105,557
        instructions, bench/mcp_call.py)."""
        known: _Direct = tool.direct
        if not (
            known
            and known[0] is plan
            and known[1] == server.table.version
            and known[2] == self.host.abilities.version
            and len(known[4]) == known[5]
        ):
            known = self._direct_of(tool, server, plan)
            tool.direct = known
        route = known[3]
        ability = tool.ability
        if not route or ability is None or ability.input_schema or not ability.show_in_rest:
            # Dispatched: the request :meth:`_tools_call` makes for a query input, empty.
            internal = Request.for_dispatch(tool.method, tool.route, http.headers, {})
            internal.user = ctx.user
            return _ToolRun((tool, internal))
        user = ctx.user
        token = enter_dispatch_user(user)
        try:
            answer = known[6].direct_answer(ability, user)
        except Exception:
            answer = self._direct_failure(tool, route, server, http, ctx)
        finally:
            leave_dispatch_user(token)
        ctx.matched_route = route
        if type(answer) is dict:
            return tool_data_body(ident, tool, answer)
        if isinstance(answer, (Response, RestError)):
            return tool_result_body(ident, tool, _response_of(answer))
        return self._direct_later(answer, ident, tool, route, server, http, ctx)

    async def _direct_later(
        self,
        pending: Any,
        ident: str | int | None,
        tool: Tool,
        route: str,
        server: RestServer,
        http: HttpRequest,
        ctx: RequestContext,
    ) -> bytes:
        """:meth:`_direct_call`'s answer once an async callback has finished."""
        try:
            answer = await pending
        except Exception:
            answer = self._direct_failure(tool, route, server, http, ctx)
        return tool_result_body(ident, tool, _response_of(answer))

    @staticmethod
    def _direct_failure(
        tool: Tool, route: str, server: RestServer, http: HttpRequest, ctx: RequestContext
    ) -> Response:
        """The 500 of a callback that failed in a direct run, logged as the dispatch of the
        tool's internal request logs it (call in the ``except`` block)."""
        request = Request.for_dispatch(tool.method, tool.route, http.headers, {})
        request.user = ctx.user
        response = Response.from_error(server.unexpected_error(request, route))
        response.matched_route = route
        return response

    def _direct_of(self, tool: Tool, server: RestServer, plan: PipelinePlan) -> _Direct:
        """:attr:`Tool.direct` for ``plan``, the route table and the registry as they are
        now: the tool runs directly only when its run route's dispatch would add nothing to
        the ability's run. The dispatch is the site's own and the server's; the plan has no
        ``rest_pre_dispatch``, ``rest_request_before_callbacks``, ``rest_dispatch_request``,
        ``rest_request_after_callbacks`` nor ``svc_rate_limit`` callback; the route has no
        idempotency or rate limit option; the handler serving the tool's method there is the
        abilities' own run handler with its own arguments, callback and permission check,
        unwrapped; the registry holds this ability under its name."""
        key = (plan, server.table.version, self.host.abilities.version)
        dispatched: _Direct = (*key, "", (), 0, None)
        ability = tool.ability
        server_class = type(server)
        if (
            ability is None
            or not self._plain_dispatch
            or server_class.dispatch_async is not _DISPATCH_ASYNC
            or server_class.dispatch_planned is not _DISPATCH_PLANNED
            or plan.pre_dispatch_no_options
            or plan.before_callbacks
            or plan.dispatch_request
            or plan.after_callbacks
            or plan.rate_limit
        ):
            return dispatched
        chosen = server.table.handler_for(tool.route, tool.method)
        if chosen is None:
            return dispatched
        entry, handler, url_params = chosen
        definition = handler.definition
        controller = getattr(definition.get("callback"), "__self__", None)
        if (
            entry.guard is not None
            or url_params != {"name": ability.name}
            or not isinstance(controller, AbilitiesController)
            or not controller.is_own_run(definition)
            or controller.registry.by_name.get(ability.name) is not ability
            or handler.callback is not definition["callback"]
            or handler.permission is not definition["permission_callback"]
            or handler.args is not definition["args"]
        ):
            return dispatched
        args = definition["args"]
        return (*key, entry.route, args, len(args), controller)

    def _resource_uris(self) -> tuple[str, str]:
        return self.host.get_rest_url(), self.host.home + "/" + _OPENAPI_NAME

    def _resources_list(self, message: Message, http: HttpRequest, ctx: RequestContext) -> Any:
        index, openapi = self._resource_uris()
        return {
            "resources": [
                {
                    "uri": index,
                    "name": "rest-index",
                    "title": "REST API index",
                    "description": "The REST API's index: its namespaces, routes and"
                    " authentication schemes.",
                    "mimeType": _JSON_TYPE,
                },
                {
                    "uri": openapi,
                    "name": "openapi",
                    "title": "OpenAPI document",
                    "description": "The OpenAPI 3.1 document of the REST API.",
                    "mimeType": _JSON_TYPE,
                },
            ]
        }

    def _resources_read(self, message: Message, http: HttpRequest, ctx: RequestContext) -> Any:
        uri = message.params.get("uri")
        if not isinstance(uri, str):
            raise ProtocolError(protocol.INVALID_PARAMS, "Invalid params")
        index, openapi = self._resource_uris()
        if uri not in (index, openapi):
            raise ProtocolError(protocol.RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri})
        return self._read(uri, index)

    async def _read(self, uri: str, index: str) -> dict[str, Any]:
        if uri == index:
            response = await self.host.rest_do_request_async(Request("GET", "/"))
            data = response.data
        else:
            data = build_openapi(self.host.rest_get_server(), self.host)
        text = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS).decode()
        return {"contents": [{"uri": uri, "mimeType": _JSON_TYPE, "text": text}]}


def install_mcp_page(host: McpHost) -> McpEndpoint:
    """Serve ``/mcp`` on ``host`` (POST and DELETE; GET answers 405)."""
    endpoint = McpEndpoint(host)
    host.pages[MCP_PATH] = Page(
        endpoint.serve, ("POST", "DELETE"), html=False, refuse=_page_refusal
    )
    return endpoint
