"""The error the client proxy raises for an error response."""

from __future__ import annotations

from typing import Any

__all__ = ["ProxyError"]


class ProxyError(Exception):
    """An error response (HTTP status >= 400) seen by the client proxy.

    ``code`` and ``message`` come from the WordPress-shaped body
    ``{"code": ..., "message": ..., "data": ...}``; a body without a string ``code`` gives the
    code ``"http_error"`` and the response's reason phrase as the message. ``status`` is the
    HTTP status and ``data`` the body's ``data`` member (None when absent).
    """

    def __init__(self, code: str, message: str, status: int, data: Any = None) -> None:
        super().__init__(code, message, status)
        self.code = code
        self.message = message
        self.status = status
        self.data: Any = data

    def __str__(self) -> str:
        return f"{self.status} {self.code}: {self.message}"

    def __repr__(self) -> str:
        return f"ProxyError({self.code!r}, {self.message!r}, {self.status!r})"
