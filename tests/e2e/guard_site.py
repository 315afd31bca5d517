"""A plugin for ``svcrest serve --plugin tests.e2e.guard_site:register``: a write route
with a required Idempotency-Key (its rows in the site's store) and a rate-limited read."""

from __future__ import annotations

import time
from typing import Any

import svcrest
from svcrest import App, Request, Response

ITEMS_SCHEMA = (
    {
        "sqlite": "CREATE TABLE guard_items (id INTEGER PRIMARY KEY, title TEXT NOT NULL)",
        "postgresql": "CREATE TABLE guard_items (id BIGSERIAL PRIMARY KEY, title TEXT NOT NULL)",
    },
)


def register(app: App) -> None:
    store = app.store
    store.migrate("guard_e2e", ITEMS_SCHEMA)

    def create(request: Request) -> Response:
        title = str(request.get_param("title"))
        with store.transaction() as conn:
            row = conn.execute(
                "INSERT INTO guard_items (title) VALUES (?) RETURNING id", (title,)
            ).fetchone()
        # Committed: the test breaks the connection while the answer is still to come.
        time.sleep(float(request.get_param("linger") or 0))
        return Response({"id": int(row[0]), "title": title}, 201)

    def count(request: Request) -> dict[str, Any]:
        return {"count": store.read_one("SELECT COUNT(*) FROM guard_items")[0]}

    app.register_rest_route(
        "guard/v1",
        "/items",
        {
            0: {
                "methods": "POST",
                "callback": create,
                "permission_callback": svcrest.public,
                "blocking": True,
            },
            1: {"methods": "GET", "callback": count, "permission_callback": svcrest.public},
            "idempotency": "required",
        },
    )
    app.register_rest_route(
        "guard/v1",
        "/limited",
        {
            0: {
                "methods": "GET",
                "callback": lambda request: {"ok": True},
                "permission_callback": svcrest.public,
            },
            "rate_limit": {"limit": 10, "window": 3600},
        },
    )
    app.register_rest_route(
        "guard/v1",
        "/limited-writes",
        {
            0: {
                "methods": "POST",
                "callback": lambda request: Response({"ok": True}, 201),
                "permission_callback": lambda request: request.user.is_logged_in,
            },
            "allow_batch": {"v1": True},
            "rate_limit": {"limit": 10, "window": 3600},
        },
    )
