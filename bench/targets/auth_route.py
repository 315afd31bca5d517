"""The route both cookie + nonce targets serve: ``GET /svc-json/demo/v1/items/<id>`` for
logged-in users only."""

from __future__ import annotations

from typing import Any

from svcrest import App


def get_item(request: Any) -> dict[str, Any]:
    """Return the item named by the URL parameter."""
    return {"id": int(request["id"]), "title": "item"}


def logged_in(request: Any) -> bool:
    """Only a logged-in user (not the anonymous user 0) may read."""
    return bool(getattr(request.user, "id", 0))


def register(app: App) -> None:
    """Register the route on ``app``."""
    app.register_rest_route(
        "demo/v1",
        r"/items/(?P<id>\d+)",
        {"methods": "GET", "callback": get_item, "permission_callback": logged_in},
    )
