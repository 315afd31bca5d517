"""RestProxy.get_method, build_url and build_request: every rule of spec 4.10 / DESIGN.md §4."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from types import MappingProxyType, SimpleNamespace
from typing import Any

import httpx
import pytest

from svcrest import client as client_package
from svcrest.client import Operation, ProxyError, RestProxy
from svcrest.client.proxy import AsyncRestProxy
from svcrest.client.urls import is_valid_id

URL = "http://example.test/svc-json/demo/v1/notes"
CLOCK = 1700000000000
DC = f"_dc={CLOCK}"


def make(url: str = URL, **options: Any) -> RestProxy:
    """A proxy with the fixed clock."""
    return RestProxy(url, clock=lambda: CLOCK, **options)


def read(**fields: Any) -> Operation:
    return Operation("read", **fields)


def test_package_exports_exactly_the_contract_names() -> None:
    assert client_package.__all__ == [
        "AsyncChangeStream",
        "AsyncRestProxy",
        "ChangeEvent",
        "ChangeStream",
        "ChangesExpired",
        "Operation",
        "ProxyError",
        "RestProxy",
        "ResultSet",
    ]


# -- operations ---------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["create", "read", "update", "destroy"])
def test_operation_accepts_the_four_actions(action: str) -> None:
    assert Operation(action).action == action


@pytest.mark.parametrize("action", ["list", "CREATE", "", "delete"])
def test_operation_rejects_other_actions(action: str) -> None:
    with pytest.raises(ValueError, match="unknown action"):
        Operation(action)


def test_operation_keeps_its_fields() -> None:
    operation = Operation("read", id=3, params={"a": 1}, page=2, start=10, limit=5)
    assert (operation.id, operation.params, operation.page, operation.start, operation.limit) == (
        3,
        {"a": 1},
        2,
        10,
        5,
    )
    assert operation.records is None


# -- methods ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "method"),
    [("create", "POST"), ("read", "GET"), ("update", "PUT"), ("destroy", "DELETE")],
    ids=["create-POST", "read-GET", "update-PUT", "destroy-DELETE"],
)
def test_default_action_methods(action: str, method: str) -> None:
    assert make().get_method(Operation(action)) == method


@pytest.mark.parametrize(
    ("action", "method"),
    [("create", "POST"), ("read", "GET"), ("update", "PATCH"), ("destroy", "POST")],
    ids=["create-default", "read-default", "update-PATCH", "destroy-POST"],
)
def test_action_methods_merge_over_the_defaults(action: str, method: str) -> None:
    proxy = make(action_methods={"update": "PATCH", "destroy": "POST"})
    assert proxy.get_method(Operation(action)) == method


def test_action_methods_reject_unknown_actions() -> None:
    with pytest.raises(ValueError, match="unknown actions: list"):
        make(action_methods={"list": "GET"})


class PatchingProxy(RestProxy):
    """Chooses PATCH for updates of several records: an overridden method lookup."""

    def get_method(self, operation: Operation) -> str:
        if operation.action == "update" and len(operation.records or ()) > 1:
            return "PATCH"
        return super().get_method(operation)


def test_an_overridden_get_method_is_used_by_build_request() -> None:
    proxy = PatchingProxy(URL, clock=lambda: CLOCK)
    one = Operation("update", records=[{"id": 1}])
    two = Operation("update", records=[{"id": 1}, {"id": 2}])
    assert proxy.get_method(one) == "PUT"
    assert proxy.get_method(two) == "PATCH"
    assert proxy.build_request(two).method == "PATCH"


# -- ids ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        (0, True),
        ("0", True),
        (5, True),
        (-1, True),
        ("a/b c", True),
        (" ", True),
        ("", False),
        (None, False),
        (False, False),
        (True, False),
        (0.0, False),
    ],
    ids=[
        "int-0",
        "str-0",
        "int-5",
        "int-minus-1",
        "str-a/b-c",
        "space",
        "empty",
        "None",
        "False",
        "True",
        "float-0.0",
    ],
)
def test_is_valid_id(value: object, valid: bool) -> None:
    assert is_valid_id(value) is valid


@pytest.mark.parametrize(
    ("value", "url"),
    [
        (0, f"{URL}/0?{DC}"),
        ("0", f"{URL}/0?{DC}"),
        ("", f"{URL}?{DC}"),
        (None, f"{URL}?{DC}"),
        (False, f"{URL}?{DC}"),
        (True, f"{URL}?{DC}"),
        (5, f"{URL}/5?{DC}"),
        ("a/b c", f"{URL}/a%2Fb%20c?{DC}"),
        ("é?#&=+!*'()~", f"{URL}/%C3%A9%3F%23%26%3D%2B!*'()~?{DC}"),
    ],
    ids=["int-0", "str-0", "empty", "None", "False", "True", "int-5", "slash-space", "reserved"],
)
def test_read_id_in_the_path(value: object, url: str) -> None:
    assert make().build_url(read(id=value)) == url


@dataclass
class Note:
    """A record object with an ``id`` attribute."""

    id: int | None
    title: str = ""


@pytest.mark.parametrize(
    ("records", "url"),
    [
        ([{"id": 5}], f"{URL}/5?{DC}"),
        ([{"id": 5}, {"id": 6}], f"{URL}/5?{DC}"),
        ([{"title": "no id"}, {"id": 6}], f"{URL}?{DC}"),
        ([{"id": 0}], f"{URL}/0?{DC}"),
        ([{"id": ""}], f"{URL}?{DC}"),
        ([{"id": None}], f"{URL}?{DC}"),
        ([{"id": False}], f"{URL}?{DC}"),
        ([MappingProxyType({"id": 4})], f"{URL}/4?{DC}"),
        ([SimpleNamespace(id=7)], f"{URL}/7?{DC}"),
        ([Note(8)], f"{URL}/8?{DC}"),
        ([Note(None)], f"{URL}?{DC}"),
        ([SimpleNamespace(title="no id attribute")], f"{URL}?{DC}"),
        ([], f"{URL}/9?{DC}"),
    ],
    ids=[
        "dict",
        "first-of-two",
        "first-without-id",
        "id-0",
        "id-empty",
        "id-None",
        "id-False",
        "mapping",
        "attribute",
        "dataclass",
        "dataclass-None",
        "no-attribute",
        "no-records-operation-id",
    ],
)
def test_the_first_records_id_else_the_operation_id(records: list[Any], url: str) -> None:
    assert make().build_url(Operation("update", records=records, id=9)) == url


def test_id_property_names_the_key_or_attribute() -> None:
    proxy = make(id_property="uuid")
    assert proxy.build_url(Operation("update", records=[{"uuid": "u-1", "id": 1}])) == (
        f"{URL}/u-1?{DC}"
    )
    assert proxy.build_url(Operation("update", records=[SimpleNamespace(uuid="u-2")])) == (
        f"{URL}/u-2?{DC}"
    )
    assert proxy.build_url(Operation("update", records=[{"id": 1}])) == f"{URL}?{DC}"


# -- slash, format, existing query strings, relative URLs ----------------------------------


@pytest.mark.parametrize(
    ("url", "options", "operation", "expected"),
    [
        (URL + "/", {}, read(id=5), f"{URL}/5?{DC}"),
        (URL + "/", {}, read(), f"{URL}/?{DC}"),
        (URL, {"format": "json"}, read(), f"{URL}.json?{DC}"),
        (URL, {"format": "json"}, read(id=5), f"{URL}/5.json?{DC}"),
        (URL, {"format": "json"}, read(id=0), f"{URL}/0.json?{DC}"),
        (URL + ".", {"format": "json"}, read(), f"{URL}.json?{DC}"),
        (URL + "/", {"format": "json"}, read(), f"{URL}/.json?{DC}"),
        (URL, {"format": ""}, read(id=5), f"{URL}/5?{DC}"),
        (URL, {"format": None}, read(id=5), f"{URL}/5?{DC}"),
        (URL + "?lang=en", {}, read(id=5), f"{URL}/5?lang=en&{DC}"),
        (URL + "?lang=en", {"format": "json"}, read(id=5), f"{URL}/5.json?lang=en&{DC}"),
        (URL + "?lang=en#top", {}, read(id=5), f"{URL}/5?lang=en&{DC}#top"),
        (URL + "#top", {}, read(id=5), f"{URL}/5?{DC}#top"),
        (URL + "?", {}, read(id=5), f"{URL}/5?{DC}"),
        (URL + "?a=1&", {}, read(), f"{URL}?a=1&{DC}"),
        (URL + "?lang=en", {"no_cache": False}, read(id=5), f"{URL}/5?lang=en"),
        ("/svc-json/notes", {}, read(id=5), f"/svc-json/notes/5?{DC}"),
        ("notes", {"format": "json", "no_cache": False}, read(id="a b"), "notes/a%20b.json"),
        ("", {"no_cache": False}, read(id=5), "/5"),
    ],
    ids=[
        "trailing-slash-with-id",
        "trailing-slash-without-id",
        "format-without-id",
        "format-with-id",
        "format-with-id-0",
        "trailing-dot",
        "format-after-trailing-slash",
        "empty-format",
        "format-None",
        "query",
        "query-and-format",
        "query-and-fragment",
        "fragment",
        "bare-question-mark",
        "query-ending-with-ampersand",
        "query-without-new-params",
        "relative",
        "relative-no-leading-slash",
        "empty-url",
    ],
)
def test_path_rules(url: str, options: dict[str, Any], operation: Operation, expected: str) -> None:
    assert make(url, **options).build_url(operation) == expected


# -- cache buster --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, f"{URL}?{DC}"),
        ({"no_cache": False}, URL),
        ({"cache_string": "cb"}, f"{URL}?cb={CLOCK}"),
        ({"cache_string": None}, URL),
        ({"cache_string": ""}, URL),
    ],
    ids=["default", "no-cache-off", "renamed", "name-None", "name-empty"],
)
def test_cache_buster(options: dict[str, Any], expected: str) -> None:
    assert make(**options).build_url(read()) == expected


def test_the_default_clock_gives_milliseconds_since_the_epoch() -> None:
    before = time.time_ns() // 1_000_000
    url = RestProxy(URL).build_url(read())
    after = time.time_ns() // 1_000_000
    prefix = f"{URL}?_dc="
    assert url.startswith(prefix)
    assert before <= int(url.removeprefix(prefix)) <= after


# -- parameters ----------------------------------------------------------------------------


def encoded(text: str) -> str:
    """Percent-encode the JSON punctuation used in these tables (and spaces)."""
    table = {
        "[": "%5B",
        "]": "%5D",
        "{": "%7B",
        "}": "%7D",
        '"': "%22",
        ":": "%3A",
        ",": "%2C",
        " ": "%20",
    }
    return "".join(table.get(char, char) for char in text)


TITLE_DESC = encoded('[{"property":"title","direction":"DESC"}]')
TITLE_ASC = encoded('[{"property":"title","direction":"ASC"}]')
AUTHOR_ASC = encoded('[{"property":"author","direction":"ASC"}]')
AUTHOR_DESC = encoded('[{"property":"author","direction":"DESC"}]')


@pytest.mark.parametrize(
    ("options", "operation", "query"),
    [
        ({}, read(page=2, start=10, limit=10), "page=2&start=10&limit=10"),
        ({}, read(start=0, limit=25), "start=0&limit=25"),
        ({}, read(page=0, limit=0), "page=0&limit=0"),
        ({}, read(sorters=[{"property": "title", "direction": "DESC"}]), f"sort={TITLE_DESC}"),
        ({}, read(sorters=["title"]), f"sort={TITLE_ASC}"),
        ({}, read(sorters={"property": "title"}), f"sort={TITLE_ASC}"),
        ({}, read(sorters="title"), f"sort={TITLE_ASC}"),
        ({}, read(sorters=[{"property": "title", "direction": None}]), f"sort={TITLE_ASC}"),
        ({}, read(sorters=[]), ""),
        (
            {},
            read(sorters=[{"property": "title", "direction": "DESC"}, "date"]),
            "sort="
            + encoded(
                '[{"property":"title","direction":"DESC"},{"property":"date","direction":"ASC"}]'
            ),
        ),
        (
            {},
            read(filters=[{"property": "author", "value": 1}]),
            "filter=" + encoded('[{"property":"author","value":1}]'),
        ),
        (
            {},
            read(filters={"operator": "like", "value": "a b", "property": "title"}),
            "filter=" + encoded('[{"property":"title","value":"a b","operator":"like"}]'),
        ),
        (
            {},
            read(filters=[{"property": "date", "operator": None}]),
            "filter=" + encoded('[{"property":"date","value":null}]'),
        ),
        (
            {},
            read(filters=[{"property": "tags", "value": ["a", 2, None, True]}]),
            "filter=" + encoded('[{"property":"tags","value":["a",2,null,true]}]'),
        ),
        ({}, read(grouper={"property": "author", "direction": "DESC"}), f"group={AUTHOR_DESC}"),
        ({}, read(grouper="author"), f"group={AUTHOR_ASC}"),
        (
            {},
            read(
                filters=[{"property": "author", "value": 2}],
                sorters=["title"],
                grouper="author",
                limit=5,
                start=5,
                page=2,
                params={"search": "tea"},
            ),
            f"search=tea&page=2&start=5&limit=5&group={AUTHOR_ASC}&sort={TITLE_ASC}&filter="
            + encoded('[{"property":"author","value":2}]'),
        ),
        (
            {"simple_sort_mode": True},
            read(sorters=[{"property": "title", "direction": "DESC"}, "date"]),
            "sort=title&dir=DESC",
        ),
        ({"simple_sort_mode": True}, read(sorters=["title"]), "sort=title&dir=ASC"),
        (
            {"simple_sort_mode": True, "direction_param": "order"},
            read(sorters=["title"]),
            "sort=title&order=ASC",
        ),
        (
            {"simple_sort_mode": True, "direction_param": None},
            read(sorters=["title"]),
            "sort=title",
        ),
        (
            {"simple_sort_mode": True, "sort_param": None},
            read(sorters=["title"]),
            "",
        ),
        (
            {"simple_group_mode": True},
            read(grouper={"property": "author", "direction": "DESC"}, sorters=["title"]),
            f"group=author&groupDir=DESC&sort={TITLE_ASC}",
        ),
        (
            {"simple_group_mode": True, "simple_sort_mode": True},
            read(grouper="author", sorters=["date"], limit=3),
            "limit=3&group=author&groupDir=ASC&sort=date&dir=ASC",
        ),
        (
            {"simple_group_mode": True, "group_param": None},
            read(grouper="author"),
            "",
        ),
    ],
    ids=[
        "paging",
        "start-0",
        "page-0-limit-0",
        "sorter-dict",
        "sorter-name",
        "one-sorter-dict",
        "one-sorter-name",
        "direction-None",
        "no-sorters",
        "two-sorters",
        "filter",
        "one-filter-fixed-key-order",
        "filter-without-value-operator-None",
        "filter-list-value",
        "grouper",
        "grouper-name",
        "full-order",
        "simple-sort",
        "simple-sort-default-direction",
        "simple-sort-direction-renamed",
        "simple-sort-direction-param-None",
        "simple-sort-sort-param-None",
        "simple-group",
        "both-simple-modes",
        "simple-group-group-param-None",
    ],
)
def test_query_parameters(options: dict[str, Any], operation: Operation, query: str) -> None:
    expected = f"{URL}?{DC}&{query}" if query else f"{URL}?{DC}"
    assert make(**options).build_url(operation) == expected


FULL = read(
    page=1,
    start=0,
    limit=10,
    sorters=["title"],
    filters=[{"property": "a", "value": "b"}],
    grouper="c",
)


@pytest.mark.parametrize(
    ("options", "query"),
    [
        (
            {
                "page_param": "p",
                "start_param": "offset",
                "limit_param": "per_page",
                "sort_param": "orderby",
                "filter_param": "where",
                "group_param": "groupby",
            },
            "p=1&offset=0&per_page=10&groupby="
            + encoded('[{"property":"c","direction":"ASC"}]')
            + f"&orderby={TITLE_ASC}&where="
            + encoded('[{"property":"a","value":"b"}]'),
        ),
        (
            {
                "page_param": None,
                "start_param": None,
                "limit_param": None,
                "sort_param": None,
                "filter_param": None,
                "group_param": None,
            },
            "",
        ),
        (
            {"page_param": None, "group_param": None, "filter_param": None},
            f"start=0&limit=10&sort={TITLE_ASC}",
        ),
    ],
    ids=["renamed", "all-None", "some-None"],
)
def test_parameter_names(options: dict[str, Any], query: str) -> None:
    expected = f"{URL}?{DC}&{query}" if query else f"{URL}?{DC}"
    assert make(**options).build_url(FULL) == expected


@pytest.mark.parametrize(
    ("options", "operation", "query"),
    [
        ({"extra_params": {"a": "1", "b": "2"}}, read(params={"b": "3", "c": "4"}), "a=1&b=3&c=4"),
        ({"extra_params": {"a": "1", "c": ""}}, read(params={"a": None, "b": 0}), "c=&b=0"),
        ({}, read(params={"limit": 5, "q": "x"}, limit=10), "limit=10&q=x"),
        ({"extra_params": {"lang": "en"}}, Operation("update", records=[{"id": 5}]), "lang=en"),
        ({}, read(params={"n": 3, "flag": True}), "n=3&flag=True"),
        (
            {},
            read(params={"q": "café & crème", "a b": "x=y/z?", "t": "!*'()~"}),
            "q=caf%C3%A9%20%26%20cr%C3%A8me&a%20b=x%3Dy%2Fz%3F&t=!*'()~",
        ),
    ],
    ids=[
        "operation-wins-first-position-kept",
        "None-value-not-sent",
        "paging-value-wins-in-place",
        "extra-params-on-writes",
        "values-are-str",
        "percent-encoding",
    ],
)
def test_extra_params_and_params(options: dict[str, Any], operation: Operation, query: str) -> None:
    path = f"{URL}/5" if operation.action == "update" else URL
    assert make(**options).build_url(operation) == f"{path}?{DC}&{query}"


@pytest.mark.parametrize(
    ("options", "operation", "expected"),
    [
        (
            {"extra_params": {"id": "8"}},
            read(id=5, params={"id": "9", "q": "x"}),
            f"{URL}/5?{DC}&q=x",
        ),
        ({}, read(id="", params={"id": "9"}), f"{URL}?{DC}&id=9"),
        ({"append_id": False}, read(id=5), f"{URL}?{DC}&id=5"),
        ({"append_id": False}, read(id=0), f"{URL}?{DC}&id=0"),
        ({"append_id": False}, read(id="0"), f"{URL}?{DC}&id=0"),
        ({"append_id": False}, read(id=""), f"{URL}?{DC}"),
        ({"append_id": False}, read(id=False), f"{URL}?{DC}"),
        ({"append_id": False}, read(id="a b"), f"{URL}?{DC}&id=a%20b"),
        (
            {"append_id": False},
            read(id=5, params={"a": "1", "id": "9", "b": "2"}),
            f"{URL}?{DC}&a=1&id=5&b=2",
        ),
        ({"append_id": False}, Operation("update", records=[{"id": 5}]), f"{URL}?{DC}"),
        ({"append_id": False}, Operation("destroy", id=5), f"{URL}?{DC}"),
        ({"append_id": False, "id_param": "note"}, read(id=5), f"{URL}?{DC}&note=5"),
        ({"append_id": False, "id_param": None}, read(id=5), f"{URL}?{DC}"),
        ({"id_param": None}, read(id=5, params={"id": "9"}), f"{URL}/5?{DC}&id=9"),
    ],
    ids=[
        "dropped-when-in-path",
        "kept-when-id-invalid",
        "append-id-off-read",
        "append-id-off-id-0",
        "append-id-off-str-0",
        "append-id-off-empty",
        "append-id-off-False",
        "append-id-off-encoded",
        "append-id-off-replaces-in-place",
        "append-id-off-update-no-param",
        "append-id-off-destroy-no-param",
        "renamed-id-param",
        "id-param-None",
        "id-param-None-keeps-params",
    ],
)
def test_the_id_query_parameter(
    options: dict[str, Any], operation: Operation, expected: str
) -> None:
    assert make(**options).build_url(operation) == expected


@pytest.mark.parametrize(
    ("operation", "message"),
    [
        (read(sorters=[{"direction": "ASC"}]), "needs a non-empty string 'property'"),
        (read(sorters=[{"property": ""}]), "needs a non-empty string 'property'"),
        (read(sorters=[{"property": "a", "dir": "ASC"}]), "sorter has unknown keys: dir"),
        (read(sorters=[{"property": "a", "direction": 1}]), "direction is a string"),
        (read(sorters=[3]), "a sorter is a property name or a mapping"),
        (read(filters=["title"]), "a filter is a mapping"),
        (read(filters=[{"value": 1}]), "needs a non-empty string 'property'"),
        (read(filters=[{"property": "a", "op": "="}]), "filter has unknown keys: op"),
        (read(filters=[{"property": "a", "operator": 1}]), "operator is a string"),
        (read(grouper={"property": "a", "root": "x"}), "grouper has unknown keys: root"),
        (read(grouper=3), "a grouper is a property name or a mapping"),
        (read(sorters=3), "sorters must be a list"),
        (read(filters=3), "filters must be a list"),
    ],
    ids=[
        "sorter-without-property",
        "sorter-empty-property",
        "sorter-unknown-key",
        "sorter-direction-not-str",
        "sorter-not-mapping",
        "filter-not-mapping",
        "filter-without-property",
        "filter-unknown-key",
        "filter-operator-not-str",
        "grouper-unknown-key",
        "grouper-not-mapping",
        "sorters-not-a-list",
        "filters-not-a-list",
    ],
)
def test_invalid_sorters_filters_groupers(operation: Operation, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make().build_url(operation)


# -- build_request -------------------------------------------------------------------------


def body(request: httpx.Request) -> Any:
    return json.loads(request.content)


def test_build_request_create_sends_the_record() -> None:
    request = make().build_request(Operation("create", records=[{"title": "Hi"}]))
    assert (request.method, str(request.url)) == ("POST", f"{URL}?{DC}")
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["Accept"] == "application/json"
    assert body(request) == {"title": "Hi"}
    assert "X-SVC-Nonce" not in request.headers


def test_build_request_batch_sends_a_list() -> None:
    request = make().build_request(Operation("update", records=[{"id": 3}, {"id": 4}]))
    assert (request.method, str(request.url)) == ("PUT", f"{URL}/3?{DC}")
    assert body(request) == [{"id": 3}, {"id": 4}]


@pytest.mark.parametrize(
    "operation",
    [
        read(id=5),
        Operation("destroy", records=[{"id": 5}]),
        Operation("destroy", id=5),
        Operation("create"),
    ],
    ids=["read", "destroy-record", "destroy-id", "create-without-records"],
)
def test_build_request_without_body(operation: Operation) -> None:
    request = make().build_request(operation)
    assert request.content == b""
    assert "Content-Type" not in request.headers


def test_build_request_batched_destroy_of_several_records_sends_them() -> None:
    request = make().build_request(Operation("destroy", records=[{"id": 3}, {"id": 4}]))
    assert (request.method, str(request.url)) == ("DELETE", f"{URL}/3?{DC}")
    assert body(request) == [{"id": 3}, {"id": 4}]


def test_build_request_encodes_record_objects() -> None:
    records = [Note(1, "dataclass"), SimpleNamespace(id=2, title="ns", _private=1)]
    records.append(MappingProxyType({"id": 3}))
    request = make().build_request(Operation("update", records=records))
    assert body(request) == [
        {"id": 1, "title": "dataclass"},
        {"id": 2, "title": "ns"},
        {"id": 3},
    ]


def test_build_request_rejects_what_json_cannot_hold() -> None:
    with pytest.raises(TypeError):
        make().build_request(Operation("create", records=[{"when": object()}]))


def test_build_request_sends_the_held_nonce() -> None:
    proxy = make()
    proxy.nonce = "abc123"
    assert proxy.build_request(read()).headers["X-SVC-Nonce"] == "abc123"


def test_build_request_resolves_a_relative_url_against_the_client_base_url() -> None:
    with httpx.Client(base_url="http://example.test/svc-json/") as client:
        proxy = make("demo/v1/notes", client=client)
        assert proxy.build_url(read(id=5)) == f"demo/v1/notes/5?{DC}"
        request = proxy.build_request(read(id=5))
    assert str(request.url) == f"{URL}/5?{DC}"


def test_build_request_keeps_a_relative_url_without_a_base_url() -> None:
    # DESIGN §4: build_request needs no network, and a relative URL stays relative.
    proxy = make("/users")
    request = proxy.build_request(Operation("update", records=[{"id": 7, "name": "Ann"}]))
    assert request.method == "PUT"
    assert str(request.url) == f"/users/7?{DC}"
    assert not request.url.is_absolute_url
    assert request.headers["Content-Type"] == "application/json"
    assert json.loads(request.content) == {"id": 7, "name": "Ann"}
    assert str(make("users").build_request(read(id=5)).url) == f"users/5?{DC}"
    proxy.close()


def _no_network(request: httpx.Request) -> httpx.Response:
    raise AssertionError(f"sent {request.url}")


@pytest.mark.parametrize("action", ["read", "create", "update", "destroy"])
def test_sending_a_relative_url_needs_a_base_url(action: str) -> None:
    with httpx.Client(transport=httpx.MockTransport(_no_network)) as client:
        proxy = make("/users", client=client)
        with pytest.raises(ValueError, match=r"cannot send .* /users.*relative.*base_url"):
            if action == "read":
                proxy.read(5)
            else:
                getattr(proxy, action)({"id": 5})


def test_async_sending_a_relative_url_needs_a_base_url() -> None:
    async def read() -> Any:
        async with httpx.AsyncClient(transport=httpx.MockTransport(_no_network)) as client:
            proxy = AsyncRestProxy("/users", clock=lambda: CLOCK, client=client)
            assert str(proxy.build_request(Operation("read", id=5)).url) == f"/users/5?{DC}"
            return await proxy.read(5)

    with pytest.raises(ValueError, match="relative"):
        asyncio.run(read())


def test_proxy_error_attributes() -> None:
    error = ProxyError("rest_no_route", "No route.", 404, {"status": 404})
    assert (error.code, error.message, error.status, error.data) == (
        "rest_no_route",
        "No route.",
        404,
        {"status": 404},
    )
    assert str(error) == "404 rest_no_route: No route."
    assert repr(error) == "ProxyError('rest_no_route', 'No route.', 404)"
