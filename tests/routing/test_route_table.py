"""RouteTable: remembered matches and the remembered Allow value follow every change."""

from __future__ import annotations

import asyncio
from typing import Any

from svcrest.chains import Pending, run_chain
from svcrest.http.request import Request
from svcrest.rest.routing.table import MEMO_PATH, MEMO_SIZE, AllowShortcut, RouteTable


def _handler(methods: str, permission: Any = None) -> dict[str, Any]:
    handler: dict[str, Any] = {"methods": methods, "callback": lambda request: None}
    if permission is not None:
        handler["permission_callback"] = permission
    return handler


def test_the_allow_value_follows_merges_and_overrides() -> None:
    table = RouteTable()
    entry = table.add("ns", "/ns/items", _handler("GET"))
    assert entry.permissionless_allow == "GET"
    table.add("ns", "/ns/items", [_handler("POST, PUT"), _handler("GET, DELETE")])
    assert entry.permissionless_allow == "GET, POST, PUT, DELETE"
    table.add("ns", "/ns/items", _handler("PATCH", permission=lambda request: True))
    # A permission callback must be asked on every request: nothing is remembered.
    assert entry.permissionless_allow is None
    table.add("ns", "/ns/items", _handler("PUT"), override=True)
    assert entry.permissionless_allow == "PUT"


def test_allow_value_is_the_remembered_value_or_the_permission_callbacks_answer() -> None:
    table = RouteTable()
    request = Request("GET", "/ns/items")
    entry = table.add("ns", "/ns/items", [_handler("GET, POST"), _handler("DELETE")])
    assert entry.allow_value(request) == "GET, POST, DELETE"
    refused = table.add("ns", "/ns/none", _handler("GET", permission=lambda request: False))
    assert refused.allow_value(request) == ""
    alone = table.add("ns", "/ns/alone", _handler("GET, PUT", permission=lambda request: True))
    assert alone.allow_value(request) == "GET, PUT"
    # A method in several handlers takes the last one's answer; only exactly True allows.
    mixed = table.add(
        "ns",
        "/ns/mixed",
        [
            _handler("GET, POST", permission=lambda request: True),
            _handler("POST", permission=lambda request: 1),
            _handler("PATCH"),
        ],
    )
    assert mixed.allow_value(request) == "GET, PATCH"


def test_allow_value_awaits_an_async_permission_callback() -> None:
    async def allowed(request: Request) -> bool:
        return True

    table = RouteTable()
    entry = table.add("ns", "/ns/items", [_handler("GET", allowed), _handler("PUT", allowed)])
    pending = entry.allow_value(Request("GET", "/ns/items"))
    assert type(pending) is Pending
    assert asyncio.run(pending) == "GET, PUT"


def _with(handlers: list[dict[str, Any]], shortcut: AllowShortcut) -> dict[Any, Any]:
    """Route args: ``handlers`` and the route option ``allow_shortcut``."""
    return {**dict(enumerate(handlers)), "allow_shortcut": shortcut}


def _allows(verdict: Any) -> Any:
    return lambda request: verdict


def test_an_allow_shortcuts_values_are_what_asking_the_callbacks_answers() -> None:
    """Every mask of a route's ``allow_shortcut`` answers the Allow value its callbacks
    answering so give (a method in several handlers taking the last one's answer, a handler
    without a callback always allowed); a mask of None, or a failing shortcut, asks them."""
    table = RouteTable()
    shapes: list[list[str | None]] = [
        ["GET"],
        ["GET", "POST, PUT, PATCH", "DELETE"],
        ["GET, POST", "POST", "PATCH, GET"],
        ["GET", None, "DELETE"],  # None: a handler without a permission callback
    ]
    request = Request("GET", "/ns/items")
    for number, methods in enumerate(shapes):
        count = len(methods)
        for mask in range(1 << count):
            covers = [_allows(bool(mask >> i & 1)) if m else None for i, m in enumerate(methods)]
            handlers = [
                _handler(m or "PUT", permission=covers[i] if m else None)
                for i, m in enumerate(methods)
            ]
            if not any(covers):
                continue
            told: list[int | None] = [mask]

            def verdicts(request: Request, told: list[int | None] = told) -> int | None:
                return told[0]

            shortcut = AllowShortcut(tuple(covers), verdicts)
            route = f"/ns/items{number}/{mask}"
            entry = table.add("ns", route, _with(handlers, shortcut))
            assert entry.allow_verdicts is shortcut.verdicts
            asked = run_chain(entry.allow_chain, {}, request)
            full = mask | sum(1 << i for i, one in enumerate(methods) if not one)
            told[0] = full
            assert entry.allow_value(request) == asked, (methods, mask)
            told[0] = None  # unknown: the callbacks asked
            assert entry.allow_value(request) == asked

            def failing(request: Request) -> int:
                raise KeyError("the shortcut failed")

            table.add(
                "ns",
                route,
                _with(handlers, AllowShortcut(tuple(covers), failing)),
                override=True,
            )
            assert entry.allow_verdicts is failing
            assert entry.allow_value(request) == asked


def test_an_allow_shortcut_is_used_only_while_it_covers_the_routes_callbacks() -> None:
    table = RouteTable()
    allowed, refused = _allows(True), _allows(False)
    lying = AllowShortcut((allowed, refused), lambda request: 0)
    request = Request("GET", "/ns/items")
    entry = table.add(
        "ns",
        "/ns/items",
        _with([_handler("GET", allowed), _handler("PUT", refused)], lying),
    )
    assert entry.allow_value(request) == ""  # the shortcut's answer, not the callbacks'
    table.add("ns", "/ns/items", _handler("PATCH", allowed))  # a handler added: asked again
    assert entry.allow_verdicts is None and entry.allow_value(request) == "GET, PATCH"
    both = [_handler("GET", allowed), _handler("PUT", allowed)]  # the same methods, other
    table.add("ns", "/ns/items", _with(both, lying), override=True)  # callbacks: not used
    assert entry.options["allow_shortcut"] is lying
    assert entry.allow_verdicts is None and entry.allow_value(request) == "GET, PUT"
    table.add(
        "ns",
        "/ns/items",
        _with([_handler("GET", allowed), _handler("PUT", refused)], lying),
        override=True,
    )
    assert entry.allow_verdicts is not None
    table.add("ns", "/ns/items", [_handler("GET"), _handler("PUT")], override=True)
    assert entry.allow_verdicts is None and entry.allow_value(request) == "GET, PUT"


def test_remembered_matches_are_dropped_when_a_route_is_added() -> None:
    table = RouteTable()
    table.add("ns", r"/ns/items/(?P<id>\d+)", _handler("GET"))
    first = table.matches("/ns/items/7")
    assert [(entry.route, params) for entry, params in first] == [
        (r"/ns/items/(?P<id>\d+)", {"id": "7"})
    ]
    assert table.matches("/ns/items/7") is first  # remembered
    table.add("ns", r"/ns/items/(?P<slug>\w+)", _handler("GET"))
    again = table.matches("/ns/items/7")
    assert [(entry.route, params) for entry, params in again] == [
        (r"/ns/items/(?P<id>\d+)", {"id": "7"}),
        (r"/ns/items/(?P<slug>\w+)", {"slug": "7"}),
    ]


def test_the_memory_of_matches_stays_bounded() -> None:
    table = RouteTable()
    table.add("ns", r"/ns/(?P<rest>.+)", _handler("GET"))
    for number in range(MEMO_SIZE + 10):
        assert len(table.matches(f"/ns/{number}")) == 1
    long_path = "/ns/" + "x" * MEMO_PATH
    assert len(table.matches(long_path)) == 1
    memo = table._memo[1]
    assert len(memo) <= MEMO_SIZE
    assert long_path not in memo
