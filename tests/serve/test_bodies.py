"""Slow request bodies, in process: the body deadline on both adapters (408 in the REST error
shape, a short text page elsewhere) and, on WSGI, the few server threads slow bodies may
hold (503 beyond them). tests/e2e/test_slow_bodies.py runs the same over real servers."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from types import MappingProxyType
from typing import Any

import pytest

from svcrest import App
from svcrest.serve import bodies
from svcrest.serve.bodies import (
    ENV_BODY_READERS,
    ENV_BODY_TIMEOUT,
    SLOW_BODY_READERS,
    address_share,
    body_readers,
    body_timeout,
    declared_too_long,
    slow_body_readers,
)
from tests.serve.conftest import echo_site

TIMEOUT = 0.4
ECHO = "/svc-json/t/v1/echo"


def _timeout_error(seconds: float) -> dict[str, Any]:
    return {
        "code": "svc_body_timeout",
        "message": f"The request body was not received within {seconds:g} seconds.",
        "data": {"status": 408, "body_timeout": seconds},
    }


BUSY = {
    "code": "svc_body_busy",
    "message": "Too many slow request bodies are being received; please try again shortly.",
    "data": {"status": 503},
}


@pytest.fixture
def short_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_BODY_TIMEOUT, str(TIMEOUT))


@pytest.fixture
def app() -> Iterator[tuple[App, list[Any]]]:
    """A site with an echo route; the list holds the bodies its callback saw."""
    site, seen = echo_site(lambda: "ok")
    yield site, seen
    site.store.close()


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(None, 30.0), ("2.5", 2.5), ("abc", 30.0), ("0", 30.0), ("-1", 30.0), ("inf", 30.0)],
    ids=["unset", "set", "not-a-number", "zero", "negative", "infinite"],
)
def test_the_body_deadline_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str | None, seconds: float
) -> None:
    if value is None:
        monkeypatch.delenv(ENV_BODY_TIMEOUT, raising=False)
    else:
        monkeypatch.setenv(ENV_BODY_TIMEOUT, value)
    assert body_timeout() == seconds


@pytest.mark.parametrize(
    ("value", "readers"),
    [(None, 4), ("2", 2), ("abc", 4), ("0", 4), ("-3", 4)],
    ids=["unset", "set", "not-a-number", "zero", "negative"],
)
def test_the_reading_places_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str | None, readers: int
) -> None:
    if value is None:
        monkeypatch.delenv(ENV_BODY_READERS, raising=False)
    else:
        monkeypatch.setenv(ENV_BODY_READERS, value)
    assert body_readers() == readers


def test_half_of_the_threads_may_read_bodies() -> None:
    assert [slow_body_readers(threads) for threads in (1, 2, 3, 5, 8)] == [1, 1, 1, 2, 4]


def test_one_address_may_hold_half_of_the_reading_places() -> None:
    assert [address_share(readers) for readers in (1, 2, 3, 4, 8)] == [1, 1, 1, 2, 4]


@pytest.mark.parametrize(
    ("declared", "too_long"),
    [
        (None, False),
        ("", False),
        ("10", False),
        ("11", True),
        (" 11 ", True),
        ("0011", True),
        ("-5", False),
        ("1e9", False),
        ("10, 10", False),
        ("99999999999999999999999", True),
        # Digits of other scripts are no HTTP length (RFC 9110: 1*DIGIT, ASCII): nothing
        # declared, nothing raised ("²" is a digit to str.isdigit, not to int()).
        ("²", False),
        ("\u0661\u0661", False),
        ("1\u0661", False),
    ],
)
def test_a_declared_length_over_the_limit_is_refused_before_reading(
    declared: str | None, too_long: bool
) -> None:
    assert declared_too_long(declared, 10) is too_long


# -- WSGI ------------------------------------------------------------------------------------


class SlowStream:
    """A ``wsgi.input`` whose reads wait until ``release`` is set (a client that announced a
    body and sends nothing), then give ``data``."""

    def __init__(self, data: bytes = b"") -> None:
        self.release = threading.Event()
        self.data = data

    def read(self, size: int = -1) -> bytes:
        self.release.wait(30)
        data, self.data = self.data[:size], self.data[size:]
        return data


class TricklingStream:
    """A ``wsgi.input`` as granian's: ``read(n)`` waits for ``n`` bytes, and the client sends
    one every 0.1 s; ``asked`` records the sizes asked."""

    def __init__(self) -> None:
        self.asked: list[int] = []

    def read(self, size: int = -1) -> bytes:
        self.asked.append(size)
        time.sleep(0.1 * size)
        return b" " * size


class FastStream:
    """A ``wsgi.input`` whose bytes are all there (not a BytesIO); records the sizes asked."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.asked: list[int] = []

    def read(self, size: int = -1) -> bytes:
        self.asked.append(size)
        data, self.data = self.data[:size], self.data[size:]
        return data


def _environ(
    path: str,
    stream: Any,
    length: int,
    content_type: str = "application/json",
    client: str = "127.0.0.1",
) -> dict[str, Any]:
    return {
        "REMOTE_ADDR": client,
        "REQUEST_METHOD": "POST" if stream is not None else "GET",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "HTTP_HOST": "127.0.0.1:8000",
        "wsgi.url_scheme": "http",
        "wsgi.input": stream,
        "wsgi.input_terminated": True,
        "CONTENT_LENGTH": str(length) if stream is not None else "",
        "CONTENT_TYPE": content_type,
    }


def _wsgi(app: App, environ: dict[str, Any]) -> tuple[str, dict[str, str], bytes]:
    answered: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        answered.extend((status, dict(headers)))

    body = b"".join(app.wsgi(environ, start_response))
    return answered[0], answered[1], body


def test_wsgi_a_body_that_comes_is_read_in_growing_steps(
    app: tuple[App, list[Any]], short_deadline: None
) -> None:
    site, seen = app
    data = b'{"a":"' + b"x" * 300_000 + b'"}'
    stream = FastStream(data)
    assert _wsgi(site, _environ(ECHO, stream, len(data)))[0] == "200 OK"
    assert seen == [{"a": "x" * 300_000}]
    # One byte first (a slow client must not be asked for more than it sent), then eight
    # times more each time while the bytes flow, up to 32 KiB.
    steps = [8**n for n in range(6)]
    assert stream.asked[:6] == steps
    rest = len(data) - sum(steps)
    assert stream.asked[6:] == [32768] * (rest // 32768) + [rest % 32768]


def test_wsgi_a_trickling_rest_body_is_answered_408(
    app: tuple[App, list[Any]], short_deadline: None
) -> None:
    site, seen = app
    stream = TricklingStream()
    started = time.monotonic()
    status, headers, body = _wsgi(site, _environ(ECHO, stream, 1000))
    waited = time.monotonic() - started
    assert set(stream.asked) <= {1, 8}
    assert status == "408 Request Timeout"
    assert headers["Content-Type"] == "application/json; charset=UTF-8"
    assert json.loads(body) == _timeout_error(TIMEOUT)
    assert TIMEOUT <= waited < TIMEOUT + 2, waited
    assert seen == []


def test_wsgi_a_slow_page_body_is_answered_a_short_408(
    app: tuple[App, list[Any]], short_deadline: None
) -> None:
    site, _ = app
    stream = TricklingStream()
    status, headers, body = _wsgi(
        site, _environ("/login", stream, 1000, "application/x-www-form-urlencoded")
    )
    assert status == "408 Request Timeout"
    assert headers["Content-Type"] == "text/plain; charset=UTF-8"
    assert body == b"The request body was not received within 0.4 seconds."


def test_wsgi_a_slow_body_for_the_wrapped_site_app_is_answered_a_short_408(
    short_deadline: None,
) -> None:
    called: list[str] = []

    async def site_app(scope: Any, receive: Any, send: Any) -> None:
        called.append(scope["path"])

    site = App("http://127.0.0.1:8000", site=site_app)
    try:
        status, _, body = _wsgi(site, _environ("/upload", TricklingStream(), 1000, "text/plain"))
    finally:
        site.store.close()
    assert status == "408 Request Timeout"
    assert body == b"The request body was not received within 0.4 seconds."
    assert called == []


def test_wsgi_slow_bodies_hold_at_most_four_threads(
    app: tuple[App, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four silent bodies hold the four reading places; a fifth body is answered 503 after
    waiting 0.1 s for a place, and requests without a body are served meanwhile."""
    monkeypatch.setenv(ENV_BODY_TIMEOUT, "3")
    monkeypatch.delenv(ENV_BODY_READERS, raising=False)
    site, seen = app
    assert SLOW_BODY_READERS == 4
    streams = [SlowStream() for _ in range(SLOW_BODY_READERS + 1)]
    with ThreadPoolExecutor(SLOW_BODY_READERS) as pool:
        try:
            slow = [  # four clients: one address may hold only half of the places
                pool.submit(_wsgi, site, _environ(ECHO, stream, 1000, client=f"10.0.0.{i}"))
                for i, stream in enumerate(streams[:SLOW_BODY_READERS])
            ]
            time.sleep(0.5)  # the four took the slow readers' places
            started = time.monotonic()
            status, headers, body = _wsgi(site, _environ(ECHO, streams[-1], 1000))
            waited = time.monotonic() - started
            fast = _wsgi(site, _environ("/svc-json/t/v1/fast", None, 0))
            assert all(not future.done() for future in slow)
        finally:
            for stream in streams:
                stream.release.set()
        answers = [future.result() for future in slow]
    assert status == "503 Service Unavailable"
    assert headers["Retry-After"] == "1"
    assert json.loads(body) == BUSY
    assert bodies.PLACE_WAIT_SECONDS <= waited < 1.0, waited
    assert fast[0] == "200 OK"
    # Released before their deadline: their (empty) bodies were read.
    assert [answer[0] for answer in answers] == ["200 OK"] * SLOW_BODY_READERS
    assert seen == [None] * SLOW_BODY_READERS


def test_wsgi_one_address_holds_at_most_half_of_the_reading_places(
    app: tuple[App, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two silent bodies from one address hold its share (two of the four places): a third
    body from that address is answered 503 after waiting 0.1 s, while a body from another
    address is read and answered; once the silent ones are gone, the address reads again."""
    monkeypatch.setenv(ENV_BODY_TIMEOUT, "3")
    monkeypatch.delenv(ENV_BODY_READERS, raising=False)
    site, seen = app
    assert address_share(SLOW_BODY_READERS) == 2
    streams = [SlowStream() for _ in range(3)]
    with ThreadPoolExecutor(2) as pool:
        try:
            slow = [pool.submit(_wsgi, site, _environ(ECHO, s, 1000)) for s in streams[:2]]
            time.sleep(0.5)
            started = time.monotonic()
            refused = _wsgi(site, _environ(ECHO, streams[2], 1000))
            waited = time.monotonic() - started
            other = _wsgi(site, _environ(ECHO, FastStream(b'{"a":1}'), 7, client="10.0.0.9"))
            assert all(not future.done() for future in slow)
        finally:
            for stream in streams:
                stream.release.set()
        answers = [future.result() for future in slow]
    assert refused[0] == "503 Service Unavailable"
    assert refused[1]["Retry-After"] == "1"
    assert json.loads(refused[2]) == BUSY
    assert bodies.PLACE_WAIT_SECONDS <= waited < 1.0, waited
    assert (other[0], json.loads(other[2])) == ("200 OK", {"echo": {"a": 1}})
    assert [answer[0] for answer in answers] == ["200 OK"] * 2
    again = _wsgi(site, _environ(ECHO, FastStream(b'{"b":2}'), 7))
    assert (again[0], json.loads(again[2])) == ("200 OK", {"echo": {"b": 2}})
    assert seen == [{"a": 1}, None, None, {"b": 2}]


def test_wsgi_reading_places_leave_no_address_behind(app: tuple[App, list[Any]]) -> None:
    """The count of places per address forgets an address that holds none (bounded)."""
    site, _seen = app
    for i in range(50):
        answer = _wsgi(site, _environ(ECHO, FastStream(b"{}"), 2, client=f"10.1.0.{i}"))
        assert answer[0] == "200 OK"
    assert site.wsgi._body_reads._held == {}


# -- ASGI ------------------------------------------------------------------------------------


async def _asgi_silent_body(app: App, path: str, content_type: str) -> tuple[Any, list[Any]]:
    """A POST whose body never comes: the response start message and the body bytes."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", content_type.encode()),
            (b"content-length", b"1000"),
        ],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
    }
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent[0], [message.get("body", b"") for message in sent[1:]]


def test_asgi_a_slow_rest_body_is_answered_408_and_closed(
    app: tuple[App, list[Any]], short_deadline: None
) -> None:
    site, seen = app
    started = time.monotonic()
    start, parts = asyncio.run(_asgi_silent_body(site, ECHO, "application/json"))
    waited = time.monotonic() - started
    assert start["status"] == 408
    assert (b"connection", b"close") in start["headers"]
    assert json.loads(b"".join(parts)) == _timeout_error(TIMEOUT)
    assert TIMEOUT <= waited < TIMEOUT + 2, waited
    assert seen == []


def test_asgi_a_slow_page_body_is_answered_a_short_408(
    app: tuple[App, list[Any]], short_deadline: None
) -> None:
    site, _ = app
    start, parts = asyncio.run(
        _asgi_silent_body(site, "/login", "application/x-www-form-urlencoded")
    )
    assert start["status"] == 408
    assert (b"connection", b"close") in start["headers"]
    assert (b"Content-Type", b"text/plain; charset=UTF-8") in start["headers"]
    assert b"".join(parts) == b"The request body was not received within 0.4 seconds."


def _asgi_post(app: App, body: bytes, receive: Any, length: int | None = None) -> tuple[int, Any]:
    """POST ``body`` to the echo route with ``receive`` as the server's: the status and the
    JSON answer."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": ECHO,
        "raw_path": ECHO.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body) if length is None else length).encode()),
        ],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
    }
    sent: list[MutableMapping[str, Any]] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], json.loads(b"".join(m.get("body", b"") for m in sent[1:]))


BODY = b'{"word": "hello", "n": 12345}'


def _parts(*chunks: bytes) -> list[dict[str, Any]]:
    return [
        {"type": "http.request", "body": chunk, "more_body": number < len(chunks) - 1}
        for number, chunk in enumerate(chunks)
    ]


@pytest.mark.parametrize(
    "how",
    [
        "at-once",
        "after-waiting",
        "in-parts",
        "in-parts-after-waiting",
        "a-future",
        "in-parts-as-mappings",
    ],
)
def test_asgi_a_body_is_read_whole_however_the_server_hands_it_over(
    app: tuple[App, list[Any]], how: str
) -> None:
    """The body that came already is taken without a timer; one the server waits for is read
    under the deadline: the same answer either way."""
    site, seen = app
    messages = (
        _parts(BODY)
        if how in ("at-once", "after-waiting", "a-future")
        else _parts(BODY[:5], BODY[5:20], BODY[20:])
    )

    async def receive() -> Any:
        if "waiting" in how:
            await asyncio.sleep(0)
        message = messages.pop(0)
        return MappingProxyType(message) if "mappings" in how else message

    def future() -> Any:
        done = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(done.set_result, messages.pop(0))
        return done

    status, answer = _asgi_post(site, BODY, future if how == "a-future" else receive)
    assert (status, answer) == (200, {"echo": {"word": "hello", "n": 12345}})
    assert seen == [{"word": "hello", "n": 12345}]


def test_asgi_a_body_longer_than_allowed_that_came_at_once_is_413(
    app: tuple[App, list[Any]],
) -> None:
    site, seen = app
    site.max_body_size = 10
    messages = _parts(BODY)

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    status, answer = _asgi_post(site, BODY, receive, length=5)  # a Content-Length that lies
    assert (status, answer) == (
        413,
        {
            "code": "rest_request_too_large",
            "message": "The request body is too large.",
            "data": {"status": 413, "max_body_size": 10},
        },
    )
    assert seen == []


MIB10 = 10 * 1024 * 1024


@pytest.mark.parametrize(
    ("lengths", "chunks", "limit", "expected"),
    [
        ([b"29"], [BODY], MIB10, BODY),  # a small JSON POST: the common case
        ([b"29"], [BODY], 29, BODY),  # exactly at the limit
        ([b"29"], [BODY], 28, None),  # one byte past it
        ([b"5"], [BODY], 10, None),  # a Content-Length that lies: the bytes count
        ([b"999999"], [BODY], MIB10, BODY),  # six characters: at most 999,999 bytes
        ([b"999999"], [BODY], 999_999, BODY),  # the shortcut's own limit
        ([b"999999"], [BODY], 999_998, None),  # below it: parsed, and too long
        ([b"10485760"], [BODY], MIB10, BODY),  # seven characters: parsed, not too long
        ([b"10485761"], [BODY], MIB10, None),  # refused before reading
        ([b"99999999999999999999999"], [BODY], MIB10, None),
        ([b" 11 "], [BODY], 10, None),
        ([b"0011"], [BODY], 10, None),
        ([b"00000000000000000029"], [BODY], MIB10, BODY),
        ([b"-5"], [BODY], MIB10, BODY),  # not a number: the body read and bounded
        ([b"29", b"29"], [BODY], MIB10, BODY),  # the line twice: joined, not a number
        ([b"11", b"11"], [BODY], 10, None),  # ... and the bytes still count
        ([], [BODY[:5], BODY[5:20], BODY[20:]], MIB10, BODY),  # chunked, several messages
        ([], [BODY[:5], BODY[5:20], BODY[20:]], 20, None),  # ... passing the limit
        ([b"29"], [BODY[:5], b"", BODY[5:]], MIB10, BODY),  # an empty message between
        ([b"29"], [], MIB10, b""),  # the client disconnected before any byte
        ([b"29"], [BODY[:5]], MIB10, BODY[:5]),  # ... after a part
        ([b"0"], [b""], MIB10, b""),
    ],
)
@pytest.mark.parametrize("arrives", ["in its first step", "after waiting", "as a future"])
def test_asgi_a_body_read_at_once_is_the_general_paths(
    lengths: list[bytes],
    chunks: list[bytes],
    limit: int,
    expected: bytes | None,
    arrives: str,
) -> None:
    """The body of a ``receive`` that has its message in its first step (read without a
    timer, its Content-Length checked from the raw line) is what the general path reads of
    the same messages (a ``receive`` that waits, one that gives futures, each under the
    deadline), and what ``declared_too_long`` and the chunks say."""
    from svcrest.http.scope_headers import ScopeHeaders
    from svcrest.serve.asgi import _body_reader

    messages = [*_parts(*chunks), {"type": "http.disconnect"}]
    lines = [(b"host", b"127.0.0.1:8000"), *((b"content-length", n) for n in lengths)]
    headers = ScopeHeaders(lines)
    declared = ", ".join(n.decode() for n in lengths) or None
    joined = b"".join(chunks)
    assert expected == (
        None if declared_too_long(declared, limit) or len(joined) > limit else joined
    )

    async def receive() -> Any:
        if arrives == "after waiting":
            await asyncio.sleep(0)
        return messages.pop(0)

    def future() -> Any:
        done = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(done.set_result, messages.pop(0))
        return done

    async def read() -> bytes | None:
        given = future if arrives == "as a future" else receive
        return await _body_reader(headers, headers.single, given, limit)()

    assert asyncio.run(read()) == expected


def test_asgi_a_body_of_one_message_is_read_without_a_timer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The common case takes no deadline (none read from the environment, no timer); a
    body of several messages does."""
    from svcrest.http.scope_headers import ScopeHeaders
    from svcrest.serve import asgi

    asked: list[float] = []

    def deadline() -> float:
        asked.append(TIMEOUT)
        return TIMEOUT

    monkeypatch.setattr(asgi, "body_timeout", deadline)
    headers = ScopeHeaders([(b"content-length", b"29")])

    def read(*chunks: bytes) -> bytes | None:
        messages = _parts(*chunks)

        async def receive() -> Any:
            return messages.pop(0)

        async def run() -> bytes | None:
            return await asgi._body_reader(headers, headers.single, receive, MIB10)()

        return asyncio.run(run())

    assert read(BODY) == BODY
    assert asked == []
    assert read(BODY[:5], BODY[5:]) == BODY
    assert asked == [TIMEOUT]
