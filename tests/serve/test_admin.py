"""The admin port (``svcrest serve --admin-port``): ``/live``, ``/ready`` and its checks,
``/metrics``; and the request metrics' label sets, bounded whatever paths clients send."""

from __future__ import annotations

import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry

import svcrest
from svcrest import App, Request
from svcrest.serve import admin as admin_module
from svcrest.serve.admin import BACKLOG, AdminServer, store_probe
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
        yield admin, f"http://127.0.0.1:{admin.server_address[1]}"
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


def test_a_drain_shows_on_ready_requests_sharing_checks_begun_before_it(tmp_path: Path) -> None:
    """Ready checks under way when the shutdown begins: the requests sharing them answer 503
    with ``"draining": "yes"`` all the same."""
    first: list[httpx.Response] = []

    def ask(url: str) -> None:
        first.append(httpx.get(f"{url}/ready"))

    for server, url in _admin(lambda: time.sleep(0.2), str(tmp_path)):
        asking = threading.Thread(target=ask, args=(url,))
        asking.start()
        time.sleep(0.1)  # the checks are running
        server.drain()
        response = httpx.get(f"{url}/ready")
        asking.join(5)
        assert (response.status_code, response.json()) == (
            503,
            {"status": "unavailable", "checks": {"store": "ok", "draining": "yes"}},
        )
        assert first[0].status_code == 503


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


# -- what a client may hold ----------------------------------------------------------------------


def _held(port: int, count: int, sent: bytes = b"") -> list[socket.socket]:
    """``count`` connections to the admin port that sent ``sent`` and wait."""
    held = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        if sent:
            sock.sendall(sent)
        held.append(sock)
    return held


def _closed_by_server(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(1024) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_held_connections_do_not_stop_live(tmp_path: Path) -> None:
    """200 connections sending nothing: /live and /ready are still answered within 1 s."""
    for server, url in _admin(lambda: None, str(tmp_path)):
        held = _held(server.server_address[1], 200)
        try:
            for path in ("/live", "/ready"):
                started = time.monotonic()
                response = httpx.get(f"{url}{path}", timeout=5)
                assert response.status_code == 200
                assert time.monotonic() - started < 1.0
        finally:
            for sock in held:
                sock.close()


def test_held_metrics_requests_do_not_stop_the_probes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """50 /metrics requests whose figures take 2 s to gather: /live and /ready are answered
    meanwhile, and the 50 share one gathering."""
    gathered = []

    def slow_metrics(directory: str) -> tuple[bytes, str]:
        gathered.append(directory)
        time.sleep(2.0)
        return b"svcrest_up 1\n", "text/plain; version=0.0.4"

    monkeypatch.setattr(admin_module, "metrics_text", slow_metrics)
    for server, url in _admin(lambda: None, str(tmp_path)):
        held = _held(server.server_address[1], 50, b"GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n")
        try:
            time.sleep(0.2)
            for path in ("/live", "/ready"):
                started = time.monotonic()
                assert httpx.get(f"{url}{path}", timeout=5).status_code == 200
                assert time.monotonic() - started < 1.0
            answers = []
            for sock in held:
                sock.settimeout(5)
                data = b""
                while chunk := sock.recv(65536):
                    data += chunk
                answers.append(data)
        finally:
            for sock in held:
                sock.close()
    assert all(answer.startswith(b"HTTP/1.1 200 OK\r\n") for answer in answers)
    assert all(answer.endswith(b"\r\n\r\nsvcrest_up 1\n") for answer in answers)
    assert len(gathered) == 1


def test_a_silent_client_is_closed_after_the_read_timeout(tmp_path: Path) -> None:
    admin = AdminServer("127.0.0.1", 0, lambda: None, str(tmp_path), read_timeout=0.5)
    admin.start()
    try:
        [silent] = _held(admin.server_address[1], 1)
        [partial] = _held(admin.server_address[1], 1, b"GET /live HTTP/1.1\r\n")
        try:
            started = time.monotonic()
            assert _closed_by_server(silent, 2.0)
            assert _closed_by_server(partial, 2.0)
            assert 0.4 <= time.monotonic() - started < 1.5
        finally:
            silent.close()
            partial.close()
    finally:
        admin.stop()


def test_past_the_bound_the_oldest_silent_connection_is_closed(tmp_path: Path) -> None:
    admin = AdminServer("127.0.0.1", 0, lambda: None, str(tmp_path), max_connections=10)
    admin.start()
    url = f"http://127.0.0.1:{admin.server_address[1]}"
    try:
        held = _held(admin.server_address[1], 10)
        try:
            time.sleep(0.2)
            assert httpx.get(f"{url}/live", timeout=5).status_code == 200
            # The probe took the place of the oldest silent connection.
            assert _closed_by_server(held[0], 1.0)
            assert not _closed_by_server(held[-1], 0.2)
            assert len(admin._open) <= 10
        finally:
            for sock in held:
                sock.close()
    finally:
        admin.stop()


def test_stop_is_prompt_with_held_connections(tmp_path: Path) -> None:
    admin = AdminServer("127.0.0.1", 0, lambda: None, str(tmp_path))
    admin.start()
    held = _held(admin.server_address[1], 200)
    try:
        started = time.monotonic()
        admin.stop()
        assert time.monotonic() - started < 1.0
        assert not admin.thread.is_alive()
        assert _closed_by_server(held[0], 1.0)
    finally:
        for sock in held:
            sock.close()


def test_head_has_no_body_and_the_backlog_is_large(admin: tuple[AdminServer, str]) -> None:
    _, url = admin
    response = httpx.head(f"{url}/live")
    assert (response.status_code, response.content) == (200, b"")
    assert response.headers["content-length"] == str(len(b'{"status": "ok"}'))
    assert BACKLOG >= 1024


def test_probes_answer_while_metrics_are_gathered_from_many_threads(tmp_path: Path) -> None:
    """Many clients at once, each with a whole request: every one is answered."""
    statuses: list[int] = []

    def probe(url: str) -> None:
        for path in ("/live", "/ready", "/metrics"):
            statuses.append(httpx.get(f"{url}{path}", timeout=10).status_code)

    for _, url in _admin(lambda: None, str(tmp_path)):
        threads = [threading.Thread(target=probe, args=(url,)) for _ in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(15)
        assert statuses == [200] * 60


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


def test_the_admin_host_is_loopback_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    from svcrest.cli.parser import build_parser

    monkeypatch.delenv("SVCREST_ADMIN_HOST", raising=False)
    args = build_parser().parse_args(["serve", "--host", "0.0.0.0", "--admin-port", "9102"])
    assert (args.host, args.admin_host) == ("0.0.0.0", "127.0.0.1")
    args = build_parser().parse_args(["serve", "--admin-host", "0.0.0.0"])
    assert args.admin_host == "0.0.0.0"
    monkeypatch.setenv("SVCREST_ADMIN_HOST", "::1")
    assert build_parser().parse_args(["serve"]).admin_host == "::1"


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
