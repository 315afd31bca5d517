"""Strict JSON body decoding: invalid JSON, deep nesting, lossy numbers and bodies with too
much structure are refused.

Every check costs a small constant per byte, whatever the body's shape (``bench/json_body.py``
measures them): a body runs through them before any permission check, for anonymous clients
too, so no check walks the decoded value in Python or scans the body once per value.
"""

from __future__ import annotations

import re
from itertools import islice
from typing import Any

import orjson

from svcrest.constants import INT64_MIN
from svcrest.http.errors import RestError
from svcrest.types import JSON

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_JSON_STRUCTURES",
    "MAX_LONG_NUMBERS",
    "decode_json_body",
    "is_json_content_type",
]

#: Deepest nesting of arrays and objects a request body may have.
MAX_JSON_DEPTH = 512
#: Most arrays, objects and object members a request body may hold, in all (SECURITY: the
#: parse holds the GIL, so every thread of the worker waits for it).
MAX_JSON_STRUCTURES = 100_000
#: orjson's own nesting limit: it refuses a document nested deeper than this.
_ORJSON_MAX_DEPTH = 1024
# PERF: the body is parsed inside _ORJSON_MAX_DEPTH - MAX_JSON_DEPTH arrays, so orjson's
# own limit refuses exactly the bodies nested deeper than MAX_JSON_DEPTH, in the one parse.
# A Python walk of the decoded value cost 20-300 ms per MiB (bench/json_body.py).
_WRAPPERS = _ORJSON_MAX_DEPTH - MAX_JSON_DEPTH
_OPEN = b"[" * _WRAPPERS
_CLOSE = b"]" * _WRAPPERS
_UINT64_MAX = 2**64 - 1


#: Digits → "1", "-" → "-", anything else → "0": a lossy integer is a run of 20 "1" or more,
#: or "-" and 19 or more, in the translated body.
_DIGIT_MAP = bytes(
    0x31 if 0x30 <= byte <= 0x39 else 0x2D if byte == 0x2D else 0x30 for byte in range(256)
)
_SHORTEST = len(str(-INT64_MIN))  # 19: the digits of the shortest lossy literal ("-" aside)
_RUN_START = b"1" * _SHORTEST
#: A run of digits long enough to be a lossy integer, in the translated body.
_LONG_RUN = re.compile(rb"1{%d,}" % _SHORTEST)
_UINT64_DIGITS = str(_UINT64_MAX).encode()
_INT64_MIN_DIGITS = str(-INT64_MIN).encode()
#: What JSON puts before a value in an array or object (or whitespace), and what may not
#: follow an integer's digits.
_BEFORE_VALUE = frozenset(b" \t\n\r,:[")
_NOT_AFTER = frozenset(b".eE")
#: Most runs of 19 or more digits a request body may hold (numbers, and digits in strings).
MAX_LONG_NUMBERS = 10_000


def _long_runs(raw: bytes) -> list[re.Match[bytes]]:
    """The runs of 19 or more digits of ``raw`` (of its translation by ``_DIGIT_MAP``: the
    same positions), at most ``MAX_LONG_NUMBERS + 1`` of them.

    PERF: a translate and a find (~1.3 ms per MiB) rule out bodies without such a run; the
    runs are then found in C, and the scan stops past the bound. A 9 MiB array of 449,389
    twenty-digit integers took 425 ms in a regex over the whole body, holding the GIL (other
    requests of the worker waited); now the scan stops at the bound's 10,001st run.
    """
    if len(raw) < _SHORTEST:
        return []
    digits = raw.translate(_DIGIT_MAP)
    if digits.find(_RUN_START) < 0:
        return []
    return list(islice(_LONG_RUN.finditer(digits), MAX_LONG_NUMBERS + 1))


def _too_many_long_numbers() -> RestError:
    return RestError(
        "rest_json_too_complex",
        f"The JSON body holds more than {MAX_LONG_NUMBERS} numbers of 19 digits or more.",
        {"status": 413, "max_long_numbers": MAX_LONG_NUMBERS},
    )


def _lossy_start(raw: bytes, start: int, end: int) -> int | None:
    """Where the integer literal of the digit run ``raw[start:end]`` begins (at its "-"),
    when the run can be one outside ``[-2**63, 2**64 - 1]`` (a value's position before it,
    no fraction or exponent after it); None otherwise."""
    negative = start > 0 and raw[start - 1] == 0x2D
    begin = start - 1 if negative else start
    if begin > 0 and raw[begin - 1] not in _BEFORE_VALUE:
        return None
    if end < len(raw) and raw[end] in _NOT_AFTER:
        return None
    length = end - start
    bound = _INT64_MIN_DIGITS if negative else _UINT64_DIGITS
    if length > len(bound) or (length == len(bound) and raw[start:end] > bound):
        return begin
    return None


# PERF: each structure needs at least two bytes ("[]", "{}", or a member's ":" and value);
# a body this short cannot hold more than MAX_JSON_STRUCTURES of them and skips the count.
_COUNTED_FROM = 2 * MAX_JSON_STRUCTURES + 1
#: Every byte but the quote and the three that open a structure (``[``, ``{``, a member's
#: ``:``), for ``bytes.translate``'s delete argument.
_NOT_STRUCTURE = bytes(byte for byte in range(256) if byte not in b'"[{:')


def _structures_outside_strings(raw: bytes, limit: int) -> int:
    """How many ``[``, ``{`` and ``:`` of ``raw`` are outside strings, exactly when it is at
    most ``limit``, else some number above ``limit``.

    The escaped backslashes and quotes are removed first, then everything but quotes and the
    three counted bytes; two adjacent quotes go too (an empty stretch between them changes no
    byte's side). What is left alternates: outside, a quote, a non-empty inside, a quote, a
    non-empty outside... so ``limit + 1`` outside stretches after the first are enough to
    decide, and the split never makes more than about ``2 * limit`` pieces, whatever the body.
    A backslash outside a string (invalid JSON) can shift the sides after it, but orjson stops
    at it and builds nothing past it.
    """
    if b"\\" in raw:
        raw = raw.replace(b"\\\\", b"")
    if b'\\"' in raw:
        raw = raw.replace(b'\\"', b"")
    marks = raw.translate(None, _NOT_STRUCTURE).replace(b'""', b"")
    pieces = marks.split(b'"', 2 * limit + 3)
    if len(pieces) > 2 * limit + 3:  # limit + 1 non-empty outside stretches at least
        return limit + 1
    return len(b"".join(pieces[0::2]))


def _too_complex() -> RestError:
    return RestError(
        "rest_json_too_complex",
        f"The JSON body holds more than {MAX_JSON_STRUCTURES} arrays, objects and object members.",
        {"status": 413, "max_structures": MAX_JSON_STRUCTURES},
    )


def is_json_content_type(content_type: str) -> bool:
    """``application/json`` or any ``application/*+json`` type, also with WordPress's
    ``+oembed`` suffix (``application/json+oembed``, as ``wp_is_json_media_type``),
    parameters ignored."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media.endswith("+oembed"):
        media = media[: -len("+oembed")]
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


def _invalid(message: str) -> RestError:
    return RestError(
        "rest_invalid_json",
        "Invalid JSON body passed.",
        {"status": 400, "json_error_message": message},
    )


def _unwrap(wrapped: Any) -> tuple[bool, Any]:
    """``(True, value)`` when ``wrapped`` is ``_WRAPPERS`` nested one-element lists around
    ``value``, else ``(False, None)`` (the body closed some of the wrapping arrays itself)."""
    for _ in range(_WRAPPERS):
        if type(wrapped) is not list or len(wrapped) != 1:
            return False, None
        wrapped = wrapped[0]
    return True, wrapped


def _parse(raw: bytes) -> Any:
    """orjson's value of ``raw``, refusing invalid JSON and nesting deeper than
    ``MAX_JSON_DEPTH``."""
    # PERF: a body of at most MAX_JSON_DEPTH opening brackets (in strings or not) cannot nest
    # deeper: parsed as it is, without the 512 wrapping arrays orjson would build and the
    # Python walk out of them (a small JSON POST 776,494 → 198,515 instructions,
    # bench/instructions.py --cases post).
    if raw.count(b"[") + raw.count(b"{") <= MAX_JSON_DEPTH:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise _invalid(str(exc)) from None
    return _parse_wrapped(raw)


def _parse_wrapped(raw: bytes) -> Any:
    """:func:`_parse` of any body: inside the wrapping arrays, so that orjson's own nesting
    limit refuses the bodies nested deeper than ``MAX_JSON_DEPTH``."""
    try:
        whole, value = _unwrap(orjson.loads(b"".join((_OPEN, raw, _CLOSE))))
    except orjson.JSONDecodeError:
        whole, value = False, None
    if whole:
        return value
    # The wrapped body was refused or was not one value inside the wrappers: parse the body
    # alone for orjson's message about it. When that parse succeeds, the body is one JSON
    # value that only orjson's nesting limit could refuse once wrapped.
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _invalid(str(exc)) from None
    raise _invalid(f"Nesting deeper than {MAX_JSON_DEPTH} levels.")


def _has_lossy_integer(raw: bytes, runs: list[re.Match[bytes]]) -> bool:
    """Whether valid JSON ``raw``, whose long digit runs are ``runs``, holds an integer
    literal that orjson reads as a (rounded) float: one outside the 64-bit range
    ``[-2**63, 2**64 - 1]``."""
    starts = [
        begin for run in runs if (begin := _lossy_start(raw, run.start(), run.end())) is not None
    ]
    if not starts:
        return False
    # Each such literal gets an "x" in front. Inside a string that is one more character;
    # outside, before a number, it is invalid JSON: the marked body parses only when every
    # one was in a string. (The byte before one is never part of an escape sequence.)
    pieces, last = [], 0
    for begin in starts:
        pieces += [raw[last:begin], b"x"]
        last = begin
    pieces.append(raw[last:])
    try:
        orjson.loads(b"".join(pieces))
    except orjson.JSONDecodeError:
        return True
    return False


def decode_json_body(raw: bytes) -> JSON:
    """Decode a request body; raises ``RestError("rest_invalid_json", …, 400)`` when it is not
    strict JSON (NaN/Infinity, invalid UTF-8, trailing data), nests deeper than
    ``MAX_JSON_DEPTH``, or holds an integer outside the 64-bit range (which would be silently
    rounded). An empty body decodes to None.

    SECURITY: a body with more than ``MAX_JSON_STRUCTURES`` arrays, objects and object members
    (outside strings) is refused before it is parsed, with ``rest_json_too_complex`` (413):
    building millions of them holds the GIL for seconds. So is one with more than
    ``MAX_LONG_NUMBERS`` runs of 19 or more digits (numbers, or digits in strings): each is
    checked for a lossy integer.
    """
    if not raw.strip():
        return None
    # PERF: the three counts cost ~9 ms for 9 MiB, the exact count (only when they pass the
    # limit) ~10 ms more (best of 5; 55-130 ms on a loaded machine); orjson took 865 ms to
    # build the 3.1 M lists of a 9 MiB "[[],[],...]" and 1.8 s for 1.3 M distinct members.
    if (
        len(raw) >= _COUNTED_FROM
        and raw.count(b"[") + raw.count(b"{") + raw.count(b":") > MAX_JSON_STRUCTURES
        and _structures_outside_strings(raw, MAX_JSON_STRUCTURES) > MAX_JSON_STRUCTURES
    ):
        raise _too_complex()
    runs = _long_runs(raw)
    if len(runs) > MAX_LONG_NUMBERS:
        raise _too_many_long_numbers()
    value: JSON = _parse(raw)  # orjson yields exactly these types
    if runs and _has_lossy_integer(raw, runs):
        raise _invalid("Integer outside the 64-bit range.")
    return value
