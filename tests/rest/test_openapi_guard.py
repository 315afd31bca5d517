"""What the OpenAPI document says of ``idempotency`` and ``rate_limit``
(``svcrest.rest.openapi_guard``)."""

from __future__ import annotations

from typing import Any

import pytest

from svcrest.rest.openapi_guard import document_guard

ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}


def operation() -> dict[str, Any]:
    return {"responses": {"201": {"description": "Created."}}}


def test_a_route_without_options_is_left_as_it_is() -> None:
    documented = operation()
    document_guard(documented, {}, "POST")
    assert documented == operation()


@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS"])
def test_idempotency_keys_are_for_writes_only(method: str) -> None:
    documented = operation()
    document_guard(documented, {"idempotency": "required"}, method)
    assert documented == operation()


def test_a_required_key() -> None:
    documented = operation()
    document_guard(documented, {"idempotency": "required"}, "POST")
    [parameter] = documented["parameters"]
    assert (parameter["name"], parameter["in"], parameter["required"]) == (
        "Idempotency-Key",
        "header",
        True,
    )
    assert parameter["schema"] == {"type": "string", "minLength": 1, "maxLength": 257}
    responses = documented["responses"]
    assert sorted(responses) == ["201", "400", "409", "422"]
    assert list(responses["201"]["headers"]) == ["Idempotent-Replayed"]
    assert responses["409"] == {
        "description": "A request with this Idempotency-Key is still running.",
        "content": ERROR,
    }
    assert responses["422"]["description"] == "This Idempotency-Key was used for another request."


def test_an_optional_key_keeps_an_existing_400() -> None:
    documented = operation()
    documented["responses"]["400"] = {"description": "Bad."}
    document_guard(documented, {"idempotency": "optional"}, "DELETE")
    assert documented["parameters"][0]["required"] is False
    assert documented["responses"]["400"] == {"description": "Bad."}


def test_a_rate_limit() -> None:
    documented = operation()
    document_guard(documented, {"rate_limit": {"limit": 10, "window": 60}}, "GET")
    responses = documented["responses"]
    assert list(responses["201"]["headers"]) == ["RateLimit-Policy", "RateLimit"]
    assert responses["429"]["description"] == "Too many requests (10 requests per 60 s)."
    assert list(responses["429"]["headers"]) == ["Retry-After", "RateLimit-Policy", "RateLimit"]
    assert responses["429"]["headers"]["Retry-After"]["schema"] == {"type": "integer"}
    assert "parameters" not in documented


def test_the_shared_header_objects_are_copied_per_operation() -> None:
    first, second = operation(), operation()
    document_guard(first, {"rate_limit": {"limit": 1, "window": 1}}, "GET")
    document_guard(second, {"rate_limit": {"limit": 1, "window": 1}}, "GET")
    first["responses"]["201"]["headers"]["RateLimit"]["description"] = "changed"
    assert second["responses"]["201"]["headers"]["RateLimit"]["description"] != "changed"
