"""In-process cost of one request: the ASGI and WSGI callables driven in a loop, no sockets.

Usage::

    python bench/inprocess.py [--rounds 15] [--calls 5000] [--json]

Each case sends ``GET /svc-json/demo/v1/items/42`` (with ``Origin``, so CORS runs) to an App
built as ``bench/targets/svcrest_plain.py`` builds it and reports the best mean time per call
of ``--rounds`` rounds of ``--calls`` calls (noise only ever slows a round down). The cases:

- ``anonymous GET``: the plain read;
- ``+1 pre_serve filter``: the same App with one plain filter of one's own on
  ``rest_pre_serve_request`` (the filter itself costs ~0.1 µs);
- ``404``: a path no route matches;
- ``cookie + nonce GET``: a route with a permission callback, read by a logged-in
  administrator with the session cookie and an ``X-SVC-Nonce``;
- ``WSGI anonymous GET``: the first case through ``app.wsgi``;
- ``WSGI cookie + nonce GET``: the cookie + nonce case through ``app.wsgi`` (what the
  default pair, granian WSGI, serves).

The ASGI cases run on uvloop when it is installed (as uvicorn would), else on asyncio.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import sys
import time
from collections.abc import Callable, MutableMapping, Sequence
from typing import Any

PATH = "/svc-json/demo/v1/items/42"
HOME = "http://127.0.0.1:8000"
LOGIN = "bench"
PASSWORD = "bench-password-0123"


def get_item(request: Any) -> dict[str, Any]:
    """Return the item named by the URL parameter."""
    return {"id": int(request["id"]), "title": "item"}


def logged_in(request: Any) -> bool:
    """Only a logged-in user may read."""
    return bool(request.user.id)


def make_app(
    *, permission: bool = False, extra_filter: bool = False, extra_post_filter: bool = False
) -> Any:
    import svcrest
    from svcrest import App

    app = App(HOME)
    # svcrest.public where the measured tree has it (older trees, compared with it, do not).
    public = getattr(svcrest, "public", None)
    handler: dict[str, Any] = {
        "methods": "GET",
        "callback": get_item,
        "permission_callback": logged_in if permission else public,
    }
    app.register_rest_route("demo/v1", r"/items/(?P<id>\d+)", handler)
    if extra_filter:
        app.hooks.add_filter("rest_pre_serve_request", lambda served, *args: served)
    if extra_post_filter:
        app.hooks.add_filter("rest_post_dispatch", lambda response, *args: response)
    return app


def _scope(path: str, headers: list[tuple[bytes, bytes]], method: str = "GET") -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"user-agent", b"wrk"),
            (b"origin", b"http://example.com"),
            *headers,
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }


def asgi_case(
    app: Any,
    path: str,
    headers: list[tuple[bytes, bytes]],
    expect: int,
    method: str = "GET",
    body: bytes = b"",
) -> Any:
    """A coroutine function running ``n`` requests (``body`` in one message, as a server
    hands over a small body it read already); checks the first answer's status."""
    scope = _scope(path, headers, method)
    request_message = {"type": "http.request", "body": body, "more_body": False}
    status: list[int] = []

    async def receive() -> dict[str, Any]:
        return request_message

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    async def run(n: int) -> None:
        for _ in range(n):
            await app(dict(scope), receive, send)
        if status[0] != expect:
            raise SystemExit(f"{path} answered {status[0]}, expected {expect}")

    return run


def access_logged(app: Any, writer: str) -> Any:
    """``app`` with ``svcrest serve``'s access log as a granian ASGI worker has it (the
    launcher's text configuration, its lines to ``/dev/null``): ``writer`` ``"svcrest"`` for
    svcrest's own line (``svcrest.serve.accesslog.AccessLogged``, the default since session
    19), ``"granian"`` for granian's record (its ASGI glue's logger, the default before)."""
    import logging
    import logging.config

    from granian.log import LOGGING_CONFIG

    from svcrest.http.request_id import ACCESS_LOG
    from svcrest.serve import accesslog
    from svcrest.serve.launcher import _log_config

    logging.config.dictConfig(_log_config(LOGGING_CONFIG, "access", "text"))
    (handler,) = logging.getLogger("granian.access").handlers
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(open(os.devnull, "w"))  # noqa: SIM115 - the process's life
    ACCESS_LOG.on = True
    if writer == "svcrest":
        return accesslog.AccessLogged(app, accesslog.AccessLine("text"))
    from granian.asgi import _build_access_logger
    from granian.log import DEFAULT_ACCESSLOG_FMT

    log = _build_access_logger(DEFAULT_ACCESSLOG_FMT)  # type: ignore[no-untyped-call]

    async def granian_logged(scope: Any, receive: Any, send: Any) -> None:
        # granian's _http_logger: the status it keeps in Rust (proto.sent_response_code)
        # is the one the answer's head had.
        started, clock = time.time(), time.perf_counter()
        try:
            await app(scope, receive, send)
        finally:
            log(started, clock, scope, 200)

    return granian_logged


class _RSGIHeaders(dict[str, list[str]]):
    """A stand-in for granian's ``RSGIHeaders`` (lower-case name → its values): ``in`` and
    ``get_all`` are dict operations in C here (granian's are Rust calls); a name not there
    costs one Python call (``__missing__``), which granian's does not."""

    def __missing__(self, name: str) -> list[str]:
        return []

    get_all = dict.__getitem__

    def items(self) -> list[tuple[str, str]]:  # type: ignore[override]
        return [(name, value) for name, values in dict.items(self) for value in values]


class _RSGIScope:
    __slots__ = ("client", "headers", "method", "path", "proto", "query_string", "scheme")
    server = "127.0.0.1:8000"
    http_version = "1.1"
    authority = None

    def __init__(self, path: str, headers: Sequence[tuple[bytes, bytes]]) -> None:
        lines = _RSGIHeaders()
        for name, value in _scope(path, list(headers))["headers"]:
            lines.setdefault(name.decode("latin-1"), []).append(value.decode("latin-1"))
        self.proto, self.method, self.path, self.query_string = "http", "GET", path, ""
        self.scheme, self.client, self.headers = "http", "127.0.0.1:50000", lines


class _RSGIProtocol:
    """Records the status; what a plain GET calls of granian's protocol."""

    __slots__ = ("status",)

    def __init__(self) -> None:
        self.status = 0

    def response_bytes(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.status = status


def rsgi_case(app: Any, path: str, headers: Sequence[tuple[bytes, bytes]], expect: int) -> Any:
    """A coroutine function running ``n`` requests through the App's RSGI callable (a scope
    and protocol standing in for granian's: see ``_RSGIHeaders``); checks the status."""
    scope = _RSGIScope(path, headers)
    protocol = _RSGIProtocol()
    serve = app.__rsgi__

    async def run(n: int) -> None:
        for _ in range(n):
            await serve(scope, protocol)
        if protocol.status != expect:
            raise SystemExit(f"RSGI {path} answered {protocol.status}, expected {expect}")

    return run


def wsgi_case(
    app: Any,
    path: str,
    expect: int,
    headers: Sequence[tuple[bytes, bytes]] = (),
) -> Callable[[int], None]:
    environ = {
        # granian's WSGI environ also carries the server process's environment variables
        **os.environ,
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        # The keys PEP 3333 requires (Falcon reads them; bench/budget.py runs it here too).
        "wsgi.version": (1, 0),
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        "HTTP_HOST": "127.0.0.1:8000",
        "HTTP_USER_AGENT": "wrk",
        "HTTP_ORIGIN": "http://example.com",
        **{
            f"HTTP_{name.decode().upper().replace('-', '_')}": value.decode()
            for name, value in headers
        },
    }
    status: list[str] = []

    def start_response(line: str, headers: list[tuple[str, str]]) -> None:
        status.append(line)

    wsgi = app.wsgi

    def run(n: int) -> None:
        for _ in range(n):
            b"".join(wsgi(dict(environ), start_response))
        if not status[0].startswith(str(expect)):
            raise SystemExit(f"WSGI {path} answered {status[0]}")

    return run


def login_headers(app: Any) -> list[tuple[bytes, bytes]]:
    app.users.create(LOGIN, PASSWORD, roles=("administrator",))
    user = app.users.get_by_login(LOGIN)
    issued = app.auth.log_in(user, remember=False, ip="127.0.0.1", user_agent="wrk", secure=False)
    cookie = issued.set_cookie_header().split(";", 1)[0]
    nonce = app.auth.create_nonce("svc_rest", user.id, issued.token)
    return [(b"cookie", cookie.encode()), (b"x-svc-nonce", nonce.encode())]


def best_of(run: Callable[[int], Any], rounds: int, calls: int, loop: Any) -> float:
    timings = []
    for _ in range(rounds):
        start = time.perf_counter()
        outcome = run(calls)
        if loop is not None:
            loop.run_until_complete(outcome)
        timings.append((time.perf_counter() - start) / calls)
    return min(timings) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    loop: asyncio.AbstractEventLoop
    try:
        import uvloop

        loop = uvloop.new_event_loop()
        loop_name = "uvloop"
    except ImportError:
        loop = asyncio.new_event_loop()
        loop_name = "asyncio"
    auth_app = make_app(permission=True)
    cases: list[tuple[str, Callable[[int], Any], Any]] = [
        ("anonymous GET", asgi_case(make_app(), PATH, [], 200), loop),
        ("+1 pre_serve filter", asgi_case(make_app(extra_filter=True), PATH, [], 200), loop),
        ("404", asgi_case(make_app(), "/svc-json/demo/v1/nothing/42", [], 404), loop),
        ("cookie + nonce GET", asgi_case(auth_app, PATH, login_headers(auth_app), 200), loop),
        ("WSGI anonymous GET", wsgi_case(make_app(), PATH, 200), None),
    ]
    wsgi_auth_app = make_app(permission=True)
    cases.append(
        (
            "WSGI cookie + nonce GET",
            wsgi_case(wsgi_auth_app, PATH, 200, login_headers(wsgi_auth_app)),
            None,
        )
    )
    results: dict[str, float] = {}
    for name, run, case_loop in cases:
        best_of(run, 1, 200, case_loop)  # warm up: server built, routes compiled
        results[name] = best_of(run, options.rounds, options.calls, case_loop)
    if options.json:
        print(json.dumps({"loop": loop_name, "microseconds": results}))
        return
    print(f"best of {options.rounds} x {options.calls} calls, ASGI on {loop_name}")
    for name, micros in results.items():
        print(f"{name:24} {micros:7.2f} us")


if __name__ == "__main__":
    main()
