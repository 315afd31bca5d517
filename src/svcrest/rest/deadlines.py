"""The route option ``"db_timeout": SECONDS``: the longest a statement of the route's callback
may run on the store before it is cancelled (answered 503 ``svc_store_timeout``).

The option is applied at registration: the callback is wrapped so that, while it runs,
:data:`DB_TIMEOUT` holds the seconds; the PostgreSQL store reads it when a block begins and
sends ``SET LOCAL statement_timeout``. SQLite statements are not cancelled (it has no such
setting; its waits for the write lock have their own time-out).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

__all__ = ["DB_TIMEOUT", "with_db_timeout"]

#: Seconds a store statement may run in the current callback (None: no limit of its own).
DB_TIMEOUT: ContextVar[float | None] = ContextVar("svcrest_db_timeout", default=None)


def with_db_timeout(function: Callable[..., Any], seconds: float) -> Callable[..., Any]:
    """``function`` (plain or ``async``) run with :data:`DB_TIMEOUT` set to ``seconds``."""
    if inspect.iscoroutinefunction(function):

        @functools.wraps(function)
        async def run_async(*args: Any) -> Any:
            token = DB_TIMEOUT.set(seconds)
            try:
                return await function(*args)
            finally:
                DB_TIMEOUT.reset(token)

        return run_async

    @functools.wraps(function)
    def run(*args: Any) -> Any:
        token = DB_TIMEOUT.set(seconds)
        try:
            return function(*args)
        finally:
            DB_TIMEOUT.reset(token)

    return run
