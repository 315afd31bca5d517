"""The compiled route matcher: WordPress's first-match rule without scanning every route.

WordPress tries every route's regex in registration order (anchored, case-insensitive) and
the first match wins. This matcher gives the same answer while looking at only the routes
that can match: each route is filed in a trie under the literal path segments its pattern
starts with (``/ns/v1/items/(?P<id>\\d+)`` under ``ns`` → ``v1`` → ``items``); a path walks
the trie by its own segments and only the routes on that walk are tried, in registration
order. Patterns whose literal prefix cannot be read safely (top-level alternation, inline
flags, quantified slashes, non-ASCII) sit at the root and are always tried.

The regex dialect is WordPress's: PHP's PCRE without the ``u`` modifier, in the C locale.
``\\d``, ``\\w``, ``\\s`` and ``\\b`` (and ``\\D``, ``\\W``, ``\\S``, ``\\B``) are ASCII
classes, and case-insensitivity folds the ASCII letters only (``/café`` is not ``/CAFÉ``, the
KELVIN SIGN is not ``k``): Python's ``re.ASCII``, see :func:`compile_route_pattern`.

PERF: with 10,000 routes over 100 namespaces, the last route costs the same as with 10
(one trie walk of 3 dict lookups plus one regex); ``bench/scaling.py`` measures it.
"""

from __future__ import annotations

import functools
import heapq
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

__all__ = [
    "CompiledMatcher",
    "RoutePattern",
    "compile_route_pattern",
    "literal_length",
    "literal_prefix",
]

_META = frozenset(".^$*+?{}[]\\|()")
_QUANTIFIERS = frozenset("?*+{")
_INLINE_FLAG = re.compile(r"\(\?[aiLmsux-]")
#: ``str.lower`` for the ASCII letters only: the trie's keys are ASCII, and ``str.lower``
#: would also fold a path's KELVIN SIGN to ``k``, which WordPress's matching does not.
_ASCII_LOWER = {ord(upper): ord(upper.lower()) for upper in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}


def compile_route_pattern(route: str) -> re.Pattern[str]:
    """The route's regex as WordPress reads it; used with ``fullmatch`` (anchored at both
    ends). WordPress matches with PCRE's ``i`` flag and without ``u``, so the classes
    ``\\d \\w \\s \\b`` and their negations are ASCII only (``\\s`` is space, tab, LF, VT,
    FF, CR) and only ASCII letters match their other case: ``re.ASCII | re.IGNORECASE``.

    A pattern may still ask for Python's Unicode classes itself, for a group with
    ``(?u:...)`` or for the whole pattern with a leading ``(?u)``.

    Raises ``re.error`` for an invalid pattern.
    """
    try:
        return re.compile(route, re.ASCII | re.IGNORECASE)
    except ValueError:  # "ASCII and UNICODE flags are incompatible": a leading ``(?u)``
        return re.compile(route, re.IGNORECASE)


@functools.lru_cache(maxsize=8192)
def _compile_tail(tail: str) -> re.Pattern[str]:
    """The regex of a pattern's tail (:func:`compile_route_pattern`), shared between routes."""
    return compile_route_pattern(tail)


def literal_length(segments: tuple[str, ...], route: str) -> int:
    """How many characters of ``route`` its literal segments take, with the ``/`` after the
    last one when more pattern follows."""
    if not segments:
        return 0
    length = 1 + len("/".join(segments))
    return length + 1 if length < len(route) else length


class RoutePattern:
    """A route's pattern split into the literal prefix the trie checks and the regex tail.

    ``tail.fullmatch(path, offset)`` is the full pattern's ``fullmatch(path)`` once the trie
    has matched the prefix: ``pos`` keeps ``^``, ``\\b`` and lookbehinds seeing the whole
    path. PERF: routes share tails (``(?P<id>\\d+)``), so a table of 10,000 routes
    compiles a handful of regexes instead of 10,000 (registration went from ~90 µs to ~10 µs
    a route).
    """

    __slots__ = ("offset", "route", "segments", "tail")

    def __init__(self, route: str) -> None:
        self.route = route
        self.segments = literal_prefix(route)
        self.offset = literal_length(self.segments, route)
        #: Raises ``re.error`` for an invalid pattern: the literal prefix is always valid.
        self.tail = _compile_tail(route[self.offset :])


def _has_top_level_alternation(pattern: str) -> bool:
    depth = 0
    in_class = False
    escaped = False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            return True
    return False


def literal_prefix(pattern: str) -> tuple[str, ...]:
    """The lower-cased literal path segments every path matching ``pattern`` starts with.

    A segment counts only when it is plain ASCII without regex syntax and is followed by an
    unquantified ``/`` or by the end of the pattern.
    """
    if (
        not pattern.startswith("/")
        or not pattern.isascii()
        or _INLINE_FLAG.search(pattern)
        or _has_top_level_alternation(pattern)
    ):
        return ()
    segments: list[str] = []
    position = 1
    while True:
        slash = pattern.find("/", position)
        segment = pattern[position:] if slash < 0 else pattern[position:slash]
        if any(char in _META for char in segment):
            break
        if slash < 0:
            segments.append(segment.lower())
            break
        if slash + 1 < len(pattern) and pattern[slash + 1] in _QUANTIFIERS:
            break
        segments.append(segment.lower())
        position = slash + 1
    return tuple(segments)


@dataclass(slots=True)
class _Node:
    children: dict[str, _Node] = field(default_factory=dict)
    routes: list[int] = field(default_factory=list)
    #: The routes of this node and of every node above it, in registration order: the
    #: candidates of a path whose walk ends here.
    candidates: tuple[int, ...] = ()


class CompiledMatcher:
    """Matches paths against route patterns given in registration order."""

    __slots__ = ("_patterns", "_root")

    def __init__(self, patterns: Sequence[RoutePattern]) -> None:
        self._patterns = list(patterns)
        self._root = _Node()
        for index, pattern in enumerate(self._patterns):
            node = self._root
            for segment in pattern.segments:
                node = node.children.setdefault(segment, _Node())
            node.routes.append(index)
        self._fill_candidates(self._root, ())

    def _fill_candidates(self, node: _Node, above: tuple[int, ...]) -> None:
        # PERF: merging at compile time leaves one tuple to walk per request.
        stack = [(node, above)]
        while stack:
            current, inherited = stack.pop()
            current.candidates = tuple(heapq.merge(inherited, current.routes))
            stack.extend((child, current.candidates) for child in current.children.values())

    def _candidates(self, path: str) -> tuple[int, ...]:
        node = self._root
        lowered = path.lower() if path.isascii() else path.translate(_ASCII_LOWER)
        for segment in lowered.split("/")[1:]:
            child = node.children.get(segment)
            if child is None:
                break
            node = child
        return node.candidates

    def iter_matches(self, path: str) -> Iterator[tuple[int, dict[str, str]]]:
        """Every route (index) whose pattern matches ``path`` fully, in registration order,
        with its named groups (groups that did not take part are left out)."""
        patterns = self._patterns
        length = len(path)
        for index in self._candidates(path):
            pattern = patterns[index]
            # The walk checked the literal segments; a path ending right after them lacks the
            # ``/`` the prefix goes on with (``pos`` past the end would be clamped).
            if pattern.offset > length:
                continue
            match = pattern.tail.fullmatch(path, pattern.offset)
            if match is not None:
                params = {k: v for k, v in match.groupdict().items() if v is not None}
                yield index, params

    def first_match(self, path: str) -> tuple[int, dict[str, str]] | None:
        """The first route matching ``path``, or None."""
        return next(self.iter_matches(path), None)
