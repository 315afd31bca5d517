"""Fixtures shared by the serving tests."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from types import FrameType

import pytest


@pytest.fixture
def handlers() -> Iterator[list[tuple[int, str]]]:
    """A server's handlers of SIGTERM and SIGINT (recording each call), restored after."""
    called: list[tuple[int, str]] = []
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}

    def server_handler(signum: int, frame: FrameType | None) -> None:
        called.append((signum, "server"))

    for signum in saved:
        signal.signal(signum, server_handler)
    try:
        yield called
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
