"""Instances made without their class call, for the few objects the request path makes on
every request.

WordPress builds its request and response objects with ``new``; here the hottest of them (the
HTTP request, the request context, the REST response, the HTTP answer, an MCP message) are
made by :data:`without_init` and their fields set one by one, in the one function next to
each class (or, for a class two layers make, in each of its makers, every one tested field by
field against the class call).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, TypeVar

__all__ = ["without_init"]

T = TypeVar("T")

#: ``without_init(cls)``: an instance of ``cls`` with no field set, made without the class
#: call (no ``__init__`` runs: its maker sets every field, in field order, and a test reads
#: every field back against the class call's instance, so a new field fails that test until
#: the maker sets it too). ``object.__new__`` itself, not a wrapper: no Python frame.
#:
#: PERF: an instance of a ``@dataclass(slots=True)`` class of 4 / 8 / 14 fields costs 1,895 /
#: 2,502 / 3,288 CPU instructions made by its class call with the values by position (9,360
#: for 14 by keyword), and 1,236 / 1,527 / 1,985 made by ``without_init`` with its fields set
#: one by one (CPython 3.11, callgrind, ``bench/without_init.py``): the generated
#: ``__init__``'s frame and the class call's argument handling saved. Worth it only where an
#: object is made on every request; anywhere else, call the class.
without_init: Final[Callable[[type[T]], T]] = object.__new__
