"""Calling user code that may be plain or async."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from svcrest.chains import Pending, run_chain
from svcrest.hooks import fit_arguments

__all__ = ["call_maybe_async", "fit_cached", "fitted"]

#: ``fit_arguments`` remembered (bounded): raises TypeError for an unhashable callable, which
#: the caller then calls with every argument. PERF: reading a signature costs ~5 µs and route
#: callbacks are few and long-lived; the hot path calls it without ``fitted``.
fit_cached = functools.lru_cache(maxsize=4096)(fit_arguments)


def fitted(function: Callable[..., Any], count: int = 1) -> Callable[..., Any]:
    """``function`` taking only the leading arguments it accepts of the ``count`` passed
    (cached; a function that takes them all is returned as it is)."""
    try:
        return fit_cached(function, count)
    except TypeError:  # an unhashable callable: call it with everything
        return function


async def call_maybe_async(function: Callable[..., Any], *args: Any) -> Any:
    """Call ``function`` with the leading arguments it accepts (``validate_callback(value)``
    works as well as ``validate_callback(value, request, key)``; one to four arguments) and
    await the result when it is awaitable."""
    result = run_chain((fitted(function, len(args)),), *args)
    if type(result) is Pending:
        result = await result
    return result
