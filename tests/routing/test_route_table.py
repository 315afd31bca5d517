"""RouteTable: remembered matches and the remembered Allow value follow every change."""

from __future__ import annotations

import asyncio
from typing import Any

from svcrest.chains import Pending
from svcrest.http.request import Request
from svcrest.rest.routing.table import MEMO_PATH, MEMO_SIZE, RouteTable


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
