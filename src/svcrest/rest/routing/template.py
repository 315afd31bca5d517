"""A route pattern as a URL template: ``/demo/v1/notes/(?P<id>\\d+)`` → ``/demo/v1/notes/{id}``.

OpenAPI names a path by a template whose ``{name}`` parts are path parameters; a route is a
regular expression. :func:`route_template` reads the route from left to right:

- literal text stays (escapes such as ``\\.`` or ``\\/`` are unescaped; an unescaped ``.`` is
  written as a dot, one of the strings it matches); a ``^`` at the start and a ``$`` at the
  end are dropped (routes are anchored anyway);
- a named group ``(?P<name>regex)`` becomes ``{name}`` with ``regex`` as its pattern (a named
  group nested inside it is made non-capturing there: its value is part of the outer one);
- an unnamed group, capturing ``(regex)`` or not ``(?:regex)``, also stands for text the
  client must write, but the handler never receives it (only named groups become URL
  params): it becomes ``{group1}``, ``{group2}``… (renamed with a trailing ``_`` if a named
  group has that name), marked ``named=False``; alternations inside any group are kept in its
  pattern;
- inline flags ``(?i)`` and comments ``(?#…)`` are dropped.

A route that no single template can describe returns None: a character class, a class
escape (``\\d``), a quantifier or an alternation outside any group, a quantified or optional
group, a lookaround, a conditional or a backreference at the top level.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["PathParam", "RouteTemplate", "route_template"]

_QUANTIFIERS = frozenset("?*+{")
#: Characters that make text outside a group more than one string.
_TOP_LEVEL_META = frozenset("*+?{}[]|)")
_INLINE_FLAGS = re.compile(r"\?[aiLmsux-]+")
_NESTED_NAMED = re.compile(r"(?<!\\)\(\?P<\w+>")
_GROUP_NAME = re.compile(r"\?P<(\w+)>")


@dataclass(frozen=True, slots=True)
class PathParam:
    """One ``{name}`` of a template: the regex its value must match, and whether the route
    names it (False: an unnamed group, not passed to the handler)."""

    name: str
    pattern: str
    named: bool = True


@dataclass(frozen=True, slots=True)
class RouteTemplate:
    """A route as a URL path template with its parameters, left to right."""

    path: str
    params: tuple[PathParam, ...]


def _class_end(route: str, start: int) -> int | None:
    """The index of the ``]`` closing the character class opened at ``start``."""
    index = start + 1
    if index < len(route) and route[index] == "^":
        index += 1
    if index < len(route) and route[index] == "]":
        index += 1  # a leading ] is literal
    while index < len(route):
        char = route[index]
        if char == "\\":
            index += 2
            continue
        if char == "]":
            return index
        index += 1
    return None


def _group_end(route: str, start: int) -> int | None:
    """The index of the ``)`` closing the group opened at ``start``."""
    depth = 0
    index = start
    while index < len(route):
        char = route[index]
        if char == "\\":
            index += 2
            continue
        if char == "[":
            end = _class_end(route, index)
            if end is None:
                return None
            index = end + 1
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return None


def _group_param(inner: str, unnamed_name: str) -> PathParam | bool | None:
    """The parameter of a top-level group's contents; True for a group to drop (flags,
    comment); None for one no template can describe."""
    named = _GROUP_NAME.match(inner)
    if named is not None:
        return PathParam(named[1], _NESTED_NAMED.sub("(?:", inner[named.end() :]))
    if inner.startswith("?#") or _INLINE_FLAGS.fullmatch(inner):
        return True
    if inner.startswith("?:"):
        return PathParam(unnamed_name, _NESTED_NAMED.sub("(?:", inner[2:]), named=False)
    if inner.startswith("?"):
        return None  # lookaround, conditional, backreference, scoped flags
    return PathParam(unnamed_name, _NESTED_NAMED.sub("(?:", inner), named=False)


def _unnamed_name(count: int, taken: set[str]) -> str:
    name = f"group{count}"
    while name in taken:
        name += "_"
    return name


def route_template(route: str) -> RouteTemplate | None:
    """``route`` as a path template, or None when no single template describes it."""
    try:
        taken = set(re.compile(route).groupindex)
    except re.error:
        return None
    start = 1 if route.startswith("^") else 0
    end = len(route) - 1 if route.endswith("$") and not route.endswith("\\$") else len(route)
    text: list[str] = []
    params: list[PathParam] = []
    index = start
    while index < end:
        char = route[index]
        if char == "\\":
            escaped = route[index + 1] if index + 1 < end else ""
            if not escaped or escaped.isalnum():
                return None  # \d, \w, \b, \1 … stand for more than one string
            text.append(escaped)
            index += 2
            continue
        if char == "(":
            close = _group_end(route, index)
            if close is None or close >= end:
                return None
            if close + 1 < end and route[close + 1] in _QUANTIFIERS:
                return None
            name = _unnamed_name(sum(not p.named for p in params) + 1, taken)
            param = _group_param(route[index + 1 : close], name)
            if param is None:
                return None
            if isinstance(param, PathParam):
                taken.add(param.name)
                params.append(param)
                text.append("{" + param.name + "}")
            index = close + 1
            continue
        if char in _TOP_LEVEL_META or char in "^$":
            return None
        text.append(char)
        index += 1
    path = "".join(text)
    if not path.startswith("/"):
        return None
    return RouteTemplate(path, tuple(params))
