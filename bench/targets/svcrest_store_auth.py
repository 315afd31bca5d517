"""svcrest: the cookie + nonce GET of ``svcrest_auth.py``, its users and sessions in the store
named by ``SVCREST_BENCH_DB`` (a SQLite file or a PostgreSQL URL) shared by every worker.

``stores_http.py`` creates the user in that store before it starts the workers, logs in
through ``POST /login`` and gives wrk the ``Cookie`` and ``X-SVC-Nonce`` headers.
``SVCREST_BENCH_SESSION_CACHE=0`` turns the session cache of PostgreSQL off.
"""

from __future__ import annotations

import os
from typing import Any

from svcrest import App

app = App(
    os.environ.get("SVCREST_BENCH_HOME", "http://127.0.0.1:8000"),
    store=os.environ["SVCREST_BENCH_DB"],
)
if os.environ.get("SVCREST_BENCH_SESSION_CACHE") == "0":
    app.hooks.add_filter("svc_session_cache_entries", lambda entries: 0)


def get_item(request: Any) -> dict[str, Any]:
    """Return the item named by the URL parameter."""
    return {"id": int(request["id"]), "title": "item"}


def logged_in(request: Any) -> bool:
    """Only a logged-in user (not the anonymous user 0) may read."""
    return bool(getattr(request.user, "id", 0))


app.register_rest_route(
    "demo/v1",
    r"/items/(?P<id>\d+)",
    {"methods": "GET", "callback": get_item, "permission_callback": logged_in},
)
