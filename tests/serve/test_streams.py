"""Ending the streams when the server stops (svcrest.serve.streams): the App's ASGI
lifespan reopens its streams at the startup and has SIGTERM and SIGINT close them before the
handler the server set runs, and closes them at the shutdown; granian's WSGI worker (no
lifespan, its handlers set after the site is built) closes them through the signals' wake-up
descriptor. Real servers: tests/e2e/test_change_streams_servers.py."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import textwrap
import threading
from typing import Any

import pytest

from svcrest import App
from svcrest.http.streams import StreamSlots
from svcrest.serve.streams import close_on_signal_wakeup, close_on_signals

_Lifespan = tuple["asyncio.Queue[dict[str, Any]]", "asyncio.Queue[Any]", "asyncio.Future[None]"]


async def _lifespan(app: App) -> _Lifespan:
    """The queues of the App's lifespan (what the server sends, what the App answers)."""
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    outbox: asyncio.Queue[Any] = asyncio.Queue()
    scope = {"type": "lifespan", "asgi": {"version": "3.0"}}
    return inbox, outbox, asyncio.ensure_future(app(scope, inbox.get, outbox.put))


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_closes_the_streams_then_the_servers_handler_runs(
    handlers: list[tuple[int, str]], signum: int
) -> None:
    app = App()
    app.streams.close()  # stopped before: the startup serves streams again

    async def check() -> None:
        inbox, outbox, running = await _lifespan(app)
        await inbox.put({"type": "lifespan.startup"})
        assert await asyncio.wait_for(outbox.get(), 2) == {"type": "lifespan.startup.complete"}
        assert app.streams.closing is False
        stopped = app.streams.stopped()
        signal.raise_signal(signum)
        await asyncio.wait_for(stopped, 1)
        assert app.streams.closing is True
        assert handlers == [(signum, "server")]
        app.streams.reopen()
        await inbox.put({"type": "lifespan.shutdown"})
        assert await asyncio.wait_for(outbox.get(), 2) == {"type": "lifespan.shutdown.complete"}
        assert app.streams.closing is True  # the shutdown closes them too
        await asyncio.wait_for(running, 1)

    asyncio.run(check())


def test_a_second_startup_sets_one_handler(handlers: list[tuple[int, str]]) -> None:
    slots = StreamSlots()

    async def start() -> bool:
        return close_on_signals(slots)

    assert asyncio.run(start()) is True
    first = signal.getsignal(signal.SIGTERM)

    async def signalled() -> None:
        assert close_on_signals(slots) is True  # the server started again on this loop
        assert signal.getsignal(signal.SIGTERM) is first
        stopped = slots.stopped()
        signal.raise_signal(signal.SIGTERM)
        await asyncio.wait_for(stopped, 1)

    asyncio.run(signalled())  # the loop of the second startup is the one told
    assert handlers == [(signal.SIGTERM, "server")]


def test_off_the_main_thread_no_handler_is_set(handlers: list[tuple[int, str]]) -> None:
    before = signal.getsignal(signal.SIGTERM)
    results: list[bool] = []

    async def start() -> None:
        results.append(close_on_signals(StreamSlots()))

    thread = threading.Thread(target=lambda: asyncio.run(start()))
    thread.start()
    thread.join(5)
    assert results == [False]
    assert signal.getsignal(signal.SIGTERM) is before


#: Run in a process of its own (the wake-up descriptor and its thread are the process's):
#: a descriptor set before, the slots watched, then the server's own handlers set (as
#: granian's WSGI worker sets them after the factory ran), then SIGUSR1 and SIGTERM.
_WAKEUP_SCRIPT = textwrap.dedent(
    """
    import os, signal, time
    from svcrest.http.streams import StreamSlots
    from svcrest.serve.streams import close_on_signal_wakeup

    read, write = os.pipe()
    os.set_blocking(write, False)
    signal.set_wakeup_fd(write)
    slots = StreamSlots()
    print(close_on_signal_wakeup(slots))
    handled = []
    for signum in (signal.SIGTERM, signal.SIGUSR1):
        signal.signal(signum, lambda number, frame: handled.append(number))
    os.kill(os.getpid(), signal.SIGUSR1)
    time.sleep(0.3)
    print(slots.closing, handled)
    os.kill(os.getpid(), signal.SIGTERM)
    deadline = time.monotonic() + 5
    while not slots.closing and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)
    print(slots.closing, handled, list(os.read(read, 16)))
    """
)


def test_a_signal_read_from_the_wakeup_descriptor_closes_the_streams() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WAKEUP_SCRIPT],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    usr1, term = int(signal.SIGUSR1), int(signal.SIGTERM)
    assert done.stdout.splitlines() == [
        "True",
        f"False [{usr1}]",  # another signal closes nothing
        # the server's handler ran too; the descriptor set before got both numbers
        f"True [{usr1}, {term}] [{usr1}, {term}]",
    ]


def test_off_the_main_thread_no_wakeup_descriptor_is_set() -> None:
    before = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(before)
    results: list[bool] = []
    thread = threading.Thread(target=lambda: results.append(close_on_signal_wakeup(StreamSlots())))
    thread.start()
    thread.join(5)
    assert results == [False]
    after = signal.set_wakeup_fd(before)
    assert after == before
