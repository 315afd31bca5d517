"""Access log redaction: no nonce or password in a logged request line.

Both servers log the request line through :mod:`logging` (uvicorn's ``uvicorn.access``,
granian's ``granian.access``); the launcher puts :class:`RedactSecrets` on their access
handlers. It rewrites the record's arguments (uvicorn: a tuple whose path carries the query
string; granian: a dict with ``path`` and ``query_string``) and message so that the value of
every ``_wpnonce``, ``pwd`` and ``password`` query variable reads ``[redacted]``. A variable
is recognised by its name as the site reads it: percent-decoded (``%5Fwpnonce``), in any case,
with or without PHP's brackets (``_wpnonce[]``). Neither server logs a header, so no cookie
reaches the log either.

SECURITY: every control character of a logged value (C0, DEL and C1: a decoded ``%0D%0A``
that would start a forged line, a ``%1B`` terminal escape) is written as ``\\xNN``, and a
backslash as ``\\\\``, as Apache's access log does, so a line always ends where the server
ended it and shows exactly what the client sent.

The same filter gives each access-log record the request's id (``request_id``, "-" when the
answer had none: a refused connection), which the launcher's formats print last
(``request_id=…``): the id the adapter sent as ``X-Request-Id``; and the matched route's
pattern (``route``) and the user's id (``user_id``), which the JSON format prints.

The launcher writes granian's text lines with :class:`AccessFormatter` (the same bytes as
``logging.Formatter`` with :data:`ACCESS_FORMAT`).
"""

from __future__ import annotations

import logging
import re
from typing import Final
from urllib.parse import unquote_plus

from svcrest.http.request_id import LOGGED_REQUEST

__all__ = [
    "ACCESS_FORMAT",
    "REDACTED",
    "AccessFormatter",
    "RedactSecrets",
    "escape_controls",
    "redact",
]

REDACTED: Final = "[redacted]"
_SECRETS: Final = frozenset({"_wpnonce", "pwd", "password"})
#: A ``name=value`` pair at the start of a query string or after ``&`` or ``;``; it ends at
#: ASCII white space (the space before ``HTTP/1.1`` in a request line). SECURITY: ASCII only:
#: the site reads a value up to ``&`` or ``;``, so a secret holding ``\x85`` or ``\xa0``
#: (Unicode white space) is redacted whole, not up to that character.
_PAIR: Final = re.compile(r"(?:^|(?<=[&;]))([^&;=#\s\"]+)=([^&;#\s\"]*)", re.ASCII)


#: A control character (C0, DEL, C1) or a backslash.
_UNSAFE: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\\]")


def _escaped(match: re.Match[str]) -> str:
    char = match.group(0)
    return "\\\\" if char == "\\" else f"\\x{ord(char):02x}"


def escape_controls(text: str) -> str:
    """``text`` with each control character written ``\\xNN`` and each backslash ``\\\\``."""
    return _UNSAFE.sub(_escaped, text)


def _secret_name(raw: str) -> bool:
    """Whether the query variable named ``raw`` (as sent) is a secret once decoded."""
    name = unquote_plus(raw) if "%" in raw or "+" in raw else raw
    return name.partition("[")[0].lower() in _SECRETS


def _redact_pair(match: re.Match[str]) -> str:
    name = match.group(1)
    return f"{name}={REDACTED}" if _secret_name(name) else match.group(0)


def redact(text: str) -> str:
    """``text`` with the value of each secret query variable replaced by ``[redacted]``."""
    if "=" not in text:
        return text
    path, mark, query = text.partition("?")  # a text without "?" may be a query string
    if not mark:
        return _PAIR.sub(_redact_pair, text)
    return path + mark + _PAIR.sub(_redact_pair, query)


def _clean(value: str) -> str:
    """``value`` redacted and escaped. PERF: most values (a path without ``=``, an empty
    query string) need neither: ``=`` absent leaves :func:`redact` nothing to do, and a
    printable text (``str.isprintable``: false for every C0, DEL and C1 character) without
    a backslash leaves :func:`escape_controls` nothing: three C-level checks instead of two
    regular expressions, and only on the client's values (granian's worker with the access
    log, 1,000 requests under callgrind: 325,650 → 295,718 instructions a request)."""
    if "=" in value:
        value = redact(value)
    if value.isprintable() and "\\" not in value:
        return value
    return escape_controls(value)


#: The values of granian's access record that granian makes itself (the peer's address,
#: the date, the duration, the status, the scheme and the protocol): no client's character
#: reaches them. Every other value (``path``, ``query_string``, ``method``, a header's
#: ``_hN``) is cleaned.
_GRANIAN_OWN: Final = frozenset({"addr", "time", "dt_ms", "status", "scheme", "protocol"})


class RedactSecrets(logging.Filter):
    """A logging filter that redacts secret query values in the record and escapes its
    control characters (never drops one), and names the request's id in it
    (``record.request_id``)."""

    def __init__(self, name: str = "") -> None:
        super().__init__(name)
        # PERF: a server logs every line with one constant message (its format): cleaned
        # once, kept while it comes again (one slot, replaced whole: threads share it).
        self._message: tuple[object, object] = (None, None)

    def filter(self, record: logging.LogRecord) -> bool:
        ctx = LOGGED_REQUEST.get()
        if ctx is None:
            record.request_id, record.route, record.user_id = "-", "", 0
        else:
            record.request_id = ctx.request_id or "-"
            record.route, record.user_id = ctx.matched_route, ctx.user.id
        message = record.msg
        known, cleaned = self._message
        if message is not known:
            cleaned = _clean(message) if isinstance(message, str) else message
            self._message = (message, cleaned)
        record.msg = cleaned
        args = record.args
        if isinstance(args, dict):  # granian's record: only the client's values
            for key, value in args.items():
                if key not in _GRANIAN_OWN and isinstance(value, str):
                    args[key] = _clean(value)
        elif isinstance(args, tuple):  # uvicorn's: address, method, path, version, status
            record.args = tuple(
                _clean(value) if isinstance(value, str) else value for value in args
            )
        return True


class AccessFormatter(logging.Formatter):
    """The text formatter of granian's access lines in ``svcrest serve``: the server's
    message, then `` request_id=…``; the same line as ``logging.Formatter`` with the format
    :data:`ACCESS_FORMAT`, which it is given (a record with an exception or a stack is left
    to ``logging.Formatter``)."""

    def format(self, record: logging.LogRecord) -> str:
        # PERF: the message and the id straight into the line, without the format's style
        # object and its date check (granian's worker, callgrind: 295,718 → 289,128
        # instructions a request).
        if record.exc_info or record.exc_text or record.stack_info:
            return super().format(record)
        record.message = record.getMessage()
        return f"{record.message} request_id={record.__dict__['request_id']}"


#: The format :class:`AccessFormatter` writes.
ACCESS_FORMAT: Final = "%(message)s request_id=%(request_id)s"
