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

import importlib
import json
import logging
import os
import re
from datetime import UTC, datetime
from time import perf_counter, time
from typing import Any, Final
from urllib.parse import unquote_plus

from svcrest.http.context import RequestContext
from svcrest.http.request_id import LOGGED_REQUEST
from svcrest.serve.jsonlog import ENV_LOG_FORMAT, JsonFormatter

__all__ = [
    "ACCESS_FORMAT",
    "ACCESS_LOGGER",
    "ASGI_FACTORY",
    "ENV_ACCESS_TARGET",
    "GRANIAN_FORMAT",
    "REDACTED",
    "AccessFormatter",
    "AccessLine",
    "AccessLogged",
    "RedactSecrets",
    "asgi_from_env",
    "configure",
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


#: The parts of the secret names a query string must hold, in some ASCII case, to name one
#: without a percent sign.
_SECRET_PARTS: Final = ("nonce", "pwd", "password")


def _clean_query(query: bytes) -> str:
    """``query`` (a request's query string as sent) as :func:`_clean` writes it (decoded as
    latin-1, redacted and escaped). PERF: the redaction's regular expression and a call a
    variable are skipped when no variable can be a secret, which C-level tests tell: without
    ``%`` a name is read as it is sent (``+`` a space), and a latin-1 character lowers to an
    ASCII letter only from an ASCII one, so a secret's name is then in the lowered text
    literally (a JSON line with a three-variable query string, callgrind: 66,342 → 44,244
    instructions for the line and its wrapper; the tests run on the decoded text: a
    ``bytes`` ``in`` test costs ~2,000 instructions in CPython 3.11, its integer check
    raising and clearing an error). SECURITY: any ``%`` (an encoded letter, ``%5F``)
    takes the full redaction, as does any ``nonce``, ``pwd`` or ``password`` in any case,
    wherever it is."""
    text = query.decode("latin-1")
    if "%" in text:
        return _clean(text)
    lowered = text.lower()
    for part in _SECRET_PARTS:
        if part in lowered:
            return _clean(text)
    if text.isprintable() and "\\" not in text:
        return text
    return escape_controls(text)


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


# -- the line of granian's ASGI interface, written by svcrest -----------------------------------

#: The factory granian's ASGI workers load when ``svcrest serve`` logs access (the default):
#: the site the factory :data:`ENV_ACCESS_TARGET` names, in :class:`AccessLogged`.
ASGI_FACTORY: Final = "svcrest.serve.accesslog:asgi_from_env"
#: The site's own factory (``module:function``) :func:`asgi_from_env` calls.
ENV_ACCESS_TARGET: Final = "SVCREST_ACCESS_TARGET"
#: granian's access logger and its line's format (``granian.log.DEFAULT_ACCESSLOG_FMT``).
ACCESS_LOGGER: Final = "granian.access"
GRANIAN_FORMAT: Final = (
    '[%(time)s] %(addr)s - "%(method)s %(path)s %(protocol)s" %(status)d %(dt_ms).3f'
)
#: ``json.dumps(fields, default=str)`` (:class:`~svcrest.serve.jsonlog.JsonFormatter`'s), made
#: once.
_ENCODE: Final = json.JSONEncoder(default=str).encode
#: A string as ``json.dumps`` writes it (``ensure_ascii``: the encoder's own function).
_JSON_STRING: Final = json.encoder.encode_basestring_ascii
#: Three digits of each thousandth.
_THOUSANDTHS: Final = tuple(f"{n:03d}" for n in range(1000))
#: The methods written as they are (no client character to clean in them).
_PLAIN_METHODS: Final = frozenset(
    {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"}
)
#: ``HTTP/`` and each version granian names, written once.
_PROTOCOLS: Final = {version: f"HTTP/{version}" for version in ("1.0", "1.1", "2", "3")}
#: Each status's digits (``%d``), written once: PERF: a look-up, not an integer's formatting
#: (~500 instructions a line).
_STATUSES: Final = {code: str(code) for code in range(100, 600)}


def _fields(scope: Any, status: int, dt_ms: float, stamp: str, protocol: str) -> dict[str, Any]:
    """The fields granian's own access record has (its ``log_request_builder``)."""
    return {
        "addr": scope["client"][0],
        "time": stamp,
        "dt_ms": dt_ms,
        "status": status,
        "path": scope["path"],
        "query_string": scope["query_string"].decode("latin-1"),
        "method": scope.get("method", "-"),
        "scheme": scope["scheme"],
        "protocol": protocol,
    }


class _Stamps:
    """granian's date of a request (``[2026-11-28 16:50:00 +0000]``: local time, the worker's
    offset as granian reads it once), made once a second. SECURITY of the bytes: a time in
    the last microsecond of its second (which ``datetime`` rounds up to the next one) is
    written afresh, so every stamp is the one granian would write."""

    __slots__ = ("_zone", "high", "low", "stamp")

    def __init__(self) -> None:
        self._zone = datetime.now().astimezone().tzinfo
        #: ``stamp`` is the date of every time from ``low`` (included) to ``high``.
        self.low = self.high = 0.0
        self.stamp = ""

    def made(self, seconds: float) -> str:
        if self.low <= seconds < self.high:
            return self.stamp
        whole = float(int(seconds))
        stamp = datetime.fromtimestamp(seconds, tz=self._zone).strftime("%Y-%m-%d %H:%M:%S %z")
        if seconds - whole < 0.999999:
            self.low, self.high, self.stamp = whole, whole + 0.999999, stamp
        return stamp


class _UtcStamps:
    """The JSON lines' ``time`` (``2026-11-18T11:06:40.262+00:00``: UTC to the millisecond, as
    ``datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")`` writes
    it), its date and time of day made once a second. The microseconds are rounded as
    ``datetime`` rounds them (half to even, from the same double), then cut to milliseconds;
    a time that rounds up to the next second is written afresh."""

    __slots__ = ("high", "low", "prefix")

    def __init__(self) -> None:
        #: ``prefix`` is the date and time of day of every time from ``low`` to ``high``.
        self.low = self.high = 0.0
        self.prefix = ""

    def made(self, seconds: float) -> str:
        low = self.low
        if low <= seconds < self.high:
            micro = round((seconds - low) * 1e6)  # datetime's: the fraction, half to even
            if micro < 1_000_000:
                return f"{self.prefix}.{_THOUSANDTHS[micro // 1000]}+00:00"
        if seconds >= 0:
            whole = float(int(seconds))
            self.low, self.high = whole, whole + 1.0
            self.prefix = datetime.fromtimestamp(whole, UTC).isoformat()[:19]
        return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")


def _json_milliseconds(dt_ms: float, duration: str) -> str:
    """``json.dumps(round(dt_ms, 3))`` from ``duration``, ``f"{dt_ms:.3f}"``: both round the
    same double to the same three decimals, and the shortest text of the double nearest to
    a decimal of at most 15 digits is that decimal (its trailing zeros dropped, ``.0`` kept).
    PERF: two string steps, not ``round`` and ``repr`` (~4,000 instructions)."""
    if not -1e11 < dt_ms < 1e11:
        return repr(round(dt_ms, 3))
    shortest = duration.rstrip("0")
    return shortest + "0" if shortest[-1] == "." else shortest


def _own_stream(logger: logging.Logger, formatter: type[logging.Formatter]) -> Any:
    """The one handler of ``logger`` when it is exactly what ``svcrest serve`` configured (a
    ``StreamHandler`` with :class:`RedactSecrets` and ``formatter``, nothing else on the
    logger), else None."""
    handlers = logger.handlers
    if (
        logger.disabled
        or not logger.isEnabledFor(logging.INFO)
        or logger.filters
        or logger.propagate
        or len(handlers) != 1
    ):
        return None
    handler = handlers[0]
    filters = handler.filters
    if (
        type(handler) is not logging.StreamHandler
        or handler.level > logging.INFO
        or len(filters) != 1
        or type(filters[0]) is not RedactSecrets
        or type(handler.formatter) is not formatter
    ):
        return None
    return handler


class AccessLine:
    """Writes granian's access line of one request, as ``svcrest serve``'s logging
    configuration writes it, byte for byte (text: granian's line and ``request_id=…``;
    ``json``: :class:`~svcrest.serve.jsonlog.JsonFormatter`'s object), redacted and escaped
    as :class:`RedactSecrets` does, without a log record: straight to the stream of the
    access logger's handler, under its lock, flushed as ``logging`` flushes.

    Where it goes is decided on the worker's first line: when the ``granian.access`` logger
    is not exactly the launcher's (a plugin or a user gave it another handler, filter or
    formatter), every line is handed to that logger as granian's own record instead (the
    same message and fields), so a configuration of the user's own keeps working."""

    __slots__ = ("_handler", "_json", "_logger", "_stamps", "_utc")

    def __init__(self, log_format: str = "text") -> None:
        self._json = log_format == "json"
        self._logger = logging.getLogger(ACCESS_LOGGER)
        self._handler: Any = None
        self._stamps = _Stamps()
        self._utc = _UtcStamps()

    def resolve(self) -> bool:
        """Whether the lines go straight to the handler ``svcrest serve`` configured (decided
        now; kept for the worker's life)."""
        formatter: type[logging.Formatter] = JsonFormatter if self._json else AccessFormatter
        self._handler = _own_stream(self._logger, formatter) or False
        return self._handler is not False

    def write(self, scope: Any, status: int, started: float, clock: float) -> None:
        """The line of the request of ``scope`` answered ``status``, which arrived at
        ``started`` (``time.time``) and ``clock`` (``perf_counter``)."""
        dt_ms = (perf_counter() - clock) * 1000
        handler = self._handler
        if handler is None:
            self.resolve()
            handler = self._handler
        stamps = self._stamps
        # PERF: the second's stamp and the plain values' tests inline (no Python call).
        stamp = stamps.stamp if stamps.low <= started < stamps.high else stamps.made(started)
        version = scope["http_version"]
        protocol = _PROTOCOLS.get(version) or f"HTTP/{version}"
        if handler is False:
            if self._logger.isEnabledFor(logging.INFO):
                fields = _fields(scope, status, dt_ms, stamp, protocol)
                self._logger.info(GRANIAN_FORMAT, fields)
            return
        ctx = LOGGED_REQUEST.get()
        method = scope.get("method", "-")
        if method not in _PLAIN_METHODS:
            method = _clean(method)
        path = scope["path"]
        if "=" in path or "\\" in path or not path.isprintable():
            path = _clean(path)
        try:
            code = _STATUSES[status]
        except KeyError:  # granian writes any status with ``%d``
            code = str(int(status))
        if self._json:
            duration = f"{dt_ms:.3f}"
            message = (
                f'[{stamp}] {scope["client"][0]} - "{method} {path} {protocol}" {code} {duration}'
            )
            line = self._json_line(scope, ctx, message, method, path, status, dt_ms, duration)
            line += handler.terminator
        else:
            request_id = "-" if ctx is None else ctx.request_id or "-"
            # PERF: the whole line (its end included) in one f-string.
            line = (
                f'[{stamp}] {scope["client"][0]} - "{method} {path} {protocol}" {code} '
                f"{dt_ms:.3f} request_id={request_id}{handler.terminator}"
            )
        lock = handler.lock
        try:  # as StreamHandler.emit writes a record: under its lock, flushed
            # PERF: the lock's own methods, not ``with`` (~1,000 instructions a line less).
            lock.acquire()
            try:
                stream = handler.stream
                stream.write(line)
                stream.flush()
            finally:
                lock.release()
        except RecursionError:
            raise
        except Exception:
            record = logging.LogRecord(ACCESS_LOGGER, logging.INFO, "", 0, line, None, None)
            handler.handleError(record)

    def _json_line(
        self,
        scope: Any,
        ctx: RequestContext | None,
        message: str,
        method: str,
        path: str,
        status: int,
        dt_ms: float,
        duration: str,
    ) -> str:
        """:class:`~svcrest.serve.jsonlog.JsonFormatter`'s object of the line, written as
        ``json.dumps`` writes it (its keys in its order, ``", "`` and ``": "`` between them,
        each string as its ASCII encoder writes one). PERF: no dictionary, no encoder
        and no ``datetime`` a line (granian's worker, callgrind: 247,276 → 199,055
        instructions a request with a JSON line)."""
        query = scope["query_string"]
        if query:
            path = f"{path}?{_clean_query(query)}"
        if ctx is None:
            request_id, route, user_id = "null", '""', "0"
        else:
            named = ctx.request_id
            request_id = "null" if not named or named == "-" else _JSON_STRING(named)
            route, user = _JSON_STRING(ctx.matched_route), ctx.user.id
            user_id = str(user) if type(user) is int else _ENCODE(user)
        return (
            f'{{"time": "{self._utc.made(time())}", "level": "INFO", '
            f'"logger": "{ACCESS_LOGGER}", "message": {_JSON_STRING(message)}, '
            f'"request_id": {request_id}, "method": {_JSON_STRING(method)}, "route": {route}, '
            f'"status": {str(status) if type(status) is int else _ENCODE(status)}, '
            f'"duration_ms": {_json_milliseconds(dt_ms, duration)}, "user_id": {user_id}, '
            f'"path": {_JSON_STRING(path)}}}'
        )


def _granian_protocol() -> Any:
    """granian's ASGI protocol class (the owner of the ``send`` it hands an application)
    when it keeps the status its log reads (``sent_response_code``), else None (no granian,
    or one whose protocol keeps no such record: its ``send`` is then watched)."""
    try:
        module = importlib.import_module("granian._granian")
    except ImportError:
        return None
    protocol = getattr(module, "ASGIHTTPProtocol", None)
    return protocol if hasattr(protocol, "sent_response_code") else None


class AccessLogged:
    """An ASGI application (svcrest's App, maybe behind :class:`~svcrest.serve.forwarded.
    ForwardedASGI`) whose HTTP requests each get granian's access line (:class:`AccessLine`)
    where granian's own ``--access-log`` writes it: around the application, once it returned
    (after its last ``send``: the answer is not delayed), with the status granian logs.

    Under granian (``send`` a method of ``protocol``, granian's ASGI protocol by default)
    that status is the one granian's log reads, the protocol's ``sent_response_code``: the
    answer's status once its head went out, else 500 (the application raised before, or
    answered nothing), and ``send`` is handed on as it is. With any other ``send`` the
    wrapper reads the status of the answer's head as it passes, 500 when the application
    raised or answered nothing."""

    __slots__ = ("app", "line", "protocol")

    def __init__(self, app: Any, line: AccessLine, protocol: Any = None) -> None:
        self.app = app
        self.line = line
        self.protocol = protocol if protocol is not None else _granian_protocol()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, clock = time(), perf_counter()
        try:
            server = send.__self__
        except AttributeError:  # a plain function: not granian's
            server = None
        if type(server) is not self.protocol:
            await self._watched(scope, receive, send, started, clock)
            return
        # PERF: granian's own record of the status, read as its log reads it: no wrapper
        # around ``send``, no closure a request and no coroutine a message (with the lock's
        # methods and the status's digits below: granian's worker, callgrind, 186,449 →
        # 180,140 instructions a request).
        try:
            await self.app(scope, receive, send)
        finally:
            self.line.write(scope, server.sent_response_code, started, clock)

    async def _watched(
        self, scope: Any, receive: Any, send: Any, started: float, clock: float
    ) -> None:
        sent = [500]

        def sending(message: Any) -> Any:
            # The status read where it passes; ``send``'s own awaitable handed back (no
            # coroutine of this wrapper's a message).
            if message["type"] == "http.response.start":
                sent[0] = message["status"]
            return send(message)

        try:
            await self.app(scope, receive, sending)
        except BaseException:
            self.line.write(scope, 500, started, clock)
            raise
        self.line.write(scope, sent[0], started, clock)


def configure(target: str) -> None:
    """Set the environment :func:`asgi_from_env` reads: the site's factory ``target``."""
    os.environ[ENV_ACCESS_TARGET] = target


def asgi_from_env() -> AccessLogged:
    """The ASGI factory of granian's workers under ``svcrest serve`` with its access log: the
    site the factory ``SVCREST_ACCESS_TARGET`` builds, each request's line written by
    :class:`AccessLine` in the format ``SVCREST_LOG_FORMAT`` names."""
    from svcrest.serve.forwarded import call_factory

    site = call_factory(os.environ[ENV_ACCESS_TARGET])
    return AccessLogged(site, AccessLine(os.environ.get(ENV_LOG_FORMAT, "text")))
