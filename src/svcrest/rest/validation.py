"""Request argument handling: defaults, required, validation and sanitising, with WordPress's
error codes (``rest_missing_callback_param``, ``rest_invalid_param``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.rest.invoke import call_maybe_async
from svcrest.rest.schema import sanitize_value, validate_value

__all__ = ["apply_defaults", "check_params", "sanitize_params"]


# PERF: ``type(x) is dict`` first: an ABC ``isinstance`` check costs ~0.2 µs, and argument
# definitions are dicts (the Mapping check stays for the others).


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


async def check_params(request: Request, args: Mapping[str, Any]) -> RestError | None:
    """Required arguments, then the schema keywords and ``validate_callback`` of every
    argument supplied (a JSON ``null`` included). Returns the first failing stage's error
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
        if params.get(name) is None and not _sent_null(request, name):
            continue
        # PERF: an argument without ``validate_callback`` is checked here, without a
        # coroutine (~0.5 µs an argument).
        error = (
            validate_value(params[name], definition, name)
            if definition.get("validate_callback") is None
            else await _validate_one(request, name, definition, params[name])
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


async def sanitize_params(request: Request, args: Mapping[str, Any]) -> RestError | None:
    """Run ``sanitize_callback`` (or the schema's type coercion) over every supplied argument
    in every bucket that holds it; the sanitised value replaces the original."""
    if not args:
        return None
    invalid: dict[str, RestError] = {}
    buckets = request.param_buckets()
    for name, definition in args.items():
        if type(definition) is not dict and not isinstance(definition, Mapping):
            continue
        for bucket in buckets:
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
