"""Strict JSON bodies."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from svcrest import App, Request
from svcrest.http import jsonbody
from svcrest.http.errors import RestError
from svcrest.http.jsonbody import (
    MAX_JSON_DEPTH,
    MAX_JSON_STRUCTURES,
    MAX_LONG_NUMBERS,
    decode_json_body,
    is_json_content_type,
)
from tests.conftest import SiteClient


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"a": 1}', {"a": 1}),
        (b"[1, 2]", [1, 2]),
        (b"  ", None),
        (b"9223372036854775807", 9223372036854775807),
        (b"18446744073709551615", 18446744073709551615),
        (b'{"s": "12345678901234567890123"}', {"s": "12345678901234567890123"}),
    ],
    ids=["object", "array", "blank", "int64-max", "uint64-max", "digits-in-string"],
)
def test_valid(raw: bytes, expected: Any) -> None:
    assert decode_json_body(raw) == expected


def test_nesting_at_the_limit_is_accepted() -> None:
    value = decode_json_body(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH)
    depth = 0
    while isinstance(value, list):
        depth += 1
        value = value[0] if value else None
    assert depth == MAX_JSON_DEPTH


@pytest.mark.parametrize(
    "raw",
    [
        b"{",
        b"NaN",
        b"[Infinity]",
        b"[1e400]",
        b"\xff\xfe",
        b'{"a":1} x',
        b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1),
        b"123456789012345678901234567890",
        b'{"n": -9223372036854775809}',
    ],
    ids=[
        "truncated",
        "nan",
        "infinity",
        "overflow-float",
        "invalid-utf8",
        "trailing-data",
        "too-deep",
        "huge-int",
        "int64-underflow",
    ],
)
def test_invalid_is_rest_invalid_json(raw: bytes) -> None:
    with pytest.raises(RestError) as caught:
        decode_json_body(raw)
    assert caught.value.code == "rest_invalid_json"
    assert caught.value.status == 400
    assert caught.value.message == "Invalid JSON body passed."


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("application/json", True),
        ("Application/JSON; charset=utf-8", True),
        ("application/merge-patch+json", True),
        ("text/json", False),
        ("application/x-www-form-urlencoded", False),
        ("", False),
    ],
)
def test_is_json_content_type(content_type: str, expected: bool) -> None:
    assert is_json_content_type(content_type) is expected


# -- the checks' decisions on big and tricky bodies (issue 18: linear, cheap checks) ---------

_TOO_DEEP = {
    "code": "rest_invalid_json",
    "message": "Invalid JSON body passed.",
    "data": {"status": 400, "json_error_message": "Nesting deeper than 512 levels."},
}
_LOSSY = {
    "code": "rest_invalid_json",
    "message": "Invalid JSON body passed.",
    "data": {"status": 400, "json_error_message": "Integer outside the 64-bit range."},
}
_MIB = 1024 * 1024


def _message(raw: bytes) -> str:
    with pytest.raises(RestError) as caught:
        decode_json_body(raw)
    assert caught.value.code == "rest_invalid_json"
    assert caught.value.status == 400
    data = caught.value.data
    assert isinstance(data, dict)
    return str(data["json_error_message"])


def _nested(depth: int, inner: bytes) -> bytes:
    return b"[" * (depth - 1) + inner + b"]" * (depth - 1)


def _ints(size: int) -> bytes:
    count = size // 8
    return b"[" + b",".join([b"1234567"] * count) + b"]"


def test_ten_mib_of_integers_at_depth_500_is_accepted() -> None:
    value = decode_json_body(_nested(500, _ints(10 * _MIB - 2000)))
    for _ in range(499):
        assert isinstance(value, list) and len(value) == 1
        value = value[0]
    assert isinstance(value, list)
    assert len(value) == (10 * _MIB - 2000) // 8
    assert set(value) == {1234567}


@pytest.mark.parametrize(
    "raw",
    [
        _nested(513, b"[]"),
        b'{"a":' * 513 + b"1" + b"}" * 513,
        b'{"a":[' * 256 + b'{"b":1}' + b"]}" * 256,
        _nested(514, b"1") + b" ",
        _nested(600, _ints(_MIB)),
        _nested(1024, b"[]"),
    ],
    ids=[
        "arrays-513",
        "objects-513",
        "mixed-513",
        "scalar-in-513-arrays",
        "wide-600",
        "orjson-limit",
    ],
)
def test_nesting_deeper_than_512_is_refused(raw: bytes) -> None:
    assert _message(raw) == "Nesting deeper than 512 levels."


@pytest.mark.parametrize(
    "raw",
    [
        _nested(512, b"[]"),
        b'{"a":' * 511 + b"[1]" + b"}" * 511,
        b'["' + b"[" * 600 + b'"]',
        b'"' + b"{" * 600 + b'"',
    ],
    ids=["arrays-512", "objects-512", "brackets-in-a-string", "braces-in-a-string"],
)
def test_nesting_of_512_or_brackets_in_strings_are_accepted(raw: bytes) -> None:
    assert decode_json_body(raw) == orjson.loads(raw)


def test_a_discarded_duplicate_key_still_counts_for_nesting() -> None:
    # The depth is that of the text, as PHP's json_decode counts it, even when a later
    # duplicate key replaces the deep value.
    raw = b'{"a":' + _nested(513, b"[]") + b',"a":1}'
    assert orjson.loads(raw) == {"a": 1}
    assert _message(raw) == "Nesting deeper than 512 levels."


@pytest.mark.parametrize(
    "raw",
    [b"1],[2", b"[1]],[[2]", b"1,2", b"]", b"[1]]", b"[[1]"],
    ids=["closes-and-opens", "closes-two", "two-values", "lone-close", "extra-close", "unclosed"],
)
def test_a_body_that_is_not_one_value_is_refused_with_orjsons_message(raw: bytes) -> None:
    with pytest.raises(orjson.JSONDecodeError) as expected:
        orjson.loads(raw)
    assert _message(raw) == str(expected.value)


@pytest.mark.parametrize(
    "raw",
    [
        b"18446744073709551616",
        b" \n-9223372036854775809\t",
        b"[1,18446744073709551616]",
        b'{"a":\r\n 99999999999999999999}',
        b'{"a": [0, -10000000000000000000]}',
        b"[123456789012345678901234567890]",
        b'["123456789012345678901234567890", 18446744073709551616]',
        b"[" + b"7," * 100_000 + b"-9223372036854775809]",
    ],
    ids=[
        "uint64-max+1",
        "int64-min-1",
        "in-array",
        "after-colon-and-newline",
        "negative-20-digits",
        "30-digits",
        "after-a-digit-string",
        "last-of-many",
    ],
)
def test_lossy_integers_are_refused(raw: bytes) -> None:
    assert _message(raw) == "Integer outside the 64-bit range."


@pytest.mark.parametrize(
    "raw",
    [
        b"[18446744073709551615, -9223372036854775808, 9999999999999999999]",
        b"[18446744073709551616.0, 18446744073709551616e0, 1844674407370955161600E-2]",
        b'["18446744073709551616", "x 18446744073709551616", "[18446744073709551616"]',
        b'{"18446744073709551616": ":18446744073709551616,"}',
        b'["\\"18446744073709551616", "\\\\\\" -99999999999999999999"]',
        b'["\\u0031\\u00318446744073709551616"]',
    ],
    ids=["in-range", "floats", "in-strings", "in-keys", "after-escapes", "unicode-escapes"],
)
def test_exact_numbers_and_digits_in_strings_are_accepted(raw: bytes) -> None:
    assert decode_json_body(raw) == orjson.loads(raw)


_INT_EDGES = st.sampled_from(
    [2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**19, -(10**19), 10**25]
)
_JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | _INT_EDGES
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from('0123456789-[]{},:" \\\nx'))
    | _INT_EDGES.map(str)
)
_JSON_VALUES = st.recursive(
    _JSON_SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=20,
)


def _reference_decision(value: Any, depth: int) -> str | None:
    """The refusal the checks must give for ``value`` inside ``depth`` arrays, walking the
    exact value Python's json module read."""
    nesting = depth
    lossy = False
    stack: list[tuple[Any, int]] = [(value, depth)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            nesting = max(nesting, level + 1)
            stack.extend((child, level + 1) for child in _children(node))
        elif isinstance(node, int) and not isinstance(node, bool):
            lossy = lossy or not -(2**63) <= node <= 2**64 - 1
    if nesting > MAX_JSON_DEPTH:
        return "Nesting deeper than 512 levels."
    return "Integer outside the 64-bit range." if lossy else None


def _children(node: dict[str, Any] | list[Any]) -> list[Any]:
    return list(node.values()) if isinstance(node, dict) else node


@settings(max_examples=300, deadline=None)
@given(
    value=_JSON_VALUES,
    depth=st.sampled_from([0, 1, 505, 508, 510, 511, 512, 513]),
    indent=st.sampled_from([None, 1]),
)
def test_decisions_match_a_walk_of_the_exact_value(
    value: Any, depth: int, indent: int | None
) -> None:
    text = json.dumps(value, indent=indent)
    raw = ("[" * depth + text + "]" * depth).encode()
    expected = _reference_decision(json.loads(text), depth)
    if expected is None:
        assert decode_json_body(raw) == orjson.loads(raw)
    else:
        assert _message(raw) == expected


_CLIENT_FOR = Callable[..., SiteClient]


@pytest.fixture
def echo_app() -> Iterator[tuple[App, list[str]]]:
    """An App with ``POST /t/v1/echo`` answering the length of the JSON body's array; the
    list records the callbacks that ran."""
    app = App("http://json.test")
    ran: list[str] = []

    def permission(request: Request) -> bool:
        ran.append("permission")
        return True

    def callback(request: Request) -> dict[str, Any]:
        ran.append("callback")
        body = request.json_params
        return {"keys": sorted(body) if isinstance(body, dict) else None}

    app.register_rest_route(
        "t/v1",
        "/echo",
        {"methods": "POST", "callback": callback, "permission_callback": permission},
    )
    yield app, ran
    app.store.close()


def _post(client: SiteClient, raw: bytes) -> httpx.Response:
    return client.post(
        "/svc-json/t/v1/echo", content=raw, headers={"Content-Type": "application/json"}
    )


def test_http_ten_mib_at_depth_500_is_accepted(
    echo_app: tuple[App, list[str]], client_for: _CLIENT_FOR
) -> None:
    app, ran = echo_app
    raw = b'{"deep":' + _nested(500, _ints(10 * _MIB - 4000)) + b"}"
    assert len(raw) < 10 * _MIB
    response = _post(client_for(app), raw)
    assert response.status_code == 200
    assert response.json() == {"keys": ["deep"]}
    assert ran[0] == "permission"
    assert ran.count("callback") == 1


def test_http_structure_heavy_body_is_refused_before_any_callback(
    echo_app: tuple[App, list[str]], client_for: _CLIENT_FOR
) -> None:
    app, ran = echo_app
    response = _post(client_for(app), _lists(9 * _MIB // 3))
    assert response.status_code == 413
    assert response.json() == _TOO_COMPLEX
    assert "callback" not in ran


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"deep":' + _nested(512, _ints(_MIB)) + b"}", _TOO_DEEP),
        (b'{"n":[1,2,18446744073709551616]}', _LOSSY),
    ],
    ids=["depth-513", "lossy-integer"],
)
def test_http_refusals_run_no_callback(
    echo_app: tuple[App, list[str]], client_for: _CLIENT_FOR, raw: bytes, expected: Any
) -> None:
    app, ran = echo_app
    response = _post(client_for(app), raw)
    assert response.status_code == 400
    assert response.json() == expected
    assert "callback" not in ran  # (the Allow header of the 400 may ask the permission)


# -- structure: arrays, objects and object members are counted before parsing -----------------

_TOO_COMPLEX = {
    "code": "rest_json_too_complex",
    "message": "The JSON body holds more than 100000 arrays, objects and object members.",
    "data": {"status": 413, "max_structures": 100_000},
}


def _lists(count: int) -> bytes:
    """An array of ``count`` empty arrays: ``count + 1`` structures."""
    return b"[" + b",".join([b"[]"] * count) + b"]"


def _members(count: int) -> bytes:
    """An object of ``count`` distinct members: ``count + 1`` structures."""
    return b"{" + b",".join(b'"k%d":0' % index for index in range(count)) + b"}"


def _too_complex(raw: bytes) -> dict[str, Any]:
    with pytest.raises(RestError) as caught:
        decode_json_body(raw)
    return caught.value.to_dict()


def test_the_structure_limit_is_100000() -> None:
    assert MAX_JSON_STRUCTURES == 100_000


@pytest.mark.parametrize(
    "raw",
    [
        _lists(MAX_JSON_STRUCTURES - 1),
        _members(MAX_JSON_STRUCTURES - 1),
        b"[" + b",".join([b'{"a":[]}'] * (MAX_JSON_STRUCTURES // 3)) + b"]",
        # Counted bytes inside strings, also after escaped quotes and backslashes.
        b'["' + b"[{:" * MAX_JSON_STRUCTURES + b'"]',
        b'{"a":"' + b'\\"[{:' * MAX_JSON_STRUCTURES + b'"}',
        b'["\\\\",' + b'"\\\\[{:",' * MAX_JSON_STRUCTURES + b"1]",
        orjson.dumps({"layout": orjson.dumps([{"a": [1]}] * MAX_JSON_STRUCTURES).decode()}),
        # Scalars are not structures: 10 MiB of integers stays accepted.
        _ints(10 * _MIB - 2000),
    ],
    ids=[
        "lists-at-limit",
        "members-at-limit",
        "objects-at-limit",
        "in-a-string",
        "after-escaped-quotes",
        "after-escaped-backslashes",
        "json-in-a-string",
        "ten-mib-of-integers",
    ],
)
def test_a_body_within_the_structure_limit_is_accepted(raw: bytes) -> None:
    assert decode_json_body(raw) == orjson.loads(raw)


@pytest.mark.parametrize(
    "raw",
    [
        _lists(MAX_JSON_STRUCTURES),
        _members(MAX_JSON_STRUCTURES),
        b"[" + b",".join([b'{"a":[]}'] * (MAX_JSON_STRUCTURES // 3 + 1)) + b"]",
        _lists(9 * _MIB // 3),
        # A string before and after does not hide them; nor does a closing escaped backslash.
        b'["[[[",' + _lists(MAX_JSON_STRUCTURES) + b',"]]]"]',
        b'["\\\\",' + _lists(MAX_JSON_STRUCTURES) + b"]",
        b'[""' + b',"",[]' * MAX_JSON_STRUCTURES + b"]",
        # Invalid JSON is refused the same way, before it is parsed.
        b'"[' * MAX_JSON_STRUCTURES * 3,
    ],
    ids=[
        "lists",
        "members",
        "objects",
        "nine-mib-of-lists",
        "between-strings",
        "after-escaped-backslashes",
        "with-empty-strings",
        "invalid",
    ],
)
def test_a_body_over_the_structure_limit_is_refused(raw: bytes) -> None:
    assert _too_complex(raw) == _TOO_COMPLEX


def _long_numbers(count: int, number: bytes = b"18446744073709551615") -> bytes:
    return b"[" + b",".join([number] * count) + b"]"


@pytest.mark.parametrize(
    "number",
    [b"18446744073709551615", b"-9223372036854775808", b'"1234567890123456789"'],
    ids=["uint64-max", "int64-min", "digits-in-a-string"],
)
def test_the_long_numbers_checked_are_bounded(number: bytes) -> None:
    """A 9 MiB array of 20-digit integers held the worker's GIL ~0.4 s in the lossy-integer
    check (other requests waited): past MAX_LONG_NUMBERS runs of 19+ digits, a 413."""
    assert MAX_LONG_NUMBERS == 10_000
    accepted = _long_numbers(MAX_LONG_NUMBERS, number)
    assert decode_json_body(accepted) == orjson.loads(accepted)
    with pytest.raises(RestError) as caught:
        decode_json_body(_long_numbers(MAX_LONG_NUMBERS + 1, number))
    assert caught.value.to_dict() == {
        "code": "rest_json_too_complex",
        "message": "The JSON body holds more than 10000 numbers of 19 digits or more.",
        "data": {"status": 413, "max_long_numbers": 10_000},
    }
    # Shorter numbers do not count; one long run is one, whatever its length.
    short = _long_numbers(MAX_LONG_NUMBERS + 1, b"999999999999999999")
    assert decode_json_body(short) == orjson.loads(short)
    single = b'["' + b"1" * 1_000_000 + b'"]'
    assert decode_json_body(single) == orjson.loads(single)


def _outcome(parse: Callable[[bytes], Any], raw: bytes) -> Any:
    """What ``parse`` makes of ``raw``: the value, or the refusal's code and data."""
    try:
        return ("value", parse(raw))
    except RestError as error:
        return ("refused", error.code, error.message, error.data)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"id": 42, "title": "item"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"arguments": {}}}',
        b"[1, 2, 3]",
        b'"text"',
        b"12",
        b"null",
        b"[" * 512 + b"]" * 512,  # at the limit, the fast path's last body
        b"[" * 511 + b"{}" + b"]" * 511,
        b"[" * 513 + b"]" * 513,  # past it: the wrapped parse refuses
        b"[" * 512 + b"{}" + b"]" * 512,
        b'["' + b"[" * 600 + b'"]',  # brackets in a string: wrapped, accepted
        b"[" + b"[]," * 600 + b"[]]",  # 602 brackets, depth 2
        b'{"a": 1,}',  # invalid: orjson's message either way
        b'{"a": 1} x',
        b"[1, 2",
        b"[" * 512,  # unclosed at the limit
        b"[" * 600,  # unclosed past it
        b"{" * 300 + b"[" * 300,
        b"1 2",
    ],
)
def test_a_body_of_few_brackets_parses_as_the_wrapped_parse(raw: bytes) -> None:
    """A body of at most 512 opening brackets is parsed as it is: the value or the refusal
    (code, message, data) are the wrapped parse's."""
    assert _outcome(jsonbody._parse, raw) == _outcome(jsonbody._parse_wrapped, raw)


def test_a_small_body_is_parsed_without_the_wrapping_arrays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_walk(wrapped: Any) -> Any:
        raise AssertionError("unwrapped")

    monkeypatch.setattr(jsonbody, "_unwrap", no_walk)
    assert decode_json_body(b'{"id": 42, "title": "item"}') == {"id": 42, "title": "item"}
    with pytest.raises(AssertionError):  # 602 brackets: the wrapped parse
        decode_json_body(b"[" + b"[]," * 600 + b"[]]")
