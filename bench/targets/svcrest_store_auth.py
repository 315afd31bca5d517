"""svcrest: the cookie + nonce GET of ``svcrest_auth.py``, its users and sessions in the store
named by ``SVCREST_BENCH_DB`` (a SQLite file or a PostgreSQL URL) shared by every worker.

``stores_http.py`` creates the user in that store before it starts the workers, logs in
through ``POST /login`` and gives wrk the ``Cookie`` and ``X-SVC-Nonce`` headers.
``SVCREST_BENCH_SESSION_CACHE=0`` turns the session cache of PostgreSQL off.
"""

from __future__ import annotations

import os

import auth_route

from svcrest import App

app = App(
    os.environ.get("SVCREST_BENCH_HOME", "http://127.0.0.1:8000"),
    store=os.environ["SVCREST_BENCH_DB"],
)
if os.environ.get("SVCREST_BENCH_SESSION_CACHE") == "0":
    app.hooks.add_filter("svc_session_cache_entries", lambda entries: 0)


auth_route.register(app)
