"""The store's errors that are answers, not bugs: each is a :class:`RestError` with status 503
and ``Retry-After``, so one escaping a REST callback (or the cookie check) is answered in the
documented error shape instead of a 500.

- ``svc_store_busy``: the store had no connection (PostgreSQL's pool) or lock (SQLite's write
  lock) free within its wait, or PostgreSQL rolled the transaction back for a deadlock or a
  serialization failure (nothing of it applied; sending it again can succeed);
- ``svc_store_timeout``: a statement ran past its route's ``db_timeout`` and was cancelled;
- ``svc_store_unavailable``: the database cannot be reached, or the connection broke during
  the request. A write answered so may have been applied (its ``COMMIT`` may have reached the
  server before the connection broke): see docs/guides/many-hosts.md.
"""

from __future__ import annotations

from svcrest.http.errors import RestError
from svcrest.store.base import StoreError

__all__ = [
    "RETRY_AFTER_SECONDS",
    "StoreBusyError",
    "StoreTimeoutError",
    "StoreUnavailableError",
]

#: The ``Retry-After`` (seconds) of every 503 the store answers.
RETRY_AFTER_SECONDS = 1


class _StoreAnswer(StoreError, RestError):
    """A store error answered 503 with ``Retry-After``."""

    headers = (("Retry-After", str(RETRY_AFTER_SECONDS)),)
    error_code = ""
    error_text = ""

    def __init__(self) -> None:
        RestError.__init__(self, type(self).error_code, type(self).error_text, {"status": 503})


class StoreBusyError(_StoreAnswer):
    """No connection or lock came free within the store's wait (``svc_store_busy``)."""

    error_code = "svc_store_busy"
    error_text = "The database is busy; please try again shortly."


class StoreTimeoutError(_StoreAnswer):
    """A statement ran past the route's ``db_timeout`` and was cancelled
    (``svc_store_timeout``)."""

    error_code = "svc_store_timeout"
    error_text = "The database took too long to answer; please try again shortly."


class StoreUnavailableError(_StoreAnswer):
    """The database cannot be reached, or the connection broke (``svc_store_unavailable``)."""

    error_code = "svc_store_unavailable"
    error_text = "The database is unavailable; please try again shortly."
