"""The WSGI interface on uvicorn: the site's WSGI callable behind a small ASGI bridge.

uvicorn runs a WSGI application on a thread pool through a bridge of its own (deprecated
there in favour of a2wsgi) and writes its access-log line on the event loop, which never
sees what the WSGI thread set in a context variable: the lines said ``request_id=-``.
``svcrest serve --server uvicorn --interface wsgi`` therefore serves :class:`WSGIBridge` on
uvicorn's ASGI interface instead: it runs the WSGI callable in a copy of the request's
context on one of its threads, then carries the answered request
(:data:`svcrest.http.request_id.LOGGED_REQUEST`) back before it sends the answer, so each
access-log line names the request's id, route and user as granian's do.

It reads a body only as far as the site accepts one (``max_body_size`` plus one byte: the
site then answers 413) and within the body time-out (``SVCREST_BODY_TIMEOUT``: the site
then answers 408 ``svc_body_timeout``, as on ASGI), where uvicorn's bridge kept any body
whole in memory, however long it took. The environ is uvicorn's own
(``uvicorn.middleware.wsgi.build_environ``). Its lifespan is the App's: SIGTERM and SIGINT
end the site's waiting long-polls at once (:func:`svcrest.serve.asgi.answer_lifespan`).
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import io
import os
from collections.abc import Callable, Iterable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from svcrest.http.request_id import ACCESS_LOG, LOGGED_REQUEST
from svcrest.http.streams import StreamSlots
from svcrest.serve.asgi import answer_lifespan
from svcrest.serve.bodies import body_timeout, body_timeout_error

__all__ = ["ENV_TARGET", "FACTORY", "THREADS", "WSGIBridge", "bridge_from_env", "configure"]

#: The workers' factory (``module:function``) of the bridged site.
FACTORY: Final = "svcrest.serve.uvicorn_wsgi:bridge_from_env"
#: The site's own WSGI factory (``module:function``) the bridge calls.
ENV_TARGET: Final = "SVCREST_WSGI_TARGET"
#: Threads that run WSGI calls, per worker (as many as uvicorn's own bridge has).
THREADS: Final = 10

Message = MutableMapping[str, Any]
Receive = Callable[[], Any]
Send = Callable[[Message], Any]
WSGIApp = Callable[[Message, Callable[..., Any]], Iterable[bytes]]


class WSGIBridge:
    """An ASGI application serving the WSGI callable ``wsgi`` (see the module docstring);
    ``max_body_size``: the most body bytes the site accepts (None: the callable's
    ``host.max_body_size``, as ``app.wsgi`` has)."""

    def __init__(
        self, wsgi: WSGIApp, max_body_size: int | None = None, threads: int = THREADS
    ) -> None:
        self.wsgi = wsgi
        host: Any = getattr(wsgi, "host", None)  # the site of a svcrest WSGI adapter (app.wsgi)
        if max_body_size is None:
            max_body_size = int(host.max_body_size)
        self.max_body_size = max_body_size
        self._threads = ThreadPoolExecutor(threads, thread_name_prefix="svcrest-wsgi")
        self._body_timeout = body_timeout()
        # The site's streams: SIGTERM and SIGINT end its waiting long-polls at once (the
        # lifespan, as on the ASGI interface), not after uvicorn's graceful time-out.
        streams = getattr(host, "streams", None)
        self._streams = streams if isinstance(streams, StreamSlots) else None

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await answer_lifespan(receive, send, self._streams)
            return
        if scope["type"] != "http":  # websockets: not served
            return
        from uvicorn.middleware.wsgi import build_environ

        stream: io.BytesIO | _TimedOut
        try:
            async with asyncio.timeout(self._body_timeout):
                stream = io.BytesIO(await self._body(scope, receive))
        except TimeoutError:
            stream = _TimedOut(self._body_timeout)
        build: Callable[..., Message] = build_environ  # its arguments: uvicorn's TypedDicts
        environ = build(scope, {"type": "http.request"}, stream)
        if _length(scope) is None:
            environ["wsgi.input_terminated"] = True  # the whole body (or limit + 1) is in
        context = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        status, headers, chunks = await loop.run_in_executor(
            self._threads, context.run, _call, self.wsgi, environ
        )
        # The request the site answered, for the access-log line uvicorn writes in send().
        if ACCESS_LOG.on:
            LOGGED_REQUEST.set(context.get(LOGGED_REQUEST))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": chunks, "more_body": False})

    async def _body(self, scope: Message, receive: Receive) -> bytes:
        """The request's body: none when its announced length passes the limit (the site
        answers 413 without reading it), else at most the limit plus one byte."""
        length = _length(scope)
        limit = self.max_body_size + 1
        if length is not None and (length == 0 or length >= limit):
            return b""
        parts: list[bytes] = []
        size = 0
        more = True
        while more and size < limit:
            message = await receive()
            if message["type"] != "http.request":  # the client left
                break
            part = message.get("body", b"")
            parts.append(part)
            size += len(part)
            more = message.get("more_body", False)
        body = b"".join(parts)
        return body[:limit]


class _TimedOut:
    """The ``wsgi.input`` of a body that did not come in time: reading it raises the 408."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def read(self, size: int = -1) -> bytes:
        raise body_timeout_error(self.seconds)


def _length(scope: Message) -> int | None:
    """The announced ``Content-Length`` (None: none, or not a number)."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isascii() and text.isdigit() else None
    return None


def _call(wsgi: WSGIApp, environ: Message) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """Run the WSGI call (on a bridge thread): its status, header lines and whole body."""
    started: list[tuple[str, list[tuple[str, str]]]] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        started.append((status, headers))

    result = wsgi(environ, start_response)
    try:
        body = b"".join(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    status, headers = started[-1]
    lines = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]
    return int(status.split(" ", 1)[0]), lines, body


def configure(target: str) -> None:
    """Name the site's WSGI factory (``module:function``) for :func:`bridge_from_env`."""
    os.environ[ENV_TARGET] = target


def bridge_from_env() -> WSGIBridge:
    """The ASGI factory of uvicorn's workers on the WSGI interface: the bridge of what the
    factory ``SVCREST_WSGI_TARGET`` builds."""
    module, _, name = os.environ[ENV_TARGET].partition(":")
    factory: Any = importlib.import_module(module)
    for part in name.split("."):
        factory = getattr(factory, part)
    return WSGIBridge(factory())
