"""``App(server_timing=True)``: ``Server-Timing`` with ``auth``, ``dispatch`` and ``total`` on
REST answers; none by default, none on site pages."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import svcrest
from svcrest import App, Request
from svcrest.rest.timing import server_timing_line
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
LINE = re.compile(r"auth;dur=(\d+\.\d{3}), dispatch;dur=(\d+\.\d{3}), total;dur=(\d+\.\d{3})")


def _app(**options: Any) -> App:
    app = App("http://example.org", **options)

    def nap(request: Request) -> dict[str, bool]:
        time.sleep(0.05)
        return {"ok": True}

    app.register_rest_route(
        "t/v1", "/nap", {"methods": "GET", "callback": nap, "permission_callback": svcrest.public}
    )
    return app


def test_the_line() -> None:
    assert server_timing_line(1.0, 1.0005, 1.0505, 1.0512) == (
        "Server-Timing",
        "auth;dur=0.500, dispatch;dur=50.000, total;dur=51.200",
    )


def test_rest_answers_carry_it(client_for: ClientFor) -> None:
    client = client_for(_app(server_timing=True))
    response = client.get("/svc-json/t/v1/nap")
    assert response.status_code == 200
    [line] = response.headers.get_list("server-timing")
    match = LINE.fullmatch(line)
    assert match is not None, line
    auth, dispatch, total = (float(value) for value in match.groups())
    assert dispatch >= 50.0  # the handler slept 50 ms
    assert total >= auth + dispatch
    missing = client.get("/svc-json/t/v1/none")
    assert missing.status_code == 404
    assert LINE.fullmatch(missing.headers["server-timing"])


def test_off_by_default_and_on_pages(client_for: ClientFor) -> None:
    client = client_for(_app())
    assert "server-timing" not in client.get("/svc-json/t/v1/nap").headers
    timed = client_for(_app(server_timing=True))
    assert "server-timing" not in timed.get("/login").headers
