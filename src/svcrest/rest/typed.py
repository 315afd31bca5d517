"""Typed handlers: a callback's annotated parameters as WordPress argument definitions.

A callback such as ``def get_book(request, id: int, context: Literal["view", "edit"] = "view")``
declares its arguments through its signature: each parameter after the request becomes an
argument definition (``{"type": "integer", "required": True}``, ``{"type": "string",
"enum": ["view", "edit"], "default": "view"}``) validated and coerced by the same rules as
dict args, and the callback is called with the validated values as keyword arguments,
converted to their annotations (an ``Enum`` member, a dataclass instance, a ``datetime``).

Everything is read once, at registration: :func:`prepare_typed` returns the argument
definitions and a plain ``callback(request)`` that reads the parameters and calls the
original; requests never introspect anything.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as _dt
import enum
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import (
    Annotated,
    Any,
    Literal,
    NamedTuple,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
)

from svcrest.dates import rest_parse_date
from svcrest.http.errors import RestError
from svcrest.rest.arg import Arg
from svcrest.rest.models import (
    model_converter,
    model_error,
    model_fields,
    model_kind,
    model_problem,
    model_schema,
)

__all__ = [
    "Arg",
    "ReturnedSchema",
    "TypedCallback",
    "model_schema",
    "prepare_typed",
    "response_schema",
    "return_schema",
]

#: A converter from a validated JSON value to the annotated Python value; None: as it is.
Convert = Callable[[Any], Any] | None

_SCALARS: dict[Any, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}
_VALUE_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),  # before int: True is an int too
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (type(None), "null"),
)


class _Typed(NamedTuple):
    """What one annotation gives: its schema, its converter and whether None is allowed."""

    schema: dict[str, Any]
    convert: Convert
    optional: bool = False


class TypedCallback(NamedTuple):
    """A typed callback prepared at registration: the argument definitions its signature
    declares and the ``callback(request)`` to register in its place."""

    args: dict[str, dict[str, Any]]
    callback: Callable[[Any], Any]


def _value_type(value: Any) -> str:
    for python_type, name in _VALUE_TYPES:
        if isinstance(value, python_type):
            return name
    raise TypeError(f"a Literal or Enum value must be a JSON scalar, not {value!r}")


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    kinds = list(dict.fromkeys(_value_type(value) for value in values))
    return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": values}


def _to_datetime(value: Any) -> _dt.datetime:
    # The value passed ``format: date-time`` (WordPress's RFC 3339 shape), so it parses.
    stamp = rest_parse_date(value)
    if stamp is False:  # pragma: no cover - validation refused it already
        raise ValueError(f"not an RFC 3339 date: {value!r}")
    return _dt.datetime.fromtimestamp(stamp, _dt.UTC)


def _list_of(item: Convert) -> Convert:
    if item is None:
        return None
    return lambda values: [item(value) for value in values]


def _dict_of(item: Convert) -> Convert:
    if item is None:
        return None
    return lambda values: {key: item(value) for key, value in values.items()}


def _maybe(inner: Convert) -> Convert:
    if inner is None:
        return None
    return lambda value: None if value is None else inner(value)


def _object_of(build: Callable[..., Any] | None, fields: dict[str, Convert]) -> Convert:
    """A JSON object converted field by field, then given to ``build`` (a dataclass)."""
    converting = {name: convert for name, convert in fields.items() if convert is not None}
    if build is None and not converting:
        return None

    def convert(value: Mapping[str, Any]) -> Any:
        converted = {
            name: converting[name](item) if name in converting else item
            for name, item in value.items()
        }
        return converted if build is None else build(**converted)

    return convert


def _with_null(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if kind is None:
        return schema
    kinds = list(kind) if isinstance(kind, list) else [kind]
    if "null" not in kinds:
        kinds.append("null")
    return {**schema, "type": kinds}


def _fields_schema(
    hints: Mapping[str, Any], required: set[str], owner: Any
) -> tuple[dict[str, Any], dict[str, Convert]]:
    properties: dict[str, Any] = {}
    converters: dict[str, Convert] = {}
    for name, hint in hints.items():
        typed = describe(hint, f"{owner.__name__}.{name}")
        schema = dict(typed.schema)
        if name in required:
            schema["required"] = True  # WordPress's per-property form (draft 3)
        properties[name] = schema
        converters[name] = typed.convert
    return properties, converters


def _describe_model(annotation: type, kind: str) -> _Typed:
    """A pydantic model or msgspec struct: a JSON object the model itself validates (its
    first error is the argument's ``rest_invalid_param`` message)."""
    build = model_converter(annotation, kind)

    def validate_model(value: Any, request: Any, key: str) -> Any:
        try:
            build(value)
        except (ValueError, TypeError) as exc:  # pydantic's and msgspec's errors are both
            return RestError("rest_invalid_param", f"{key} is invalid: {model_error(exc)}", None)
        return True

    schema = {"type": "object", "validate_callback": validate_model}
    return _Typed(schema, build)


def _describe_class(annotation: type, where: str) -> _Typed | None:
    kind = model_kind(annotation)
    if kind is not None:
        return _describe_model(annotation, kind)
    if issubclass(annotation, enum.Enum):
        return _Typed(_enum_schema([member.value for member in annotation]), annotation)
    if annotation is _dt.datetime:
        return _Typed({"type": "string", "format": "date-time"}, _to_datetime)
    if typing.is_typeddict(annotation):
        hints = typing.get_type_hints(annotation, include_extras=True)
        # From the hints, not ``__required_keys__``: under ``from __future__ import
        # annotations`` Python 3.11 cannot see a string ``NotRequired[...]`` mark.
        total = getattr(annotation, "__total__", True)
        required = {
            name
            for name, hint in hints.items()
            if get_origin(hint) is Required or (total and get_origin(hint) is not NotRequired)
        }
        properties, converters = _fields_schema(hints, required, annotation)
        schema = {"type": "object", "properties": properties, "additionalProperties": False}
        return _Typed(schema, _object_of(None, converters))
    if dataclasses.is_dataclass(annotation):
        hints = typing.get_type_hints(annotation, include_extras=True)
        fields = [field for field in dataclasses.fields(annotation) if field.init]
        required = {
            field.name
            for field in fields
            if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        }
        field_hints = {field.name: hints[field.name] for field in fields}
        properties, converters = _fields_schema(field_hints, required, annotation)
        schema = {"type": "object", "properties": properties, "additionalProperties": False}
        return _Typed(schema, _object_of(annotation, converters))
    return None


def _describe_union(members: tuple[Any, ...], where: str) -> _Typed:
    present = [member for member in members if member is not type(None)]
    if len(present) != 1:
        raise TypeError(f"{where}: a union other than 'X | None' is not supported")
    inner = describe(present[0], where)
    optional = len(present) < len(members)
    schema = _with_null(inner.schema) if optional else inner.schema
    return _Typed(schema, _maybe(inner.convert) if optional else inner.convert, optional)


def _describe_container(origin: Any, parameters: tuple[Any, ...], where: str) -> _Typed:
    """``list[X]`` (an array of X) and ``dict[str, X]`` (an object of X values)."""
    if origin is list:
        (item_type,) = parameters or (Any,)
        item = describe(item_type, where) if item_type is not Any else _Typed({}, None)
        schema = {"type": "array", "items": item.schema} if item.schema else {"type": "array"}
        return _Typed(schema, _list_of(item.convert))
    key_type, value_type = parameters or (str, Any)
    if key_type is not str:
        raise TypeError(f"{where}: a dict argument's keys must be str")
    if value_type is Any:
        return _Typed({"type": "object"}, None)
    value = describe(value_type, where)
    schema = {"type": "object", "additionalProperties": value.schema}
    return _Typed(schema, _dict_of(value.convert))


def describe(annotation: Any, where: str) -> _Typed:
    """The argument schema and converter of one annotation; ``TypeError`` naming ``where``
    for an annotation that has no JSON form."""
    origin = get_origin(annotation)
    if origin in (NotRequired, Required):  # a TypedDict key's marks: its required keys say
        return describe(get_args(annotation)[0], where)
    if origin is Annotated:
        base, *extras = get_args(annotation)
        typed = describe(base, where)
        schema = dict(typed.schema)
        for extra in extras:
            if isinstance(extra, Arg):
                schema.update(extra.definition)
        return typed._replace(schema=schema)
    if annotation in _SCALARS:
        return _Typed({"type": _SCALARS[annotation]}, None)
    if origin is Literal:
        return _Typed(_enum_schema(list(get_args(annotation))), None)
    if origin in (Union, types.UnionType):
        return _describe_union(get_args(annotation), where)
    if origin in (list, dict):
        return _describe_container(origin, get_args(annotation), where)
    described = _describe_class(annotation, where) if isinstance(annotation, type) else None
    if described is not None:
        return described
    raise TypeError(f"{where}: the annotation {annotation!r} has no JSON argument form")


def _json_default(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


def _parameter_arg(
    parameter: inspect.Parameter, hint: Any, where: str
) -> tuple[dict[str, Any], Convert]:
    typed = describe(hint, where)
    definition = dict(typed.schema)
    has_default = parameter.default is not inspect.Parameter.empty
    if has_default and parameter.default is not None:
        definition.setdefault("default", _json_default(parameter.default))
    if not has_default and not typed.optional:
        definition.setdefault("required", True)
    return definition, typed.convert


_KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
_VARIADIC_KINDS = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def _typed_parameters(callback: Callable[..., Any]) -> list[inspect.Parameter] | None:
    """The parameters after the request, when every one of them is annotated and can be
    passed by keyword; None for a plain ``callback(request)`` (or one that takes ``*args``).
    Raises ``TypeError`` for a plain callback with a parameter after the request that has no
    default: it would never be passed, and every request would fail."""
    try:
        parameters = list(inspect.signature(callback).parameters.values())
    except (TypeError, ValueError):
        return None
    rest = parameters[1:]
    if not rest:
        return None
    if all(
        parameter.kind in _KEYWORD_KINDS and parameter.annotation is not inspect.Parameter.empty
        for parameter in rest
    ):
        return rest
    _refuse_unpassed(callback, rest)
    return None


def _why_plain(parameter: inspect.Parameter, never: inspect.Parameter) -> str:
    """Why ``parameter`` makes its callback a plain ``callback(request)``."""
    subject = "it" if parameter is never else f"parameter {parameter.name!r}"
    if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
        return f"the callback takes *{parameter.name}"
    if parameter.kind is inspect.Parameter.VAR_KEYWORD:
        return f"the callback takes **{parameter.name}"
    if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
        return f"{subject} is positional-only"
    return f"{subject} has no type annotation"


def _refuse_unpassed(callback: Callable[..., Any], rest: list[inspect.Parameter]) -> None:
    """``TypeError`` naming the first parameter after the request that a plain
    ``callback(request)`` call never passes (one without a default), and why the callback is
    not a typed one."""
    never = next(
        (
            parameter
            for parameter in rest
            if parameter.default is inspect.Parameter.empty
            and parameter.kind not in _VARIADIC_KINDS
        ),
        None,
    )
    if never is None:
        return
    cause = next(
        parameter
        for parameter in rest
        if parameter.kind not in _KEYWORD_KINDS or parameter.annotation is inspect.Parameter.empty
    )
    name = getattr(callback, "__qualname__", repr(callback))
    raise TypeError(
        f"parameter {never.name!r} of {name} is never passed: {_why_plain(cause, never)}, so"
        " the callback is called with the request alone (annotate every parameter after the"
        f" request to make them arguments, or give {never.name!r} a default)"
    )


#: The parameter that takes the whole request body: annotated with a ``TypedDict``, a
#: dataclass, a pydantic model or a msgspec struct, its fields are the handler's arguments
#: (as WordPress's ``POST /wp/v2/posts`` takes a post's fields), and it receives them as one
#: dict or instance.
BODY_PARAMETER = "body"


def _record_class(hint: Any) -> type | None:
    """The ``TypedDict``, dataclass, pydantic model or msgspec struct ``hint`` names (through
    ``Annotated``), else None."""
    if get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    if not isinstance(hint, type):
        return None
    if typing.is_typeddict(hint) or dataclasses.is_dataclass(hint) or model_kind(hint):
        return hint
    return None


def _model_body(annotation: type, kind: str) -> Callable[[Any], Any]:
    """The model instance of the body's fields; a 400 ``rest_invalid_param`` naming the field
    when the model refuses them (a check its JSON Schema cannot say, such as a validator)."""
    build = model_converter(annotation, kind)

    def make(sent: Mapping[str, Any]) -> Any:
        try:
            return build(sent)
        except (ValueError, TypeError) as exc:  # pydantic's and msgspec's errors are both
            field, problem = model_problem(exc)
            where = field or BODY_PARAMETER
            message = f"{where} is invalid: {problem}"
            raise RestError(
                "rest_invalid_param",
                f"Invalid parameter(s): {where}",
                {
                    "status": 400,
                    "params": {where: message},
                    "details": {where: {"code": "rest_invalid_param", "message": message}},
                },
            ) from None

    return make


def _body_fields(record: type, where: str) -> tuple[dict[str, dict[str, Any]], Convert]:
    """The argument definitions of a body class's fields and what makes the instance."""
    kind = model_kind(record)
    if kind is not None:
        return model_fields(record), _model_body(record, kind)
    typed = describe(record, where)
    return typed.schema["properties"], typed.convert


def _add_arg(
    args: dict[str, dict[str, Any]], name: str, definition: dict[str, Any], where: str
) -> None:
    if name in args:
        raise TypeError(f"{where}: the argument {name!r} is declared twice")
    args[name] = definition


def _hints(callback: Callable[..., Any], name: str) -> dict[str, Any]:
    """The callback's resolved annotations; ``TypeError`` naming the annotation that names
    something its module does not define (a class local to a function, which annotations
    cannot see under ``from __future__ import annotations``)."""
    try:
        return typing.get_type_hints(callback, include_extras=True)
    except NameError as exc:
        missing = exc.name or ""
        written = getattr(callback, "__annotations__", {})
        for key, annotation in written.items():
            text = annotation if isinstance(annotation, str) else ""
            if missing and re.search(rf"\b{re.escape(missing)}\b", text):
                what = "the return annotation" if key == "return" else f"parameter {key!r}"
                raise TypeError(
                    f"the annotation {text!r} of {what} of {name} cannot be resolved: name"
                    f" {missing!r} is not defined in the module of {name} (a class defined"
                    " inside a function is not visible to annotations under 'from __future__"
                    f" import annotations': define {missing} at module level)"
                ) from None
        raise


def prepare_typed(callback: Callable[..., Any]) -> TypedCallback | None:
    """The argument definitions a callback's annotated parameters declare, and the plain
    ``callback(request)`` that calls it with their values; None for an untyped callback.

    A parameter is required unless it has a default or allows None; a value that was not
    sent is passed as the parameter's default (or None). A parameter named ``body`` whose
    annotation is a ``TypedDict``, a dataclass, a pydantic model or a msgspec struct takes
    the whole body: its fields are the arguments. Raises ``TypeError`` naming the parameter
    when an annotation has no JSON form or cannot be resolved, an argument is declared
    twice, or a parameter would never be passed.
    """
    parameters = _typed_parameters(callback)
    if parameters is None:
        return None
    name = getattr(callback, "__qualname__", repr(callback))
    hints = _hints(callback, name)
    args: dict[str, dict[str, Any]] = {}
    plan: list[tuple[str, Convert, bool]] = []
    body: tuple[str, tuple[str, ...], Convert] | None = None
    for parameter in parameters:
        where = f"parameter {parameter.name!r} of {name}"
        hint = hints[parameter.name]
        record = _record_class(hint) if parameter.name == BODY_PARAMETER else None
        if record is not None:
            fields, build = _body_fields(record, where)
            for field, schema in fields.items():
                _add_arg(args, field, dict(schema), where)
            body = (parameter.name, tuple(fields), build)
            continue
        definition, convert = _parameter_arg(parameter, hint, where)
        _add_arg(args, parameter.name, definition, where)
        has_default = parameter.default is not inspect.Parameter.empty
        plan.append((parameter.name, convert, has_default))
    steps = tuple(plan)

    def call_typed(request: Any) -> Any:
        values: dict[str, Any] = {}
        for key, convert, has_default in steps:
            value = request.get_param(key)
            if value is None:
                if not has_default:
                    values[key] = None
            else:
                values[key] = value if convert is None else convert(value)
        if body is not None:
            key, fields, build = body
            sent = {
                field: value for field in fields if (value := request.get_param(field)) is not None
            }
            values[key] = sent if build is None else build(sent)
        return callback(request, **values)

    # The name and docstring (the OpenAPI summary) of the original, but not ``__wrapped__``:
    # the pipeline reads the signature of what it calls, which takes the request only.
    for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(call_typed, attribute, getattr(callback, attribute, None))
    return TypedCallback(args, call_typed)


_DRAFT_04 = "http://json-schema.org/draft-04/schema#"


def _class_schema(annotation: Any, callback: Callable[..., Any]) -> dict[str, Any] | None:
    """The draft-04 item schema of a ``TypedDict``, dataclass, pydantic model or msgspec
    struct class, titled with its name; None for anything else."""
    if not isinstance(annotation, type):
        return None
    model = model_schema(annotation)
    if model is not None:
        return {"$schema": _DRAFT_04, "title": annotation.__name__, **model}
    if not (typing.is_typeddict(annotation) or dataclasses.is_dataclass(annotation)):
        return None
    try:
        typed = describe(annotation, f"the return annotation of {callback!r}")
    except (TypeError, NameError):  # a field with no JSON form: the answer is not described
        return None
    schema = {key: value for key, value in typed.schema.items() if key != "additionalProperties"}
    return {"$schema": _DRAFT_04, "title": annotation.__name__, **schema}


def _return_annotation(callback: Callable[..., Any]) -> Any:
    try:
        hints = typing.get_type_hints(callback, include_extras=True)
    except Exception:  # a callable without readable annotations has no schema
        return None
    return hints.get("return")


def return_schema(callback: Callable[..., Any]) -> dict[str, Any] | None:
    """The item schema (draft-04, as WordPress's ``get_item_schema``) of a callback whose
    return annotation is a ``TypedDict``, a dataclass, a pydantic model or a msgspec struct;
    None otherwise."""
    return _class_schema(_return_annotation(callback), callback)


def response_schema(callback: Callable[..., Any]) -> dict[str, Any] | None:
    """The schema of what a callback answers, from its return annotation: a class's item
    schema (as :func:`return_schema`), or for ``list[X]`` an array of X's; None otherwise."""
    annotation = _return_annotation(callback)
    if get_origin(annotation) is list:
        (item,) = get_args(annotation) or (None,)
        inner = _class_schema(item, callback)
        if inner is None:
            return None
        items = {key: value for key, value in inner.items() if key != "$schema"}
        return {"$schema": _DRAFT_04, "type": "array", "items": items}
    return _class_schema(annotation, callback)


class ReturnedSchema:
    """A schema a callback's return annotation gives, as a ``schema`` or ``response_schema``
    option: called, it returns a copy; two are equal when their schemas are."""

    __slots__ = ("_hash", "schema")

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self._hash = hash(json.dumps(schema, sort_keys=True, default=repr))

    def __call__(self) -> dict[str, Any]:
        return copy.deepcopy(self.schema)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReturnedSchema) and other.schema == self.schema

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"ReturnedSchema({self.schema.get('title', self.schema.get('type'))!r})"
