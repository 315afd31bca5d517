"""Parsing the client proxy's ``sort`` and ``filter`` parameters for the notes list.

``sort`` is a JSON array of sorters (``[{"property":"title","direction":"ASC"}]``), one sorter
object, or (the proxy's ``simple_sort_mode``) a bare property name whose direction comes from
``dir``. ``filter`` is a JSON array of filters (``[{"property":"title","value":"abc"}]``) or
one filter object; an optional ``operator`` may be ``like`` (substring, the default for text
properties) or ``=`` / ``==`` / ``eq`` (exact). Both also accept the decoded list.

The parsers return the parsed criteria or an error message; property names are checked
against whitelists, so they can safely choose SQL fragments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

import orjson

from svcrest.demo.storage import (
    EXACT_FILTER_PROPERTIES,
    SORT_PROPERTIES,
    TEXT_FILTER_PROPERTIES,
    NoteFilter,
    NoteSorter,
)

__all__ = ["MAX_CRITERIA", "parse_filters", "parse_sorters"]

#: The most sorters or filters one request may give.
MAX_CRITERIA: Final = 10
_DIRECTIONS: Final = ("ASC", "DESC")
_LIKE: Final = frozenset({"like"})
_EXACT: Final = frozenset({"=", "==", "eq"})
_MIN_INT: Final = -(2**63)
_MAX_INT: Final = 2**63 - 1


def _choices(names: tuple[str, ...]) -> str:
    return ", ".join(names)


def _load_list(value: Any, name: str) -> list[Any] | str:
    """The criteria objects of a JSON string or decoded value, or an error message."""
    if value is None:
        return []
    if isinstance(value, str):
        if not value.strip():
            return []
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return f"{name} is not valid JSON."
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list | tuple):
        return f"{name} must be a JSON array of objects."
    if len(value) > MAX_CRITERIA:
        return f"{name} must not have more than {MAX_CRITERIA} entries."
    return list(value)


def _is_json_text(value: Any) -> bool:
    return isinstance(value, str) and value.lstrip()[:1] in ("[", "{")


def parse_sorters(value: Any, direction: Any = None) -> tuple[NoteSorter, ...] | str:
    """The sorters of a ``sort`` value (``direction``: the ``dir`` parameter, used for a bare
    property name), or an error message."""
    if isinstance(value, str) and value.strip() and not _is_json_text(value):
        value = [{"property": value.strip(), "direction": direction or "ASC"}]
    return _parse_each(value, "sort", _parse_sorter)


T = TypeVar("T")


def _parse_each(value: Any, name: str, parse: Callable[[Any, str], T | str]) -> tuple[T, ...] | str:
    """Parse every item of a JSON list parameter; the first error message wins."""
    items = _load_list(value, name)
    if isinstance(items, str):
        return items
    parsed: list[T] = []
    for index, item in enumerate(items):
        one = parse(item, f"{name}[{index}]")
        if isinstance(one, str):
            return one
        parsed.append(one)
    return tuple(parsed)


def _parse_sorter(item: Any, name: str) -> NoteSorter | str:
    if not isinstance(item, dict):
        return f"{name} must be an object with property and direction."
    prop = item.get("property")
    if not isinstance(prop, str) or prop not in SORT_PROPERTIES:
        return f"{name}.property must be one of {_choices(SORT_PROPERTIES)}."
    direction = item.get("direction", "ASC")
    if direction is None:
        direction = "ASC"
    if not isinstance(direction, str) or direction.upper() not in _DIRECTIONS:
        return f"{name}.direction must be ASC or DESC."
    return NoteSorter(prop, descending=direction.upper() == "DESC")


def parse_filters(value: Any) -> tuple[NoteFilter, ...] | str:
    """The filters of a ``filter`` value, or an error message."""
    return _parse_each(value, "filter", _parse_filter)


def _parse_filter(item: Any, name: str) -> NoteFilter | str:
    if not isinstance(item, dict):
        return f"{name} must be an object with property and value."
    prop = item.get("property")
    properties = TEXT_FILTER_PROPERTIES + EXACT_FILTER_PROPERTIES
    if not isinstance(prop, str) or prop not in properties:
        return f"{name}.property must be one of {_choices(properties)}."
    operator = item.get("operator")
    if operator is not None and (not isinstance(operator, str) or operator not in _LIKE | _EXACT):
        return f"{name}.operator must be like or =."
    value = item.get("value")
    if prop in TEXT_FILTER_PROPERTIES:
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            return f"{name}.value must be a string."
        return NoteFilter(prop, value, exact=operator in _EXACT)
    number = _integer(value)
    if number is None:
        return f"{name}.value must be an integer."
    return NoteFilter(prop, number, exact=True)


def _integer(value: Any) -> int | None:
    """An integer given as a JSON number or a decimal string, within SQLite's range."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        digits = text[1:] if text[:1] == "-" else text
        if not digits.isascii() or not digits.isdigit() or len(digits) > 20:
            return None
        value = int(text)
    elif isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or not _MIN_INT <= value <= _MAX_INT:
        return None
    return value
