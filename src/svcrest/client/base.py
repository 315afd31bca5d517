"""BaseRestProxy: the options, URL rules and request sequences of the client proxy, without I/O.

The request sequences (batching, login, the one-time nonce refresh, pages, server batches) are
generators that yield `httpx.Request` objects and receive `httpx.Response` objects;
`svcrest.client.proxy` drives them with an `httpx.Client` (`RestProxy`) or an
`httpx.AsyncClient` (`AsyncRestProxy`).
"""

from __future__ import annotations

import email.utils
import random
import time
import uuid
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, Generic, TypeVar
from urllib.parse import urlsplit

import httpx
import orjson

from svcrest.client.batch import BATCH_ROUTE, batch_body, batch_slots, root_of, route_path
from svcrest.client.errors import ProxyError, error_from_body
from svcrest.client.operation import ACTIONS, Operation
from svcrest.client.results import PageTrail, ResultSet
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
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_RETRY_DELAY",
    "DEFAULT_TIMEOUT",
    "GROUP_DIRECTION_PARAM",
    "IDEMPOTENCY_HEADER",
    "INVALID_NONCE_CODE",
    "NONCE_HEADER",
    "TIMEOUT_CODE",
    "BaseRestProxy",
    "ExceptionHook",
    "Exchange",
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
#: The default ``timeout`` in seconds (Ext JS's proxy waits 30 s too).
DEFAULT_TIMEOUT: Final = 30.0
#: How many records' ETags a proxy keeps (for ``conditional``).
ETAGS_MAX: Final = 4096
#: The error code of a request that got no answer within ``timeout``.
TIMEOUT_CODE: Final = "timeout"
#: The header of the key each write carries (IETF draft-ietf-httpapi-idempotency-key-header).
IDEMPOTENCY_HEADER: Final = "Idempotency-Key"
#: Retries of one request after a 429 or 503 answer or a broken connection (default).
DEFAULT_MAX_RETRIES: Final = 2
#: The longest pause in seconds before a retry, whatever ``Retry-After`` asks (default).
DEFAULT_MAX_RETRY_DELAY: Final = 30.0
_WRITES: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_RETRIED_STATUSES: Final = frozenset({429, 503})

ClientT = TypeVar("ClientT", httpx.Client, httpx.AsyncClient)
T = TypeVar("T")
#: A request sequence: yields requests, receives their responses, returns a result.
Exchange = Generator[httpx.Request, httpx.Response, T]
#: ``on_exception(error, operation)``: told of each error the proxy raises, with the operation
#: it belongs to (None for `login` and for a server batch that failed as a whole).
ExceptionHook = Callable[[ProxyError, Operation | None], object]


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


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds from now (delay-seconds or an HTTP date), None when absent
    or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():  # ("²" is a digit to isdigit, not to float)
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


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
    return error_from_body(body, response.status_code, response.reason_phrase)


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
        timeout: float | None = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        api: Mapping[str, str] | None = None,
        on_exception: ExceptionHook | None = None,
        root: str | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_retry_delay: float = DEFAULT_MAX_RETRY_DELAY,
        idempotency_keys: bool = True,
        conditional: bool = False,
    ) -> None:
        methods = dict(DEFAULT_ACTION_METHODS)
        for option, given in (("action_methods", action_methods), ("api", api)):
            unknown = sorted(set(given or {}) - set(ACTIONS))
            if unknown:
                raise ValueError(f"{option} has unknown actions: {', '.join(unknown)}")
        methods.update(action_methods or {})
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
        self.timeout = timeout
        self.headers: dict[str, str] = dict(headers or {})
        self.api: dict[str, str] = {action: str(u) for action, u in (api or {}).items() if u}
        self.on_exception = on_exception
        self.root = root
        self.max_retries = max_retries
        self.max_retry_delay = max_retry_delay
        self.idempotency_keys = idempotency_keys
        #: True: update and destroy send the ``ETag`` last read for their record as
        #: ``If-Match`` (a change made meanwhile answers 412 ``rest_precondition_failed``).
        self.conditional = conditional
        #: Record id (as a string) → the ``ETag`` of its last answer (bounded: the oldest go
        #: first past ``ETAGS_MAX``).
        self.etags: dict[str, str] = {}

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
        return self._build_url(operation, cache=True)

    def action_url(self, action: str) -> str:
        """The URL of ``action``: its ``api`` URL when set, else ``url``."""
        return self.api.get(action) or self.url

    def _build_url(self, operation: Operation, *, cache: bool) -> str:
        path, query, fragment = split_url(self.action_url(operation.action))
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
        if not cache and self.no_cache and self.cache_string:
            params.pop(self.cache_string, None)
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

    def if_match(self, operation: Operation) -> str | None:
        """The ``If-Match`` value of ``operation``: with ``conditional``, the ``ETag`` last
        read for the record an update or destroy of one record names; else None."""
        if not self.conditional or operation.action not in ("update", "destroy"):
            return None
        if len(operation.records or ()) > 1:
            return None
        the_id = operation_id(operation, self.id_property)
        return None if the_id is None else self.etags.get(str(the_id))

    def remember_etag(self, operation: Operation, response: httpx.Response, body: Any) -> None:
        """Keep the ``ETag`` of an answer about one record (a read of an id, a create or an
        update answering the record); a destroy forgets it."""
        if operation.action == "destroy":
            the_id = operation_id(operation, self.id_property)
            self.etags.pop(str(the_id), None)
            return
        tag = response.headers.get("ETag")
        if tag is None or not isinstance(body, Mapping):
            return
        the_id = body.get(self.id_property)
        if the_id is None:
            return
        etags = self.etags
        etags.pop(str(the_id), None)
        if len(etags) >= ETAGS_MAX:
            del etags[next(iter(etags))]
        etags[str(the_id)] = tag

    def _remember_slot(self, operation: Operation, headers: Mapping[str, Any], body: Any) -> None:
        """`remember_etag` for a batch request's answer (its ``headers`` object)."""
        lines = {str(name): str(value) for name, value in headers.items()}
        self.remember_etag(operation, httpx.Response(200, headers=lines), body)

    def build_request(self, operation: Operation) -> httpx.Request:
        """The `httpx.Request` the proxy sends for ``operation`` (no network needed).

        Method from `get_method`, URL from `build_url` (resolved against the client's
        ``base_url``; left relative when the client has none), the JSON body of
        `request_body`, ``Accept: application/json``, and ``X-SVC-Nonce`` when the proxy holds
        a nonce. Sending a request whose URL is still relative raises ValueError.
        """
        has_body, body = self.request_body(operation)
        request = self._json_request(
            self.get_method(operation), self.build_url(operation), has_body, body
        )
        tag = self.if_match(operation)
        if tag is not None:
            request.headers["If-Match"] = tag
        return request

    def _json_request(self, method: str, url: str, has_body: bool, body: Any) -> httpx.Request:
        headers = {"Accept": "application/json", **self.headers}
        if self.nonce:
            headers[NONCE_HEADER] = self.nonce
        content = None
        if has_body:
            headers["Content-Type"] = "application/json"
            content = orjson.dumps(body, default=_json_default)
        request = self._request(method, url, content=content, headers=headers)
        if not request.url.is_absolute_url:
            request.url = httpx.URL(url)  # as built: httpx would root "users/5" at "/"
        return request

    def _request(self, method: str, url: str, **options: Any) -> httpx.Request:
        """A request of the client with the proxy's ``headers`` (under those given) and
        ``timeout`` (which overrides the client's own)."""
        headers = {**self.headers, **options.pop("headers", {})}
        timeout = httpx.Timeout(self.timeout)
        return self.client.build_request(method, url, headers=headers, timeout=timeout, **options)

    def timeout_error(self, cause: httpx.TimeoutException) -> ProxyError:
        """The `ProxyError` (code ``timeout``, status 0) of a request without an answer."""
        error = (
            ProxyError(TIMEOUT_CODE, f"No answer within {self.timeout:g} seconds.", 0, None)
            if self.timeout is not None
            else ProxyError(TIMEOUT_CODE, "The request timed out.", 0)
        )
        error.__cause__ = cause
        return error

    def _sendable(self, request: httpx.Request) -> httpx.Request:
        """``request``, checked to have an absolute URL before it is sent, with a fresh
        ``Idempotency-Key`` when it is a write (POST, PUT, PATCH, DELETE) without one and
        ``idempotency_keys`` is on: the proxy's own retries of it send the same key, so a
        route with the ``idempotency`` option runs it once."""
        if not request.url.is_absolute_url:
            raise ValueError(
                f"cannot send {request.method} {request.url}: the proxy URL {self.url!r} is"
                " relative; give the proxy a client with a base_url"
            )
        if (
            self.idempotency_keys
            and request.method in _WRITES
            and IDEMPOTENCY_HEADER not in request.headers
        ):
            request.headers[IDEMPOTENCY_HEADER] = f'"{uuid.uuid4()}"'
        return request

    def retry_delay(
        self, request: httpx.Request, attempt: int, response: httpx.Response | None
    ) -> float | None:
        """Seconds to wait before sending ``request`` again after its ``attempt``-th try
        (from 0), or None to stop: answered ``response`` (None: the connection broke).

        A 429 or 503 is retried after its ``Retry-After`` (seconds or an HTTP date), else
        after an exponential backoff from 0.5 s; a broken connection only for a read or a
        request carrying an ``Idempotency-Key``. The pause is jittered (up to a quarter
        more, so clients refused together do not come back together), never longer than
        ``max_retry_delay``, and there are at most ``max_retries`` retries.
        """
        if attempt >= self.max_retries:
            return None
        if response is None:
            if request.method in _WRITES and IDEMPOTENCY_HEADER not in request.headers:
                return None  # it may have run: sending it again could run it twice
            wait = None
        elif response.status_code in _RETRIED_STATUSES:
            wait = _retry_after(response.headers.get("retry-after"))
        else:
            return None
        base = 0.5 * 2**attempt if wait is None else wait
        return min(base * (1 + random.uniform(0, 0.25)), self.max_retry_delay)

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

    def _report(self, error: ProxyError, operation: Operation | None) -> None:
        if self.on_exception is not None:
            self.on_exception(error, operation)

    def _next_url(self, trail: PageTrail, page: ResultSet, operation: Operation) -> str | None:
        """The URL of the page after ``page`` (see `PageTrail`); `on_exception` is told of a
        ``paging_loop`` as of any error the proxy raises."""
        try:
            return trail.next_url(page)
        except ProxyError as error:
            self._report(error, operation)
            raise

    def _reported(self, operation: Operation | None, exchange: Exchange[T]) -> Exchange[T]:
        """``exchange``, with `on_exception` told of the `ProxyError` it raises."""
        try:
            return (yield from exchange)
        except ProxyError as error:
            self._report(error, operation)
            raise

    def _respond(self, build: Callable[[], httpx.Request]) -> Exchange[httpx.Response]:
        """Send ``build()``; on ``rest_cookie_invalid_nonce`` fetch a nonce and retry once."""
        response = yield build()
        error = self._check(response)
        if error is not None and error.code == INVALID_NONCE_CODE:
            try:
                yield from self._fetch_nonce(self.site_base(self.home))
            except ProxyError as failure:
                raise error from failure
            response = yield build()
            error = self._check(response)
        if error is not None:
            raise error
        return response

    def _decoded(self, operation: Operation) -> Exchange[Any]:
        response = yield from self._respond(lambda: self.build_request(operation))
        body = _decode(response)
        self.remember_etag(operation, response, body)
        return body

    def _exchange(self, operation: Operation) -> Exchange[Any]:
        return (yield from self._reported(operation, self._decoded(operation)))

    def _page(self, operation: Operation, url: str | None) -> Exchange[ResultSet]:
        def build() -> httpx.Request:
            if url is None:
                return self.build_request(operation)
            return self._json_request("GET", url, False, None)

        response = yield from self._respond(build)
        return ResultSet.from_response(response, _decode(response))

    def _read_page(self, operation: Operation, url: str | None = None) -> Exchange[ResultSet]:
        return (yield from self._reported(operation, self._page(operation, url)))

    def _fetch_nonce(self, base: str) -> Exchange[str]:
        response = yield self._request(
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

    def _sign_in(self, login: str, password: str, home: str | None) -> Exchange[str]:
        base = self.site_base(home)
        # The JSON login: a refusal comes back in the REST error shape (svc_login_failed…),
        # where the form login answers an HTML page.
        response = yield self._request(
            "POST", f"{base}/login", json={"log": login, "pwd": password}
        )
        if response.status_code >= 400:
            raise error_from_response(response)
        self.home = base
        return (yield from self._fetch_nonce(base))

    def _login(self, login: str, password: str, home: str | None) -> Exchange[str]:
        return (yield from self._reported(None, self._sign_in(login, password, home)))

    def _sign_out(self, home: str | None) -> Exchange[bool]:
        base = self.site_base(home or self.home)
        if not self.nonce:  # a session without a nonce yet: the site's /auth/nonce gives one
            yield from self._fetch_nonce(base)
        # The JSON log-out: the session's REST nonce proves the request is the proxy's own;
        # a stale one is refreshed once (rest_cookie_invalid_nonce), as for any request.
        response = yield from self._respond(
            lambda: self._json_request("POST", f"{base}/logout", True, {})
        )
        body = _decode(response)
        self.nonce = None
        return bool(isinstance(body, dict) and body.get("logged_out") is True)

    def _logout(self, home: str | None) -> Exchange[bool]:
        return (yield from self._reported(None, self._sign_out(home)))

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
        self,
        create: Iterable[Any],
        update: Iterable[Any],
        destroy: Iterable[Any],
        batch: str | None,
        atomic: bool,
    ) -> Exchange[dict[str, list[Any]]]:
        if batch == "server":
            return (
                yield from self._server_batch(list(create), list(update), list(destroy), atomic)
            )
        if batch is not None:
            raise ValueError(f"unknown batch mode {batch!r}: expected None or 'server'")
        if atomic:
            raise ValueError("atomic=True needs batch='server'")
        created = yield from self._save("create", list(create))
        updated = yield from self._save("update", list(update))
        yield from self._destroy(list(destroy))
        return {"create": created, "update": updated}

    # -- change feed ---------------------------------------------------------------------

    def changes_url(self) -> str:
        """The URL of the collection's change feed: the read URL (its ``api`` URL when set)
        with ``/changes`` added to its path, its query string kept, its fragment dropped."""
        path, query, _ = split_url(self.action_url("read"))
        return join_url(path.rstrip("/") + "/changes", query, (), None)

    def changes_request(self, since: str | None, wait: float) -> httpx.Request:
        """The long-poll `httpx.Request` of the change feed (no network needed): ``GET
        changes_url()`` with ``since`` (when not None) and ``wait`` (in seconds, as the
        shortest decimal), the proxy's headers and nonce. Its read time-out is ``wait`` plus
        ``timeout``, so a poll the server holds for ``wait`` seconds is not cut short."""
        path, query, _ = split_url(self.changes_url())
        params = [] if since is None else [("since", since)]
        params.append(("wait", f"{wait:g}"))
        request = self._json_request("GET", join_url(path, query, params, None), False, None)
        if self.timeout is not None:
            timeout = httpx.Timeout(self.timeout, read=self.timeout + wait)
            request.extensions["timeout"] = timeout.as_dict()
        return request

    def _poll_changes(self, since: str | None, wait: float) -> Exchange[Any]:
        """One long-poll of the change feed; its decoded answer (the nonce refreshed once
        on ``rest_cookie_invalid_nonce``, as for any request)."""
        response = yield from self._respond(lambda: self.changes_request(since, wait))
        return _decode(response)

    # -- server batches ------------------------------------------------------------------

    def rest_root(self) -> str:
        """The REST root the batch route is under: ``root`` when given, else the part of the
        URL up to ``/svc-json/``; ValueError when neither tells it."""
        root = self.root or root_of(self.url)
        if root is None:
            raise ValueError(f"cannot tell the REST root of {self.url!r}: pass root=")
        return root if root.endswith("/") else root + "/"

    def batch_request(self, operations: Sequence[Operation], *, atomic: bool) -> httpx.Request:
        """The one ``POST {root}batch/v1`` request that runs ``operations`` (no network).

        Each operation becomes ``{"method", "path", "body"}``: its method, its URL after the
        root (without the cache buster) and its JSON body (left out when it has none).
        """
        root = self.rest_root()
        requests: list[dict[str, Any]] = []
        for operation in operations:
            entry: dict[str, Any] = {
                "method": self.get_method(operation),
                "path": route_path(self._build_url(operation, cache=False), root),
            }
            has_body, body = self.request_body(operation)
            if has_body:
                entry["body"] = body
            tag = self.if_match(operation)
            if tag is not None:
                entry["headers"] = {"If-Match": tag}
            requests.append(entry)
        return self._json_request(
            "POST", root + BATCH_ROUTE, True, batch_body(requests, atomic=atomic)
        )

    def _server_batch(
        self, create: list[Any], update: list[Any], destroy: list[Any], atomic: bool
    ) -> Exchange[dict[str, list[Any]]]:
        operations = [
            Operation(action, records=[record])
            for action, records in (("create", create), ("update", update), ("destroy", destroy))
            for record in records
        ]
        result: dict[str, list[Any]] = {"create": [], "update": []}
        if not operations:
            return result

        def build() -> httpx.Request:
            return self.batch_request(operations, atomic=atomic)

        response = yield from self._reported(None, self._respond(build))
        try:
            slots, failure = batch_slots(_decode(response), operations, response.status_code)
        except ProxyError as invalid:
            self._report(invalid, None)
            raise
        if failure is not None:
            self._report(*failure)
            raise failure[0]
        for slot, operation in zip(slots, operations, strict=True):
            headers = slot.get("headers")
            if isinstance(headers, Mapping):
                self._remember_slot(operation, headers, slot.get("body"))
            if operation.action in result:
                result[operation.action].append(slot.get("body"))
        return result
