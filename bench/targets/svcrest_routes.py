"""svcrest with ``BENCH_ROUTES`` regex routes over 100 namespaces (see ``routetable``)."""

from __future__ import annotations

import os

from routetable import register_svcrest, routes, routes_from_env

from svcrest import App

app = App(os.environ.get("SVCREST_BENCH_HOME", "http://127.0.0.1:8000"))
register_svcrest(app, routes(routes_from_env()))
