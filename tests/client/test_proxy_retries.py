"""Both proxies: an Idempotency-Key per write, reused on their own retries after 429, 503
or a broken connection; Retry-After honoured, jittered and bounded."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from svcrest.client import ProxyError, RestProxy
from svcrest.client.proxy import AsyncRestProxy

URL = "http://site.test/svc-json/demo/v1/notes"
KEY = re.compile(r'^"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"$')
Answer = Callable[[httpx.Request], httpx.Response]


def _refused(status: int, retry_after: str | None = "0") -> httpx.Response:
    headers = {} if retry_after is None else {"Retry-After": retry_after}
    body = {"code": "rest_too_many_requests", "message": "Slow down.", "data": {"status": status}}
    return httpx.Response(status, json=body, headers=headers)


def _script(answers: list[Answer | httpx.Response]) -> tuple[list[httpx.Request], Any]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = answers.pop(0)
        return answer(request) if callable(answer) else answer

    return seen, handler


def _run(kind: str, handler: Any, call: str, *args: Any, **options: Any) -> Any:
    transport = httpx.MockTransport(handler)
    if kind == "sync":
        with RestProxy(URL, client=httpx.Client(transport=transport), **options) as proxy:
            return getattr(proxy, call)(*args)

    async def main() -> Any:
        client = httpx.AsyncClient(transport=transport)
        async with AsyncRestProxy(URL, client=client, **options) as proxy:
            return await getattr(proxy, call)(*args)

    return asyncio.run(main())


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _broken(request: httpx.Request) -> httpx.Response:
    raise httpx.RemoteProtocolError("Server disconnected without sending a response.")


def test_a_write_is_retried_with_its_key_after_429_and_503(kind: str) -> None:
    created = httpx.Response(201, json={"id": 7, "title": "a"})
    seen, handler = _script([_refused(429), _refused(503, None), created])
    assert _run(kind, handler, "create", {"title": "a"}, max_retry_delay=0.01) == [
        {"id": 7, "title": "a"}
    ]
    keys = [request.headers["idempotency-key"] for request in seen]
    assert len(keys) == 3 and KEY.match(keys[0]) and len(set(keys)) == 1


def test_each_write_gets_a_fresh_key_and_reads_none(kind: str) -> None:
    ok = httpx.Response(200, json={"id": 1})
    seen, handler = _script([ok, ok, ok])
    _run(kind, handler, "update", {"id": 1}, {"id": 2})
    assert [request.method for request in seen] == ["PUT", "PUT"]
    assert all(KEY.match(request.headers["idempotency-key"]) for request in seen)
    seen_read, read_handler = _script([httpx.Response(200, json=[])])
    _run(kind, read_handler, "read")
    assert "idempotency-key" not in seen_read[0].headers
    assert seen[0].headers["idempotency-key"] != seen[1].headers["idempotency-key"]
    seen_off, off_handler = _script([ok])
    _run(kind, off_handler, "create", {"title": "b"}, idempotency_keys=False)
    assert "idempotency-key" not in seen_off[0].headers


def test_retries_are_bounded(kind: str) -> None:
    seen, handler = _script([_refused(429), _refused(429), _refused(429)])
    with pytest.raises(ProxyError) as raised:
        _run(kind, handler, "read", None, max_retry_delay=0.01)
    assert (raised.value.code, raised.value.status) == ("rest_too_many_requests", 429)
    assert len(seen) == 3  # the request and two retries (the default)
    seen, handler = _script([_refused(429)])
    with pytest.raises(ProxyError):
        _run(kind, handler, "read", None, max_retries=0)
    assert len(seen) == 1


def test_a_long_retry_after_is_capped(kind: str) -> None:
    _seen, handler = _script([_refused(429, "3600"), httpx.Response(200, json=[])])
    started = time.monotonic()
    assert _run(kind, handler, "read", None, max_retry_delay=0.05) == []
    assert time.monotonic() - started < 2


def test_a_broken_connection_retries_only_what_is_safe(kind: str) -> None:
    created = httpx.Response(201, json={"id": 8})
    seen, handler = _script([_broken, created])
    assert _run(kind, handler, "create", {"title": "c"}, max_retry_delay=0.01) == [{"id": 8}]
    assert seen[0].headers["idempotency-key"] == seen[1].headers["idempotency-key"]
    seen, handler = _script([_broken, created])
    with pytest.raises(httpx.RemoteProtocolError):
        _run(kind, handler, "create", {"title": "c"}, idempotency_keys=False)
    assert len(seen) == 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0", 0.0),
        ("12", 12.0),
        ("soon", None),
        ("²", None),
        ("\u0661\u0662", None),
        (None, None),
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),
    ],
)
def test_retry_after_values(value: str | None, expected: float | None) -> None:
    from svcrest.client.base import _retry_after

    assert _retry_after(value) == expected


def test_the_delay_is_jittered_and_capped() -> None:
    proxy = RestProxy(URL, max_retry_delay=5.0)
    request = httpx.Request("GET", URL)
    delays = {proxy.retry_delay(request, 0, _refused(429, "2")) for _ in range(50)}
    assert all(delay is not None and 2.0 <= delay <= 2.5 for delay in delays)
    assert len(delays) > 1
    assert proxy.retry_delay(request, 1, _refused(503, "60")) == 5.0
    assert proxy.retry_delay(request, 2, _refused(503, "0")) is None
    assert proxy.retry_delay(request, 0, httpx.Response(500)) is None
