"""The admin port's store, session-cache, throttle and batch series: the counters the parts
keep, their samples in each worker, and one view of every worker through
``prometheus_client``'s multiprocess files (``/metrics``, and ``/ready``'s listener check)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, values

import svcrest
from svcrest import App, Request
from svcrest.auth.throttle import MAX_FAILURES, WINDOW, LoginThrottle
from svcrest.serve.metrics import (
    ENV_METRICS_DIR,
    Figures,
    OperatingMetrics,
    keep_metrics,
    listener_status,
    make_metrics_dir,
    metrics_text,
    remove_metrics_dir,
    remove_stale_metrics_dirs,
)
from svcrest.store.errors import StoreBusyError
from svcrest.store.sqlite import SqliteStore
from tests.auth.test_session_cache import make_cache, session, trusted
from tests.pg import PostgresServer


def _samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for metric in registry.collect()
        for sample in metric.samples
        if sample.name.startswith("svcrest_") and not sample.name.endswith("_created")
    }


class Figured:
    """A site's figures, changed by the test."""

    def __init__(self) -> None:
        self.now = Figures()

    def __call__(self) -> Figures:
        return self.now


def test_a_sample_copies_the_figures_into_the_series() -> None:
    registry, figured = CollectorRegistry(), Figured()
    metrics = OperatingMetrics(figured, registry)
    metrics.sample()
    empty: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {
        ("svcrest_pool_acquire_timeouts_total", ()): 0.0,
        ("svcrest_session_cache_lookups_total", (("result", "hit"),)): 0.0,
        ("svcrest_session_cache_lookups_total", (("result", "miss"),)): 0.0,
        ("svcrest_session_cache_lookups_total", (("result", "untrusted"),)): 0.0,
        ("svcrest_login_throttle_refusals_total", ()): 0.0,
        ("svcrest_pool_waiting", ()): 0.0,
        ("svcrest_batch_size_count", ()): 0.0,
        ("svcrest_batch_size_sum", ()): 0.0,
        **{
            ("svcrest_batch_size_bucket", (("le", le),)): 0.0
            for le in ("1.0", "2.0", "5.0", "10.0", "25.0", "50.0", "100.0", "+Inf")
        },
    }
    assert _samples(registry) == empty
    figured.now = Figures(
        pool=True, pool_in_use=3, pool_idle=2, pool_waiting=1, pool_timeouts=4,
        cache_hits=10, cache_misses=5, cache_untrusted=2, cache_listening=True,
        login_refusals=7,
    )  # fmt: skip
    metrics.sample()
    figured.now = Figures(
        pool=True, pool_in_use=1, pool_idle=4, pool_waiting=0, pool_timeouts=6,
        cache_hits=12, cache_misses=5, cache_untrusted=3, cache_listening=False,
        login_refusals=7,
    )  # fmt: skip
    metrics.sample()
    metrics.observe_batch(3)
    metrics.observe_batch(25)
    got = _samples(registry)
    assert {name: value for name, value in got.items() if "batch" not in name[0]} == {
        ("svcrest_pool_connections", (("state", "in_use"),)): 1.0,
        ("svcrest_pool_connections", (("state", "idle"),)): 4.0,
        ("svcrest_pool_waiting", ()): 0.0,
        ("svcrest_pool_acquire_timeouts_total", ()): 6.0,
        ("svcrest_session_cache_lookups_total", (("result", "hit"),)): 12.0,
        ("svcrest_session_cache_lookups_total", (("result", "miss"),)): 5.0,
        ("svcrest_session_cache_lookups_total", (("result", "untrusted"),)): 3.0,
        ("svcrest_session_cache_listening", ()): 0.0,
        ("svcrest_login_throttle_refusals_total", ()): 7.0,
    }
    bucket = "svcrest_batch_size_bucket"
    batches = {name[1]: value for name, value in got.items() if name[0] == bucket}
    assert batches == {
        (("le", "1.0"),): 0.0, (("le", "2.0"),): 0.0, (("le", "5.0"),): 1.0,
        (("le", "10.0"),): 1.0, (("le", "25.0"),): 2.0, (("le", "50.0"),): 2.0,
        (("le", "100.0"),): 2.0, (("le", "+Inf"),): 2.0,
    }  # fmt: skip
    assert got[("svcrest_batch_size_sum", ())] == 28.0


def test_metrics_are_off_without_an_admin_port(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SVCREST_ADMIN_PORT", raising=False)
    app = App("http://example.org")
    assert keep_metrics(app) is False
    assert (app.request_observer, app.batch_observer) == (None, None)


# -- the counters the parts keep -----------------------------------------------------------------


def test_the_session_cache_counts_hits_misses_and_untrusted_lookups() -> None:
    cache, listener, _clock = make_cache()
    cache.lookup(("alice", "h1"))  # before any heartbeat: untrusted
    trusted(cache)  # one more look-up, trusted: a miss
    _found, ticket = cache.lookup(("alice", "h1"))  # a miss
    cache.put(("alice", "h1"), ticket, session(1))
    assert cache.lookup(("alice", "h1"))[0] == session(1)  # a hit
    assert cache.lookup(("alice", "h1"))[0] == session(1)  # a hit
    listener.broken = True
    assert cache.lookup(("alice", "h1"))[0] is None  # not listening: untrusted
    assert (cache.hits, cache.misses, cache.untrusted) == (2, 2, 2)
    assert cache.listening is False


def test_the_throttle_counts_its_refusals(tmp_path: Path) -> None:
    throttle = LoginThrottle(SqliteStore(str(tmp_path / "t.db")), clock=lambda: 1000.0)
    for _ in range(MAX_FAILURES):
        assert throttle.reserve("alice", "10.0.0.1").retry_after is None
    assert throttle.refusals == 0
    assert throttle.reserve("alice", "10.0.0.1").retry_after is not None
    assert throttle.attempt("alice", "10.0.0.1", lambda: "never") == (None, WINDOW)
    assert throttle.refusals == 2


def test_each_batch_size_is_observed(client_for: Any) -> None:
    app = App("http://example.org")

    def item(request: Request) -> dict[str, Any]:
        return {"id": request["id"]}

    app.register_rest_route(
        "t/v1",
        r"/items/(?P<id>\d+)",
        {
            "methods": "POST",
            "callback": item,
            "permission_callback": svcrest.public,
            "allow_batch": {"v1": True},
        },
    )
    sizes: list[int] = []
    app.batch_observer = sizes.append
    client = client_for(app)
    for count in (3, 1):
        requests = [{"path": f"/t/v1/items/{n}"} for n in range(count)]
        answer = client.post("/svc-json/batch/v1", json={"requests": requests})
        assert answer.status_code == 207
    assert sizes == [3, 1]


@pytest.fixture
def pg_url(postgres: PostgresServer) -> str:
    return postgres.new_schema() + "&pool_size=1&acquire_timeout=0.2"


def test_the_pool_figures_of_a_postgresql_site(pg_url: str) -> None:
    app = App("http://example.org", store=pg_url)
    assert app.operating_figures() == Figures()  # nothing opened yet
    store = app.store
    assert app.operating_figures() == Figures(pool=True, pool_idle=1)
    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with store.read():
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(10)
    assert app.operating_figures() == Figures(pool=True, pool_in_use=1)
    waiter_done = threading.Event()

    def wait() -> None:
        try:
            with store.read():
                pass
        except StoreBusyError:
            waiter_done.set()

    waiter = threading.Thread(target=wait)
    waiter.start()
    deadline = time.monotonic() + 5
    while app.operating_figures().pool_waiting != 1:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    assert app.operating_figures() == Figures(pool=True, pool_in_use=1, pool_waiting=1)
    waiter.join(10)
    assert waiter_done.is_set()
    assert app.operating_figures() == Figures(pool=True, pool_in_use=1, pool_timeouts=1)
    release.set()
    holder.join(10)
    assert app.operating_figures() == Figures(pool=True, pool_idle=1, pool_timeouts=1)
    store.close()


# -- one view of every worker ----------------------------------------------------------------------


@pytest.fixture
def multiprocess(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A ``PROMETHEUS_MULTIPROC_DIR`` for metrics made in this process (as in a worker)."""
    directory = tmp_path / "metrics"
    directory.mkdir()
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(directory))
    yield str(directory)


def _worker(monkeypatch: pytest.MonkeyPatch, pid: int, figures: Figures) -> OperatingMetrics:
    """The metrics of a worker whose process id is ``pid`` (its own files), sampled once."""
    value_class = values.MultiProcessValue(lambda: pid)  # type: ignore[no-untyped-call]
    monkeypatch.setattr(values, "ValueClass", value_class)
    metrics = OperatingMetrics(lambda: figures, CollectorRegistry())
    metrics.sample()
    return metrics


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_metrics_add_up_the_live_workers(
    multiprocess: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = Figures(
        pool=True, pool_in_use=2, pool_idle=3, pool_waiting=1, pool_timeouts=1,
        cache_hits=6, cache_misses=2, cache_untrusted=0, cache_listening=True,
        login_refusals=1,
    )  # fmt: skip
    second = Figures(
        pool=True, pool_in_use=1, pool_idle=0, pool_waiting=0, pool_timeouts=2,
        cache_hits=0, cache_misses=1, cache_untrusted=1, cache_listening=True,
        login_refusals=0,
    )  # fmt: skip
    _worker(monkeypatch, os.getpid(), first).observe_batch(4)
    _worker(monkeypatch, os.getppid(), second)
    gone = Figures(pool=True, pool_in_use=9, pool_idle=9, cache_listening=False)
    _worker(monkeypatch, _dead_pid(), gone)  # a worker that exited: its gauges are dropped
    lines = metrics_text(multiprocess)[0].decode().splitlines()
    expected = [
        'svcrest_pool_connections{state="in_use"} 3.0',
        'svcrest_pool_connections{state="idle"} 3.0',
        "svcrest_pool_waiting 1.0",
        "svcrest_pool_acquire_timeouts_total 3.0",
        'svcrest_session_cache_lookups_total{result="hit"} 6.0',
        'svcrest_session_cache_lookups_total{result="miss"} 3.0',
        'svcrest_session_cache_lookups_total{result="untrusted"} 1.0',
        "svcrest_session_cache_listening 1.0",
        "svcrest_session_cache_trusted_ratio 0.9",
        "svcrest_login_throttle_refusals_total 1.0",
        'svcrest_batch_size_bucket{le="5.0"} 1.0',
        "svcrest_batch_size_count 1.0",
    ]
    for line in expected:
        assert line in lines, (line, lines)
    assert listener_status(multiprocess) == "ok"


def test_a_worker_not_listening_makes_the_listener_check_fail(
    multiprocess: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert listener_status(multiprocess) == "ok"  # no worker has a session cache yet
    _worker(monkeypatch, os.getpid(), Figures(cache_listening=True))
    assert listener_status(multiprocess) == "ok"
    _worker(monkeypatch, os.getppid(), Figures(cache_listening=False))
    assert listener_status(multiprocess) == "not listening"
    lines = metrics_text(multiprocess)[0].decode().splitlines()
    assert "svcrest_session_cache_listening 0.0" in lines
    assert not any(line.startswith("svcrest_session_cache_trusted_ratio") for line in lines)


def test_a_new_server_removes_the_metrics_dirs_of_dead_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SIGKILLed server left its figures' directory in the temp folder for ever."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    # Set first, so that monkeypatch records it and removes what make_metrics_dir sets.
    monkeypatch.setenv(ENV_METRICS_DIR, "")
    monkeypatch.delenv(ENV_METRICS_DIR)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead_pid = int(gone.stdout)
    dead = tmp_path / f"svcrest-metrics-{dead_pid}-abc123"
    dead.mkdir()
    (dead / "counter_1.db").write_bytes(b"x")
    live = tmp_path / f"svcrest-metrics-{os.getppid()}-def456"  # the test runner's parent
    live.mkdir()
    unnamed = tmp_path / "svcrest-metrics-old_format"  # no owner: never guessed at
    unnamed.mkdir()
    not_a_dir = tmp_path / f"svcrest-metrics-{dead_pid}-file"
    not_a_dir.write_bytes(b"")
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / f"svcrest-metrics-{dead_pid}-link"
    link.symlink_to(target)
    other = tmp_path / f"other-{dead_pid}-abc"
    other.mkdir()
    made = make_metrics_dir()
    try:
        assert not dead.exists()
        assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
            [
                live.name,
                unnamed.name,
                not_a_dir.name,
                target.name,
                link.name,
                other.name,
                Path(made).name,
            ]
        )
        assert Path(made).name.startswith(f"svcrest-metrics-{os.getpid()}-")
        # A second server of this process (or a look now) keeps every live one.
        assert remove_stale_metrics_dirs(str(tmp_path)) == []
    finally:
        remove_metrics_dir(made)
