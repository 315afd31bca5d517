"""``_fields`` response filtering (WordPress's ``rest_filter_response_fields``)."""

from __future__ import annotations

from typing import Any

__all__ = ["filter_response_fields", "links_wanted", "parse_fields"]


def parse_fields(fields: Any) -> list[str]:
    """``"a,b.c"`` or ``["a", "b.c"]`` → ``["a", "b.c"]`` (blank entries dropped); an object
    (``_fields[k]=id``) gives its values, as WordPress's ``wp_parse_list`` reads an array."""
    if isinstance(fields, dict):
        fields = list(fields.values())
    items = fields if isinstance(fields, list) else str(fields).split(",")
    return [str(item).strip() for item in items if str(item).strip()]


def links_wanted(fields: Any) -> bool:
    """Whether an answer keeps its ``_links`` under ``_fields``: when nothing is listed, or
    when ``_links`` or ``_embedded`` (or a field inside either) is, as WordPress prepares an
    item's links for both (``rest_is_field_included``)."""
    names = parse_fields(fields)
    return not names or any(name.split(".", 1)[0] in ("_links", "_embedded") for name in names)


def _build_tree(fields: list[str]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for field in fields:
        node = tree
        parts = field.split(".")
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            if last:
                node[part] = True
            else:
                child = node.get(part)
                if child is True:
                    break  # the whole parent is already included
                node = node.setdefault(part, {})
    return tree


def _pick(item: Any, tree: dict[str, Any]) -> Any:
    if not isinstance(item, dict):
        return item
    picked: dict[str, Any] = {}
    for key, sub in tree.items():
        if key not in item:
            continue
        picked[key] = item[key] if sub is True else _pick(item[key], sub)
    return picked


def filter_response_fields(data: Any, fields: Any) -> Any:
    """Keep only ``fields`` of an object, or of each object of a list."""
    names = parse_fields(fields)
    if not names:
        return data
    tree = _build_tree(names)
    if isinstance(data, list):
        return [_pick(item, tree) for item in data]
    return _pick(data, tree)
