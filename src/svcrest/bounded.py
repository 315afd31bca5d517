"""Bounded memories: :class:`Memo` for the request path's memos, :class:`BoundedDict` for the
auth layer's caches.

Every memory a request can add to keeps what a client can make many of (header names and
values, paths, origins, bodies), so each must stay within fixed bounds. A :class:`Memo` holds
cheap answers (encoded header lines, a path's route matches, a body's ETag): it keeps short
keys only and is emptied when full, and reading it is a plain dict look-up. A
:class:`BoundedDict` holds costly ones (verified nonces, valid cookies, cached sessions): it
may bound bytes too and drops its oldest entries first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

__all__ = ["BoundedDict", "Memo"]

K = TypeVar("K")
V = TypeVar("V")


class Memo(Generic[K, V]):
    """A memory of computed answers: at most ``max_entries`` entries, emptied when full; with
    ``longest``, only keys whose ``length`` (``len`` by default) is at most that are kept, so
    a key a client chooses (a header value, a path) cannot make it hold much.

    Read with :attr:`get` (the dict's own ``get``: no Python frame); write with
    :meth:`keep`. PERF: ``memo.get(key)`` written as a method call is a generic look-up in
    CPython 3.11 (a callable held by an instance is never specialised as a method: ~150
    instructions a call); a hot path reads ``get`` into a name once (at module level, or a
    local) and calls that. Racing writers in several threads are safe (each dict operation is
    atomic): at worst an answer is computed twice or the memory emptied early.
    """

    __slots__ = ("entries", "get", "length", "longest", "max_entries")

    def __init__(
        self, max_entries: int, longest: int | None = None, length: Callable[[Any], int] = len
    ) -> None:
        if max_entries < 1:
            raise ValueError("a memo needs room for at least one entry")
        #: The entries (read them; write through :meth:`keep`).
        self.entries: dict[K, V] = {}
        #: ``get(key)``: the value kept for ``key``, or None. PERF: the entries' own bound
        #: ``get``; a dict subclass's method cost a plain GET ~1,800 instructions more over
        #: its seven memo reads (bench/instructions.py).
        self.get: Callable[[K], V | None] = self.entries.get
        self.max_entries = max_entries
        self.longest = longest
        self.length = length

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, key: object) -> bool:
        return key in self.entries

    def __iter__(self) -> Iterator[K]:
        return iter(self.entries)

    def keep(self, key: K, value: V) -> V:
        """``value``, kept under ``key`` when the key is short enough (see the class)."""
        longest = self.longest
        if longest is None or self.length(key) <= longest:
            entries = self.entries
            if len(entries) >= self.max_entries:
                entries.clear()
            entries[key] = value
        return value


class BoundedDict(Generic[K, V]):
    """At most ``max_entries`` entries and, with a ``size`` function (the approximate bytes of
    one key and value), at most ``max_bytes`` bytes; a new entry that does not fit makes the
    oldest ones go first. Values must not be None.

    Order is insertion order: :meth:`put` of a key already held replaces its entry and makes
    it the newest, and :meth:`refresh` makes an entry the newest (for least recently used
    eviction, call it on every hit). An entry larger than ``max_bytes`` on its own is not kept.
    ``dropped`` is called with each entry that leaves one by one (replaced, evicted, removed),
    not by :meth:`clear`.

    Reads may use :attr:`entries`, the plain dict (the same object for the helper's life), for
    speed; writes must go through the methods. Writers must hold one lock, except on a dict
    with neither ``size`` nor ``dropped``: there a writer that loses a race with another (each
    dict operation is atomic under the GIL) empties the dict instead of raising.
    """

    __slots__ = ("_dropped", "_room", "_size", "entries", "max_bytes", "max_entries", "size_bytes")

    def __init__(
        self,
        max_entries: int,
        max_bytes: int | None = None,
        size: Callable[[K, V], int] | None = None,
        dropped: Callable[[K, V], None] | None = None,
    ) -> None:
        if max_entries < 1:
            raise ValueError("a bounded dict needs room for at least one entry")
        if (max_bytes is None) != (size is None):
            raise ValueError("a byte bound needs a size function, and a size function a bound")
        if max_bytes is not None and max_bytes < 1:
            raise ValueError("a byte bound must be positive")
        #: The entries, oldest first: read them directly, write them through the methods.
        self.entries: dict[K, V] = {}
        self.max_entries = max_entries
        #: The byte bound (None: bounded in entries only).
        self.max_bytes = max_bytes
        #: The approximate bytes of the entries (0 without a ``size`` function).
        self.size_bytes = 0
        self._room: float = float("inf") if max_bytes is None else max_bytes
        self._size = size
        self._dropped = dropped

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, key: K) -> V | None:
        """The value of ``key``, or None (hot paths read :attr:`entries` instead)."""
        return self.entries.get(key)

    def put(self, key: K, value: V) -> bool:
        """Keep ``value`` under ``key`` as the newest entry, replacing the key's entry and
        dropping the oldest ones until it fits; False (and nothing changed) when it is larger
        than the byte bound on its own."""
        size = 0 if self._size is None else self._size(key, value)
        if size > self._room:
            return False
        entries = self.entries
        try:
            if key in entries:
                self._drop(key, entries.pop(key))
            while len(entries) >= self.max_entries or self.size_bytes + size > self._room:
                oldest = next(iter(entries))
                self._drop(oldest, entries.pop(oldest))
        except (KeyError, RuntimeError, StopIteration):  # a writer without a lock lost a race
            self.clear()
        entries[key] = value
        self.size_bytes += size
        return True

    def refresh(self, key: K) -> None:
        """Make the entry of ``key``, when there is one, the newest."""
        entries = self.entries
        if key in entries:
            entries[key] = entries.pop(key)

    def remove(self, key: K) -> V | None:
        """Drop the entry of ``key`` and return its value (None when there was none)."""
        value = self.entries.pop(key, None)
        if value is not None:
            self._drop(key, value)
        return value

    def clear(self) -> None:
        """Drop every entry (``dropped`` is not called)."""
        self.entries.clear()
        self.size_bytes = 0

    def _drop(self, key: K, value: V) -> None:
        """Account for an entry already taken out of :attr:`entries`."""
        if self._size is not None:
            self.size_bytes -= self._size(key, value)
        if self._dropped is not None:
            self._dropped(key, value)
