"""svcrest: a GET route for logged-in users, reached with a session cookie and a nonce.

The app keeps its users and sessions in the default in-memory store and creates one
administrator at import. ``run.py`` logs in through ``POST /login`` (``log``/``pwd``), fetches
a nonce from ``GET /auth/nonce`` and gives wrk the ``Cookie`` and ``X-SVC-Nonce`` headers.
"""

from __future__ import annotations

import os

import auth_route

from svcrest import App

LOGIN = "bench"
PASSWORD = "bench-password-0123"

app = App(os.environ.get("SVCREST_BENCH_HOME", "http://127.0.0.1:8000"))
app.users.create(LOGIN, PASSWORD, roles=("administrator",))


auth_route.register(app)
