"""Hostile conditional and idempotency headers on both adapters: ``If-None-Match`` and
``If-Match`` lists that are empty, malformed, unquoted, lower-case ``w/``, tags buried in
junk, thousands of members or a long run of blanks (the parse stays linear in the header's
length: the servers take heads up to 128 KiB); ``Idempotency-Key`` values out of the draft's
form (empty, tabs, control characters, non-ASCII bytes, two header lines, not one sf-string)
answer 400 ``rest_idempotency_key_invalid`` and run nothing. (The ordinary cases are in
tests/rest/test_conditional.py and tests/rest/test_guard.py; the tag grammar's unit cases in
tests/http/test_tags.py.)"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from svcrest import App
from tests.conftest import SiteClient, raw_request
from tests.e2e.test_many_hosts import serving
from tests.rest.test_conditional import PLAIN, THING, Thing
from tests.rest.test_conditional import _app as thing_app
from tests.rest.test_guard import THINGS
from tests.rest.test_guard import _app as guard_app

ClientFor = Callable[..., SiteClient]
INVALID_KEY = {
    "code": "rest_idempotency_key_invalid",
    "message": "The Idempotency-Key header must be 1 to 255 printable ASCII characters.",
    "data": {"status": 400},
}
#: Blanks between two characters that are not tags: a parse that restarts inside the run at
#: every blank does work quadratic in its length (32,000: about 16 s, once per request).
BLANK_RUN = "a" + " " * 32_000 + "b"
#: Far above what a linear parse of BLANK_RUN takes (well under a millisecond), far below
#: what a quadratic one does.
GENEROUS_SECONDS = 2.0


@pytest.fixture
def thing() -> Thing:
    return Thing()


@pytest.mark.parametrize(
    ("header", "status"),
    [
        ('"v1"', 304),
        ("v1", 200),  # unquoted: not a tag
        ('""', 200),
        (",,,", 200),
        (" , ", 200),
        ('"v1', 200),  # no closing quote
        ('"v1"junk', 200),
        ('junk"v1"', 200),  # a tag inside junk is not a member
        ('w/"v1"', 200),  # the weak indicator is upper-case W/
        ("W/", 200),
        ("*junk", 200),
        ('junk, "v1"', 304),  # a malformed member is skipped, the next one read
        ('"x",,, W/"v1"', 304),
        (", ".join(['"x"'] * 5000) + ', "v1"', 304),
        ('"v1-gzip"', 304),
    ],
    ids=[
        "exact",
        "unquoted",
        "empty-tag",
        "commas",
        "blank-members",
        "unterminated",
        "junk-after",
        "junk-before",
        "lower-w",
        "weak-prefix-only",
        "star-junk",
        "junk-member-then-tag",
        "empty-members-then-weak",
        "5000-members",
        "coded-variant",
    ],
)
def test_if_none_match_odd_lists(
    client_for: ClientFor, thing: Thing, header: str, status: int
) -> None:
    answer = client_for(thing_app(thing)).get(THING, headers={"If-None-Match": header})
    assert answer.status_code == status
    assert answer.headers["etag"] == ('"v1-gzip"' if header == '"v1-gzip"' else '"v1"')
    assert thing.calls == (1 if status == 200 else 0)


@pytest.mark.parametrize(
    ("header", "status"),
    [
        ('"v1"', 200),
        ("v1", 412),
        ('""', 412),
        (" ", 412),
        (",", 412),
        ('junk"v1"', 412),
        ('"v1"junk', 412),
        ("**", 412),
        ('junk, "v1"', 200),
        (", ".join(['"x"'] * 5000) + ', "v1"', 200),
    ],
    ids=[
        "exact",
        "unquoted",
        "empty-tag",
        "blank",
        "comma",
        "junk-before",
        "junk-after",
        "two-stars",
        "junk-member-then-tag",
        "5000-members",
    ],
)
def test_if_match_odd_lists(client_for: ClientFor, thing: Thing, header: str, status: int) -> None:
    answer = client_for(thing_app(thing)).request("PUT", THING, headers={"If-Match": header})
    assert answer.status_code == status
    if status == 412:
        assert answer.json()["code"] == "rest_precondition_failed"
        assert thing.calls == 0
    else:
        assert (answer.json(), thing.calls) == ({"version": 2}, 1)


@pytest.mark.parametrize(
    ("method", "path", "name", "status"),
    [
        ("GET", PLAIN, "If-None-Match", 200),
        ("GET", THING, "If-None-Match", 200),
        ("PUT", THING, "If-Match", 412),
    ],
    ids=["body-tag", "etag-callback", "if-match"],
)
def test_a_long_run_of_blanks_is_parsed_in_linear_time(
    client_for: ClientFor, thing: Thing, method: str, path: str, name: str, status: int
) -> None:
    client = client_for(thing_app(thing))
    started = time.monotonic()
    answer = client.request(method, path, headers={name: BLANK_RUN})
    assert answer.status_code == status
    assert time.monotonic() - started < GENEROUS_SECONDS


@pytest.mark.parametrize(
    "value",
    [b'"v\xff1"', b"\xe9", b'"v1"\x00', b"W/\x7f"],
    ids=["latin-1-in-tag", "latin-1", "nul-after", "del"],
)
def test_if_none_match_bytes_no_client_sends(adapter: str, value: bytes) -> None:
    status, headers, _ = raw_request(
        thing_app(Thing()), adapter, "GET", THING, [(b"if-none-match", value)]
    )
    assert status == 200
    assert ("etag", '"v1"') in [(name.lower(), line) for name, line in headers]


# -- Idempotency-Key ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    ['""', "a\tb", "x" * 256, '"' + "x" * 256 + '"'],
    ids=["empty-quoted", "tab", "256", "256-quoted"],
)
def test_an_idempotency_key_out_of_form_is_a_400(client_for: ClientFor, key: str) -> None:
    calls: list[Any] = []
    client = client_for(guard_app({"idempotency": "optional"}, calls))
    answer = client.post(THINGS, json={"title": "milk"}, headers={"Idempotency-Key": key})
    assert (answer.status_code, answer.json(), calls) == (400, INVALID_KEY, [])


@pytest.mark.parametrize(
    "value",
    [b"\xc3\xa9t\xc3\xa9", b"\xff", b"k\x00", b"k\x7f", b"k\x1b[31m"],
    ids=["utf-8", "latin-1", "nul", "del", "escape"],
)
def test_an_idempotency_key_of_bytes_no_client_sends_is_a_400(adapter: str, value: bytes) -> None:
    calls: list[Any] = []
    app: App = guard_app({"idempotency": "required"}, calls)
    status, _, body = raw_request(app, adapter, "POST", THINGS, [(b"idempotency-key", value)])
    assert (status, calls) == (400, [])
    assert body == (
        b'{"code":"rest_idempotency_key_invalid","message":"The Idempotency-Key header must be'
        b' 1 to 255 printable ASCII characters.","data":{"status":400}}'
    )


@pytest.mark.parametrize(
    "lines",
    [
        [b'"k-1"', b'"k-2"'],
        [b'"k-1"', b'"k-1"'],  # even the same key twice
        [b"k-1", b"k-2"],
        [b'"k-1"', b"k-2"],
        [b"k-1", b""],
    ],
    ids=["two-quoted", "same-twice", "two-bare", "quoted-then-bare", "one-empty"],
)
@pytest.mark.parametrize("join", [", ", ","], ids=["comma-space", "comma"])
def test_two_idempotency_key_lines_are_a_400(adapter: str, lines: list[bytes], join: str) -> None:
    # The header is one Structured Field Item (an sf-string): two lines combine into a List,
    # which is not one. ASGI hands the lines over apart; a WSGI server joins them into one
    # environ value with a comma (", " or ","), which is what the site sees.
    calls: list[Any] = []
    app: App = guard_app({"idempotency": "optional"}, calls)
    sent = (
        [(b"idempotency-key", line) for line in lines]
        if adapter == "asgi"
        else [(b"idempotency-key", join.encode().join(lines))]
    )
    status, _, body = raw_request(app, adapter, "POST", THINGS, sent)
    assert (status, json.loads(body), calls) == (400, INVALID_KEY, [])


@pytest.mark.parametrize(
    "key",
    ['"k-1", "k-2"', '"k-1","k-1"', "k-1, k-2", "k-1,k-2", '"k"1"', '"k\\x"', '"k-1" ;a=1'],
    ids=[
        "two-quoted",
        "same-twice",
        "two-bare",
        "two-bare-tight",
        "quote-inside",
        "bad-escape",
        "parameters",
    ],
)
def test_a_key_that_is_not_one_sf_string_is_a_400(client_for: ClientFor, key: str) -> None:
    calls: list[Any] = []
    client = client_for(guard_app({"idempotency": "optional"}, calls))
    answer = client.post(THINGS, json={"title": "milk"}, headers={"Idempotency-Key": key})
    assert (answer.status_code, answer.json(), calls) == (400, INVALID_KEY, [])


def test_a_comma_and_escapes_inside_quotes_are_one_key(client_for: ClientFor) -> None:
    calls: list[Any] = []
    client = client_for(guard_app({"idempotency": "required"}, calls))
    first = client.post(THINGS, json={"title": "milk"}, headers={"Idempotency-Key": '"a,b"'})
    assert first.status_code == 201
    escaped = client.post(THINGS, json={"title": "tea"}, headers={"Idempotency-Key": '"q\\"\\\\"'})
    again = client.post(THINGS, json={"title": "tea"}, headers={"Idempotency-Key": 'q"\\'})
    assert (escaped.status_code, again.status_code) == (201, 201)
    assert again.headers["idempotent-replayed"] == "true"  # \" and \\ unescaped: one key
    assert calls == ["milk", "tea"]


def test_the_longest_key_and_its_quoted_spelling_are_one_key(client_for: ClientFor) -> None:
    calls: list[Any] = []
    client = client_for(guard_app({"idempotency": "required"}, calls))
    longest = "k" * 255
    first = client.post(THINGS, json={"title": "milk"}, headers={"Idempotency-Key": longest})
    again = client.post(THINGS, json={"title": "milk"}, headers={"Idempotency-Key": f'"{longest}"'})
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.headers["idempotent-replayed"] == "true"
    assert again.json() == first.json()
    other = client.post(THINGS, json={"title": "tea"}, headers={"Idempotency-Key": f'"{longest}"'})
    assert (other.status_code, other.json()["code"]) == (422, "rest_idempotency_mismatch")
    assert calls == ["milk"]


# -- over real servers -----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("server", ["granian", "uvicorn"])
def test_a_long_if_none_match_is_answered_by_a_real_server(
    server: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The servers take heads up to 128 KiB, so the whole header reaches the site: answered
    at once (a quadratic parse of 100,000 blanks took minutes, its event loop blocked)."""
    db = str(tmp_path_factory.mktemp(f"inm-{server}") / "s.db")
    options = ["--server", server, "--db", db, "--plugin", "tests.e2e.header_site:register"]
    long = "a" + " " * 100_000 + "b"
    with (
        serving([("127.0.0.1", options, None)]) as (host,),
        httpx.Client(base_url=host.url, timeout=20) as client,
    ):
        response = client.get("/svc-json/t/v1/echo", headers={"If-None-Match": long})
        assert response.status_code == 200
        assert response.json()["headers"]["if-none-match"] == long
        assert client.get("/svc-json/t/v1/echo").status_code == 200
