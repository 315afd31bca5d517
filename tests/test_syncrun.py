"""Running a coroutine from sync code: driven in place until it waits for something real,
then on the thread's private loop; in the context it is given, whatever happens."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
import weakref
from typing import Any

import pytest

from svcrest.syncrun import run_in_context, run_sync

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("test_syncrun_var", default="")


async def _steps(wait: str, steps: list[str]) -> str:
    steps.append(VAR.get())
    VAR.set("set inside")
    if wait == "bare yield":
        await asyncio.sleep(0)
    elif wait == "timer":
        await asyncio.sleep(0.005)
    elif wait == "future":
        future = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(future.set_result, None)
        await future
    steps.append(VAR.get())
    return "done"


WAITS = ["none", "bare yield", "timer", "future"]


@pytest.mark.parametrize("wait", WAITS)
def test_the_result_and_the_context_it_ran_in(wait: str) -> None:
    steps: list[str] = []
    VAR.set("caller")
    context = contextvars.copy_context()
    assert run_in_context(_steps(wait, steps), context) == "done"
    assert steps == ["caller", "set inside"]
    assert context[VAR] == "set inside"  # every step ran in the context given
    assert VAR.get() == "caller"  # never in the caller's own
    assert asyncio.events._get_running_loop() is None  # the loop is uninstalled after


@pytest.mark.parametrize("wait", WAITS)
def test_run_sync_uses_a_copy_of_the_callers_context(wait: str) -> None:
    steps: list[str] = []
    VAR.set("caller")
    assert run_sync(lambda: _steps(wait, steps)) == "done"
    assert (steps, VAR.get()) == (["caller", "set inside"], "caller")


class Boom(Exception):
    pass


@pytest.mark.parametrize("wait", WAITS)
def test_an_exception_reaches_the_caller(wait: str) -> None:
    async def fail() -> None:
        await _steps(wait, [])
        raise Boom

    coroutine = fail()
    with pytest.raises(Boom):
        run_in_context(coroutine, contextvars.copy_context())
    assert inspect.getcoroutinestate(coroutine) == inspect.CORO_CLOSED  # not left suspended
    assert asyncio.events._get_running_loop() is None
    assert run_in_context(_steps(wait, []), contextvars.copy_context()) == "done"


def test_a_running_loop_in_the_thread_hands_the_run_to_a_helper_thread() -> None:
    async def where() -> str:
        await asyncio.sleep(0)
        return f"{threading.current_thread().name} {VAR.get()}"

    async def main() -> Any:
        VAR.set("caller")
        return run_in_context(where(), contextvars.copy_context())

    name, value = asyncio.run(main()).split()
    assert name != threading.current_thread().name and value == "caller"


def test_each_thread_has_its_own_loop_and_keeps_it() -> None:
    async def loop_id() -> int:
        await asyncio.sleep(0)
        return id(asyncio.get_running_loop())

    def twice() -> list[int]:
        return [run_sync(loop_id) for _ in range(2)]

    here = twice()
    there: list[int] = []
    thread = threading.Thread(target=lambda: there.extend(twice()))
    thread.start()
    thread.join(10)
    assert here[0] == here[1] and there[0] == there[1] and here[0] != there[0]


class Stop(BaseException):
    pass


def test_runs_in_a_row_whatever_the_one_before_did() -> None:
    async def stop() -> None:
        raise Stop

    outcomes: list[str] = []
    for wait in [*WAITS, *reversed(WAITS)]:
        outcomes.append(run_in_context(_steps(wait, []), contextvars.copy_context()))
        with pytest.raises(Stop):
            run_in_context(stop(), contextvars.copy_context())
    assert outcomes == ["done"] * 2 * len(WAITS)


@pytest.mark.parametrize("wait", WAITS)
def test_the_result_is_not_kept_after_it_was_returned(wait: str) -> None:
    class Result:
        pass

    async def make() -> Result:
        await _steps(wait, [])
        return Result()

    result = weakref.ref(run_in_context(make(), contextvars.copy_context()))
    assert result() is None


def test_a_closed_private_loop_is_replaced_and_used_by_what_waits() -> None:
    async def running_loop() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    async def waits_then_tells() -> asyncio.AbstractEventLoop:
        await asyncio.sleep(0.001)
        return asyncio.get_running_loop()

    first = run_sync(running_loop)
    assert run_sync(running_loop) is first
    first.close()
    second = run_sync(running_loop)
    assert second is not first
    assert not second.is_closed()
    assert run_sync(waits_then_tells) is second
    assert run_sync(running_loop) is second
