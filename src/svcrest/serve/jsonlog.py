"""``svcrest serve --log-format json``: one JSON object per log line (docs/guides/operating.md).

Every record becomes ``{"time", "level", "logger", "message", "request_id", "method",
"route", "status", "duration_ms", "user_id", "path"}``. An access-log record (uvicorn's
``uvicorn.access``, granian's ``granian.access``) fills them all; another record has
``request_id`` (while a request is served) and ``null`` for what it does not know, plus
``exception`` (the traceback) when it carries one: the log record of a 500 names the
matched route too. The access records come redacted
(:class:`~svcrest.serve.accesslog.RedactSecrets` runs first: a nonce or password in the
query string reads ``[redacted]``). ``duration_ms`` is granian's measure (from the request's
arrival to its answer); uvicorn logs when the answer starts and gives none: ``null``.

Every other record, in each worker and in the process that starts the server, goes the same
way: :func:`site_logging` is the part of a ``logging.config.dictConfig`` configuration
that sends the root logger's records (the ``svcrest`` logger's, a plugin's own, Python's
warnings such as ``DoingItWrong``) through one handler on standard error; the servers apply
it in every worker before the site is built. :func:`json_line` writes a line of the command
line's own (``Serving …``, a plugin's failure) in the same shape.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Final

__all__ = [
    "ENV_LOG_FORMAT",
    "JsonFormatter",
    "json_fields",
    "json_line",
    "site_handler",
    "site_logging",
    "use_site_logging",
]

#: The environment variable ``svcrest serve`` sets for its workers: ``text`` or ``json``.
ENV_LOG_FORMAT: Final = "SVCREST_LOG_FORMAT"
#: ``json.dumps(fields, default=str)``, its encoder made once. PERF: ``json.dumps`` with an
#: argument builds a ``JSONEncoder`` a call: ~1 µs of a line's ~17 µs (the same bytes).
_ENCODE: Final = json.JSONEncoder(default=str).encode


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
        return _ENCODE(fields)


def json_line(
    message: str, *, level: int = logging.INFO, logger: str = "svcrest", exception: str = ""
) -> str:
    """One line of JSON for ``message``, in the fields of every other line (``exception``
    added when given)."""
    record = logging.LogRecord(logger, level, "", 0, message, None, None)
    fields = json_fields(record)
    if exception:
        fields["exception"] = exception
    return _ENCODE(fields)


def site_handler() -> logging.Handler:
    """The handler of :func:`site_logging` (a ``dictConfig`` factory): standard error, and
    Python's warnings routed through logging (``logging.captureWarnings``), so that a
    warning is a record like any other."""
    logging.captureWarnings(True)
    return logging.StreamHandler(sys.stderr)


def site_logging(formatter: str) -> dict[str, Any]:
    """The ``dictConfig`` entries (``handlers``, ``root``) that send every record
    propagating to the root logger, from WARNING up, through :func:`site_handler` with the
    formatter named ``formatter``."""
    return {
        "handlers": {
            "svcrest_site": {
                "()": f"{site_handler.__module__}.{site_handler.__qualname__}",
                "formatter": formatter,
            }
        },
        "root": {"handlers": ["svcrest_site"], "level": "WARNING"},
    }


def use_site_logging() -> None:
    """Apply :func:`site_logging` with :class:`JsonFormatter` in this process now (the
    command line, before it builds the site; the servers apply it again)."""
    import logging.config

    config: dict[str, Any] = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": f"{JsonFormatter.__module__}.{JsonFormatter.__qualname__}"}},
        **site_logging("json"),
    }
    logging.config.dictConfig(config)
