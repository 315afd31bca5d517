"""Shared type aliases."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from collections.abc import Set
    from datetime import date
    from decimal import Decimal
    from enum import Enum
    from uuid import UUID

    from _typeshed import DataclassInstance

__all__ = ["JSON", "AnswerLike", "JSONLike"]

#: A JSON value as Python holds it after decoding: what a request's JSON body becomes.
JSON: TypeAlias = "dict[str, JSON] | list[JSON] | str | int | float | bool | None"

#: Anything encodable as JSON that callers hand over (response data, error data, a request's
#: decoded body): read-only containers, so a ``dict[str, int]`` qualifies (``dict`` itself is
#: invariant in its values).
JSONLike: TypeAlias = (
    "Mapping[str, JSONLike] | Sequence[JSONLike] | str | int | float | bool | None"
)

#: What a response's data may hold (docs/guides/routes.md, "Answers"): JSON values, and
#: ``Decimal`` (a number with its digits), sets (lists), ``UUID``, ``datetime`` / ``date``
#: (RFC 3339), dataclass instances and ``Enum`` members.
AnswerLike: TypeAlias = (
    "Mapping[str, AnswerLike] | Sequence[AnswerLike] | Set[AnswerLike] | str | int | float"
    " | bool | Decimal | UUID | date | Enum | DataclassInstance | None"
)
