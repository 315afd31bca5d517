"""RestError: one exception that is also a value, converted to the body shape in one place."""

from __future__ import annotations

from typing import Any

from svcrest.types import JSONLike

__all__ = ["BodyReadError", "RestError"]


class RestError(Exception):
    """A REST error: ``code``, ``message`` and ``data`` (whose ``status`` is the HTTP status).

    Return it from a callback or raise it; both become the response
    ``{"code": ..., "message": ..., "data": {...}}`` with status ``data["status"]`` (500 when
    absent).
    """

    #: Header lines the error's response carries besides the REST block (``Retry-After``
    #: of a busy store); none by default.
    headers: tuple[tuple[str, str], ...] = ()

    def __init__(self, code: str, message: str = "", data: JSONLike = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        #: ``Any`` on purpose: callers read ``data["status"]``, ``data["params"]``…
        self.data: Any = data

    @property
    def status(self) -> int:
        """The HTTP status taken from ``data["status"]``, 500 when there is none."""
        if isinstance(self.data, dict):
            status = self.data.get("status")
            if isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 599:
                return status
        return 500

    def to_dict(self) -> dict[str, Any]:
        """The response body shape."""
        return {"code": self.code, "message": self.message, "data": self.data}

    def __repr__(self) -> str:
        return f"RestError({self.code!r}, {self.message!r}, {self.data!r})"


class BodyReadError(Exception):
    """The request body could not be read within the server's bounds (a client too slow, or
    too many slow bodies at once). Raised by the adapters' body readers; ``error`` is the
    answer: as it is to a REST request, as a short text page to any other."""

    def __init__(self, error: RestError) -> None:
        super().__init__(error.message)
        self.error = error
