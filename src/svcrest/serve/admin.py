"""The admin port of ``svcrest serve --admin-port PORT`` (docs/guides/operating.md).

It is served by the launching process (never by the workers, never on the API port), on
the API's host, from a thread of its own, so it answers while every worker is busy:

- ``GET /live``: 200 ``{"status": "ok"}`` while the process runs;
- ``GET /ready``: 200 ``{"status": "ready", "checks": {...}}`` when every check passes, else
  503 ``{"status": "unavailable", "checks": {...}}``. The checks: ``store`` (the database
  answers a ``SELECT 1`` within 250 ms: ``"ok"``, ``"timeout"`` or ``"error"``), on
  PostgreSQL ``listener`` (``"ok"``, or ``"not listening"`` while a worker's session-cache
  listener does not listen: :func:`svcrest.serve.metrics.listener_status`) and ``draining``
  (``"no"``, or ``"yes"`` from the moment a graceful shutdown began);
- ``GET /metrics``: the Prometheus text format of every worker's figures
  (:mod:`svcrest.serve.metrics`).

Any other path is a 404; a method other than ``GET`` and ``HEAD`` a 501.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

from svcrest.serve.metrics import metrics_text
from svcrest.store.locations import is_memory, is_postgres_url

__all__ = ["READY_TIMEOUT", "AdminServer", "store_probe"]

#: Seconds the store has to answer a readiness probe.
READY_TIMEOUT: Final = 0.25

Probe = Callable[[], None]


def store_probe(db: str) -> Probe:
    """A probe of the database ``db`` (a file, ``:memory:`` or a PostgreSQL URL): raises
    when it cannot answer ``SELECT 1`` on a connection of its own."""
    if is_memory(db):
        return lambda: None
    if is_postgres_url(db):

        def probe_postgres() -> None:
            import psycopg

            from svcrest.store.pg_url import split_url

            url, _options = split_url(db)
            with psycopg.connect(url, connect_timeout=2) as conn:
                conn.execute("SELECT 1")

        return probe_postgres

    def probe_sqlite() -> None:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=READY_TIMEOUT)
        try:
            conn.execute("SELECT 1").fetchone()
        finally:
            conn.close()

    return probe_sqlite


def _run_probe(probe: Probe) -> str:
    """``"ok"``, ``"error"``, or ``"timeout"`` when ``probe`` takes more than 250 ms (it
    then finishes on its own thread, unwaited)."""
    outcome: list[str] = []

    def run() -> None:
        try:
            probe()
        except Exception:
            outcome.append("error")
        else:
            outcome.append("ok")

    thread = threading.Thread(target=run, name="svcrest-ready-probe", daemon=True)
    thread.start()
    thread.join(READY_TIMEOUT)
    return outcome[0] if outcome else "timeout"


class AdminServer:
    """The admin port's HTTP server, on a daemon thread; :meth:`drain` turns ``/ready`` to
    503 for good."""

    def __init__(
        self,
        host: str,
        port: int,
        probe: Probe,
        metrics_dir: str,
        listener: Callable[[], str] | None = None,
    ) -> None:
        self.probe = probe
        #: The ``listener`` check (PostgreSQL), None for none.
        self.listener = listener
        self.metrics_dir = metrics_dir
        self.draining = threading.Event()
        admin = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "svcrest-admin"

            def do_GET(self) -> None:
                status, media, body = admin.answer(self.path)
                self.send_response(status)
                self.send_header("Content-Type", media)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_HEAD = do_GET

            def log_message(self, format: str, *args: Any) -> None:
                pass  # probes every few seconds would drown the access log

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, name="svcrest-admin", daemon=True
        )

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def drain(self) -> None:
        """A graceful shutdown began: ``/ready`` answers 503 from now on."""
        self.draining.set()

    def readiness(self) -> tuple[int, dict[str, Any]]:
        checks = {"store": _run_probe(self.probe)}
        if self.listener is not None:
            checks["listener"] = self.listener()
        checks["draining"] = "yes" if self.draining.is_set() else "no"
        ready = checks.get("listener", "ok") == "ok" and checks["store"] == "ok"
        ready = ready and checks["draining"] == "no"
        status = "ready" if ready else "unavailable"
        return (200 if ready else 503), {"status": status, "checks": checks}

    def answer(self, target: str) -> tuple[int, str, bytes]:
        """The status, media type and body of ``GET target``."""
        path = target.partition("?")[0]
        if path == "/live":
            return 200, _JSON, _json({"status": "ok"})
        if path == "/ready":
            status, body = self.readiness()
            return status, _JSON, _json(body)
        if path == "/metrics":
            text, media = metrics_text(self.metrics_dir)
            return 200, media, text
        return 404, _JSON, _json({"code": "not_found", "message": "No such admin page."})


_JSON: Final = "application/json"


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()
