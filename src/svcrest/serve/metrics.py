"""Prometheus metrics of the requests a server's workers answer (docs/guides/operating.md).

``svcrest serve --admin-port`` gives every worker process a :class:`RequestMetrics` as its
App's ``request_observer``; ``prometheus_client`` in multiprocess mode keeps each worker's
figures in files under ``PROMETHEUS_MULTIPROC_DIR`` (a directory the launcher makes), and
the admin port's ``/metrics`` adds them up into one view of the whole server.

Series (their labels are bounded whatever clients send: ``method`` is one of the usual
methods or ``other``, ``route`` the matched REST route's pattern or ``""``, never a path):

- ``svcrest_requests_total{method,route,status}``: a counter of the requests answered;
- ``svcrest_request_duration_seconds{method,route}``: a histogram of the seconds from the
  request's head to its answer (the body's sending excluded).

Nothing here is imported, and no request pays anything, without ``--admin-port``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any, Final

__all__ = [
    "ENV_ADMIN_PORT",
    "ENV_METRICS_DIR",
    "RequestMetrics",
    "make_metrics_dir",
    "metrics_text",
    "observer_from_env",
    "remove_metrics_dir",
]

#: The admin port (``svcrest serve --admin-port``); set, the workers keep metrics.
ENV_ADMIN_PORT: Final = "SVCREST_ADMIN_PORT"
#: ``prometheus_client``'s directory of the workers' figures.
ENV_METRICS_DIR: Final = "PROMETHEUS_MULTIPROC_DIR"

#: The histogram's upper bounds, in seconds: from 1 ms (a plain GET takes well under) to 10 s.
BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class RequestMetrics:
    """The request series of this process: call it with ``(method, route, status, seconds)``
    for each request answered."""

    __slots__ = ("_counts", "_durations")

    def __init__(self, registry: Any = None) -> None:
        from prometheus_client import REGISTRY, Counter, Histogram

        registry = REGISTRY if registry is None else registry
        self._counts = Counter(
            "svcrest_requests",
            "Requests answered, by method, matched route pattern and status.",
            ("method", "route", "status"),
            registry=registry,
        )
        self._durations = Histogram(
            "svcrest_request_duration_seconds",
            "Seconds from a request's head to its answer, by method and route pattern.",
            ("method", "route"),
            buckets=BUCKETS,
            registry=registry,
        )

    def __call__(self, method: str, route: str, status: int, seconds: float) -> None:
        self._counts.labels(method, route, str(status)).inc()
        self._durations.labels(method, route).observe(seconds)


def observer_from_env() -> RequestMetrics | None:
    """A worker's metrics when the server has an admin port (``SVCREST_ADMIN_PORT`` and
    ``PROMETHEUS_MULTIPROC_DIR`` set), else None."""
    if not os.environ.get(ENV_ADMIN_PORT) or not os.environ.get(ENV_METRICS_DIR):
        return None
    return RequestMetrics()


def make_metrics_dir() -> str:
    """A new, empty directory for the workers' figures, named in ``PROMETHEUS_MULTIPROC_DIR``
    (before ``prometheus_client`` is imported: it reads the variable then)."""
    directory = tempfile.mkdtemp(prefix="svcrest-metrics-")
    os.environ[ENV_METRICS_DIR] = directory
    return directory


def remove_metrics_dir(directory: str) -> None:
    """Remove the figures' directory once the server stopped."""
    shutil.rmtree(directory, ignore_errors=True)


def metrics_text(directory: str) -> tuple[bytes, str]:
    """Every worker's figures added up, in the Prometheus text format, and its media type."""
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    return generate_latest(registry), CONTENT_TYPE_LATEST
