"""The ``svcrest`` command line: ``serve``, ``routes``, ``request``, ``openapi``, ``user``
(``add``, ``list``, ``delete``, ``set-password``, ``app-password add|list|delete``) and
``webhook`` (``add``, ``list``, ``delete``, ``deliveries``).

Every command that builds a site builds the same one with :func:`make_app`: the demo plugin
(unless ``--no-demo``), the plugins of the entry-point group ``svcrest.plugins`` and the
``--plugin module:function`` given (imported with the current directory first on
``sys.path``, as ``python -m`` does). ``SVCREST_DB``, ``SVCREST_HOME``, ``SVCREST_PLUGINS`` and
``SVCREST_DEMO`` are the defaults of ``--db``, ``--home``, ``--plugin`` and ``--demo`` on every
command that has the option, and every command first says which database it uses (one line on
standard error, so that standard output is the command's own). Errors are one line on
standard error (``svcrest: error: …``) with exit status 2 for bad arguments and an unusable
environment (port in use, database that cannot be opened, broken plugin; a plugin's failure
is preceded by the traceback's frames in the plugin's files, every frame with
``--traceback``). Only ``serve`` and ``user add`` create a database file and its missing
directory (and say so, before any plugin loads); ``routes``, ``request`` and ``openapi``
refuse one that does not exist. ``request`` serves one request
in-process through the App's ASGI callable, as ``svcrest serve`` would over HTTP. Output cut
short by a closed pipe (``svcrest request … | head``) ends quietly with exit status 141
(128 + SIGPIPE, as a shell reports a process SIGPIPE killed).

The modules: ``common`` (defaults, environment names, errors), ``site`` (plugins, the App, its
database), ``serve``, ``requests`` (``routes``, ``openapi``, ``request``), ``users``,
``webhooks`` and ``parser`` (the argument parser and :func:`main`).
"""

from __future__ import annotations

from svcrest.cli.common import (
    BROKEN_PIPE_STATUS,
    DEFAULT_DB,
    DEFAULT_HOST,
    DEFAULT_PORT,
    DEMO_PLUGIN,
    ENV_API_VERSION,
    ENV_DB,
    ENV_DEMO,
    ENV_HOME,
    ENV_MCP,
    ENV_PLUGINS,
    ENV_TITLE,
    ENV_WORDPRESS_COMPAT,
    PLUGIN_GROUP,
    CliError,
    generate_password,
    svcrest_version,
)
from svcrest.cli.parser import build_parser, main
from svcrest.cli.requests import request_target
from svcrest.cli.serve import add_proxy_options, check_port, proxy_options
from svcrest.cli.site import app_from_env, load_plugin, make_app, wsgi_from_env

__all__ = [
    "BROKEN_PIPE_STATUS",
    "DEFAULT_DB",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "DEMO_PLUGIN",
    "ENV_API_VERSION",
    "ENV_DB",
    "ENV_DEMO",
    "ENV_HOME",
    "ENV_MCP",
    "ENV_PLUGINS",
    "ENV_TITLE",
    "ENV_WORDPRESS_COMPAT",
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
