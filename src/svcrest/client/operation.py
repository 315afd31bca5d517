"""Operation: one create/read/update/destroy request of the client proxy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, Final, TypeAlias

__all__ = ["ACTIONS", "FilterSpec", "Operation", "SorterSpec"]

#: The four actions, in the order `sync` sends them.
ACTIONS: Final = ("create", "read", "update", "destroy")

#: A sorter or grouper: a property name (direction ``"ASC"``) or a mapping with the keys
#: ``property`` (required) and ``direction`` (optional, default ``"ASC"``).
SorterSpec: TypeAlias = str | Mapping[str, Any]
#: A filter: a mapping with the keys ``property`` (required), ``value`` (optional, default
#: None, sent as ``null``) and ``operator`` (optional, left out when absent or None).
FilterSpec: TypeAlias = Mapping[str, Any]


@dataclass(frozen=True)
class Operation:
    """One proxy operation: the input of `RestProxy.get_method`, `build_url` and `build_request`.

    ``action`` is one of ``create``, ``read``, ``update``, ``destroy`` (anything else raises
    ValueError). ``records`` are the records written (their first one's id goes into the URL),
    ``id`` the id of a read when there are no records, ``params`` extra query parameters.
    ``page``, ``start`` and ``limit`` are paging values; ``sorters`` a sequence of `SorterSpec`
    (or one), ``filters`` a sequence of `FilterSpec` (or one), ``grouper`` one `SorterSpec`.
    The shapes of sorters, filters and groupers are checked when a URL is built.
    """

    action: str
    _: KW_ONLY
    records: Sequence[Any] | None = None
    id: Any = None
    params: Mapping[str, Any] | None = None
    page: Any = None
    start: Any = None
    limit: Any = None
    sorters: Sequence[SorterSpec] | SorterSpec | None = None
    filters: Sequence[FilterSpec] | FilterSpec | None = None
    grouper: SorterSpec | None = None

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(
                f"unknown action {self.action!r}: expected one of {', '.join(ACTIONS)}"
            )
