"""svcrest: one plain anonymous POST route with a small JSON body, every default filter on.

The ``svcrest-post-*`` targets POST ``{"id": 42, "title": "item"}`` to it and get the same
item back: the body is read, parsed and checked against the route's argument schema.
"""

from __future__ import annotations

import os
from typing import Any

import svcrest
from svcrest import App

#: svcrest.public where the served tree has it (older trees, compared with it, do not).
PUBLIC = getattr(svcrest, "public", None)
app = App(os.environ.get("SVCREST_BENCH_HOME", "http://127.0.0.1:8000"))


def post_item(request: Any) -> dict[str, Any]:
    """Return the item the body describes."""
    return {"id": request["id"], "title": request["title"]}


app.register_rest_route(
    "demo/v1",
    "/items",
    {
        "methods": "POST",
        "callback": post_item,
        "permission_callback": PUBLIC,
        "args": {
            "id": {"type": "integer", "required": True},
            "title": {"type": "string", "required": True},
        },
    },
)
