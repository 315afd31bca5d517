"""Request arguments checked and sanitised (``svcrest.rest.validation``), with WordPress's
``rest_missing_callback_param`` and ``rest_invalid_param``."""

from __future__ import annotations

import asyncio
from typing import Any

from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.rest.validation import apply_defaults, check_params, sanitize_params

ARGS: dict[str, Any] = {
    "page": {"type": "integer", "default": 1, "minimum": 1},
    "title": {"type": "string", "required": True},
    "tags": {"type": "array", "items": {"type": "string"}},
    "note": "not a definition",
}


def checked(request: Request, args: dict[str, Any] = ARGS) -> dict[str, Any] | None:
    error = asyncio.run(check_params(request, args))
    return None if error is None else error.to_dict()


def test_defaults_go_to_the_default_bucket() -> None:
    request = Request("GET", "/x", query={"page": "3"})
    apply_defaults(request, ARGS)
    assert request.default_params == {"page": 1}
    assert request.get_param("page") == "3"  # what the client sent wins
    empty = Request("GET", "/x")
    apply_defaults(empty, {"title": {"type": "string"}})
    assert empty.default_params == {}


def test_missing_required_arguments() -> None:
    assert checked(Request("GET", "/x")) == {
        "code": "rest_missing_callback_param",
        "message": "Missing parameter(s): title",
        "data": {"status": 400, "params": ["title"]},
    }


def test_invalid_arguments_are_listed_with_their_details() -> None:
    request = Request("GET", "/x", query={"title": "T", "page": "0", "tags": ["x", 1]})
    assert checked(request) == {
        "code": "rest_invalid_param",
        "message": "Invalid parameter(s): page, tags",
        "data": {
            "status": 400,
            "params": {
                "page": "page must be greater than or equal to 1",
                "tags": "tags[1] is not of type string.",
            },
            "details": {
                "page": {
                    "code": "rest_out_of_bounds",
                    "message": "page must be greater than or equal to 1",
                    "data": {"param": "page"},
                },
                "tags": {
                    "code": "rest_invalid_type",
                    "message": "tags[1] is not of type string.",
                    "data": {"param": "tags[1]"},
                },
            },
        },
    }


def test_a_json_null_is_checked_and_an_absent_argument_is_not() -> None:
    sent_null = Request("POST", "/x", json={"title": "T", "tags": None})
    assert checked(sent_null) is not None
    assert checked(sent_null)["data"]["params"] == {"tags": "tags is not of type array."}  # type: ignore[index]
    assert checked(Request("POST", "/x", json={"title": "T"})) is None
    assert asyncio.run(check_params(Request("GET", "/x"), {})) is None


def test_validate_callbacks() -> None:
    def refuse(value: Any, request: Request, name: str) -> Any:
        return False if value == "no" else RestError("custom", f"{name} is bad.")

    args = {"a": {"validate_callback": refuse}}
    assert checked(Request("GET", "/x", query={"a": "no"}), args) == {
        "code": "rest_invalid_param",
        "message": "Invalid parameter(s): a",
        "data": {
            "status": 400,
            "params": {"a": "Invalid parameter."},
            "details": {
                "a": {"code": "rest_invalid_param", "message": "Invalid parameter.", "data": None}
            },
        },
    }
    bad = checked(Request("GET", "/x", query={"a": "x"}), args)
    assert bad is not None
    assert bad["data"]["params"] == {"a": "a is bad."}


def test_sanitising_replaces_the_value_in_every_bucket() -> None:
    request = Request("POST", "/x", query={"page": "2"}, body={"page": "5", "title": "T"})
    assert asyncio.run(sanitize_params(request, ARGS)) is None
    assert (request.body_params["page"], request.query_params["page"]) == (5, 2)

    async def shout(value: Any, request: Request, name: str) -> Any:
        return str(value).upper()

    request = Request("GET", "/x", query={"title": "t"})
    assert asyncio.run(sanitize_params(request, {"title": {"sanitize_callback": shout}})) is None
    assert request.get_param("title") == "T"


def test_a_sanitize_callback_may_refuse() -> None:
    def refuse(value: Any) -> Any:
        raise RestError("nope", "Not this.", {"status": 400})

    request = Request("GET", "/x", query={"title": "t"})
    error = asyncio.run(sanitize_params(request, {"title": {"sanitize_callback": refuse}}))
    assert error is not None
    assert error.to_dict()["data"]["params"] == {"title": "Not this."}
