"""Query-string and form-body parsing with PHP's bracket conventions.

``a=1&b[]=2&b[]=3&c[x]=4`` gives ``{"a": "1", "b": ["2", "3"], "c": {"x": "4"}}``, and
``d[0]=x&d[1]=y`` (or ``e[0][property]=title``) gives lists, as PHP (and so WordPress) reads what
``qs``, jQuery, node-wpapi and WordPress's own clients send. A repeated plain key keeps its last
value, as in PHP.

PHP builds one kind of container, an ordered map; JSON and Python have two. A container whose
keys are all indexes (``[]``, or canonical non-negative integers such as ``0`` and ``12``) is a
list, in index order (WordPress reads such a PHP array as a list: ``wp_is_numeric_array``);
any other container is an object, its integer keys kept as strings (``a[]=x&a[k]=y`` gives
``{"0": "x", "k": "y"}``). A plain ``a=x`` stays a string. A key with brackets that are not
well formed (``bad[=1``) stays a plain key.

SECURITY: PHP bounds the work one request can cause with ``max_input_vars`` (1000) and
``max_input_nesting_level`` (64). :func:`parse_form` (site pages' forms) stops at the first
1000 pairs and drops a field nested deeper, as PHP does; :func:`parse_query` (the REST query
string) refuses either with a 400 ``rest_invalid_query_string``, and :func:`parse_form_body`
(a REST request's urlencoded body) with a 400 ``rest_invalid_body``, instead of answering from
a silently truncated request.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote_plus

from svcrest.http.errors import RestError

__all__ = [
    "MAX_DEPTH",
    "MAX_FIELDS",
    "MIN_BOUNDED_LENGTH",
    "FormFields",
    "parse_form",
    "parse_form_body",
    "parse_query",
]

#: SECURITY: caps the work one query string or form body can cause (PHP's ``max_input_vars``).
MAX_FIELDS = 1000
#: SECURITY: the deepest bracket nesting read (PHP's ``max_input_nesting_level``).
MAX_DEPTH = 64
#: The shortest query string that can break a bound (one key with ``MAX_DEPTH + 1`` bracket
#: pairs); anything shorter needs no check.
MIN_BOUNDED_LENGTH = 1 + 2 * (MAX_DEPTH + 1)
_INDEX = re.compile(r"0|[1-9][0-9]{0,17}")
_PAIR = re.compile(r"[^&]+")


_Refusal = Callable[[str], RestError]


class _TooDeep(Exception):
    """A key nested deeper than ``MAX_DEPTH``."""


class _Node(dict[str, Any]):
    """A container being filled (PHP's ordered map); made a list or a dict at the end."""

    __slots__ = ("next_index",)

    def __init__(self) -> None:
        super().__init__()
        self.next_index = 0

    def child_key(self, part: str) -> str:
        """The key ``part`` names here: ``""`` (``[]``) is the next index, as PHP numbers it."""
        if part == "":
            part = str(self.next_index)
            self.next_index += 1
        elif _INDEX.fullmatch(part) is not None:
            self.next_index = max(self.next_index, int(part) + 1)
        return part


def _split_key(key: str) -> list[str]:
    """``b[x][]`` → ``["b", "x", ""]``; a key without well-formed brackets stays whole.
    Raises ``_TooDeep`` past ``MAX_DEPTH`` brackets."""
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
        if len(parts) > MAX_DEPTH + 1:
            raise _TooDeep
        rest = rest[close + 1 :]
    return parts


def _assign(target: _Node, parts: list[str], value: str) -> None:
    node = target
    last = len(parts) - 1
    for index, part in enumerate(parts):
        key = part if index == 0 else node.child_key(part)
        if index == last:
            node[key] = value
            return
        existing = node.get(key)
        if not isinstance(existing, _Node):
            existing = _Node()
            node[key] = existing
        node = existing


def _finish(node: _Node) -> dict[str, Any] | list[Any]:
    """A filled container as JSON would hold it: a list when every key is an index."""
    values = {
        key: _finish(value) if isinstance(value, _Node) else value for key, value in node.items()
    }
    if values and all(_INDEX.fullmatch(key) is not None for key in values):
        return [values[key] for key in sorted(values, key=int)]
    return values


def _finish_root(root: _Node) -> dict[str, Any]:
    return {
        key: _finish(value) if isinstance(value, _Node) else value for key, value in root.items()
    }


class FormFields:
    """Decoded fields added one at a time (a multipart form's parts), nested with the bracket
    conventions (``b[]``, ``c[x]``, ``d[0]``) as :func:`parse_form` nests a query string; a
    field nested deeper than ``MAX_DEPTH`` is not added (``add`` says so)."""

    __slots__ = ("_root",)

    def __init__(self) -> None:
        self._root = _Node()

    def add(self, key: str, value: str) -> bool:
        """Add one field; False (nothing added) when it is nested deeper than ``MAX_DEPTH``."""
        try:
            parts = _split_key(key)
        except _TooDeep:
            return False
        _assign(self._root, parts, value)
        return True

    def finish(self) -> dict[str, Any]:
        """The fields as nested parameters."""
        return _finish_root(self._root)


def _parse(text: str, refuse: _Refusal | None) -> dict[str, Any]:
    if not text:
        return {}
    root = _Node()
    count = 0
    # SECURITY: pairs are found one at a time (a 9 MiB body of "&" split at once made 9 M
    # strings), and reading stops at the cap.
    for match in _PAIR.finditer(text):
        raw_key, _, raw_value = match.group().partition("=")
        key = unquote_plus(raw_key)
        if not key:
            continue
        count += 1
        if count > MAX_FIELDS:
            if refuse is not None:
                raise refuse(f"more than {MAX_FIELDS} parameters")
            break
        try:
            parts = _split_key(key)
        except _TooDeep:
            if refuse is not None:
                raise refuse(f"a parameter nested deeper than {MAX_DEPTH} levels") from None
            continue
        _assign(root, parts, unquote_plus(raw_value))
    return _finish_root(root)


def _query_error(reason: str) -> RestError:
    return RestError(
        "rest_invalid_query_string",
        "Invalid query string.",
        {"status": 400, "reason": reason},
    )


def _body_error(reason: str) -> RestError:
    # Named after the part of the request at fault, as WordPress names a bad JSON body
    # ``rest_invalid_json`` (and this library a bad multipart one ``rest_invalid_multipart``):
    # the query string is fine, so ``rest_invalid_query_string`` would point a client at the
    # wrong place. ``data.reason`` reads as the query string's does.
    return RestError(
        "rest_invalid_body",
        "Invalid application/x-www-form-urlencoded body.",
        {"status": 400, "reason": reason},
    )


def parse_form(data: str | bytes) -> dict[str, Any]:
    """Parse an ``application/x-www-form-urlencoded`` string into nested params.

    Invalid UTF-8 is replaced, never raised; at most ``MAX_FIELDS`` pairs are read, and a
    field nested deeper than ``MAX_DEPTH`` is dropped (PHP's limits).
    """
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return _parse(text, None)


def parse_query(query_string: str) -> dict[str, Any]:
    """Parse a REST request's query string as :func:`parse_form` does, but refuse one past
    PHP's limits: raises ``RestError`` ``rest_invalid_query_string`` (400) for more than
    ``MAX_FIELDS`` parameters or one nested deeper than ``MAX_DEPTH``."""
    return _parse(query_string, _query_error)


def parse_form_body(data: bytes) -> dict[str, Any]:
    """Parse a REST request's ``application/x-www-form-urlencoded`` body as :func:`parse_form`
    does, but refuse one past PHP's limits: raises ``RestError`` ``rest_invalid_body`` (400)
    for more than ``MAX_FIELDS`` parameters or one nested deeper than ``MAX_DEPTH``, never
    answering from part of the body."""
    return _parse(data.decode("utf-8", "replace"), _body_error)
