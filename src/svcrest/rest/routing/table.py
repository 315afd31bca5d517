"""The route table: registration in order, options, namespaces and the compiled matcher."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from svcrest.rest.routing.definitions import (
    Handler,
    RouteDefinitionError,
    public,
    shared_route_args,
    split_route_args,
)
from svcrest.rest.routing.matcher import CompiledMatcher, RoutePattern

__all__ = ["MEMO_PATH", "MEMO_SIZE", "RouteEntry", "RouteTable"]

MEMO_SIZE = 2048
MEMO_PATH = 512


@dataclass(slots=True)
class RouteEntry:
    """One full route: its pattern, its handlers in order and its route options."""

    route: str
    namespace: str
    pattern: RoutePattern
    handlers: list[Handler] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    #: The route-level ``args`` of every registration of this route, which every handler
    #: shares (under its own definitions): a handler registered before or after them still
    #: gets ``id`` validated and coerced from ``(?P<id>\d+)``.
    shared_args: dict[str, Any] = field(default_factory=dict)
    #: The Allow value when no handler has a permission callback (``public`` counts as
    #: none: it allows everyone): every method in order of first appearance, ", "-joined;
    #: None when some handler has one (it must be asked on each request). PERF: a plain
    #: field, read by the Allow header on every request; the table, the one writer of
    #: ``handlers``, keeps it current (:meth:`remember_allow`).
    permissionless_allow: str | None = field(init=False, default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.remember_allow()

    def remember_allow(self) -> None:
        """Work out :attr:`permissionless_allow` from the handlers (after they changed)."""
        handlers = self.handlers
        value: str | None = None
        if all(handler.get("permission_callback") in (None, public) for handler in handlers):
            methods = (method for handler in handlers for method in handler["methods"])
            value = ", ".join(dict.fromkeys(methods))
        self.permissionless_allow = value


class RouteTable:
    """Routes in registration order; compiles its matcher on first use after a change.

    SECURITY/PERF: compiling happens under a lock, once per change of the table, never per
    request.
    """

    def __init__(self) -> None:
        self._entries: dict[str, RouteEntry] = {}
        self._ordered: list[RouteEntry] = []
        self._namespaces: dict[str, None] = {}
        self._matcher: CompiledMatcher | None = None
        # The matcher the remembered matches were found with, and path → matches.
        self._memo: tuple[
            CompiledMatcher | None, dict[str, tuple[tuple[RouteEntry, dict[str, str]], ...]]
        ] = (None, {})
        self._lock = threading.Lock()
        #: ``get(route)``: the entry registered under exactly ``route``, or None. PERF: the
        #: entries' own ``dict.get`` (no Python frame: the Allow header asks on every request).
        self.get: Callable[[str], RouteEntry | None] = self._entries.get

    def add(
        self, namespace: str, full_route: str, args: Any, *, override: bool = False
    ) -> RouteEntry:
        """Register or merge ``full_route``; raises ``RouteDefinitionError`` for a bad
        definition or an invalid regular expression (nothing is registered then)."""
        handlers, options = split_route_args(args)
        shared = shared_route_args(args)
        try:
            pattern = RoutePattern(full_route)
        except re.error as exc:
            raise RouteDefinitionError(f"invalid route pattern {full_route!r}: {exc}") from None
        options.setdefault("namespace", namespace)
        with self._lock:
            entry = self._entries.get(full_route)
            if entry is None:
                entry = RouteEntry(full_route, namespace, pattern, handlers, options, shared)
                self._entries[full_route] = entry
                self._ordered.append(entry)
                self._matcher = None
            else:
                if override:
                    entry.handlers = handlers
                    entry.options = options
                    entry.namespace = namespace
                    entry.shared_args = shared
                else:
                    entry.handlers.extend(handlers)
                    entry.options.update(options)
                    entry.shared_args.update(shared)
                    for handler in entry.handlers:
                        handler["args"] = {**entry.shared_args, **handler["args"]}
                entry.remember_allow()  # a new entry's is worked out when it is made
            if namespace:
                self._namespaces.setdefault(namespace, None)
        return entry

    def __iter__(self) -> Iterator[RouteEntry]:
        return iter(list(self._ordered))

    def __len__(self) -> int:
        return len(self._ordered)

    @property
    def namespaces(self) -> list[str]:
        """Namespaces in registration order."""
        return list(self._namespaces)

    def _compiled(self) -> CompiledMatcher:
        matcher = self._matcher
        if matcher is None:
            with self._lock:
                matcher = self._matcher
                if matcher is None:
                    matcher = CompiledMatcher([entry.pattern for entry in self._ordered])
                    self._matcher = matcher
        return matcher

    def compile(self) -> None:
        """Build the matcher now (otherwise the first match does)."""
        self._compiled()

    def matches(self, path: str) -> tuple[tuple[RouteEntry, dict[str, str]], ...]:
        """The entries whose pattern matches ``path`` fully, in registration order, with their
        URL params; remembered for recently seen paths, so the params dicts are shared with
        the memory (copy before changing them).

        PERF: a site serves the same few paths again and again; a remembered path costs one
        dict lookup instead of a trie walk and a regex (~2 µs). SECURITY: the memory is
        bounded (``MEMO_SIZE`` paths of at most ``MEMO_PATH`` characters, emptied when
        full), so unique paths cannot grow it; it is dropped whenever the table changes.
        """
        matcher = self._matcher or self._compiled()
        memo = self._memo
        if memo[0] is not matcher:
            memo = self._memo = (matcher, {})
        found = memo[1].get(path)
        if found is None:
            ordered = self._ordered
            found = tuple((ordered[index], params) for index, params in matcher.iter_matches(path))
            if len(path) <= MEMO_PATH:
                if len(memo[1]) >= MEMO_SIZE:
                    memo[1].clear()
                memo[1][path] = found
        return found

    def first_match(self, path: str) -> tuple[RouteEntry, dict[str, str]] | None:
        """The first entry matching ``path`` (the route OPTIONS describes), with its own copy
        of the URL params."""
        found = self.matches(path)
        if not found:
            return None
        entry, params = found[0]
        return entry, dict(params)
