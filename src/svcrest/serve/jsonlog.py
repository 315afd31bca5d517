"""``svcrest serve --log-format json``: one JSON object per log line (docs/guides/operating.md).

Every record becomes ``{"time", "level", "logger", "message", "request_id", "method",
"route", "status", "duration_ms", "user_id", "path"}``. An access-log record (uvicorn's
``uvicorn.access``, granian's ``granian.access``) fills them all; another record has
``request_id`` (while a request is served) and ``null`` for what it does not know, plus
``exception`` (the traceback) when it carries one. The access records come redacted
(:class:`~svcrest.serve.accesslog.RedactSecrets` runs first: a nonce or password in the
query string reads ``[redacted]``). ``duration_ms`` is granian's measure (from the request's
arrival to its answer); uvicorn logs when the answer starts and gives none: ``null``.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

__all__ = ["JsonFormatter", "json_fields"]


def _access_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The request fields of a server's access record (its arguments: uvicorn's tuple,
    granian's dict)."""
    args = record.args
    if isinstance(args, tuple) and len(args) == 5:  # uvicorn: addr, method, path, version, status
        return {
            "method": args[1],
            "path": args[2],
            "status": args[4],
            "duration_ms": None,
        }
    if isinstance(args, dict):  # granian
        query = args.get("query_string") or ""
        return {
            "method": args.get("method"),
            "path": str(args.get("path")) + (f"?{query}" if query else ""),
            "status": args.get("status"),
            "duration_ms": round(float(args.get("dt_ms", 0.0)), 3),
        }
    return {}


def json_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The fields of ``record``'s line."""
    fields: dict[str, Any] = {
        "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
        "level": record.levelname,
        "logger": record.name,
        "message": record.getMessage(),
        "request_id": getattr(record, "request_id", None) or None,
        "method": None,
        "route": getattr(record, "route", None),
        "status": None,
        "duration_ms": None,
        "user_id": getattr(record, "user_id", None),
        "path": None,
    }
    if record.name.endswith(".access"):
        fields.update(_access_fields(record))
    if fields["request_id"] == "-":
        fields["request_id"] = None
    return fields


class JsonFormatter(logging.Formatter):
    """Formats each record as one line of JSON (:func:`json_fields`)."""

    def format(self, record: logging.LogRecord) -> str:
        fields = json_fields(record)
        if record.exc_info:
            fields["exception"] = self.formatException(record.exc_info)
        return json.dumps(fields, default=str)
