"""Request argument handling: defaults, required, validation and sanitising, with WordPress's
error codes (``rest_missing_callback_param``, ``rest_invalid_param``).

Defaults are checked once, when a route is registered (:func:`default_error` refuses one
that fails its own schema; :func:`prepare_defaults` validates and sanitises the rest): a
request that leaves a scalar default alone does not check it again. A default with a
``validate_callback`` or ``sanitize_callback`` is still handed to the callback on every
request (WordPress calls it with the default), and a list or object default is sanitised
into a new value per request (a callback may change what it is given).

PERF: a GET of a route with three arguments, one sent: 213,406 → 130,560 instructions when
the other two have defaults, 142,981 → 139,367 when none has (the defaults' bucket is a
copy, no longer built); a ``StoreCollection`` page of 10 1,492,367 → 1,317,124 with its
five defaults (callgrind, as bench/instructions.py counts).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.rest.invoke import call_maybe_async
from svcrest.rest.schema import sanitize_value, validate_value

__all__ = [
    "PreparedDefaults",
    "apply_defaults",
    "check_params",
    "default_error",
    "prepare_defaults",
    "sanitize_params",
]

#: Defaults of these types are shared by every request once checked (immutable values).
_SHAREABLE = frozenset({str, int, float, bool})
_NO_DEFAULTS: dict[str, Any] = {}
_NOTHING = object()


# PERF: ``type(x) is dict`` first: an ABC ``isinstance`` check costs ~0.2 µs, and argument
# definitions are dicts (the Mapping check stays for the others).


def default_error(name: str, definition: Any) -> RestError | None:
    """The error of an argument's ``default`` against its own schema (None: it has none,
    it is None, or it is valid): checked when the route is registered."""
    if not isinstance(definition, Mapping) or definition.get("default") is None:
        return None
    return validate_value(definition["default"], definition, name)


class PreparedDefaults:
    """The defaults of a handler's arguments, prepared when the route is registered.

    ``bucket``: every argument's default (the request's default bucket, copied per request);
    ``settled``: those already validated and sanitised (a scalar without a validate or
    sanitise callback), by name: :func:`check_params` and :func:`sanitize_params` skip such
    a value when it is the one the request has.
    """

    __slots__ = ("bucket", "settled")

    def __init__(self, bucket: dict[str, Any], settled: dict[str, Any]) -> None:
        self.bucket = bucket
        self.settled = settled


def prepare_defaults(args: Mapping[str, Any]) -> PreparedDefaults:
    """The :class:`PreparedDefaults` of ``args`` (a default that fails its schema stays as
    given, to be refused per request as before: registration refuses it first)."""
    bucket: dict[str, Any] = {}
    settled: dict[str, Any] = {}
    for name, definition in args.items():
        if not isinstance(definition, Mapping) or "default" not in definition:
            continue
        value = bucket[name] = definition["default"]
        if (
            type(value) not in _SHAREABLE
            or definition.get("validate_callback") is not None
            or definition.get("sanitize_callback") is not None
            or validate_value(value, definition, name) is not None
        ):
            continue
        cleaned = sanitize_value(value, definition, name)
        if type(cleaned) in _SHAREABLE:
            bucket[name] = settled[name] = cleaned
    return PreparedDefaults(bucket, settled)


def apply_defaults(request: Request, args: Mapping[str, Any]) -> None:
    """Put every argument's ``default`` into the request's default bucket."""
    defaults = {
        name: definition["default"]
        for name, definition in args.items()
        if (type(definition) is dict or isinstance(definition, Mapping)) and "default" in definition
    }
    if defaults:
        request.default_params = defaults


def _missing(request: Request, args: Mapping[str, Any]) -> list[str]:
    return [
        name
        for name, definition in args.items()
        if (type(definition) is dict or isinstance(definition, Mapping))
        and definition.get("required") is True
        and request.get_param(name) is None
    ]


def _sent_null(request: Request, name: str) -> bool:
    """Whether the client sent ``name`` as null (a JSON ``null``): validated like any value
    it sends (an ``array`` argument given null is a 400), unlike an argument left out."""
    # The buckets before the query string and the defaults: those hold no JSON null.
    return any(name in bucket and bucket[name] is None for bucket in request.param_buckets()[:-2])


def _error_detail(error: RestError) -> dict[str, Any]:
    return {"code": error.code, "message": error.message, "data": error.data}


async def _validate_one(
    request: Request, name: str, definition: Mapping[str, Any], value: Any
) -> RestError | None:
    error = validate_value(value, definition, name)
    if error is not None:
        return error
    callback = definition.get("validate_callback")
    if callback is None:
        return None
    try:
        outcome = await call_maybe_async(callback, value, request, name)
    except RestError as raised:
        return raised
    if isinstance(outcome, RestError):
        return outcome
    if outcome is False:
        return RestError("rest_invalid_param", "Invalid parameter.", None)
    return None


def _invalid_params(invalid: dict[str, RestError]) -> RestError:
    return RestError(
        "rest_invalid_param",
        "Invalid parameter(s): " + ", ".join(invalid),
        {
            "status": 400,
            "params": {name: error.message for name, error in invalid.items()},
            "details": {name: _error_detail(error) for name, error in invalid.items()},
        },
    )


async def check_params(
    request: Request, args: Mapping[str, Any], settled: Mapping[str, Any] = _NO_DEFAULTS
) -> RestError | None:
    """Required arguments, then the schema keywords and ``validate_callback`` of every
    argument supplied (a JSON ``null`` included), but for a value that is the argument's
    ``settled`` default (:class:`PreparedDefaults`). Returns the first failing stage's error
    (a 400), or None."""
    if not args:
        return None
    missing = _missing(request, args)
    if missing:
        return RestError(
            "rest_missing_callback_param",
            "Missing parameter(s): " + ", ".join(missing),
            {"status": 400, "params": missing},
        )
    params = request.get_params()
    invalid: dict[str, RestError] = {}
    for name, definition in args.items():
        if type(definition) is not dict and not isinstance(definition, Mapping):
            continue
        value = params.get(name)
        if value is None:
            if not _sent_null(request, name):
                continue
        elif settled and value is settled.get(name, _NOTHING):
            continue  # PERF: the default itself, checked at registration
        # PERF: an argument without ``validate_callback`` is checked here, without a
        # coroutine (~0.5 µs an argument).
        error = (
            validate_value(value, definition, name)
            if definition.get("validate_callback") is None
            else await _validate_one(request, name, definition, value)
        )
        if error is not None:
            invalid[name] = error
    return _invalid_params(invalid) if invalid else None


async def _sanitize_one(
    request: Request, name: str, definition: Mapping[str, Any], value: Any
) -> Any:
    callback = definition.get("sanitize_callback")
    if callback is not None:
        try:
            return await call_maybe_async(callback, value, request, name)
        except RestError as raised:
            return raised
    return sanitize_value(value, definition, name)


async def sanitize_params(
    request: Request, args: Mapping[str, Any], settled: Mapping[str, Any] = _NO_DEFAULTS
) -> RestError | None:
    """Run ``sanitize_callback`` (or the schema's type coercion) over every supplied argument
    in every bucket that holds it (the default bucket's ``settled`` values aside: sanitised
    at registration); the sanitised value replaces the original."""
    if not args:
        return None
    invalid: dict[str, RestError] = {}
    buckets = request.param_buckets()
    sent = buckets[:-1] if settled else buckets  # the last bucket holds the defaults
    for name, definition in args.items():
        if type(definition) is not dict and not isinstance(definition, Mapping):
            continue
        for bucket in sent if settled and name in settled else buckets:
            if name not in bucket or bucket[name] is None:
                continue
            result = (
                sanitize_value(bucket[name], definition, name)
                if definition.get("sanitize_callback") is None  # PERF: no coroutine
                else await _sanitize_one(request, name, definition, bucket[name])
            )
            if isinstance(result, RestError):
                invalid[name] = result
                break
            bucket[name] = result
    return _invalid_params(invalid) if invalid else None
