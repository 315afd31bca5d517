"""Running the async pipeline from sync code: internal dispatch and the WSGI adapter.

Each thread gets a private event loop, reused between calls; a coroutine is first driven
without the loop and handed to it only when it waits for something real.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import types
from collections.abc import Callable, Coroutine, Generator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["on_shared_loop", "run_in_context", "run_sync", "runs_inline"]


class _LoopHolder:
    """Owns one thread's private event loop and closes it when the thread ends."""

    __slots__ = ("loop",)

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def __del__(self) -> None:
        if not self.loop.is_closed():
            self.loop.close()


_loops = threading.local()
_get_running_loop = asyncio.events._get_running_loop
_set_running_loop = asyncio.events._set_running_loop


def on_shared_loop() -> bool:
    """Whether the calling thread runs an event loop other than its private one of
    :func:`run_sync`: a server's loop (uvicorn's, an ASGI test client's), where a call that
    blocks holds every request of the process, not only the caller's."""
    loop = _get_running_loop()
    return loop is not None and loop is not getattr(_loops, "loop", None)


def runs_inline() -> bool:
    """Whether this thread is running a coroutine whose offloaded functions are called in
    place: inside :func:`run_in_context` with ``inline=True`` (a WSGI request), or in a
    helper thread's run started inside one."""
    mode = getattr(_loops, "mode", None)
    return mode is not None and mode[0]


def _thread_mode() -> list[bool]:
    """This thread's ``[inline]`` box (see :func:`runs_inline`), made at its first use."""
    try:
        mode: list[bool] = _loops.mode
    except AttributeError:
        mode = _loops.mode = [False]
    return mode


def _new_thread_loop() -> asyncio.AbstractEventLoop:
    """A new private event loop for this thread, closed when the thread ends.

    PERF: reusing one loop per thread costs ~10 µs a call; ``asyncio.run`` costs ~40 µs.
    """
    holder = _LoopHolder()
    _loops.holder = holder
    _loops.loop = holder.loop
    return holder.loop


def run_sync(coroutine_factory: Callable[[], Any]) -> Any:
    """Run ``coroutine_factory()`` to completion from sync code, in a copy of the caller's
    context (see :func:`run_in_context`)."""
    return run_in_context(coroutine_factory(), contextvars.copy_context())


class _Done:
    """What a thread's driver yields once the coroutine sent to it has returned."""


_DONE = _Done()


#: A thread's driver (see ``_driver``).
_Driver = Generator[Any, Any, None]


@types.coroutine
def _driver(result: list[Any]) -> _Driver:
    """Runs each coroutine sent to it to its end through ``yield from``, keeps its value in
    ``result[0]`` and yields ``_DONE``; what the coroutine yields (it waits for something) is
    yielded as it is.

    PERF: a coroutine driven by ``send`` ends with a StopIteration, raised and caught in
    Python (~0.2 µs); through ``yield from`` its value is handed over in C."""
    while True:
        coroutine = yield _DONE
        result[0] = yield from coroutine


def _new_driver(
    loop: asyncio.AbstractEventLoop,
) -> tuple[_Driver, Callable[[Any], Any], list[Any]]:
    """A new driver for this thread (started: waiting for a coroutine), its bound ``send``
    and its result box, kept with the thread's ``loop`` and its inline box (one thread-local
    read a call finds all five). PERF: ``send`` bound once, not at every call (a WSGI GET
    83,758 → 83,427 instructions, bench/instructions.py)."""
    result: list[Any] = [None]
    driver = _driver(result)
    send = driver.send
    send(None)
    _loops.state = loop, driver, send, result, _thread_mode()
    return driver, send, result


def run_in_context(
    coroutine: Coroutine[Any, Any, Any], context: contextvars.Context, inline: bool = False
) -> Any:
    """Run ``coroutine`` to completion from sync code, in ``context``: a context made for it
    alone (e.g. a ``copy_context()``), so what it sets in context variables stays there, as
    with a Task. Also when this thread is already running an event loop (then in a helper
    thread). ``inline``: offloaded functions are called in place while it runs (and in a
    helper thread's run started inside it), not in the blocking pool: for a request that has
    a server thread of its own (the WSGI adapter's).

    The coroutine is first driven without the event loop, and handed to the loop only when
    it waits for something real. PERF: a dispatch whose callbacks are all plain finishes in
    the first step, which saves the ~10 µs of a ``run_until_complete`` (internal dispatch:
    ~41,000 → ~60,000 calls/s). The thread's loop is installed as the running loop during
    that step, so asyncio calls made by the code behave as usual; once the coroutine waits
    on a future, the loop takes over where it stopped.
    """
    # PERF: asks without raising (``get_running_loop`` raises a RuntimeError outside a loop).
    if _get_running_loop() is not None:
        with ThreadPoolExecutor(max_workers=1) as pool:
            helper = pool.submit(_helper_run, coroutine, context, inline or runs_inline())
            return helper.result()
    # PERF: the thread's loop, driver (and its ``send``), result box and inline box in one
    # thread-local read (two reads before: a WSGI GET 86,414 → 85,982 instructions,
    # bench/instructions.py).
    try:
        loop: asyncio.AbstractEventLoop
        loop, driver, send, result, mode = _loops.state
    except AttributeError:  # this thread's first call
        loop = _new_thread_loop()
        driver, send, result = _new_driver(loop)
        mode = _thread_mode()
    if loop.is_closed():
        loop = _new_thread_loop()
        _loops.state = loop, driver, send, result, mode
    if inline:
        # PERF: a box of the thread's run, not a context variable: the request's context
        # holds only what the request sets (a WSGI GET 75,885 -> 74,851, bench/budget.py).
        outer = mode[0]
        mode[0] = True
    try:
        _set_running_loop(loop)
        try:
            waited_on = context.run(send, coroutine)
        except BaseException:
            _new_driver(loop)  # this one ended with the coroutine's exception
            raise
        finally:
            _set_running_loop(None)
        if waited_on is _DONE:
            value = result[0]
            result[0] = None
            return value
        # The coroutine waits for something: the loop resumes it, through this driver.
        _new_driver(loop)
        task = loop.create_task(_resume(driver, result, waited_on), context=context)
        return loop.run_until_complete(task)
    finally:
        if inline:
            mode[0] = outer


def _helper_run(
    coroutine: Coroutine[Any, Any, Any], context: contextvars.Context, inline: bool
) -> Any:
    """``coroutine`` run to its end by ``asyncio.run`` in ``context`` (in a helper thread,
    see :func:`run_in_context`), offloaded functions in place when ``inline``."""
    mode = _thread_mode()
    mode[0] = inline
    try:
        return context.run(asyncio.run, coroutine)
    finally:
        mode[0] = False


async def _resume(driver: _Driver, result: list[Any], waited_on: Any) -> Any:
    """Continue a coroutine that was started outside the loop through ``driver`` (see
    ``run_in_context``), doing what a Task does with what it yields: a bare yield gives the
    loop one turn; a future is waited for (its outcome reaches the coroutine when it
    resumes). The coroutine's value, once it returns."""
    while True:
        if waited_on is None:
            await asyncio.sleep(0)
        else:
            # The coroutine yielded this future to a Task that never saw it: clear the flag a
            # Task clears before waiting.
            waited_on._asyncio_future_blocking = False
            try:
                await asyncio.wait([waited_on])
            except BaseException:
                driver.close()
                raise
        waited_on = driver.send(None)
        if waited_on is _DONE:
            driver.close()
            return result[0]
