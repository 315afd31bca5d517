"""The header lines of a WSGI environ, read from it on demand.

A WSGI server hands the request's header lines over as environ keys (PEP 3333, after CGI,
RFC 3875 §4.1.18): ``HTTP_`` and the name upper-cased with ``-`` as ``_``, besides
``CONTENT_TYPE`` and ``CONTENT_LENGTH``. :class:`EnvironHeaders` answers a look-up of a usual
header with one environ look-up, and lists the lines only when something needs them all.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from itertools import filterfalse
from typing import Any

from svcrest.bounded import Memo
from svcrest.http.headers import PROBE_LONGEST, Lines, OnDemandHeaders, probe_length

__all__ = ["EnvironHeaders", "environ_header_lines"]

Environ = MutableMapping[str, Any]


def _header_names(key: str) -> tuple[str, str]:
    """The header line name of an environ key (``HTTP_X_Y`` → ``X-Y``, ``CONTENT_TYPE`` →
    ``Content-Type``) and its lower-cased form."""
    name = (key[5:] if key[:5] == "HTTP_" else key).replace("_", "-").lower()
    return name.title(), name


#: The request headers most clients send: their environ keys are named once, in
#: ``_HEADER_KEYS`` (PERF: naming a line costs three string methods), and each is answered
#: by one environ look-up (``_KEY_OF_NAME``).
_COMMON_HEADERS = (
    "accept",
    "accept-encoding",
    "accept-language",
    "authorization",
    "cache-control",
    "connection",
    "cookie",
    "dnt",
    "forwarded",
    "host",
    "if-modified-since",
    "if-none-match",
    "origin",
    "pragma",
    "priority",
    "referer",
    "sec-ch-ua",
    "sec-ch-ua-mobile",
    "sec-ch-ua-platform",
    "sec-fetch-dest",
    "sec-fetch-mode",
    "sec-fetch-site",
    "sec-fetch-user",
    "te",
    "transfer-encoding",
    "upgrade-insecure-requests",
    "user-agent",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-proto",
    "x-http-method-override",
    "x-real-ip",
    "x-request-id",
    "x-requested-with",
    "x-svc-nonce",
    "x-wp-nonce",
)
#: The environ keys that are not header lines: the CGI and WSGI variables, and the keys met
#: that do not start with ``HTTP_`` (granian also puts every environment variable of the
#: server process in each environ: dozens). PERF: they are skipped in C, by one set look-up
#: each (naming a key costs a slice); a process's servers reuse the same few dozen keys.
#: SECURITY: a client's header lines all become ``HTTP_`` keys, so only the server adds to
#: it, and never more than ``_NOT_HEADERS_MAX`` keys of at most ``_NOT_HEADER_LENGTH``.
_NOT_HEADERS: set[str] = set(
    {
        "AUTH_TYPE",
        "GATEWAY_INTERFACE",
        "HTTPS",
        "PATH_INFO",
        "PATH_TRANSLATED",
        "QUERY_STRING",
        "RAW_URI",
        "REMOTE_ADDR",
        "REMOTE_HOST",
        "REMOTE_PORT",
        "REMOTE_USER",
        "REQUEST_METHOD",
        "REQUEST_URI",
        "SCRIPT_NAME",
        "SERVER_NAME",
        "SERVER_PORT",
        "SERVER_PROTOCOL",
        "SERVER_SOFTWARE",
        "gunicorn.socket",
        "wsgi.errors",
        "wsgi.file_wrapper",
        "wsgi.input",
        "wsgi.input_terminated",
        "wsgi.multiprocess",
        "wsgi.multithread",
        "wsgi.run_once",
        "wsgi.url_scheme",
        "wsgi.version",
    }
)
_NOT_HEADERS_MAX = 1024
_NOT_HEADER_LENGTH = 256
_is_not_header = _NOT_HEADERS.__contains__
#: The header lines most clients send, by environ key: their names (see ``_header_names``).
#: PERF: a table made once, of fixed names, never of what a client sends (other keys are
#: named one by one).
_HEADER_KEYS: dict[str, tuple[str, str]] = {
    **{
        key: _header_names(key)
        for key in ("HTTP_" + name.upper().replace("-", "_") for name in _COMMON_HEADERS)
    },
    "CONTENT_TYPE": _header_names("CONTENT_TYPE"),
    "CONTENT_LENGTH": _header_names("CONTENT_LENGTH"),
}
#: A usual header's lower-cased name → the one environ key that can carry it. Not
#: ``content-type`` and ``content-length``, which two keys can carry (``CONTENT_TYPE`` and
#: ``HTTP_CONTENT_TYPE``): those are answered from the listed lines.
_KEY_OF_NAME: dict[str, str] = {
    name: key for key, (_title, name) in _HEADER_KEYS.items() if key[:5] == "HTTP_"
}


def _keys_of_name(name: str) -> tuple[str, ...]:
    """The environ keys that carry the header lines named ``name`` (lower case); none for a
    name no key is read as (with ``_``, upper case, or changed by upper-casing)."""
    key = "HTTP_" + name.upper().replace("-", "_")
    if _header_names(key)[1] != name or not key.isupper():
        return ()
    if name == "content-type" or name == "content-length":
        return (name.upper().replace("-", "_"), key)
    return (key,)


def environ_header_lines(environ: Environ) -> Lines:
    """The header lines of ``environ`` in its order, and their index (lower-cased name →
    values), decoded and indexed in one pass as the ASGI adapter does.

    The header lines are the ``HTTP_X_Y`` keys (upper case, as RFC 3875 names them) as
    ``X-Y``, and ``CONTENT_TYPE`` and ``CONTENT_LENGTH`` when not empty.
    """
    lines: list[tuple[str, str]] = []
    index: dict[str, list[str]] = {}
    for key in filterfalse(_is_not_header, environ):
        names = _HEADER_KEYS.get(key)
        if names is None:
            if key[:5] != "HTTP_":
                if len(_NOT_HEADERS) < _NOT_HEADERS_MAX and len(key) <= _NOT_HEADER_LENGTH:
                    _NOT_HEADERS.add(key)
                continue
            if not key.isupper():  # not a client's line: servers upper-case every name
                continue
            names = _header_names(key)
        value = environ[key]
        if not value and (key == "CONTENT_TYPE" or key == "CONTENT_LENGTH"):
            continue
        title, name = names
        lines.append((title, value))
        if name in index:
            index[name].append(value)
        else:
            index[name] = [value]
    return lines, index


# PERF: a set of names asked about together (``Headers.has_any``) → the environ keys that
# carry them (sorted), the same as four keys when they are one to four (the last repeated),
# and whether being there is enough (an empty ``CONTENT_*`` key is no line); remembered while
# the names are few and short (bounded in entries and bytes). Four ``in`` tests written out
# cost a WSGI GET 542 instructions less than the keys view's ``isdisjoint`` (an iterator and
# a generic containment test a key; bench/budget.py: 76,187 → 75,645): a site's credential
# lines (the cookie, the two nonce headers, Authorization) are four.
_PROBES_MAX = 64
_PROBE_KEYS = 4
_Probe = tuple[tuple[str, ...], tuple[str, str, str, str] | None, bool]
_PROBES: Memo[frozenset[str], _Probe] = Memo(_PROBES_MAX, PROBE_LONGEST, probe_length)
#: ``_PROBES.get``, read once (PERF: see :class:`~svcrest.bounded.Memo`).
_probe_of = _PROBES.get


def _probe(names: frozenset[str]) -> _Probe:
    """The probe of ``names`` (see ``_PROBES``), made and remembered when it may be."""
    keys = tuple(sorted({key for name in names for key in _keys_of_name(name)}))
    four = None
    if 0 < len(keys) <= _PROBE_KEYS:
        first, second, third, fourth = (*keys, *(keys[-1:] * _PROBE_KEYS))[:_PROBE_KEYS]
        four = (first, second, third, fourth)
    return _PROBES.keep(names, (keys, four, not any(key[:5] != "HTTP_" for key in keys)))


class EnvironHeaders(OnDemandHeaders):
    """The header lines of a WSGI environ (see :func:`environ_header_lines`), read from it
    on demand.

    PERF: a look-up of a usual header (``get_joined``, ``has_any``, and ``get`` through
    ``get_joined``) is one environ look-up; the lines are listed and indexed only the first
    time something needs them all or changes them (see
    :class:`~svcrest.http.headers.OnDemandHeaders`): a WSGI server's environ holds dozens of
    other keys (granian puts the server process's environment variables in each).
    """

    __slots__ = ("_environ",)

    def __init__(self, environ: Environ) -> None:
        """The header lines of ``environ`` (read from it, not copied)."""
        self._listed_lines = None
        self._environ: Environ | None = environ

    def _list_lines(self) -> Lines:
        environ = self._environ
        assert environ is not None  # listed once
        self._environ = None
        return environ_header_lines(environ)

    def get_joined(self, name: str) -> str | None:
        """The value of ``name`` (lower case), or None (see :meth:`Headers.get_joined`)."""
        environ = self._environ
        if environ is not None:
            key = _KEY_OF_NAME.get(name)
            if key is not None:
                value: str | None = environ.get(key)
                return value
        return self.listed().get_joined(name)

    def has_any(self, names: frozenset[str]) -> bool:
        """Whether a line of any of ``names`` (lower case) is there."""
        environ = self._environ
        if environ is None:
            return self.listed().has_any(names)
        keys, four, presence_is_enough = _probe_of(names) or _probe(names)
        if four is not None:
            first, second, third, fourth = four
            if not (first in environ or second in environ or third in environ or fourth in environ):
                return False
        elif environ.keys().isdisjoint(keys):
            return False
        if presence_is_enough:
            return True
        return any(environ[key] or key[:5] == "HTTP_" for key in keys if key in environ)
