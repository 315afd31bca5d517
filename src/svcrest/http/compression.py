"""Content codings of REST answers (RFC 9110 §8.4, §12.5.3): ``gzip`` always, ``br`` and
``zstd`` when their libraries (``brotli``, ``zstandard``: the extras ``svcrest[brotli]`` and
``svcrest[zstd]``) can be imported.

SECURITY: an answer that sets a cookie, carries a secret header line of an authentication
scheme (a fresh nonce: ``svcrest.rest.auth_schemes``) or the word ``nonce`` in its body (in
any case), or answers a request carrying a scheme's secret header line (a bearer token), is
never compressed: a secret compressed next to text an attacker can choose leaks through the
length (BREACH).
"""

from __future__ import annotations

import gzip
import importlib
from collections.abc import Callable

from svcrest.bounded import Memo
from svcrest.http.headers import Headers
from svcrest.http.qvalues import q_weights

__all__ = [
    "ALWAYS_SECRET_LINES",
    "CODINGS",
    "MIN_SIZE",
    "breach_prone",
    "compress",
    "negotiated_coding",
]

#: Bodies shorter than this are sent as they are (a coding's framing would outweigh it).
MIN_SIZE = 1024


def _gzip(body: bytes) -> bytes:
    # mtime=0: the same body always gives the same bytes.
    return gzip.compress(body, compresslevel=5, mtime=0)


def _codings() -> dict[str, Callable[[bytes], bytes]]:
    """The codings this process can make, in the server's order of preference."""
    codings: dict[str, Callable[[bytes], bytes]] = {}
    try:
        brotli = importlib.import_module("brotli")
    except ImportError:
        pass
    else:
        codings["br"] = lambda body: bytes(brotli.compress(body, quality=4))
    try:
        zstandard = importlib.import_module("zstandard")
    except ImportError:
        pass
    else:
        # A compressor per call: a ZstdCompressor must not be shared between threads.
        codings["zstd"] = lambda body: bytes(zstandard.ZstdCompressor(level=3).compress(body))
    codings["gzip"] = _gzip
    return codings


#: Coding name → its compressor, most preferred first.
CODINGS = _codings()

# PERF: an Accept-Encoding value → the coding chosen for it (browsers and clients send the
# same few values). SECURITY: the value is the client's: only values of at most 128
# characters are kept, 64 of them, and the memory is emptied when full.
_CHOSEN_MAX = 64
_CHOSEN_LENGTH = 128
_CHOSEN: Memo[str, str | None] = Memo(_CHOSEN_MAX, _CHOSEN_LENGTH)


def _choose(header: str) -> str | None:
    weights = q_weights(header)
    star = weights.get("*", 0.0)
    best: str | None = None
    best_weight = 0.0
    for name in CODINGS:
        weight = weights.get(name, star)
        if weight > best_weight:
            best, best_weight = name, weight
    return best


def negotiated_coding(header: str | None) -> str | None:
    """The coding to send for a request's ``Accept-Encoding`` value: the highest weight
    among those available, ties going to ``br``, then ``zstd``, then ``gzip``; None for
    none (no header: identity)."""
    if not header:
        return None
    chosen = _CHOSEN.entries.get(header, "")
    return _CHOSEN.keep(header, _choose(header)) if chosen == "" else chosen


def compress(body: bytes, coding: str) -> bytes:
    """``body`` in ``coding`` (a name of :data:`CODINGS`)."""
    return CODINGS[coding](body)


#: The answer header lines that carry a secret whatever the site's authentication schemes.
ALWAYS_SECRET_LINES = frozenset({"set-cookie"})


def breach_prone(
    lines: list[tuple[str, str]],
    body: bytes,
    secret_lines: frozenset[str],
    sent: Headers,
    secret_sent: frozenset[str],
) -> bool:
    """Whether an answer must not be compressed: the request's headers ``sent`` have a line
    of ``secret_sent`` (a bearer token), or the answer's ``lines`` one of ``secret_lines``
    (:data:`ALWAYS_SECRET_LINES` and the authentication schemes' own: a nonce header line),
    or its body has ``nonce`` in any case (``wpNonce``, ``NONCE``). Names are lower case."""
    # PERF: a site whose schemes declare no secret request line (the built-in ones) pays
    # one truth test here.
    if secret_sent and sent.has_any(secret_sent):
        return True
    # PERF: a lower-cased copy searched for the word: 0.24 ms for a 126 KiB body, against
    # 0.93 ms for a case-blind regex (gzip then takes 2.9 ms).
    if b"nonce" in body.lower():
        return True
    return any(name.lower() in secret_lines for name, _ in lines)
