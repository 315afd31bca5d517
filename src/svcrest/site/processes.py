"""An in-memory store served by several worker processes: refused, with the fix named.

``App()`` without a store keeps users, sessions and data in the memory of the process that
serves it. A server with several worker processes (``gunicorn -w 3``, ``granian`` or
``uvicorn --workers 3``) gives each worker its own copy: a login made through one worker is
unknown to the others, and writes land in whichever copy answered, so most logged-in writes
fail with nothing logged. Such a site answers every request 503 ``svc_store_not_shared``
naming the fix, and says so once per process on the ``svcrest`` logger.

How a worker knows it has siblings, first answer wins:

- ``SVCREST_WORKERS``: the worker count ``svcrest serve`` sets for its workers (set it to
  ``1`` under uvicorn's WSGI bridge, which always claims ``wsgi.multiprocess``);
- ``WEB_CONCURRENCY``: the worker count gunicorn and uvicorn take from the environment;
- WSGI's ``wsgi.multiprocess`` (gunicorn sets it when it runs more than one worker).

An ASGI scope carries no such flag: an ASGI server started with several workers outside
``svcrest serve`` and without ``WEB_CONCURRENCY`` goes unnoticed.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Final

import orjson

from svcrest.http.exchange import HttpResponse

__all__ = ["ENV_WORKERS", "NOT_SHARED_CODE", "ProcessCheck", "several_workers"]

#: The worker count ``svcrest serve`` gives its workers.
ENV_WORKERS: Final = "SVCREST_WORKERS"
NOT_SHARED_CODE: Final = "svc_store_not_shared"
_NOT_SHARED_MESSAGE: Final = (
    "This site keeps its data in memory (App() without a store), but the server runs several"
    " worker processes, each with its own copy: serve it with one worker, or give it a"
    " database (svcrest serve --db var/svcrest.db, or App(store='var/svcrest.db'))."
)

logger = logging.getLogger("svcrest")


def _count(name: str) -> int | None:
    try:
        return int(os.environ.get(name, ""))
    except ValueError:
        return None


def several_workers(wsgi_multiprocess: object = None) -> bool:
    """Whether this process is one of several worker processes of its server
    (``wsgi_multiprocess``: the WSGI flag, None under ASGI)."""
    for name in (ENV_WORKERS, "WEB_CONCURRENCY"):
        declared = _count(name)
        if declared is not None:
            return declared > 1
    return bool(wsgi_multiprocess)


def _refusal() -> HttpResponse:
    body = {"code": NOT_SHARED_CODE, "message": _NOT_SHARED_MESSAGE, "data": {"status": 503}}
    return HttpResponse(
        503, [("Content-Type", "application/json; charset=UTF-8")], orjson.dumps(body)
    )


class ProcessCheck:
    """The answer of a site whose in-memory store several workers would split: decided on
    the first request of the process, then read by each request (``pending`` False and
    ``refusal`` None: served as usual)."""

    __slots__ = ("_lock", "pending", "refusal")

    def __init__(self) -> None:
        self.pending = True
        self.refusal: HttpResponse | None = None
        self._lock = threading.Lock()

    def decide(self, store_in_memory: bool, wsgi_multiprocess: object = None) -> None:
        """Decide once (logging the refusal once); later calls change nothing."""
        with self._lock:
            if not self.pending:
                return
            if store_in_memory and several_workers(wsgi_multiprocess):
                self.refusal = _refusal()
                logger.error("svcrest: refusing every request: %s", _NOT_SHARED_MESSAGE)
            self.pending = False
