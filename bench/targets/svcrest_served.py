"""svcrest as ``svcrest serve`` runs it by default on granian's ASGI interface: the plain
route of ``svcrest_plain`` with the access log on, through the launcher's own logging
configuration (its redacting filter, ``request_id=…`` at the end of each line;
``SVCREST_LOG_FORMAT=json`` for JSON lines), applied in the worker when it imports this.

``logged`` is the default's application: the site in svcrest's access line
(``svcrest.serve.accesslog.AccessLogged``, granian's own access log off). ``app`` served with
granian's ``--access-log`` (``SVCREST_BENCH_SERVER_ARGS=--access-log``) is the default before
svcrest wrote the line: granian's record through the same configuration.
"""

from __future__ import annotations

import logging.config
import os
from typing import Any

from granian.log import LOGGING_CONFIG
from svcrest_plain import app

from svcrest.http.request_id import ACCESS_LOG
from svcrest.serve import accesslog
from svcrest.serve.launcher import _log_config

__all__ = ["app", "logged"]

_FORMAT = os.environ.get("SVCREST_LOG_FORMAT", "text")
logging.config.dictConfig(_log_config(LOGGING_CONFIG, "access", _FORMAT))
ACCESS_LOG.on = True  # the request named for the line, as svcrest serve's workers do
#: The site in svcrest's access line (None in a tree before it).
logged: Any = (
    accesslog.AccessLogged(app, accesslog.AccessLine(_FORMAT))
    if hasattr(accesslog, "AccessLogged")
    else None
)
