"""The WordPress-style conveniences of Request and Response."""

from __future__ import annotations

from svcrest import Request, Response


def test_response_status_and_header_helpers() -> None:
    response = Response({"a": 1})
    response.set_status(201)
    response.header("Link", "<a>")
    response.header("Link", "<b>", replace=False)
    response.header("X-One", "1")
    response.header("x-one", "2")
    assert response.status == 201
    assert response.headers.get_list("link") == ["<a>", "<b>"]
    assert response.headers.get_list("X-One") == ["2"]
    assert (response.is_error(), Response(None, 404).is_error()) == (False, True)


def test_request_json_and_header_helpers() -> None:
    request = Request(
        "POST", "/x", headers={"Content-Type": "application/json"}, raw_body=b"[1, 2]"
    )
    assert request.get_json_params() == [1, 2]
    assert request.json_params == {}  # only a JSON object gives parameters
    request.set_header("X_Custom", "v")
    assert request.get_header("x-custom") == "v"
