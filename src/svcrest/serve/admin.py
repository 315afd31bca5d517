"""The admin port of ``svcrest serve --admin-port PORT`` (docs/guides/operating.md).

It is served by the launching process (never by the workers, never on the API port), on
``--admin-host`` (loopback unless asked: ``/metrics`` names the site's routes and figures),
from an event loop on a thread of its own, so it answers while every worker is busy:

- ``GET /live``: 200 ``{"status": "ok"}`` while the process runs;
- ``GET /ready``: 200 ``{"status": "ready", "checks": {...}}`` when every check passes, else
  503 ``{"status": "unavailable", "checks": {...}}``. The checks: ``store`` (the database
  answers a ``SELECT 1`` within 250 ms: ``"ok"``, ``"timeout"`` or ``"error"``), on
  PostgreSQL ``listener`` (``"ok"``, or ``"not listening"`` while a worker's session-cache
  listener does not listen: :func:`svcrest.serve.metrics.listener_status`) and ``draining``
  (``"no"``, or ``"yes"`` from the moment a graceful shutdown began);
- ``GET /metrics``: the Prometheus text format of every worker's figures
  (:mod:`svcrest.serve.metrics`).

Any other path is a 404; a method other than ``GET`` and ``HEAD`` a 501.

What a client may hold: a connection costs a coroutine, not a thread; its request head must
arrive within ``READ_TIMEOUT`` seconds and its answer be taken within as long, or it is
closed; at most ``MAX_CONNECTIONS`` are open (a new one past it closes the oldest still
waiting for its head); one answer is served per connection. ``/live`` is answered on the
loop at once; ``/ready`` and ``/metrics`` are computed off the loop, each on a thread of its
own, and requests arriving while one is being computed share its result, so neither ever
waits behind the other (nor behind a flood of either).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import socket
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from svcrest.serve.metrics import metrics_text
from svcrest.store.locations import is_memory, is_postgres_url

__all__ = [
    "BACKLOG",
    "DEFAULT_ADMIN_HOST",
    "ENV_ADMIN_HOST",
    "MAX_CONNECTIONS",
    "READY_TIMEOUT",
    "READ_TIMEOUT",
    "AdminServer",
    "store_probe",
]

#: Seconds the store has to answer a readiness probe.
READY_TIMEOUT: Final = 0.25
#: The environment variable of ``svcrest serve --admin-host`` (the admin port's address).
ENV_ADMIN_HOST: Final = "SVCREST_ADMIN_HOST"
#: SECURITY: loopback; ``/metrics`` is published to the network only when asked for.
DEFAULT_ADMIN_HOST: Final = "127.0.0.1"
#: Seconds a client has to send its request head, and again to take its answer.
READ_TIMEOUT: Final = 3.0
#: Connections open at once; past it a new one closes the oldest still waiting for its head.
MAX_CONNECTIONS: Final = 256
#: The listen backlog (connections the kernel queues before the loop accepts them).
BACKLOG: Final = 1024
#: Bytes of a request head (request line and header lines).
_MAX_HEAD: Final = 8192

Probe = Callable[[], None]


def store_probe(db: str) -> Probe:
    """A probe of the database ``db`` (a file, ``:memory:`` or a PostgreSQL URL): raises
    when it cannot answer ``SELECT 1`` on a connection of its own."""
    if is_memory(db):
        return lambda: None
    if is_postgres_url(db):

        def probe_postgres() -> None:
            import psycopg

            from svcrest.store.pg_url import split_url

            url, _options = split_url(db)
            with psycopg.connect(url, connect_timeout=2) as conn:
                conn.execute("SELECT 1")

        return probe_postgres

    def probe_sqlite() -> None:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=READY_TIMEOUT)
        try:
            conn.execute("SELECT 1").fetchone()
        finally:
            conn.close()

    return probe_sqlite


def _run_probe(probe: Probe) -> str:
    """``"ok"``, ``"error"``, or ``"timeout"`` when ``probe`` takes more than 250 ms (it
    then finishes on its own thread, unwaited)."""
    outcome: list[str] = []

    def run() -> None:
        try:
            probe()
        except Exception:
            outcome.append("error")
        else:
            outcome.append("ok")

    thread = threading.Thread(target=run, name="svcrest-ready-probe", daemon=True)
    thread.start()
    thread.join(READY_TIMEOUT)
    return outcome[0] if outcome else "timeout"


class AdminServer:
    """The admin port's HTTP server, on a daemon thread running an event loop of its own
    (see the module for what a client may hold); :meth:`drain` turns ``/ready`` to 503 for
    good. The socket is bound when the server is made (``server_address``: the address and
    port bound)."""

    def __init__(
        self,
        host: str,
        port: int,
        probe: Probe,
        metrics_dir: str,
        listener: Callable[[], str] | None = None,
        *,
        read_timeout: float = READ_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.probe = probe
        #: The ``listener`` check (PostgreSQL), None for none.
        self.listener = listener
        self.metrics_dir = metrics_dir
        self.draining = threading.Event()
        self.read_timeout = read_timeout
        self.max_connections = max_connections
        self.sock = socket.create_server(
            (host, port),
            family=socket.AF_INET6 if ":" in host else socket.AF_INET,
            backlog=BACKLOG,
        )
        self.server_address: tuple[Any, ...] = self.sock.getsockname()
        self.loop = asyncio.new_event_loop()
        # /ready and /metrics each on a thread of their own: one never waits for the other.
        self._ready_pool = ThreadPoolExecutor(1, thread_name_prefix="svcrest-admin-ready")
        self._metrics_pool = ThreadPoolExecutor(1, thread_name_prefix="svcrest-admin-metrics")
        self._pending: dict[str, asyncio.Future[Any]] = {}
        # Open connections in the order they came, True while waiting for their head.
        self._open: collections.OrderedDict[asyncio.StreamWriter, bool] = collections.OrderedDict()
        self._server: asyncio.Server | None = None
        self._started = threading.Event()
        self._stopping = asyncio.Event()
        self._handlers: set[asyncio.Task[None]] = set()
        self.thread = threading.Thread(target=self._run, name="svcrest-admin", daemon=True)

    def start(self) -> None:
        self.thread.start()
        self._started.wait(5)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._main())
        finally:
            self.loop.close()

    async def _main(self) -> None:
        self._server = await asyncio.start_server(self._serve, sock=self.sock, limit=_MAX_HEAD)
        self._started.set()
        await self._stopping.wait()
        await self._shut_down()

    async def _shut_down(self) -> None:
        assert self._server is not None
        # Accept no more, but close the server only once the connections accepted already
        # have their transports (asyncio cannot make one for a closed server, and would leave
        # its socket open): their handlers close them at once.
        self.loop.remove_reader(self.sock.fileno())
        current = asyncio.current_task()
        deadline = self.loop.time() + 1.0
        closed = False
        while True:
            if not closed and not [
                task
                for task in asyncio.all_tasks()
                if task is not current and task not in self._handlers
            ]:
                self._server.close()
                closed = True
            for writer in list(self._open):
                writer.transport.abort()
            self._open.clear()
            for task in self._handlers:
                task.cancel()
            others = [task for task in asyncio.all_tasks() if task is not current]
            if (closed and not others) or self.loop.time() > deadline:
                break
            if others:
                await asyncio.wait(others, timeout=0.05)
        self._server.close()
        await asyncio.sleep(0.01)  # the aborted transports close their sockets meanwhile

    def stop(self) -> None:
        """Close the port and every connection at once (a shutdown never waits for slow
        clients), within a second or two."""
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self._stopping.set)
            self.thread.join(2)
        else:
            self.sock.close()
        self._ready_pool.shutdown(wait=False, cancel_futures=True)
        self._metrics_pool.shutdown(wait=False, cancel_futures=True)

    def drain(self) -> None:
        """A graceful shutdown began: ``/ready`` answers 503 from now on."""
        self.draining.set()

    def readiness(self) -> tuple[int, dict[str, Any]]:
        checks = {"store": _run_probe(self.probe)}
        if self.listener is not None:
            checks["listener"] = self.listener()
        checks["draining"] = "yes" if self.draining.is_set() else "no"
        ready = checks.get("listener", "ok") == "ok" and checks["store"] == "ok"
        ready = ready and checks["draining"] == "no"
        status = "ready" if ready else "unavailable"
        return (200 if ready else 503), {"status": status, "checks": checks}

    def _shared(
        self, key: str, pool: ThreadPoolExecutor, call: Callable[[], Any]
    ) -> Awaitable[Any]:
        """The result of ``call`` run in ``pool``, shared by every request that asks while it
        runs (PERF, SECURITY: a flood of probes computes it once at a time)."""
        pending = self._pending.get(key)
        if pending is None or pending.done():
            pending = self.loop.run_in_executor(pool, call)
            self._pending[key] = pending
        return asyncio.shield(pending)

    async def _answer(self, target: str) -> tuple[int, str, bytes]:
        """The status, media type and body of ``GET target``."""
        path = target.partition("?")[0]
        if path == "/live":  # answered first, on the loop: never queued behind the others
            return _LIVE
        if path == "/ready":
            status, body = await self._shared("ready", self._ready_pool, self.readiness)
            if self.draining.is_set() and body["checks"]["draining"] == "no":
                # A shutdown began while the shared checks ran: it shows from that moment.
                checks = {**body["checks"], "draining": "yes"}
                status, body = 503, {"status": "unavailable", "checks": checks}
            return status, _JSON, _json(body)
        if path == "/metrics":
            text, media = await self._shared(
                "metrics", self._metrics_pool, lambda: metrics_text(self.metrics_dir)
            )
            return 200, media, text
        return _NOT_FOUND

    def _admit(self, writer: asyncio.StreamWriter) -> None:
        """Count a new connection; past the bound, close the oldest one still waiting for
        its head (or this one, when none is)."""
        if self._stopping.is_set():
            writer.transport.abort()
            return
        if len(self._open) >= self.max_connections:
            oldest = next((w for w, waiting in self._open.items() if waiting), writer)
            oldest.transport.abort()
            self._open.pop(oldest, None)
        if not writer.transport.is_closing():
            self._open[writer] = True

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        self._admit(writer)
        try:
            # A connection cancelled at shutdown ends quietly (asyncio's stream callback
            # logs a cancelled handler as an error).
            with contextlib.suppress(
                OSError, asyncio.IncompleteReadError, TimeoutError, asyncio.CancelledError
            ):
                status, media, body, head_only = await self._respond(reader, writer)
                lines = (
                    f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
                    f"Content-Type: {media}\r\nContent-Length: {len(body)}\r\n"
                    "Cache-Control: no-store\r\nConnection: close\r\n\r\n"
                )
                writer.write(lines.encode("latin-1") + (b"" if head_only else body))
                await asyncio.wait_for(writer.drain(), self.read_timeout)
        finally:
            self._open.pop(writer, None)
            writer.transport.abort()
            self._handlers.discard(task)

    async def _respond(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> tuple[int, str, bytes, bool]:
        """The status, media type and body of the connection's one request, and whether it
        was a HEAD."""
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.read_timeout)
        except (asyncio.LimitOverrunError, ValueError):
            return (
                431,
                _JSON,
                _json({"code": "too_large", "message": "Request head too large."}),
                False,
            )
        self._open[writer] = False  # no longer waiting: never closed to make room
        method, _, rest = head.partition(b" ")
        target = rest.partition(b" ")[0].decode("latin-1")
        if method not in (b"GET", b"HEAD"):
            return *_NOT_IMPLEMENTED, False
        status, media, body = await self._answer(target)
        return status, media, body, method == b"HEAD"


_JSON: Final = "application/json"


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


_LIVE: Final = (200, _JSON, _json({"status": "ok"}))
_NOT_FOUND: Final = (404, _JSON, _json({"code": "not_found", "message": "No such admin page."}))
_NOT_IMPLEMENTED: Final = (
    501,
    _JSON,
    _json({"code": "not_implemented", "message": "Only GET and HEAD are served here."}),
)
_REASONS: Final = {
    200: "OK",
    404: "Not Found",
    431: "Request Header Fields Too Large",
    501: "Not Implemented",
    503: "Service Unavailable",
}
