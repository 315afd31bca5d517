"""What the OpenAPI document says of the route options ``idempotency`` and ``rate_limit``
(``svcrest.rest.guard``): the ``Idempotency-Key`` header parameter, the RateLimit headers of
every answer, and the 409, 422 and 429 answers."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from svcrest.rest.guard import IDEMPOTENCY_MODES, MAX_KEY_LENGTH, rate_limit_of

__all__ = ["document_guard"]

_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_STRING = {"schema": {"type": "string"}}
_RATE_HEADERS: dict[str, Any] = {
    "RateLimit-Policy": {
        **_STRING,
        "description": 'The quota policy, e.g. `"default";q=10;w=60` (IETF '
        "draft-ietf-httpapi-ratelimit-headers).",
    },
    "RateLimit": {
        **_STRING,
        "description": 'What is left of the quota, e.g. `"default";r=3;t=42`: r requests for'
        " t more seconds.",
    },
}
_REPLAYED = {
    "Idempotent-Replayed": {
        "schema": {"type": "string", "enum": ["true"]},
        "description": "Present on a replay: the stored answer of an earlier request with"
        " the same Idempotency-Key; nothing ran.",
    }
}


def _error(description: str, headers: Mapping[str, Any] | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    if headers:
        answer["headers"] = copy.deepcopy(dict(headers))
    return answer


def document_guard(operation: dict[str, Any], options: Mapping[str, Any], method: str) -> None:
    """Add to ``operation`` (of ``method`` on a route with ``options``) the parameter,
    headers and answers of its idempotency mode and rate limit."""
    mode = options.get("idempotency")
    limited = options.get("rate_limit") is not None
    keyed = mode in IDEMPOTENCY_MODES and method in _WRITES
    if not keyed and not limited:
        return
    responses: dict[str, Any] = operation["responses"]
    success = next((value for status, value in responses.items() if status.startswith("2")), None)
    if keyed:
        operation.setdefault("parameters", []).append(
            {
                "name": "Idempotency-Key",
                "in": "header",
                "required": mode == "required",
                "description": "A unique key of this write (a UUID): a retry with the same"
                " key gets the first answer again instead of running twice (IETF"
                " draft-ietf-httpapi-idempotency-key-header). Kept 24 hours.",
                "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH + 2},
            }
        )
        if success is not None:
            success.setdefault("headers", {}).update(copy.deepcopy(_REPLAYED))
        responses.setdefault(
            "400",
            _error("Missing or invalid parameters, or a missing or invalid Idempotency-Key."),
        )
        responses["409"] = _error("A request with this Idempotency-Key is still running.")
        responses["422"] = _error("This Idempotency-Key was used for another request.")
    if limited:
        limit = rate_limit_of(options.get("rate_limit"))
        if success is not None:
            success.setdefault("headers", {}).update(copy.deepcopy(_RATE_HEADERS))
        retry = {
            "Retry-After": {
                "schema": {"type": "integer"},
                "description": "Seconds until the quota is renewed.",
            },
            **_RATE_HEADERS,
        }
        window = f"{limit.limit} requests per {limit.window} s" if limit else "the quota"
        responses["429"] = _error(f"Too many requests ({window}).", retry)
