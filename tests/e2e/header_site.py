"""A plugin for ``svcrest serve --plugin tests.e2e.header_site:register``: routes that answer
what the server handed over of a request's header lines, for the tests of header values
that are not ASCII text (tests/e2e/test_header_bytes.py)."""

from __future__ import annotations

from typing import Any

import svcrest
from svcrest import App, Request

#: The header lines the echo route answers (None for one the site did not get).
ECHOED = ("x-custom", "cookie", "content-type", "if-none-match", "user-agent")


def echo(request: Request) -> dict[str, Any]:
    """The echoed header values, the body's JSON parameters and the current user's id."""
    return {
        "headers": {name: request.get_header(name) for name in ECHOED},
        "json": request.get_json_params(),
        "user": svcrest.current_user().id,
    }


def register(app: App) -> None:
    """Add ``GET``/``POST /svc-json/t/v1/echo``, public."""
    app.register_rest_route(
        "t/v1",
        "/echo",
        {"methods": "GET, POST", "callback": echo, "permission_callback": svcrest.public},
    )
