"""The request edge: the observers of a site's requests, prepared once.

Every observer reads one record of the request, its context
(:class:`~svcrest.http.context.RequestContext`: id, matched route pattern, user), which
:func:`~svcrest.site.respond.respond` opens:

- **metrics**: the site's ``request_observer`` (``svcrest serve --admin-port`` sets the
  Prometheus series) is told of each request answered: its method (a usual method or
  ``"other"``), matched route pattern, status and seconds;
- **tracing**: an OpenTelemetry SERVER span around each REST request, named and described
  from the context, when the API is installed and a tracer provider is configured
  (:mod:`svcrest.rest.tracing`);
- **the access log**: ``svcrest serve``'s access-log lines name the request from the same
  context (:data:`~svcrest.http.request_id.LOGGED_REQUEST`, set only while the process's
  server writes such lines: :data:`~svcrest.http.request_id.ACCESS_LOG`).

``Server-Timing``, which splits authentication from dispatch, is the REST pipeline's own
(``App(server_timing=True)``).

:func:`request_edge` prepares a site's :class:`RequestEdge` on its first request, and again
after its ``request_observer`` changes: the tracer is looked up then, not per request (PERF:
the look-up cost every request ~860 instructions with tracing off), so a site without
observers pays an attribute read and two ``None`` tests a request. Configure the tracer
provider before the site serves (OpenTelemetry's instrumentation does, at start-up).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter
from typing import Any, Protocol

from svcrest.http.context import RequestContext
from svcrest.http.exchange import USUAL_METHODS
from svcrest.rest import tracing

__all__ = ["QUIET", "EdgeSite", "RequestEdge", "RequestObserver", "request_edge"]


#: ``observe(method, route, status, seconds)``: a request was answered; ``route`` is the
#: matched REST route's pattern ("" for none), ``method`` one of the usual methods or
#: ``"other"`` (SECURITY: bounded labels whatever the client sent).
RequestObserver = Callable[[str, str, int, float], None]


class EdgeSite(Protocol):
    """What the edge reads of a site: its observer and the edge prepared for it."""

    request_observer: RequestObserver | None
    request_edge: RequestEdge | None


@dataclass(frozen=True, slots=True)
class RequestEdge:
    """The observers one site has, prepared once (see the module)."""

    #: Told of each request answered (None: no metrics, and no clock is read).
    observer: RequestObserver | None = None
    #: The tracer of the REST requests' spans (None: no span).
    tracer: Any = None

    def record(self, method: str, ctx: RequestContext, status: int, started: float) -> None:
        """Tell the observer of a request of ``method`` answered ``status``, its clock
        started at ``started`` (``perf_counter``)."""
        if self.observer is not None:
            label = method if method in USUAL_METHODS else "other"
            self.observer(label, ctx.matched_route, status, perf_counter() - started)


#: A site without observers (the edge of every request when nothing is set).
QUIET = RequestEdge()


def request_edge(site: EdgeSite) -> RequestEdge:
    """The edge of ``site``, prepared (and kept on it) on its first request."""
    edge = site.request_edge
    if edge is None:
        observer = site.request_observer
        tracer = tracing.request_tracer()
        edge = QUIET if observer is None and tracer is None else RequestEdge(observer, tracer)
        site.request_edge = edge
    return edge
