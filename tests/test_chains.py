"""The one chain runner: plain until a callback answers with an awaitable, then one coroutine;
and the handlers a route prepares when the table changes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from svcrest import App, Request, public
from svcrest.chains import Pending, run_chain, run_chain_async
from svcrest.hooks import Hooks
from svcrest.rest import invoke


def _finish(answer: Any) -> Any:
    """A runner's answer, awaited when it is Pending."""
    if type(answer) is Pending:
        return asyncio.run(_awaited(answer))
    return answer


async def _awaited(pending: Any) -> Any:
    return await pending


def test_a_plain_chain_answers_its_last_value_with_the_hook_arguments() -> None:
    seen: list[tuple[Any, ...]] = []

    def note(*args: Any) -> Any:
        seen.append(args)
        return args[0] + 1

    assert run_chain((), 7, "a") == 7
    assert run_chain((note,), 1) == 2
    assert run_chain((note, note), 1, "a") == 3
    assert run_chain((note,), 1, "a", "b") == 2
    assert run_chain((note, note), 1, "a", None, "c") == 3
    assert seen == [
        (1,),
        (1, "a"),
        (2, "a"),
        (1, "a", "b"),
        (1, "a", None, "c"),
        (2, "a", None, "c"),
    ]


def test_an_awaitable_answer_turns_the_rest_of_the_chain_into_one_pending_coroutine() -> None:
    calls: list[str] = []

    def plain(value: int, request: str) -> int:
        calls.append(f"plain {value} {request}")
        return value * 10

    async def later(value: int, request: str) -> int:
        calls.append(f"later {value} {request}")
        return value + 1

    answer = run_chain((plain, later, plain, later), 1, "r")
    assert type(answer) is Pending
    assert calls == ["plain 1 r"]  # the coroutine ``later`` answered is not awaited yet
    assert _finish(answer) == 111
    assert calls == ["plain 1 r", "later 10 r", "plain 11 r", "later 110 r"]


def test_a_finished_chain_is_never_pending() -> None:
    async def later(value: int) -> int:
        return value

    assert type(run_chain((lambda value: value,), None)) is not Pending
    assert _finish(run_chain((later,), 5)) == 5


def test_exceptions_propagate_plain_and_pending() -> None:
    def fails(value: Any) -> Any:
        raise ValueError("plain")

    async def fails_later(value: Any) -> Any:
        raise KeyError("later")

    async def passes(value: Any) -> Any:
        return value

    with pytest.raises(ValueError, match="plain"):
        run_chain((fails,), None)
    pending = run_chain((passes, fails_later), None)
    with pytest.raises(KeyError, match="later"):
        _finish(pending)


def test_the_async_runner_takes_any_number_of_arguments() -> None:
    async def add(value: int, *more: int) -> int:
        return value + sum(more)

    assert asyncio.run(run_chain_async((add, add), 1, (1, 2, 3, 4))) == 21
    hooks = Hooks()
    hooks.add_filter("f", lambda value, a, b, c, d: value + a + b + c + d)
    assert asyncio.run(hooks.apply_filters_async("f", 0, 1, 2, 3, 4)) == 10


def test_no_request_fits_a_callback(monkeypatch: pytest.MonkeyPatch) -> None:
    fitting: list[Callable[..., Any]] = []
    real = invoke.fit_cached

    def counting(function: Callable[..., Any], count: int = 1) -> Callable[..., Any]:
        fitting.append(function)
        return real(function, count)

    monkeypatch.setattr(invoke, "fit_cached", counting)
    app = App()

    def allowed(request: Request) -> bool:
        return True

    def item(request: Request) -> dict[str, Any]:
        return {"id": int(request["id"])}

    app.register_rest_route(
        "t/v1", r"/items/(?P<id>\d+)", {"callback": item, "permission_callback": allowed}
    )
    assert app.rest_do_request("/t/v1/items/1").data == {"id": 1}  # the table is prepared
    before = len(fitting)
    for number in range(3):
        assert app.rest_do_request(f"/t/v1/items/{number}").data == {"id": number}
    assert len(fitting) == before


def test_the_respond_chain_follows_the_hooks() -> None:
    app = App()
    app.register_rest_route(
        "t/v1",
        "/one",
        {"callback": lambda request: {"from": "callback"}, "permission_callback": public},
    )
    assert app.rest_do_request("/t/v1/one").data == {"from": "callback"}
    answer = app.hooks.add_filter(
        "rest_dispatch_request", lambda result, request, route, handler: {"from": "filter"}
    )
    assert app.rest_do_request("/t/v1/one").data == {"from": "filter"}
    app.hooks.remove_filter("rest_dispatch_request", answer)
    assert app.rest_do_request("/t/v1/one").data == {"from": "callback"}
