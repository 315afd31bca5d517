"""The JSON of REST answers: what a handler's answer may hold besides plain JSON values.

orjson encodes ``UUID`` (its canonical string), ``datetime`` and ``date`` (RFC 3339:
``2024-05-06T07:08:09+00:00``, ``2024-05-06``; a naive ``datetime`` without an offset, as
WordPress's ``mysql_to_rfc3339`` writes dates), dataclasses (an object of their fields) and
``Enum`` members (their value) itself. :func:`encode_default` adds:

- ``Decimal``: a JSON number with exactly its digits (``Decimal("19.90")`` → ``19.90``,
  never rounded through a float); a Decimal that is not finite has no JSON form;
- ``set`` / ``frozenset``: a list, sorted when its items can be compared (so equal sets give
  equal bytes), in iteration order otherwise;
- a pydantic model or a msgspec struct (when the program uses those libraries: nothing is
  imported here): the object the library itself makes of it for JSON.

Anything else (``bytes``, an arbitrary object) raises :class:`UnencodableValue`, which orjson
reports as the ``__cause__`` of its ``JSONEncodeError``; the pipeline then logs one line
naming the type and the route and answers 500 ``rest_internal_error``.

orjson calls ``default`` only for a value it cannot encode itself, so a plain JSON answer
never reaches this module.
"""

from __future__ import annotations

import sys
from decimal import Decimal
from typing import Any

import orjson

__all__ = [
    "ANSWER_TYPES",
    "UnencodableValue",
    "dumps_answer",
    "encode_default",
    "one_line",
    "unencodable_reason",
]

#: What an answer may hold besides JSON values, for messages.
ANSWER_TYPES = (
    "Decimal, set, frozenset, UUID, datetime, date, dataclasses, Enums,"
    " pydantic models and msgspec structs"
)


class UnencodableValue(TypeError):
    """A value of an answer that has no JSON form; ``reason`` says which and why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _type_name(value: object) -> str:
    kind = type(value)
    module = kind.__module__
    return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"


def encode_default(value: Any) -> Any:
    """orjson's ``default``: the JSON form of a ``Decimal``, ``set``, ``frozenset``,
    pydantic model or msgspec struct; :class:`UnencodableValue` for anything else."""
    if isinstance(value, Decimal):
        if value.is_finite():
            return orjson.Fragment(str(value))
        raise UnencodableValue(f"a Decimal that is not a finite number ({value})")
    if isinstance(value, (set, frozenset)):
        try:
            return sorted(value)
        except TypeError:  # items that cannot be compared: the set's own order
            return list(value)
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json")
    msgspec = sys.modules.get("msgspec")
    if msgspec is not None and isinstance(value, msgspec.Struct):
        return msgspec.to_builtins(value)
    raise UnencodableValue(f"a value of type {_type_name(value)}")


def dumps_answer(data: Any, option: int = orjson.OPT_NON_STR_KEYS) -> bytes:
    """``data`` as JSON bytes, with :func:`encode_default`; raises ``orjson.JSONEncodeError``
    (see :func:`unencodable_reason`)."""
    return orjson.dumps(data, default=encode_default, option=option)


def unencodable_reason(error: orjson.JSONEncodeError | UnencodableValue) -> str:
    """What made an answer unencodable, for the log: the value :func:`encode_default`
    refused, or orjson's own reason (an integer past 64 bits, nesting too deep…), or the
    reason another format's serializer gave (docs/guides/response-formats.md)."""
    cause = error if isinstance(error, UnencodableValue) else error.__cause__
    if isinstance(cause, UnencodableValue):
        return f"it holds {cause.reason} (answers may hold JSON values, {ANSWER_TYPES})"
    return str(error)


def one_line(text: str) -> str:
    """``text`` for one log line: control and other unprintable characters escaped
    (``\\n``, ``\\x1b``…), anything printable as it is."""
    return text if text.isprintable() else repr(text)[1:-1]
