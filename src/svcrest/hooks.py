"""Actions and filters with priorities, one registry per App (no module globals).

A filter passes a value through every callback registered under a name, lowest priority first
and, within one priority, in the order the callbacks were added; each callback receives the
current value followed by every extra argument and returns the new value. An action is a filter
whose return values are ignored.

A callback whose signature takes fewer positional parameters gets only that many leading
arguments (WordPress's ``accepted_args``, read from the signature): ``lambda value: value``
works on a filter that passes four arguments, and ``*args`` receives them all.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import CoroutineType
from typing import Any, TypeVar, overload

__all__ = ["Hooks", "Pending", "fit_arguments", "is_awaitable"]

F = TypeVar("F", bound=Callable[..., Any])
_PLAIN = (bool, int, str, dict, list, tuple)


def _positional_capacity(callback: Callable[..., Any]) -> int | None:
    """How many positional arguments ``callback`` takes; None for ``*args`` or when its
    signature cannot be read."""
    try:
        signature = inspect.signature(callback)
    except (TypeError, ValueError):
        return None
    count = 0
    for parameter in signature.parameters.values():
        if parameter.kind is parameter.VAR_POSITIONAL:
            return None
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            count += 1
    return count


def fit_arguments(callback: Callable[..., Any]) -> Callable[..., Any]:
    """``callback``, or a wrapper passing it only the leading arguments it accepts."""
    capacity = _positional_capacity(callback)
    if capacity is None:
        return callback

    def fitted(*args: Any) -> Any:
        return callback(*args[:capacity])

    return fitted


def is_awaitable(value: Any) -> bool:
    """Whether ``value`` must be awaited (fast for plain values)."""
    # PERF: an exact type check first; inspect's protocol test only for unusual values.
    # PERF: the awaitable protocol is looked up on the type; inspect.isawaitable's ABC check
    # costs ~1 µs for every Response a filter returns.
    return type(value) is CoroutineType or (
        value is not None and not isinstance(value, _PLAIN) and hasattr(type(value), "__await__")
    )


class Pending:
    """The rest of a filter chain that has to be awaited (see ``apply_filters_eager``)."""

    __slots__ = ("awaitable",)

    def __init__(self, awaitable: Any) -> None:
        self.awaitable = awaitable


class Hooks:
    """A registry of named actions and filters.

    PERF: the ordered callback list of each hook is rebuilt only when the hook changes, so
    ``apply_filters`` on a hook without callbacks is one dict lookup.
    """

    __slots__ = ("_callbacks", "_did", "_ordered", "_registered", "version")

    def __init__(self) -> None:
        # name -> priority -> callbacks in insertion order
        self._callbacks: dict[str, dict[int, list[Callable[..., Any]]]] = {}
        # name -> flattened callbacks in run order (cache, rebuilt on change)
        self._ordered: dict[str, tuple[Callable[..., Any], ...]] = {}
        # name -> the callbacks as registered (not fitted), in run order
        self._registered: dict[str, tuple[Callable[..., Any], ...]] = {}
        self._did: dict[str, int] = {}
        #: Counts changes to the registry; caches derived from the callbacks compare it.
        self.version = 0

    @overload
    def add_filter(self, name: str, callback: F, priority: int = 10) -> F: ...

    @overload
    def add_filter(
        self, name: str, callback: None = None, priority: int = 10
    ) -> Callable[[F], F]: ...

    def add_filter(
        self, name: str, callback: F | None = None, priority: int = 10
    ) -> F | Callable[[F], F]:
        """Register ``callback`` on filter ``name`` and return it.

        Without a callback, returns a decorator: ``@hooks.add_filter("name", priority=5)``.
        """
        if callback is None:

            def decorate(function: F) -> F:
                return self.add_filter(name, function, priority)

            return decorate
        self._callbacks.setdefault(name, {}).setdefault(priority, []).append(callback)
        self._reorder(name)
        return callback

    add_action = add_filter

    def remove_filter(self, name: str, callback: Callable[..., Any], priority: int = 10) -> bool:
        """Remove one registration of ``callback`` at ``priority``; True when one was removed."""
        by_priority = self._callbacks.get(name)
        if not by_priority or priority not in by_priority:
            return False
        callbacks = by_priority[priority]
        for index, registered in enumerate(callbacks):
            if registered == callback:
                del callbacks[index]
                if not callbacks:
                    del by_priority[priority]
                self._reorder(name)
                return True
        return False

    remove_action = remove_filter

    def remove_all_filters(self, name: str) -> None:
        """Remove every callback of ``name``."""
        self._callbacks.pop(name, None)
        self._reorder(name)

    remove_all_actions = remove_all_filters

    def has_filter(self, name: str, callback: Callable[..., Any] | None = None) -> bool | int:
        """Without ``callback``: whether ``name`` has any callback.

        With ``callback``: the priority it is registered at (WordPress semantics), or False.
        """
        by_priority = self._callbacks.get(name)
        if not by_priority:
            return False
        if callback is None:
            return True
        for priority in sorted(by_priority):
            if any(registered == callback for registered in by_priority[priority]):
                return priority
        return False

    has_action = has_filter

    def apply_filters(self, name: str, value: Any, *args: Any) -> Any:
        """Pass ``value`` through the callbacks of ``name`` and return the result."""
        callbacks = self._ordered.get(name)
        if callbacks is None:
            return value
        for callback in callbacks:
            value = callback(value, *args)
        return value

    async def apply_filters_async(self, name: str, value: Any, *args: Any) -> Any:
        """``apply_filters`` for the dispatch pipeline: a callback may be ``async``."""
        result = self.apply_filters_eager(name, value, *args)
        if type(result) is Pending:
            return await result.awaitable
        return result

    def apply_filters_eager(self, name: str, value: Any, *args: Any) -> Any:
        """Run the filters synchronously until one returns an awaitable.

        Returns the filtered value, or a ``Pending`` whose ``awaitable`` finishes the
        chain. PERF: the pipeline's hooks are nearly always plain functions; this saves a
        coroutine per hook per request.
        """
        callbacks = self._ordered.get(name)
        if callbacks is None:
            return value
        for position, callback in enumerate(callbacks):
            value = callback(value, *args)
            if is_awaitable(value):
                return Pending(self._finish_chain(callbacks[position + 1 :], value, args))
        return value

    @staticmethod
    async def _finish_chain(
        rest: tuple[Callable[..., Any], ...], pending: Any, args: tuple[Any, ...]
    ) -> Any:
        value = await pending
        for callback in rest:
            value = callback(value, *args)
            if is_awaitable(value):
                value = await value
        return value

    def has_callbacks(self, name: str) -> bool:
        """Whether any callback is registered on ``name`` (one dict lookup)."""
        return name in self._ordered

    def do_action(self, name: str, *args: Any) -> None:
        """Run every callback of ``name`` with ``args``; counts the run for ``did_action``."""
        self._did[name] = self._did.get(name, 0) + 1
        callbacks = self._ordered.get(name)
        if callbacks is None:
            return
        for callback in callbacks:
            callback(*args)

    def did_action(self, name: str) -> int:
        """How many times ``do_action(name)`` has run."""
        return self._did.get(name, 0)

    def registered(self, name: str) -> tuple[Callable[..., Any], ...]:
        """The callbacks of ``name`` as they were registered, in run order."""
        return self._registered.get(name, ())

    def _reorder(self, name: str) -> None:
        self.version += 1
        by_priority = self._callbacks.get(name)
        if not by_priority:
            self._callbacks.pop(name, None)
            self._ordered.pop(name, None)
            self._registered.pop(name, None)
            return
        registered = tuple(
            callback for priority in sorted(by_priority) for callback in by_priority[priority]
        )
        self._registered[name] = registered
        self._ordered[name] = tuple(fit_arguments(callback) for callback in registered)
