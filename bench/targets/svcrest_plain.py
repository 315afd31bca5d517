"""svcrest: one plain anonymous GET route, every default filter on.

The ``svcrest-404`` target serves this same app and requests a path no route matches.
"""

from __future__ import annotations

import os
from typing import Any

import svcrest
from svcrest import App

#: svcrest.public where the served tree has it (older trees, compared with it, do not).
PUBLIC = getattr(svcrest, "public", None)
app = App(os.environ.get("SVCREST_BENCH_HOME", "http://127.0.0.1:8000"))


def get_item(request: Any) -> dict[str, Any]:
    """Return the item named by the URL parameter."""
    return {"id": int(request["id"]), "title": "item"}


app.register_rest_route(
    "demo/v1",
    r"/items/(?P<id>\d+)",
    {"methods": "GET", "callback": get_item, "permission_callback": PUBLIC},
)
