"""The request path calls no method of an imported object through an attribute load.

CPython 3.11 compiles ``NAME.method(...)`` as an attribute load and a call (not as a method
call) when ``NAME`` is bound by an import in the module: for a C method (a dict's ``get``, a
context variable's ``set``) that makes a bound method object at every call, ~300
instructions. The modules every REST request runs through bind such methods once at import
(``usual_method = USUAL_METHODS.get``, ``current_context = REQUEST_CONTEXT.get``); this test
keeps it so, by reading their bytecode.

A call of a callable an instance holds (``service.clock()``) is never specialised by CPython
3.11 (a generic look-up each time, ~150 instructions), and a method call on an instance
whose attributes outgrew the shared-key values (its dict made a plain dict) takes a slower
specialisation (a dict look-up of the name each time). The tests at the end run such calls
until they are specialised and read the adaptive bytecode."""

from __future__ import annotations

import dis
import importlib
import itertools
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

#: The modules a plain GET runs through, from each adapter to the answer.
REQUEST_PATH = (
    "svcrest.app",
    "svcrest.auth.app_password_routes",
    "svcrest.auth.app_passwords",
    "svcrest.auth.cookies",
    "svcrest.auth.nonces",
    "svcrest.auth.passwords",
    "svcrest.auth.rest_cookie",
    "svcrest.auth.service",
    "svcrest.auth.session_cache",
    "svcrest.auth.session_watch",
    "svcrest.auth.sessions",
    "svcrest.auth.throttle",
    "svcrest.auth.users",
    "svcrest.auth.verified_cookies",
    "svcrest.blocking",
    "svcrest.chains",
    "svcrest.http.context",
    "svcrest.http.environ",
    "svcrest.http.exchange",
    "svcrest.http.request",
    "svcrest.http.response",
    "svcrest.rest.answer",
    "svcrest.rest.auth_schemes",
    "svcrest.rest.defaults",
    "svcrest.rest.pipeline",
    "svcrest.rest.plan",
    "svcrest.rest.resources.context_filter",
    "svcrest.rest.resources.controller",
    "svcrest.rest.resources.endpoint_args",
    "svcrest.rest.resources.fields_registry",
    "svcrest.rest.routing.table",
    "svcrest.rest.server",
    "svcrest.rest.urls",
    "svcrest.rest.wire",
    "svcrest.serve.asgi",
    "svcrest.serve.rsgi",
    "svcrest.serve.wsgi",
    "svcrest.site.respond",
    "svcrest.store.collection_columns",
    "svcrest.store.collection_table",
    "svcrest.store.sqlite",
    "svcrest.store.store_collection",
    "svcrest.syncrun",
)

#: The modules an MCP ``tools/call`` of an ability runs through besides those above: the
#: transport, the abilities' run route and the ability's run, the argument step, the actions.
MCP_PATH = (
    "svcrest.abilities.ability",
    "svcrest.abilities.registry",
    "svcrest.abilities.routes",
    "svcrest.hooks",
    "svcrest.rest.validation",
    "svcrest.site.mcp.endpoint",
    "svcrest.site.mcp.protocol",
    "svcrest.site.mcp.tools",
    "svcrest.site.pages",
)

#: The access log's branch (``LOGGED_REQUEST``) runs only when the server logs requests.
ALLOWED = frozenset({"LOGGED_REQUEST"})
#: Code that runs when a route is registered, not per request.
AT_REGISTRATION = frozenset({"PreparedHandler.__init__"})


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _code_objects(constant)


def _c_method_of_global(module: types.ModuleType, name: str, attribute: str) -> bool:
    """Whether ``attribute`` of ``module``'s global ``name`` (not a module) is a C method."""
    owner = vars(module).get(name)
    if name in ALLOWED or owner is None or isinstance(owner, types.ModuleType):
        return False
    return isinstance(getattr(owner, attribute, None), types.BuiltinMethodType)


def bound_at_each_call(module: types.ModuleType) -> list[str]:
    """``NAME.method`` loads in ``module``'s code where ``NAME`` is a global (not a module)
    and ``method`` one of its C methods, as ``function: NAME.method``."""
    source = module.__loader__.get_source(module.__name__)  # type: ignore[union-attr]
    assert source is not None
    found = []
    for code in _code_objects(compile(source, module.__file__ or "", "exec")):
        if code.co_qualname in AT_REGISTRATION:
            continue
        for previous, instruction in itertools.pairwise(dis.get_instructions(code)):
            if (
                instruction.opname == "LOAD_ATTR"
                and previous.opname == "LOAD_GLOBAL"
                and _c_method_of_global(module, previous.argval, instruction.argval)
            ):
                found.append(f"{code.co_qualname}: {previous.argval}.{instruction.argval}")
    return found


@pytest.mark.parametrize("name", REQUEST_PATH + MCP_PATH)
def test_request_path_binds_no_c_method_per_call(name: str) -> None:
    assert bound_at_each_call(importlib.import_module(name)) == []


def test_the_check_sees_a_method_call_on_an_imported_name() -> None:
    """The pattern the check looks for is what CPython makes of such a call (a check that
    could not fail would prove nothing)."""
    module = types.ModuleType("svcrest_probe")
    source = (
        "from svcrest.http.context import REQUEST_CONTEXT\n"
        "def read():\n"
        "    return REQUEST_CONTEXT.get()\n"
    )
    module.__loader__ = _Source(source)  # type: ignore[assignment]
    module.__file__ = "svcrest_probe.py"
    exec(compile(source, module.__file__, "exec"), vars(module))
    assert bound_at_each_call(module) == ["read: REQUEST_CONTEXT.get"]


class _Source:
    """A loader that has only the probe's source."""

    def __init__(self, source: str) -> None:
        self.source = source

    def get_source(self, name: str) -> str:
        return self.source


#: Calls enough for CPython 3.11 to specialise an instruction even after its longest backoff
#: (an earlier test may have left it unspecialised for another type).
WARM_CALLS = 5_000
ADAPTIVE = frozenset({"LOAD_ATTR_ADAPTIVE", "LOAD_METHOD_ADAPTIVE", "LOAD_GLOBAL_ADAPTIVE"})


def unspecialised_loads(code: types.CodeType, *, until_return: bool = False) -> list[str]:
    """The loads of ``code`` still adaptive (never specialised), as ``OPNAME name``; with
    ``until_return``, only those before the first ``return`` (a fast path's own)."""
    found = []
    for instruction in dis.get_instructions(code, adaptive=True):
        if until_return and instruction.opname == "RETURN_VALUE":
            break
        if instruction.opname in ADAPTIVE:
            found.append(f"{instruction.opname} {instruction.argval}")
    return found


def test_a_method_call_on_a_served_app_is_specialised() -> None:
    """An App that served a request keeps few enough attributes in its dict for CPython's
    shared-key values, so ``host.rest_base_path()`` (every request) is specialised for
    them, not for a plain dict."""
    from svcrest import App, public

    app = App()
    route = {"methods": "GET", "callback": lambda r: [1], "permission_callback": public}
    app.register_rest_route("demo/v1", "/items", route)
    assert app.rest_do_request("/demo/v1/items").status == 200
    assert app.rest_output_link_header() is not None
    code = compile("def base_path(host):\n    return host.rest_base_path()\n", "probe.py", "exec")
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    for _ in range(WARM_CALLS):
        namespace["base_path"](app)
    assert unspecialised_loads(namespace["base_path"].__code__) == []
    ops = [i.opname for i in dis.get_instructions(namespace["base_path"].__code__, adaptive=True)]
    assert "LOAD_METHOD_WITH_VALUES" in ops


def test_the_remembered_cookie_check_reads_the_services_callables() -> None:
    """``service.change_mark`` and ``service.clock`` are callables the service holds: read,
    then called, their loads specialise (called as methods they never would)."""
    from svcrest.auth import rest_cookie
    from tests.auth.test_auth_service import Env

    env = Env()
    try:
        value = env.log_in(env.alice).value
        assert env.auth.validate_cookie(value) is not None
        for _ in range(WARM_CALLS):
            known = rest_cookie._remembered(env.auth, value)
        assert known is not None and known.user.id == env.alice.id
        assert unspecialised_loads(rest_cookie._remembered.__code__) == []
    finally:
        env.store.close()


def test_a_remembered_nonce_is_checked_with_specialised_loads() -> None:
    """``NonceManager.verified``'s memo hit (to its first return) reads the manager's clock
    as an attribute, then calls it."""
    from svcrest.auth.nonces import NonceManager

    nonces = NonceManager(b"secret", lambda: 1_700_000_000.0)
    nonce = nonces.create("wp_rest", 7, "token")
    for _ in range(WARM_CALLS):
        assert nonces.verified(nonce, "wp_rest", 7, "token") == 1
    assert unspecialised_loads(NonceManager.verified.__code__, until_return=True) == []


def test_a_stored_item_is_read_with_specialised_loads() -> None:
    """``CollectionTable.get`` reads the tables' store getter (a callable they hold) and
    calls it: no property read, no method call of a held callable (neither is specialised
    by CPython 3.11)."""
    from svcrest.store import open_store
    from svcrest.store.collection_table import CollectionTable
    from tests.store.test_collection_table import make_table

    store = open_store(None)
    try:
        table = make_table(store)
        table.migrate()
        item_id = table.insert({"title": "one"})["id"]
        for _ in range(WARM_CALLS):
            item = table.get(item_id)
        assert item is not None and item["title"] == "one"
        assert unspecialised_loads(CollectionTable.get.__code__) == []
    finally:
        store.close()


def unspecialised_loads_run(code: types.CodeType, call: Callable[[], object]) -> list[str]:
    """The loads of ``code`` that ``call`` runs and that are still adaptive (never
    specialised), as ``OPNAME name``: the adaptive bytecode read first, then one traced call
    names the instructions that ran (a branch not taken may stay adaptive)."""
    adaptive = {
        instruction.offset: f"{instruction.opname} {instruction.argval}"
        for instruction in dis.get_instructions(code, adaptive=True)
        if instruction.opname in ADAPTIVE
    }
    ran: set[int] = set()

    def tracer(frame: types.FrameType, event: str, arg: object) -> Any:
        if frame.f_code is not code:
            return None
        frame.f_trace_opcodes = True
        if event == "opcode":
            ran.add(frame.f_lasti)
        return tracer

    sys.settrace(tracer)
    try:
        call()
    finally:
        sys.settrace(None)
    assert ran, "the traced call did not run the code"
    return [text for offset, text in sorted(adaptive.items()) if offset in ran]


def test_the_default_step_and_the_credential_probe_run_specialised_loads() -> None:
    """The default step (its usual case: the route's remembered ``Allow`` line with an
    Origin's CORS lines), a WSGI environ's credential probe (``EnvironHeaders.has_any``) and
    the credential rule the plan holds run no unspecialised load (the rule is called as
    ``plan.rule.carried``, a method CPython 3.11 specialises; a callable the plan held was
    not)."""
    from svcrest import App, Request, public
    from svcrest.http.environ import EnvironHeaders
    from svcrest.rest.auth_schemes import CredentialRule
    from svcrest.rest.defaults import default_own_lines

    app = App()
    route = {"methods": "GET", "callback": lambda r: [1], "permission_callback": public}
    app.register_rest_route("demo/v1", "/items", route)
    server = app.rest_get_server()
    request = Request("GET", "/demo/v1/items")
    request.headers["Origin"] = "http://example.com"
    response = server.dispatch(request)
    plan = server.plan()
    headers = EnvironHeaders({"REQUEST_METHOD": "GET", "HTTP_HOST": "h", "HTTP_ORIGIN": "o"})
    for _ in range(WARM_CALLS):
        own = default_own_lines(response, server, request)
        assert plan.rule.carried(headers, None, None) == 0
    assert own[0] == ("Allow", "GET")
    step = default_own_lines.__code__
    assert unspecialised_loads_run(step, lambda: default_own_lines(response, server, request)) == []
    for code in (EnvironHeaders.has_any.__code__, CredentialRule.carried.__code__):
        assert unspecialised_loads_run(code, lambda: plan.rule.carried(headers, None, None)) == []
