"""The pure URL rules of the client proxy (Ext JS's REST proxy's, from Ext 4.2 for some and
Ext 5 for others, plus svcrest's own for URLs with a query string), without any I/O.

`svc-rest.mjs` implements the same rules in JavaScript; ``tests/vectors/proxy_urls.json`` holds
the cases both implementations must agree on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

import orjson

from svcrest.client.operation import FilterSpec, Operation, SorterSpec

__all__ = [
    "encode_component",
    "is_valid_id",
    "join_url",
    "normalize_filter",
    "normalize_filters",
    "normalize_sorter",
    "normalize_sorters",
    "operation_id",
    "record_id",
    "split_url",
    "to_json",
]

_SORTER_KEYS = frozenset({"property", "direction"})
_FILTER_KEYS = frozenset({"property", "value", "operator"})


def encode_component(value: str) -> str:
    """Percent-encode ``value`` exactly as JavaScript's ``encodeURIComponent`` does."""
    return quote(value, safe="!*'()")


def is_valid_id(value: object) -> bool:
    """True when ``value`` is a valid id: truthy or the int 0, and never a bool.

    ``""``, None and False are invalid; ``"0"`` is a non-empty string, so it is valid.
    """
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or bool(value)


def record_id(record: object, id_property: str) -> Any:
    """The id of ``record``: ``record[id_property]`` for a mapping, else the attribute.

    A record without that key or attribute has the id None.
    """
    if isinstance(record, Mapping):
        return record.get(id_property)
    return getattr(record, id_property, None)


def operation_id(operation: Operation, id_property: str) -> Any:
    """The id of ``operation``: its first record's id when it has records, else its ``id``."""
    if operation.records:
        return record_id(operation.records[0], id_property)
    return operation.id


def split_url(url: str) -> tuple[str, str | None, str | None]:
    """Split ``url`` into its path part, its query (None without ``?``) and its fragment."""
    rest, hash_mark, fragment = url.partition("#")
    path, question_mark, query = rest.partition("?")
    return path, query if question_mark else None, fragment if hash_mark else None


def join_url(
    path: str, query: str | None, params: Iterable[tuple[str, str]], fragment: str | None
) -> str:
    """Rebuild a URL, appending ``params`` (percent-encoded) to the existing ``query``.

    The new parameters follow the existing query after a ``&`` (none when the query is empty or
    already ends with ``&``); the fragment, if any, stays at the end.
    """
    encoded = "&".join(f"{encode_component(k)}={encode_component(v)}" for k, v in params)
    if query is None:
        query = encoded or None
    elif encoded:
        query = f"{query}&{encoded}" if query and not query.endswith("&") else query + encoded
    url = path if query is None else f"{path}?{query}"
    return url if fragment is None else f"{url}#{fragment}"


def _check_keys(kind: str, spec: Mapping[str, Any], allowed: frozenset[str]) -> None:
    unknown = sorted(str(key) for key in spec if key not in allowed)
    if unknown:
        raise ValueError(f"{kind} has unknown keys: {', '.join(unknown)}")
    prop = spec.get("property")
    if not isinstance(prop, str) or not prop:
        raise ValueError(f"{kind} needs a non-empty string 'property', got {prop!r}")


def normalize_sorter(spec: SorterSpec, kind: str = "sorter") -> dict[str, Any]:
    """``{"property": ..., "direction": ...}`` for a sorter or grouper.

    A string is a property sorted ``"ASC"``; a mapping may hold only ``property`` (a non-empty
    string) and ``direction`` (a string; absent or None means ``"ASC"``, other values are kept
    as given). Anything else raises ValueError.
    """
    if isinstance(spec, str):
        spec = {"property": spec}
    if not isinstance(spec, Mapping):
        raise ValueError(f"a {kind} is a property name or a mapping, got {spec!r}")
    _check_keys(kind, spec, _SORTER_KEYS)
    direction = spec.get("direction")
    if direction is None:
        direction = "ASC"
    if not isinstance(direction, str):
        raise ValueError(f"a {kind} direction is a string, got {direction!r}")
    return {"property": spec["property"], "direction": direction}


def normalize_filter(spec: FilterSpec) -> dict[str, Any]:
    """``{"property": ..., "value": ...}`` plus ``"operator"`` for a filter.

    The mapping may hold only ``property`` (a non-empty string), ``value`` (any JSON value;
    absent means None) and ``operator`` (a string; left out when absent or None). Anything
    else raises ValueError.
    """
    if not isinstance(spec, Mapping):
        raise ValueError(f"a filter is a mapping, got {spec!r}")
    _check_keys("filter", spec, _FILTER_KEYS)
    result = {"property": spec["property"], "value": spec.get("value")}
    operator = spec.get("operator")
    if operator is not None:
        if not isinstance(operator, str):
            raise ValueError(f"a filter operator is a string, got {operator!r}")
        result["operator"] = operator
    return result


def _as_list(specs: Sequence[Any] | Mapping[str, Any] | str | None, kind: str) -> list[Any]:
    if specs is None:
        return []
    if isinstance(specs, str | Mapping):
        return [specs]
    if not isinstance(specs, Iterable):
        raise ValueError(f"{kind} must be a list, got {specs!r}")
    return list(specs)


def normalize_sorters(sorters: Sequence[SorterSpec] | SorterSpec | None) -> list[dict[str, Any]]:
    """The normalised sorters of an operation (one sorter counts as a list of one)."""
    return [normalize_sorter(spec) for spec in _as_list(sorters, "sorters")]


def normalize_filters(filters: Sequence[FilterSpec] | FilterSpec | None) -> list[dict[str, Any]]:
    """The normalised filters of an operation (one filter counts as a list of one)."""
    return [normalize_filter(spec) for spec in _as_list(filters, "filters")]


def to_json(value: Any) -> str:
    """Compact JSON text, as JavaScript's ``JSON.stringify`` writes it for these values."""
    return orjson.dumps(value).decode()
