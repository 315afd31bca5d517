"""svcrest's context variables each have a first-level slot of a context's map of their own."""

from __future__ import annotations

import contextvars
import importlib
import pkgutil
import tracemalloc
from typing import Any

import svcrest
from svcrest.ctxvars import _PACKAGE, SLOTS, SlotRegistry, context_variable, trie_slot


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
