"""Fixtures shared by the serving tests."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import pytest

from svcrest import App, Request, public


def echo_site(fast: Callable[..., Any]) -> tuple[App, list[Any]]:
    """A site with ``POST t/v1/echo`` answering the JSON body it got and ``GET t/v1/fast``
    answering with ``fast``; the list holds the bodies the echo saw."""
    site = App("http://127.0.0.1:8000")
    seen: list[Any] = []

    def echo(request: Request) -> Any:
        seen.append(request.get_json_params())
        return {"echo": request.get_json_params()}

    site.register_rest_route(
        "t/v1", "/echo", {"methods": "POST", "callback": echo, "permission_callback": public}
    )
    site.register_rest_route(
        "t/v1", "/fast", {"methods": "GET", "callback": fast, "permission_callback": public}
    )
    return site, seen


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
