"""Run a site under granian or uvicorn, on its WSGI or ASGI interface (or granian's own,
RSGI), within bounds.

The one module that knows the servers' options (the command line only parses and calls
:func:`serve`). Both servers load the site in their worker processes through an import
string naming a factory (``svcrest.cli:app_from_env`` for ASGI and RSGI, the App being
both, ``…:wsgi_from_env`` for WSGI) configured through the environment; uvicorn with one
worker and no reloader serves an App built already (``ServeConfig.app``), which an
in-memory database needs.

Bounds (docs/guides/serving.md, "Limits"), :class:`Limits`:

=====================  ==========================================  ==============================
bound                  granian                                     uvicorn
=====================  ==========================================  ==============================
request head size      ``http1_settings.max_buffer_size``: 431     ``BoundedHttpToolsProtocol``:
                       (hyper's read buffer; min 8 KiB)            431 and closed
head time-out          ``http1_settings.header_read_timeout``:     ``BoundedHttpToolsProtocol``:
(slow headers)         closed (also bounds an idle keep-alive)     closed
idle keep-alive        the head time-out (hyper has no separate    ``timeout_keep_alive``
                       idle time-out on HTTP/1)
concurrent requests    ``backpressure`` (queued beyond it)         ``limit_concurrency`` (503)
body size              ``App(max_body_size=...)``, both servers    the same
body time-out          the adapters (``SVCREST_BODY_TIMEOUT``):    the same (ASGI)
(slow bodies)          408; WSGI: slow bodies hold at most 4 of
                       the 8 threads (one address at most half
                       of those), 503 beyond
=====================  ==========================================  ==============================

``--reload`` watches the Python files under the current directory only (a log or database
file written there restarts nothing); granian's workers are then started as fresh
interpreters (``spawn``), as uvicorn's are, so that they import the edited plugins instead of
inheriting the modules this process imported while preparing the site. A worker that cannot
build the site (a plugin saved with a syntax error) reports it and exits; both reloaders
keep watching and serve again after the next change. ``--proxy-headers``
on granian, which reads no forwarded header itself, wraps the site in
:mod:`svcrest.serve.forwarded`; uvicorn applies its own. The worker count reaches the workers
as ``SVCREST_WORKERS`` (:mod:`svcrest.site.processes`: an in-memory store is refused when it
is more than one).
"""

from __future__ import annotations

import contextlib
import copy
import multiprocessing
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from svcrest.http.request_id import ACCESS_LOG, ENV_ACCESS_LOG
from svcrest.serve import accesslog, forwarded, uvicorn_wsgi
from svcrest.serve.accesslog import (
    ACCESS_FORMAT,
    AccessFormatter,
    RedactSecrets,
)
from svcrest.serve.admin import DEFAULT_ADMIN_HOST, AdminServer, store_probe
from svcrest.serve.bodies import (
    DEFAULT_BODY_TIMEOUT,
    ENV_BODY_READERS,
    ENV_BODY_TIMEOUT,
    slow_body_readers,
)
from svcrest.serve.jsonlog import ENV_LOG_FORMAT, JsonFormatter, site_logging
from svcrest.serve.metrics import (
    ENV_ADMIN_PORT,
    keep_metrics,
    listener_status,
    make_metrics_dir,
    remove_metrics_dir,
)
from svcrest.serve.streams import ENV_SIGNAL_WAKEUP
from svcrest.site.processes import ENV_WORKERS
from svcrest.store.locations import is_postgres_url

__all__ = [
    "DEFAULT_INTERFACE",
    "DEFAULT_SERVER",
    "ENV_BODY_READERS",
    "ENV_BODY_TIMEOUT",
    "ENV_HEADER_TIMEOUT",
    "ENV_RELOAD",
    "GRANIAN_WSGI_THREADS",
    "INTERFACES",
    "LOG_FORMATS",
    "SERVERS",
    "SERVER_INTERFACES",
    "SERVER_INTERFACE_CHOICES",
    "Limits",
    "ServeConfig",
    "ServerMissingError",
    "granian_options",
    "granian_threads",
    "own_access_line",
    "require_server",
    "serve",
    "uvicorn_options",
]

SERVERS: Final = ("granian", "uvicorn")
INTERFACES: Final = ("wsgi", "asgi", "rsgi")
#: The interfaces of each server (RSGI is granian's own: uvicorn has none).
SERVER_INTERFACE_CHOICES: Final = {"granian": ("wsgi", "asgi", "rsgi"), "uvicorn": ("wsgi", "asgi")}
LOG_FORMATS: Final = ("text", "json")
#: granian on its ASGI interface. SECURITY: on ASGI a request body being read costs a
#: coroutine and its deadline is a timer, so a client that announces a body and sends nothing
#: holds nothing a login or a write needs (on WSGI it holds one of a few server threads until
#: it leaves: ``--interface wsgi`` is an opt-in, see docs/guides/serving.md, "WSGI"). On ASGI
#: a sync callback runs on the worker's event loop unless its route is marked
#: ``"blocking": True`` (then on a thread of its own).
DEFAULT_SERVER: Final = "granian"
DEFAULT_INTERFACE: Final = "asgi"
#: Each server's interface when none is asked for: ASGI on both (uvicorn's WSGI bridge is
#: half as fast as its ASGI; granian's WSGI cannot bound a silent body; granian's RSGI is
#: faster, but leaves out of a request every header line whose value is not ASCII, so a
#: ``Cookie`` line that also holds another application's UTF-8 cookie logs the user out).
SERVER_INTERFACES: Final = {"granian": "asgi", "uvicorn": "asgi"}
#: The most Python threads per granian WSGI worker by default: requests run in them, so a
#: blocking callback holds one thread, not the worker (see :func:`granian_threads`).
GRANIAN_WSGI_THREADS: Final = 8
#: Seconds a uvicorn client has to send a complete request head (read by the workers'
#: ``BoundedHttpToolsProtocol``).
ENV_HEADER_TIMEOUT: Final = "SVCREST_HEADER_TIMEOUT"
_REDACT_FILTER: Final = {"()": f"{RedactSecrets.__module__}.{RedactSecrets.__qualname__}"}
_ACCESS_FORMATTER: Final = f"{AccessFormatter.__module__}.{AccessFormatter.__qualname__}"
_JSON_FORMATTER: Final = {"()": f"{JsonFormatter.__module__}.{JsonFormatter.__qualname__}"}
#: What every access-log line ends with.
_ACCESS_ID: Final = " request_id=%(request_id)s"
_UVICORN_PROTOCOL: Final = "svcrest.serve.uvicorn_protocol:BoundedHttpToolsProtocol"
#: ``1`` in the workers of ``svcrest serve --reload`` (a worker that cannot build the site
#: says the reloader waits for the next change).
ENV_RELOAD: Final = "SVCREST_RELOAD"


class ServerMissingError(RuntimeError):
    """The chosen server is not installed."""


@dataclass(frozen=True, kw_only=True)
class Limits:
    """What one client may hold (docs/guides/serving.md, "Limits")."""

    #: Bytes of a request head (request line and header lines): 128 KiB, so a 100 KB
    #: ``Origin`` still passes (tests/e2e/test_bounded_memory.py sends them).
    max_header_bytes: int = 128 * 1024
    #: Seconds to send a complete request head, from the connection's start or the end of
    #: the previous answer on it (slow-header clients are closed after it).
    header_timeout: float = 10.0
    #: Seconds an idle keep-alive connection stays open (uvicorn; granian: header_timeout).
    keep_alive_timeout: float = 5.0
    #: Requests in progress per worker (granian's backpressure: queued beyond it; uvicorn
    #: answers 503).
    max_concurrency: int = 1024
    #: Seconds to send a whole request body, once its head is in (slow bodies get 408).
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    #: Seconds the requests in flight at a shutdown (SIGTERM) have to finish before the
    #: workers are stopped (granian's ``workers_kill_timeout``, uvicorn's
    #: ``timeout_graceful_shutdown``).
    graceful_timeout: float = 30.0


@dataclass(frozen=True, kw_only=True)
class ServeConfig:
    """How to serve: the server, its interface, where, how many workers, the bounds."""

    #: ``module:factory`` of the ASGI App and of its WSGI callable, for the workers.
    asgi_factory: str
    wsgi_factory: str
    server: str = DEFAULT_SERVER
    interface: str = DEFAULT_INTERFACE
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    reload: bool = False
    access_log: bool = True
    proxy_headers: bool = False
    forwarded_allow_ips: str | None = None
    #: Python threads per granian WSGI worker; None: :func:`granian_threads`.
    threads: int | None = None
    limits: Limits = field(default_factory=Limits)
    #: The site already built (an App), served in this process by uvicorn with one worker
    #: and no reloader; else the workers call the factory.
    app: Any = None
    #: The admin port (``/live``, ``/ready``, ``/metrics``: :mod:`svcrest.serve.admin`) on
    #: ``admin_host``, None for none; ``db`` is the database its readiness probe asks.
    admin_port: int | None = None
    #: SECURITY: loopback unless asked, whatever ``host`` is (``/metrics`` is not public).
    admin_host: str = DEFAULT_ADMIN_HOST
    db: str = ""
    #: ``"text"`` (the servers' own lines) or ``"json"`` (:mod:`svcrest.serve.jsonlog`).
    log_format: str = "text"

    @property
    def target(self) -> str:
        return self.wsgi_factory if self.interface == "wsgi" else self.asgi_factory

    @property
    def in_process(self) -> bool:
        """Whether the App built already is served (uvicorn, one worker, no reloader)."""
        return (
            self.app is not None
            and self.server == "uvicorn"
            and self.workers == 1
            and not self.reload
        )


def _log_config(
    base: Mapping[str, Any], access_handler: str, log_format: str = "text"
) -> dict[str, Any]:
    """The server's logging configuration with secrets redacted from its access lines and
    the request id at the end of each (``request_id=…``, set by the redacting filter); with
    ``log_format`` ``"json"``, every formatter writes one JSON object a line instead."""
    config = copy.deepcopy(dict(base))
    config.setdefault("filters", {})["svcrest_redact"] = dict(_REDACT_FILTER)
    handler = config["handlers"][access_handler]
    handler["filters"] = [*handler.get("filters", []), "svcrest_redact"]
    formatters = config["formatters"]
    if log_format == "json":
        for name in formatters:
            formatters[name] = dict(_JSON_FORMATTER)
        # Every other record (svcrest's, a plugin's, a warning) in JSON too, in each worker.
        site = site_logging(handler["formatter"])
        config["handlers"].update(site["handlers"])
        config["root"] = site["root"]
    else:
        formatter = formatters[handler["formatter"]]
        formatter["fmt"] = formatter["fmt"] + _ACCESS_ID
        if formatter.get("()") == "logging.Formatter" and formatter["fmt"] == ACCESS_FORMAT:
            formatter["()"] = _ACCESS_FORMATTER  # granian's: the same line, written faster
    return config


def uvicorn_options(config: ServeConfig) -> dict[str, Any]:
    """The keyword arguments of ``uvicorn.run`` for ``config`` (without the app)."""
    from uvicorn.config import LOGGING_CONFIG

    limits = config.limits
    options: dict[str, Any] = {
        "host": config.host,
        "port": config.port,
        # WSGI too: through svcrest's bridge (svcrest.serve.uvicorn_wsgi), an ASGI app.
        "interface": "asgi3",
        "http": _UVICORN_PROTOCOL,
        "access_log": config.access_log,
        "log_config": _log_config(LOGGING_CONFIG, "access", config.log_format),
        "log_level": "info",
        "proxy_headers": config.proxy_headers,
        "timeout_keep_alive": limits.keep_alive_timeout,
        "h11_max_incomplete_event_size": limits.max_header_bytes,
        "limit_concurrency": limits.max_concurrency,
        "timeout_graceful_shutdown": max(1, round(limits.graceful_timeout)),
    }
    if config.forwarded_allow_ips is not None:
        options["forwarded_allow_ips"] = config.forwarded_allow_ips
    if not config.in_process:
        options["factory"] = True
        options["workers"] = config.workers
        options["reload"] = config.reload
    return options


def granian_threads() -> int:
    """The default Python threads of a granian WSGI worker: :data:`GRANIAN_WSGI_THREADS`, or
    fewer on a small machine, where granian finds more than twice the CPU count plus one
    "quite high" (and says so at every start)."""
    return max(1, min(GRANIAN_WSGI_THREADS, 2 * multiprocessing.cpu_count() + 1))


def own_access_line(config: ServeConfig) -> bool:
    """Whether svcrest writes granian's access lines itself (granian's ASGI interface with the
    access log: :class:`svcrest.serve.accesslog.AccessLogged`, the same bytes as granian's
    ``log_access`` through the launcher's logging configuration, at a fraction of the cost);
    granian's WSGI and RSGI interfaces keep granian's own."""
    return config.access_log and config.server == "granian" and config.interface == "asgi"


def _granian_site(config: ServeConfig) -> str:
    """The factory of the site granian's workers serve (behind the forwarded headers' wrapper
    with ``--proxy-headers``: granian reads no forwarded header itself)."""
    if not config.proxy_headers:
        return config.target
    return {"wsgi": forwarded.WSGI_FACTORY, "rsgi": forwarded.RSGI_FACTORY}.get(
        config.interface, forwarded.ASGI_FACTORY
    )


def granian_options(config: ServeConfig) -> dict[str, Any]:
    """The keyword arguments of granian's ``Granian(...)`` for ``config``."""
    from granian.constants import Interfaces
    from granian.http import HTTP1Settings
    from granian.log import LOGGING_CONFIG

    limits = config.limits
    wsgi = config.interface == "wsgi"
    own_line = own_access_line(config)
    target = accesslog.ASGI_FACTORY if own_line else _granian_site(config)
    interface = {"wsgi": Interfaces.WSGI, "rsgi": Interfaces.RSGI}.get(
        config.interface, Interfaces.ASGI
    )
    options: dict[str, Any] = {
        "target": target,
        "factory": True,
        "address": config.host,
        "port": config.port,
        "interface": interface,
        "workers": config.workers,
        "reload": config.reload,
        "log_access": config.access_log and not own_line,
        "log_dictconfig": _log_config(LOGGING_CONFIG, "access", config.log_format),
        "backpressure": limits.max_concurrency,
        "workers_kill_timeout": max(1, round(limits.graceful_timeout)),
        "http1_settings": HTTP1Settings(
            header_read_timeout=round(limits.header_timeout * 1000),
            max_buffer_size=max(8192, limits.max_header_bytes),
        ),
        "websockets": False,
    }
    if config.reload:
        import watchfiles

        options["reload_filter"] = watchfiles.PythonFilter
        # A worker that cannot build the site (a plugin saved with a syntax error) exits;
        # the reloader keeps watching and starts the workers again on the next change, as
        # uvicorn's does.
        options["reload_ignore_worker_failure"] = True
    if wsgi:
        options["blocking_threads"] = config.threads or granian_threads()
    return options


def require_server(server: str) -> None:
    """Raise ServerMissingError when ``server`` (granian or uvicorn) cannot be imported."""
    try:
        if server == "granian":
            import granian  # noqa: F401 - only whether it imports
        else:
            import uvicorn  # noqa: F401 - only whether it imports
    except ImportError:
        raise ServerMissingError(
            f"{server} is not installed: pip install 'svcrest[server]'"
        ) from None


def _serve_uvicorn(config: ServeConfig, on_shutdown: Callable[[], None] | None = None) -> int:
    require_server("uvicorn")
    import uvicorn

    options = uvicorn_options(config)
    wsgi = config.interface == "wsgi"
    if config.in_process:
        app = uvicorn_wsgi.WSGIBridge(config.app.wsgi) if wsgi else config.app
    elif wsgi:
        uvicorn_wsgi.configure(config.target)
        app = uvicorn_wsgi.FACTORY
    else:
        app = config.target
    drain = contextlib.nullcontext() if on_shutdown is None else _uvicorn_drain(on_shutdown)
    try:
        with drain:
            uvicorn.run(app, **options)
    except SystemExit as exc:  # uvicorn exits when it could not start
        return exc.code if isinstance(exc.code, int) else 1
    return 0


@contextlib.contextmanager
def _uvicorn_drain(call: Callable[[], None]) -> Iterator[None]:
    """While the block runs, uvicorn's process calls ``call`` first when SIGTERM or SIGINT
    arrives: its server (one worker: ``Server.handle_exit``, the signal handler) or its
    supervisor of several workers (``Multiprocess.handle_term`` / ``handle_int``, run from
    its loop before it stops the workers). Spawned workers import uvicorn afresh: only this
    process is changed."""
    from uvicorn.server import Server
    from uvicorn.supervisors.multiprocess import Multiprocess

    handle_exit = Server.handle_exit
    handle_term, handle_int = Multiprocess.handle_term, Multiprocess.handle_int

    def server_exit(self: Server, sig: int, frame: Any) -> None:
        call()
        handle_exit(self, sig, frame)

    def supervisor_term(self: Multiprocess) -> None:
        call()
        handle_term(self)

    def supervisor_int(self: Multiprocess) -> None:
        call()
        handle_int(self)

    Server.handle_exit = server_exit  # type: ignore[method-assign]
    Multiprocess.handle_term = supervisor_term  # type: ignore[method-assign]
    Multiprocess.handle_int = supervisor_int  # type: ignore[method-assign]
    try:
        yield
    finally:
        Server.handle_exit = handle_exit  # type: ignore[method-assign]
        Multiprocess.handle_term = handle_term  # type: ignore[method-assign]
        Multiprocess.handle_int = handle_int  # type: ignore[method-assign]


def _serve_granian(config: ServeConfig, on_shutdown: Callable[[], None] | None = None) -> int:
    require_server("granian")
    from granian import Granian

    options = granian_options(config)
    if config.proxy_headers:
        forwarded.configure(config.target, config.forwarded_allow_ips or "127.0.0.1")
    if own_access_line(config):  # the workers wrap the site in svcrest's access line
        accesslog.configure(_granian_site(config))
    # granian forks its workers from this process, which imported the plugins while preparing
    # the site: with --reload, a forked worker would keep their old code after an edit.
    method = multiprocessing.get_start_method(allow_none=True)
    if config.reload:
        multiprocessing.set_start_method("spawn", force=True)
    try:
        server = Granian(**options)
        if on_shutdown is not None:
            _before_interrupt(server, on_shutdown)
        server.serve()
    except SystemExit as exc:  # granian exits when it could not start
        return exc.code if isinstance(exc.code, int) else 1
    finally:
        if config.reload:
            multiprocessing.set_start_method(method, force=True)
    return 0


def _before_interrupt(server: Any, call: Callable[[], None]) -> None:
    """Make granian's main process call ``call`` first when SIGTERM or SIGINT arrives (it
    installs ``signal_handler_interrupt`` as their handler when it starts serving)."""
    interrupt = server.signal_handler_interrupt

    def handler(*args: Any, **kwargs: Any) -> None:
        call()
        interrupt(*args, **kwargs)

    server.signal_handler_interrupt = handler


def serve(config: ServeConfig) -> int:
    """Serve until interrupted; the exit status. Raises ServerMissingError when the server
    is not installed, ValueError for an unknown server or interface."""
    if config.server not in SERVERS:
        raise ValueError(f"unknown server {config.server!r} (one of {', '.join(SERVERS)})")
    if config.interface not in INTERFACES:
        raise ValueError(f"unknown interface {config.interface!r} (one of {', '.join(INTERFACES)})")
    choices = SERVER_INTERFACE_CHOICES[config.server]
    if config.interface not in choices:
        raise ValueError(
            f"{config.server} has no {config.interface} interface (one of {', '.join(choices)})"
        )
    os.environ[ENV_HEADER_TIMEOUT] = repr(config.limits.header_timeout)
    os.environ[ENV_LOG_FORMAT] = config.log_format
    os.environ[ENV_RELOAD] = "1" if config.reload else "0"
    os.environ[ENV_WORKERS] = str(config.workers)
    # granian's WSGI workers have no lifespan and set their signal handlers after the site
    # is built: their factory ends the streams and long-polls through the wake-up descriptor.
    wakeup = config.server == "granian" and config.interface == "wsgi"
    os.environ[ENV_SIGNAL_WAKEUP] = "1" if wakeup else "0"
    # The access log's lines name the request (its id, route, user) through the adapters.
    os.environ[ENV_ACCESS_LOG] = "1" if config.access_log else "0"
    ACCESS_LOG.on = config.access_log
    os.environ[ENV_BODY_TIMEOUT] = repr(config.limits.body_timeout)
    os.environ[ENV_BODY_READERS] = str(slow_body_readers(config.threads or granian_threads()))
    admin = _start_admin(config) if config.admin_port is not None else None
    try:
        drain = None if admin is None else admin.drain
        if config.server == "granian":
            return _serve_granian(config, drain)
        return _serve_uvicorn(config, drain)
    finally:
        if admin is not None:
            admin.stop()
            remove_metrics_dir(admin.metrics_dir)


def _start_admin(config: ServeConfig) -> AdminServer:
    """Start the admin port; the workers (or the App served in this process) keep metrics
    in the directory it reads."""
    directory = make_metrics_dir()
    os.environ[ENV_ADMIN_PORT] = str(config.admin_port)
    assert config.admin_port is not None
    listener = (lambda: listener_status(directory)) if is_postgres_url(config.db) else None
    probe = store_probe(config.db)
    admin = AdminServer(config.admin_host, config.admin_port, probe, directory, listener)
    if config.in_process:
        keep_metrics(config.app)
    admin.start()
    return admin
