"""Access log redaction: no nonce or password in a logged request line.

Both servers log the request line through :mod:`logging` (uvicorn's ``uvicorn.access``,
granian's ``granian.access``); the launcher puts :class:`RedactSecrets` on their access
handlers. It rewrites the record's arguments (uvicorn: a tuple whose path carries the query
string; granian: a dict with ``path`` and ``query_string``) and message so that the value of
every ``_wpnonce``, ``pwd`` and ``password`` query variable reads ``[redacted]``. Neither
server logs a header, so no cookie reaches the log either.
"""

from __future__ import annotations

import logging
import re
from typing import Final

__all__ = ["REDACTED", "RedactSecrets", "redact"]

REDACTED: Final = "[redacted]"
_SECRET = re.compile(r"((?:^|[?&;])(?:_wpnonce|pwd|password)=)[^&;#\s\"]*", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with the value of each secret query variable replaced by ``[redacted]``."""
    if "=" not in text:
        return text
    return _SECRET.sub(lambda match: match.group(1) + REDACTED, text)


def _redact_value(value: object) -> object:
    return redact(value) if isinstance(value, str) else value


class RedactSecrets(logging.Filter):
    """A logging filter that redacts secret query values in the record (never drops one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        args = record.args
        if isinstance(args, tuple):
            record.args = tuple(_redact_value(value) for value in args)
        elif isinstance(args, dict):
            record.args = {key: _redact_value(value) for key, value in args.items()}
        return True
