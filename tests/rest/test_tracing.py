"""OpenTelemetry: one SERVER span per REST request named ``METHOD route-pattern`` with its
attributes, child spans for ``_embed`` and batch items (the SDK's in-memory exporter)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

import svcrest
import svcrest.rest.tracing
from svcrest import App, Request
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """A provider of the test's own (the global one can be set once per process)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("svcrest")
    # Read when a site's request edge is prepared (its first request: each test's App).
    monkeypatch.setattr(svcrest.rest.tracing, "request_tracer", lambda: tracer)
    yield exporter
    provider.shutdown()


def _app() -> App:
    app = App("http://example.org")

    def item(request: Request) -> dict[str, Any]:
        return {"id": int(request["id"]), "_links": {}}

    def items(request: Request) -> svcrest.Response:
        response = svcrest.Response({"id": 1})
        response.add_link("author", "http://example.org/svc-json/t/v1/items/7", embeddable=True)
        return response

    public = svcrest.public
    app.register_rest_route(
        "t/v1",
        r"/items/(?P<id>\d+)",
        {"methods": "GET", "callback": item, "permission_callback": public},
    )
    app.register_rest_route(
        "t/v1", "/items", {"methods": "GET", "callback": items, "permission_callback": public}
    )
    app.register_rest_route(
        "t/v1",
        "/notes",
        {
            "methods": "POST",
            "callback": items,
            "permission_callback": public,
            "allow_batch": {"v1": True},
        },
    )
    return app


def test_one_server_span_per_request(client_for: ClientFor, spans: InMemorySpanExporter) -> None:
    client = client_for(_app())
    assert client.get("/svc-json/t/v1/items/3").status_code == 200
    assert client.get("/svc-json/t/v1/none").status_code == 404
    first, second = spans.get_finished_spans()
    assert first.name == r"GET /t/v1/items/(?P<id>\d+)"
    assert first.kind == SpanKind.SERVER
    assert dict(first.attributes or {}) == {
        "http.request.method": "GET",
        "http.route": r"/t/v1/items/(?P<id>\d+)",
        "http.response.status_code": 200,
        "enduser.id": "0",
    }
    assert second.name == "GET"
    assert dict(second.attributes or {})["http.response.status_code"] == 404


def test_embed_makes_child_spans(client_for: ClientFor, spans: InMemorySpanExporter) -> None:
    client = client_for(_app())
    response = client.get("/svc-json/t/v1/items?_embed")
    assert response.status_code == 200
    assert response.json()["_embedded"]["author"] == [{"id": 7, "_links": {}}]
    child, parent = spans.get_finished_spans()
    assert parent.name == "GET /t/v1/items"
    assert child.name == "_embed GET /t/v1/items/7"
    assert child.parent is not None and child.parent.span_id == parent.context.span_id


def test_batch_items_make_child_spans(client_for: ClientFor, spans: InMemorySpanExporter) -> None:
    client = client_for(_app())
    body = {"requests": [{"method": "POST", "path": "/t/v1/notes", "body": {}}]}
    response = client.post("/svc-json/batch/v1", json=body)
    assert response.status_code == 207, response.text
    names = [span.name for span in spans.get_finished_spans()]
    assert names == ["batch POST /t/v1/notes", "POST /batch/v1"]


def test_no_provider_no_tracer() -> None:
    assert svcrest.rest.tracing.request_tracer() is None  # the default proxy provider


def test_configured_provider_reads_what_set_tracer_provider_set() -> None:
    """The installed API keeps the provider where the guarded read looks: None before any
    is set, then exactly the one set (run in a fresh interpreter: the global is set once)."""
    import subprocess
    import sys

    program = (
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from svcrest.rest.tracing import configured_provider, request_tracer\n"
        "assert configured_provider(trace) is None\n"
        "assert request_tracer() is None\n"
        "provider = TracerProvider()\n"
        "trace.set_tracer_provider(provider)\n"
        "assert configured_provider(trace) is provider\n"
        "assert request_tracer() is provider.get_tracer('svcrest')\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "ok\n", "")


class _ApiWithoutPrivateName:
    """An OpenTelemetry API module as a release without ``_TRACER_PROVIDER`` would be."""

    class ProxyTracerProvider:
        pass

    def __init__(self, provider: Any) -> None:
        self.provider = provider

    def get_tracer_provider(self) -> Any:
        return self.provider


def test_configured_provider_without_the_private_name_asks_the_public_function() -> None:
    configured = TracerProvider()
    unset = _ApiWithoutPrivateName.ProxyTracerProvider()
    guarded = svcrest.rest.tracing.configured_provider
    assert guarded(_ApiWithoutPrivateName(configured)) is configured
    assert guarded(_ApiWithoutPrivateName(unset)) is None
