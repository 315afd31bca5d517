"""The store's answers (``svcrest.store.errors``): 503s with ``Retry-After``, each both a
``StoreError`` and a ``RestError``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from svcrest.http.errors import RestError
from svcrest.store.base import StoreError
from svcrest.store.errors import (
    RETRY_AFTER_SECONDS,
    StoreBusyError,
    StoreTimeoutError,
    StoreUnavailableError,
)


@pytest.mark.parametrize(
    ("error", "code", "message"),
    [
        (StoreBusyError, "svc_store_busy", "The database is busy; please try again shortly."),
        (
            StoreTimeoutError,
            "svc_store_timeout",
            "The database took too long to answer; please try again shortly.",
        ),
        (
            StoreUnavailableError,
            "svc_store_unavailable",
            "The database is unavailable; please try again shortly.",
        ),
    ],
)
def test_each_is_a_503_with_retry_after(
    error: Callable[[], RestError], code: str, message: str
) -> None:
    raised = error()
    assert isinstance(raised, StoreError)
    assert raised.to_dict() == {"code": code, "message": message, "data": {"status": 503}}
    assert raised.status == 503
    assert raised.headers == (("Retry-After", "1"),)
    assert RETRY_AFTER_SECONDS == 1
