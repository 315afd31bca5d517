"""The route option ``db_timeout`` (``svcrest.rest.deadlines``): the seconds a callback's store
statements may run, held while it runs."""

from __future__ import annotations

import asyncio

import pytest

from svcrest.rest.deadlines import DB_TIMEOUT, with_db_timeout


def test_a_plain_callback_sees_its_seconds_while_it_runs() -> None:
    def callback(request: object) -> float | None:
        """The callback's own docstring."""
        return DB_TIMEOUT.get()

    wrapped = with_db_timeout(callback, 2.5)
    assert wrapped("request") == 2.5
    assert DB_TIMEOUT.get() is None
    assert wrapped.__doc__ == "The callback's own docstring."
    assert wrapped.__wrapped__ is callback  # type: ignore[attr-defined]


def test_an_async_callback_stays_async() -> None:
    async def callback(request: object) -> float | None:
        await asyncio.sleep(0)
        return DB_TIMEOUT.get()

    wrapped = with_db_timeout(callback, 0.5)
    assert asyncio.iscoroutinefunction(wrapped)
    assert asyncio.run(wrapped("request")) == 0.5
    assert DB_TIMEOUT.get() is None


def test_the_seconds_are_reset_when_the_callback_raises() -> None:
    def failing(request: object) -> None:
        assert DB_TIMEOUT.get() == 1.0
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        with_db_timeout(failing, 1.0)("request")
    assert DB_TIMEOUT.get() is None


def test_an_inner_limit_outranks_an_outer_one_and_gives_it_back() -> None:
    inner = with_db_timeout(lambda request: DB_TIMEOUT.get(), 1.0)
    outer = with_db_timeout(lambda request: (inner(request), DB_TIMEOUT.get()), 9.0)
    assert outer("request") == (1.0, 9.0)
