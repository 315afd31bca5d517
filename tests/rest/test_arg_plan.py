"""The argument step prepared per handler (``svcrest.rest.validation.ArgPlan``): the same
answers as the generic step it replaced, for a table of requests, error bodies byte for
byte (codes, messages, the order of ``data.params`` and ``data.details``, statuses) and
each callback called as often and in the same order; a plan follows args changed after
registration (``register_rest_field``, args replaced or changed in place); a plain valid
value spares the full check.

``arg_plan_answers.json`` holds the answers of the tree before the plan (f86ff8c), written
by ``python tests/rest/test_arg_plan.py`` run against it (keep it as it is: it is the
contract).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from svcrest import App, Request, RestError, public
from svcrest.rest.schema import sanitize_value, validate_value
from tests.rest.books import BOOKS, books_app

ANSWERS = Path(__file__).with_name("arg_plan_answers.json")


CALLS: list[tuple[str, Any]] = []


def odd(value: Any, request: Request, key: str) -> Any:
    CALLS.append(("odd", value))
    if value == "13":
        return RestError("unlucky", f"{key} is unlucky.", {"status": 400})
    if value == "raise":
        raise RestError("raised", f"{key} raised.", {"status": 400})
    return int(value) % 2 == 1


def shout(value: Any, request: Request, key: str) -> Any:
    CALLS.append(("shout", value))
    if value == "bad":
        raise RestError("too_quiet", f"{key} cannot be shouted.", {"status": 400})
    return str(value).upper()


async def later_odd(value: Any, request: Request, key: str) -> Any:
    CALLS.append(("later_odd", value))
    if value == "raise":
        raise RestError("raised_later", f"{key} raised later.", {"status": 400})
    return str(value).isdigit() and int(value) % 2 == 1


async def later_shout(value: Any, request: Request, key: str) -> Any:
    CALLS.append(("later_shout", value))
    if value == "bad":
        raise RestError("too_quiet_later", f"{key} cannot be shouted later.", {"status": 400})
    return str(value).upper() + "!"


ARGS: dict[str, Any] = {
    "id": {"type": "integer", "minimum": 1},
    "need": {"type": "string", "required": True},
    "also": {"type": "string", "required": True},
    "name": {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 8},
    "color": {"type": "string", "enum": ["red", "green"], "default": "red"},
    "count": {"type": "integer", "minimum": 1, "maximum": 10, "default": 5},
    "ratio": {"type": "number", "minimum": 0, "maximum": 1},
    "flag": {"type": "boolean"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "meta": {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "additionalProperties": False,
    },
    "when": {"type": "string", "format": "date-time"},
    "maybe": {"type": ["string", "null"]},
    "odd": {"type": "string", "validate_callback": odd},
    "shout": {"type": "string", "sanitize_callback": shout},
    "level": {"type": "integer", "enum": [1, 2, 3]},
    "plain": {"description": "no type"},
    "with_default": {"type": "string", "required": True, "default": "given"},
    "later_odd": {"type": "string", "validate_callback": later_odd},
    "later_shout": {"type": "string", "sanitize_callback": later_shout},
    "last": {"type": "integer", "maximum": 3},
    "none_default": {"type": "string", "default": None, "sanitize_callback": shout},
    "none_list": {"type": ["array", "null"], "items": {"type": "integer"}, "default": None},
}

OK = {"need": "n", "also": "a"}

#: id, method, the URL's id, query, JSON body, form body.
CASES: list[tuple[str, str, str, dict[str, Any], Any, dict[str, Any] | None]] = [
    ("missing-both", "GET", "1", {}, None, None),
    ("missing-one", "GET", "1", {"need": "n"}, None, None),
    ("missing-json-null", "POST", "1", {}, {"need": None, "also": "a"}, None),
    ("url-id-zero", "GET", "0", OK, None, None),
    ("name-pattern", "GET", "1", {**OK, "name": "A1"}, None, None),
    ("name-short", "GET", "1", {**OK, "name": "a"}, None, None),
    ("name-long", "GET", "1", {**OK, "name": "abcdefghij"}, None, None),
    ("name-int", "POST", "1", {}, {**OK, "name": 5}, None),
    ("color-enum", "GET", "1", {**OK, "color": "blue"}, None, None),
    ("color-empty", "GET", "1", {**OK, "color": ""}, None, None),
    ("count-zero", "GET", "1", {**OK, "count": "0"}, None, None),
    ("count-eleven", "GET", "1", {**OK, "count": "11"}, None, None),
    ("count-text", "GET", "1", {**OK, "count": "x"}, None, None),
    ("count-fraction", "GET", "1", {**OK, "count": "2.5"}, None, None),
    ("count-negative", "GET", "1", {**OK, "count": "-3"}, None, None),
    ("count-null-json", "POST", "1", {}, {**OK, "count": None}, None),
    ("count-bool-json", "POST", "1", {}, {**OK, "count": True}, None),
    ("count-float-json", "POST", "1", {}, {**OK, "count": 3.5}, None),
    ("ratio-high", "GET", "1", {**OK, "ratio": "1.5"}, None, None),
    ("ratio-low", "GET", "1", {**OK, "ratio": "-0.1"}, None, None),
    ("ratio-text", "GET", "1", {**OK, "ratio": "abc"}, None, None),
    ("ratio-inf-json", "POST", "1", {}, {**OK, "ratio": 1e400}, None),
    ("flag-yes", "GET", "1", {**OK, "flag": "yes"}, None, None),
    ("flag-two", "POST", "1", {}, {**OK, "flag": 2}, None),
    ("tags-item", "POST", "1", {}, {**OK, "tags": ["a", 1]}, None),
    ("tags-null", "POST", "1", {}, {**OK, "tags": None}, None),
    ("meta-extra", "POST", "1", {}, {**OK, "meta": {"b": 1}}, None),
    ("meta-type", "POST", "1", {}, {**OK, "meta": {"a": 1}}, None),
    ("meta-list", "POST", "1", {}, {**OK, "meta": [1]}, None),
    ("when-bad", "GET", "1", {**OK, "when": "yesterday"}, None, None),
    ("maybe-int", "POST", "1", {}, {**OK, "maybe": 5}, None),
    ("odd-even", "GET", "1", {**OK, "odd": "2"}, None, None),
    ("odd-unlucky", "GET", "1", {**OK, "odd": "13"}, None, None),
    ("odd-raises", "GET", "1", {**OK, "odd": "raise"}, None, None),
    ("odd-not-string", "POST", "1", {}, {**OK, "odd": [1]}, None),
    ("shout-bad", "GET", "1", {**OK, "shout": "bad"}, None, None),
    ("shout-bad-and-name", "GET", "1", {**OK, "shout": "bad", "name": "A"}, None, None),
    ("level-enum", "GET", "1", {**OK, "level": "4"}, None, None),
    ("level-bool-json", "POST", "1", {}, {**OK, "level": True}, None),
    ("with-default-null", "POST", "1", {}, {**OK, "with_default": None}, None),
    (
        "several",
        "GET",
        "0",
        {**OK, "level": "9", "count": "99", "name": "B", "color": "x"},
        None,
        None,
    ),
    ("form-count", "POST", "1", {}, None, {**OK, "count": "12"}),
    ("json-over-query", "POST", "1", {"count": "3"}, {**OK, "count": "zero"}, None),
    ("later-odd-even", "GET", "1", {**OK, "later_odd": "2", "last": "4"}, None, None),
    ("later-odd-raises", "GET", "1", {**OK, "later_odd": "raise", "odd": "2"}, None, None),
    (
        "later-odd-then-sync",
        "GET",
        "1",
        {**OK, "odd": "4", "later_odd": "6", "level": "7", "last": "9"},
        None,
        None,
    ),
    (
        "later-shout-bad-json-then-last",
        "POST",
        "1",
        {"later_shout": "q"},
        {**OK, "later_shout": "bad", "shout": "x", "last": "x"},
        None,
    ),
    (
        "later-shout-bad-query",
        "POST",
        "1",
        {"later_shout": "bad", "shout": "bad"},
        {**OK, "later_shout": "j"},
        None,
    ),
    ("none-default-null-json", "POST", "1", {}, {**OK, "none_default": None}, None),
    (
        "none-default-null-over-query",
        "POST",
        "1",
        {"none_default": "q"},
        {**OK, "none_default": None},
        None,
    ),
    ("none-list-bad", "GET", "1", {**OK, "none_list": "1,x"}, None, None),
    # accepted
    ("ok-none-default-sent", "GET", "7", {**OK, "none_default": "abc"}, None, None),
    ("ok-none-list-null-json", "POST", "7", {}, {**OK, "none_list": None}, None),
    ("ok-none-list-sent", "GET", "7", {**OK, "none_list": "1,2"}, None, None),
    ("ok-later-then-sync", "GET", "7", {**OK, "later_shout": "q", "last": "2"}, None, None),
    (
        "ok-later",
        "POST",
        "7",
        {"later_shout": "q", "shout": "s", "later_odd": "5"},
        {**OK, "later_shout": "j", "shout": "t", "later_odd": "3", "last": 3},
        None,
    ),
    ("ok-plain", "GET", "7", OK, None, None),
    (
        "ok-all-query",
        "GET",
        "7",
        {
            **OK,
            "name": "abc",
            "color": "green",
            "count": "10",
            "ratio": "0.25",
            "flag": "TRUE",
            "tags": "x,y z",
            "when": "2024-05-01T09:30:00",
            "odd": "3",
            "shout": "hey",
            "level": "2",
            "plain": "kept",
        },
        None,
        None,
    ),
    ("ok-count-spaces", "GET", "7", {**OK, "count": " 7 "}, None, None),
    ("ok-count-plus", "GET", "7", {**OK, "count": "+7"}, None, None),
    ("ok-count-zeros", "GET", "7", {**OK, "count": "007"}, None, None),
    ("ok-flag-zero", "GET", "7", {**OK, "flag": "0"}, None, None),
    ("ok-flag-one-json", "POST", "7", {}, {**OK, "flag": 1}, None),
    (
        "ok-json",
        "POST",
        "7",
        {"count": "2"},
        {
            **OK,
            "count": 3,
            "ratio": 1,
            "flag": False,
            "tags": ["a"],
            "meta": {"a": "b"},
            "maybe": None,
            "level": 3.0,
            "plain": [1, {"x": None}],
        },
        None,
    ),
    ("ok-form", "POST", "7", {"count": "2"}, None, {**OK, "count": "4", "flag": "true"}),
    ("ok-json-count-float", "POST", "7", {}, {**OK, "count": 4.0}, None),
]


def answer(request: Request) -> dict[str, Any]:
    return {
        "params": request.get_params(),
        "types": {name: type(value).__name__ for name, value in request.get_params().items()},
        "query": request.query_params,
        "defaults": request.default_params,
    }


def site() -> App:
    app = App()
    app.register_rest_route(
        "t/v1",
        r"/things/(?P<id>\d+)",
        {
            "methods": ["GET", "POST"],
            "callback": answer,
            "permission_callback": public,
            "args": ARGS,
        },
    )
    return app


def answered(app: App, case: tuple[str, str, str, dict[str, Any], Any, Any]) -> dict[str, Any]:
    """The status and body of ``case``'s request, and the callbacks it called, in order."""
    _, method, url_id, query, json, form = copy.deepcopy(case)  # sanitising changes them
    CALLS.clear()
    if json is not None:
        request = Request(
            method,
            f"/t/v1/things/{url_id}",
            query=query,
            json=json,
            headers={"content-type": "application/json"},
        )
    else:
        request = Request(method, f"/t/v1/things/{url_id}", query=query, body=form)
    response = app.rest_do_request(request)
    return {"status": response.status, "data": response.data, "calls": list(CALLS)}


@pytest.fixture(scope="module")
def expected() -> dict[str, Any]:
    answers: dict[str, Any] = json.loads(ANSWERS.read_text())
    return answers


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_the_answers_of_the_generic_step(case: Any, expected: dict[str, Any]) -> None:
    app = site()
    got = json.dumps(answered(app, case), indent=1, default=repr)
    assert got == json.dumps(expected[case[0]], indent=1)
    # The second request of the route answers the same (nothing is left behind).
    assert json.dumps(answered(app, case), indent=1, default=repr) == got


def test_every_case_has_its_answer(expected: dict[str, Any]) -> None:
    assert list(expected) == [case[0] for case in CASES]


def test_the_plan_is_prepared_at_registration() -> None:
    app = site()
    entry = app.rest_get_server().table.get(r"/t/v1/things/(?P<id>\d+)")
    assert entry is not None
    plan = entry.prepared[0].arg_plan
    assert plan.args is entry.handlers[0]["args"]
    assert plan.required == ("need", "also", "with_default")
    assert plan.bucket == {
        "color": "red",
        "count": 5,
        "with_default": "given",
        "none_default": None,
        "none_list": None,
    }
    assert plan.present == {"color": "red", "count": 5, "with_default": "given"}


def test_a_plain_valid_value_spares_the_full_check(monkeypatch: pytest.MonkeyPatch) -> None:
    app = site()
    full: list[str] = []

    def counting_validate(value: Any, schema: Any, name: str) -> Any:
        full.append(f"validate {name}")
        return validate_value(value, schema, name)

    def counting_sanitize(value: Any, schema: Any, name: str) -> Any:
        full.append(f"sanitize {name}")
        return sanitize_value(value, schema, name)

    monkeypatch.setattr("svcrest.rest.validation.validate_value", counting_validate)
    monkeypatch.setattr("svcrest.rest.validation.sanitize_value", counting_sanitize)
    query = {**OK, "name": "abc", "color": "green", "count": "3", "flag": "true", "level": "2"}
    answer = answered(app, ("plain", "GET", "7", query, None, None))
    assert answer["status"] == 200
    assert answer["data"]["params"]["count"] == 3
    assert answer["data"]["params"]["flag"] is True
    assert full == []
    # A value the quick tests are not sure of gets the full check.
    answer = answered(app, ("spaces", "GET", "7", {**OK, "count": " 3"}, None, None))
    assert (answer["status"], answer["data"]["params"]["count"]) == (200, 3)
    assert full == ["validate count", "sanitize count"]


def test_a_field_registered_later_is_an_arg_the_plan_checks() -> None:
    app, controller = books_app()
    controller.books[1] = {"id": 1, "title": "Dune", "pages": 412, "isbn": "978-0441013593"}

    def post(body: dict[str, Any]) -> Any:
        request = Request(
            "POST", "/shop/v1/books/1", json=body, headers={"content-type": "application/json"}
        )
        return app.rest_do_request(request)

    # Not an argument yet: ignored, the permission check answers (anonymous).
    assert post({"rating": 0}).status == 401
    app.register_rest_field(
        "book", "rating", schema={"type": "integer", "minimum": 1, "maximum": 5}
    )
    refused = post({"rating": 0})
    assert (refused.status, refused.data) == (
        400,
        {
            "code": "rest_invalid_param",
            "message": "Invalid parameter(s): rating",
            "data": {
                "status": 400,
                "params": {"rating": "rating must be between 1 (inclusive) and 5 (inclusive)"},
                "details": {
                    "rating": {
                        "code": "rest_out_of_bounds",
                        "message": "rating must be between 1 (inclusive) and 5 (inclusive)",
                        "data": {"param": "rating"},
                    }
                },
            },
        },
    )
    assert post({"rating": 3}).status == 401
    entry = app.rest_get_server().table.get(r"/shop/v1/books/(?P<id>[\d]+)")
    assert entry is not None
    update = entry.prepared[1]
    assert "rating" in update.arg_plan.args
    assert update.arg_plan.args is update.definition["args"]
    assert BOOKS.endswith(entry.route.split("/(?P")[0])


def test_args_changed_after_registration_are_checked_as_they_are() -> None:
    app = site()
    route = r"/t/v1/things/(?P<id>\d+)"
    handler = app.rest_get_server().get_routes()[route][0]
    handler["args"]["extra"] = {"type": "integer", "required": True}  # changed in place
    missing = answered(app, ("in-place", "GET", "7", OK, None, None))
    assert missing["data"]["data"]["params"] == ["extra"]
    answer = answered(app, ("in-place", "GET", "7", {**OK, "extra": "4"}, None, None))
    assert (answer["status"], answer["data"]["params"]["extra"]) == (200, 4)
    handler["args"] = {"only": {"type": "boolean", "default": False}}  # replaced
    answer = answered(app, ("replaced", "GET", "7", {"only": "1"}, None, None))
    assert (answer["status"], answer["data"]["params"]) == (200, {"only": True, "id": "7"})
    refused = answered(app, ("replaced", "GET", "7", {"only": "maybe"}, None, None))
    assert refused["data"]["data"]["params"] == {"only": "only is not of type boolean."}


def test_callbacks_are_called_once_each() -> None:
    app = site()
    query = {**OK, "odd": "3", "shout": "hey", "later_odd": "5", "later_shout": "q"}
    answer = answered(app, ("once", "GET", "7", query, None, None))
    assert answer["status"] == 200
    assert answer["calls"] == [
        ("odd", "3"),
        ("later_odd", "5"),
        ("shout", "hey"),
        ("later_shout", "q"),
    ]
    assert (answer["data"]["params"]["shout"], answer["data"]["params"]["later_shout"]) == (
        "HEY",
        "Q!",
    )


def test_a_plan_without_arguments_to_check() -> None:
    from svcrest.rest.validation import ArgPlan  # here: the module runs on the older tree too

    args = {"note": "not a definition"}
    plan = ArgPlan(args)
    request = Request("GET", "/x", query={"note": "kept"})
    assert plan.run(request, args) is None
    assert request.get_params() == {"note": "kept"}
    assert (plan.required, plan.checks, plan.cleans, plan.bucket) == ((), (), (), {})


def test_a_raised_error_in_an_async_sanitize_callback_of_a_later_bucket() -> None:
    async def shout_once(value: Any, request: Request, key: str) -> Any:
        if value == "no":
            raise RestError("nope", f"{key} says no.", {"status": 400})
        return value.upper()

    app = App()
    app.register_rest_route(
        "t/v1",
        "/r",
        {
            "methods": "POST",
            "callback": lambda request: [request.json_params, request.query_params],
            "permission_callback": public,
            "args": {"a": {"type": "string", "sanitize_callback": shout_once}},
        },
    )
    ok = Request(
        "POST",
        "/t/v1/r",
        query={"a": "q"},
        json={"a": "j"},
        headers={"content-type": "application/json"},
    )
    assert app.rest_do_request(ok).data == [{"a": "J"}, {"a": "Q"}]
    refused = Request(
        "POST",
        "/t/v1/r",
        query={"a": "no"},
        json={"a": "j"},
        headers={"content-type": "application/json"},
    )
    assert app.rest_do_request(refused).data["data"]["params"] == {"a": "a says no."}


if __name__ == "__main__":  # the answers of the tree this runs against, as the JSON file
    json.dump(
        {case[0]: answered(site(), case) for case in CASES},
        sys.stdout,
        indent=1,
        default=repr,
    )
    print()


def _url_site(args: dict[str, Any]) -> App:
    app = App()
    app.register_rest_route(
        "t/v1",
        r"/u/(?P<key>[^/]+)",
        {"methods": "GET", "callback": answer, "permission_callback": public, "args": args},
    )
    return app


def _key_check(value: Any, request: Request, key: str) -> Any:
    CALLS.append(("key_check", value))
    return value != "no"


#: args, the URL's key, and whether the request leaves the step nothing to do.
URL_ONLY_CASES: list[tuple[str, dict[str, Any], str, bool]] = [
    ("pattern-ok", {"key": {"type": "string", "pattern": "^[a-z]+$"}}, "abc", True),
    ("pattern-refused", {"key": {"type": "string", "pattern": "^[a-z]+$"}}, "A1", False),
    ("integer-coerced", {"key": {"type": "integer"}}, "42", False),
    ("integer-refused", {"key": {"type": "integer", "minimum": 50}}, "42", False),
    (
        "validate-callback",
        {"key": {"type": "string", "validate_callback": _key_check}},
        "no",
        False,
    ),
    ("sanitize-callback", {"key": {"type": "string", "sanitize_callback": shout}}, "hey", False),
    (
        "required-missing",
        {"key": {"type": "string"}, "other": {"type": "string", "required": True}},
        "abc",
        False,
    ),
    (
        "required-default",
        {"key": {"type": "string"}, "other": {"type": "string", "required": True, "default": "d"}},
        "abc",
        True,
    ),
    (
        "null-default-callback",
        {"key": {"type": "string"}, "input": {"default": None, "sanitize_callback": shout}},
        "abc",
        True,
    ),
    (
        "list-default",
        {"key": {"type": "string"}, "tags": {"type": "array", "default": "a,b"}},
        "abc",
        False,
    ),
    (
        "settled-default",
        {"key": {"type": "string"}, "n": {"type": "integer", "default": 3}},
        "x",
        True,
    ),
    ("not-an-arg", {"other": {"type": "integer", "default": 1}}, "abc", True),
]


@pytest.mark.parametrize("case", URL_ONLY_CASES, ids=[case[0] for case in URL_ONLY_CASES])
def test_a_request_with_only_url_parameters_answers_as_the_generic_step(
    case: tuple[str, dict[str, Any], str, bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    from svcrest.rest.validation import ArgPlan

    _, args, key, shortcut = case
    app = _url_site(copy.deepcopy(args))
    generic = _url_site(copy.deepcopy(args))
    generic_plan = generic.rest_get_server().table.get(r"/t/v1/u/(?P<key>[^/]+)")
    assert generic_plan is not None
    generic_plan.prepared[0].arg_plan.lean = None  # the generic step alone
    got: list[Any] = []
    want: list[Any] = []
    for each, into in ((app, got), (generic, want)):
        CALLS.clear()
        response = each.rest_do_request(Request("GET", f"/t/v1/u/{key}"))
        into.append((response.status, json.dumps(response.data, default=repr), list(CALLS)))
    assert got == want
    # Whether the shortcut answered (the generic walk is not run then), and with a query
    # parameter not.
    answers: list[bool] = []
    original = ArgPlan._url_only

    def noted(self: ArgPlan, url: dict[str, Any]) -> bool:
        answers.append(original(self, url))
        return answers[-1]

    monkeypatch.setattr(ArgPlan, "_url_only", noted)
    app.rest_do_request(Request("GET", f"/t/v1/u/{key}"))
    app.rest_do_request(Request("GET", f"/t/v1/u/{key}", query={"unrelated": "1"}))
    entry = app.rest_get_server().table.get(r"/t/v1/u/(?P<key>[^/]+)")
    assert entry is not None
    if entry.prepared[0].arg_plan.lean is None:  # known at registration: never tried
        assert (shortcut, answers) == (False, [])
    else:
        assert answers == [shortcut]


#: The cases whose route never tries the shortcut, known when it is registered: the URL's
#: ``key`` is an argument that sanitising turns into an integer or that has a callback, or a
#: default is not settled.
NEVER_LEAN = {"integer-coerced", "integer-refused", "validate-callback", "sanitize-callback"}
NEVER_LEAN |= {"list-default"}


@pytest.mark.parametrize("case", URL_ONLY_CASES, ids=[case[0] for case in URL_ONLY_CASES])
def test_a_route_whose_url_brings_a_never_lean_argument_never_tries_the_shortcut(
    case: tuple[str, dict[str, Any], str, bool],
) -> None:
    name, args, _, _ = case
    entry = _url_site(copy.deepcopy(args)).rest_get_server().table.get(r"/t/v1/u/(?P<key>[^/]+)")
    assert entry is not None
    assert (entry.prepared[0].arg_plan.lean is None) is (name in NEVER_LEAN)


def test_a_url_string_is_remembered_once_it_passed_its_quick_test() -> None:
    """The URL-only test remembers a URL string that passed an argument's quick test (a
    pattern's regex search) and lets it pass again without the test; a refused string is
    never remembered and is refused each time as the generic step refuses it; the memory
    is bounded."""
    from svcrest.rest import validation

    args = {"key": {"type": "string", "pattern": "^[a-z]+$"}}
    app = _url_site(copy.deepcopy(args))
    generic = _url_site(copy.deepcopy(args))
    route = r"/t/v1/u/(?P<key>[^/]+)"
    generic_entry = generic.rest_get_server().table.get(route)
    assert generic_entry is not None
    generic_entry.prepared[0].arg_plan.lean = None  # the generic step alone
    entry = app.rest_get_server().table.get(route)
    assert entry is not None
    lean = entry.prepared[0].arg_plan.lean
    assert lean is not None
    tests = lean["key"]
    assert tests is not None
    seen = tests[3]
    assert seen is not None
    for key in ("abc", "A1", "abc", "A1", "xyz"):
        got = app.rest_do_request(Request("GET", f"/t/v1/u/{key}"))
        want = generic.rest_do_request(Request("GET", f"/t/v1/u/{key}"))
        assert (got.status, got.data) == (want.status, want.data)
    assert set(seen.entries) == {"abc", "xyz"}
    for number in range(validation._URL_SEEN + 5):
        key = "k" + "".join(chr(ord("a") + int(digit)) for digit in str(number))
        assert app.rest_do_request(Request("GET", f"/t/v1/u/{key}")).status == 200
    assert 0 < len(seen.entries) <= validation._URL_SEEN
    # An argument whose strings need no quick test, or that sanitising changes, has none.
    for other in ({"key": {"type": "string"}}, {"key": {"type": "integer"}}):
        plain = _url_site(copy.deepcopy(other)).rest_get_server().table.get(route)
        assert plain is not None
        found = (plain.prepared[0].arg_plan.lean or {}).get("key")
        assert found is None or found[3] is None
