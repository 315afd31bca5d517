"""The error the client proxy raises for an error response."""

from __future__ import annotations

from typing import Any

__all__ = ["ProxyError", "error_from_body"]


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


def error_from_body(body: Any, status: int, fallback: str) -> ProxyError:
    """The `ProxyError` of an error answer's decoded ``body``: a JSON object with a string
    ``code`` gives that code, its ``message`` (``fallback`` when not a string) and its
    ``data``; any other body gives ``"http_error"`` and ``fallback``."""
    if isinstance(body, dict) and isinstance(body.get("code"), str):
        message = body.get("message")
        text = message if isinstance(message, str) else fallback
        return ProxyError(body["code"], text, status, body.get("data"))
    return ProxyError("http_error", fallback, status)
