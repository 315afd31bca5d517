"""The site the command line builds: plugins, the App, and its database."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import logging
import os
import sqlite3
import sys
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Final, NoReturn

from svcrest.app import App, DoingItWrong
from svcrest.auth.users import DuplicateUserError
from svcrest.cli.common import (
    ADMIN_LOGIN,
    DEFAULT_DB,
    DEFAULT_HOME,
    DEMO_PLUGIN,
    ENV_API_VERSION,
    ENV_DB,
    ENV_HOME,
    ENV_MAX_STREAMS,
    ENV_MCP,
    ENV_PLUGINS,
    ENV_TITLE,
    ENV_WORDPRESS_COMPAT,
    PLUGIN_GROUP,
    PLUGIN_SPEC,
    CliError,
    Plugin,
    PluginError,
    demo_from_env,
    error_text,
    generate_password,
    own_line,
    split_plugins,
)
from svcrest.http.streams import DEFAULT_MAX_STREAMS
from svcrest.serve.jsonlog import ENV_LOG_FORMAT
from svcrest.serve.launcher import ENV_RELOAD
from svcrest.serve.metrics import keep_metrics
from svcrest.serve.streams import ENV_SIGNAL_WAKEUP, close_on_signal_wakeup
from svcrest.serve.webhooks import WebhookDeliverer
from svcrest.store.base import Store, StoreError
from svcrest.store.locations import is_memory
from svcrest.store.postgres import redact_url

_STORE_ERRORS = (StoreError, sqlite3.Error, OSError)

#: What a worker of ``svcrest serve --reload`` that could not build the site says last.
RELOAD_WAITS: Final = "svcrest: waiting for the next change to a .py file to serve again (--reload)"


_SQLITE_URL = "sqlite:///"


def load_plugin(spec: str) -> Plugin:
    """The callable named by ``module:function`` (the function may be a dotted attribute
    path); CliError when it cannot be loaded."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or PLUGIN_SPEC.fullmatch(spec.strip()) is None:
        raise CliError(f"invalid plugin {spec!r}: expected module:function")
    _import_from_cwd()
    try:
        target: Any = importlib.import_module(module_name.strip())
    except Exception as exc:  # a plugin may fail to import in any way
        raise PluginError(
            f"cannot load plugin {spec!r}: {type(exc).__name__}: {exc}",
            exc,
            plugin_files(module_name.strip()),
        ) from exc
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


def plugin_files(module_name: str) -> tuple[str, ...]:
    """The plugin's own source: the directory of the package ``module_name`` belongs to, or
    the file of a module outside any package (real paths); empty when it is not found."""
    top = module_name.partition(".")[0]
    module = sys.modules.get(top)
    try:
        found = getattr(module, "__spec__", None) or importlib.util.find_spec(top)
    except (ImportError, ValueError):  # a module without a spec, an unimportable parent
        return ()
    if found is None:
        return ()
    if found.submodule_search_locations:
        return tuple(os.path.realpath(place) for place in found.submodule_search_locations)
    if found.origin and found.has_location:
        return (os.path.realpath(found.origin),)
    return ()


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
                raise PluginError(
                    f"cannot load plugin {spec!r} (entry point {entry.name!r} in"
                    f" {PLUGIN_GROUP}): {type(exc).__name__}: {exc}",
                    exc,
                    plugin_files(entry.module),
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
    title: str | None = None,
    api_version: str | None = None,
    mcp: bool = False,
) -> App:
    """The site the command line serves: an App on the store ``db`` (a path, a
    ``sqlite:///`` URL, None / ``:memory:``, or a ``postgresql://`` URL) with the demo plugin
    (unless ``demo`` is false), the entry-point plugins and ``plugins`` registered, in
    WordPress compatibility mode with ``wordpress_compat``, named ``title`` and versioned
    ``api_version`` (``App(name=..., version=...)``) when given, serving MCP at
    ``<home>/mcp`` with ``mcp``. The store is opened on first use
    (a plugin may open it while it registers). Raises CliError for a bad home, PluginError
    (whose traceback shows the plugin's frames) for a plugin that cannot be loaded or fails."""
    app = new_app(
        db, home, wordpress_compat=wordpress_compat, title=title, api_version=api_version, mcp=mcp
    )
    register_plugins(app, plugins, demo=demo)
    return app


def new_app(
    db: str | None,
    home: str,
    *,
    wordpress_compat: bool = False,
    title: str | None = None,
    api_version: str | None = None,
    mcp: bool = False,
    max_streams: int = DEFAULT_MAX_STREAMS,
) -> App:
    """The App of :func:`make_app` before its plugins; CliError for a bad home, an empty
    title or an empty API version."""
    if title is not None and not title.strip():
        raise CliError("--title must not be empty")
    if api_version is not None and not api_version.strip():
        raise CliError("--api-version must not be empty")
    try:
        return App(
            home,
            store=db,
            wordpress_compat=wordpress_compat,
            version=api_version,
            name="svcrest" if title is None else title,
            mcp=mcp,
            max_streams=max_streams,
        )
    except ValueError as exc:
        raise CliError(str(exc)) from exc


def register_plugins(app: App, plugins: Sequence[str], *, demo: bool = True) -> None:
    """Register the plugins of :func:`make_app` on ``app``; a route ``register_rest_route``
    refused (an invalid pattern, a handler that cannot work) is a CliError naming the plugin,
    the route and the problem, since the site would otherwise serve without it."""
    for spec, load in _plugins(plugins, demo):
        register = load()
        caught: list[warnings.WarningMessage] = []
        try:
            with warnings.catch_warnings(record=True) as recorded:
                warnings.filterwarnings("always", category=DoingItWrong)
                caught = recorded
                register(app)
        except CliError:
            raise
        except Exception as exc:  # the message, and the traceback of the plugin's frames
            module = spec.partition(":")[0]
            raise PluginError(
                f"plugin {spec!r} failed: {type(exc).__name__}: {exc}", exc, plugin_files(module)
            ) from exc
        finally:
            _show_notices(caught)  # once the warnings machinery is restored
        _refuse_refused_routes(spec, caught)


def _show_notices(caught: Sequence[warnings.WarningMessage]) -> None:
    """Show the warnings a plugin raised while it registered (as Python would have), except
    the refusals of routes, which :func:`_refuse_refused_routes` reports."""
    for notice in caught:
        if getattr(notice.message, "refused_route", None) is None:
            warnings.showwarning(notice.message, notice.category, notice.filename, notice.lineno)


def _refuse_refused_routes(spec: str, caught: Sequence[warnings.WarningMessage]) -> None:
    for notice in caught:
        route = getattr(notice.message, "refused_route", None)
        if route is not None:
            where = f"{os.path.basename(notice.filename)}:{notice.lineno}"
            raise CliError(
                f"plugin {spec!r} cannot register the route {route} ({where}): {notice.message}"
            )


def app_from_env() -> App:
    """The ASGI factory of the servers' workers (``svcrest.cli:app_from_env``):
    :func:`make_app` with ``SVCREST_DB``, ``SVCREST_HOME``, ``SVCREST_PLUGINS``
    (comma-separated), ``SVCREST_DEMO`` (``0``: no demo plugin) and
    ``SVCREST_WORDPRESS_COMPAT`` (``1``: WordPress compatibility mode), ``SVCREST_TITLE``
    and ``SVCREST_API_VERSION`` (the site's name and API version), ``SVCREST_MCP`` (``1``: MCP
    at ``<home>/mcp``); with
    ``SVCREST_ADMIN_PORT`` and ``PROMETHEUS_MULTIPROC_DIR``, the App keeps the metrics.
    The database file's missing directory is created and the store opened first, as
    ``svcrest serve`` does, so that a database that cannot be opened is reported as such,
    not as the failure of a plugin that opens the store while it registers. A site that
    cannot be built is reported on standard error as the command line reports it, and the
    worker exits (SystemExit with status 2): a plugin saved with a syntax error under
    ``--reload`` prints its frames and the reloader waits for the next change."""
    db = os.environ.get(ENV_DB) or DEFAULT_DB
    try:
        create_database_directory(db)
        app = new_app(
            db,
            os.environ.get(ENV_HOME) or DEFAULT_HOME,
            wordpress_compat=os.environ.get(ENV_WORDPRESS_COMPAT, "0") == "1",
            title=os.environ.get(ENV_TITLE) or None,
            api_version=os.environ.get(ENV_API_VERSION) or None,
            mcp=os.environ.get(ENV_MCP, "0") == "1",
            max_streams=_max_streams(os.environ.get(ENV_MAX_STREAMS)),
        )
        open_store(app, db)  # a database that cannot be opened is reported as such
        register_plugins(
            app, split_plugins(os.environ.get(ENV_PLUGINS, "")), demo=demo_from_env(os.environ)
        )
    except CliError as exc:
        _worker_failed(exc)
    # With an admin port (SVCREST_ADMIN_PORT), each worker keeps the metrics.
    keep_metrics(app)
    start_webhook_delivery(app)
    return app


def start_webhook_delivery(app: App) -> WebhookDeliverer:
    """Send ``app``'s webhook deliveries from a daemon thread of this process (every
    ``svcrest serve`` process runs one; they share the outbox, each delivery claimed by one).
    The thread holds no reference to the App: it ends once the App is collected or its store
    closed."""
    site = weakref.ref(app)

    def store() -> Store:
        found = site()
        if found is None:
            raise ReferenceError("the site of these webhooks is gone")
        return found.store

    deliverer = WebhookDeliverer(store)
    deliverer.start()
    return deliverer


def _worker_failed(exc: CliError) -> NoReturn:
    """Report on standard error why a worker cannot build the site, as the command line
    does (a plugin's own frames, then the error; JSON with ``SVCREST_LOG_FORMAT=json``),
    then end the worker with the error's status. Under ``--reload`` the reloader keeps
    watching: the line after says so."""
    log_format = os.environ.get(ENV_LOG_FORMAT, "text")
    text = error_text(exc, log_format=log_format)
    if os.environ.get(ENV_RELOAD) == "1":
        text += own_line(RELOAD_WAITS, log_format, logging.WARNING) + "\n"
    sys.stderr.write(text)
    sys.stderr.flush()
    raise SystemExit(exc.status)


def _max_streams(value: str | None) -> int:
    """``SVCREST_MAX_STREAMS`` (the default when unset or not a positive number)."""
    if value is None or not value.isdigit() or int(value) < 1:
        return DEFAULT_MAX_STREAMS
    return int(value)


def wsgi_from_env() -> Any:
    """The WSGI factory of the servers' workers (``svcrest.cli:wsgi_from_env``): the WSGI
    callable of :func:`app_from_env`'s App. With ``SVCREST_SIGNAL_WAKEUP`` ``1`` (granian's
    WSGI workers, which have no lifespan), SIGTERM and SIGINT end the App's streams and
    waiting long-polls at once (:func:`svcrest.serve.streams.close_on_signal_wakeup`)."""
    app = app_from_env()
    if os.environ.get(ENV_SIGNAL_WAKEUP) == "1":
        close_on_signal_wakeup(app.streams)
    return app.wsgi


def open_store(app: App, db: str | None) -> None:
    """Open the store and the user tables now, so a bad database fails in one line."""
    try:
        app.users  # noqa: B018 - opens the store and migrates the user tables
    except _STORE_ERRORS as exc:
        shown = redact_url(db) if db else db  # SECURITY: no password in the message
        reason = exc.reason if isinstance(exc, StoreError) else str(exc)  # the URL said once
        raise CliError(f"cannot open the database {shown!r}: {reason}") from exc


def _database_file(db: str | None) -> str | None:
    """The file of a SQLite ``--db`` (a path or ``sqlite:///`` URL); None for an in-memory
    database or another kind of URL (the store reports those)."""
    if db is None or is_memory(db):
        return None
    if db.startswith(_SQLITE_URL):
        return db[len(_SQLITE_URL) :] or None  # sqlite:///rel.db -> rel.db, :////abs -> /abs
    return None if "://" in db else db


def require_database(db: str | None) -> None:
    """Refuse a database file that does not exist (nor its directory): reading a site never
    creates one."""
    path = _database_file(db)
    if path is not None and not os.path.lexists(path):
        raise CliError(
            f"the database {path!r} does not exist (svcrest serve or svcrest user add"
            " creates it; --db :memory: reads an empty site)"
        )


@contextlib.contextmanager
def existing_site(app: App, db: str | None) -> Iterator[App]:
    """``app`` on the database ``db``, which must exist, its user tables open; its store is
    closed after the block (the commands that only read a site)."""
    require_database(db)
    open_store(app, db)
    try:
        yield app
    finally:
        app.store.close()


def new_database(db: str | None) -> str | None:
    """The file ``db`` names when it does not exist yet (opening the store creates it)."""
    path = _database_file(db)
    return path if path is not None and not os.path.lexists(path) else None


def create_database_directory(db: str | None) -> str | None:
    """Create the missing directory of the database file ``db`` names (``var/`` of
    ``--db var/site.db``), for the commands that create a database; the directory created,
    or None when there was nothing to create (several workers may race to create it)."""
    path = _database_file(db)
    if path is None:
        return None
    directory = Path(path).parent
    if directory.is_dir():
        return None
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(
            f"cannot create the directory {str(directory)!r} for the database {path!r}:"
            f" {exc.strerror or exc}"
        ) from exc
    return str(directory)


def prepare_database_file(db: str | None, say: Callable[[str], object] = print) -> str | None:
    """Before the site is built (its plugins may open the store while they register), for a
    command that may create the database (``serve``, ``user add``): create its missing
    directory, announced on one line through ``say``; the database file that does not exist
    yet, else None."""
    directory = create_database_directory(db)
    if directory is not None:
        say(f"Created the directory {directory}")
    return new_database(db)


def prepare_new_database(
    app: App, db: str | None, created: str | None, say: Callable[[str], object] = print
) -> None:
    """Open the store of a command that may create it, after :func:`prepare_database_file`
    returned ``created``; the database's creation is announced on one line through ``say``."""
    open_store(app, db)
    if created is not None:
        say(f"Created the database {created}")


def ensure_admin(app: App) -> str | None:
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
