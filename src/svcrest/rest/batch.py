"""``POST {root}batch/v1``: WordPress 5.6's batch requests, plus all-or-nothing ``atomic``.

A batch is ``{"validation": "normal", "requests": [{"method", "path", "headers", "body"},
...]}`` (docs/guides/batch-embed-paging.md). Every request runs through the whole pipeline of
the server (``RestServer.dispatch_async``: ``rest_pre_dispatch``, its own validation, permission and
callback; then :func:`~svcrest.rest.pipeline.finish_hooks`: ``rest_post_dispatch``…) as the
batch's user, and answers in its slot of a 207 ``{"responses": [...]}``.

- A route joins batches with the option ``allow_batch={"v1": True}`` (a handler's own
  ``allow_batch`` wins over the route's, as in WordPress).
- ``"validation": "require-all-validate"``: every request is validated first; when one fails
  none runs.
- ``"validation": "atomic"``: the requests run inside one store transaction, rolled back when
  one answers with a status of 400 or more; the later ones answer 424
  ``rest_batch_aborted``. A route joins atomic batches with
  ``allow_batch={"v1": True, "atomic": True}``, which says that its callbacks write only
  through the site's store, synchronously, on the thread that calls them (a nested
  ``store.transaction()`` there is a savepoint of the batch's). A batch naming any other
  route is refused before anything runs. The transaction comes from the site: an object
  satisfying :class:`BatchTransactions` (the App does).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from svcrest.blocking import inline
from svcrest.http.errors import RestError
from svcrest.http.forms import parse_query
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.rest.embed import EnvelopeResponse
from svcrest.rest.pipeline import envelope_response, finish_hooks
from svcrest.rest.routing.definitions import Handler
from svcrest.rest.schema import validate_value
from svcrest.rest.server import no_route_error, select_handler
from svcrest.rest.tracing import child_span
from svcrest.rest.validation import ArgPlan
from svcrest.syncrun import run_sync

if TYPE_CHECKING:
    from svcrest.rest.routing.table import RouteEntry
    from svcrest.rest.server import RestServer

__all__ = [
    "BATCH_METHODS",
    "BATCH_ROUTE",
    "DEFAULT_MAX_BATCH_SIZE",
    "BatchTransactions",
    "batch_allowed",
    "register_batch_route",
]

BATCH_ROUTE = "/batch/v1"
DEFAULT_MAX_BATCH_SIZE = 25
BATCH_METHODS = ("POST", "PUT", "PATCH", "DELETE")
_MODES = ("require-all-validate", "normal", "atomic")
_MULTI_STATUS = 207


@runtime_checkable
class BatchTransactions(Protocol):
    """A site whose writes can run in one transaction (for ``"validation": "atomic"``)."""

    def batch_transaction(self) -> AbstractContextManager[Any]:
        """A context manager around one write transaction of the site's store: committed
        when the block ends, rolled back when it raises."""
        ...


def batch_allowed(entry: RouteEntry, handler: Handler) -> Any:
    """The ``allow_batch`` value of a handler: its own, else its route's (False)."""
    if "allow_batch" in handler:
        return handler["allow_batch"]
    return entry.options.get("allow_batch", False)


def _joins(value: Any, key: str) -> bool:
    return isinstance(value, Mapping) and bool(value.get(key))


def _not_allowed() -> RestError:
    return RestError(
        "rest_batch_not_allowed",
        "The requested route does not support batch requests.",
        {"status": 400},
    )


def _aborted() -> RestError:
    return RestError(
        "rest_batch_aborted",
        "The request was not run: an earlier request of the atomic batch failed.",
        {"status": 424},
    )


def _not_atomic(route: str, index: int) -> RestError:
    return RestError(
        "rest_batch_not_atomic",
        f"The route {route} cannot join an atomic batch.",
        {"status": 400, "route": route, "request": index},
    )


def _slot(response: Response, request: Request) -> Any:
    """A request's answer in the batch: ``{"body", "status", "headers"}``."""
    return envelope_response(response, request).data


class _Item:
    """One request of a batch: its description, its Request and what it matched."""

    __slots__ = ("arg_plan", "entry", "error", "handler", "request", "spec")

    def __init__(self, spec: Mapping[str, Any], user: Any) -> None:
        self.spec = spec
        self.entry: RouteEntry | None = None
        self.handler: Handler | None = None
        #: The handler's argument step, prepared at registration.
        self.arg_plan: ArgPlan | None = None
        #: The request's own refusal: its path or query string unreadable, its route not
        #: in batches.
        self.error: RestError | None = None
        self.request: Request | None = None
        built = _build_request(spec, user)
        if isinstance(built, RestError):
            self.error = built
        else:
            self.request, self.error = built

    def fresh(self, user: Any) -> Request:
        """A new Request for the run (validation may have changed the first one)."""
        built = _build_request(self.spec, user)
        assert not isinstance(built, RestError)
        return built[0]


def _build_request(
    spec: Mapping[str, Any], user: Any
) -> tuple[Request, RestError | None] | RestError:
    """A Request of one batch item (WordPress: method, path with query, headers, body) and
    the refusal of its query string, or the error of a path that cannot be read."""
    path = spec.get("path")
    try:
        parts = urlsplit(path) if isinstance(path, str) else None
    except ValueError:
        parts = None
    if parts is None or not parts.path.startswith("/"):
        return RestError("parse_path_failed", "Could not parse the path.", {"status": 400})
    # SECURITY: a query string past PHP's limits is refused in the request's slot, as the
    # HTTP layer refuses one, never run with part of its parameters.
    query: dict[str, Any] | None = None
    refused: RestError | None = None
    if parts.query:
        try:
            query = parse_query(parts.query)
        except RestError as error:
            refused = error
    headers: list[tuple[str, str]] = []
    for name, value in (spec.get("headers") or {}).items():
        for line in value if isinstance(value, list) else [value]:
            headers.append((str(name), str(line)))
    body = spec.get("body")
    request = Request(
        str(spec.get("method") or "POST"),
        parts.path,
        query=query,
        body=body if isinstance(body, Mapping) and body else None,
        headers=headers,
    )
    request.user = user
    return request, refused


class BatchController:
    """The ``/batch/v1`` route of one server."""

    def __init__(self, server: RestServer) -> None:
        self.server = server

    def max_batch_size(self) -> int:
        """The ``rest_get_max_batch_size`` filter's answer (25 by default)."""
        return int(
            self.server.hooks.apply_filters("rest_get_max_batch_size", DEFAULT_MAX_BATCH_SIZE)
        )

    def handler(self) -> dict[str, Any]:
        """The route's handler definition (WordPress's arguments, plus ``atomic``)."""
        return {
            "methods": "POST",
            "callback": self.serve,
            # What the OpenAPI document says of the answer: a 207 holding one answer per
            # request (``{body, status, headers}``, or an error or null per request when the
            # batch failed validation).
            "response_status": 207,
            "response_schema": {
                "type": "object",
                "properties": {
                    "failed": {"type": "string", "enum": ["validation", "atomic"]},
                    "responses": {"type": "array", "items": {"type": ["object", "null"]}},
                },
                "required": ["responses"],
            },
            "args": {
                "validation": {"type": "string", "enum": list(_MODES), "default": "normal"},
                "requests": {
                    "required": True,
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "method": {
                                "type": "string",
                                "enum": list(BATCH_METHODS),
                                "default": "POST",
                            },
                            "path": {"type": "string", "required": True},
                            "body": {
                                "type": "object",
                                "properties": {},
                                "additionalProperties": True,
                            },
                            "headers": {
                                "type": "object",
                                "properties": {},
                                "additionalProperties": {
                                    "type": ["string", "array"],
                                    "items": {"type": "string"},
                                },
                            },
                        },
                    },
                    "validate_callback": self._validate_size,
                },
            },
        }

    def _validate_size(self, value: Any, request: Request, key: str) -> RestError | bool:
        """``maxItems`` from the filter at the time of the request."""
        error = validate_value(value, {"type": "array", "maxItems": self.max_batch_size()}, key)
        return True if error is None else error

    # -- matching and validation --------------------------------------------------------------

    def _match(self, item: _Item) -> None:
        """The route and handler of an item (WordPress's ``match_request_to_handler``), and
        its ``rest_batch_not_allowed`` error."""
        request = item.request
        if request is None:
            return
        matches = self.server.table.matches(request.route)
        chosen = select_handler(matches, request.method) if matches else None
        if chosen is None:
            return  # dispatch answers 404 / 405 in the item's slot
        item.entry, prepared, url_params = chosen
        item.handler = prepared.definition
        item.arg_plan = prepared.arg_plan
        request.url_params = dict(url_params)
        if not _joins(batch_allowed(item.entry, item.handler), "v1"):
            item.error = _not_allowed()

    async def _validate(self, item: _Item) -> RestError | None:
        """The item's validation result (WordPress: ``has_valid_params``, then
        ``sanitize_params``); run on its own Request, which the run does not reuse."""
        if item.error is not None:
            return item.error
        request, handler = item.request, item.handler
        if request is None:
            return None
        if handler is None:
            return no_route_error(404)
        return await self.server.checked_params(request, handler, item.arg_plan)

    # -- running --------------------------------------------------------------------------------

    async def _run(self, item: _Item, user: Any) -> Any:
        """One item through the pipeline; its slot of the answer."""
        server = self.server
        if item.request is None or item.error is not None:
            assert item.error is not None
            request = item.request or Request("POST", "")
            response = Response.from_error(item.error)
            if item.entry is not None:  # matched, as WordPress's respond_to_request answers
                response.matched_route = item.entry.route
                response.matched_handler = item.handler
        else:
            request = item.fresh(user)
            with child_span("batch", request.method, request.route):
                response = await server.dispatch_async(request)
        response = await finish_hooks(server.plan(), server, request, response)
        if isinstance(response, EnvelopeResponse):
            # ``?_envelope`` in the request's path: its slot is its one envelope (WordPress
            # envelopes only the outer answer), with its own status, which an atomic batch
            # reads to roll back.
            response = response.enveloped
        return _slot(response, request)

    async def serve(self, batch: Request) -> Response:
        """Run several requests in one: each one's answer, in the order sent (WordPress's
        batch/v1)."""
        mode = batch.get_param("validation") or "normal"
        items = [_Item(spec, batch.user) for spec in batch.get_param("requests") or []]
        # The site's ``batch_observer`` (the admin port's metrics) is told each batch's size.
        observe = getattr(self.server.app, "batch_observer", None)
        if observe is not None:
            observe(len(items))
        for item in items:
            self._match(item)
        if mode == "atomic":
            return await self._serve_atomic(items, batch.user)
        if mode == "require-all-validate":
            results = [await self._validate(item) for item in items]
            if any(result is not None for result in results):
                responses = [
                    None if error is None else _slot(Response.from_error(error), batch)
                    for error in results
                ]
                return Response({"failed": "validation", "responses": responses}, _MULTI_STATUS)
        responses = [await self._run(item, batch.user) for item in items]
        return Response({"responses": responses}, _MULTI_STATUS)

    def _transaction_factory(self) -> Callable[[], AbstractContextManager[Any]] | None:
        site = self.server.app
        return site.batch_transaction if isinstance(site, BatchTransactions) else None

    async def _serve_atomic(self, items: list[_Item], user: Any) -> Response:
        for index, item in enumerate(items):
            if item.entry is None or item.handler is None:
                route = (
                    item.request.route if item.request is not None else str(item.spec.get("path"))
                )
                return Response.from_error(_not_atomic(route, index))
            if not _joins(batch_allowed(item.entry, item.handler), "atomic"):
                return Response.from_error(_not_atomic(item.entry.route, index))
        factory = self._transaction_factory()
        if factory is None:
            return Response.from_error(
                RestError(
                    "rest_batch_atomic_unsupported",
                    "This site cannot run atomic batches.",
                    {"status": 400},
                )
            )
        # The store's transaction belongs to the thread that opens it: the whole batch runs
        # in a worker thread on its own event loop, so no other request of this process
        # runs inside it, and a blocked store delays only this request.
        responses, failed = await asyncio.to_thread(self._run_in_transaction, factory, items, user)
        data: dict[str, Any] = {"failed": "atomic"} if failed else {}
        data["responses"] = responses
        return Response(data, _MULTI_STATUS)

    def _run_here(self, item: _Item, user: Any) -> Any:
        """``_run`` on this (worker) thread's own event loop."""
        return run_sync(lambda: self._run(item, user))

    def _run_in_transaction(
        self,
        factory: Callable[[], AbstractContextManager[Any]],
        items: list[_Item],
        user: Any,
    ) -> tuple[list[Any], bool]:
        responses: list[Any] = []
        try:
            # "blocking" callbacks run here too: the transaction belongs to this thread.
            with factory(), inline():
                for index, item in enumerate(items):
                    slot = self._run_here(item, user)
                    responses.append(slot)
                    if slot["status"] >= 400:
                        raise _RollBack(index)
        except _RollBack as rolled_back:
            aborted = Response.from_error(_aborted())
            for _ in items[rolled_back.index + 1 :]:
                responses.append(_slot(aborted, Request()))
            return responses, True
        return responses, False


class _RollBack(Exception):
    """Raised inside the transaction to roll it back after request ``index`` failed."""

    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index


def register_batch_route(server: RestServer) -> None:
    """Register ``/batch/v1`` on ``server`` (on ``rest_api_init``)."""
    options = server.hooks.apply_filters("svc_batch_route_options", {})
    server.register_route(
        "", BATCH_ROUTE, {0: BatchController(server).handler(), **dict(options or {})}
    )
