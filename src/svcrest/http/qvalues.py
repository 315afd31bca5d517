"""Weighted lists of request headers (RFC 9110 §12.4.2): ``Accept``, ``Accept-Encoding``."""

from __future__ import annotations

__all__ = ["MAX_ITEMS", "q_weights"]

#: Items of one header value read at most (SECURITY: a client's list is not read to its end).
MAX_ITEMS = 32


def q_weights(header: str) -> dict[str, float]:
    """Item → its ``q`` weight in a weighted list such as ``text/html;q=0.9, */*;q=0.1``:
    items lower-cased, the first mention of an item winning, parameters other than ``q``
    ignored, an item whose weight cannot be read (or is outside 0 to 1) left out, and only
    the first :data:`MAX_ITEMS` items read."""
    weights: dict[str, float] = {}
    for item in header.split(",")[:MAX_ITEMS]:
        name, _, params = item.partition(";")
        name = name.strip().lower()
        if not name:
            continue
        weight = 1.0
        for param in params.split(";"):
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    weight = float(value.strip())
                except ValueError:
                    weight = -1.0
        if 0.0 <= weight <= 1.0:
            weights.setdefault(name, weight)
    return weights
