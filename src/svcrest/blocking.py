"""Sync callbacks that may block, run off the event loop in a bounded thread pool.

A route handler registered with ``"blocking": True`` has its sync ``callback`` and
``permission_callback`` wrapped by :func:`offload` at registration. Under ASGI the wrapper
runs the function in this module's pool (at most :data:`MAX_THREADS` threads, the caller's
context variables copied), so a callback that waits on a lock or a slow query delays only
its own request while the event loop keeps answering the others. The WSGI adapter runs
every request inline (``run_in_context(..., inline=True)``, a flag of the thread's run, not
a context variable): there is no loop to keep free, and the function is called in place, on
the server's own request thread. Internal dispatch driven from sync code
(``rest_do_request`` outside a loop) runs the pipeline on a private loop, so the function
goes to the pool as under ASGI: it works, at the cost of the hop.

Inside :func:`inline` (an atomic batch's transaction, which belongs to its thread) the
functions are called in place too.

PERF: the hop to the pool costs ~40 µs a request (in-process ASGI GET on uvloop, best of
5 runs of 2,000 calls: 13.7 µs plain, 54.9 µs with ``"blocking": True``), which is why it is a
route's choice and not the default for every sync callback.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from svcrest.syncrun import runs_inline

__all__ = ["MAX_THREADS", "inline", "inline_context", "is_offloaded", "offload"]

#: Threads of the pool that blocking callbacks run in (per process).
MAX_THREADS: Final = 32

_INLINE: contextvars.ContextVar[bool] = contextvars.ContextVar("svcrest_inline", default=False)
#: ``_INLINE.set``, bound once (PERF: handed to ``Context.run``, it was bound at every call).
_inline_set = _INLINE.set
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(MAX_THREADS, thread_name_prefix="svcrest-blocking")
    return _pool


class inline:  # used as a function: ``with inline():``
    """Within the block (and the tasks it starts), offloaded functions run in place: for
    work bound to this thread, such as a store transaction it holds. PERF: a class, not a
    generator context manager (the WSGI adapter enters it for every request)."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _INLINE.set(True)

    def __exit__(self, *exc: object) -> None:
        _INLINE.reset(self._token)


def inline_context() -> contextvars.Context:
    """A copy of the current context in which offloaded functions run in place, as within
    :func:`inline`: for a coroutine run in it on a thread of its own (the WSGI adapter's
    requests use ``run_in_context(..., inline=True)`` instead, which adds no variable to the
    request's context). PERF: one copy and one ``set``, no ``with`` block around the run; a
    thread with no context variables of its own gets a copy of one made once."""
    context = contextvars.copy_context()
    if not context:
        return _EMPTY_INLINE.copy()
    context.run(_inline_set, True)
    return context


#: An otherwise empty context in which offloaded functions run in place (copied, never
#: entered, so it stays as it is).
_EMPTY_INLINE = contextvars.Context()
_EMPTY_INLINE.run(_inline_set, True)


def is_offloaded(function: Callable[..., Any]) -> bool:
    """Whether ``function`` is a wrapper made by :func:`offload`."""
    return getattr(function, "__svcrest_offloaded__", False) is True


def offload(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` made to run in the blocking pool when called under an event loop; a
    coroutine function (or one already offloaded) is returned as it is."""
    if inspect.iscoroutinefunction(function) or is_offloaded(function):
        return function

    @functools.wraps(function)
    async def run_blocking(*args: Any) -> Any:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # driven from sync code: already on a request thread of its own
            loop = None
        if loop is None or _INLINE.get() or runs_inline():
            return function(*args)
        context = contextvars.copy_context()
        return await loop.run_in_executor(_executor(), context.run, function, *args)

    run_blocking.__svcrest_offloaded__ = True  # type: ignore[attr-defined]
    return run_blocking
