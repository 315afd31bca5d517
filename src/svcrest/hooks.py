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
from typing import Any, TypeVar, overload

from svcrest.chains import NOT_AWAITABLE, is_awaitable, run_chain_async

__all__ = ["NOT_AWAITABLE", "Hooks", "fit_arguments", "is_awaitable"]

F = TypeVar("F", bound=Callable[..., Any])


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


def fit_arguments(callback: Callable[..., Any], count: int | None = None) -> Callable[..., Any]:
    """``callback``, or a wrapper passing it only the leading arguments it accepts.

    With ``count`` (how many arguments the caller passes), a callback that takes them all is
    returned as it is: PERF: no wrapper call on the way.
    """
    capacity = _positional_capacity(callback)
    if capacity is None or (count is not None and capacity >= count):
        return callback

    def fitted(*args: Any) -> Any:
        return callback(*args[:capacity])

    return fitted


class Hooks:
    """A registry of named actions and filters.

    PERF: the callbacks of a hook are prepared once per change of the registry and per
    argument count: in run order, each fitted to the arguments the hook passes (a callback
    taking them all is called directly, without a wrapper). ``apply_filters`` on a hook
    without callbacks is one dict lookup.
    """

    __slots__ = ("_callbacks", "_fitted", "_registered", "action_counts", "version")

    def __init__(self) -> None:
        # name -> priority -> callbacks in insertion order
        self._callbacks: dict[str, dict[int, list[Callable[..., Any]]]] = {}
        # name -> the callbacks as registered (not fitted), in run order
        self._registered: dict[str, tuple[Callable[..., Any], ...]] = {}
        # (name, argument count) -> the callbacks fitted to that count, in run order: a hook
        # is nearly always called with one count. Only registered names; bounded by the names
        # and the counts code passes; emptied on change. PERF: a running hook finds its
        # callbacks with one look-up, without a method call (~1,000 instructions).
        self._fitted: dict[tuple[str, int], tuple[Callable[..., Any], ...]] = {}
        #: The runs of each action ``did_action`` answers, by name. A caller standing in for an
        #: action whose callbacks it knows (see :meth:`count_action`) may add its run here
        #: itself (PERF: a Python call less).
        self.action_counts: dict[str, int] = {}
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

    def _prepared(self, name: str, count: int) -> tuple[Callable[..., Any], ...]:
        """The callbacks of ``name`` fitted to ``count`` arguments, ``()`` without callbacks
        (kept in ``_fitted`` for a registered name)."""
        key = (name, count)
        fitted = self._fitted.get(key)
        if fitted is not None:
            return fitted
        registered = self._registered.get(name)
        if registered is None:
            return ()
        fitted = self._fitted[key] = tuple(
            fit_arguments(callback, count) for callback in registered
        )
        return fitted

    def prepared(self, name: str, count: int) -> tuple[Callable[..., Any], ...]:
        """The callbacks of ``name`` in run order, each fitted to ``count`` arguments (a
        callback taking them all is itself, not a wrapper); ``()`` without callbacks.

        For callers that run a hook's chain themselves (the REST pipeline, which awaits an
        ``async`` callback's result in place); valid until the hooks change (``version``).
        """
        return self._prepared(name, count)

    def apply_filters(self, name: str, value: Any, *args: Any) -> Any:
        """Pass ``value`` through the callbacks of ``name`` and return the result."""
        if name not in self._registered:
            return value
        count = len(args) + 1
        for callback in self._fitted.get((name, count)) or self._prepared(name, count):
            value = callback(value, *args)
        return value

    async def apply_filters_async(self, name: str, value: Any, *args: Any) -> Any:
        """``apply_filters`` where a callback may be ``async``: an awaitable answer is awaited
        before the next callback gets it (as the REST pipeline runs its hooks, through
        :func:`svcrest.chains.run_chain_async`)."""
        return await run_chain_async(self.prepared(name, len(args) + 1), value, args)

    def has_callbacks(self, name: str) -> bool:
        """Whether any callback is registered on ``name`` (one dict lookup)."""
        return name in self._registered

    def do_action(self, name: str, *args: Any) -> None:
        """Run every callback of ``name`` with ``args``; counts the run for ``did_action``."""
        self.action_counts[name] = self.action_counts.get(name, 0) + 1
        if name not in self._registered:
            return
        count = len(args)
        for callback in self._fitted.get((name, count)) or self._prepared(name, count):
            callback(*args)

    def count_action(self, name: str) -> None:
        """Count one run of action ``name`` for :meth:`did_action` without running its
        callbacks: for a caller that found them to be only its own (:meth:`has_only`) and did
        their work itself (PERF: a frequent action's call and its callbacks' calls)."""
        self.action_counts[name] = self.action_counts.get(name, 0) + 1

    def has_only(self, name: str, callbacks: tuple[Callable[..., Any], ...]) -> bool:
        """Whether ``callbacks`` (in run order) are every callback of ``name``. A caller
        standing in for its own callbacks asks again whenever :attr:`version` moves: a
        callback added later (a plugin's) then runs as usual, with the same arguments."""
        return self._registered.get(name, ()) == callbacks

    def did_action(self, name: str) -> int:
        """How many times ``do_action(name)`` has run."""
        return self.action_counts.get(name, 0)

    def registered(self, name: str) -> tuple[Callable[..., Any], ...]:
        """The callbacks of ``name`` as they were registered, in run order."""
        return self._registered.get(name, ())

    def _reorder(self, name: str) -> None:
        self.version += 1
        self._fitted = {}
        by_priority = self._callbacks.get(name)
        if not by_priority:
            self._callbacks.pop(name, None)
            self._registered.pop(name, None)
            return
        self._registered[name] = tuple(
            callback for priority in sorted(by_priority) for callback in by_priority[priority]
        )
