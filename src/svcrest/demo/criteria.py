"""The notes list's ``sort`` and ``filter`` parameters, read as the client proxy sends them.

``sort`` is a JSON array of sorters (``[{"property":"title","direction":"ASC"}]``), one sorter
object, or (the proxy's ``simple_sort_mode``) a bare property name whose direction comes from
``dir``. ``filter`` is a JSON array of filters (``[{"property":"title","value":"abc"}]``) or
one filter object; an optional ``operator`` may be ``like`` (substring, the default for text
properties) or ``=`` / ``==`` / ``eq`` (exact). Both also accept the decoded list.

The parsers return the collection's sort keys and filters, or an error message naming the
accepted choices; the demo's names map to the table's columns (``date`` sorts by the UTC
instant, ``title`` by its case-folded copy).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

import orjson

from svcrest.store.collection_columns import MAX_INT, MIN_INT
from svcrest.store.collection_query import Filter, Sort

__all__ = [
    "EXACT_FILTER_PROPERTIES",
    "MAX_CRITERIA",
    "SORT_PROPERTIES",
    "TEXT_FILTER_PROPERTIES",
    "parse_filters",
    "parse_sorters",
]

#: The most sorters or filters one request may give.
MAX_CRITERIA: Final = 10
#: Sortable property → the column it sorts by.
_SORT_COLUMNS: Final = {"id": "id", "title": "title_sort", "date": "date_gmt", "author": "author"}
SORT_PROPERTIES: Final = tuple(_SORT_COLUMNS)
#: Properties filtered by substring (ignoring ASCII case) unless asked for exactly.
TEXT_FILTER_PROPERTIES: Final = ("title", "content")
#: Properties filtered by exact value.
EXACT_FILTER_PROPERTIES: Final = ("id", "author")
_OPERATORS: Final = {"like": "like", "=": "=", "==": "=", "eq": "="}

T = TypeVar("T")


def _load_list(value: Any, name: str) -> list[Any] | str:
    """The criteria objects of a JSON string or decoded value, or an error message."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return []
    if isinstance(value, str):
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


def parse_sorters(value: Any, direction: Any = None) -> tuple[Sort, ...] | str:
    """The sort keys of a ``sort`` value (``direction``: the ``dir`` parameter, used for a
    bare property name), or an error message."""
    if isinstance(value, str) and value.strip() and value.lstrip()[:1] not in ("[", "{"):
        value = [{"property": value.strip(), "direction": direction or "ASC"}]
    return _parse_each(value, "sort", _parse_sorter)


def _parse_sorter(item: Any, name: str) -> Sort | str:
    if not isinstance(item, dict):
        return f"{name} must be an object with property and direction."
    prop = item.get("property")
    if not isinstance(prop, str) or prop not in SORT_PROPERTIES:
        return f"{name}.property must be one of {', '.join(SORT_PROPERTIES)}."
    direction = item.get("direction")
    direction = "ASC" if direction is None else direction
    if not isinstance(direction, str) or direction.upper() not in ("ASC", "DESC"):
        return f"{name}.direction must be ASC or DESC."
    return Sort(_SORT_COLUMNS[prop], descending=direction.upper() == "DESC")


def parse_filters(value: Any) -> tuple[Filter, ...] | str:
    """The filters of a ``filter`` value, or an error message."""
    return _parse_each(value, "filter", _parse_filter)


def _parse_filter(item: Any, name: str) -> Filter | str:
    if not isinstance(item, dict):
        return f"{name} must be an object with property and value."
    prop = item.get("property")
    properties = TEXT_FILTER_PROPERTIES + EXACT_FILTER_PROPERTIES
    if not isinstance(prop, str) or prop not in properties:
        return f"{name}.property must be one of {', '.join(properties)}."
    operator = item.get("operator")
    if operator is not None and (not isinstance(operator, str) or operator not in _OPERATORS):
        return f"{name}.operator must be like or =."
    value = item.get("value")
    if prop in TEXT_FILTER_PROPERTIES:
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            return f"{name}.value must be a string."
        return Filter(prop, value, _OPERATORS[operator or "like"])
    number = _integer(value)
    if number is None:
        return f"{name}.value must be an integer."
    return Filter(prop, number, "=")


def _integer(value: Any) -> int | None:
    """An integer given as a JSON number or a decimal string, within the store's range."""
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
    if not isinstance(value, int) or not MIN_INT <= value <= MAX_INT:
        return None
    return value
