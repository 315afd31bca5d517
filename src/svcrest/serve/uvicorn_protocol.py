"""uvicorn's httptools protocol with the two bounds it lacks: request head size and time.

uvicorn bounds the head only on its h11 protocol (``h11_max_incomplete_event_size``) and
times out only idle keep-alive connections: a connection that never sends a byte, or sends
its head a byte a second, stays open for ever, and httptools accepts a head of any size.
:class:`BoundedHttpToolsProtocol` (``svcrest serve --server uvicorn`` passes it as
``http=``) closes a connection that has not sent a complete head within the head time-out
(``SVCREST_HEADER_TIMEOUT`` seconds, from the connection's start or the end of its previous
answer), and answers 431 and closes one whose head passes
``config.h11_max_incomplete_event_size`` bytes.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Final

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from svcrest.serve.launcher import ENV_HEADER_TIMEOUT

__all__ = ["BoundedHttpToolsProtocol"]

_DEFAULT_HEADER_TIMEOUT: Final = 10.0
_DEFAULT_HEAD_LIMIT: Final = 128 * 1024
_TOO_LARGE: Final = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"content-length: 31\r\n"
    b"connection: close\r\n\r\n"
    b"Request header fields too large"
)


def _header_timeout() -> float:
    try:
        return float(os.environ.get(ENV_HEADER_TIMEOUT, _DEFAULT_HEADER_TIMEOUT))
    except ValueError:
        return _DEFAULT_HEADER_TIMEOUT


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol with a head time-out and a head size limit."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timeout = _header_timeout()
        self._head_limit = self.config.h11_max_incomplete_event_size or _DEFAULT_HEAD_LIMIT
        self._head_timer: asyncio.TimerHandle | None = None
        self._head_bytes = 0
        self._awaiting_head = True

    def _arm_head_timer(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self._head_timeout, self._head_timed_out)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self._awaiting_head and not self.transport.is_closing():
            self.transport.close()

    def connection_made(  # type: ignore[override]  # as uvicorn's own (a Transport)
        self, transport: asyncio.Transport
    ) -> None:
        super().connection_made(transport)
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._awaiting_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if (
            self._awaiting_head
            and self._head_bytes > self._head_limit
            and not self.transport.is_closing()
        ):
            self.transport.write(_TOO_LARGE)
            self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._awaiting_head = True
        self._arm_head_timer()

    def on_headers_complete(self) -> None:
        self._awaiting_head = False
        self._head_bytes = 0
        self._disarm_head_timer()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            # The next head is awaited; uvicorn's keep-alive timer bounds the idle wait.
            self._awaiting_head = True
            self._head_bytes = 0
