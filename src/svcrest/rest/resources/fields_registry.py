"""Fields other plugins add to a resource: WordPress's ``register_rest_field`` and its
``$wp_rest_additional_fields``, one registry per site (no globals)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

__all__ = ["RestField", "RestFields"]

#: ``get_callback(data, attribute, request, object_type)``: the field's value in an answer.
GetCallback = Callable[[dict[str, Any], str, Any, str], Any]
#: ``update_callback(value, item, attribute, request, object_type)``: store a written value;
#: a returned (or raised) ``RestError`` is the answer.
UpdateCallback = Callable[[Any, Any, str, Any, str], Any]


@dataclass(frozen=True, slots=True)
class RestField:
    """One registered field: its callbacks and its schema (None: no schema entry)."""

    get_callback: GetCallback | None = None
    update_callback: UpdateCallback | None = None
    schema: dict[str, Any] | None = None


class RestFields:
    """The site's registered fields, by object type (a resource schema's ``title``) then
    attribute, in registration order; ``version`` grows with each registration, so what is
    made of the fields (a controller's schema) can be remembered until it changes."""

    def __init__(self) -> None:
        self._fields: dict[str, dict[str, RestField]] = {}
        self.version = 0

    def register(
        self, object_types: str | Iterable[str], attribute: str, field: RestField
    ) -> list[str]:
        """Register ``field`` as ``attribute`` of each object type (one name or several);
        a later registration of the same attribute replaces the earlier one, as in
        WordPress. Returns the object types."""
        types = [object_types] if isinstance(object_types, str) else list(object_types)
        for object_type in types:
            self._fields.setdefault(object_type, {})[attribute] = field
        self.version += 1
        return types

    def for_type(self, object_type: str | None) -> Mapping[str, RestField]:
        """The fields of ``object_type`` (attribute → field; empty for none), read-only.
        PERF: a view, not a copy (read several times for each item answered)."""
        fields = self._fields.get(object_type or "")
        return _NONE if fields is None else MappingProxyType(fields)


#: The fields of an object type nothing registered to.
_NONE: Mapping[str, RestField] = MappingProxyType({})
