"""Context variables that never share a slot of a context's map with one another.

CPython keeps a context's variables in a hash array mapped trie: its first level has 32
slots, one chosen by five bits of each variable's hash, and a ``ContextVar``'s hash is made
from its name and its address. Two variables of one context whose hashes agree on those five
bits share a slot, and then every ``set`` and ``reset`` of either walks, copies and frees a
second level of the trie. Where a variable's address falls depends on everything allocated
before it, so any edit of the package could move two of a request's variables into one slot
(or out of it). Every context variable of the package is made by :func:`context_variable`,
which gives each a first-level slot of its own, whatever the addresses.

PERF: the request context's variable forced into the slot of the inline flag's variable
(both then in a WSGI request's context) cost a WSGI GET +1,737 instructions in the map's
``set``, ``reset`` and the frees of its nodes (callgrind, 300 requests); the same collision
happening by accident had moved the instruction budget by +2.5 %.
"""

from __future__ import annotations

import sys
from contextvars import ContextVar
from typing import Any, Final, TypeVar

__all__ = ["SLOTS", "SlotRegistry", "context_variable", "trie_slot"]

_T = TypeVar("_T")

#: The first level's slots (five bits of a hash).
SLOTS: Final = 32
#: Names tried for one variable before it is kept wherever it falls (with 32 slots and a
#: handful of variables a free slot is found in a few tries).
_TRIES: Final = 256
_WIDE_HASH: Final = sys.hash_info.width > 32


def trie_slot(variable: ContextVar[Any]) -> int:
    """The first-level slot (0 to 31) of ``variable`` in a context's map: the low five bits of
    its hash, folded to 32 bits first on a 64-bit build (as CPython's map folds it)."""
    hashed = hash(variable)
    if _WIDE_HASH:
        hashed &= 0xFFFF_FFFF_FFFF_FFFF
        hashed ^= hashed >> 32
    return hashed & (SLOTS - 1)


class SlotRegistry:
    """The first-level slots taken by the variables made through it (at most 32: bounded)."""

    __slots__ = ("taken",)

    def __init__(self) -> None:
        self.taken: set[int] = set()

    def variable(self, name: str, default: _T) -> ContextVar[_T]:
        """A new ``ContextVar`` named ``name`` (``name~N`` when its first names fell into
        taken slots) with ``default``, in a slot no earlier variable of this registry has
        (once all 32 are taken, wherever it falls)."""
        made: ContextVar[_T] = ContextVar(name, default=default)
        tries = 1
        while trie_slot(made) in self.taken and len(self.taken) < SLOTS and tries < _TRIES:
            made = ContextVar(f"{name}~{tries}", default=default)
            tries += 1
        self.taken.add(trie_slot(made))
        return made


#: The package's registry: every context variable of svcrest is made through it.
_PACKAGE: Final = SlotRegistry()


def context_variable(name: str, default: _T) -> ContextVar[_T]:
    """A new context variable of svcrest named ``name`` with ``default``, in a first-level
    slot of a context's map that no other svcrest variable has (see the module's text)."""
    return _PACKAGE.variable(name, default)
