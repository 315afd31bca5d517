"""Hooks: actions and filters with priorities."""

from __future__ import annotations

import asyncio
from typing import Any

from svcrest import Hooks


def test_filters_run_by_priority_then_insertion_order() -> None:
    hooks = Hooks()
    hooks.add_filter("f", lambda v: [*v, "late"], 20)
    hooks.add_filter("f", lambda v: [*v, "a"])
    hooks.add_filter("f", lambda v: [*v, "early"], 5)
    hooks.add_filter("f", lambda v: [*v, "b"])
    assert hooks.apply_filters("f", []) == ["early", "a", "b", "late"]


def test_filter_without_callbacks_returns_value() -> None:
    assert Hooks().apply_filters("nothing", 42, "x") == 42


def test_callbacks_receive_every_argument() -> None:
    hooks = Hooks()
    seen: list[tuple[Any, ...]] = []

    def record(value: int, a: str, b: str) -> int:
        seen.append((value, a, b))
        return value + 1

    hooks.add_filter("f", record)
    assert hooks.apply_filters("f", 1, "x", "y") == 2
    assert seen == [(1, "x", "y")]


def test_add_returns_callback_for_decorator_use() -> None:
    hooks = Hooks()

    @hooks.add_action("a")
    def callback() -> None:
        pass

    assert callable(callback)
    assert hooks.has_action("a", callback) == 10


def test_remove_filter() -> None:
    hooks = Hooks()

    def double(v: int) -> int:
        return v * 2

    hooks.add_filter("f", double, 5)
    assert hooks.remove_filter("f", double) is False  # wrong priority
    assert hooks.remove_filter("f", double, 5) is True
    assert hooks.remove_filter("f", double, 5) is False
    assert hooks.apply_filters("f", 3) == 3
    assert hooks.has_filter("f") is False


def test_has_filter() -> None:
    hooks = Hooks()

    def cb(v: int) -> int:
        return v

    assert hooks.has_filter("f") is False
    hooks.add_filter("f", cb, 7)
    assert hooks.has_filter("f") is True
    assert hooks.has_filter("f", cb) == 7
    assert hooks.has_filter("f", print) is False


def test_do_action_and_did_action() -> None:
    hooks = Hooks()
    calls: list[tuple[int, int]] = []
    hooks.add_action("go", lambda a, b: calls.append((a, b)))
    assert hooks.did_action("go") == 0
    hooks.do_action("go", 1, 2)
    hooks.do_action("go", 3, 4)
    hooks.do_action("other")
    assert calls == [(1, 2), (3, 4)]
    assert hooks.did_action("go") == 2
    assert hooks.did_action("other") == 1


def test_apply_filters_async_awaits_async_callbacks() -> None:
    hooks = Hooks()

    async def add_one(v: int) -> int:
        await asyncio.sleep(0)
        return v + 1

    hooks.add_filter("f", add_one)
    hooks.add_filter("f", lambda v: v * 10)
    assert asyncio.run(hooks.apply_filters_async("f", 1)) == 20


def test_same_callback_twice_runs_twice_and_removes_once() -> None:
    hooks = Hooks()

    def inc(v: int) -> int:
        return v + 1

    hooks.add_filter("f", inc)
    hooks.add_filter("f", inc)
    assert hooks.apply_filters("f", 0) == 2
    hooks.remove_filter("f", inc)
    assert hooks.apply_filters("f", 0) == 1


def test_hooks_are_per_instance() -> None:
    one, two = Hooks(), Hooks()
    one.add_filter("f", lambda v: v + 1)
    assert two.apply_filters("f", 0) == 0


def test_callbacks_get_only_the_arguments_they_accept() -> None:
    hooks = Hooks()
    seen: list[tuple[Any, ...]] = []

    def two(value: int, first: str) -> int:
        seen.append((value, first))
        return value + 1

    def every(*args: Any) -> Any:
        seen.append(args)
        return args[0]

    def with_default(value: int, first: str = "", second: str = "") -> int:
        seen.append((value, first, second))
        return value

    hooks.add_filter("f", lambda value: value * 10)
    hooks.add_filter("f", two)
    hooks.add_filter("f", every)
    hooks.add_filter("f", with_default)
    assert hooks.apply_filters("f", 1, "a", "b", "c") == 11
    assert seen == [(10, "a"), (11, "a", "b", "c"), (11, "a", "b")]
    hooks.add_action("act", lambda: seen.append(("no args",)))
    hooks.do_action("act", 1, 2)
    assert seen[-1] == ("no args",)


def test_fitted_callbacks_are_still_removable() -> None:
    hooks = Hooks()

    def one(value: int) -> int:
        return value + 1

    hooks.add_filter("f", one)
    assert hooks.apply_filters("f", 1, "extra") == 2
    assert hooks.remove_filter("f", one) is True
    assert hooks.apply_filters("f", 1, "extra") == 1


def test_fitted_chains_per_argument_count_and_emptied_on_change() -> None:
    hooks = Hooks()
    seen: list[tuple[Any, ...]] = []

    def first(*args: Any) -> None:
        seen.append(args)

    def two(a: Any, b: Any) -> None:
        seen.append(("two", a, b))

    hooks.add_action("act", first)
    hooks.add_action("act", two)
    hooks.do_action("act", 1, 2)
    hooks.do_action("act", 1, 2, 3)
    hooks.do_action("act", 4, 5)
    assert seen == [(1, 2), ("two", 1, 2), (1, 2, 3), ("two", 1, 2), (4, 5), ("two", 4, 5)]
    # One prepared chain per count a hook was run with, for registered names only.
    hooks.do_action("nobody", 1)
    assert hooks.apply_filters("nobody", 7) == 7
    assert sorted(hooks._fitted) == [("act", 2), ("act", 3)]
    assert hooks.did_action("act") == 3
    hooks.add_action("act", lambda *args: seen.append(("late", *args)))
    assert hooks._fitted == {}
    seen.clear()
    hooks.do_action("act", 6, 7)
    assert seen == [(6, 7), ("two", 6, 7), ("late", 6, 7)]


def test_action_counts_are_what_did_action_answers() -> None:
    hooks = Hooks()
    hooks.do_action("ran")
    hooks.count_action("ran")
    hooks.action_counts["ran"] = hooks.action_counts.get("ran", 0) + 1  # a stand-in's run
    assert hooks.did_action("ran") == 3
    assert hooks.action_counts == {"ran": 3}
    assert hooks.did_action("never") == 0
