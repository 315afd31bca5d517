r"""Prometheus metrics of the requests a server's workers answer (docs/guides/operating.md).

``svcrest serve --admin-port`` gives every worker process a :class:`RequestMetrics` as its
App's ``request_observer``; ``prometheus_client`` in multiprocess mode keeps each worker's
figures in files under ``PROMETHEUS_MULTIPROC_DIR`` (a directory the launcher makes), and
the admin port's ``/metrics`` adds them up into one view of the whole server.

Series (their labels are bounded whatever clients send: ``method`` is one of the usual
methods or ``other``, ``route`` the matched REST route as the OpenAPI document writes its
path (``/demo/v1/notes/{id}`` for ``/demo/v1/notes/(?P<id>\d+)``; the pattern itself when
no URL template describes it) or ``""``, never a path; a request whose handler raised is
counted under the route it matched):

- ``svcrest_requests_total{method,route,status}``: a counter of the requests answered;
- ``svcrest_request_duration_seconds{method,route}``: a histogram of the seconds from the
  request's head to its answer (the body's sending excluded).

and, from :class:`OperatingMetrics`, figures each worker samples once a second (the
counters the store, the session cache and the throttle keep anyway) or is told of:

- ``svcrest_pool_connections{state}`` (``in_use``, ``idle``) and ``svcrest_pool_waiting``:
  the PostgreSQL pools' connections and the callers waiting for one, summed over the live
  workers; ``svcrest_pool_acquire_timeouts_total``: the waits that ended in 503
  ``svc_store_busy``;
- ``svcrest_session_cache_lookups_total{result}`` (``hit``, ``miss``: the cache was trusted;
  ``untrusted``: its listener was not listening or its lease ran out), and, computed by
  ``/metrics``, ``svcrest_session_cache_trusted_ratio``: the trusted share of every look-up
  (hits and misses over all), absent before the first;
- ``svcrest_session_cache_listening``: 1 when every live worker's session cache listener
  listens, 0 when one does not (absent while no worker has a session cache); ``/ready``
  reads it on PostgreSQL;
- ``svcrest_login_throttle_refusals_total``: login attempts refused with 429;
- ``svcrest_batch_size``: a histogram of the number of requests in each batch.

Nothing here is imported, and no request pays anything, without ``--admin-port``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import tempfile
import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final, Protocol

from svcrest.bounded import Memo
from svcrest.rest.routing.template import route_template

__all__ = [
    "BATCH_BUCKETS",
    "ENV_ADMIN_PORT",
    "ENV_METRICS_DIR",
    "Figures",
    "MeteredSite",
    "OperatingMetrics",
    "RequestMetrics",
    "keep_metrics",
    "listener_status",
    "make_metrics_dir",
    "metrics_text",
    "observer_from_env",
    "remove_metrics_dir",
    "route_label",
]

#: The admin port (``svcrest serve --admin-port``); set, the workers keep metrics.
ENV_ADMIN_PORT: Final = "SVCREST_ADMIN_PORT"
#: ``prometheus_client``'s directory of the workers' figures.
ENV_METRICS_DIR: Final = "PROMETHEUS_MULTIPROC_DIR"

#: The histogram's upper bounds, in seconds: from 1 ms (a plain GET takes well under) to 10 s.
BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
#: The batch size histogram's upper bounds (WordPress allows 25 requests a batch by default).
BATCH_BUCKETS: Final = (1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 100.0)
#: Seconds between two samples of a worker's figures.
SAMPLE_INTERVAL: Final = 1.0


def route_label(route: str) -> str:
    """The ``route`` label of the route pattern ``route``: its OpenAPI path template
    (``/demo/v1/notes/{id}``), or the pattern when no template describes it ("" stays "")."""
    template = route_template(route) if route else None
    return route if template is None else template.path


class RequestMetrics:
    """The request series of this process: call it with ``(method, route, status, seconds)``
    for each request answered."""

    __slots__ = ("_counts", "_durations", "_local", "_lock", "_seen", "_series", "_tallies")

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

        # (method, route, status) → the counter's and the histogram's series of those labels.
        # Bounded like the labels: usual methods, route patterns, status codes.
        self._series: Memo[tuple[str, str, int], tuple[Any, Any]] = Memo(4096)
        # PERF: each thread counts the requests it answers in a tally of its own, by labels:
        # [requests, seconds, requests per duration bucket (the last: +Inf)], only ever
        # increased; :meth:`flush` adds what grew since it last looked. Writing each request
        # into the multiprocess files (three memory-mapped values) ran an in-process plain
        # GET at 0.65 of its rate without metrics (0.75 with the series remembered); one
        # tally under a lock shared by the server's threads, 0.84 over HTTP (granian WSGI,
        # 30 pairs: the threads queued on the lock); a tally per thread, 0.962.
        self._local = threading.local()
        self._tallies: list[dict[tuple[str, str, int], list[Any]]] = []
        self._seen: dict[tuple[str, str, int], tuple[int, float, list[int]]] = {}
        self._lock = threading.Lock()
        atexit.register(self.flush)  # a worker's last second is not lost when it exits

    def _own_tally(self) -> dict[tuple[str, str, int], list[Any]]:
        """This thread's tally, made (and listed for :meth:`flush`) on its first request."""
        tally: dict[tuple[str, str, int], list[Any]] = {}
        self._local.tally = tally
        with self._lock:
            self._tallies.append(tally)
        return tally

    def __call__(self, method: str, route: str, status: int, seconds: float) -> None:
        try:
            tally = self._local.tally
        except AttributeError:
            tally = self._own_tally()
        key = (method, route, status)
        counts = tally.get(key)
        if counts is None:
            counts = tally[key] = [0, 0.0, [0] * (len(BUCKETS) + 1)]
        counts[0] += 1
        counts[1] += seconds
        counts[2][bisect_left(BUCKETS, seconds)] += 1  # the first bound at least ``seconds``

    def flush(self) -> None:
        """Add the requests answered since the last flush to the series (the operating
        sampler does once a second, and the process at exit). A request a thread is counting
        meanwhile is added by the next flush."""
        with self._lock:
            tallies = list(self._tallies)
            totals: dict[tuple[str, str, int], tuple[int, float, list[int]]] = {}
            for tally in tallies:
                for key, (requests, seconds, buckets) in list(tally.items()):
                    found = totals.get(key)
                    if found is None:
                        totals[key] = (requests, seconds, list(buckets))
                    else:
                        summed = [a + b for a, b in zip(found[2], buckets, strict=True)]
                        totals[key] = (found[0] + requests, found[1] + seconds, summed)
            for key, (requests, seconds, buckets) in totals.items():
                seen = self._seen.get(key)
                if seen == (requests, seconds, buckets):
                    continue
                self._add(key, requests, seconds, buckets, seen)
                self._seen[key] = (requests, seconds, buckets)

    def _add(
        self,
        key: tuple[str, str, int],
        requests: int,
        seconds: float,
        buckets: list[int],
        seen: tuple[int, float, list[int]] | None,
    ) -> None:
        """Add to the series of ``key`` what its totals grew by since ``seen``."""
        series = self._series.get(key)
        if series is None:
            method, route, status = key
            label = route_label(route)
            series = self._series.keep(
                key,
                (
                    self._counts.labels(method, label, str(status)),
                    self._durations.labels(method, label),
                ),
            )
        counter, histogram = series
        before = seen if seen is not None else (0, 0.0, [0] * len(buckets))
        counter.inc(requests - before[0])
        # The histogram's own values (``observe`` adds one observation at a time): its sum
        # and its per-bucket counts, which its exposition makes cumulative.
        histogram._sum.inc(seconds - before[1])
        for index, count in enumerate(buckets):
            if count > before[2][index]:
                histogram._buckets[index].inc(count - before[2][index])


@dataclass(frozen=True, slots=True)
class Figures:
    """What a site's store, session cache and throttle counted so far (zeros for the parts
    not opened yet)."""

    #: Whether the store has a connection pool (PostgreSQL); the pool's figures then.
    pool: bool = False
    pool_in_use: int = 0
    pool_idle: int = 0
    pool_waiting: int = 0
    pool_timeouts: int = 0
    #: Session-cache look-ups (``svcrest.auth.session_cache``).
    cache_hits: int = 0
    cache_misses: int = 0
    cache_untrusted: int = 0
    #: Whether the session cache's listener listens; None when there is no session cache.
    cache_listening: bool | None = None
    login_refusals: int = 0


class MeteredSite(Protocol):
    """A site whose metrics :func:`keep_metrics` keeps (the App)."""

    request_observer: Callable[[str, str, int, float], None] | None
    batch_observer: Callable[[int], None] | None

    def operating_figures(self) -> Figures:
        """The site's figures now."""
        ...


class OperatingMetrics:
    """The store, session-cache, throttle and batch series of this process: :meth:`sample`
    copies a site's :class:`Figures` into them (a daemon thread does, once a second, from
    :meth:`start`); :meth:`observe_batch` is the site's ``batch_observer``."""

    def __init__(
        self,
        figures: Callable[[], Figures],
        registry: Any = None,
        flush: Callable[[], None] | None = None,
    ) -> None:
        from prometheus_client import REGISTRY, Counter, Gauge, Histogram

        self._figures = figures
        self._registry = REGISTRY if registry is None else registry
        registry = self._registry
        self._connections = Gauge(
            "svcrest_pool_connections",
            "PostgreSQL pool connections, handed out (in_use) or idle, over the live workers.",
            ("state",),
            registry=registry,
            multiprocess_mode="livesum",
        )
        self._waiting = Gauge(
            "svcrest_pool_waiting",
            "Callers waiting for a pooled connection, over the live workers.",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self._timeouts = Counter(
            "svcrest_pool_acquire_timeouts",
            "Waits for a pooled connection that ended in 503 svc_store_busy.",
            registry=registry,
        )
        self._lookups = Counter(
            "svcrest_session_cache_lookups",
            "Session-cache look-ups: hit or miss while trusted, else untrusted.",
            ("result",),
            registry=registry,
        )
        for result in ("hit", "miss", "untrusted"):
            self._lookups.labels(result)
        self._refusals = Counter(
            "svcrest_login_throttle_refusals",
            "Login attempts refused by the throttle (429).",
            registry=registry,
        )
        self._batches = Histogram(
            "svcrest_batch_size",
            "Requests in each batch request.",
            buckets=BATCH_BUCKETS,
            registry=registry,
        )
        self._listening: Any = None  # made with the first session cache seen
        self._seen = Figures()
        self._lock = threading.Lock()
        self._flush = flush

    def observe_batch(self, size: int) -> None:
        """A batch of ``size`` requests was served."""
        self._batches.observe(size)

    def sample(self) -> None:
        """Copy the site's figures now into the series (and the requests answered since the
        last sample, through ``flush``)."""
        if self._flush is not None:
            self._flush()
        with self._lock:
            now, seen = self._figures(), self._seen
            if now.pool:
                self._connections.labels("in_use").set(now.pool_in_use)
                self._connections.labels("idle").set(now.pool_idle)
                self._waiting.set(now.pool_waiting)
            _add(self._timeouts, now.pool_timeouts - seen.pool_timeouts)
            _add(self._lookups.labels("hit"), now.cache_hits - seen.cache_hits)
            _add(self._lookups.labels("miss"), now.cache_misses - seen.cache_misses)
            _add(self._lookups.labels("untrusted"), now.cache_untrusted - seen.cache_untrusted)
            _add(self._refusals, now.login_refusals - seen.login_refusals)
            if now.cache_listening is not None:
                if self._listening is None:
                    from prometheus_client import Gauge

                    self._listening = Gauge(
                        "svcrest_session_cache_listening",
                        "1 when every live worker's session-cache listener listens, else 0.",
                        registry=self._registry,
                        multiprocess_mode="livemin",
                    )
                self._listening.set(1 if now.cache_listening else 0)
            self._seen = now

    def start(self, interval: float = SAMPLE_INTERVAL) -> threading.Thread:
        """Sample now, then every ``interval`` seconds on a daemon thread."""
        self.sample()

        def run() -> None:
            while True:
                time.sleep(interval)
                with contextlib.suppress(Exception):  # a sample never ends the thread
                    self.sample()

        thread = threading.Thread(target=run, name="svcrest-metrics", daemon=True)
        thread.start()
        return thread


def _add(counter: Any, amount: int) -> None:
    if amount > 0:  # a part opened anew (a new store) starts from zero again
        counter.inc(amount)


def keep_metrics(site: MeteredSite) -> bool:
    """With an admin port (``SVCREST_ADMIN_PORT`` and ``PROMETHEUS_MULTIPROC_DIR`` set), make
    ``site`` keep every series of this module; whether it does. Without, nothing is set:
    no request pays anything."""
    observer = observer_from_env()
    if observer is None:
        return False
    site.request_observer = observer
    operating = OperatingMetrics(site.operating_figures, flush=observer.flush)
    site.batch_observer = operating.observe_batch
    operating.start()
    return True


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


#: A live-mode gauge's file of one worker (``gauge_livesum_<pid>.db``).
_LIVE_FILE: Final = re.compile(r"gauge_live\w+?_(\d+)\.db")


def _forget_dead_workers(directory: str) -> None:
    """Drop the live gauges of the workers that exited (a worker that died is replaced by
    the server: its connections and its listener are gone with it)."""
    from prometheus_client.multiprocess import mark_process_dead

    for name in os.listdir(directory):
        match = _LIVE_FILE.fullmatch(name)
        if match is None:
            continue
        pid = int(match.group(1))
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            mark_process_dead(pid, directory)  # type: ignore[no-untyped-call]
        except PermissionError:  # alive, another user's: not one of ours, left alone
            pass


def _collected(directory: str) -> list[Any]:
    """The metric families of every worker's files, added up."""
    from prometheus_client.multiprocess import MultiProcessCollector

    _forget_dead_workers(directory)
    collector = MultiProcessCollector(None, path=directory)  # type: ignore[no-untyped-call]
    return list(collector.collect())  # type: ignore[no-untyped-call]


class _ServerView:
    """The collector of ``/metrics``: the workers' series added up, and the trusted ratio
    of the session caches computed from them."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        families = _collected(self.directory)
        yield from families
        lookups = {
            sample.labels.get("result"): sample.value
            for family in families
            if family.name == "svcrest_session_cache_lookups"
            for sample in family.samples
            if sample.name == "svcrest_session_cache_lookups_total"
        }
        total = sum(lookups.values())
        if total:
            trusted = lookups.get("hit", 0.0) + lookups.get("miss", 0.0)
            yield GaugeMetricFamily(
                "svcrest_session_cache_trusted_ratio",
                "The share of session-cache look-ups made while the cache was trusted.",
                value=trusted / total,
            )


def metrics_text(directory: str) -> tuple[bytes, str]:
    """Every worker's figures added up, in the Prometheus text format, and its media type."""
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

    registry = CollectorRegistry()
    registry.register(_ServerView(directory))
    return generate_latest(registry), CONTENT_TYPE_LATEST


def listener_status(directory: str) -> str:
    """The ``listener`` check of ``/ready``: ``"not listening"`` when a live worker's
    session-cache listener does not listen, else ``"ok"`` (also while no worker has a
    session cache: none relies on a listener then)."""
    for family in _collected(directory):
        listening = family.name == "svcrest_session_cache_listening"
        if listening and any(sample.value < 1 for sample in family.samples):
            return "not listening"
    return "ok"
