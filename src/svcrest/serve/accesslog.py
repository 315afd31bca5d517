"""Access log redaction: no nonce or password in a logged request line.

Both servers log the request line through :mod:`logging` (uvicorn's ``uvicorn.access``,
granian's ``granian.access``); the launcher puts :class:`RedactSecrets` on their access
handlers. It rewrites the record's arguments (uvicorn: a tuple whose path carries the query
string; granian: a dict with ``path`` and ``query_string``) and message so that the value of
every ``_wpnonce``, ``pwd`` and ``password`` query variable reads ``[redacted]``. A variable
is recognised by its name as the site reads it: percent-decoded (``%5Fwpnonce``), in any case,
with or without PHP's brackets (``_wpnonce[]``). Neither server logs a header, so no cookie
reaches the log either.

The same filter gives each access-log record the request's id (``request_id``, "-" when the
answer had none: a refused connection), which the launcher's formats print last
(``request_id=…``): the id the adapter sent as ``X-Request-Id``; and the matched route's
pattern (``route``) and the user's id (``user_id``), which the JSON format prints.
"""

from __future__ import annotations

import logging
import re
from typing import Final
from urllib.parse import unquote_plus

from svcrest.http.request_id import LOGGED_REQUEST

__all__ = ["REDACTED", "RedactSecrets", "redact"]

REDACTED: Final = "[redacted]"
_SECRETS: Final = frozenset({"_wpnonce", "pwd", "password"})
#: A ``name=value`` pair at the start of a query string or after ``&`` or ``;``.
_PAIR: Final = re.compile(r"(?:^|(?<=[&;]))([^&;=#\s\"]+)=([^&;#\s\"]*)")


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


def _redact_value(value: object) -> object:
    return redact(value) if isinstance(value, str) else value


class RedactSecrets(logging.Filter):
    """A logging filter that redacts secret query values in the record (never drops one)
    and names the request's id in it (``record.request_id``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        ctx = LOGGED_REQUEST.get()
        if ctx is None:
            record.request_id, record.route, record.user_id = "-", "", 0
        else:
            record.request_id = ctx.request_id or "-"
            record.route, record.user_id = ctx.matched_route, ctx.user.id
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        args = record.args
        if isinstance(args, tuple):
            record.args = tuple(_redact_value(value) for value in args)
        elif isinstance(args, dict):
            record.args = {key: _redact_value(value) for key, value in args.items()}
        return True
