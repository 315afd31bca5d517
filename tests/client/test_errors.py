"""The client proxy's error (``svcrest.client.errors``) made from an error answer's body."""

from __future__ import annotations

from typing import Any

import pytest

from svcrest.client.errors import ProxyError, error_from_body


@pytest.mark.parametrize(
    ("body", "code", "message", "data"),
    [
        (
            {"code": "rest_forbidden", "message": "Sorry.", "data": {"status": 403}},
            "rest_forbidden",
            "Sorry.",
            {"status": 403},
        ),
        ({"code": "x", "message": 5}, "x", "Forbidden", None),
        ({"code": 5, "message": "m"}, "http_error", "Forbidden", None),
        (["code"], "http_error", "Forbidden", None),
        (None, "http_error", "Forbidden", None),
    ],
    ids=["wordpress-shape", "message-not-text", "code-not-text", "list", "no-body"],
)
def test_error_from_body(body: Any, code: str, message: str, data: Any) -> None:
    error = error_from_body(body, 403, "Forbidden")
    assert (error.code, error.message, error.status, error.data) == (code, message, 403, data)


def test_how_the_error_shows() -> None:
    error = ProxyError("rest_no_route", "No route.", 404, {"status": 404})
    assert str(error) == "404 rest_no_route: No route."
    assert repr(error) == "ProxyError('rest_no_route', 'No route.', 404)"
    assert error.args == ("rest_no_route", "No route.", 404)
