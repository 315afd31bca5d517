"""The request edge (``svcrest.site.edge``): a site's observers prepared once, on its first
request; a site with none of them gets the quiet edge, and no tracer is looked up per
request."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import svcrest
import svcrest.rest.tracing
from svcrest import App, Request
from svcrest.site.edge import QUIET, RequestEdge
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]


def _app() -> App:
    app = App("http://example.org")

    def item(request: Request) -> dict[str, Any]:
        return {"id": int(request["id"])}

    app.register_rest_route(
        "t/v1",
        r"/items/(?P<id>\d+)",
        {"methods": "GET", "callback": item, "permission_callback": svcrest.public},
    )
    return app


def test_a_site_without_observers_gets_the_quiet_edge_once(
    client_for: ClientFor, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked_up: list[int] = []

    def no_tracer() -> None:
        looked_up.append(1)

    monkeypatch.setattr(svcrest.rest.tracing, "request_tracer", no_tracer)
    app = _app()
    assert app.request_edge is None  # nothing prepared before the first request
    client = client_for(app)
    for number in range(3):
        assert client.get(f"/svc-json/t/v1/items/{number}").status_code == 200
    assert app.request_edge is QUIET
    assert (QUIET.observer, QUIET.tracer) == (None, None)
    assert looked_up == [1]  # the tracer looked up once, not per request


def test_setting_an_observer_prepares_the_edge_again(client_for: ClientFor) -> None:
    app = _app()
    client = client_for(app)
    assert client.get("/svc-json/t/v1/items/1").status_code == 200
    assert app.request_edge is QUIET
    seen: list[tuple[str, str, int]] = []
    seconds: list[float] = []

    def observe(method: str, route: str, status: int, took: float) -> None:
        seen.append((method, route, status))
        seconds.append(took)

    app.request_observer = observe
    assert app.request_edge is None
    assert client.get("/svc-json/t/v1/items/2").status_code == 200
    assert client.get("/svc-json/t/v1/nothing").status_code == 404
    assert client.request("BREW", "/svc-json/t/v1/items/3").status_code == 405
    assert app.request_edge == RequestEdge(observe, None)
    assert seen == [
        ("GET", r"/t/v1/items/(?P<id>\d+)", 200),
        ("GET", "", 404),
        ("other", r"/t/v1/items/(?P<id>\d+)", 405),  # SECURITY: a bounded method label
    ]
    assert all(0 < took < 10 for took in seconds)
    app.request_observer = None
    assert client.get("/svc-json/t/v1/items/4").status_code == 200
    assert app.request_edge is QUIET
    assert len(seen) == 3
