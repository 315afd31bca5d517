"""Shared type aliases."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

__all__ = ["JSON", "JSONLike"]

#: A JSON value as Python holds it after decoding: what a request's JSON body becomes.
JSON: TypeAlias = "dict[str, JSON] | list[JSON] | str | int | float | bool | None"

#: Anything encodable as JSON that callers hand over (response data, error data, a request's
#: decoded body): read-only containers, so a ``dict[str, int]`` qualifies (``dict`` itself is
#: invariant in its values).
JSONLike: TypeAlias = (
    "Mapping[str, JSONLike] | Sequence[JSONLike] | str | int | float | bool | None"
)
