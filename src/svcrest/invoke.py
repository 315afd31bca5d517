"""Calling user code that may be plain or async."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from svcrest.hooks import is_awaitable

__all__ = ["call_maybe_async"]


async def call_maybe_async(function: Callable[..., Any], *args: Any) -> Any:
    """Call ``function`` and await the result when it is awaitable."""
    result = function(*args)
    if is_awaitable(result):
        result = await result
    return result
