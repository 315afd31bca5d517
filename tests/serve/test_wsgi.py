"""The WSGI adapter: the environ read as the ASGI adapter reads a scope, the answer's header
lines made safe, and the pipeline's coroutine driven from the server's thread, whether it
finishes at once or waits for something (issue 11: WSGI as lean as ASGI)."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from svcrest import App, Request
from svcrest.bounded import Memo
from svcrest.http import environ as environ_module
from svcrest.http import exchange
from svcrest.http.environ import EnvironHeaders
from svcrest.http.exchange import HttpResponse, safe_header_line
from svcrest.http.headers import PROBE_LONGEST, Headers, probe_length
from svcrest.serve.wsgi import _request

#: Set by the test routes' callbacks: must never be seen outside the request that set it.
MARK: contextvars.ContextVar[str] = contextvars.ContextVar("test_wsgi_mark", default="")


def _reference_headers(environ: dict[str, Any]) -> list[tuple[str, str]]:
    """The header lines as the adapter read them before it was made lean (the reference)."""
    lines = []
    for key, value in environ.items():
        if key[:5] == "HTTP_" and key.isupper():  # RFC 3875: upper-cased names
            name = key[5:].replace("_", "-").lower()
        elif (key == "CONTENT_TYPE" or key == "CONTENT_LENGTH") and value:
            name = key.replace("_", "-").lower()
        else:
            continue
        lines.append((name.title(), value))
    return lines


ENVIRON_KEYS = st.sampled_from(
    [
        "HTTP_HOST",
        "HTTP_ORIGIN",
        "HTTP_X_CUSTOM_THING",
        "HTTP_CONTENT_TYPE",
        "HTTP_COOKIE",
        "HTTP_Cookie",
        "HTTP_X_SVC_NONCE",
        "HTTP_TRANSFER_ENCODING",
        "HTTP_",
        "http_lower",
        "HTTPS",
        "CONTENT_TYPE",
        "CONTENT_LENGTH",
        "CONTENT_MD5",
        "REQUEST_METHOD",
        "wsgi.url_scheme",
        "",
        "H",
        "C",
    ]
) | st.text(min_size=0, max_size=12)


@given(st.dictionaries(ENVIRON_KEYS, st.sampled_from(["", "0", "a b", "x, y", "é"])))
def test_environ_header_lines_match_the_reference(environ: dict[str, Any]) -> None:
    http = _request(environ)
    headers = http.headers
    index = headers.index()
    expected = _reference_headers(environ)
    assert headers.items_list() == expected
    grouped: dict[str, list[str]] = {}
    for name, value in expected:
        grouped.setdefault(name.lower(), []).append(value)
    assert index == grouped
    assert headers.index() == grouped


#: Names asked of a request's headers: usual ones (answered from the environ), the two that
#: two keys carry, odd ones (answered from the listed lines) and ones no key is read as.
ASKED = [
    "host",
    "origin",
    "cookie",
    "x-svc-nonce",
    "transfer-encoding",
    "content-type",
    "content-length",
    "content-md5",
    "x-custom-thing",
    "",
    "x_custom_thing",
    "Cookie",
    "straße",
]
PROBES = [
    frozenset({"cookie", "authorization", "x-svc-nonce", "x-wp-nonce"}),
    frozenset({"transfer-encoding", "content-length"}),
    frozenset({"content-type"}),
    frozenset({"x_custom_thing", "Cookie"}),
    frozenset(),
]


@given(st.dictionaries(ENVIRON_KEYS, st.sampled_from(["", "0", "a b", "x, y", "é"])))
def test_environ_headers_answer_as_their_listed_lines(environ: dict[str, Any]) -> None:
    listed = Headers(_reference_headers(environ))
    lazy = EnvironHeaders(environ)
    before = [(lazy.get_joined(name.lower()), lazy.get(name, "-")) for name in ASKED]
    probed = [lazy.has_any(names) for names in PROBES]
    assert before == [(listed.get_joined(name.lower()), listed.get(name, "-")) for name in ASKED]
    assert probed == [listed.has_any(names) for names in PROBES]
    # Listed on demand, in the environ's order; the answers stay the same afterwards.
    assert lazy.items_list() == listed.items_list()
    assert [(lazy.get_joined(name.lower()), lazy.get(name, "-")) for name in ASKED] == before
    assert [lazy.has_any(names) for names in PROBES] == probed
    assert lazy == listed


def test_the_memory_of_asked_name_sets_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    remembered: Memo[frozenset[str], Any] = Memo(2, PROBE_LONGEST, probe_length)
    monkeypatch.setattr(environ_module, "_PROBES", remembered)
    monkeypatch.setattr(environ_module, "_probe_of", remembered.get)
    headers = EnvironHeaders({"HTTP_X_A": "1"})
    many = frozenset(f"x-{n}" for n in range(17))
    long = frozenset({"x-" + "a" * 63})
    assert [headers.has_any(names) for names in (many, long)] == [False, False]
    assert len(remembered) == 0  # too many names; a name too long
    asked = [frozenset({"x-a"}), frozenset({"x-b"}), frozenset({"x-c"})]
    assert [headers.has_any(names) for names in asked] == [True, False, False]
    assert list(remembered) == asked[2:]  # emptied when full (at 2)


def test_keys_of_the_server_are_learned_as_not_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    learned: set[str] = set()
    monkeypatch.setattr(environ_module, "_NOT_HEADERS", learned)
    monkeypatch.setattr(environ_module, "_is_not_header", learned.__contains__)
    monkeypatch.setattr(environ_module, "_NOT_HEADERS_MAX", 3)
    environ = {
        "SHELL": "/bin/sh",  # granian: the server process's environment variables
        "HTTP_HOST": "site.test",
        "HTTP_X_ODD": "1",
        "CONTENT_TYPE": "text/plain",
        "L" * 257: "too long to remember",
        "PATH": "/usr/bin",
    }
    expected = [("Host", "site.test"), ("X-Odd", "1"), ("Content-Type", "text/plain")]
    assert _request(environ).headers.items_list() == expected
    assert learned == {"SHELL", "PATH"}  # never a header's key, never an over-long key
    environ["HOME"] = "/root"
    environ["TERM"] = "dumb"
    assert _request(environ).headers.items_list() == expected  # the same lines again
    assert learned == {"SHELL", "PATH", "HOME"}  # full at 3: nothing more is added


@pytest.mark.parametrize(
    ("lines", "host"),
    [
        ({"HTTP_HOST": "Example.org:8080"}, "example.org"),
        ({"HTTP_HOST": "[::1]:8000"}, "::1"),
        ({"HTTP_HOST": ""}, "server.example"),  # an empty Host: the server's name
        ({}, "server.example"),
    ],
    ids=["with port", "IPv6", "empty", "none"],
)
def test_the_host_comes_from_the_host_line_else_the_server_name(
    lines: dict[str, str], host: str
) -> None:
    http = _request({"SERVER_NAME": "Server.Example", **lines})
    assert http.host == host
    assert (http.method, http.path, http.query_string) == ("GET", "/", "")


LINES = st.lists(
    st.tuples(
        st.sampled_from(["Allow", "X-Evil", "Link", "x\r\ny", "Ünï"]),
        st.text(alphabet=st.sampled_from("ab,\r\n\x00é€ "), max_size=8) | st.just("a" * 300),
    ),
    max_size=6,
)


@given(LINES, LINES, st.sampled_from([200, 204, 304, 101, 404]))
def test_safe_headers_match_safe_header_line(
    prefix: list[tuple[str, str]], rest: list[tuple[str, str]], status: int
) -> None:
    safe_prefix = [safe_header_line(*line) for line in prefix]
    for _ in range(2):  # the second time, from what the first remembered
        answer = HttpResponse(status, [*safe_prefix, *rest], b"body")
        answer.wire_prefix = tuple((b"", b"") for _ in safe_prefix)
        expected = [*safe_prefix, *(safe_header_line(*line) for line in rest)]
        if status >= 200 and status not in (204, 304):
            expected.append(("Content-Length", "4"))
        assert answer.safe_headers() == expected


def test_the_memory_of_safe_lines_stays_bounded() -> None:
    for number in range(3 * exchange._CACHE_MAX):
        HttpResponse(200, [("X-N", str(number)), ("X-Long", "v" * 400)]).safe_headers()
    assert len(exchange._SAFE_AS_IS) <= exchange._CACHE_MAX
    assert all(
        len(name) + len(value) <= exchange._CACHE_LINE for name, value in exchange._SAFE_AS_IS
    )


def _environ(path: str, host: str = "127.0.0.1:8000") -> dict[str, Any]:
    return {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "wsgi.url_scheme": "http",
        "HTTP_HOST": host,
    }


def _call(app: App, environ: dict[str, Any]) -> tuple[str, dict[str, str], bytes]:
    answered: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        answered.extend((status, dict(headers)))

    body = b"".join(app.wsgi(environ, start_response))
    return answered[0], answered[1], body


def _app(callback: Callable[..., Any]) -> App:
    app = App("http://127.0.0.1:8000")
    app.register_rest_route(
        "t/v1", "/go", {"methods": "GET", "callback": callback, "permission_callback": lambda: True}
    )
    return app


@pytest.mark.parametrize("wait", ["bare yield", "timer", "thread"])
def test_a_pipeline_that_waits_is_finished_on_the_loop(wait: str) -> None:
    async def callback(request: Request) -> dict[str, Any]:
        MARK.set("mine")
        if wait == "bare yield":
            await asyncio.sleep(0)
        elif wait == "timer":
            await asyncio.sleep(0.01)
        else:
            await asyncio.get_running_loop().run_in_executor(None, lambda: None)
        return {"mark": MARK.get(), "thread": threading.current_thread().name}

    status, headers, body = _call(_app(callback), _environ("/svc-json/t/v1/go"))
    assert status == "200 OK"
    assert headers["Content-Length"] == str(len(body))
    assert body == f'{{"mark":"mine","thread":"{threading.current_thread().name}"}}'.encode()
    assert MARK.get() == ""  # the request's context variables stayed in the request


@pytest.mark.parametrize("when", ["at once", "after waiting"])
def test_an_exception_in_the_pipeline_answers_500(when: str) -> None:
    async def callback(request: Request) -> dict[str, Any]:
        if when == "after waiting":
            await asyncio.sleep(0.01)
        raise ValueError("secret detail")

    status, _, body = _call(_app(callback), _environ("/svc-json/t/v1/go"))
    assert status.startswith("500 ")
    assert b"secret detail" not in body
    # The thread's loop is left clean: the next request is answered.
    app = _app(lambda: {"ok": True})
    assert _call(app, _environ("/svc-json/t/v1/go"))[2] == b'{"ok":true}'


def test_concurrent_wsgi_threads_keep_their_own_request_state() -> None:
    barrier = threading.Barrier(2, timeout=10)

    async def callback(request: Request) -> dict[str, Any]:
        from svcrest.http.context import current_context

        MARK.set(request.get_header("x-mark") or "")
        await asyncio.sleep(0.01)  # both requests are in flight from here on
        await asyncio.get_running_loop().run_in_executor(None, barrier.wait)
        ctx = current_context()
        assert ctx is not None
        return {"mark": MARK.get(), "host": ctx.host}

    app = _app(callback)
    results: dict[str, bytes] = {}

    def serve(mark: str) -> None:
        environ = {**_environ("/svc-json/t/v1/go", f"{mark}.example"), "HTTP_X_MARK": mark}
        results[mark] = _call(app, environ)[2]

    threads = [threading.Thread(target=serve, args=(mark,)) for mark in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert results == {
        "a": b'{"mark":"a","host":"a.example"}',
        "b": b'{"mark":"b","host":"b.example"}',
    }


def test_wsgi_called_from_a_running_event_loop() -> None:
    async def callback(request: Request) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"mark": MARK.get()}

    app = _app(callback)

    async def main() -> tuple[str, dict[str, str], bytes]:
        MARK.set("caller")  # the caller's context variables are seen, as by a Task
        return _call(app, _environ("/svc-json/t/v1/go"))

    status, _, body = asyncio.run(main())
    assert (status, body) == ("200 OK", b'{"mark":"caller"}')


@pytest.mark.parametrize("length", ["²", "\u0661\u0661", "1\u0661"])
def test_a_content_length_of_other_scripts_digits_declares_nothing(length: str) -> None:
    """RFC 9110's Content-Length is ASCII digits: one of another script's digits (a digit to
    ``str.isdigit``, not always to ``int()``) declares no length, so the body is not read
    (the stream does not say it ends on its own) and the request is answered, never a 500."""
    import io

    from tests.serve.conftest import echo_site

    site, seen = echo_site(lambda: {})
    environ = _environ("/svc-json/t/v1/echo")
    environ.update(
        REQUEST_METHOD="POST",
        CONTENT_TYPE="application/json",
        CONTENT_LENGTH=length,
    )
    environ["wsgi.input"] = io.BytesIO(b'{"a": 1}')
    status, _, body = _call(site, environ)
    assert (status, body, seen) == ("200 OK", b'{"echo":null}', [None])
