"""OpenTelemetry spans of REST requests (the ``svcrest[otel]`` extra; docs/guides/operating.md).

When ``opentelemetry-api`` is installed and a tracer provider is configured (with
``trace.set_tracer_provider``), each REST request is one span of kind SERVER named
``METHOD route-pattern`` (``GET /demo/v1/notes/(?P<id>\\d+)``; ``METHOD`` alone when no route
matched) with the attributes ``http.request.method``, ``http.route``,
``http.response.status_code`` and ``enduser.id``; an internal request of ``_embed`` or of a
batch is a child span (``_embed GET /…``, ``batch POST /…``).

Without the package nothing of it is imported: :func:`request_tracer` is a function that
answers None. With it but no provider configured, the default (proxy) provider is seen and
no span is made.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from svcrest.http.context import RequestContext
    from svcrest.http.exchange import HttpResponse

__all__ = ["child_span", "configured_provider", "request_tracer", "traced"]

_NAME = "svcrest"


def _absent() -> Any:
    return None


def configured_provider(trace: Any) -> Any:
    """The tracer provider ``trace.set_tracer_provider`` configured, or None while none was.

    The one place that reads the OpenTelemetry API's internals. PERF: the API module keeps the
    configured provider in its private ``_TRACER_PROVIDER`` (every 1.x release from 1.20 on,
    tested with the installed one); reading it costs 0.15 µs a request, where the public
    ``get_tracer_provider()`` reads the environment each time (1.6 µs). A release without the
    attribute falls back to the public function, whose default proxy provider means "none".
    """
    try:
        return trace._TRACER_PROVIDER
    except AttributeError:
        provider = trace.get_tracer_provider()
        return None if isinstance(provider, trace.ProxyTracerProvider) else provider


class _Tracers:
    """The tracer of the configured provider, made once per provider.

    PERF: the package's ``trace`` module is imported once, on the first request; then a
    request costs a global's read and an identity check (a tracer is made once)."""

    __slots__ = ("provider", "trace", "tracer")

    def __init__(self) -> None:
        self.trace: Any = None
        self.provider: Any = None
        self.tracer: Any = None

    def current(self) -> Any:
        """The tracer to make spans with, or None (see :data:`request_tracer`)."""
        trace = self.trace
        if trace is None:
            from opentelemetry import trace as imported

            trace = self.trace = imported
        provider = configured_provider(trace)
        if provider is None:
            return None
        if provider is not self.provider:
            self.provider = provider
            proxy = isinstance(provider, trace.ProxyTracerProvider)
            self.tracer = None if proxy else provider.get_tracer(_NAME)
        return self.tracer


_TRACERS = _Tracers()

#: ``request_tracer()``: the tracer to make spans with, or None (no package, no provider).
#: PERF: a bound method (a call through ``__call__`` costs ~300 instructions more).
request_tracer: Any = (
    _TRACERS.current if importlib.util.find_spec("opentelemetry") is not None else _absent
)


async def traced(
    tracer: Any, answer: Awaitable[HttpResponse], method: str, ctx: RequestContext
) -> HttpResponse:
    """``answer`` awaited in a SERVER span named and described once it is known."""
    from opentelemetry.trace import SpanKind

    with tracer.start_as_current_span(method, kind=SpanKind.SERVER) as span:
        response = await answer
        route = ctx.matched_route
        span.update_name(f"{method} {route}" if route else method)
        span.set_attribute("http.request.method", method)
        span.set_attribute("http.route", route)
        span.set_attribute("http.response.status_code", response.status)
        span.set_attribute("enduser.id", str(ctx.user.id))
        return response


def child_span(kind: str, method: str, route: str) -> contextlib.AbstractContextManager[Any]:
    """A child span ``kind METHOD route`` of the request's span, or nothing to do."""
    tracer = request_tracer()
    if tracer is None:
        return contextlib.nullcontext()
    span = tracer.start_as_current_span(f"{kind} {method} {route}")
    return span  # type: ignore[no-any-return]
