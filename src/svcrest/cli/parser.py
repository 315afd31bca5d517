"""The ``svcrest`` argument parser and :func:`main`."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from typing import Any

from svcrest.cli.common import (
    BROKEN_PIPE_STATUS,
    DEFAULT_DB,
    DEFAULT_HOME,
    DEFAULT_HOST,
    DEFAULT_PORT,
    ENV_DB,
    ENV_DEMO,
    ENV_HOME,
    ENV_PLUGINS,
    PLUGIN_GROUP,
    PLUGIN_SPEC,
    CliError,
    Parser,
    apply_environment,
    error_text,
    own_line,
    svcrest_version,
    using_database,
)
from svcrest.cli.requests import cmd_openapi, cmd_request, cmd_routes
from svcrest.cli.serve import add_db_pool_options, add_proxy_options, cmd_serve
from svcrest.cli.users import (
    cmd_app_password_add,
    cmd_app_password_delete,
    cmd_app_password_list,
    cmd_user_add,
    cmd_user_delete,
    cmd_user_list,
    cmd_user_set_password,
)
from svcrest.cli.webhooks import (
    cmd_webhook_add,
    cmd_webhook_delete,
    cmd_webhook_deliveries,
    cmd_webhook_list,
)
from svcrest.http.streams import DEFAULT_MAX_STREAMS
from svcrest.http.user import ROLE_CAPABILITIES
from svcrest.serve import launcher
from svcrest.serve.admin import DEFAULT_ADMIN_HOST, ENV_ADMIN_HOST
from svcrest.serve.metrics import ENV_ADMIN_PORT

_METHOD = re.compile(r"[A-Za-z]+")


def _port(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {value!r} (1-65535)")
    return int(value)


def _workers(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= 1024:
        raise argparse.ArgumentTypeError(f"invalid worker count {value!r} (1-1024)")
    return int(value)


def _count(what: str, most: int) -> Callable[[str], int]:
    """An argument type: a whole number from 1 to ``most``."""

    def parse(value: str) -> int:
        if not value.isdigit() or not 1 <= int(value) <= most:
            raise argparse.ArgumentTypeError(f"invalid {what} {value!r} (1-{most})")
        return int(value)

    return parse


def _plugin_spec(value: str) -> str:
    if PLUGIN_SPEC.fullmatch(value.strip()) is None:
        raise argparse.ArgumentTypeError(f"invalid plugin {value!r} (expected module:function)")
    return value.strip()


def _role(value: str) -> str:
    if value not in ROLE_CAPABILITIES:
        known = ", ".join(sorted(ROLE_CAPABILITIES))
        raise argparse.ArgumentTypeError(f"unknown role {value!r} (known roles: {known})")
    return value


def _method(value: str) -> str:
    if _METHOD.fullmatch(value) is None:
        raise argparse.ArgumentTypeError(f"invalid HTTP method {value!r}")
    return value.upper()


def _add_db(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        default=None,  # apply_environment: SVCREST_DB, else DEFAULT_DB
        metavar="PATH",
        help="the database: a SQLite path, sqlite:///relative.db, sqlite:////absolute.db or"
        " :memory:, or a PostgreSQL URL postgresql://user:password@host:port/dbname (or"
        f" postgres://…) (default ${ENV_DB}, else {DEFAULT_DB})",
    )


def _add_site_options(parser: argparse.ArgumentParser, home_default: str | None) -> None:
    """The options of the commands that build the site: ``--db``, ``--plugin``, ``--home``,
    ``--demo/--no-demo`` and ``--traceback``."""
    _add_db(parser)
    parser.add_argument(
        "--plugin",
        action="append",
        default=None,  # apply_environment: SVCREST_PLUGINS, else none
        type=_plugin_spec,
        metavar="MODULE:FUNCTION",
        help=f"register a plugin (repeatable; default ${ENV_PLUGINS}, comma-separated); the"
        f" {PLUGIN_GROUP} entry points are loaded too, and the demo unless --no-demo",
    )
    shown = "http://HOST:PORT" if home_default is None else home_default
    parser.add_argument(
        "--home",
        default=None,  # apply_environment: SVCREST_HOME, else home_default
        metavar="URL",
        help=f"the site's home address (default ${ENV_HOME}, else {shown})",
    )
    parser.set_defaults(home_default=home_default)
    parser.add_argument(
        "--demo",
        action=argparse.BooleanOptionalAction,
        default=None,  # apply_environment: SVCREST_DEMO
        help=f"register the demo plugin, its notes API (default on; ${ENV_DEMO}=0 turns it off)",
    )
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="show every frame of a failing plugin's traceback (default: its own frames)",
    )


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"invalid time-out {value!r} (seconds, 0-3600)")
    return seconds


def _add_server_options(serve: argparse.ArgumentParser) -> None:
    limits = launcher.Limits()
    serve.add_argument(
        "--server",
        choices=launcher.SERVERS,
        help=f"(default {launcher.DEFAULT_SERVER}; uvicorn for an in-memory database)",
    )
    serve.add_argument(
        "--interface",
        choices=launcher.INTERFACES,
        help="(default asgi; rsgi: granian's own interface, faster; wsgi on granian is an"
        " opt-in: a client announcing a body and sending nothing holds one of its few"
        " reading threads, see the serving guide)",
    )
    serve.add_argument(
        "--reload",
        action="store_true",
        help="restart the workers when a .py file under the current directory changes",
    )
    serve.add_argument(
        "--access-log",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="log each request's method, path and status, nonces redacted (default on)",
    )
    serve.add_argument(
        "--log-format",
        choices=launcher.LOG_FORMATS,
        default="text",
        help="text (the servers' lines) or json (one object a line: time, level, request_id,"
        " method, route, status, duration_ms, user_id; default text)",
    )
    serve.add_argument(
        "--wordpress-compat",
        action="store_true",
        help="let clients written for WordPress work unchanged (X-WP-Nonce, X-WP-Total…)",
    )
    serve.add_argument(
        "--title",
        default=None,
        metavar="TEXT",
        help="the site's name: the title of /docs, of /openapi.json and of the home page"
        " (default svcrest)",
    )
    serve.add_argument(
        "--api-version",
        default=None,
        metavar="VERSION",
        help="the site's API version shown by /docs (info.version of /openapi.json; default"
        " the REST API's, 2.0)",
    )
    serve.add_argument(
        "--mcp",
        action="store_true",
        help="serve the Model Context Protocol at <home>/mcp: the abilities and the routes"
        " marked for it as tools for AI agents, with the site's permissions",
    )
    serve.add_argument(
        "--header-timeout",
        type=_seconds,
        default=limits.header_timeout,
        metavar="S",
        help="seconds to send a request head (default %(default)s)",
    )
    serve.add_argument(
        "--threads",
        type=_count("thread count", 256),
        default=None,
        metavar="N",
        help="Python threads per granian WSGI worker (default: twice the CPUs plus one, at"
        f" most {launcher.GRANIAN_WSGI_THREADS})",
    )
    serve.add_argument(
        "--max-streams",
        type=_count("stream count", 1_000_000),
        default=DEFAULT_MAX_STREAMS,
        metavar="N",
        help="change-feed streams (Server-Sent Events, JSON Lines; ASGI and RSGI only) each"
        " worker holds at once: beyond it 503 svc_streams_busy with Retry-After; long-polls"
        " do not count, and each stream also counts against --max-concurrency (default"
        " %(default)s)",
    )
    serve.add_argument(
        "--max-concurrency",
        type=_count("request count", 1_000_000),
        default=limits.max_concurrency,
        metavar="N",
        help="requests in progress per worker: granian queues beyond it (its backpressure),"
        " uvicorn answers 503 (default %(default)s)",
    )
    serve.add_argument(
        "--keep-alive-timeout",
        type=_seconds,
        default=limits.keep_alive_timeout,
        metavar="S",
        help="seconds an idle connection stays open (default %(default)s)",
    )
    serve.add_argument(
        "--graceful-timeout",
        type=_seconds,
        default=limits.graceful_timeout,
        metavar="S",
        help="seconds the requests in flight at a SIGTERM have to finish (default %(default)s)",
    )
    serve.add_argument(
        "--body-timeout",
        type=_seconds,
        default=limits.body_timeout,
        metavar="S",
        help="seconds to send a whole request body; slower ones get 408 (default %(default)s)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``svcrest`` argument parser."""
    parser = Parser(prog="svcrest", description="Serve and inspect a svcrest site.")
    parser.add_argument("--version", action="version", version=f"svcrest {svcrest_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    serve = commands.add_parser("serve", help="serve the site with granian or uvicorn")
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"(default {DEFAULT_HOST})")
    serve.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"(default {DEFAULT_PORT})")
    serve.add_argument("--workers", type=_workers, default=1, metavar="N", help="(default 1)")
    serve.add_argument(
        "--admin-port",
        type=_port,
        default=os.environ.get(ENV_ADMIN_PORT) or None,  # a string default is parsed too
        metavar="PORT",
        help="serve /live, /ready and /metrics on this port of --admin-host, never on --port"
        f" (default: none; ${ENV_ADMIN_PORT})",
    )
    serve.add_argument(
        "--admin-host",
        default=os.environ.get(ENV_ADMIN_HOST) or DEFAULT_ADMIN_HOST,
        metavar="HOST",
        help=f"the address of --admin-port (default {DEFAULT_ADMIN_HOST}, whatever --host is;"
        f" 0.0.0.0 for probes from other hosts, which then see /metrics too; ${ENV_ADMIN_HOST})",
    )
    _add_server_options(serve)
    add_proxy_options(serve)
    add_db_pool_options(serve)
    _add_site_options(serve, None)
    serve.set_defaults(handler=cmd_serve)

    routes = commands.add_parser("routes", help="print the route table, one route a line")
    _add_site_options(routes, DEFAULT_HOME)
    routes.set_defaults(handler=cmd_routes)

    request = commands.add_parser(
        "request", help="serve one request in-process, as over HTTP, and print the answer"
    )
    request.add_argument("method", type=_method, metavar="METHOD")
    request.add_argument(
        "route",
        metavar="ROUTE",
        help="a route (/demo/v1/notes?per_page=5), a path under the REST root"
        " (/svc-json/demo/v1/notes, ?rest_route=/demo/v1/notes) or a full URL on the site",
    )
    request.add_argument("--json", metavar="DATA", help="a JSON request body")
    request.add_argument("--user", metavar="LOGIN", help="act as this user (default: anonymous)")
    request.add_argument(
        "-i",
        "--include",
        action="store_true",
        help="print the response's header lines too, as served over HTTP",
    )
    _add_site_options(request, DEFAULT_HOME)
    request.set_defaults(handler=cmd_request)

    openapi = commands.add_parser(
        "openapi", help="print the OpenAPI 3.1 document of the site's routes (JSON)"
    )
    _add_site_options(openapi, DEFAULT_HOME)
    openapi.set_defaults(handler=cmd_openapi)

    user = commands.add_parser("user", help="manage users")
    user_commands = user.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = user_commands.add_parser("add", help="create a user")
    add.add_argument("login", metavar="LOGIN")
    add.add_argument(
        "--role",
        action="append",
        required=True,
        type=_role,
        metavar="ROLE",
        help=f"the user's role, one of {', '.join(sorted(ROLE_CAPABILITIES))} (repeatable)",
    )
    add.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from the first line of standard input (else one is generated)",
    )
    _add_db(add)
    add.set_defaults(handler=cmd_user_add)
    listing = user_commands.add_parser("list", help="list the users (id, login, roles, name)")
    _add_db(listing)
    listing.set_defaults(handler=cmd_user_list)
    delete = user_commands.add_parser("delete", help="delete a user and their sessions")
    delete.add_argument("login", metavar="LOGIN")
    _add_db(delete)
    delete.set_defaults(handler=cmd_user_delete)
    set_password = user_commands.add_parser(
        "set-password", help="change a user's password (signs them out everywhere)"
    )
    set_password.add_argument("login", metavar="LOGIN")
    set_password.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from the first line of standard input (else one is generated)",
    )
    _add_db(set_password)
    set_password.set_defaults(handler=cmd_user_set_password)
    app_password = user_commands.add_parser(
        "app-password", help="manage a user's application passwords"
    )
    app_commands = app_password.add_subparsers(dest="app_action", metavar="ACTION", required=True)
    app_add = app_commands.add_parser("add", help="create one and print it (shown once)")
    app_add.add_argument("login", metavar="LOGIN")
    app_add.add_argument("name", metavar="NAME")
    app_add.add_argument(
        "--scope",
        action="append",
        metavar="NAMESPACE",
        help="a REST namespace the password may be used for (repeat for more; all when left out)",
    )
    app_add.add_argument(
        "--read-only",
        action="store_true",
        help="the password may only read (GET, HEAD, OPTIONS)",
    )
    _add_db(app_add)
    app_add.set_defaults(handler=cmd_app_password_add)
    app_list = app_commands.add_parser(
        "list", help="their uuids, names and scopes (never a password)"
    )
    app_list.add_argument("login", metavar="LOGIN")
    _add_db(app_list)
    app_list.set_defaults(handler=cmd_app_password_list)
    app_delete = app_commands.add_parser("delete", help="revoke one")
    app_delete.add_argument("login", metavar="LOGIN")
    app_delete.add_argument("uuid", metavar="UUID")
    _add_db(app_delete)
    app_delete.set_defaults(handler=cmd_app_password_delete)
    _add_webhook_commands(commands)
    return parser


def _add_webhook_commands(commands: argparse._SubParsersAction[Any]) -> None:
    webhook = commands.add_parser("webhook", help="manage the site's webhooks")
    actions = webhook.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="subscribe a URL to events and print its secret")
    add.add_argument("url", metavar="URL", help="an http or https URL")
    add.add_argument(
        "--events",
        required=True,
        metavar="EVENTS",
        help="comma-separated event names, <object type>.<created|updated|deleted>",
    )
    add.add_argument(
        "--secret",
        metavar="S",
        help="the signing secret, whsec_ and base64 (default: a new one, printed)",
    )
    _add_db(add)
    add.set_defaults(handler=cmd_webhook_add)
    listing = actions.add_parser("list", help="list the webhooks (id, URL, events)")
    _add_db(listing)
    listing.set_defaults(handler=cmd_webhook_list)
    delete = actions.add_parser("delete", help="delete a webhook and its deliveries")
    delete.add_argument("id", type=_count("webhook id", 2**63 - 1), metavar="ID")
    _add_db(delete)
    delete.set_defaults(handler=cmd_webhook_delete)
    deliveries = actions.add_parser(
        "deliveries",
        help="the latest deliveries, oldest first (webhook-id, event, URL, attempts, status)",
    )
    deliveries.add_argument(
        "--limit",
        type=_count("limit", 1000),
        default=100,
        metavar="N",
        help="how many (1-1000, default %(default)s)",
    )
    _add_db(deliveries)
    deliveries.set_defaults(handler=cmd_webhook_deliveries)


def _discard_stdout() -> None:
    """Point standard output at the null device, so the interpreter's last flush of what
    could not be written raises nothing (the recipe of Python's signal documentation)."""
    try:
        fileno = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by an object without a descriptor
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fileno)
    finally:
        os.close(devnull)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = argparse.Namespace()
    try:
        args = build_parser().parse_args(argv)
        source = apply_environment(args, os.environ)
        log_format = getattr(args, "log_format", "text")
        print(own_line(using_database(args.db, source), log_format), file=sys.stderr, flush=True)
        handler: Callable[[argparse.Namespace], int] = args.handler
        status = handler(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return status
    except BrokenPipeError:
        _discard_stdout()
        return BROKEN_PIPE_STATUS
    except CliError as exc:
        every_frame = getattr(args, "traceback", False)
        sys.stderr.write(error_text(exc, every_frame, getattr(args, "log_format", "text")))
        return exc.status
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        return 130
