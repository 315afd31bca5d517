"""The header lines of an ASGI scope, read from it on demand.

An ASGI server hands the request's header lines over as a list of ``(name, value)`` byte
pairs, names lower-cased, values Latin-1 (the ASGI HTTP spec). :class:`ScopeHeaders`
answers a look-up with one dict look-up in the pairs as they came, and decodes the lines
only when something needs them all or changes them.
"""

from __future__ import annotations

from collections.abc import Iterable

from svcrest.bounded import Memo
from svcrest.http.headers import (
    PROBE_LONGEST,
    Lines,
    OnDemandHeaders,
    asgi_header_lines,
    probe_length,
)

__all__ = ["ScopeHeaders", "raw_names"]

RawLines = Iterable[tuple[bytes, bytes]]

# PERF: a set of names asked about together (``Headers.has_any``) → the same names as bytes,
# and the same as four names when they are one to four (the last repeated); remembered while
# the names are few and short (bounded in entries and bytes). Four ``in`` tests of the
# scope's dict cost the same whatever the request's lines; ``isdisjoint`` walks every line
# (a call of the credential probe's four names, callgrind: 2,510 → 2,595 instructions with
# three lines, 2,811 → 2,652 with five, 3,930 → 2,655 with a browser's twelve; the cookie +
# nonce GET, which probes three times, 109,659 → 109,117 in bench/budget.py).
_PROBES_MAX = 64
_PROBE_NAMES = 4
_Probe = tuple[frozenset[bytes], tuple[bytes, bytes, bytes, bytes] | None]
_PROBES: Memo[frozenset[str], _Probe] = Memo(_PROBES_MAX, PROBE_LONGEST, probe_length)

# PERF: the names looked up (the code's own few, a plugin's) → their bytes, remembered.
# Bounded in entries and bytes: only names of at most ``_NAME_LENGTH`` characters are kept,
# ``_NAMES_MAX`` of them, and the memory is emptied when full.
_NAMES_MAX = 256
_NAME_LENGTH = 64
_RAW_NAMES: Memo[str, bytes] = Memo(_NAMES_MAX, _NAME_LENGTH)
#: ``_PROBES.get`` and ``_RAW_NAMES.get``, read once (PERF: see :class:`~svcrest.bounded.Memo`).
_probe_of = _PROBES.get
_raw_name_of = _RAW_NAMES.get


def _raw_name(name: str) -> bytes | None:
    """``name`` as the bytes a scope carries it in (remembered when short); None when no
    Latin-1 name is ``name``."""
    try:
        raw = name.encode("latin-1")
    except UnicodeEncodeError:
        return None
    return _RAW_NAMES.keep(name, raw)


def _probe(names: frozenset[str]) -> _Probe:
    """The probe of ``names`` (see ``_PROBES``), made and remembered when it may be."""
    raw = frozenset(raw for raw in map(_raw_name, names) if raw is not None)
    four = None
    if 0 < len(raw) <= _PROBE_NAMES:
        ordered = sorted(raw)
        first, second, third, fourth = (*ordered, *(ordered[-1:] * _PROBE_NAMES))[:_PROBE_NAMES]
        four = (first, second, third, fourth)
    return _PROBES.keep(names, (raw, four))


def raw_names(names: frozenset[str]) -> frozenset[bytes]:
    """``names`` (lower case) as the bytes a scope's lines carry them in: what
    ``ScopeHeaders.has_any`` tests against :attr:`ScopeHeaders.single` (remembered, bounded,
    as there)."""
    return (_probe_of(names) or _probe(names))[0]


class ScopeHeaders(OnDemandHeaders):
    """The header lines of an ASGI scope (see :func:`~svcrest.http.headers.asgi_header_lines`),
    read from it on demand.

    PERF: while no name comes twice, a look-up (``get_joined``, ``has_any``) is a
    dict look-up in the raw pairs, made into a dict in C; the lines are decoded and indexed
    the first time something needs them all or changes them (see
    :class:`~svcrest.http.headers.OnDemandHeaders`), or when a name comes twice (its lines
    are joined).
    """

    __slots__ = ("_raw", "single")

    def __init__(self, raw: RawLines) -> None:
        """The header lines of ``raw``, a scope's ``headers`` (read, not copied)."""
        self._listed_lines = None
        pairs = raw if type(raw) is list else list(raw)
        single = dict(pairs)
        self._raw: list[tuple[bytes, bytes]] | None = pairs
        #: Raw name → raw value while every name comes once and nothing was listed; else
        #: None (read-only: the adapter reads its lines here, without a Python call).
        self.single: dict[bytes, bytes] | None = single if len(single) == len(pairs) else None

    def _list_lines(self) -> Lines:
        raw = self._raw
        assert raw is not None  # listed once
        self.single = None
        self._raw = None
        return asgi_header_lines(raw)

    def get_joined(self, name: str) -> str | None:
        """The value of ``name`` (lower case), or None (see :meth:`Headers.get_joined`)."""
        single = self.single
        if single is None:
            return self.listed().get_joined(name)
        # None, for a name that is not Latin-1, finds no line
        value = single.get(_raw_name_of(name) or _raw_name(name))  # type: ignore[arg-type]
        return None if value is None else value.decode("latin-1")

    def has_any(self, names: frozenset[str]) -> bool:
        """Whether a line of any of ``names`` (lower case) is there."""
        single = self.single
        if single is None:
            return self.listed().has_any(names)
        raw, four = _probe_of(names) or _probe(names)
        if four is None:
            return not raw.isdisjoint(single)
        first, second, third, fourth = four
        return first in single or second in single or third in single or fourth in single
