"""Query strings as PHP (and so WordPress) reads them: ``a[0]=x&a[1]=y`` and
``filter[0][property]=title`` are lists, ``a[]=x`` a list, ``m[k]=v`` an object, a plain
``a=x`` a string; past PHP's ``max_input_vars`` (1000) or ``max_input_nesting_level`` (64) a
REST request is refused with 400 ``rest_invalid_query_string``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from svcrest import App, Request, public
from svcrest.demo import register
from svcrest.http.errors import RestError
from svcrest.http.forms import MAX_DEPTH, MAX_FIELDS, parse_form, parse_query
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a[0]=x&a[1]=y", {"a": ["x", "y"]}),
        ("a[1]=y&a[0]=x", {"a": ["x", "y"]}),
        ("a[0]=x&a[5]=y", {"a": ["x", "y"]}),
        ("a[]=x&a[]=y", {"a": ["x", "y"]}),
        ("a[]=x&a[3]=y&a[]=z", {"a": ["x", "y", "z"]}),
        ("m[k]=v", {"m": {"k": "v"}}),
        ("a=x", {"a": "x"}),
        (
            "filter[0][property]=title&filter[0][value]=E&filter[1][property]=id",
            {"filter": [{"property": "title", "value": "E"}, {"property": "id"}]},
        ),
        ("a[]=x&a[k]=y", {"a": {"0": "x", "k": "y"}}),
        ("a[01]=x", {"a": {"01": "x"}}),
        ("a[-1]=x", {"a": {"-1": "x"}}),
        ("a%5B0%5D=x&a%5B1%5D=y", {"a": ["x", "y"]}),
        ("m[a][0][b]=1&m[a][0][c]=2", {"m": {"a": [{"b": "1", "c": "2"}]}}),
        ("a=1&a[]=2", {"a": ["2"]}),
        ("a[]=2&a=1", {"a": "1"}),
        ("a[0]=x&a[0]=y", {"a": ["y"]}),
    ],
    ids=[
        "indexes",
        "index-order",
        "sparse-indexes",
        "appended",
        "appended-after-an-index",
        "object",
        "plain-string",
        "ext-js-filters",
        "mixed-keys-make-an-object",
        "non-canonical-index",
        "negative-index",
        "encoded-brackets",
        "objects-in-lists-in-objects",
        "list-replaces-string",
        "string-replaces-list",
        "same-index-last-wins",
    ],
)
def test_php_brackets(text: str, expected: dict[str, Any]) -> None:
    assert parse_form(text) == expected
    assert parse_query(text) == expected


def test_the_bounds_are_phps() -> None:
    deepest = "a" + "[x]" * MAX_DEPTH + "=1"
    assert parse_query(deepest) != {}
    assert len(parse_query("&".join(f"k{i}=v" for i in range(MAX_FIELDS)) + "&&=x")) == MAX_FIELDS


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("a" + "[x]" * (MAX_DEPTH + 1) + "=1", "a parameter nested deeper than 64 levels"),
        ("&".join(f"k{i}=v" for i in range(MAX_FIELDS + 1)), "more than 1000 parameters"),
        ("&".join(["a[]=v"] * (MAX_FIELDS + 1)), "more than 1000 parameters"),
    ],
    ids=["too-deep", "too-many", "too-many-in-one-list"],
)
def test_past_the_bounds_a_query_is_refused(text: str, reason: str) -> None:
    with pytest.raises(RestError) as caught:
        parse_query(text)
    assert caught.value.to_dict() == {
        "code": "rest_invalid_query_string",
        "message": "Invalid query string.",
        "data": {"status": 400, "reason": reason},
    }
    # A site page's form is read as PHP reads it: truncated, the deep field dropped.
    parsed = parse_form(text)
    assert len(parsed.get("a", [])) <= MAX_FIELDS
    assert len(parsed) <= MAX_FIELDS


def _leaf() -> st.SearchStrategy[str]:
    return st.text(max_size=5)


_KEY = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=4)
_VALUES = st.recursive(
    _leaf(),
    lambda children: (
        st.lists(children, min_size=1, max_size=3)
        | st.dictionaries(_KEY, children, min_size=1, max_size=3)
    ),
    max_leaves=12,
)


def _encode(prefix: str, value: Any) -> list[str]:
    """What ``qs.stringify`` writes (its default ``indices`` format)."""
    if isinstance(value, list):
        return [pair for i, item in enumerate(value) for pair in _encode(f"{prefix}[{i}]", item)]
    if isinstance(value, dict):
        return [pair for k, item in value.items() for pair in _encode(f"{prefix}[{k}]", item)]
    return [f"{quote(prefix, safe='[]')}={quote(value, safe='')}"]


@given(st.dictionaries(_KEY, _VALUES, max_size=4))
def test_what_qs_writes_reads_back(params: dict[str, Any]) -> None:
    text = "&".join(pair for key, value in params.items() for pair in _encode(key, value))
    assert parse_query(text) == params


@given(st.text(alphabet="ab[]=&%5B0]", max_size=40))
def test_any_query_parses_or_is_refused(text: str) -> None:
    try:
        parse_query(text)
    except RestError as error:
        assert error.status == 400


def _echo_app() -> App:
    app = App()
    app.register_rest_route(
        "t/v1",
        "/echo",
        {"callback": lambda request: request.query_params, "permission_callback": public},
    )
    app.register_rest_route(
        "t/v1",
        "/items",
        {
            "callback": lambda request: [{"id": 1, "title": "a"}, {"id": 2, "title": "b"}],
            "permission_callback": public,
        },
    )
    return app


def test_brackets_over_http(client_for: ClientFor) -> None:
    client = client_for(_echo_app())
    answer = client.get("/svc-json/t/v1/echo?a[0]=x&a[1]=y&m[k]=v&s=t&f[0][property]=title")
    assert answer.json() == {
        "a": ["x", "y"],
        "m": {"k": "v"},
        "s": "t",
        "f": [{"property": "title"}],
    }


def test_fields_as_an_indexed_list(client_for: ClientFor) -> None:
    client = client_for(_echo_app())
    assert client.get("/svc-json/t/v1/items?_fields[0]=id").json() == [{"id": 1}, {"id": 2}]
    assert client.get("/svc-json/t/v1/items?_fields[a]=id").json() == [{"id": 1}, {"id": 2}]
    assert client.get("/svc-json/t/v1/items?_fields[0]=id&_fields[1]=title").json() == [
        {"id": 1, "title": "a"},
        {"id": 2, "title": "b"},
    ]


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("a" + "[x]" * (MAX_DEPTH + 1) + "=1", "a parameter nested deeper than 64 levels"),
        ("&".join(f"k{i}=v" for i in range(MAX_FIELDS + 1)), "more than 1000 parameters"),
    ],
    ids=["too-deep", "too-many"],
)
def test_past_the_bounds_over_http(client_for: ClientFor, query: str, reason: str) -> None:
    client = client_for(_echo_app())
    answer = client.get(f"/svc-json/t/v1/echo?{query}")
    assert answer.status_code == 400
    assert answer.json() == {
        "code": "rest_invalid_query_string",
        "message": "Invalid query string.",
        "data": {"status": 400, "reason": reason},
    }
    at_the_bound = "&".join(f"k{i}=v" for i in range(MAX_FIELDS))
    assert len(client.get(f"/svc-json/t/v1/echo?{at_the_bound}").json()) == MAX_FIELDS


def test_ext_js_filters_in_brackets_read_the_demo_notes(client_for: ClientFor) -> None:
    app = App("http://notes.test")
    register(app)
    editor = app.users.create("ed", "pw", roles=("editor",))
    for title in ("Elder", "Apple", "Beech"):
        request = Request(
            "POST",
            "/demo/v1/notes",
            json={"title": title, "content": "c"},
            headers={"Content-Type": "application/json"},
        )
        request.user = editor
        assert app.rest_do_request(request).status == 201
    client = client_for(app)
    brackets = client.get(
        "/svc-json/demo/v1/notes?filter[0][property]=title&filter[0][value]=e"
        "&sort[0][property]=title&sort[0][direction]=DESC"
    )
    assert brackets.status_code == 200
    assert [note["title"] for note in brackets.json()] == ["Elder", "Beech", "Apple"]
    narrowed = client.get("/svc-json/demo/v1/notes?filter[0][property]=title&filter[0][value]=ee")
    assert [note["title"] for note in narrowed.json()] == ["Beech"]


def _form_echo_app() -> App:
    app = App()
    app.register_rest_route(
        "t/v1",
        "/form",
        {
            "methods": ["POST", "PUT"],
            "callback": lambda request: request.body_params,
            "permission_callback": public,
        },
    )
    return app


def _form_refusal(reason: str) -> dict[str, Any]:
    return {
        "code": "rest_invalid_body",
        "message": "Invalid application/x-www-form-urlencoded body.",
        "data": {"status": 400, "reason": reason},
    }


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("a" + "[x]" * (MAX_DEPTH + 1) + "=1", "a parameter nested deeper than 64 levels"),
        ("&".join(f"k{i}=v" for i in range(MAX_FIELDS + 1)), "more than 1000 parameters"),
        ("&".join(["a[]=v"] * (MAX_FIELDS + 1)), "more than 1000 parameters"),
    ],
    ids=["too-deep", "too-many", "too-many-in-one-list"],
)
def test_past_the_bounds_a_form_body_is_refused_over_http(
    client_for: ClientFor, body: str, reason: str
) -> None:
    client = client_for(_form_echo_app())
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    answer = client.post("/svc-json/t/v1/form", content=body.encode(), headers=form)
    assert answer.status_code == 400
    assert answer.json() == _form_refusal(reason)
    at_the_bound = "&".join(f"k{i}=v" for i in range(MAX_FIELDS))
    answer = client.request(
        "PUT", "/svc-json/t/v1/form", content=at_the_bound.encode(), headers=form
    )
    assert answer.status_code == 200
    assert len(answer.json()) == MAX_FIELDS
    deepest = "a" + "[x]" * MAX_DEPTH + "=1"
    assert client.post("/svc-json/t/v1/form", content=deepest.encode(), headers=form).json() != {}


def test_a_form_body_past_the_bounds_is_never_read_in_part() -> None:
    body = "&".join(f"k{i}=v" for i in range(MAX_FIELDS + 1)).encode()
    request = Request(
        "POST",
        "/t/v1/form",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        raw_body=body,
    )
    assert request.body_params == {}
    assert request.get_param("k0") is None
    with pytest.raises(RestError) as caught:
        request.parse_json_body()
    assert caught.value.to_dict() == _form_refusal("more than 1000 parameters")
