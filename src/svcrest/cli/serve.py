"""``svcrest serve``: check the port, prepare the site, start granian or uvicorn."""

from __future__ import annotations

import argparse
import errno
import os
import socket
import sys
from collections.abc import Callable
from typing import Any

from svcrest.app import App
from svcrest.cli.common import (
    ADMIN_LOGIN,
    ENV_API_VERSION,
    ENV_DB,
    ENV_DEMO,
    ENV_HOME,
    ENV_MAX_STREAMS,
    ENV_MCP,
    ENV_PLUGINS,
    ENV_TITLE,
    ENV_WORDPRESS_COMPAT,
    CliError,
    own_line,
)
from svcrest.cli.site import (
    ensure_admin,
    new_app,
    prepare_database_file,
    prepare_new_database,
    register_plugins,
    start_webhook_delivery,
)
from svcrest.serve import launcher
from svcrest.serve.jsonlog import use_site_logging
from svcrest.serve.launcher import ServeConfig
from svcrest.store.locations import is_memory, is_postgres_url
from svcrest.store.pg_url import with_url_options


def check_port(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on, or None when it can (bound and released at
    once, with SO_REUSEADDR as uvicorn binds)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"cannot resolve host {host!r}: {exc.strerror}"
    family, kind, proto, _name, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"port {port} on {host} is already in use"
            return f"cannot listen on {host} port {port}: {exc.strerror or exc}"
    return None


def _default_home(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def _server_choice(args: argparse.Namespace) -> str:
    """The server asked for; without ``--server``, the default one, or uvicorn for an
    in-memory database (it lives in the one process uvicorn serves it from)."""
    memory = is_memory(args.db)
    if args.server is None:
        return "uvicorn" if memory else launcher.DEFAULT_SERVER
    if args.server == "granian" and memory:
        raise CliError(
            "granian serves from worker processes, which cannot share an in-memory database"
            " (use --db var/svcrest.db, or --server uvicorn)"
        )
    return str(args.server)


def _interface_choice(args: argparse.Namespace, server: str) -> str:
    """The interface asked for, else ASGI (a silent request body holds no server thread);
    refused when ``server`` has none of that name (RSGI is granian's own)."""
    interface = str(args.interface or launcher.SERVER_INTERFACES[server])
    choices = launcher.SERVER_INTERFACE_CHOICES[server]
    if interface not in choices:
        memory = " (the server of an in-memory database)" if is_memory(args.db) else ""
        raise CliError(
            f"{server}{memory} has no {interface} interface (one of {', '.join(choices)});"
            " --interface rsgi needs --server granian"
        )
    return interface


def _serve_config(args: argparse.Namespace, app: App, home: str, server: str) -> ServeConfig:
    limits = launcher.Limits(
        header_timeout=args.header_timeout,
        keep_alive_timeout=args.keep_alive_timeout,
        max_concurrency=args.max_concurrency,
        body_timeout=args.body_timeout,
        graceful_timeout=args.graceful_timeout,
    )
    config = ServeConfig(
        asgi_factory="svcrest.cli:app_from_env",
        wsgi_factory="svcrest.cli:wsgi_from_env",
        server=server,
        interface=_interface_choice(args, server),
        host=args.host,
        port=args.port,
        workers=args.workers,
        reload=args.reload,
        access_log=args.access_log,
        proxy_headers=args.proxy_headers,
        forwarded_allow_ips=proxy_options(args).get("forwarded_allow_ips"),
        threads=args.threads,
        limits=limits,
        app=app,
        admin_port=args.admin_port,
        admin_host=args.admin_host,
        db=args.db,
        log_format=args.log_format,
    )
    if not config.in_process:  # the workers build the site from the environment
        app.store.close()
        os.environ[ENV_DB] = args.db
        os.environ[ENV_HOME] = home
        os.environ[ENV_PLUGINS] = ",".join(args.plugin)
        os.environ[ENV_DEMO] = "1" if args.demo else "0"
        os.environ[ENV_WORDPRESS_COMPAT] = "1" if args.wordpress_compat else "0"
        for name, value in ((ENV_TITLE, args.title), (ENV_API_VERSION, args.api_version)):
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        os.environ[ENV_MCP] = "1" if args.mcp else "0"
        os.environ[ENV_MAX_STREAMS] = str(args.max_streams)
    return config


def cmd_serve(args: argparse.Namespace) -> int:
    args.db = db_with_pool_options(args)
    if args.workers > 1 and is_memory(args.db):
        raise CliError(
            "an in-memory database cannot be shared by several workers"
            " (use --db var/svcrest.db, or --workers 1)"
        )
    if args.reload and is_memory(args.db):
        raise CliError("an in-memory database does not survive a reload (use --db PATH)")
    proxy_options(args)  # refuses --forwarded-allow-ips without --proxy-headers
    server = _server_choice(args)
    interface = _interface_choice(args, server)
    if args.threads is not None and (server, interface) != ("granian", "wsgi"):
        raise CliError("--threads sets the threads of granian's WSGI interface only")
    if args.admin_port is not None and args.admin_port == args.port:
        raise CliError("--admin-port must differ from --port (probes never share the API's port)")
    try:
        launcher.require_server(server)  # before anything is created or announced
    except launcher.ServerMissingError as exc:
        raise CliError(str(exc)) from None
    for host, port in ((args.host, args.port), (args.admin_host, args.admin_port)):
        problem = None if port is None else check_port(host, port)
        if problem is not None:
            raise CliError(problem)
    if args.log_format == "json":  # warnings and records while the site is built, too
        use_site_logging()
    say = _sayer(args.log_format)
    home = args.home or _default_home(args.host, args.port)
    app = new_app(
        args.db,
        home,
        wordpress_compat=args.wordpress_compat,
        title=args.title,
        api_version=args.api_version,
        mcp=args.mcp,
        max_streams=args.max_streams,
    )
    created = prepare_database_file(args.db, say)
    # The store before the plugins (which may open it while they register): a database that
    # cannot be opened is reported as such, not as a plugin's failure.
    prepare_new_database(app, args.db, created, say)
    register_plugins(app, args.plugin, demo=args.demo)
    password = ensure_admin(app)
    if password is not None:
        say(f"Created user {ADMIN_LOGIN} with password: {password}")
    say(f"Serving {app.home}/ (REST API at {app.get_rest_url()}) with {server} ({interface})")
    say(_login_line(app))
    sys.stdout.flush()
    config = _serve_config(args, app, home, server)
    # The workers send webhooks from app_from_env; an App served here, from this process.
    deliverer = start_webhook_delivery(app) if config.in_process else None
    try:
        return launcher.serve(config)
    except launcher.ServerMissingError as exc:
        raise CliError(str(exc)) from None
    finally:
        if deliverer is not None:
            deliverer.stop(timeout=5)


def _sayer(log_format: str) -> Callable[[str], None]:
    """Prints a line of the command's own on standard output, in ``log_format``."""

    def say(text: str) -> None:
        print(own_line(text, log_format))

    return say


def _login_line(app: App) -> str:
    """Where to log in, and as whom: ``admin`` when it exists (its password was printed
    when ``serve`` created it), else the site's own users (``svcrest user add`` made the
    first user before the first ``serve``, so no ``admin`` was created)."""
    add = "add users with: svcrest user add LOGIN --role ROLE"
    if app.users.get_by_login(ADMIN_LOGIN) is not None:
        return (
            f"Log in at {app.home}/login as {ADMIN_LOGIN} (its password was printed on first"
            f" start); {add}"
        )
    return (
        f"Log in at {app.home}/login as one of the site's users (there is no user"
        f" {ADMIN_LOGIN}: svcrest user list shows them); {add}"
    )


def add_proxy_options(parser: argparse.ArgumentParser) -> None:
    """``--proxy-headers`` and ``--forwarded-allow-ips``, behind a TLS proxy (see the serving
    guide, docs/guides/serving.md)."""
    parser.add_argument(
        "--proxy-headers",
        action="store_true",
        help="trust X-Forwarded-Proto and X-Forwarded-For from --forwarded-allow-ips (a"
        " request forwarded as https gets Secure cookies and https URLs)",
    )
    parser.add_argument(
        "--forwarded-allow-ips",
        default=None,
        metavar="IPS",
        help="comma-separated addresses (or *) whose forwarded headers are trusted"
        " (default 127.0.0.1)",
    )


def proxy_options(args: argparse.Namespace) -> dict[str, Any]:
    """The server options of ``--proxy-headers`` / ``--forwarded-allow-ips``: forwarded
    headers are ignored unless ``--proxy-headers`` is given, and then trusted only from the
    listed addresses. CliError for ``--forwarded-allow-ips`` without ``--proxy-headers``."""
    if not args.proxy_headers:
        if args.forwarded_allow_ips is not None:
            raise CliError("--forwarded-allow-ips needs --proxy-headers")
        return {"proxy_headers": False}
    ips = args.forwarded_allow_ips or "127.0.0.1"
    return {"proxy_headers": True, "forwarded_allow_ips": ips}


# -- PostgreSQL's pool and listener (docs/guides/many-hosts.md) -------------------------------

ENV_DB_POOL_SIZE = "SVCREST_DB_POOL_SIZE"
ENV_DB_LISTEN = "SVCREST_DB_LISTEN"


def _pool_size(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= 1000:
        raise argparse.ArgumentTypeError(f"invalid pool size {value!r} (1-1000)")
    return int(value)


def add_db_pool_options(parser: argparse.ArgumentParser) -> None:
    """``--db-pool-size N`` and ``--db-listen URL``, defaulting to their environment
    variables (a PostgreSQL ``--db`` only)."""
    parser.add_argument(
        "--db-pool-size",
        type=_pool_size,
        default=os.environ.get(ENV_DB_POOL_SIZE) or None,  # a string default is parsed too
        metavar="N",
        help=f"PostgreSQL connections each worker process opens at most (default 10;"
        f" ${ENV_DB_POOL_SIZE})",
    )
    parser.add_argument(
        "--db-listen",
        default=os.environ.get(ENV_DB_LISTEN) or None,
        metavar="URL",
        help="a direct PostgreSQL URL for the notification listener, when --db goes through"
        f" PgBouncer in transaction mode (${ENV_DB_LISTEN})",
    )


def db_with_pool_options(args: argparse.Namespace) -> str:
    """``--db`` with ``--db-pool-size`` and ``--db-listen`` written into its URL (the
    workers read the URL); CliError when they are given for a database that is not
    PostgreSQL."""
    options: dict[str, str] = {}
    if args.db_pool_size is not None:
        options["pool_size"] = str(args.db_pool_size)
    if args.db_listen is not None:
        if not is_postgres_url(args.db_listen):
            raise CliError("--db-listen must be a postgresql:// URL")
        options["listen"] = args.db_listen
    if not options:
        return str(args.db)
    if not is_postgres_url(args.db):
        raise CliError("--db-pool-size and --db-listen need a PostgreSQL --db")
    return with_url_options(args.db, **options)
