"""Calling user code that may be plain or async and take fewer arguments
(``svcrest.rest.invoke``)."""

from __future__ import annotations

import asyncio
from typing import Any

from svcrest.rest.invoke import call_maybe_async, fitted


def one(value: Any) -> Any:
    return ("one", value)


def three(value: Any, request: Any, key: str) -> Any:
    return ("three", value, request, key)


def everything(*args: Any) -> Any:
    return ("all", *args)


async def later(value: Any, request: Any) -> Any:
    await asyncio.sleep(0)
    return ("later", value, request)


def test_a_callback_gets_the_leading_arguments_it_takes() -> None:
    assert asyncio.run(call_maybe_async(one, "v", "r", "k")) == ("one", "v")
    assert asyncio.run(call_maybe_async(three, "v", "r", "k")) == ("three", "v", "r", "k")
    assert asyncio.run(call_maybe_async(everything, "v", "r", "k")) == ("all", "v", "r", "k")


def test_an_async_callback_is_awaited() -> None:
    assert asyncio.run(call_maybe_async(later, "v", "r", "k")) == ("later", "v", "r")


def test_fitted_returns_a_function_taking_them_all_as_it_is() -> None:
    assert fitted(three, 3) is three
    assert fitted(everything, 2) is everything
    assert fitted(one, 3)("v", "r", "k") == ("one", "v")
    assert fitted(one, 3) is fitted(one, 3)  # remembered


def test_an_unhashable_callable_is_called_with_everything() -> None:
    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

        def __call__(self, *args: Any) -> Any:
            return args

    callback = Unhashable()
    assert fitted(callback, 2) is callback
    assert asyncio.run(call_maybe_async(callback, 1, 2)) == (1, 2)
