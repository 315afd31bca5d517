"""The request path calls no method of an imported object through an attribute load.

CPython 3.11 compiles ``NAME.method(...)`` as an attribute load and a call (not as a method
call) when ``NAME`` is bound by an import in the module: for a C method (a dict's ``get``, a
context variable's ``set``) that makes a bound method object at every call, ~300
instructions. The modules every REST request runs through bind such methods once at import
(``usual_method = USUAL_METHODS.get``, ``current_context = REQUEST_CONTEXT.get``); this test
keeps it so, by reading their bytecode."""

from __future__ import annotations

import dis
import importlib
import itertools
import types
from collections.abc import Iterator

import pytest

#: The modules a plain GET runs through, from each adapter to the answer.
REQUEST_PATH = (
    "svcrest.app",
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
    "svcrest.rest.routing.table",
    "svcrest.rest.server",
    "svcrest.rest.urls",
    "svcrest.rest.wire",
    "svcrest.serve.asgi",
    "svcrest.serve.rsgi",
    "svcrest.serve.wsgi",
    "svcrest.site.respond",
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
