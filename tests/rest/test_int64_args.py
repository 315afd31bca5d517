"""An ``integer`` argument past 64 bits, both adapters: from the query, a JSON body or a
form body it is a 400 ``rest_invalid_param`` naming the 64-bit range (as WordPress, whose
integers are PHP's), never a 500 from an answer no JSON carries; the range's ends pass; from
the route's path pattern it is the resource's own not-found, as WordPress answers for an id
no item has."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from svcrest import App, Request, RestError, public
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
ECHO = "/svc-json/t/v1/echo"
ITEMS = "/svc-json/t/v1/items"
RANGE = "must be between -9223372036854775808 (inclusive) and 9223372036854775807 (inclusive)"


def past(name: str) -> dict[str, Any]:
    """WordPress's 400 for argument ``name`` past 64 bits."""
    message = f"{name} {RANGE}"
    return {
        "code": "rest_invalid_param",
        "message": f"Invalid parameter(s): {name}",
        "data": {
            "status": 400,
            "params": {name: message},
            "details": {
                name: {"code": "rest_out_of_bounds", "message": message, "data": {"param": name}}
            },
        },
    }


def make_app() -> App:
    app = App()
    app.register_rest_route(
        "t/v1",
        "/echo",
        {
            "methods": ["GET", "POST"],
            "callback": lambda request: {"n": request["n"]},
            "permission_callback": public,
            "args": {"n": {"type": "integer", "required": True}},
        },
    )

    def item(request: Request) -> Any:
        if request["id"] != 7:
            raise RestError("rest_item_invalid_id", "Invalid item ID.", {"status": 404})
        return {"id": request["id"]}

    app.register_rest_route(
        "t/v1",
        r"/items/(?P<id>\d+)",
        {
            "methods": ["GET", "PUT", "DELETE"],
            "callback": item,
            "permission_callback": public,
            "args": {"id": {"type": "integer", "minimum": 1}},
        },
    )
    return app


@pytest.mark.parametrize(
    "sent",
    ["9223372036854775808", "-9223372036854775809", "1e19", "-1e19", "1e20", "9" * 30],
)
def test_a_query_arg_past_64_bits_is_400(client_for: ClientFor, sent: str) -> None:
    response = client_for(make_app()).get(ECHO, params={"n": sent})
    assert (response.status_code, response.json()) == (400, past("n"))


@pytest.mark.parametrize("sent", [b"9223372036854775808", b"1e19", b"-1e19", b"1e308", b'"1e20"'])
def test_a_json_body_arg_past_64_bits_is_400(client_for: ClientFor, sent: bytes) -> None:
    response = client_for(make_app()).post(
        ECHO, content=b'{"n":' + sent + b"}", headers={"Content-Type": "application/json"}
    )
    assert (response.status_code, response.json()) == (400, past("n"))


def test_a_form_body_arg_past_64_bits_is_400(client_for: ClientFor) -> None:
    response = client_for(make_app()).post(ECHO, data={"n": "100000000000000000000"})
    assert (response.status_code, response.json()) == (400, past("n"))


@pytest.mark.parametrize(
    ("sent", "echoed"),
    [
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
        ("9.2e18", 9200000000000000000),
        ("-9.2e18", -9200000000000000000),
    ],
)
def test_the_ends_of_the_range_are_answered(client_for: ClientFor, sent: str, echoed: int) -> None:
    client = client_for(make_app())
    by_query = client.get(ECHO, params={"n": sent})
    assert (by_query.status_code, by_query.json()) == (200, {"n": echoed})
    by_json = client.post(
        ECHO, content=b'{"n":' + sent.encode() + b"}", headers={"Content-Type": "application/json"}
    )
    assert (by_json.status_code, by_json.json()) == (200, {"n": echoed})


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
@pytest.mark.parametrize("digits", ["9" * 30, "9223372036854775808", "1" + "0" * 19])
def test_a_path_id_past_64_bits_is_the_resources_404(
    client_for: ClientFor, method: str, digits: str
) -> None:
    response = client_for(make_app()).request(method, f"{ITEMS}/{digits}")
    assert (response.status_code, response.json()) == (
        404,
        {"code": "rest_item_invalid_id", "message": "Invalid item ID.", "data": {"status": 404}},
    )


def test_a_path_id_keeps_its_schemas_other_checks(client_for: ClientFor) -> None:
    client = client_for(make_app())
    assert client.get(f"{ITEMS}/7").json() == {"id": 7}
    zero = client.get(f"{ITEMS}/0")
    assert zero.status_code == 400
    assert zero.json()["data"]["params"] == {"id": "id must be greater than or equal to 1"}


def test_an_internal_request_past_64_bits_is_400() -> None:
    app = make_app()
    response = app.rest_do_request(Request("GET", "/t/v1/echo", query={"n": 2**63}))
    assert (response.status, response.data) == (400, past("n"))
    inside = app.rest_do_request(Request("GET", "/t/v1/echo", query={"n": 2**63 - 1}))
    assert (inside.status, inside.data) == (200, {"n": 2**63 - 1})
