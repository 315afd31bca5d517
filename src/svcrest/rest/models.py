"""pydantic models and msgspec structs in typed handlers: which library a class belongs to,
how a JSON value becomes an instance, the first error on one line, the class's JSON Schema,
and its fields as WordPress argument definitions.

Nothing here imports either library: a class of one exists only once the application
imported it, so the library is looked up in ``sys.modules``.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "model_converter",
    "model_error",
    "model_fields",
    "model_kind",
    "model_problem",
    "model_schema",
]


def model_kind(annotation: type) -> str | None:
    """``"pydantic"`` or ``"msgspec"`` for a model class of a library already imported, else
    None."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and issubclass(annotation, pydantic.BaseModel):
        return "pydantic"
    msgspec = sys.modules.get("msgspec")
    if msgspec is not None and issubclass(annotation, msgspec.Struct):
        return "msgspec"
    return None


def model_converter(annotation: type, kind: str) -> Callable[[Any], Any]:
    """The instance of ``annotation`` a JSON value makes (raises the library's error, a
    ``ValueError`` for both)."""
    if kind == "pydantic":
        return annotation.model_validate  # type: ignore[attr-defined, no-any-return]
    msgspec = sys.modules["msgspec"]
    return functools.partial(msgspec.convert, type=annotation)


def model_error(error: Exception) -> str:
    """The first problem a model library reports, on one line (``age: Input should be …``)."""
    errors = getattr(error, "errors", None)
    if callable(errors):  # pydantic: structured errors with where each one is
        first = errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        return f"{where}: {first['msg']}" if where else str(first["msg"])
    return str(error)


#: Where msgspec says its error is: ``Expected `int`, got `str` - at `$.book```.
_MSGSPEC_AT = re.compile(r" - at `\$\.([^.`\[]+)[^`]*`$")


def model_problem(error: Exception) -> tuple[str | None, str]:
    """The top-level field the first error of a model library names (None for an error of
    the whole object, such as a pydantic model validator's) and what is wrong, without
    where."""
    errors = getattr(error, "errors", None)
    if callable(errors):
        first = errors()[0]
        location = first.get("loc", ())
        return (str(location[0]) if location else None), str(first["msg"])
    text = str(error)
    found = _MSGSPEC_AT.search(text)
    if found is None:
        return None, text
    return found.group(1), text[: found.start()]


def model_schema(annotation: type) -> dict[str, Any] | None:
    """The JSON Schema of a pydantic model or msgspec struct, as the library writes it (with
    ``$defs``), else None."""
    kind = model_kind(annotation)
    if kind == "pydantic":
        return annotation.model_json_schema()  # type: ignore[attr-defined, no-any-return]
    if kind == "msgspec":
        schema: dict[str, Any] = sys.modules["msgspec"].json.schema(annotation)
        return schema
    return None


def _inline(schema: Any, defs: Mapping[str, Any], seen: frozenset[str]) -> Any:
    """``schema`` with every ``#/$defs/…`` reference replaced by what it names (a class
    that contains itself stops at a plain ``{"type": "object"}``)."""
    if isinstance(schema, list):
        return [_inline(item, defs, seen) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    reference = schema.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/$defs/"):
        name = reference.removeprefix("#/$defs/")
        rest = {key: value for key, value in schema.items() if key != "$ref"}
        if name in seen or name not in defs:
            return {"type": "object", **_inline(rest, defs, seen)}
        target = _inline(defs[name], defs, seen | {name})
        return {**target, **_inline(rest, defs, seen)}
    return {key: _inline(value, defs, seen) for key, value in schema.items() if key != "$defs"}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``anyOf: [X, {"type": "null"}]`` as X with ``"null"`` among its types, the form
    WordPress's own schemas use (``"type": ["integer", "null"]``); anything else as it is."""
    choices = schema.get("anyOf")
    if not isinstance(choices, list) or len(choices) != 2 or {"type": "null"} not in choices:
        return schema
    (other,) = [choice for choice in choices if choice != {"type": "null"}]
    kind = other.get("type") if isinstance(other, Mapping) else None
    if not isinstance(kind, str):
        return schema
    rest = {key: value for key, value in schema.items() if key != "anyOf"}
    return {**other, **rest, "type": [kind, "null"]}


def _argument(name: str, schema: Mapping[str, Any], required: bool) -> dict[str, Any]:
    """One field's schema as an argument definition: ``type`` first, pydantic's title made
    of the name left out, a ``null`` default left out (a field left out is the model's
    default), and ``required: true`` for a required field."""
    definition = _nullable(dict(schema))
    if definition.get("title") == name.replace("_", " ").title():
        del definition["title"]
    if "default" in definition and definition["default"] is None:
        del definition["default"]
    ordered = {"type": definition.pop("type")} if "type" in definition else {}
    ordered.update(definition)
    if required:
        ordered["required"] = True
    return ordered


def model_fields(annotation: type) -> dict[str, dict[str, Any]]:
    """The fields of a pydantic model or msgspec struct as WordPress argument definitions,
    named as the JSON body names them (aliases, renames), from the class's JSON Schema."""
    schema = model_schema(annotation)
    if schema is None:
        raise TypeError(f"{annotation!r} is not a pydantic model or a msgspec struct")
    defs = schema.get("$defs", {})
    root = _inline(schema, defs, frozenset())
    required = set(root.get("required", ()))
    return {
        name: _argument(name, field, name in required)
        for name, field in root.get("properties", {}).items()
    }
