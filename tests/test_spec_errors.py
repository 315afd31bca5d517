"""Spec section 7, the error table, row by row (details are tested where each feature is)."""

from __future__ import annotations

import pytest

from svcrest import (
    App,
    DoingItWrong,
    Request,
    RestError,
    public,
    rest_get_date_with_gmt,
    rest_parse_date,
)


def test_invalid_nonce_row() -> None:
    app = App(secret_key="k")
    app.register_rest_route(
        "demo/v1", "/x", {"permission_callback": public, "callback": lambda r: "x"}
    )
    import httpx

    with httpx.Client(transport=httpx.WSGITransport(app=app.wsgi), base_url=app.home) as client:
        response = client.get("/svc-json/demo/v1/x", headers={"X-SVC-Nonce": "forged"})
    assert response.status_code == 403
    assert response.json() == {
        "code": "rest_cookie_invalid_nonce",
        "message": "Cookie nonce is invalid",
        "data": {"status": 403},
    }


@pytest.mark.parametrize(("namespace", "route"), [("", "/x"), ("demo/v1", "")])
def test_registration_rows(namespace: str, route: str) -> None:
    with pytest.warns(DoingItWrong):
        assert (
            App().register_rest_route(
                namespace, route, {"permission_callback": public, "callback": lambda r: 1}
            )
            is False
        )


@pytest.mark.parametrize("date", ["2017-01-16", "2017-01-16T11:30", "garbage", ""])
def test_date_parse_row(date: str) -> None:
    assert rest_parse_date(date) is False


@pytest.mark.parametrize("date", ["garbage", "1970-01-01T00:00:00Z"], ids=["fails", "empty"])
def test_date_with_gmt_row(date: str) -> None:
    assert rest_get_date_with_gmt(date) is None


def test_options_without_match_row() -> None:
    response = App().rest_do_request(Request("OPTIONS", "/nothing/here"))
    assert (response.status, response.data) == (200, [])


def test_handler_error_object_row() -> None:
    app = App()
    error = RestError("passed_through", "As it was.", {"status": 422, "extra": [1]})
    app.register_rest_route(
        "demo/v1", "/e", {"permission_callback": public, "callback": lambda r: error}
    )
    response = app.rest_do_request("/demo/v1/e")
    assert response.status == 422
    assert response.data == {
        "code": "passed_through",
        "message": "As it was.",
        "data": {"status": 422, "extra": [1]},
    }
