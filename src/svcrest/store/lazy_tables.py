"""A store reached through a getter, whose component tables are made on first use.

The rule: the tables are made once per object, under a lock; inside an open store block of
the calling thread they are made in that block and not remembered, since a rollback of the
block would undo them (the next use makes them again).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from svcrest.store.base import Store

__all__ = ["LazyTables"]


class LazyTables:
    """``store`` (or a function giving it) with ``ensure(store)`` run before its first use.

    :attr:`store` gives the store, with the tables made.
    """

    __slots__ = ("_ensure", "_get_store", "_lock", "_ready", "store")

    def __init__(
        self, store: Store | Callable[[], Store], ensure: Callable[[Store], object]
    ) -> None:
        self._get_store: Callable[[], Store] = (
            (lambda: store) if isinstance(store, Store) else store
        )
        self._ensure = ensure
        self._ready = False
        self._lock = threading.Lock()
        #: The store, with the tables made: once they are, the getter itself (PERF: a
        #: collection's item GET asks for its store several times: 321,369 instructions a
        #: request so, 322,018 with a method in between, 321,508 with the flag checked by
        #: each component as before).
        self.store: Callable[[], Store] = self._first_use

    def _first_use(self) -> Store:
        store = self._get_store()
        if store.in_block():  # a rollback of the outer block would undo the tables
            self._ensure(store)
            return store
        with self._lock:
            if not self._ready:
                self._ensure(store)
                self._made()
        return store

    def follow(self, get: Callable[[], Store]) -> None:
        """Take the store from ``get`` from now on (asked on every use, as the getter given
        at first): the tables made or not as before. PERF: a getter whose answer is fixed
        for a while may be a C callable (``itertools.repeat(store).__next__``: no Python
        frame a use)."""
        self._get_store = get
        if self._ready:
            self.store = get

    def make(self) -> None:
        """Make the tables now, even when made before (``ensure`` is idempotent); remembered
        as made unless inside an open block, by the rule of :attr:`store`."""
        store = self._get_store()
        self._ensure(store)
        if not store.in_block():
            self._made()

    def _made(self) -> None:
        self._ready = True
        self.store = self._get_store
