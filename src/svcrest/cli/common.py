"""What every ``svcrest`` command shares: defaults, environment names, errors."""

from __future__ import annotations

import argparse
import logging
import os
import re
import secrets
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Final, NoReturn

from svcrest.app import App
from svcrest.serve.jsonlog import json_line
from svcrest.store.postgres import redact_url

DEFAULT_HOST: Final = "127.0.0.1"


DEFAULT_PORT: Final = 8000


DEFAULT_DB: Final = "var/svcrest.db"


DEFAULT_HOME: Final = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"


#: The plugin every site of the command line gets.
DEMO_PLUGIN: Final = "svcrest.demo:register"


#: The entry-point group whose entries (``module:function``) are loaded as plugins.
PLUGIN_GROUP: Final = "svcrest.plugins"


#: The defaults of ``--db``, ``--home``, ``--plugin`` and ``--demo/--no-demo`` on every command
#: that has the option, and the settings of :func:`app_from_env` (the servers' worker factory).
ENV_DB: Final = "SVCREST_DB"


ENV_HOME: Final = "SVCREST_HOME"


ENV_PLUGINS: Final = "SVCREST_PLUGINS"


#: ``0`` (or ``false``, ``no``, ``off``) leaves the demo plugin out (``--no-demo``).
ENV_DEMO: Final = "SVCREST_DEMO"


#: ``1`` serves clients written for WordPress unchanged (``svcrest serve --wordpress-compat``).
ENV_WORDPRESS_COMPAT: Final = "SVCREST_WORDPRESS_COMPAT"
#: ``1`` serves the Model Context Protocol at ``<home>/mcp`` (``svcrest serve --mcp``).
ENV_MCP: Final = "SVCREST_MCP"
#: The most change-feed streams each worker serves at once (``svcrest serve --max-streams``).
ENV_MAX_STREAMS: Final = "SVCREST_MAX_STREAMS"


#: The site's name (``svcrest serve --title``): the title of ``/docs`` and ``/openapi.json``.
ENV_TITLE: Final = "SVCREST_TITLE"


#: The site's API version (``svcrest serve --api-version``): ``info.version`` of the document.
ENV_API_VERSION: Final = "SVCREST_API_VERSION"


ADMIN_LOGIN: Final = "admin"


#: The exit status after a closed standard output (a reader such as ``head`` left).
BROKEN_PIPE_STATUS: Final = 141


PLUGIN_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


Plugin = Callable[[App], object]


class CliError(Exception):
    """A failure reported as one line on standard error, with an exit status."""

    def __init__(self, message: str, status: int = 2, prog: str = "svcrest") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.prog = prog


class PluginError(CliError):
    """A plugin that failed to import or to register: the one-line message, plus the
    traceback of ``error`` (:meth:`traceback_text`) limited to the frames in ``files``, the
    plugin's own source files and directories (all frames with ``svcrest … --traceback``)."""

    def __init__(self, message: str, error: BaseException, files: Sequence[str]) -> None:
        super().__init__(message)
        self.error = error
        self.files = tuple(files)

    def _in_plugin(self, filename: str) -> bool:
        path = os.path.realpath(filename)
        return any(path == root or path.startswith(root + os.sep) for root in self.files)

    def traceback_text(self, every_frame: bool = False) -> str:
        """The traceback as Python prints it: every frame (and the chained exceptions) with
        ``every_frame``, else only the plugin's frames and the exception's lines (which show
        the file, line and column of a syntax error in the plugin); empty when nothing of it
        is the plugin's (a plugin module that does not exist)."""
        if every_frame:
            return "".join(traceback.format_exception(self.error))
        frames = [
            frame
            for frame in traceback.extract_tb(self.error.__traceback__)
            if self._in_plugin(frame.filename)
        ]
        # A syntax error has no frame of the plugin's: the exception's own lines name its
        # file, line and column.
        misspelt = isinstance(self.error, SyntaxError) and self._in_plugin(
            self.error.filename or ""
        )
        if not frames and not misspelt:
            return ""
        return "".join(
            [
                "Traceback (most recent call last; the plugin's frames, --traceback shows all):\n",
                *traceback.StackSummary.from_list(frames).format(),
                *traceback.format_exception_only(type(self.error), self.error),
            ]
        )


def own_line(text: str, log_format: str = "text", level: int = logging.INFO) -> str:
    """A line of the command's own (``Serving …``, ``svcrest: using database …``): as it
    is, or with ``--log-format json`` one JSON object (the fields of every log line; the
    ``svcrest:`` prefix left to the ``logger`` field)."""
    if log_format != "json":
        return text
    return json_line(text.removeprefix("svcrest: "), level=level)


def error_text(exc: CliError, every_frame: bool = False, log_format: str = "text") -> str:
    """What standard error gets for ``exc``: a plugin's traceback (its frames, every frame
    with ``every_frame``) then ``svcrest: error: …``; with ``log_format`` ``"json"`` one
    JSON object at level ERROR whose ``exception`` is that traceback."""
    frames = exc.traceback_text(every_frame) if isinstance(exc, PluginError) else ""
    if log_format == "json":
        return json_line(exc.message, level=logging.ERROR, exception=frames) + "\n"
    return f"{frames}{exc.prog}: error: {exc.message}\n"


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (raised as CliError, status 2)."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see '{self.prog} --help')", 2, self.prog)


def svcrest_version() -> str:
    """The installed distribution's version (``unknown`` when svcrest runs uninstalled)."""
    try:
        return version("svcrest")
    except PackageNotFoundError:
        return "unknown"


def generate_password() -> str:
    """A random password (24 URL-safe characters)."""
    return secrets.token_urlsafe(18)


def read_password() -> str:
    line = sys.stdin.readline()
    password = line.removesuffix("\n").removesuffix("\r")
    if not password:
        raise CliError("no password on standard input (--password-stdin reads its first line)")
    return password


_OFF: Final = frozenset({"0", "false", "no", "off"})


def demo_from_env(environ: Mapping[str, str]) -> bool:
    """Whether ``SVCREST_DEMO`` keeps the demo plugin (unset, empty or anything but ``0``,
    ``false``, ``no``, ``off``: it does)."""
    return environ.get(ENV_DEMO, "").strip().lower() not in _OFF


def split_plugins(value: str) -> list[str]:
    """The ``module:function`` names of a comma-separated ``SVCREST_PLUGINS``."""
    return [part.strip() for part in value.split(",") if part.strip()]


def apply_environment(args: argparse.Namespace, environ: Mapping[str, str]) -> str:
    """Fill in the options the command line left unset from the environment, else their
    defaults: ``--db`` from ``SVCREST_DB`` (else ``var/svcrest.db``), ``--home`` from
    ``SVCREST_HOME`` (else the command's ``home_default``), ``--plugin`` from ``SVCREST_PLUGINS`` (a
    ``--plugin`` given replaces the variable's list) and ``--demo/--no-demo`` from
    ``SVCREST_DEMO``. Only the options the command has are touched. Returns where the
    database came from: ``""`` (``--db``), the variable's name, or ``"default"``."""
    source = ""
    if getattr(args, "db", "") is None:
        if environ.get(ENV_DB):
            args.db, source = environ[ENV_DB], ENV_DB
        else:
            args.db, source = DEFAULT_DB, "default"
    if getattr(args, "home", "") is None:  # serve's own default (http://HOST:PORT) is None
        args.home = environ.get(ENV_HOME) or getattr(args, "home_default", None)
    if getattr(args, "plugin", "") is None:
        args.plugin = split_plugins(environ.get(ENV_PLUGINS, ""))
    if getattr(args, "demo", "") is None:
        args.demo = demo_from_env(environ)
    return source


def using_database(db: str, source: str) -> str:
    """The line every command prints on standard error before it opens its database, so that
    the one used is never a surprise (a PostgreSQL URL without its password)."""
    shown = redact_url(db) if "://" in db else db
    origin = {"": "", "default": " (the default; --db or SVCREST_DB chooses another)"}
    return f"svcrest: using database {shown}{origin.get(source, f' (from {source})')}"
