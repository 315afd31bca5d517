"""What every ``svcrest`` command shares: defaults, environment names, errors."""

from __future__ import annotations

import argparse
import re
import secrets
import sys
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Final, NoReturn

from svcrest.app import App

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


PLUGIN_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


Plugin = Callable[[App], object]


class CliError(Exception):
    """A failure reported as one line on standard error, with an exit status."""

    def __init__(self, message: str, status: int = 2, prog: str = "svcrest") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.prog = prog


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
