"""RestProxy and AsyncRestProxy: a client proxy with the URL rules of Ext JS's REST proxy, over
httpx.

The URL and method rules and the request sequences live in `BaseRestProxy`
(`svcrest.client.base`, no I/O); `RestProxy` drives them with an `httpx.Client` and
`AsyncRestProxy` with an `httpx.AsyncClient`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from types import TracebackType
from typing import Any, TypeVar

import httpx

from svcrest.client.base import (
    DEFAULT_ACTION_METHODS,
    DEFAULT_TIMEOUT,
    GROUP_DIRECTION_PARAM,
    INVALID_NONCE_CODE,
    NONCE_HEADER,
    TIMEOUT_CODE,
    BaseRestProxy,
    ExceptionHook,
    Exchange,
    error_from_response,
)
from svcrest.client.changes import (
    DEFAULT_MAX_DELAY,
    DEFAULT_MAX_FAILURES,
    DEFAULT_WAIT,
    AsyncChangeStream,
    ChangeStream,
)
from svcrest.client.errors import ProxyError
from svcrest.client.operation import Operation
from svcrest.client.results import PageTrail, ResultSet

__all__ = [
    "DEFAULT_ACTION_METHODS",
    "DEFAULT_TIMEOUT",
    "GROUP_DIRECTION_PARAM",
    "INVALID_NONCE_CODE",
    "NONCE_HEADER",
    "TIMEOUT_CODE",
    "AsyncRestProxy",
    "BaseRestProxy",
    "ExceptionHook",
    "RestProxy",
    "error_from_response",
]

T = TypeVar("T")


class RestProxy(BaseRestProxy[httpx.Client]):
    """The client proxy over an `httpx.Client`: create/read/update/destroy mapped onto
    POST/GET/PUT/DELETE and URLs with the option names and rules of Ext JS's
    ``Ext.data.proxy.Rest``: Ext 4.2's id of a record being created, Ext 5's percent-encoded
    ids, dropped id parameter and filter operators, and svcrest's own handling of a URL with
    a query string or fragment (the Clients guide's "Which Ext JS" lists every rule).

    ``url`` is the collection URL (absolute, or relative to the ``client``'s ``base_url``).
    ``append_id`` puts a valid id into the path; ``format`` adds ``.<format>``;
    ``batch_actions`` sends all the records of one action in one request; ``action_methods``
    merges over `DEFAULT_ACTION_METHODS`; ``no_cache`` adds ``<cache_string>=<clock()>``;
    the ``*_param`` options name the query parameters (None: not sent); ``simple_sort_mode``
    and ``simple_group_mode`` send plain names instead of JSON; ``id_param`` names the id query
    parameter and ``id_property`` the records' id key or attribute; ``extra_params`` go into
    every URL; ``clock()`` returns milliseconds since the epoch; ``client`` is the httpx client
    (when not given, one is created on first use and closed by `close`; cookies are kept in
    it).

    Each write carries a fresh ``Idempotency-Key`` (``idempotency_keys=False``: none); a 429
    or 503 answer, or a broken connection of a read or keyed write, is retried with the same
    request up to ``max_retries`` times (default 2), after ``Retry-After`` or a backoff,
    jittered and at most ``max_retry_delay`` seconds (see `BaseRestProxy.retry_delay`).

    With ``conditional``, the proxy remembers the ``ETag`` of each record it reads
    (``etags``) and sends it as ``If-Match`` on update and destroy: a record changed
    meanwhile raises `ProxyError` ``rest_precondition_failed`` (412) instead of being
    overwritten.
    """

    def _new_client(self) -> httpx.Client:
        return httpx.Client()

    def _run(self, exchange: Exchange[T]) -> T:
        try:
            request = next(exchange)
            while True:
                try:
                    response = self._deliver(self._sendable(request))
                except httpx.TimeoutException as exc:
                    request = exchange.throw(self.timeout_error(exc))
                else:
                    request = exchange.send(response)
        except StopIteration as stop:
            result: T = stop.value
            return result

    def _deliver(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``, again after a 429 or 503 or a broken connection as
        `retry_delay` decides."""
        attempt = 0
        while True:
            try:
                response = self.client.send(request)
            except httpx.TimeoutException:
                raise
            except httpx.TransportError:
                delay = self.retry_delay(request, attempt, None)
                if delay is None:
                    raise
            else:
                delay = self.retry_delay(request, attempt, response)
                if delay is None:
                    return response
                response.close()
            time.sleep(delay)
            attempt += 1

    def send(self, operation: Operation) -> Any:
        """Send ``operation`` (one request, with the nonce retry) and return the decoded JSON.

        An error response raises `ProxyError`; an empty body gives None.
        """
        return self._run(self._exchange(operation))

    def create(self, *records: Any) -> list[Any]:
        """POST ``records`` (one request each, or one for all with ``batch_actions``).

        Returns the saved records as the server returned them.
        """
        return self._run(self._save("create", records))

    def read(self, id: Any = None, **params: Any) -> Any:
        """GET the collection, or the record ``id``, with ``params`` in the query string."""
        return self.send(Operation("read", id=id, params=params))

    def read_result(self, id: Any = None, **params: Any) -> ResultSet:
        """`read`, as a `ResultSet`: the records, the paging headers and the response."""
        return self._run(self._read_page(Operation("read", id=id, params=params)))

    def iter_pages(self, **params: Any) -> Iterator[ResultSet]:
        """Read the collection with ``params``, then each page the ``Link rel="next"`` header
        of the last one names, until a page has none; yields a `ResultSet` per page. A
        ``next`` link back to a page already read raises `ProxyError` ``paging_loop``."""
        operation = Operation("read", params=params)
        trail = PageTrail()
        page = self._run(self._read_page(operation))
        yield page
        while (url := self._next_url(trail, page, operation)) is not None:
            page = self._run(self._read_page(operation, url))
            yield page

    def update(self, *records: Any) -> list[Any]:
        """PUT ``records`` to their URLs; returns the saved records as the server returned them."""
        return self._run(self._save("update", records))

    def destroy(self, *records: Any) -> None:
        """DELETE ``records`` (one request each, or one for all with ``batch_actions``)."""
        self._run(self._destroy(records))

    def sync(
        self,
        create: Iterable[Any] = (),
        update: Iterable[Any] = (),
        destroy: Iterable[Any] = (),
        *,
        batch: str | None = None,
        atomic: bool = False,
    ) -> dict[str, list[Any]]:
        """Create, then update, then destroy; returns ``{"create": [...], "update": [...]}``.

        The first error stops the sequence and raises `ProxyError`. With
        ``batch="server"`` all the records go in one ``POST {root}batch/v1`` request (one
        entry per record, in the same order) and each answer is mapped back to its record; a
        failed entry raises its `ProxyError` (after the others ran, unless ``atomic=True``:
        then the server wrote nothing).
        """
        return self._run(self._sync(create, update, destroy, batch, atomic))

    def login(self, login: str, password: str, *, home: str | None = None) -> str:
        """Log in with the site's JSON ``/login`` (``{"log": ..., "pwd": ...}``), then fetch
        and keep a nonce.

        The site is ``home`` when given, else the origin of the URL. The session cookie stays
        in the client; the nonce from ``/auth/nonce`` is kept in ``nonce`` and returned. A
        refused login raises `ProxyError` with the server's code and message: 403
        ``svc_login_failed`` for a wrong login or password, 429
        ``svc_too_many_login_attempts`` while throttled.
        """
        return self._run(self._login(login, password, home))

    def logout(self, *, home: str | None = None) -> bool:
        """End the session `login` started: ``POST /logout`` as JSON with the session's nonce
        (``X-SVC-Nonce``), which the site answers by ending the session and clearing the
        cookie in the client; ``nonce`` is None afterwards. Returns True when a session
        ended, False when the client had none.

        The site is ``home`` when given, else the one `login` used, else the origin of the
        URL. A refused log-out raises `ProxyError` (a stale nonce is refreshed once first).
        """
        return self._run(self._logout(home))

    def changes(
        self,
        since: str | None = None,
        *,
        wait: float = DEFAULT_WAIT,
        max_delay: float = DEFAULT_MAX_DELAY,
        max_failures: int | None = DEFAULT_MAX_FAILURES,
    ) -> ChangeStream:
        """Follow the collection's changes: an iterator of `ChangeEvent` objects over the
        long-poll ``GET <url>/changes?since=<cursor>&wait=<seconds>`` (served by WSGI and
        ASGI servers alike).

        It starts after the cursor ``since``, else at the end of the change log when the
        first step is taken (`changes_cursor` pins a start before reading the collection).
        Each poll waits up to ``wait`` seconds (more than 0, at most 30) for a change. A
        dropped connection, a time-out, a 429 or a 5xx answer is retried with the last
        cursor after a jittered back-off (0.5 s doubling, at most ``max_delay`` seconds), so
        no event is lost or repeated; after ``max_failures`` failed polls in a row (None:
        never) the last failure is raised. A 410 raises `ChangesExpired`; any other error
        answer (401 or 403 when the session ended or may not read the feed) raises
        `ProxyError` at once. The stream's ``cursor`` says where to resume later.

        The stream holds no connection between steps: ``break`` out of the loop, or call
        its ``close``, to stop."""
        return ChangeStream(
            lambda cursor, seconds: self._run(self._poll_changes(cursor, seconds)),
            since=since,
            wait=wait,
            max_delay=max_delay,
            max_failures=max_failures,
            report=lambda error: self._report(error, None),
        )

    def changes_cursor(self) -> str:
        """The cursor of the end of the collection's change log now (one poll that does not
        wait): read the collection after taking it, then follow ``changes(since=cursor)``
        to miss no change made meanwhile. A 410 or other error answer raises `ProxyError`."""
        return _end_cursor(self._run(self._reported(None, self._poll_changes(None, 0))))

    def close(self) -> None:
        """Close the client when the proxy created it."""
        if self.owns_client and self._client is not None:
            self._client.close()

    def __enter__(self) -> RestProxy:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class AsyncRestProxy(BaseRestProxy[httpx.AsyncClient]):
    """`RestProxy` over an `httpx.AsyncClient`: the same options and rules, awaitable calls."""

    def _new_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient()

    async def _run(self, exchange: Exchange[T]) -> T:
        try:
            request = next(exchange)
            while True:
                try:
                    response = await self._deliver(self._sendable(request))
                except httpx.TimeoutException as exc:
                    request = exchange.throw(self.timeout_error(exc))
                else:
                    request = exchange.send(response)
        except StopIteration as stop:
            result: T = stop.value
            return result

    async def _deliver(self, request: httpx.Request) -> httpx.Response:
        """`RestProxy._deliver`, awaiting."""
        attempt = 0
        while True:
            try:
                response = await self.client.send(request)
            except httpx.TimeoutException:
                raise
            except httpx.TransportError:
                delay = self.retry_delay(request, attempt, None)
                if delay is None:
                    raise
            else:
                delay = self.retry_delay(request, attempt, response)
                if delay is None:
                    return response
                await response.aclose()
            await asyncio.sleep(delay)
            attempt += 1

    async def send(self, operation: Operation) -> Any:
        """Send ``operation`` and return the decoded JSON (see `RestProxy.send`)."""
        return await self._run(self._exchange(operation))

    async def create(self, *records: Any) -> list[Any]:
        """POST ``records``; returns the saved records (see `RestProxy.create`)."""
        return await self._run(self._save("create", records))

    async def read(self, id: Any = None, **params: Any) -> Any:
        """GET the collection or the record ``id`` (see `RestProxy.read`)."""
        return await self.send(Operation("read", id=id, params=params))

    async def read_result(self, id: Any = None, **params: Any) -> ResultSet:
        """`read`, as a `ResultSet` (see `RestProxy.read_result`)."""
        return await self._run(self._read_page(Operation("read", id=id, params=params)))

    async def iter_pages(self, **params: Any) -> AsyncIterator[ResultSet]:
        """Every page of the collection, following ``Link rel="next"`` (see
        `RestProxy.iter_pages`)."""
        operation = Operation("read", params=params)
        trail = PageTrail()
        page = await self._run(self._read_page(operation))
        yield page
        while (url := self._next_url(trail, page, operation)) is not None:
            page = await self._run(self._read_page(operation, url))
            yield page

    async def update(self, *records: Any) -> list[Any]:
        """PUT ``records``; returns the saved records (see `RestProxy.update`)."""
        return await self._run(self._save("update", records))

    async def destroy(self, *records: Any) -> None:
        """DELETE ``records`` (see `RestProxy.destroy`)."""
        await self._run(self._destroy(records))

    async def sync(
        self,
        create: Iterable[Any] = (),
        update: Iterable[Any] = (),
        destroy: Iterable[Any] = (),
        *,
        batch: str | None = None,
        atomic: bool = False,
    ) -> dict[str, list[Any]]:
        """Create, update, destroy, or one server batch (see `RestProxy.sync`)."""
        return await self._run(self._sync(create, update, destroy, batch, atomic))

    async def login(self, login: str, password: str, *, home: str | None = None) -> str:
        """Log in and fetch a nonce (see `RestProxy.login`)."""
        return await self._run(self._login(login, password, home))

    async def logout(self, *, home: str | None = None) -> bool:
        """End the session `login` started (see `RestProxy.logout`)."""
        return await self._run(self._logout(home))

    def changes(
        self,
        since: str | None = None,
        *,
        wait: float = DEFAULT_WAIT,
        max_delay: float = DEFAULT_MAX_DELAY,
        max_failures: int | None = DEFAULT_MAX_FAILURES,
    ) -> AsyncChangeStream:
        """Follow the collection's changes with ``async for`` (see `RestProxy.changes`).
        Cancelling the task awaiting a step cancels its request."""

        async def poll(cursor: str | None, seconds: float) -> Any:
            return await self._run(self._poll_changes(cursor, seconds))

        return AsyncChangeStream(
            poll,
            since=since,
            wait=wait,
            max_delay=max_delay,
            max_failures=max_failures,
            report=lambda error: self._report(error, None),
        )

    async def changes_cursor(self) -> str:
        """The cursor of the end of the change log now (see `RestProxy.changes_cursor`)."""
        return _end_cursor(await self._run(self._reported(None, self._poll_changes(None, 0))))

    async def aclose(self) -> None:
        """Close the client when the proxy created it."""
        if self.owns_client and self._client is not None:
            await self._client.aclose()

    async def __aenter__(self) -> AsyncRestProxy:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()


def _end_cursor(body: Any) -> str:
    """The ``cursor`` of a long-poll answer."""
    cursor = body.get("cursor") if isinstance(body, dict) else None
    if not isinstance(cursor, str) or not cursor:
        raise ProxyError(
            "invalid_changes_response", "The answer is not a change feed's long-poll.", 200
        )
    return cursor
