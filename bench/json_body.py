"""Cost of the strict JSON body checks (``svcrest.http.jsonbody.decode_json_body``).

Usage::

    python bench/json_body.py [--mib 10] [--rounds 5] [--only SHAPE ...]

For each body shape, builds a body of about ``--mib`` MiB and reports the best time of
``--rounds`` calls, in milliseconds per MiB, of ``orjson.loads`` alone (the parse every body
pays) and of ``decode_json_body`` (the parse plus the depth and lossy-integer checks), and the
difference: what the checks cost. Bodies run on the event loop before any permission check, so
the checks must stay linear and cheap on any shape an anonymous client can send.

Run it from a checkout with svcrest installed (``.venv/bin/python bench/json_body.py``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import orjson

from svcrest.http.jsonbody import decode_json_body

MIB = 1024 * 1024


def _repeat(item: bytes, size: int, *, opening: bytes = b"[", closing: bytes = b"]") -> bytes:
    count = max(1, (size - len(opening) - len(closing)) // (len(item) + 1))
    return opening + b",".join([item] * count) + closing


def _ints_at_depth(size: int, depth: int) -> bytes:
    inner = _repeat(b"1234567", size - 2 * depth)
    return b"[" * (depth - 1) + inner + b"]" * (depth - 1)


def _varied_ints(size: int) -> bytes:
    count = size // 8
    return orjson.dumps(list(range(10**6, 10**6 + count)))


def _objects(size: int) -> bytes:
    item = b'{"id":12345,"title":"A note title","content":"Some text, \\"quoted\\".","tags":[1,2]}'
    return _repeat(item, size)


def _chains(size: int, depth: int) -> bytes:
    return _repeat(b"[" * (depth - 1) + b"1" + b"]" * (depth - 1), size)


def _strings_and_one_long_int(size: int) -> bytes:
    return _repeat(b'"a"', size - 30, closing=b",18446744073709551615]")


SHAPES: dict[str, Callable[[int], bytes]] = {
    "ints-depth-500": lambda size: _ints_at_depth(size, 500),
    "varied-ints": _varied_ints,
    "uint64-ints": lambda size: _repeat(b"18446744073709551615", size),
    "negative-int64": lambda size: _repeat(b"-9223372036854775808", size),
    "floats": lambda size: _repeat(b"12345678901234567890.5e-3", size),
    "empty-arrays": lambda size: _repeat(b"[]", size),
    "small-arrays": lambda size: _repeat(b"[1,[2,[3]]]", size),
    "empty-objects": lambda size: _repeat(b"{}", size),
    "chains-500": lambda size: _chains(size, 500),
    "chains-20": lambda size: _chains(size, 20),
    "objects": _objects,
    "short-strings+long-int": _strings_and_one_long_int,
    "digit-strings": lambda size: _repeat(b'"123456789012345678901234567890"', size),
    "bracket-strings": lambda size: _repeat(b'"[[[[{{{{\\\\\\"]]]]"', size),
    "one-long-string": lambda size: b'["' + b"9" * (size - 4) + b'"]',
}


def _best_ms(function: Callable[[bytes], object], body: bytes, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        function(body)
        best = min(best, time.perf_counter() - started)
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--mib", type=float, default=10.0, help="body size (default 10)")
    parser.add_argument("--rounds", type=int, default=5, help="calls per shape (default 5)")
    parser.add_argument("--only", action="append", choices=sorted(SHAPES), help="repeatable")
    args = parser.parse_args()
    size = int(args.mib * MIB)
    print(f"body size ~{args.mib:g} MiB, best of {args.rounds}; figures in ms per MiB")
    print(f"{'shape':<24} {'orjson.loads':>12} {'decode':>9} {'checks':>9}")
    for name in args.only or SHAPES:
        body = SHAPES[name](size)
        mib = len(body) / MIB
        decode_json_body(body)  # accepted, or the bench would measure a refusal
        parse = _best_ms(orjson.loads, body, args.rounds) / mib
        decode = _best_ms(decode_json_body, body, args.rounds) / mib
        print(f"{name:<24} {parse:>12.2f} {decode:>9.2f} {decode - parse:>9.2f}")


if __name__ == "__main__":
    main()
