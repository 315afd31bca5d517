"""Query-string and form-body parsing with PHP's bracket conventions.

``a=1&b[]=2&b[]=3&c[x]=4`` gives ``{"a": "1", "b": ["2", "3"], "c": {"x": "4"}}``, as WordPress
clients (node-wpapi, jQuery) expect. A repeated plain key keeps its last value, as in PHP.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote_plus

__all__ = ["MAX_FIELDS", "assign_field", "parse_form"]

#: SECURITY: caps the work one query string or form body can cause.
MAX_FIELDS = 1000
_MAX_DEPTH = 8


def _split_key(key: str) -> list[str]:
    """``b[x][]`` → ``["b", "x", ""]``; a key without well-formed brackets stays whole."""
    open_at = key.find("[")
    if open_at <= 0 or not key.endswith("]"):
        return [key]
    parts = [key[:open_at]]
    rest = key[open_at:]
    while rest:
        if not rest.startswith("["):
            return [key]
        close = rest.find("]")
        if close < 0:
            return [key]
        parts.append(rest[1:close])
        rest = rest[close + 1 :]
    if len(parts) > _MAX_DEPTH:
        return [key]
    return parts


def _assign(target: dict[str, Any], parts: list[str], value: str) -> None:
    node: Any = target
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if isinstance(node, list):
            if part == "":
                if last:
                    node.append(value)
                    return
                child: Any = {}
                node.append(child)
                node = child
                continue
            # A named key under a list (`a[]=1&a[x]=2`): PHP would renumber; we drop it.
            return
        if last:
            if part == "" and index > 0:
                return
            node[part] = value
            return
        nxt = parts[index + 1]
        existing = node.get(part)
        if nxt == "":
            if not isinstance(existing, list):
                existing = []
                node[part] = existing
        elif not isinstance(existing, dict):
            existing = {}
            node[part] = existing
        node = existing


def assign_field(result: dict[str, Any], key: str, value: str) -> None:
    """Put one decoded field into ``result`` with the bracket conventions (``b[]``,
    ``c[x]``): a multipart form body's fields go through here too."""
    _assign(result, _split_key(key), value)


def parse_form(data: str | bytes) -> dict[str, Any]:
    """Parse an ``application/x-www-form-urlencoded`` string into nested params.

    Invalid UTF-8 is replaced, never raised; at most ``MAX_FIELDS`` pairs are read.
    """
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    result: dict[str, Any] = {}
    if not text:
        return result
    # SECURITY: split no further than the cap (a 9 MiB body of "&" made 9 M strings).
    for count, pair in enumerate(text.split("&", MAX_FIELDS)):
        if count >= MAX_FIELDS:
            break
        if not pair:
            continue
        raw_key, _, raw_value = pair.partition("=")
        key = unquote_plus(raw_key)
        if not key:
            continue
        _assign(result, _split_key(key), unquote_plus(raw_value))
    return result
