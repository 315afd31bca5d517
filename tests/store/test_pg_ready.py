"""``/ready`` on PostgreSQL: the session cache's listener must listen (a real server whose
listener role is refused log-ins, then allowed again)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry, values

from svcrest import App
from svcrest.serve.admin import AdminServer, store_probe
from svcrest.serve.metrics import OperatingMetrics, listener_status
from svcrest.store.pg_url import with_url_options
from tests.pg import PostgresServer

ROLE = "svcrest_listen_ready"


@pytest.fixture
def metrics_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Metrics made in this process go to multiprocess files, as in a worker."""
    directory = tmp_path / "metrics"
    directory.mkdir()
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(directory))
    value_class = values.MultiProcessValue()  # type: ignore[no-untyped-call]
    monkeypatch.setattr(values, "ValueClass", value_class)
    yield str(directory)


def _ready_until(
    url: str, status: int, metrics: OperatingMetrics, app: App
) -> tuple[int, dict[str, Any]]:
    """``/ready`` asked until it answers ``status`` (10 s at most), the worker's figures
    sampled before each ask (a look-up drains the listener first, as a request does)."""
    cache = app.auth.session_cache
    assert cache is not None
    deadline = time.monotonic() + 10
    while True:
        cache.lookup(("nobody", "x"))
        metrics.sample()
        answer = httpx.get(f"{url}/ready")
        if answer.status_code == status or time.monotonic() > deadline:
            return answer.status_code, answer.json()
        time.sleep(0.1)


def test_ready_names_a_listener_that_does_not_listen(
    postgres: PostgresServer, metrics_dir: str
) -> None:
    postgres.psql(f"DROP ROLE IF EXISTS {ROLE}; CREATE ROLE {ROLE} LOGIN")
    url = postgres.new_schema()
    listen_url = url.replace("postgresql://postgres@", f"postgresql://{ROLE}@")
    site_url = with_url_options(url, listen=listen_url)
    app = App("http://example.org", store=site_url)
    assert app.auth.session_cache is not None  # the worker's cache, listening
    metrics = OperatingMetrics(app.operating_figures, CollectorRegistry())
    admin = AdminServer(
        "127.0.0.1", 0, store_probe(site_url), metrics_dir, lambda: listener_status(metrics_dir)
    )
    admin.start()
    base = f"http://127.0.0.1:{admin.server_address[1]}"
    try:
        assert _ready_until(base, 200, metrics, app) == (
            200,
            {"status": "ready", "checks": {"store": "ok", "listener": "ok", "draining": "no"}},
        )
        postgres.psql(f"ALTER ROLE {ROLE} NOLOGIN")
        postgres.psql(
            f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{ROLE}'"
        )
        assert _ready_until(base, 503, metrics, app) == (
            503,
            {
                "status": "unavailable",
                "checks": {"store": "ok", "listener": "not listening", "draining": "no"},
            },
        )
        postgres.psql(f"ALTER ROLE {ROLE} LOGIN")
        assert _ready_until(base, 200, metrics, app)[0] == 200
    finally:
        admin.stop()
        app.store.close()
        postgres.psql(f"ALTER ROLE {ROLE} LOGIN")
