"""``RestError``: one exception that is also a value (``svcrest.http.errors``)."""

from __future__ import annotations

import pytest

from svcrest.http.errors import BodyReadError, RestError
from svcrest.types import JSONLike


@pytest.mark.parametrize(
    ("data", "status"),
    [
        ({"status": 404}, 404),
        ({"status": 100}, 100),
        ({"status": 599}, 599),
        ({"status": 600}, 500),
        ({"status": 99}, 500),
        ({"status": True}, 500),
        ({"status": "404"}, 500),
        ({}, 500),
        (None, 500),
        ([404], 500),
    ],
)
def test_the_status_comes_from_data(data: JSONLike, status: int) -> None:
    assert RestError("c", "m", data).status == status


def test_the_body_shape_and_the_exception() -> None:
    error = RestError("rest_forbidden", "Sorry.", {"status": 403, "extra": [1]})
    assert error.to_dict() == {
        "code": "rest_forbidden",
        "message": "Sorry.",
        "data": {"status": 403, "extra": [1]},
    }
    assert str(error) == "Sorry."
    assert repr(error) == "RestError('rest_forbidden', 'Sorry.', {'status': 403, 'extra': [1]})"
    assert error.headers == ()
    assert RestError("only_code").to_dict() == {"code": "only_code", "message": "", "data": None}


def test_a_body_read_error_carries_its_answer() -> None:
    answer = RestError("svc_body_timeout", "Too slow.", {"status": 408})
    raised = BodyReadError(answer)
    assert raised.error is answer
    assert str(raised) == "Too slow."
