"""RestProxy and AsyncRestProxy: a client proxy with the URL rules of Ext JS's REST proxy, over
httpx.

The URL and method rules live in `BaseRestProxy` (pure, no I/O). The request sequences
(batching, login, the one-time nonce refresh) are written once as generators that yield
`httpx.Request` objects and receive `httpx.Response` objects; `RestProxy` drives them with an
`httpx.Client` and `AsyncRestProxy` with an `httpx.AsyncClient`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from types import MappingProxyType, TracebackType
from typing import Any, Final, Generic, TypeVar
from urllib.parse import urlsplit

import httpx
import orjson

from svcrest.client.errors import ProxyError
from svcrest.client.operation import Operation
from svcrest.client.urls import (
    encode_component,
    is_valid_id,
    join_url,
    normalize_filters,
    normalize_sorter,
    normalize_sorters,
    operation_id,
    split_url,
    to_json,
)

__all__ = [
    "DEFAULT_ACTION_METHODS",
    "GROUP_DIRECTION_PARAM",
    "INVALID_NONCE_CODE",
    "NONCE_HEADER",
    "AsyncRestProxy",
    "BaseRestProxy",
    "RestProxy",
    "error_from_response",
]

#: The action → HTTP method map that ``action_methods`` is merged over.
DEFAULT_ACTION_METHODS: Final[Mapping[str, str]] = MappingProxyType(
    {"create": "POST", "read": "GET", "update": "PUT", "destroy": "DELETE"}
)
#: The request and response header that carries the REST nonce.
NONCE_HEADER: Final = "X-SVC-Nonce"
#: The error code that makes the proxy fetch a fresh nonce and retry once.
INVALID_NONCE_CODE: Final = "rest_cookie_invalid_nonce"
#: The query parameter of the grouper's direction in ``simple_group_mode``.
GROUP_DIRECTION_PARAM: Final = "groupDir"

ClientT = TypeVar("ClientT", httpx.Client, httpx.AsyncClient)
T = TypeVar("T")
#: A request sequence: yields requests, receives their responses, returns a result.
Exchange = Generator[httpx.Request, httpx.Response, T]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _json_default(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if hasattr(value, "__dict__"):
        return {k: v for k, v in vars(value).items() if not k.startswith("_")}
    raise TypeError(f"cannot encode a {type(value).__name__} as JSON")


def _put(query: dict[str, str], name: str | None, value: Any) -> None:
    """Set one query parameter; an unset name (None or "") or a None value sends nothing."""
    if name and value is not None:
        query[name] = str(value)


def _decode(response: httpx.Response) -> Any:
    if not response.content:
        return None
    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError as exc:
        raise ProxyError(
            "invalid_json", "The response body is not valid JSON.", response.status_code
        ) from exc


def error_from_response(response: httpx.Response) -> ProxyError:
    """The `ProxyError` for an error response.

    A JSON object body with a string ``code`` gives that code, its ``message`` (the reason
    phrase when not a string) and its ``data``; any other body gives ``"http_error"`` and the
    reason phrase.
    """
    try:
        body = orjson.loads(response.content) if response.content else None
    except orjson.JSONDecodeError:
        body = None
    reason = response.reason_phrase
    status = response.status_code
    if isinstance(body, dict) and isinstance(body.get("code"), str):
        message = body.get("message")
        return ProxyError(
            body["code"], message if isinstance(message, str) else reason, status, body.get("data")
        )
    return ProxyError("http_error", reason, status)


class BaseRestProxy(Generic[ClientT]):
    """The options, URL rules and request sequences shared by `RestProxy` and `AsyncRestProxy`.

    See `RestProxy` for the options. Attributes of the same names hold them and may be
    changed after construction; ``action_methods`` holds the merged map, ``nonce`` the REST
    nonce sent as ``X-SVC-Nonce`` (None until `login` or until set), ``client`` the httpx
    client.
    """

    def __init__(
        self,
        url: str,
        *,
        append_id: bool = True,
        format: str | None = None,
        batch_actions: bool = False,
        action_methods: Mapping[str, str] | None = None,
        no_cache: bool = True,
        cache_string: str | None = "_dc",
        page_param: str | None = "page",
        start_param: str | None = "start",
        limit_param: str | None = "limit",
        sort_param: str | None = "sort",
        filter_param: str | None = "filter",
        group_param: str | None = "group",
        direction_param: str | None = "dir",
        simple_sort_mode: bool = False,
        simple_group_mode: bool = False,
        id_param: str | None = "id",
        id_property: str = "id",
        extra_params: Mapping[str, Any] | None = None,
        clock: Callable[[], int] | None = None,
        client: ClientT | None = None,
    ) -> None:
        methods = dict(DEFAULT_ACTION_METHODS)
        if action_methods:
            unknown = sorted(set(action_methods) - set(methods))
            if unknown:
                raise ValueError(f"action_methods has unknown actions: {', '.join(unknown)}")
            methods.update(action_methods)
        self.url = url
        self.append_id = append_id
        self.format = format
        self.batch_actions = batch_actions
        self.action_methods: dict[str, str] = methods
        self.no_cache = no_cache
        self.cache_string = cache_string
        self.page_param = page_param
        self.start_param = start_param
        self.limit_param = limit_param
        self.sort_param = sort_param
        self.filter_param = filter_param
        self.group_param = group_param
        self.direction_param = direction_param
        self.simple_sort_mode = simple_sort_mode
        self.simple_group_mode = simple_group_mode
        self.id_param = id_param
        self.id_property = id_property
        self.extra_params: dict[str, Any] = dict(extra_params or {})
        self.clock: Callable[[], int] = clock if clock is not None else _now_ms
        self.owns_client = client is None
        self._client: ClientT | None = client
        self.nonce: str | None = None
        self.home: str | None = None

    @property
    def client(self) -> ClientT:
        """The httpx client: the one given, else one created on first use (and kept)."""
        if self._client is None:
            self._client = self._new_client()
        return self._client

    def _new_client(self) -> ClientT:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    # -- method and URL ------------------------------------------------------------------

    def get_method(self, operation: Operation) -> str:
        """The HTTP method of ``operation``: ``action_methods[operation.action]``.

        Override it in a subclass to choose methods another way (as Ext JS's ``getMethod``).
        """
        return self.action_methods[operation.action]

    def build_url(self, operation: Operation) -> str:
        """The URL of ``operation`` (relative when the proxy's URL is relative).

        The id (`operation_id`) goes into the path when ``append_id`` is on and it is valid,
        then the format; both before any query string and fragment. The query parameters
        follow (see `query_params`), appended to an existing query with ``&``.
        """
        path, query, fragment = split_url(self.url)
        the_id = operation_id(operation, self.id_property)
        id_in_path = self.append_id and is_valid_id(the_id)
        if id_in_path:
            if not path.endswith("/"):
                path += "/"
            path += encode_component(str(the_id))
        if self.format:
            if not path.endswith("."):
                path += "."
            path += self.format
        params = self.query_params(operation)
        return join_url(path, query, params.items(), fragment)

    def query_params(self, operation: Operation) -> dict[str, str]:
        """The query parameters `build_url` appends, in order, as strings.

        ``cache_string`` with ``clock()`` (when ``no_cache``); ``extra_params`` merged with the
        operation's ``params`` (operation values win, a key keeps its first position; the
        ``id_param`` key dropped when the id is in the path, and set to the id for a read with
        a valid id that is not in the path); then page, start, limit, group (with ``groupDir``
        in ``simple_group_mode``), sort, dir (``simple_sort_mode`` only) and filter. Values are
        sent as ``str(value)``; a None value or a parameter name set to None (or "") sends
        nothing; a key set twice keeps its first position and its last value.
        """
        query: dict[str, str] = {}
        if self.no_cache:
            _put(query, self.cache_string, self.clock())
        for name, value in self._merged_params(operation).items():
            _put(query, name, value)
        _put(query, self.page_param, operation.page)
        _put(query, self.start_param, operation.start)
        _put(query, self.limit_param, operation.limit)
        self._put_grouping(query, operation)
        return query

    def _merged_params(self, operation: Operation) -> dict[str, Any]:
        merged = {**self.extra_params, **(operation.params or {})}
        if self.id_param:
            the_id = operation_id(operation, self.id_property)
            if self.append_id and is_valid_id(the_id):
                merged.pop(self.id_param, None)
            elif operation.action == "read" and is_valid_id(the_id):
                merged[self.id_param] = the_id
        return merged

    def _put_grouping(self, query: dict[str, str], operation: Operation) -> None:
        grouper = None
        if operation.grouper is not None:
            grouper = normalize_sorter(operation.grouper, "grouper")
        if grouper is not None and self.group_param:
            if self.simple_group_mode:
                _put(query, self.group_param, grouper["property"])
                _put(query, GROUP_DIRECTION_PARAM, grouper["direction"])
            else:
                _put(query, self.group_param, to_json([grouper]))
        sorters = normalize_sorters(operation.sorters)
        if sorters and self.sort_param:
            if self.simple_sort_mode:
                _put(query, self.sort_param, sorters[0]["property"])
                _put(query, self.direction_param, sorters[0]["direction"])
            else:
                _put(query, self.sort_param, to_json(sorters))
        filters = normalize_filters(operation.filters)
        if filters:
            _put(query, self.filter_param, to_json(filters))

    # -- requests ------------------------------------------------------------------------

    def request_body(self, operation: Operation) -> tuple[bool, Any]:
        """``(has_body, body)`` of ``operation``.

        create and update send their records: one record as the record itself, several (a
        batch) as a list. A batched destroy of several records sends them as a list; any other
        destroy, and every read, has no body.
        """
        records = list(operation.records or ())
        if operation.action in ("create", "update") and records:
            return True, records[0] if len(records) == 1 else records
        if operation.action == "destroy" and len(records) > 1:
            return True, records
        return False, None

    def build_request(self, operation: Operation) -> httpx.Request:
        """The `httpx.Request` the proxy sends for ``operation`` (no network needed).

        Method from `get_method`, URL from `build_url` (resolved against the client's
        ``base_url``; left relative when the client has none), the JSON body of
        `request_body`, ``Accept: application/json``, and ``X-SVC-Nonce`` when the proxy holds
        a nonce. Sending a request whose URL is still relative raises ValueError.
        """
        headers = {"Accept": "application/json"}
        if self.nonce:
            headers[NONCE_HEADER] = self.nonce
        has_body, body = self.request_body(operation)
        content = None
        if has_body:
            headers["Content-Type"] = "application/json"
            content = orjson.dumps(body, default=_json_default)
        url = self.build_url(operation)
        request = self.client.build_request(
            self.get_method(operation), url, content=content, headers=headers
        )
        if not request.url.is_absolute_url:
            request.url = httpx.URL(url)  # as built: httpx would root "users/5" at "/"
        return request

    def _sendable(self, request: httpx.Request) -> httpx.Request:
        """``request``, checked to have an absolute URL before it is sent."""
        if not request.url.is_absolute_url:
            raise ValueError(
                f"cannot send {request.method} {request.url}: the proxy URL {self.url!r} is"
                " relative; give the proxy a client with a base_url"
            )
        return request

    def site_base(self, home: str | None = None) -> str:
        """The site address that ``/login`` and ``/auth/nonce`` are under.

        ``home`` (without a trailing slash) when given, else the origin of the proxy's URL, else
        (for a relative URL) the origin of the client's ``base_url``.
        """
        if home:
            return home.rstrip("/")
        parts = urlsplit(self.url)
        if parts.scheme and parts.netloc:
            return f"{parts.scheme}://{parts.netloc}"
        base = self.client.base_url
        if base.is_absolute_url:
            return f"{base.scheme}://{base.netloc.decode('ascii')}"
        raise ValueError(f"cannot tell the site of the relative URL {self.url!r}: pass home=")

    def _check(self, response: httpx.Response) -> ProxyError | None:
        fresh = response.headers.get(NONCE_HEADER)
        if fresh:
            self.nonce = fresh
        if response.status_code >= 400:
            return error_from_response(response)
        return None

    def _exchange(self, operation: Operation) -> Exchange[Any]:
        response = yield self.build_request(operation)
        error = self._check(response)
        if error is not None and error.code == INVALID_NONCE_CODE:
            try:
                yield from self._fetch_nonce(self.site_base(self.home))
            except ProxyError as failure:
                raise error from failure
            response = yield self.build_request(operation)
            error = self._check(response)
        if error is not None:
            raise error
        return _decode(response)

    def _fetch_nonce(self, base: str) -> Exchange[str]:
        response = yield self.client.build_request(
            "GET", f"{base}/auth/nonce", headers={"Accept": "application/json"}
        )
        error = self._check(response)
        if error is not None:
            raise error
        body = _decode(response)
        nonce = body.get("nonce") if isinstance(body, dict) else None
        if not isinstance(nonce, str) or not nonce:
            raise ProxyError(
                "invalid_nonce_response",
                "The nonce endpoint did not return a nonce.",
                response.status_code,
            )
        self.nonce = nonce
        return nonce

    def _login(self, login: str, password: str, home: str | None) -> Exchange[str]:
        base = self.site_base(home)
        response = yield self.client.build_request(
            "POST", f"{base}/login", data={"log": login, "pwd": password}
        )
        if response.status_code >= 400:
            raise error_from_response(response)
        self.home = base
        return (yield from self._fetch_nonce(base))

    def _operations(self, action: str, records: Sequence[Any]) -> list[Operation]:
        if not records:
            return []
        if self.batch_actions:
            return [Operation(action, records=list(records))]
        return [Operation(action, records=[record]) for record in records]

    def _save(self, action: str, records: Sequence[Any]) -> Exchange[list[Any]]:
        saved: list[Any] = []
        for operation in self._operations(action, records):
            result = yield from self._exchange(operation)
            sent_list = len(operation.records or ()) > 1
            if sent_list and isinstance(result, list):
                saved.extend(result)
            else:
                saved.append(result)
        return saved

    def _destroy(self, records: Sequence[Any]) -> Exchange[None]:
        for operation in self._operations("destroy", records):
            yield from self._exchange(operation)

    def _sync(
        self, create: Iterable[Any], update: Iterable[Any], destroy: Iterable[Any]
    ) -> Exchange[dict[str, list[Any]]]:
        created = yield from self._save("create", list(create))
        updated = yield from self._save("update", list(update))
        yield from self._destroy(list(destroy))
        return {"create": created, "update": updated}


class RestProxy(BaseRestProxy[httpx.Client]):
    """The client proxy over an `httpx.Client`: create/read/update/destroy mapped onto
    POST/GET/PUT/DELETE and URLs with the rules of Ext JS's ``Ext.data.proxy.Rest``.

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
    """

    def _new_client(self) -> httpx.Client:
        return httpx.Client()

    def _run(self, exchange: Exchange[T]) -> T:
        try:
            request = next(exchange)
            while True:
                request = exchange.send(self.client.send(self._sendable(request)))
        except StopIteration as stop:
            result: T = stop.value
            return result

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

    def update(self, *records: Any) -> list[Any]:
        """PUT ``records`` to their URLs; returns the saved records as the server returned them."""
        return self._run(self._save("update", records))

    def destroy(self, *records: Any) -> None:
        """DELETE ``records`` (one request each, or one for all with ``batch_actions``)."""
        self._run(self._destroy(records))

    def sync(
        self, create: Iterable[Any] = (), update: Iterable[Any] = (), destroy: Iterable[Any] = ()
    ) -> dict[str, list[Any]]:
        """Create, then update, then destroy; returns ``{"create": [...], "update": [...]}``.

        The first error stops the sequence and raises `ProxyError`.
        """
        return self._run(self._sync(create, update, destroy))

    def login(self, login: str, password: str, *, home: str | None = None) -> str:
        """Log in with the site's ``/login`` form, then fetch and keep a nonce.

        The site is ``home`` when given, else the origin of the URL. The session cookie stays
        in the client; the nonce from ``/auth/nonce`` is kept in ``nonce`` and returned.
        """
        return self._run(self._login(login, password, home))

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
                request = exchange.send(await self.client.send(self._sendable(request)))
        except StopIteration as stop:
            result: T = stop.value
            return result

    async def send(self, operation: Operation) -> Any:
        """Send ``operation`` and return the decoded JSON (see `RestProxy.send`)."""
        return await self._run(self._exchange(operation))

    async def create(self, *records: Any) -> list[Any]:
        """POST ``records``; returns the saved records (see `RestProxy.create`)."""
        return await self._run(self._save("create", records))

    async def read(self, id: Any = None, **params: Any) -> Any:
        """GET the collection or the record ``id`` (see `RestProxy.read`)."""
        return await self.send(Operation("read", id=id, params=params))

    async def update(self, *records: Any) -> list[Any]:
        """PUT ``records``; returns the saved records (see `RestProxy.update`)."""
        return await self._run(self._save("update", records))

    async def destroy(self, *records: Any) -> None:
        """DELETE ``records`` (see `RestProxy.destroy`)."""
        await self._run(self._destroy(records))

    async def sync(
        self, create: Iterable[Any] = (), update: Iterable[Any] = (), destroy: Iterable[Any] = ()
    ) -> dict[str, list[Any]]:
        """Create, update, destroy (see `RestProxy.sync`)."""
        return await self._run(self._sync(create, update, destroy))

    async def login(self, login: str, password: str, *, home: str | None = None) -> str:
        """Log in and fetch a nonce (see `RestProxy.login`)."""
        return await self._run(self._login(login, password, home))

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
