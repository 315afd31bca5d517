"""Request ids: the ``X-Request-Id`` every response carries (docs/guides/operating.md).

A client (or a proxy in front of the site) may name its request: its ``X-Request-Id`` is
kept when it is 1 to 128 characters of ``A-Z a-z 0-9 . _ : -``, so it can be logged and sent
back as it is (SECURITY: nothing else, so no log line or header can be forged through it).
Otherwise the site makes one: 32 hexadecimal digits, a random prefix drawn once per process
(again in a forked worker) followed by a counter, unique across workers and restarts.

:data:`LOGGED_REQUEST` holds the context of the request being answered (its id, matched
route and user: :class:`~svcrest.http.context.RequestContext`) for the servers' access-log
lines, which are written after the pipeline's own context is gone: the request edge sets it
when the request is opened, in the context the server answers in. Every record of the
``svcrest`` logger written while a request is served has its id as ``record.request_id``
("" outside one).
"""

from __future__ import annotations

import itertools
import logging
import os
import re
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Final

from svcrest.http.context import RequestContext, current_context

__all__ = [
    "ACCESS_LOG",
    "ENV_ACCESS_LOG",
    "LOGGED_REQUEST",
    "MAX_REQUEST_ID",
    "REQUEST_IDS",
    "checked_request_id",
]

#: The longest client request id kept.
MAX_REQUEST_ID: Final = 128
_VALID: Final = re.compile(r"[A-Za-z0-9._:\-]{1,128}")

#: The context of the request whose answer an adapter is sending (None before any), for
#: access logs.
LOGGED_REQUEST: ContextVar[RequestContext | None] = ContextVar("svcrest_logged", default=None)

#: The environment variable ``svcrest serve`` sets for its workers: "1" when the server writes
#: access-log lines through the filter that reads :data:`LOGGED_REQUEST`.
ENV_ACCESS_LOG: Final = "SVCREST_ACCESS_LOG"


class _AccessLog:
    """Whether this process's server writes access-log lines that name the request (``svcrest
    serve``'s filter): :data:`LOGGED_REQUEST` is set only then. PERF: setting a
    context variable costs a plain GET ~1,700 instructions (bench/instructions.py), paid for
    nothing when no such line is written (no access log, or a server started without
    ``svcrest serve``, which has no filter to read it)."""

    __slots__ = ("on",)

    def __init__(self) -> None:
        self.on = os.environ.get(ENV_ACCESS_LOG) == "1"


#: ``ACCESS_LOG.on``: see :class:`_AccessLog` (``svcrest serve`` sets it, and
#: :data:`ENV_ACCESS_LOG` for its workers).
ACCESS_LOG = _AccessLog()


#: The last two hexadecimal digits of an id, in counting order.
_ENDINGS: Final = tuple(f"{n:02x}" for n in range(256))


class _Ids:
    """The ids this process makes: a random 64-bit prefix, drawn again in a forked child,
    and a counter, as 32 hexadecimal digits.

    PERF: the ids come by blocks of 256: a block's first 30 digits (the prefix and the
    counter but its last two digits) are written once, each id is one concatenation with
    its last two digits (``%032x`` of a 128-bit counter cost ~2,000 instructions an id: a
    WSGI GET 87,987 → 86,451 instructions, bench/instructions.py). ``next(made)`` runs in C
    only (iterators of iterators, no generator): it is atomic for the server's threads."""

    __slots__ = ("made",)

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        prefix = int.from_bytes(os.urandom(8), "big")
        heads = map("{:016x}{:014x}".format, itertools.repeat(prefix), itertools.count())
        appenders = map(getattr, heads, itertools.repeat("__add__"))
        blocks = map(map, appenders, itertools.repeat(_ENDINGS))
        self.made: Iterator[str] = itertools.chain.from_iterable(blocks)


#: The ids this process makes (``next(REQUEST_IDS.made)``), prepared once per worker.
REQUEST_IDS: Final = _Ids()
os.register_at_fork(after_in_child=REQUEST_IDS.reset)


def checked_request_id(sent: str) -> str:
    """The id of a request whose ``X-Request-Id`` is ``sent``: ``sent`` when valid (1 to 128
    allowed characters), else a new one."""
    if len(sent) <= MAX_REQUEST_ID and _VALID.fullmatch(sent):
        return sent
    return next(REQUEST_IDS.made)


class _NameTheRequest(logging.Filter):
    """Gives a record of the ``svcrest`` logger the id of the request being served."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            ctx = current_context()
            record.request_id = "" if ctx is None else ctx.request_id
        return True


logging.getLogger("svcrest").addFilter(_NameTheRequest())
