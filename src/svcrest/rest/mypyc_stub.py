"""Stand-in for ``mypy_extensions.mypyc_attr`` where mypy_extensions is not installed.

The compiled build (mypyc, ``pyproject.toml``'s ``mypyc`` build hook) reads the decorator's
arguments at compile time; at run time it does nothing, so a pure-Python install needs no
mypy_extensions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = ["mypyc_attr"]

T = TypeVar("T")


def mypyc_attr(*attrs: str, **kwattrs: object) -> Callable[[T], T]:
    """A class decorator that returns the class as it is."""

    def decorate(target: T) -> T:
        return target

    return decorate
