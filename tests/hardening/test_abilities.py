"""Hostile input to an ability's run route (``/svc-abilities/v1/abilities/<name>/run``) on
both adapters: input of the wrong type, missing, extra, huge, nested deep, integers past
what JSON carries, wrong methods and names. Each gets WordPress's code with a 4xx, never a
500. (The ported WordPress cases are in tests/abilities/test_routes.py.)"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from svcrest import App, public
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
RUN = "/svc-json/svc-abilities/v1/abilities/{}/run"


def make_app() -> App:
    app = App()
    app.register_ability_category("t", label="T", description="Tests.")
    app.register_ability(
        "t/shape",
        label="Shape",
        description="An object of a required integer and an optional nested object.",
        category="t",
        input_schema={
            "type": "object",
            "properties": {
                "a": {"type": "integer"},
                "b": {"type": "object", "properties": {"c": {"type": "string"}}},
            },
            "required": ["a"],
            "additionalProperties": False,
        },
        output_schema={"type": "object"},
        execute_callback=lambda given: given,
        permission_callback=public,
        annotations={"readonly": True},
    )
    app.register_ability(
        "t/any",
        label="Any",
        description="Any object.",
        category="t",
        input_schema={"type": "object"},
        output_schema={"type": "object"},
        execute_callback=lambda given: {"keys": len(given)},
        permission_callback=public,
    )
    app.register_ability(
        "t/double",
        label="Double",
        description="Twice an integer.",
        category="t",
        input_schema={"type": "integer"},
        output_schema={"type": "integer"},
        execute_callback=lambda number: number * 2,
        permission_callback=public,
    )
    return app


def nested(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


def not_of_type(name: str, where: str, kind: str) -> tuple[int, str, str]:
    reason = f"{where} is not of type {kind}."
    return 400, "ability_invalid_input", f'Ability "{name}" has invalid input. Reason: {reason}'


INVALID_JSON = (400, "rest_invalid_json", "Invalid JSON body passed.")

POSTED = [
    ("t/any", b'{"input":[1]}', not_of_type("t/any", "input", "object")),
    ("t/any", b'{"input":"s"}', not_of_type("t/any", "input", "object")),
    ("t/any", b'{"input":null}', not_of_type("t/any", "input", "object")),
    ("t/any", b"{}", not_of_type("t/any", "input", "object")),
    ("t/any", b"[]", not_of_type("t/any", "input", "object")),
    ("t/any", b'"input"', not_of_type("t/any", "input", "object")),
    ("t/any", b'{"input":{"a":NaN}}', INVALID_JSON),
    ("t/any", b'{"input":{"a":1e999}}', INVALID_JSON),
    ("t/any", b'{"input":{"a":1}', INVALID_JSON),
    ("t/any", b'{"input":{"x":' + b"[" * 2000 + b"]" * 2000 + b"}}", INVALID_JSON),
    ("t/any", b'{"input":{"a":99999999999999999999999}}', INVALID_JSON),
    ("t/double", b'{"input":1.5}', not_of_type("t/double", "input", "integer")),
    ("t/double", b'{"input":"1x"}', not_of_type("t/double", "input", "integer")),
    ("t/double", b'{"input":true}', not_of_type("t/double", "input", "integer")),
    (
        "t/shape",
        b'{"input":{"a":1}}',
        (405, "rest_ability_invalid_method", "Read-only abilities require GET method."),
    ),
    ("nope/nope", b"{}", (404, "rest_ability_not_found", "Ability not found.")),
    ("t/" + "x" * 5000, b"{}", (404, "rest_ability_not_found", "Ability not found.")),
]


@pytest.mark.parametrize(("name", "body", "expected"), POSTED)
def test_hostile_posted_input_is_refused_with_wordpress_codes(
    client_for: ClientFor, name: str, body: bytes, expected: tuple[int, str, str]
) -> None:
    response = client_for(make_app()).post(
        RUN.format(name), content=body, headers={"Content-Type": "application/json"}
    )
    answer = response.json()
    assert (response.status_code, answer["code"], answer["message"]) == expected
    assert answer["data"]["status"] == expected[0]


QUERIED = [
    ("", not_of_type("t/shape", "input", "object")),
    ("input=" + "x" * 1000, not_of_type("t/shape", "input", "object")),
    ("input[]=1", not_of_type("t/shape", "input", "object")),
    ("input[a]=x", not_of_type("t/shape", "input[a]", "integer")),
    ("input[a][]=1", not_of_type("t/shape", "input[a]", "integer")),
    ("input[a]=1&input[b]=str", not_of_type("t/shape", "input[b]", "object")),
    ("input[a]=1&input[b][c][d]=1", not_of_type("t/shape", "input[b][c]", "string")),
    (
        "input[a]=1&input[z]=1",
        (
            400,
            "ability_invalid_input",
            'Ability "t/shape" has invalid input. Reason: z is not a valid property of Object.',
        ),
    ),
    (
        "input" + "[a]" * 200 + "=1",
        (400, "rest_invalid_query_string", "Invalid query string."),
    ),
]


@pytest.mark.parametrize(("query", "expected"), QUERIED)
def test_hostile_query_input_is_refused_with_wordpress_codes(
    client_for: ClientFor, query: str, expected: tuple[int, str, str]
) -> None:
    response = client_for(make_app()).get(f"{RUN.format('t/shape')}?{query}")
    answer = response.json()
    assert (response.status_code, answer["code"], answer["message"]) == expected


@pytest.mark.parametrize(
    ("body", "keys"),
    [
        (b'{"input":' + nested(300) + b"}", 1),
        (b'{"input":{"x":"' + b"y" * 1_000_000 + b'"}}', 1),
        (b'{"input":{}, "extra": 1}', 0),
        (b'{"input":{"a":1,"a":2}}', 1),
    ],
    ids=["nested-300", "a-megabyte-string", "extra-body-member", "duplicate-key"],
)
def test_large_but_valid_input_runs(client_for: ClientFor, body: bytes, keys: int) -> None:
    response = client_for(make_app()).post(
        RUN.format("t/any"), content=body, headers={"Content-Type": "application/json"}
    )
    assert (response.status_code, response.json()) == (200, {"keys": keys})


def test_the_largest_integers_run(client_for: ClientFor) -> None:
    client = client_for(make_app())
    # Integers are PHP's, 64-bit: the ends of the range, in and out.
    for number in (2**62 - 1, -(2**62)):
        response = client.post(RUN.format("t/double"), json={"input": number})
        assert (response.status_code, response.json()) == (200, number * 2)
    for number in (2**63 - 1, -(2**63)):
        response = client.get(RUN.format("t/shape"), params={"input[a]": str(number)})
        assert (response.status_code, response.json()) == (200, {"a": number})


def test_an_output_past_64_bits_is_the_abilitys_invalid_output(client_for: ClientFor) -> None:
    response = client_for(make_app()).post(RUN.format("t/double"), json={"input": 2**63 - 1})
    reason = (
        "output must be between -9223372036854775808 (inclusive) and 9223372036854775807"
        " (inclusive)"
    )
    assert (response.status_code, response.json()) == (
        500,
        {
            "code": "ability_invalid_output",
            "message": f'Ability "t/double" has invalid output. Reason: {reason}',
            "data": {"status": 500},
        },
    )


@pytest.mark.parametrize("method", ["DELETE", "PUT", "PATCH"])
def test_other_methods_are_refused(client_for: ClientFor, method: str) -> None:
    response = client_for(make_app()).request(method, RUN.format("t/any"))
    answer = response.json()
    assert response.status_code in (404, 405)
    assert answer["data"]["status"] == response.status_code
    assert answer["code"] in ("rest_no_route", "rest_ability_invalid_method")


@pytest.mark.parametrize(
    ("method", "query", "body"),
    [
        ("POST", "", b'{"input":1e20}'),
        ("POST", "", b'{"input":1e308}'),
        ("POST", "", b'{"input":-1e19}'),
        ("POST", "", b'{"input":"99999999999999999999999"}'),
        ("GET", "input[a]=99999999999999999999999", None),
        ("GET", "input[a]=1e20", None),
    ],
    ids=["1e20", "1e308", "-1e19", "string", "query-digits", "query-1e20"],
)
def test_whole_numbers_past_64_bits_are_refused_not_a_500(
    client_for: ClientFor, method: str, query: str, body: bytes | None
) -> None:
    name = "t/double" if method == "POST" else "t/shape"
    response = client_for(make_app()).request(
        method,
        f"{RUN.format(name)}?{query}",
        content=body,
        headers={"Content-Type": "application/json"} if body else {},
    )
    assert response.status_code == 400
    assert response.json()["code"] == "ability_invalid_input"
