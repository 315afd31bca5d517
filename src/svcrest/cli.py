"""The ``svcrest`` command line: ``serve``, ``routes``, ``request``, ``openapi`` and ``user``
(``add``, ``list``, ``delete``, ``set-password``, ``app-password add|list|delete``).

Every command builds the same site with :func:`make_app`: the demo plugin, the plugins of the
entry-point group ``svcrest.plugins`` and the ``--plugin module:function`` given (imported with
the current directory first on ``sys.path``, as ``python -m`` does). Errors are one line on
standard error (``svcrest: error: …``) with exit status 2 for bad arguments and an unusable
environment (port in use, database that cannot be opened, broken plugin). Only ``serve`` and
``user add`` create a database file and its missing directory (and say so); ``routes``,
``request`` and ``openapi`` refuse one that does not exist. ``request`` serves one request
in-process through the App's ASGI callable, as ``svcrest serve`` would over HTTP. Output cut
short by a closed pipe (``svcrest request … | head``) ends quietly with exit status 141
(128 + SIGPIPE, as a shell reports a process SIGPIPE killed).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import importlib
import os
import re
import secrets
import socket
import sqlite3
import sys
from collections.abc import Callable, Iterator, Sequence
from http import HTTPStatus
from importlib.metadata import PackageNotFoundError, entry_points, version
from pathlib import Path
from typing import Any, Final, NoReturn
from urllib.parse import urlsplit

import httpx
import orjson

from svcrest.app import App
from svcrest.auth.users import DuplicateUserError
from svcrest.http.user import ROLE_CAPABILITIES, User
from svcrest.rest.pipeline import rest_route_of
from svcrest.serve import launcher
from svcrest.serve.launcher import ServeConfig
from svcrest.store.postgres import redact_url
from svcrest.store.sqlite import StoreError

__all__ = [
    "BROKEN_PIPE_STATUS",
    "DEFAULT_DB",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "DEMO_PLUGIN",
    "ENV_DB",
    "ENV_DEMO",
    "ENV_HOME",
    "ENV_PLUGINS",
    "PLUGIN_GROUP",
    "CliError",
    "add_proxy_options",
    "app_from_env",
    "build_parser",
    "check_port",
    "generate_password",
    "load_plugin",
    "main",
    "make_app",
    "proxy_options",
    "request_target",
    "svcrest_version",
    "wsgi_from_env",
]

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8000
DEFAULT_DB: Final = "var/svcrest.db"
DEFAULT_HOME: Final = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
#: The plugin every site of the command line gets.
DEMO_PLUGIN: Final = "svcrest.demo:register"
#: The entry-point group whose entries (``module:function``) are loaded as plugins.
PLUGIN_GROUP: Final = "svcrest.plugins"
#: Settings of :func:`app_from_env` (the uvicorn factory used with several workers).
ENV_DB: Final = "SVCREST_DB"
ENV_HOME: Final = "SVCREST_HOME"
ENV_PLUGINS: Final = "SVCREST_PLUGINS"
#: ``0`` leaves the demo plugin out (``svcrest serve --no-demo``).
ENV_DEMO: Final = "SVCREST_DEMO"
#: ``1`` serves clients written for WordPress unchanged (``svcrest serve --wordpress-compat``).
ENV_WORDPRESS_COMPAT: Final = "SVCREST_WORDPRESS_COMPAT"
ADMIN_LOGIN: Final = "admin"
#: The exit status after a closed standard output (a reader such as ``head`` left).
BROKEN_PIPE_STATUS: Final = 141

_PLUGIN_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
_METHOD = re.compile(r"[A-Za-z]+")
_STORE_ERRORS = (StoreError, sqlite3.Error, OSError)
_SQLITE_URL = "sqlite:///"

Plugin = Callable[[App], object]


class CliError(Exception):
    """A failure reported as one line on standard error, with an exit status."""

    def __init__(self, message: str, status: int = 2, prog: str = "svcrest") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (raised as CliError, status 2)."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see '{self.prog} --help')", 2, self.prog)


# -- plugins and the site --------------------------------------------------------------------


def load_plugin(spec: str) -> Plugin:
    """The callable named by ``module:function`` (the function may be a dotted attribute
    path); CliError when it cannot be loaded."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or _PLUGIN_SPEC.fullmatch(spec.strip()) is None:
        raise CliError(f"invalid plugin {spec!r}: expected module:function")
    _import_from_cwd()
    try:
        target: Any = importlib.import_module(module_name.strip())
    except Exception as exc:  # a plugin may fail to import in any way
        raise CliError(f"cannot load plugin {spec!r}: {type(exc).__name__}: {exc}") from exc
    for part in attribute.strip().split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise CliError(
                f"cannot load plugin {spec!r}: {module_name!r} has no attribute {attribute!r}"
            ) from None
    if not callable(target):
        raise CliError(f"cannot load plugin {spec!r}: {attribute!r} is not callable")
    return target  # type: ignore[no-any-return]


def _import_from_cwd() -> None:
    """Put the current directory first on ``sys.path``, as ``python -m`` does, so that a
    plugin module sitting there imports whichever way ``svcrest`` was started (the console
    script's ``sys.path`` starts with its own ``bin`` directory instead). Nothing changes when
    the directory is already there, or with ``-P`` / ``PYTHONSAFEPATH``, under which
    ``python -m`` does not add it either."""
    if sys.flags.safe_path:
        return
    try:
        cwd = os.getcwd()
    except OSError:  # the directory was removed under us: nothing to import from
        return
    if cwd not in sys.path:
        sys.path.insert(0, cwd)


def _entry_point_plugins() -> Iterator[tuple[str, Callable[[], Plugin]]]:
    for entry in entry_points(group=PLUGIN_GROUP):
        spec = entry.value.split("[", 1)[0].replace(" ", "")

        def load(entry: Any = entry, spec: str = spec) -> Plugin:
            try:
                loaded = entry.load()
            except Exception as exc:  # a plugin may fail to import in any way
                raise CliError(
                    f"cannot load plugin {spec!r} (entry point {entry.name!r} in"
                    f" {PLUGIN_GROUP}): {type(exc).__name__}: {exc}"
                ) from exc
            if not callable(loaded):
                raise CliError(f"cannot load plugin {spec!r}: it is not callable")
            return loaded  # type: ignore[no-any-return]

        yield spec, load


def _plugins(specs: Sequence[str], demo: bool = True) -> list[tuple[str, Callable[[], Plugin]]]:
    """The demo (unless ``demo`` is false), the entry points, then ``specs``; each spec
    once, first place kept."""
    found: dict[str, Callable[[], Plugin]] = {DEMO_PLUGIN: _loader(DEMO_PLUGIN)} if demo else {}
    for spec, load in _entry_point_plugins():
        found.setdefault(spec, load)
    for spec in specs:
        found.setdefault(spec.strip(), _loader(spec.strip()))
    return list(found.items())


def _loader(spec: str) -> Callable[[], Plugin]:
    return lambda: load_plugin(spec)


def make_app(
    db: str | None = DEFAULT_DB,
    home: str = DEFAULT_HOME,
    plugins: Sequence[str] = (),
    *,
    demo: bool = True,
    wordpress_compat: bool = False,
) -> App:
    """The site the command line serves: an App on the store ``db`` (a path, a
    ``sqlite:///`` URL, None / ``:memory:``, or a ``postgresql://`` URL) with the demo plugin
    (unless ``demo`` is false), the entry-point plugins and ``plugins`` registered, in
    WordPress compatibility mode with ``wordpress_compat``. The store is opened on first use.
    Raises CliError for a bad home or a plugin that cannot be loaded or fails."""
    try:
        app = App(home, store=db, wordpress_compat=wordpress_compat)
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    for spec, load in _plugins(plugins, demo):
        register = load()
        try:
            register(app)
        except CliError:
            raise
        except Exception as exc:  # report a broken plugin in one line
            raise CliError(f"plugin {spec!r} failed: {type(exc).__name__}: {exc}") from exc
    return app


def _split_plugins(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def app_from_env() -> App:
    """The ASGI factory of the servers' workers (``svcrest.cli:app_from_env``):
    :func:`make_app` with ``SVCREST_DB``, ``SVCREST_HOME``, ``SVCREST_PLUGINS``
    (comma-separated), ``SVCREST_DEMO`` (``0``: no demo plugin) and
    ``SVCREST_WORDPRESS_COMPAT`` (``1``: WordPress compatibility mode)."""
    return make_app(
        os.environ.get(ENV_DB, DEFAULT_DB),
        os.environ.get(ENV_HOME, DEFAULT_HOME),
        _split_plugins(os.environ.get(ENV_PLUGINS, "")),
        demo=os.environ.get(ENV_DEMO, "1") != "0",
        wordpress_compat=os.environ.get(ENV_WORDPRESS_COMPAT, "0") == "1",
    )


def wsgi_from_env() -> Any:
    """The WSGI factory of the servers' workers (``svcrest.cli:wsgi_from_env``): the WSGI
    callable of :func:`app_from_env`'s App."""
    return app_from_env().wsgi


def _open_store(app: App, db: str | None) -> None:
    """Open the store and the user tables now, so a bad database fails in one line."""
    try:
        app.users  # noqa: B018 - opens the store and migrates the user tables
    except _STORE_ERRORS as exc:
        shown = redact_url(db) if db else db  # SECURITY: no password in the message
        raise CliError(f"cannot open the database {shown!r}: {exc}") from exc


def _database_file(db: str | None) -> str | None:
    """The file of a SQLite ``--db`` (a path or ``sqlite:///`` URL); None for an in-memory
    database or another kind of URL (the store reports those)."""
    if db is None or _is_memory(db):
        return None
    if db.startswith(_SQLITE_URL):
        return db[len(_SQLITE_URL) :] or None  # sqlite:///rel.db -> rel.db, :////abs -> /abs
    return None if "://" in db else db


def _require_database(db: str | None) -> None:
    """Refuse a database file that does not exist (nor its directory): reading a site never
    creates one."""
    path = _database_file(db)
    if path is not None and not os.path.lexists(path):
        raise CliError(
            f"the database {path!r} does not exist (svcrest serve or svcrest user add"
            " creates it; --db :memory: reads an empty site)"
        )


def _new_database(db: str | None) -> str | None:
    """The file ``db`` names when it does not exist yet (opening the store creates it)."""
    path = _database_file(db)
    return path if path is not None and not os.path.lexists(path) else None


def _create_database_directory(db: str | None) -> str | None:
    """Create the missing directory of the database file ``db`` names (``var/`` of
    ``--db var/site.db``), for the commands that create a database; the directory created,
    or None when there was nothing to create."""
    path = _database_file(db)
    if path is None:
        return None
    directory = Path(path).parent
    if directory.is_dir():
        return None
    try:
        directory.mkdir(parents=True)
    except OSError as exc:
        raise CliError(
            f"cannot create the directory {str(directory)!r} for the database {path!r}:"
            f" {exc.strerror or exc}"
        ) from exc
    return str(directory)


def _prepare_new_database(app: App, db: str | None) -> None:
    """Open the store of a command that may create it (``serve``, ``user add``), creating
    the database's missing directory first; each creation is announced on one line."""
    directory = _create_database_directory(db)
    if directory is not None:
        print(f"Created the directory {directory}")
    created = _new_database(db)
    _open_store(app, db)
    if created is not None:
        print(f"Created the database {created}")


def generate_password() -> str:
    """A random password (24 URL-safe characters)."""
    return secrets.token_urlsafe(18)


def _ensure_admin(app: App) -> str | None:
    """Create ``admin`` (administrator) when there is no user yet; its password, else None."""
    with app.store.read() as conn:
        if conn.execute("SELECT 1 FROM users LIMIT 1").fetchone() is not None:
            return None
    password = generate_password()
    try:
        app.users.create(ADMIN_LOGIN, password, roles=("administrator",))
    except DuplicateUserError:  # another process created it first
        return None
    return password


# -- serve -----------------------------------------------------------------------------------


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


def _is_memory(db: str | None) -> bool:
    return db in (None, "", ":memory:", "sqlite://", "sqlite:///:memory:")


def _server_choice(args: argparse.Namespace) -> str:
    """The server asked for; without ``--server``, the default one, or uvicorn where granian
    cannot serve: an in-memory database (it lives in the one process uvicorn serves it from)
    and ``--proxy-headers`` (granian does not read X-Forwarded-*)."""
    memory = _is_memory(args.db)
    needs_uvicorn = memory or args.proxy_headers
    if args.server is None:
        return "uvicorn" if needs_uvicorn else launcher.DEFAULT_SERVER
    if args.server == "granian" and memory:
        raise CliError(
            "granian serves from worker processes, which cannot share an in-memory database"
            " (use --db PATH, or --server uvicorn)"
        )
    if args.server == "granian" and args.proxy_headers:
        raise CliError("granian does not read proxy headers (use --server uvicorn)")
    return str(args.server)


def _serve_config(args: argparse.Namespace, app: App, home: str, server: str) -> ServeConfig:
    limits = launcher.Limits(
        header_timeout=args.header_timeout, keep_alive_timeout=args.keep_alive_timeout
    )
    config = ServeConfig(
        asgi_factory="svcrest.cli:app_from_env",
        wsgi_factory="svcrest.cli:wsgi_from_env",
        server=server,
        interface=args.interface,
        host=args.host,
        port=args.port,
        workers=args.workers,
        reload=args.reload,
        access_log=args.access_log,
        proxy_headers=args.proxy_headers,
        forwarded_allow_ips=proxy_options(args).get("forwarded_allow_ips"),
        limits=limits,
        app=app,
    )
    if not config.in_process:  # the workers build the site from the environment
        app.store.close()
        os.environ[ENV_DB] = args.db
        os.environ[ENV_HOME] = home
        os.environ[ENV_PLUGINS] = ",".join(args.plugin)
        os.environ[ENV_DEMO] = "1" if args.demo else "0"
        os.environ[ENV_WORDPRESS_COMPAT] = "1" if args.wordpress_compat else "0"
    return config


def _cmd_serve(args: argparse.Namespace) -> int:
    if args.workers > 1 and _is_memory(args.db):
        raise CliError("an in-memory database cannot be shared by several workers")
    if args.reload and _is_memory(args.db):
        raise CliError("an in-memory database does not survive a reload (use --db PATH)")
    proxy_options(args)  # refuses --forwarded-allow-ips without --proxy-headers
    server = _server_choice(args)
    problem = check_port(args.host, args.port)
    if problem is not None:
        raise CliError(problem)
    home = args.home or _default_home(args.host, args.port)
    app = make_app(
        args.db, home, args.plugin, demo=args.demo, wordpress_compat=args.wordpress_compat
    )
    _prepare_new_database(app, args.db)
    password = _ensure_admin(app)
    if password is not None:
        print(f"Created user {ADMIN_LOGIN} with password: {password}")
    print(
        f"Serving {app.home}/ (REST API at {app.get_rest_url()}) with {server} ({args.interface})"
    )
    print(
        f"Log in at {app.home}/login as {ADMIN_LOGIN} (its password was printed on first"
        " start); add users with: svcrest user add LOGIN --role ROLE",
        flush=True,
    )
    try:
        return launcher.serve(_serve_config(args, app, home, server))
    except launcher.ServerMissingError as exc:
        raise CliError(str(exc)) from None


def add_proxy_options(parser: argparse.ArgumentParser) -> None:
    """``--proxy-headers`` and ``--forwarded-allow-ips`` (DESIGN §6: behind a TLS proxy)."""
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


# -- routes and request ----------------------------------------------------------------------


def _cmd_routes(args: argparse.Namespace) -> int:
    app = make_app(args.db, args.home, args.plugin)
    _require_database(args.db)
    _open_store(app, args.db)
    try:
        routes = app.rest_get_server().get_routes()
    finally:
        app.store.close()
    for route, handlers in routes.items():
        methods = dict.fromkeys(method for handler in handlers for method in handler["methods"])
        print(f"{route} {', '.join(methods)}".rstrip())
    return 0


def _cmd_openapi(args: argparse.Namespace) -> int:
    app = make_app(args.db, args.home, args.plugin)
    _require_database(args.db)
    _open_store(app, args.db)
    try:
        document = app.openapi()
    finally:
        app.store.close()
    option = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
    print(orjson.dumps(document, option=option).decode())
    return 0


def _status_line(status: int) -> str:
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


# -- request: one request served in-process, as over HTTP ------------------------------------
#
# DECISION: ``svcrest request`` does not call ``app.rest_do_request``. Internal dispatch is, by
# WordPress's design, only the server's ``dispatch``: no authentication, no
# ``rest_post_dispatch`` (``_fields``, Allow), no ``_envelope``, no ``rest_pre_serve_request``
# (CORS) and none of the REST header block. The command builds an HTTP request instead and
# hands it to the App's ASGI callable (what ``svcrest serve`` runs under uvicorn) through
# httpx's in-process ASGI transport, so the answer, its status line and every header are
# exactly what a client of ``svcrest serve`` would get, and every query variable the HTTP
# path knows (``_fields``, ``_envelope``, ``_method``, ``_embed`` once it exists) works.


def request_target(app: App, target: str) -> str:
    """The URL path and query string on ``app``'s site that ``svcrest request`` sends for
    ``target``. CliError when ``target`` cannot be served by this site.

    ``target`` is one of:

    - a full URL on the site (``http://127.0.0.1:8000/svc-json/demo/v1/notes?per_page=2``),
      whose scheme, host and port must be those of the home (``--home`` sets it) and which
      must address the REST API;
    - a path that addresses the REST API over HTTP: under the REST root
      (``/svc-json/demo/v1/notes``, with or without the home's own path in front) or with a
      ``rest_route`` query variable (``?rest_route=/demo/v1/notes``, ``/?rest_route=…``);
    - otherwise a route (``/demo/v1/notes?per_page=2``, ``demo/v1/notes``), sent under the
      REST root.
    """
    base_path = app.rest_base_path()
    if "://" in target:
        return _url_target(app, target, base_path)
    path, mark, query = target.partition("?")
    path = path if path.startswith("/") else "/" + path
    home_path = app.home_path
    on_site = not home_path or path == home_path or path.startswith(home_path + "/")
    candidate = path if on_site else home_path + path
    if rest_route_of(base_path, candidate, query) is None:
        candidate = base_path + path  # a route
    return candidate + mark + query


_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, parts.hostname, parts.port or _DEFAULT_PORTS.get(scheme)


def _url_target(app: App, url: str, base_path: str) -> str:
    try:
        parts = urlsplit(url)
        elsewhere = _origin(url) != _origin(app.home)
    except ValueError as exc:
        raise CliError(f"invalid URL {url!r}: {exc}") from exc
    if elsewhere:
        root = f"{parts.scheme}://{parts.netloc}"
        raise CliError(
            f"{url} is not on this site, whose home is {app.home} (to serve it, pass --home {root})"
        )
    path = parts.path or "/"
    if rest_route_of(base_path, path, parts.query) is None:
        raise CliError(
            f"{url} is not a REST URL: its path is not under {app.get_rest_url()} and it has"
            " no rest_route query variable"
        )
    return path + ("?" + parts.query if parts.query else "")


def svcrest_version() -> str:
    """The installed distribution's version (``unknown`` when svcrest runs uninstalled)."""
    try:
        return version("svcrest")
    except PackageNotFoundError:
        return "unknown"


def _act_as(app: App, login: str) -> None:
    """Make ``login`` the current user of the requests ``app`` serves, the way another
    authentication scheme (an application password, a plugin) would: a
    ``determine_current_user`` filter. A user so authenticated needs no nonce."""
    user = app.users.get_by_login(login)
    if user is None:
        raise CliError(f"no user with the login {login!r}")

    def command_line_user(current: User) -> User:
        return user

    app.hooks.add_filter("determine_current_user", command_line_user)


def _request_body(args: argparse.Namespace) -> tuple[dict[str, str], bytes]:
    headers = {"User-Agent": f"svcrest/{svcrest_version()} (svcrest request)"}
    if args.json is None:
        return headers, b""
    try:
        orjson.loads(args.json)
    except orjson.JSONDecodeError as exc:
        raise CliError(f"--json is not valid JSON: {exc}") from exc
    headers["Content-Type"] = "application/json"
    return headers, args.json.encode()


def _serve_in_process(
    app: App, method: str, url: str, headers: dict[str, str], body: bytes
) -> httpx.Response:
    """``app``'s answer to one HTTP request, served through its ASGI callable in-process."""

    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, trust_env=False) as client:
            return await client.request(method, url, headers=headers, content=body)

    return asyncio.run(send())


def _print_answer(response: httpx.Response, include: bool) -> None:
    """The status line, the header lines as served (with ``include``), then the body: JSON
    indented by two spaces, anything else as text."""
    print(_status_line(response.status_code))
    if include:
        for name, value in response.headers.raw:
            print(f"{name.decode('latin-1')}: {value.decode('latin-1')}")
        print()
    if not response.content:
        return
    try:
        data = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        print(response.text)
        return
    print(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())


def _cmd_request(args: argparse.Namespace) -> int:
    app = make_app(args.db, args.home, args.plugin)
    _require_database(args.db)
    target = request_target(app, args.route)
    headers, body = _request_body(args)
    _open_store(app, args.db)
    try:
        if args.user is not None:
            _act_as(app, args.user)
        origin = urlsplit(app.home)
        url = f"{origin.scheme}://{origin.netloc}{target}"
        response = _serve_in_process(app, args.method, url, headers, body)
    finally:
        app.store.close()
    _print_answer(response, args.include)
    return 0 if response.status_code < 400 else 1


# -- user add --------------------------------------------------------------------------------


def _read_password() -> str:
    line = sys.stdin.readline()
    password = line.removesuffix("\n").removesuffix("\r")
    if not password:
        raise CliError("no password on standard input (--password-stdin reads its first line)")
    return password


def _cmd_user_add(args: argparse.Namespace) -> int:
    password = _read_password() if args.password_stdin else generate_password()
    app = App(DEFAULT_HOME, store=args.db)
    _prepare_new_database(app, args.db)
    try:
        user = app.users.create(args.login, password, roles=args.role)
    except DuplicateUserError as exc:
        raise CliError(str(exc), 1) from exc
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    finally:
        app.store.close()
    roles = ", ".join(user.roles)
    if args.password_stdin:
        print(f"Created user {user.login} ({roles}).")
    else:
        print(f"Created user {user.login} ({roles}) with password: {password}")
    return 0


# -- user list, delete, set-password, app-password ---------------------------------------------


@contextlib.contextmanager
def _existing_users(db: str | None) -> Iterator[App]:
    """The site of ``db`` (which must exist), its user tables open; its store closed after."""
    _require_database(db)
    app = App(DEFAULT_HOME, store=db)
    _open_store(app, db)
    try:
        yield app
    finally:
        app.store.close()


def _user_named(app: App, login: str) -> User:
    user = app.users.get_by_login(login)
    if user is None:
        raise CliError(f"no user with the login {login!r}", 1)
    return user


def _cmd_user_list(args: argparse.Namespace) -> int:
    with _existing_users(args.db) as app:
        users = app.users.list_users()
    for user in users:
        print(f"{user.id}\t{user.login}\t{','.join(user.roles)}\t{user.display_name}")
    return 0


def _cmd_user_delete(args: argparse.Namespace) -> int:
    with _existing_users(args.db) as app:
        user = _user_named(app, args.login)
        app.users.delete(user.id)
    print(f"Deleted user {user.login}.")
    return 0


def _cmd_user_set_password(args: argparse.Namespace) -> int:
    password = _read_password() if args.password_stdin else generate_password()
    with _existing_users(args.db) as app:
        user = _user_named(app, args.login)
        app.users.set_password(user.id, password)
    if args.password_stdin:
        print(f"Changed the password of {user.login}.")
    else:
        print(f"Changed the password of {user.login} to: {password}")
    return 0


def _cmd_app_password_add(args: argparse.Namespace) -> int:
    with _existing_users(args.db) as app:
        user = _user_named(app, args.login)
        try:
            password, item = app.users.create_application_password(user.id, args.name)
        except ValueError as exc:
            raise CliError(str(exc)) from exc
    print(f"Created application password {item['name']!r} ({item['uuid']}) of {user.login}:")
    print(password)
    return 0


def _cmd_app_password_list(args: argparse.Namespace) -> int:
    with _existing_users(args.db) as app:
        user = _user_named(app, args.login)
        items = app.users.list_application_passwords(user.id)
    for item in items:
        print(f"{item['uuid']}\t{item['name']}")
    return 0


def _cmd_app_password_delete(args: argparse.Namespace) -> int:
    with _existing_users(args.db) as app:
        user = _user_named(app, args.login)
        deleted = app.users.delete_application_password(user.id, args.uuid)
    if not deleted:
        raise CliError(f"{user.login} has no application password {args.uuid!r}", 1)
    print(f"Deleted application password {args.uuid} of {user.login}.")
    return 0


# -- the parser ------------------------------------------------------------------------------


def _port(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {value!r} (1-65535)")
    return int(value)


def _workers(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= 1024:
        raise argparse.ArgumentTypeError(f"invalid worker count {value!r} (1-1024)")
    return int(value)


def _plugin_spec(value: str) -> str:
    if _PLUGIN_SPEC.fullmatch(value.strip()) is None:
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
        default=DEFAULT_DB,
        metavar="PATH",
        help="the database: a SQLite path, sqlite:///URL or :memory:, or a PostgreSQL URL"
        f" postgresql://user:password@host:port/dbname (default {DEFAULT_DB})",
    )


def _add_site_options(parser: argparse.ArgumentParser, home_default: str | None) -> None:
    _add_db(parser)
    parser.add_argument(
        "--plugin",
        action="append",
        default=[],
        type=_plugin_spec,
        metavar="MODULE:FUNCTION",
        help="register a plugin (repeatable); the demo and svcrest.plugins entry points are"
        " always loaded",
    )
    parser.add_argument(
        "--home",
        default=home_default,
        metavar="URL",
        help="the site's home address"
        + (" (default http://HOST:PORT)" if home_default is None else f" (default {home_default})"),
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
        default=launcher.DEFAULT_INTERFACE,
        help=f"(default {launcher.DEFAULT_INTERFACE})",
    )
    serve.add_argument("--reload", action="store_true", help="restart when a source file changes")
    serve.add_argument(
        "--access-log",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="log each request's method, path and status, nonces redacted (default on)",
    )
    serve.add_argument(
        "--no-demo", dest="demo", action="store_false", help="leave the demo plugin out"
    )
    serve.add_argument(
        "--wordpress-compat",
        action="store_true",
        help="let clients written for WordPress work unchanged (X-WP-Nonce, X-WP-Total…)",
    )
    serve.add_argument(
        "--header-timeout",
        type=_seconds,
        default=limits.header_timeout,
        metavar="S",
        help="seconds to send a request head (default %(default)s)",
    )
    serve.add_argument(
        "--keep-alive-timeout",
        type=_seconds,
        default=limits.keep_alive_timeout,
        metavar="S",
        help="seconds an idle connection stays open (default %(default)s)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``svcrest`` argument parser."""
    parser = _Parser(prog="svcrest", description="Serve and inspect a svcrest site.")
    parser.add_argument("--version", action="version", version=f"svcrest {svcrest_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    serve = commands.add_parser("serve", help="serve the site with granian or uvicorn")
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"(default {DEFAULT_HOST})")
    serve.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"(default {DEFAULT_PORT})")
    serve.add_argument("--workers", type=_workers, default=1, metavar="N", help="(default 1)")
    _add_server_options(serve)
    add_proxy_options(serve)
    _add_site_options(serve, None)
    serve.set_defaults(handler=_cmd_serve)

    routes = commands.add_parser("routes", help="print the route table, one route a line")
    _add_site_options(routes, DEFAULT_HOME)
    routes.set_defaults(handler=_cmd_routes)

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
    request.set_defaults(handler=_cmd_request)

    openapi = commands.add_parser(
        "openapi", help="print the OpenAPI 3.1 document of the site's routes (JSON)"
    )
    _add_site_options(openapi, DEFAULT_HOME)
    openapi.set_defaults(handler=_cmd_openapi)

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
    add.set_defaults(handler=_cmd_user_add)
    listing = user_commands.add_parser("list", help="list the users (id, login, roles, name)")
    _add_db(listing)
    listing.set_defaults(handler=_cmd_user_list)
    delete = user_commands.add_parser("delete", help="delete a user and their sessions")
    delete.add_argument("login", metavar="LOGIN")
    _add_db(delete)
    delete.set_defaults(handler=_cmd_user_delete)
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
    set_password.set_defaults(handler=_cmd_user_set_password)
    app_password = user_commands.add_parser(
        "app-password", help="manage a user's application passwords"
    )
    app_commands = app_password.add_subparsers(dest="app_action", metavar="ACTION", required=True)
    app_add = app_commands.add_parser("add", help="create one and print it (shown once)")
    app_add.add_argument("login", metavar="LOGIN")
    app_add.add_argument("name", metavar="NAME")
    _add_db(app_add)
    app_add.set_defaults(handler=_cmd_app_password_add)
    app_list = app_commands.add_parser("list", help="their uuids and names (never a password)")
    app_list.add_argument("login", metavar="LOGIN")
    _add_db(app_list)
    app_list.set_defaults(handler=_cmd_app_password_list)
    app_delete = app_commands.add_parser("delete", help="revoke one")
    app_delete.add_argument("login", metavar="LOGIN")
    app_delete.add_argument("uuid", metavar="UUID")
    _add_db(app_delete)
    app_delete.set_defaults(handler=_cmd_app_password_delete)
    return parser


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
    try:
        args = build_parser().parse_args(argv)
        handler: Callable[[argparse.Namespace], int] = args.handler
        status = handler(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return status
    except BrokenPipeError:
        _discard_stdout()
        return BROKEN_PIPE_STATUS
    except CliError as exc:
        print(f"{exc.prog}: error: {exc.message}", file=sys.stderr)
        return exc.status
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        return 130
