"""The admin port (``svcrest serve --admin-port``): ``/live``, ``/ready`` and its checks,
``/metrics``; and the request metrics' label sets, bounded whatever paths clients send."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry

import svcrest
from svcrest import App, Request
from svcrest.serve.admin import AdminServer, store_probe
from svcrest.serve.metrics import RequestMetrics
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "s.db")
    sqlite3.connect(path).close()
    return path


def _admin(probe: Callable[[], None], directory: str) -> Iterator[tuple[AdminServer, str]]:
    admin = AdminServer("127.0.0.1", 0, probe, directory)
    admin.start()
    try:
        yield admin, f"http://127.0.0.1:{admin.httpd.server_address[1]}"
    finally:
        admin.stop()


@pytest.fixture
def admin(db: str, tmp_path: Path) -> Iterator[tuple[AdminServer, str]]:
    metrics = tmp_path / "metrics"  # prometheus_client reads every *.db file in it
    metrics.mkdir()
    yield from _admin(store_probe(db), str(metrics))


def test_live(admin: tuple[AdminServer, str]) -> None:
    _, url = admin
    response = httpx.get(f"{url}/live")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "no-store"


def test_ready_then_draining(admin: tuple[AdminServer, str]) -> None:
    server, url = admin
    response = httpx.get(f"{url}/ready")
    assert (response.status_code, response.json()) == (
        200,
        {"status": "ready", "checks": {"store": "ok", "draining": "no"}},
    )
    server.drain()
    response = httpx.get(f"{url}/ready")
    assert (response.status_code, response.json()) == (
        503,
        {"status": "unavailable", "checks": {"store": "ok", "draining": "yes"}},
    )
    assert httpx.get(f"{url}/live").status_code == 200


def test_a_missing_database_is_not_ready(tmp_path: Path) -> None:
    probe = store_probe(str(tmp_path / "missing" / "s.db"))
    for _, url in _admin(probe, str(tmp_path)):
        response = httpx.get(f"{url}/ready")
        assert (response.status_code, response.json()) == (
            503,
            {"status": "unavailable", "checks": {"store": "error", "draining": "no"}},
        )


def test_a_slow_store_is_not_ready(tmp_path: Path) -> None:
    for _, url in _admin(lambda: time.sleep(1.0), str(tmp_path)):
        started = time.monotonic()
        response = httpx.get(f"{url}/ready")
        assert time.monotonic() - started < 0.9  # answered at the 250 ms deadline
        assert (response.status_code, response.json()) == (
            503,
            {"status": "unavailable", "checks": {"store": "timeout", "draining": "no"}},
        )


def test_other_paths_are_404(admin: tuple[AdminServer, str]) -> None:
    _, url = admin
    response = httpx.get(f"{url}/svc-json/")
    assert (response.status_code, response.json()) == (
        404,
        {"code": "not_found", "message": "No such admin page."},
    )
    assert httpx.post(f"{url}/live").status_code == 501


def test_metrics_of_an_empty_directory(admin: tuple[AdminServer, str]) -> None:
    _, url = admin
    response = httpx.get(f"{url}/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    assert response.text == ""


# -- the request series ------------------------------------------------------------------------


def _site(registry: CollectorRegistry) -> App:
    app = App("http://example.org")

    def item(request: Request) -> dict[str, Any]:
        return {"id": request["id"]}

    app.register_rest_route(
        "t/v1",
        r"/items/(?P<id>\d+)",
        {"methods": "GET", "callback": item, "permission_callback": svcrest.public},
    )
    observer = RequestMetrics(registry)
    app.request_observer = observer
    _OBSERVERS[id(registry)] = observer
    return app


#: Each test registry's observer (its tally is added to the series when the figures are read,
#: as the operating sampler does once a second under a server).
_OBSERVERS: dict[int, RequestMetrics] = {}


def _samples(registry: CollectorRegistry, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    _OBSERVERS[id(registry)].flush()
    return {
        tuple(sorted(sample.labels.items())): sample.value
        for metric in registry.collect()
        for sample in metric.samples
        if sample.name == name
    }


def test_requests_are_counted_by_route_template(client_for: ClientFor) -> None:
    registry = CollectorRegistry()
    client = client_for(_site(registry))
    for number in range(3):
        assert client.get(f"/svc-json/t/v1/items/{number}").status_code == 200
    assert client.get("/svc-json/t/v1/nothing").status_code == 404
    assert client.get("/login").status_code == 200
    assert client.request("BREW", "/svc-json/t/v1/items/1").status_code == 405
    assert _samples(registry, "svcrest_requests_total") == {
        (("method", "GET"), ("route", "/t/v1/items/{id}"), ("status", "200")): 3.0,
        (("method", "GET"), ("route", ""), ("status", "404")): 1.0,
        (("method", "GET"), ("route", ""), ("status", "200")): 1.0,
        (("method", "other"), ("route", "/t/v1/items/{id}"), ("status", "405")): 1.0,
    }
    counts = _samples(registry, "svcrest_request_duration_seconds_count")
    assert counts == {
        (("method", "GET"), ("route", "/t/v1/items/{id}")): 3.0,
        (("method", "GET"), ("route", "")): 2.0,
        (("method", "other"), ("route", "/t/v1/items/{id}")): 1.0,
    }
    buckets = _samples(registry, "svcrest_request_duration_seconds_bucket")
    assert {dict(labels)["le"] for labels in buckets} == {
        "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5",
        "1.0", "2.5", "5.0", "10.0", "+Inf",
    }  # fmt: skip


def test_thousands_of_paths_make_a_bounded_label_set(client_for: ClientFor) -> None:
    registry = CollectorRegistry()
    client = client_for(_site(registry))
    for number in range(1500):
        client.get(f"/svc-json/t/v1/items/{number}")
        client.get(f"/svc-json/t/v1/random-{number}")
        client.get(f"/page-{number}")
        client.request("M" + str(number), f"/svc-json/t/v1/items/{number}")
    series = _samples(registry, "svcrest_requests_total")
    assert sorted(series) == [
        (("method", "GET"), ("route", ""), ("status", "404")),
        (("method", "GET"), ("route", "/t/v1/items/{id}"), ("status", "200")),
        (("method", "other"), ("route", "/t/v1/items/{id}"), ("status", "405")),
    ]
    assert sum(series.values()) == 6000


def _raising_site(registry: CollectorRegistry) -> App:
    app = _site(registry)

    def boom(request: Request) -> dict[str, Any]:
        raise RuntimeError("the handler's own mistake")

    def refused(request: Request) -> dict[str, Any]:
        raise svcrest.RestError("t_refused", "No.", {"status": 409})

    for route, callback in (
        (r"/boom/(?P<id>\d+)", boom),
        (r"/refused/(?P<name>[a-z]+)/(?P<id>\d+)", refused),
        (r"/(?:odd|even)+", boom),  # no URL template describes it: its pattern is the label
    ):
        app.register_rest_route(
            "t/v1",
            route,
            {"methods": "GET", "callback": callback, "permission_callback": svcrest.public},
        )
    return app


def test_a_handler_that_raises_is_counted_under_its_route(client_for: ClientFor) -> None:
    registry = CollectorRegistry()
    client = client_for(_raising_site(registry))
    assert client.get("/svc-json/t/v1/boom/7").status_code == 500
    assert client.get("/svc-json/t/v1/boom/8").status_code == 500
    assert client.get("/svc-json/t/v1/refused/ab/1").status_code == 409
    assert client.get("/svc-json/t/v1/oddeven").status_code == 500
    assert _samples(registry, "svcrest_requests_total") == {
        (("method", "GET"), ("route", "/t/v1/boom/{id}"), ("status", "500")): 2.0,
        (("method", "GET"), ("route", "/t/v1/refused/{name}/{id}"), ("status", "409")): 1.0,
        (("method", "GET"), ("route", "/t/v1/(?:odd|even)+"), ("status", "500")): 1.0,
    }
    assert _samples(registry, "svcrest_request_duration_seconds_count") == {
        (("method", "GET"), ("route", "/t/v1/boom/{id}")): 2.0,
        (("method", "GET"), ("route", "/t/v1/refused/{name}/{id}")): 1.0,
        (("method", "GET"), ("route", "/t/v1/(?:odd|even)+")): 1.0,
    }


# -- the options ---------------------------------------------------------------------------------


def test_the_graceful_timeout_reaches_both_servers() -> None:
    from svcrest.serve.launcher import Limits, ServeConfig, granian_options, uvicorn_options

    config = ServeConfig(
        asgi_factory="m:a", wsgi_factory="m:w", limits=Limits(graceful_timeout=7.4)
    )
    assert granian_options(config)["workers_kill_timeout"] == 7
    assert uvicorn_options(config)["timeout_graceful_shutdown"] == 7


def test_the_admin_port_must_differ_from_the_api_port(
    capsys: pytest.CaptureFixture[str], db: str
) -> None:
    from svcrest.cli import main

    status = main(["serve", "--port", "8123", "--admin-port", "8123", "--db", db])
    assert status == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "svcrest: error: --admin-port must differ from --port (probes never share the API's port)"
    )


def test_the_admin_port_defaults_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from svcrest.cli.parser import build_parser

    monkeypatch.setenv("SVCREST_ADMIN_PORT", "9102")
    assert build_parser().parse_args(["serve"]).admin_port == 9102
    monkeypatch.delenv("SVCREST_ADMIN_PORT")
    assert build_parser().parse_args(["serve"]).admin_port is None


def test_a_flush_adds_the_same_figures_as_one_observation_at_a_time() -> None:
    from prometheus_client import Counter, Histogram

    from svcrest.serve.metrics import BUCKETS

    registry, reference = CollectorRegistry(), CollectorRegistry()
    observer = RequestMetrics(registry)
    counts = Counter("svcrest_requests", "", ("method", "route", "status"), registry=reference)
    durations = Histogram(
        "svcrest_request_duration_seconds", "", ("method", "route"), buckets=BUCKETS,
        registry=reference,
    )  # fmt: skip
    answered = [("GET", "/r", 200, 0.001), ("GET", "/r", 200, 0.0011), ("GET", "/r", 200, 12.0),
                ("POST", "", 404, 0.3), ("GET", "/r", 200, 0.0)]  # fmt: skip
    for method, route, status, seconds in answered:
        observer(method, route, status, seconds)
        counts.labels(method, route, str(status)).inc()
        durations.labels(method, route).observe(seconds)
    assert _all_samples(registry) == {}  # nothing is written before the flush
    observer.flush()
    observer.flush()  # nothing twice
    assert _all_samples(registry) == _all_samples(reference)
    observer("GET", "/r", 200, 0.002)
    observer.flush()
    assert _all_samples(registry)[("svcrest_requests_total", "GET", "/r", "200", "")] == 5.0


def _all_samples(registry: CollectorRegistry) -> dict[tuple[str, ...], float]:
    return {
        (
            sample.name,
            sample.labels.get("method", ""),
            sample.labels.get("route", ""),
            sample.labels.get("status", ""),
            sample.labels.get("le", ""),
        ): sample.value
        for metric in registry.collect()
        for sample in metric.samples
        if not sample.name.endswith("_created")
    }


def test_requests_counted_by_many_threads_all_reach_the_series() -> None:
    import threading

    registry = CollectorRegistry()
    observer = RequestMetrics(registry)

    def answer(number: int) -> None:
        for _ in range(500):
            observer("GET", f"/r{number % 2}", 200, 0.003)

    threads = [threading.Thread(target=answer, args=(number,)) for number in range(6)]
    for thread in threads:
        thread.start()
    observer.flush()  # while they count: the rest comes with the next flush
    for thread in threads:
        thread.join()
    observer.flush()
    samples = _all_samples(registry)
    assert samples[("svcrest_requests_total", "GET", "/r0", "200", "")] == 1500.0
    assert samples[("svcrest_requests_total", "GET", "/r1", "200", "")] == 1500.0
    assert samples[("svcrest_request_duration_seconds_bucket", "GET", "/r0", "", "0.005")] == 1500.0
    assert samples[("svcrest_request_duration_seconds_bucket", "GET", "/r1", "", "0.0025")] == 0.0
    assert samples[("svcrest_request_duration_seconds_sum", "GET", "/r1", "", "")] == (
        pytest.approx(4.5)
    )
