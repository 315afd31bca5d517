"""svcrest's context variables each have a first-level slot of a context's map of their own."""

from __future__ import annotations

import contextvars
import importlib
import json
import pkgutil
import sys
import tracemalloc
from contextvars import ContextVar
from typing import Any

import pytest

import svcrest
from svcrest import App, current_user, public
from svcrest.ctxvars import _PACKAGE, SLOTS, SlotRegistry, context_variable, trie_slot
from tests.conftest import raw_request


def _grown(first: contextvars.ContextVar[Any], second: contextvars.ContextVar[Any]) -> int:
    """Bytes a context holding ``first`` grows by when ``second`` is set in a copy of it."""
    context = contextvars.Context()
    context.run(first.set, 1)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        copy = context.copy()
        copy.run(second.set, 2)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    del copy
    return grown


def _partners(
    base: contextvars.ContextVar[Any],
) -> tuple[contextvars.ContextVar[Any], contextvars.ContextVar[Any]]:
    """A variable in ``base``'s slot and one in another slot."""
    kept = []  # alive, so that each new variable has an address of its own
    same = other = None
    n = 0
    while same is None or other is None:
        made: contextvars.ContextVar[Any] = contextvars.ContextVar(f"partner{n}")
        kept.append(made)
        n += 1
        if trie_slot(made) == trie_slot(base):
            same = same or made
        else:
            other = other or made
    return same, other


def test_trie_slot_is_the_slot_the_map_branches_on() -> None:
    # A second variable in the first one's slot makes the map a second level (one node more),
    # one in another slot does not: what trie_slot says is what CPython's map does.
    for n in range(5):
        base: contextvars.ContextVar[int] = contextvars.ContextVar(f"base{n}")
        same, other = _partners(base)
        assert _grown(base, same) > _grown(base, other)
        assert _grown(base, other) == _grown(base, _partners(base)[1])


def test_a_variable_lands_in_the_one_free_slot() -> None:
    registry = SlotRegistry()
    free = 17
    registry.taken = set(range(SLOTS)) - {free}
    made = registry.variable("svcrest_test_free", None)
    assert trie_slot(made) == free
    assert made.get() is None
    assert registry.taken == set(range(SLOTS))
    assert made.name == "svcrest_test_free" or made.name.startswith("svcrest_test_free~")


def test_variables_of_one_registry_never_share_a_slot() -> None:
    registry = SlotRegistry()
    made = [registry.variable(f"svcrest_test_{n}", n) for n in range(SLOTS)]
    assert sorted(trie_slot(variable) for variable in made) == list(range(SLOTS))
    assert [variable.get() for variable in made] == list(range(SLOTS))


def test_past_32_variables_the_first_name_is_kept() -> None:
    registry = SlotRegistry()
    registry.taken = set(range(SLOTS))
    made = registry.variable("svcrest_test_full", 0.5)
    assert made.name == "svcrest_test_full"
    assert made.get() == 0.5


def _package_variables() -> dict[str, contextvars.ContextVar[Any]]:
    found: dict[str, contextvars.ContextVar[Any]] = {}
    for module in pkgutil.walk_packages(svcrest.__path__, "svcrest."):
        if module.name.endswith("__main__"):
            continue
        try:
            loaded = importlib.import_module(module.name)
        except ImportError:  # an optional dependency (e.g. OpenTelemetry) not installed
            continue
        for name, value in vars(loaded).items():
            if isinstance(value, contextvars.ContextVar) and value.name.startswith("svcrest_"):
                found[f"{module.name}.{name}"] = value
    return found


def test_every_package_variable_has_a_slot_of_its_own() -> None:
    variables = {id(variable): variable for variable in _package_variables().values()}
    names = {variable.name.split("~")[0] for variable in variables.values()}
    assert {
        "svcrest_request_context",
        "svcrest_dispatch_user",
        "svcrest_logged",
        "svcrest_inline",
        "svcrest_settle_until",
        "svcrest_db_timeout",
        "svcrest_allowed_ability_run",
    } <= names
    slots = [trie_slot(variable) for variable in variables.values()]
    assert len(set(slots)) == len(slots)
    assert set(slots) <= _PACKAGE.taken


def test_context_variable_keeps_its_default_and_takes_a_package_slot() -> None:
    made = context_variable("svcrest_test_default", 0.25)
    assert trie_slot(made) in _PACKAGE.taken
    assert made.get() == 0.25
    token = made.set(1.5)
    assert made.get() == 1.5
    made.reset(token)
    assert made.get() == 0.25


def _item(request: Any) -> dict[str, Any]:
    return {"id": int(request["id"]), "user": current_user().id}


def _logged_in(request: Any) -> bool:
    return bool(request.user.id)


def _sets_of_one_get(
    app: App, adapter: str, headers: list[tuple[bytes, bytes]]
) -> tuple[list[tuple[str, str]], bytes]:
    """The context-variable writes (name, ``set``/``reset``) one GET makes, and its body."""
    raw_request(app, adapter, "GET", "/svc-json/demo/v1/items/42", headers)  # warmed up
    writes: list[tuple[str, str]] = []

    def watch(frame: Any, event: str, called: Any) -> None:
        variable = getattr(called, "__self__", None) if event == "c_call" else None
        if isinstance(variable, ContextVar) and called.__name__ in ("set", "reset"):
            writes.append((variable.name.split("~")[0], called.__name__))

    sys.setprofile(watch)
    try:
        status, _, body = raw_request(app, adapter, "GET", "/svc-json/demo/v1/items/42", headers)
    finally:
        sys.setprofile(None)
    assert status == 200
    return writes, body


@pytest.mark.parametrize("adapter", ["asgi", "wsgi"])
def test_a_plain_get_sets_one_context_variable(adapter: str) -> None:
    app = App("http://127.0.0.1:8000")
    handler = {"methods": "GET", "callback": _item, "permission_callback": public}
    app.register_rest_route("demo/v1", r"/items/(?P<id>\d+)", handler)
    writes, body = _sets_of_one_get(app, adapter, [])
    assert writes == [("svcrest_request_context", "set"), ("svcrest_request_context", "reset")]
    assert json.loads(body) == {"id": 42, "user": 0}


@pytest.mark.parametrize("adapter", ["asgi", "wsgi"])
def test_a_cookie_and_nonce_get_sets_one_context_variable(adapter: str) -> None:
    app = App("http://127.0.0.1:8000")
    handler = {"methods": "GET", "callback": _item, "permission_callback": _logged_in}
    app.register_rest_route("demo/v1", r"/items/(?P<id>\d+)", handler)
    app.users.create("bench", "bench-password-0123", roles=("administrator",))
    user = app.users.get_by_login("bench")
    assert user is not None
    issued = app.auth.log_in(user, remember=False, ip="127.0.0.1", user_agent="t", secure=False)
    cookie = issued.set_cookie_header().split(";", 1)[0]
    nonce = app.auth.create_nonce("svc_rest", user.id, issued.token)
    headers = [(b"cookie", cookie.encode()), (b"x-svc-nonce", nonce.encode())]
    writes, body = _sets_of_one_get(app, adapter, headers)
    assert writes == [("svcrest_request_context", "set"), ("svcrest_request_context", "reset")]
    assert json.loads(body) == {"id": 42, "user": user.id}
