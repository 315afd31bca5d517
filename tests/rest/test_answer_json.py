"""What an answer may hold besides JSON values, byte for byte on the wire (both adapters),
and the one log line and 500 of anything else."""

from __future__ import annotations

import dataclasses
import enum
import logging
import uuid
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import orjson
import pytest

from svcrest import App, Request, Response, public
from svcrest.http.answer_json import (
    ANSWER_TYPES,
    UnencodableValue,
    dumps_answer,
    encode_default,
    unencodable_reason,
)
from tests.conftest import SiteClient

HOME = "http://answers.test"
ClientFor = Callable[[App], SiteClient]


class Colour(enum.Enum):
    RED = "red"
    PRICE = Decimal("2.50")


class Size(enum.IntEnum):
    LARGE = 3


@dataclasses.dataclass
class Book:
    title: str
    price: Decimal
    tags: frozenset[str]
    colour: Colour


@dataclasses.dataclass(frozen=True, slots=True)
class Point:
    x: int
    when: date


UTC_PLUS_2 = timezone(timedelta(hours=2))

#: (id, answer, exact body)
SUPPORTED: list[tuple[str, Any, bytes]] = [
    ("decimal", Decimal("19.90"), b"19.90"),
    ("decimal-negative-zero", Decimal("-0.00"), b"-0.00"),
    ("decimal-exponent", Decimal("1.5E+30"), b"1.5E+30"),
    ("decimal-small", Decimal("0.0000001"), b"1E-7"),
    (
        "decimal-many-digits",
        Decimal("12345678901234567890.123456789"),
        b"12345678901234567890.123456789",
    ),
    ("decimal-in-object", {"price": Decimal("3.10"), "n": 1}, b'{"price":3.10,"n":1}'),
    ("set", {3, 1, 2}, b"[1,2,3]"),
    ("frozenset", frozenset({"b", "c", "a"}), b'["a","b","c"]'),
    ("empty-set", set(), b"[]"),
    ("set-of-decimals", {Decimal("2.0"), Decimal("1.50")}, b"[1.50,2.0]"),
    (
        "uuid",
        uuid.UUID("12345678-1234-5678-1234-567812345678"),
        b'"12345678-1234-5678-1234-567812345678"',
    ),
    (
        "datetime-utc",
        datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC),
        b'"2024-05-06T07:08:09+00:00"',
    ),
    (
        "datetime-offset-fraction",
        datetime(2024, 5, 6, 7, 8, 9, 120000, tzinfo=UTC_PLUS_2),
        b'"2024-05-06T07:08:09.120000+02:00"',
    ),
    ("datetime-naive", datetime(2024, 5, 6, 7, 8, 9), b'"2024-05-06T07:08:09"'),
    ("date", date(2024, 2, 29), b'"2024-02-29"'),
    ("enum", Colour.RED, b'"red"'),
    ("enum-decimal-value", Colour.PRICE, b"2.50"),
    ("int-enum", Size.LARGE, b"3"),
    (
        "dataclass",
        Book("Dune", Decimal("9.99"), frozenset({"sf", "classic"}), Colour.RED),
        b'{"title":"Dune","price":9.99,"tags":["classic","sf"],"colour":"red"}',
    ),
    ("slots-dataclass", Point(1, date(2000, 1, 1)), b'{"x":1,"when":"2000-01-01"}'),
    (
        "list-of-dataclasses",
        [Point(1, date(2000, 1, 1)), Point(2, date(2000, 1, 2))],
        b'[{"x":1,"when":"2000-01-01"},{"x":2,"when":"2000-01-02"}]',
    ),
    ("tuple", (1, "a"), b'[1,"a"]'),
]

#: (id, answer, the type named in the log line)
UNSUPPORTED: list[tuple[str, Any, str]] = [
    ("bytes", b"raw", "a value of type bytes"),
    ("bytes-nested", {"data": [1, b"x"]}, "a value of type bytes"),
    ("object", object(), "a value of type object"),
    ("bytearray-nested", {"a": bytearray(b"x")}, "a value of type bytearray"),
    ("complex", 1j, "a value of type complex"),
    ("timedelta", timedelta(seconds=1), "a value of type datetime.timedelta"),
    ("decimal-nan", Decimal("NaN"), "a Decimal that is not a finite number (NaN)"),
    ("decimal-infinity", Decimal("-Infinity"), "a Decimal that is not a finite number"),
]

INTERNAL_ERROR = (
    b'{"code":"rest_internal_error","message":"Internal server error.","data":{"status":500}}'
)


def _app(answer: Any) -> App:
    app = App(HOME)
    app.register_rest_route(
        "test/v1",
        r"/answer/(?P<id>\d+)",
        {"permission_callback": public, "callback": lambda request: answer},
    )
    app.register_rest_route(
        "test/v1",
        "/wrapped",
        {"permission_callback": public, "callback": lambda request: Response(answer, 201)},
    )
    return app


@pytest.mark.parametrize(
    ("answer", "body"), [case[1:] for case in SUPPORTED], ids=[case[0] for case in SUPPORTED]
)
def test_supported_answers_on_the_wire(client_for: ClientFor, answer: Any, body: bytes) -> None:
    client = client_for(_app(answer))
    response = client.get("/svc-json/test/v1/answer/1")
    assert (response.status_code, response.content) == (200, body)
    assert response.headers["content-type"] == "application/json; charset=UTF-8"
    wrapped = client.get("/svc-json/test/v1/wrapped")
    assert (wrapped.status_code, wrapped.content) == (201, body)
    enveloped = client.get("/svc-json/test/v1/answer/1?_envelope")
    assert enveloped.content == b'{"body":' + body + b',"status":200,"headers":{"Allow":"GET"}}'


@pytest.mark.parametrize(
    ("answer", "reason"), [case[1:] for case in UNSUPPORTED], ids=[case[0] for case in UNSUPPORTED]
)
def test_anything_else_is_one_log_line_and_a_500(
    client_for: ClientFor, caplog: pytest.LogCaptureFixture, answer: Any, reason: str
) -> None:
    client = client_for(_app(answer))
    with caplog.at_level(logging.DEBUG, logger="svcrest"):
        response = client.get("/svc-json/test/v1/answer/42")
    assert (response.status_code, response.content) == (500, INTERNAL_ERROR)
    assert response.headers["content-type"] == "application/json; charset=UTF-8"
    assert response.headers["cache-control"] == "no-store"
    records = [record for record in caplog.records if record.name == "svcrest"]
    assert len(records) == 1
    (record,) = records
    assert record.levelno == logging.ERROR
    assert record.exc_info is None
    message = record.getMessage()
    assert "\n" not in message
    assert message.startswith(
        r"The answer of GET /test/v1/answer/42 (route /test/v1/answer/(?P<id>\d+)) cannot be "
        f"sent as JSON: it holds {reason}"
    )
    assert message.endswith(f"(answers may hold JSON values, {ANSWER_TYPES}); answered 500")


def test_an_integer_past_64_bits_names_orjsons_reason(
    client_for: ClientFor, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="svcrest"):
        response = client_for(_app({"n": 2**64})).get("/svc-json/test/v1/wrapped")
    assert (response.status_code, response.content) == (500, INTERNAL_ERROR)
    assert [record.getMessage() for record in caplog.records] == [
        "The answer of GET /test/v1/wrapped (route /test/v1/wrapped) cannot be sent as JSON: "
        "Integer exceeds 64-bit range; answered 500"
    ]


def test_the_log_line_stays_one_line_whatever_the_path(
    client_for: ClientFor, caplog: pytest.LogCaptureFixture
) -> None:
    app = App(HOME)
    app.register_rest_route(
        "test/v1",
        r"/any/(?P<name>[\s\S]+)",
        {"permission_callback": public, "callback": lambda r: b""},
    )
    with caplog.at_level(logging.ERROR, logger="svcrest"):
        response = client_for(app).get("/svc-json/test/v1/any/a%0AFAKE%20LINE%1B")
    assert response.status_code == 500
    assert [record.getMessage().split(" cannot")[0] for record in caplog.records] == [
        r"The answer of GET /test/v1/any/a\nFAKE LINE\x1b (route /test/v1/any/(?P<name>[\s\S]+))"
    ]


def test_head_of_an_unencodable_answer_is_a_500_without_body(client_for: ClientFor) -> None:
    response = client_for(_app(b"raw")).request("HEAD", "/svc-json/test/v1/answer/1")
    assert (response.status_code, response.content) == (500, b"")


def test_embedded_answers_are_encoded_too(client_for: ClientFor) -> None:
    app = _app(Decimal("1.10"))

    def linking(request: Request) -> Response:
        response = Response({"total": {Decimal("0.5")}})
        response.add_link("price", f"{HOME}/svc-json/test/v1/answer/1", embeddable=True)
        return response

    app.register_rest_route(
        "test/v1", "/linking", {"permission_callback": public, "callback": linking}
    )
    response = client_for(app).get("/svc-json/test/v1/linking?_embed")
    assert response.content == (
        b'{"total":[0.5],"_links":{"price":[{"href":"http://answers.test/svc-json/test/v1/'
        b'answer/1","embeddable":true}]},"_embedded":{"price":[1.10]}}'
    )


def test_batch_answers_are_encoded_too(
    client_for: ClientFor, caplog: pytest.LogCaptureFixture
) -> None:
    app = App(HOME)
    values: dict[str, Any] = {"price": Decimal("4.20"), "raw": b"x"}
    app.register_rest_route(
        "test/v1",
        r"/value/(?P<name>\w+)",
        {
            "permission_callback": public,
            "methods": "POST",
            "allow_batch": {"v1": True},
            "callback": lambda request: values[request["name"]],
        },
    )
    client = client_for(app)
    batch = {"requests": [{"path": "/test/v1/value/price"}]}
    response = client.post("/svc-json/batch/v1", json=batch)
    assert response.status_code == 207
    assert response.content == (
        b'{"responses":[{"body":4.20,"status":200,"headers":{"Allow":"POST"}}]}'
    )
    with caplog.at_level(logging.ERROR, logger="svcrest"):
        refused = client.post(
            "/svc-json/batch/v1", json={"requests": [{"path": "/test/v1/value/raw"}]}
        )
    assert (refused.status_code, refused.content) == (500, INTERNAL_ERROR)
    assert [record.getMessage().split(":")[0] for record in caplog.records] == [
        "The answer of POST /batch/v1 (route /batch/v1) cannot be sent as JSON"
    ]


def test_rest_do_request_keeps_the_python_values() -> None:
    book = Book("Dune", Decimal("9.99"), frozenset({"sf"}), Colour.RED)
    app = _app(book)
    assert app.rest_do_request("/test/v1/answer/1").data is book
    assert app.rest_do_request("/test/v1/wrapped").data is book
    unencodable = _app(b"raw").rest_do_request("/test/v1/answer/1")
    assert (unencodable.status, unencodable.data) == (200, b"raw")


# -- the encoder alone ------------------------------------------------------------------------


def test_encode_default_refuses_what_it_does_not_know() -> None:
    assert encode_default({2, 1}) == [1, 2]
    assert isinstance(encode_default(Decimal("1")), orjson.Fragment)
    with pytest.raises(UnencodableValue) as caught:
        encode_default(b"x")
    assert caught.value.reason == "a value of type bytes"
    with pytest.raises(orjson.JSONEncodeError) as failed:
        dumps_answer([Decimal("sNaN")])
    assert unencodable_reason(failed.value) == (
        f"it holds a Decimal that is not a finite number (sNaN) (answers may hold JSON values, "
        f"{ANSWER_TYPES})"
    )


def test_sets_that_cannot_be_sorted_keep_their_items() -> None:
    assert sorted(orjson.loads(dumps_answer({1, "a"})), key=str) == [1, "a"]


def test_non_string_keys_as_before() -> None:
    assert dumps_answer({1: Decimal("2.0")}) == b'{"1":2.0}'


# -- ``svcrest request`` prints the digits served ----------------------------------------------


def register_prices(app: App) -> None:
    """A plugin (``tests.rest.test_answer_json:register_prices``) answering Decimals."""
    app.register_rest_route(
        "prices/v1",
        "/price",
        {
            "permission_callback": public,
            "callback": lambda request: {"price": Decimal("19.90"), "tags": {"b", "a"}, "n": 3},
        },
    )


def test_svcrest_request_prints_the_digits_served(
    capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    from svcrest.cli import main

    db = str(tmp_path / "site.db")
    App(store=db).store.close()
    plugin = "tests.rest.test_answer_json:register_prices"
    status = main(["request", "GET", "/prices/v1/price", "--plugin", plugin, "--db", db])
    assert status == 0
    assert capsys.readouterr().out == (
        '200 OK\n{\n  "price": 19.90,\n  "tags": [\n    "a",\n    "b"\n  ],\n  "n": 3\n}\n'
    )
