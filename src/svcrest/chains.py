"""Chains of callbacks that may answer with an awaitable: the one runner of every hook chain.

A hook passes a value through its callbacks, each receiving the previous answer and the
hook's other arguments. A callback may be ``async`` (or return any awaitable): its answer is
awaited before the next callback gets it. :func:`run_chain` runs a chain plainly, without a
coroutine, until a callback answers with an awaitable; from there it returns one coroutine
(of type :data:`Pending`) that finishes the chain. A caller in a coroutine writes::

    value = run_chain(chain, value, request)
    if type(value) is Pending:
        value = await value

A chain that is usually empty (most hooks have no callback on most sites) is skipped by the
caller, ``run_chain(chain, value, request) if chain else value``: the runner's one idiom, so
an empty hook costs a truth test instead of a call (~700 instructions; bench/instructions.py).

PERF: most requests meet no ``async`` callback, and a coroutine costs ~0.4 µs; the runner
takes the hook's arguments as positional parameters (a ``*args`` call costs ~80 ns more a
callback), so a chain of a callback costs that callback's call and one runner call.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable
from types import CoroutineType
from typing import Any, Final

__all__ = [
    "NOT_AWAITABLE",
    "Chain",
    "Pending",
    "as_pending",
    "is_awaitable",
    "run_chain",
    "run_chain_async",
    "settled",
]

#: A hook's callbacks in run order, each taking the value and the hook's arguments.
Chain = tuple[Callable[..., Any], ...]

#: Types known not to be awaitable. PERF: one set lookup answers for the values callbacks
#: return again and again (None, bools, dicts, Responses…). Bounded: types come from code,
#: and the set stops growing at 512.
NOT_AWAITABLE: set[type] = {type(None), bool, int, str, dict, list, tuple, float}


def is_awaitable(value: Any) -> bool:
    """Whether ``value`` must be awaited (fast for plain values)."""
    kind = type(value)
    if kind in NOT_AWAITABLE:
        return False
    # PERF: the awaitable protocol is looked up on the type; inspect.isawaitable's ABC check
    # costs ~1 µs for every Response a filter returns.
    if kind is CoroutineType or hasattr(kind, "__await__"):
        return True
    if len(NOT_AWAITABLE) < 512:
        NOT_AWAITABLE.add(kind)
    return False


class _NoArgument:
    """The type of the marker of an argument the hook does not pass."""


_NO: Final = _NoArgument()


def run_chain(chain: Chain, value: Any, a: Any = _NO, b: Any = _NO, c: Any = _NO) -> Any:
    """``value`` passed through ``chain``, each callback called with the current value and
    the hook's arguments (``a``, ``b``, ``c``: as many as the hook passes).

    Returns the last answer, or, from the first callback answering with an awaitable, a
    :data:`Pending` coroutine that awaits it and runs the rest of the chain (awaiting every
    awaitable answer) to the last answer. An exception a callback raises propagates.
    """
    position = 0
    for callback in chain:
        # Two checks pick the hook's argument count.
        if b is _NO:
            value = callback(value) if a is _NO else callback(value, a)
        elif c is _NO:
            value = callback(value, a, b)
        else:
            value = callback(value, a, b, c)
        # PERF: a counter, not an iterator of the chain handed to the coroutine: that cost
        # 94,133 instructions an anonymous GET against 93,532 (bench/instructions.py).
        position += 1  # noqa: SIM113
        if type(value) not in NOT_AWAITABLE and is_awaitable(value):
            arguments = tuple(argument for argument in (a, b, c) if argument is not _NO)
            return _finish_chain(chain[position:], value, arguments)
    return value


async def _finish_chain(rest: Chain, pending: Any, arguments: tuple[Any, ...]) -> Any:
    """The rest of :func:`run_chain`: ``pending`` (the awaitable a callback answered)
    awaited, then the callbacks ``rest`` of the chain."""
    return await run_chain_async(rest, await pending, arguments)


def as_pending(awaitable: Any) -> Any:
    """``awaitable`` (a callback's awaitable answer) as a :data:`Pending`, for a caller that
    calls a chain's one callback itself and answers as :func:`run_chain` would."""
    return _finish_chain((), awaitable, ())


async def run_chain_async(
    chain: Iterable[Callable[..., Any]], value: Any, arguments: tuple[Any, ...] = ()
) -> Any:
    """:func:`run_chain` in a coroutine, for any number of ``arguments``: ``value`` through
    the callbacks of ``chain``, every awaitable answer awaited before the next callback
    gets it."""
    for callback in chain:
        value = callback(value, *arguments)
        if type(value) not in NOT_AWAITABLE and is_awaitable(value):
            value = await value
    return value


async def settled(value: Any) -> Any:
    """``value``, awaited when it is awaitable: the answer of a callback that may be
    ``async``, for a coroutine that calls one callback on its own."""
    return await value if is_awaitable(value) else value


def _pending_type() -> type[Coroutine[Any, Any, Any]]:
    """The type of the coroutine :func:`run_chain` returns (a compiled build's coroutines
    have types of their own)."""
    probe: Coroutine[Any, Any, Any] = _finish_chain((), None, ())
    kind = type(probe)
    probe.close()
    return kind


#: The type of :func:`run_chain`'s unfinished chain: ``type(answer) is Pending`` tells a
#: caller to await it (an answer of a finished chain is never of this type).
Pending: Final[type[Coroutine[Any, Any, Any]]] = _pending_type()
