"""The options svcrest reads from a PostgreSQL URL, taken out before libpq sees it.

``postgresql://user:password@host:5432/site?pool_size=20&acquire_timeout=2&pgbouncer=1``:

- ``pool_size``: the most pooled connections a process opens (default 10; 1-1000);
- ``acquire_timeout``: seconds a request waits for a pooled connection before it is answered
  503 ``svc_store_busy`` (default 5; 0-3600);
- ``pgbouncer``: ``1`` when the URL goes through PgBouncer in transaction mode (prepared
  statements off, since the server connection may change between statements);
- ``listen``: the URL (percent-encoded) of the notification listener's connection, for a
  site whose ``pool`` URL goes through a pooler that cannot ``LISTEN``
  (``svcrest serve --db-listen URL`` sets it);
- ``sql_comments``: ``1`` to begin every statement a request runs with
  ``/* request_id=… */`` (its ``X-Request-Id``), so ``pg_stat_activity`` and the server's
  statement log name the request. Off by default: each statement's text then differs, so
  psycopg never prepares it (PERF: a read of two selects ran at 0.52 of its rate with
  prepared statements, 0.85 without them, on the loaded test machine).

These options are never passed to libpq, which refuses query options it does not know
(``invalid URI query parameter``); an option neither svcrest nor libpq knows is refused
with its name, rather than passed on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from urllib.parse import quote, unquote

from svcrest.store.base import StoreError

__all__ = ["PoolOptions", "split_url", "with_url_options"]

DEFAULT_POOL_SIZE = 10
DEFAULT_ACQUIRE_TIMEOUT = 5.0
_MAX_POOL_SIZE = 1000
_MAX_ACQUIRE_TIMEOUT = 3600.0
_OURS = ("pool_size", "acquire_timeout", "pgbouncer", "listen", "sql_comments")
#: libpq's URL-only alias (``ssl=true`` means ``sslmode=require``).
_LIBPQ_ALIASES = frozenset({"ssl"})
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True, slots=True)
class PoolOptions:
    """What svcrest read from a PostgreSQL URL (see the module docstring)."""

    pool_size: int = DEFAULT_POOL_SIZE
    acquire_timeout: float = DEFAULT_ACQUIRE_TIMEOUT
    pgbouncer: bool = False
    listen: str | None = None
    sql_comments: bool = False


def _libpq_keywords() -> frozenset[str]:
    from psycopg import pq

    return (
        frozenset(option.keyword.decode("ascii") for option in pq.Conninfo.get_defaults())
        | _LIBPQ_ALIASES
    )


def _pool_size(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= _MAX_POOL_SIZE:
        raise StoreError(f"pool_size must be a whole number from 1 to {_MAX_POOL_SIZE}")
    return int(value)


def _acquire_timeout(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not 0 <= seconds <= _MAX_ACQUIRE_TIMEOUT:  # NaN fails too
        raise StoreError(f"acquire_timeout must be seconds from 0 to {_MAX_ACQUIRE_TIMEOUT:g}")
    return seconds


def _flag(value: str, name: str = "pgbouncer") -> bool:
    lowered = value.lower()
    if lowered not in _TRUE | _FALSE:
        raise StoreError(f"{name} must be 1 or 0")
    return lowered in _TRUE


def _listen(value: str) -> str:
    if not value.startswith(("postgresql://", "postgres://")):
        raise StoreError("listen must be a postgresql:// URL (percent-encoded)")
    return value


def split_url(url: str) -> tuple[str, PoolOptions]:
    """``url`` without svcrest's options, and those options; StoreError for a bad value or a
    query option libpq does not know either. The rest of the URL is kept byte for byte."""
    base, question, query = url.partition("?")
    fragment = ""
    if "#" in query:
        query, fragment = query.split("#", 1)
        fragment = "#" + fragment
    if not question:
        return url, PoolOptions()
    kept: list[str] = []
    found: dict[str, str] = {}
    known: frozenset[str] | None = None
    for piece in query.split("&"):
        if not piece:
            continue
        name = unquote(piece.partition("=")[0])
        if name in _OURS:
            found[name] = unquote(piece.partition("=")[2])
            continue
        if known is None:
            known = _libpq_keywords()
        if name not in known:
            raise StoreError(f"unknown PostgreSQL URL option {name!r}")
        kept.append(piece)
    options = PoolOptions(
        pool_size=_pool_size(found["pool_size"]) if "pool_size" in found else DEFAULT_POOL_SIZE,
        acquire_timeout=(
            _acquire_timeout(found["acquire_timeout"])
            if "acquire_timeout" in found
            else DEFAULT_ACQUIRE_TIMEOUT
        ),
        pgbouncer=_flag(found["pgbouncer"]) if "pgbouncer" in found else False,
        listen=_listen(found["listen"]) if "listen" in found else None,
        sql_comments=(
            _flag(found["sql_comments"], "sql_comments") if "sql_comments" in found else False
        ),
    )
    rest = f"{base}?{'&'.join(kept)}" if kept else base
    return rest + fragment, options


def with_url_options(url: str, **options: str) -> str:
    """``url`` with svcrest's ``options`` (names of the module docstring) set, replacing the
    ones it had (``svcrest serve --db-pool-size`` and ``--db-listen``)."""
    base, _, query = url.partition("?")
    kept = [p for p in query.split("&") if p and unquote(p.partition("=")[0]) not in options]
    kept += [f"{name}={quote(value, safe='')}" for name, value in options.items()]
    return f"{base}?{'&'.join(kept)}"
