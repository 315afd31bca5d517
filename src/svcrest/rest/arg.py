"""``Arg``: the constraints and documentation of one typed parameter, as keywords a type
checker can check (``Arg(minimun=1)`` is a mypy error, and a ``TypeError`` with "did you
mean 'minimum'?" when it runs)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, Never

from svcrest.rest.schema.keywords import closest_keyword, type_notice

__all__ = ["Arg", "JsonType"]

#: JSON Schema's built-in types, the only ones WordPress's ``type`` keyword knows.
JsonType = Literal["array", "object", "string", "number", "integer", "boolean", "null"]


class _Unset:
    """The value of an ``Arg`` keyword not given (``None`` is a value: ``default=None``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"


_UNSET: Final[Any] = _Unset()


class Arg:
    """Constraints and documentation of one typed parameter, given through
    ``typing.Annotated``: ``Annotated[int, Arg(minimum=1, description="The book's id.")]``.

    The keywords are those of a WordPress argument definition: JSON-schema keywords
    (``minimum``, ``maximum``, ``exclusiveMinimum``, ``minLength``, ``maxLength``,
    ``pattern``, ``format``, ``enum``, ``items``, ``minItems`` …), ``description``,
    ``default``, ``required``, ``context``, ``readonly``, ``arg_options``,
    ``validate_callback`` and ``sanitize_callback``. They are laid over what the type
    gives. Any other keyword is a ``TypeError`` naming the closest known one (WordPress
    would ignore a misspelt keyword, leaving the argument without the constraint), and so is
    a ``type`` that is not one of JSON Schema's built-in types.
    """

    __slots__ = ("definition",)

    def __init__(
        self,
        *,
        type: JsonType | list[JsonType] = _UNSET,
        description: str = _UNSET,
        title: str = _UNSET,
        default: Any = _UNSET,
        required: bool = _UNSET,
        enum: Sequence[Any] = _UNSET,
        const: Any = _UNSET,
        format: str = _UNSET,
        pattern: str = _UNSET,
        minimum: float = _UNSET,
        maximum: float = _UNSET,
        exclusiveMinimum: bool | float = _UNSET,
        exclusiveMaximum: bool | float = _UNSET,
        multipleOf: float = _UNSET,
        minLength: int = _UNSET,
        maxLength: int = _UNSET,
        items: Mapping[str, Any] | Sequence[Mapping[str, Any]] = _UNSET,
        minItems: int = _UNSET,
        maxItems: int = _UNSET,
        uniqueItems: bool = _UNSET,
        properties: Mapping[str, Mapping[str, Any]] = _UNSET,
        additionalProperties: bool | Mapping[str, Any] = _UNSET,
        patternProperties: Mapping[str, Mapping[str, Any]] = _UNSET,
        minProperties: int = _UNSET,
        maxProperties: int = _UNSET,
        anyOf: Sequence[Mapping[str, Any]] = _UNSET,
        oneOf: Sequence[Mapping[str, Any]] = _UNSET,
        examples: Sequence[Any] = _UNSET,
        deprecated: bool = _UNSET,
        context: Sequence[str] = _UNSET,
        readonly: bool = _UNSET,
        arg_options: Mapping[str, Any] = _UNSET,
        validate_callback: Callable[..., Any] = _UNSET,
        sanitize_callback: Callable[..., Any] = _UNSET,
        **unknown: Never,
    ) -> None:
        if unknown:
            key = next(iter(unknown))
            close = closest_keyword(key, _KEYWORDS)
            hint = f": did you mean {close!r}?" if close else ""
            raise TypeError(f"Arg() got the unknown keyword {key!r}{hint}")
        given = {key: value for key, value in locals().items() if key in _KEYWORDS}
        self.definition: dict[str, Any] = {
            key: list(value) if key in _LISTS and not isinstance(value, list) else value
            for key, value in given.items()
            if value is not _UNSET
        }
        if "type" in self.definition:
            notice = type_notice("Arg()", self.definition["type"])
            if notice is not None:
                raise TypeError(notice)

    def __repr__(self) -> str:
        inner = ", ".join(f"{key}={value!r}" for key, value in self.definition.items())
        return f"Arg({inner})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Arg) and other.definition == self.definition

    def __hash__(self) -> int:
        # typing hashes Annotated's metadata (``Annotated[str, Arg(...)] | None``); values
        # may be lists, so the keywords' names make the hash (equal Args have equal names).
        return hash(tuple(sorted(self.definition)))


#: The keywords of ``Arg``.
_KEYWORDS: Final = frozenset(
    name for name in inspect.signature(Arg).parameters if name != "unknown"
)
#: Keywords whose value is a JSON array: any sequence given is kept as a list.
_LISTS: Final = frozenset({"enum", "examples", "context", "anyOf", "oneOf"})
