"""CollectionTable on every engine: migration, single items, versions, queries, cursors, the
change log, and rollbacks."""

from __future__ import annotations

import enum
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from svcrest.store import Store, StoreError, collection_table, open_store
from svcrest.store.changes import Change, changes_after, last_change, purge_changes
from svcrest.store.collection_columns import MAX_INT, CollectionError, Column
from svcrest.store.collection_query import Filter, Query, Sort, parse_filters, parse_sort
from svcrest.store.collection_table import CollectionTable, VersionMismatch

NOW = 1_700_000_000.0
SCHEMA: dict[str, Any] = {
    "title": "task",
    "type": "object",
    "properties": {
        "id": {"type": "integer", "readonly": True},
        "title": {"type": "string", "default": ""},
        "priority": {"type": "integer", "default": 0},
        "score": {"type": "number"},
        "done": {"type": "boolean", "default": False},
        "due": {"type": "string", "format": "date-time"},
        "status": {"type": "string", "enum": ["open", "closed"], "default": "open"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "meta": {"type": "object"},
    },
}
BAD_TEXT = "title must not contain a NUL character or a lone surrogate."
EMPTY = {
    "title": "",
    "priority": 0,
    "score": None,
    "done": False,
    "due": None,
    "status": "open",
    "tags": None,
    "meta": None,
}


@pytest.fixture
def store(store_location: str | None) -> Iterator[Store]:
    opened = open_store(store_location)
    yield opened
    opened.close()


def make_table(store: Store, schema: dict[str, Any] = SCHEMA, **options: Any) -> CollectionTable:
    defaults: dict[str, Any] = {
        "sortable": ("title", "priority", "done", "status", "score_s"),
        "filterable": ("title", "priority", "score", "done", "due", "status"),
        "searchable": ("title",),
        "secret": b"k" * 32,
        "clock": lambda: NOW,
    }
    defaults["sortable"] = tuple(n for n in defaults["sortable"] if n in schema["properties"])
    defaults.update(options)
    return CollectionTable(store, schema, **defaults)


@pytest.fixture
def table(store: Store) -> CollectionTable:
    made = make_table(store)
    made.migrate()
    return made


def columns(store: Store, name: str) -> list[str]:
    with store.read() as conn:
        if store.dialect == "sqlite":
            rows = conn.execute("SELECT name FROM pragma_table_info(?) ORDER BY cid", (name,))
        else:
            rows = conn.execute(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_schema = current_schema() AND table_name = ?"
                " ORDER BY ordinal_position",
                (name,),
            )
        return [str(row[0]) for row in rows.fetchall()]


def count(store: Store, sql: str) -> int:
    row = store.read_one(sql)
    return int(row[0])


def ids(page_items: list[dict[str, Any]]) -> list[int]:
    return [item["id"] for item in page_items]


# -- migration -----------------------------------------------------------------------------------


def test_migration_creates_the_table_with_id_and_version(
    table: CollectionTable, store: Store
) -> None:
    assert columns(store, "task") == [
        "id", "version", "title", "priority", "score", "done", "due", "status", "tags", "meta",
    ]  # fmt: skip
    table.migrate()  # idempotent
    make_table(store).migrate()  # a restart
    assert len(columns(store, "task")) == 10


def test_a_new_property_adds_a_column_filled_with_its_default(store: Store) -> None:
    first = make_table(store)
    item = first.insert({"title": "old"})
    schema = {
        **SCHEMA,
        "properties": {**SCHEMA["properties"], "rank": {"type": "integer", "default": 7}},
    }
    second = make_table(store, schema)
    second.migrate()
    assert columns(store, "task")[-1] == "rank"
    assert second.get(item["id"]) == {"id": 1, **EMPTY, "title": "old", "rank": 7, "version": 1}
    assert second.insert({})["rank"] == 7


def test_a_retyped_column_or_a_required_one_on_rows_is_refused(store: Store) -> None:
    make_table(store).insert({"title": "x"})
    retyped = {**SCHEMA, "properties": {**SCHEMA["properties"], "priority": {"type": "string"}}}
    with pytest.raises(StoreError, match="column 'priority' of table 'task' is"):
        make_table(store, retyped, sortable=()).migrate()
    required = {
        **SCHEMA,
        "properties": {**SCHEMA["properties"], "kind": {"type": "string", "required": True}},
    }
    with pytest.raises(StoreError, match="cannot add required property 'kind'"):
        make_table(store, required).migrate()
    assert "kind" not in columns(store, "task")  # rolled back


def test_processes_starting_together_migrate_once(
    engine: str, store_location: str | None, tmp_path: Path
) -> None:
    location = str(tmp_path / "shared.db") if engine == "sqlite" else store_location
    stores = [open_store(location) for _ in range(4)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(stores))

    def start(one: Store) -> None:
        try:
            barrier.wait()
            make_table(one).migrate()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(one,)) for one in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert errors == []
        assert len(columns(stores[0], "task")) == 10
        assert make_table(stores[1]).insert({"title": "a"})["id"] == 1
    finally:
        for one in stores:
            one.close()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"table": "users"}, "is the site's own"),
        ({"table": "x; DROP TABLE users"}, "cannot name a column or table"),
        ({"table": 'a"b'}, "cannot name a column or table"),
        ({"sortable": ("score",)}, "needs a default or required"),
        ({"sortable": ("tags",)}, "is an object or array"),
        ({"sortable": ("nope",)}, "not a property of the schema"),
        ({"searchable": ("priority",)}, "is not a string"),
        ({"filterable": ("meta",)}, "is an object or array"),
        ({"default_sort": (Sort("score"),)}, "default_sort names Sort"),
        ({"indexes": [(Sort("priority"), Sort("score"))]}, "indexes names Sort"),
        ({"indexes": [("priority",)]}, "indexes names 'priority', which is not a sortable"),
    ],
    ids=["reserved", "injection", "quote", "nullable-sort", "json-sort", "unknown", "search-int",
         "filter-json", "default-sort", "index", "index-text"],
)  # fmt: skip
def test_declaration_mistakes_raise_at_once(
    store: Store, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        make_table(store, **options)


def test_property_names_that_cannot_be_columns_are_refused(store: Store) -> None:
    schema = {"title": "t", "properties": {'x" text); DROP TABLE users; --': {"type": "string"}}}
    with pytest.raises(ValueError, match="cannot name a column or table"):
        CollectionTable(store, schema)


# -- single items --------------------------------------------------------------------------------


def test_insert_get_update_delete(table: CollectionTable) -> None:
    created = table.insert(
        {
            "title": "Milk",
            "score": 2.5,
            "done": True,
            "due": "2024-02-29T10:00:00+02:00",
            "tags": ["a", "b"],
            "meta": {"x": {"y": [1, None, "z"]}},
        }
    )
    expected = {
        "id": 1,
        **EMPTY,
        "title": "Milk",
        "score": 2.5,
        "done": True,
        "due": "2024-02-29T08:00:00Z",
        "tags": ["a", "b"],
        "meta": {"x": {"y": [1, None, "z"]}},
        "version": 1,
    }
    assert created == expected
    assert table.get(1) == expected
    assert table.get(2) is None
    assert table.get(0) is None
    assert table.get(2**63) is None
    updated = table.update(1, {"title": "Oat milk", "done": False, "due": None})
    assert updated == {**expected, "title": "Oat milk", "done": False, "due": None, "version": 2}
    assert table.update(1, {}) == updated  # nothing to write: no new version
    assert table.update(9, {"title": "x"}) is None
    assert table.delete(1) == updated
    assert table.get(1) is None
    assert table.delete(1) is None
    assert table.insert({})["id"] == 2  # ids are never reused


def test_expected_version_mismatch_writes_nothing(table: CollectionTable) -> None:
    table.insert({"title": "a"})
    assert table.update(1, {"title": "b"}, expected_version=1) == {
        "id": 1, **EMPTY, "title": "b", "version": 2,
    }  # fmt: skip
    assert table.update(1, {"title": "c"}, expected_version=1) == VersionMismatch(1, 2)
    assert table.update(1, {}, expected_version=1) == VersionMismatch(1, 2)
    assert table.delete(1, expected_version=1) == VersionMismatch(1, 2)
    assert table.get(1) == {"id": 1, **EMPTY, "title": "b", "version": 2}
    assert table.update(5, {"title": "c"}, expected_version=1) is None
    for wrong in (2**63, -1, 0, True):
        assert table.update(1, {"title": "c"}, expected_version=wrong) == VersionMismatch(1, 2)
        assert table.delete(1, expected_version=wrong) == VersionMismatch(1, 2)
    assert table.delete(1, expected_version=2) == {"id": 1, **EMPTY, "title": "b", "version": 2}


@pytest.mark.parametrize(
    ("values", "param", "reason"),
    [
        ({"priority": "high"}, "priority", "priority is not of type integer."),
        ({"priority": True}, "priority", "priority is not of type integer."),
        ({"priority": 2**63}, "priority", "priority is not of type integer."),
        ({"score": "NaN"}, "score", "score is not of type number."),
        ({"done": "maybe"}, "done", "done is not of type boolean."),
        ({"due": "yesterday"}, "due", "Invalid date for due."),
        ({"status": "lost"}, "status", "status is not one of the allowed values."),
        ({"title": None}, "title", "title must not be null."),
        ({"title": "a\x00b"}, "title", BAD_TEXT),
        ({"title": "a\ud800"}, "title", BAD_TEXT),
        ({"version": 5}, "version", "version is not a property of task."),
        ({"id": 5}, "id", "id is not a property of task."),
    ],
    ids=["int-text", "int-bool", "int-range", "nan", "bool", "date", "enum", "not-null", "nul",
         "surrogate", "version", "id"],
)  # fmt: skip
def test_values_of_the_wrong_type_are_400(
    table: CollectionTable, values: dict[str, Any], param: str, reason: str
) -> None:
    with pytest.raises(CollectionError) as raised:
        table.insert(values)
    assert raised.value.to_dict() == {
        "code": "rest_invalid_param",
        "message": f"Invalid parameter(s): {param}",
        "data": {
            "status": 400,
            "params": {param: reason},
            "details": {param: {"code": "rest_invalid_param", "message": reason, "data": None}},
        },
    }
    assert table.query(Query()).total == 0


def test_text_values_are_read_as_wordpress_sanitizes_them(table: CollectionTable) -> None:
    item = table.insert(
        {"priority": "12", "score": "1.5", "done": "true", "due": "2020-01-02 03:04:05"}
    )
    assert (item["priority"], item["score"], item["done"], item["due"]) == (
        12,
        1.5,
        True,
        "2020-01-02T03:04:05Z",
    )


# -- queries -------------------------------------------------------------------------------------

ROWS: list[dict[str, Any]] = [
    {"title": "apple", "priority": 2, "score": 1.5, "done": True, "due": "2024-01-01T00:00:00Z"},
    {
        "title": "Banana",
        "priority": 1,
        "score": None,
        "done": False,
        "due": "2024-06-01T12:00:00Z",
        "status": "closed",
    },
    {"title": "cherry pie", "priority": 2, "score": 3.0, "done": False, "due": None},
    {
        "title": "date",
        "priority": 3,
        "score": -1.0,
        "done": True,
        "due": "2023-12-31T23:59:59Z",
        "status": "closed",
    },
    {
        "title": "elderberry",
        "priority": 1,
        "score": 0.0,
        "done": False,
        "due": "2024-06-01T12:00:00+00:00",
    },
]


@pytest.fixture
def filled(table: CollectionTable) -> CollectionTable:
    for row in ROWS:
        table.insert(row)
    return table


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ([Filter("priority", 2, "=")], [1, 3]),
        ([Filter("priority", 2, "eq")], [1, 3]),
        ([Filter("priority", "2", "==")], [1, 3]),
        ([Filter("priority", 2, "!=")], [2, 4, 5]),
        ([Filter("priority", 2, "ne")], [2, 4, 5]),
        ([Filter("score", 1.5, "!=")], [2, 3, 4, 5]),  # a missing score differs too
        ([Filter("priority", 2, "<")], [2, 5]),
        ([Filter("priority", 2, "lt")], [2, 5]),
        ([Filter("priority", 2, "<=")], [1, 2, 3, 5]),
        ([Filter("priority", 2, "le")], [1, 2, 3, 5]),
        ([Filter("priority", 2, ">")], [4]),
        ([Filter("priority", 2, "gt")], [4]),
        ([Filter("priority", 2, ">=")], [1, 3, 4]),
        ([Filter("priority", 2, "ge")], [1, 3, 4]),
        ([Filter("priority", [1, 3], "in")], [2, 4, 5]),
        ([Filter("priority", "1,3", "in")], [2, 4, 5]),
        ([Filter("priority", [], "in")], []),
        ([Filter("priority", [1, 3], "notin")], [1, 3]),
        ([Filter("score", [1.5, 0], "notin")], [2, 3, 4]),
        ([Filter("priority", [], "notin")], [1, 2, 3, 4, 5]),
        ([Filter("title", "ERR", "like")], [3, 5]),
        ([Filter("title", "an")], [2]),  # no operator: like, for a string
        ([Filter("priority", 1)], [2, 5]),  # no operator: =, for others
        ([Filter("title", "apple", "=")], [1]),
        ([Filter("title", "b", ">")], [3, 4, 5]),  # code point order: "Banana" < "b"
        ([Filter("score", None, "=")], [2]),
        ([Filter("score", None, "!=")], [1, 3, 4, 5]),
        ([Filter("score", 0, ">")], [1, 3]),
        ([Filter("done", True)], [1, 4]),
        ([Filter("done", "false")], [2, 3, 5]),
        ([Filter("due", "2024-06-01T14:00:00+02:00")], [2, 5]),
        ([Filter("due", "2024-01-01T00:00:00Z", "<")], [4]),
        ([Filter("status", ["closed"], "in")], [2, 4]),
        ([Filter("id", [2, 4], "in")], [2, 4]),
        ([Filter("priority", 1, ">"), Filter("done", False)], [3]),
    ],
    ids=lambda value: None,
)
def test_every_operator(
    filled: CollectionTable, filters: list[Filter], expected: list[int]
) -> None:
    page = filled.query(Query(filters=tuple(filters), per_page=100))
    assert (ids(page.items), page.total) == (expected, len(expected))


@pytest.mark.parametrize(
    ("filters", "param", "reason"),
    [
        ([Filter("priority", 1, "/=")], "filter", "filter[0].operator '/=' is not supported"),
        ([Filter("priority", 1, "= 1 OR 1=1")], "filter", "is not supported"),
        ([Filter("tags", "a")], "filter", "filter cannot filter by 'tags'"),
        ([Filter('priority" OR 1=1 --', 1)], "filter", "filter cannot filter by"),
        ([Filter("priority", "1 OR 1=1")], "filter", "priority is not of type integer."),
        ([Filter("priority", 1, "like")], "filter", "like needs a string property"),
        ([Filter("priority", None, "<")], "filter", "must not be null for <"),
        ([Filter("priority", list(range(101)), "in")], "filter", "must not list more than 100"),
        ([Filter("priority", {"a": 1}, "in")], "filter", "filter must be a list."),
        ([Filter("title", "a\x00", "like")], "filter", "value must be a string (without NUL)"),
        ([Filter("title", ["a\x00"], "in")], "filter", "must not contain a NUL character"),
        ([Filter("title", "\udfff", "like")], "filter", "value must be a string (without NUL)"),
    ],
    ids=["regex", "operator-injection", "json", "name-injection", "value-injection", "like-int",
         "null", "long-in", "in-object", "like-nul", "in-nul", "like-surrogate"],
)  # fmt: skip
def test_bad_filters_are_400(
    filled: CollectionTable, filters: list[Filter], param: str, reason: str
) -> None:
    with pytest.raises(CollectionError) as raised:
        filled.query(Query(filters=tuple(filters)))
    assert raised.value.param == param
    assert reason in raised.value.reason


def test_injection_in_values_is_only_data(filled: CollectionTable, store: Store) -> None:
    hostile = "' OR '1'='1'; DROP TABLE task; --"
    assert filled.query(Query(filters=(Filter("title", hostile, "="),))).items == []
    assert filled.query(Query(search=hostile)).items == []
    item = filled.insert({"title": hostile})
    assert filled.get(item["id"])["title"] == hostile  # type: ignore[index]
    assert ids(filled.query(Query(search="DROP TABLE")).items) == [6]
    assert count(store, "SELECT COUNT(*) FROM task") == 6


def test_long_names_are_not_repeated_in_full(filled: CollectionTable) -> None:
    with pytest.raises(CollectionError) as raised:
        filled.query(Query(sort=(Sort("x" * 10_000),)))
    assert raised.value.reason.startswith(
        "sort cannot sort by 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...: use"
    )
    with pytest.raises(CollectionError) as raised:
        filled.query(Query(filters=(Filter("title", "a", "y" * 10_000),)))
    assert len(raised.value.reason) < 200


def test_bad_sorts_are_400(filled: CollectionTable) -> None:
    for name in ("score", "tags", "title; DROP TABLE task", 'title" DESC, "id'):
        with pytest.raises(CollectionError) as raised:
            filled.query(Query(sort=(Sort(name),)))
        assert raised.value.param == "sort"
        assert raised.value.reason.startswith(f"sort cannot sort by {name!r}: use one of done, id,")


def test_sort_multi_key(filled: CollectionTable) -> None:
    def order(*keys: Sort) -> list[int]:
        return ids(filled.query(Query(sort=keys)).items)

    assert order() == [1, 2, 3, 4, 5]
    assert order(Sort("title")) == [2, 1, 3, 4, 5]  # code point order: "B" < "a"
    assert order(Sort("priority", descending=True), Sort("title")) == [4, 1, 3, 2, 5]
    assert order(Sort("priority"), Sort("title", descending=True)) == [5, 2, 3, 1, 4]
    assert order(Sort("done"), Sort("priority", descending=True)) == [3, 5, 2, 4, 1]
    assert order(Sort("priority", descending=True)) == [4, 3, 1, 5, 2]  # ties: id, same way
    assert order(Sort("id", descending=True), Sort("title")) == [5, 4, 3, 2, 1]


def test_parse_ext_sort_and_filter() -> None:
    assert parse_sort('[{"property":"title","direction":"DESC"},{"property":"id"}]') == (
        Sort("title", True),
        Sort("id", False),
    )
    assert parse_sort({"property": "title", "direction": "asc"}) == (Sort("title"),)
    assert parse_sort("") == ()
    assert parse_filters('[{"property":"priority","value":[1,2],"operator":"in"}]') == (
        Filter("priority", [1, 2], "in"),
    )
    for bad, reason in (
        ("[{", "sort is not valid JSON."),
        ("3", "sort must be a JSON array of objects."),
        ('[{"direction":"ASC"}]', "sort[0] must be an object with a property."),
        ('[{"property":"a","direction":"UP"}]', "sort[0].direction must be ASC or DESC."),
        ([{"property": "a"}] * 11, "sort must not have more than 10 entries."),
    ):
        with pytest.raises(CollectionError) as raised:
            parse_sort(bad)
        assert raised.value.reason == reason
    with pytest.raises(CollectionError, match="filter"):
        parse_filters('[{"property":"a","operator":5}]')


def test_search_escapes_like_wildcards(table: CollectionTable) -> None:
    for title in ("100% done", "100 percent", "a_b", "axb", "back\\slash", "Xa_Bx"):
        table.insert({"title": title})

    def found(text: str) -> list[int]:
        return ids(table.query(Query(search=text)).items)

    assert found("%") == [1]
    assert found("0%") == [1]
    assert found("_") == [3, 6]
    assert found("A_B") == [3, 6]  # ASCII case is ignored
    assert found("\\") == [5]
    assert found("k\\s") == [5]
    assert found("100") == [1, 2]
    assert found("done 100") == [1]  # every word, in any order
    assert found('"0 p"') == [2]  # a quoted phrase is one term
    assert found("  ") == [1, 2, 3, 4, 5, 6]  # no words: no search
    assert found("100 nothing") == []
    with pytest.raises(CollectionError, match=r"Invalid parameter\(s\): search"):
        found("a\x00b")
    assert ids(table.query(Query(filters=(Filter("title", "a_", "like"),))).items) == [3, 6]


def test_paging_include_exclude_and_totals(filled: CollectionTable) -> None:
    page = filled.query(Query(per_page=2, page=2))
    assert (ids(page.items), page.total) == ([3, 4], 5)
    assert page.next_cursor is not None
    last = filled.query(Query(per_page=2, page=3))
    assert (ids(last.items), last.total, last.next_cursor) == ([5], 5, None)
    assert ids(filled.query(Query(per_page=2, offset=3)).items) == [4, 5]
    assert filled.query(Query(page=9)).items == []
    assert ids(filled.query(Query(include=(5, 1, 9))).items) == [1, 5]
    included = filled.query(Query(include=(1, 2, 3), exclude=(2,)))
    assert (ids(included.items), included.total) == ([1, 3], 2)
    assert filled.query(Query(count=False)).total is None
    for query, param in (
        (Query(per_page=0), "per_page"),
        (Query(per_page=101), "per_page"),
        (Query(page=0), "page"),
        (Query(page=2**62), "page"),
        (Query(offset=2**63), "offset"),
        (Query(offset=-1), "offset"),
        (Query(include=(0,)), "include"),
        (Query(cursor="x", page=2), "cursor"),
    ):
        with pytest.raises(CollectionError) as raised:
            filled.query(query)
        assert raised.value.param == param


def test_include_order_lists_the_ids_in_the_order_given(filled: CollectionTable) -> None:
    given = (4, 1, 5, 2)
    ordered = filled.query(Query(include=given, include_order=True))
    assert (ids(ordered.items), ordered.total, ordered.next_cursor) == ([4, 1, 5, 2], 4, None)
    second = filled.query(Query(include=given, include_order=True, per_page=2, page=2))
    assert (ids(second.items), second.total) == ([5, 2], 4)
    assert ids(filled.query(Query(include=given, include_order=True, offset=1)).items) == [1, 5, 2]
    # A repeated id keeps its first place; sort keys give way to the order of include.
    by_priority = (Sort("priority", descending=True),)
    repeated = Query(include=(3, 1, 3, 9), include_order=True, sort=by_priority)
    assert ids(filled.query(repeated).items) == [3, 1]
    narrowed = Query(
        include=given, exclude=(1,), include_order=True, filters=(Filter("id", 2, ">"),)
    )
    assert ids(filled.query(narrowed).items) == [4, 5]
    for query, param in (
        (Query(include_order=True), "orderby"),
        (Query(include=given, include_order=True, cursor="x"), "cursor"),
    ):
        with pytest.raises(CollectionError) as raised:
            filled.query(query)
        assert raised.value.param == param


def test_include_order_binds_every_id(store: Store) -> None:
    plan = make_table(store)._plan(store)
    keys = plan.keys(Query())
    sql, params = plan.select('"id"', ['"id" IN (?, ?)'], [31, 7], keys, 11, 0, ranked=(31, 7))
    assert sql == (
        'SELECT "id" FROM "task" WHERE "id" IN (?, ?)'
        ' ORDER BY CASE "id" WHEN ? THEN 0 WHEN ? THEN 1 END, "id" ASC LIMIT ? OFFSET ?'
    )
    assert params == [31, 7, 31, 7, 11, 0]


# -- cursors -------------------------------------------------------------------------------------


def walk(table: CollectionTable, query: Query) -> list[int]:
    seen: list[int] = []
    cursor = None
    for _ in range(100):
        page = table.query(Query(**{**_fields(query), "cursor": cursor}))
        seen.extend(ids(page.items))
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor
    raise AssertionError("the cursor never ended")


def _fields(query: Query) -> dict[str, Any]:
    return {name: getattr(query, name) for name in Query.__dataclass_fields__}


@pytest.mark.parametrize(
    "sort",
    [
        (),
        (Sort("priority"),),
        (Sort("priority", True),),
        (Sort("priority", True), Sort("title")),
        (Sort("done"), Sort("priority", True), Sort("title", True)),
        (Sort("status"), Sort("id", True)),
    ],
    ids=["id", "ties-asc", "ties-desc", "mixed", "three-keys", "id-desc"],
)
def test_cursor_pages_are_offset_pages(table: CollectionTable, sort: tuple[Sort, ...]) -> None:
    for number in range(23):
        table.insert(
            {
                "title": f"t{number % 4}",
                "priority": number % 3,
                "done": number % 2 == 0,
                "status": "closed" if number % 5 == 0 else "open",
            }
        )
    full = ids(table.query(Query(sort=sort, per_page=100)).items)
    assert sorted(full) == list(range(1, 24))
    by_offset = [
        item
        for page in range(1, 7)
        for item in ids(table.query(Query(sort=sort, per_page=4, page=page)).items)
    ]
    assert by_offset == full
    assert walk(table, Query(sort=sort, per_page=4)) == full
    filtered = Query(sort=sort, per_page=3, filters=(Filter("priority", 0, "!="),))
    assert walk(table, filtered) == ids(
        table.query(Query(**{**_fields(filtered), "per_page": 100})).items
    )


def test_cursors_are_checked(filled: CollectionTable, store: Store) -> None:
    cursor = filled.query(Query(per_page=2, sort=(Sort("title"),))).next_cursor
    assert cursor is not None
    assert ids(filled.query(Query(per_page=2, sort=(Sort("title"),), cursor=cursor)).items) == [
        3,
        4,
    ]
    text, mac = cursor.split(".")
    forged = text[:-2] + ("A" if text[-2] != "A" else "B") + text[-1] + "." + mac
    for bad in (forged, text, "", "!!!", "a" * 3000, cursor + "x", "é"):
        with pytest.raises(CollectionError) as raised:
            filled.query(Query(per_page=2, sort=(Sort("title"),), cursor=bad))
        assert raised.value.to_dict()["data"]["params"] == {"cursor": "Invalid cursor."}
    with pytest.raises(CollectionError) as raised:
        filled.query(Query(per_page=2, sort=(Sort("priority"),), cursor=cursor))
    assert raised.value.reason == "The cursor was made for another sort order."
    # Another table with the same key does not take this table's cursors.
    other = make_table(store, {**SCHEMA, "title": "other"})
    with pytest.raises(CollectionError):
        other.query(Query(per_page=2, sort=(Sort("title"),), cursor=cursor))


def test_unsigned_cursors_are_validated(store: Store) -> None:
    table = make_table(store, secret=None)
    for number in range(3):
        table.insert({"title": str(number)})
    cursor = table.query(Query(per_page=1)).next_cursor
    assert cursor is not None and "." not in cursor
    assert ids(table.query(Query(per_page=1, cursor=cursor)).items) == [2]
    import base64

    for payload in (
        b'["id:a",["1 OR 1=1"]]',
        b'["id:a",[0]]',
        b'["id:a",[1,2]]',
        b'["id:a",[null]]',
        b"{}",
    ):
        bad = base64.urlsafe_b64encode(payload).decode().rstrip("=")
        with pytest.raises(CollectionError) as raised:
            table.query(Query(per_page=1, cursor=bad))
        assert raised.value.param == "cursor"


# -- the change log and rollbacks ----------------------------------------------------------------


def test_every_write_records_a_change(table: CollectionTable, store: Store) -> None:
    table.insert({"title": "a"})
    table.insert({"title": "b"})
    table.update(1, {"title": "c"})
    table.update(1, {"title": "d"}, expected_version=1)  # mismatch: nothing recorded
    table.delete(2)
    table.delete(2)  # gone: nothing recorded
    assert changes_after(store, "task") == [
        Change(1, "task", 1, "created", NOW),
        Change(2, "task", 2, "created", NOW),
        Change(3, "task", 1, "updated", NOW),
        Change(4, "task", 2, "deleted", NOW),
    ]
    assert changes_after(store, "task", after=2, limit=1) == [Change(3, "task", 1, "updated", NOW)]
    assert changes_after(store, "other") == []
    assert last_change(store, "task") == 4
    assert last_change(store, "other") == 0


def test_purge_deletes_the_changes_older_than_a_time(store: Store) -> None:
    clock = [NOW]
    table = make_table(store, clock=lambda: clock[0])
    table.insert({"title": "a"})
    clock[0] = NOW + 10
    table.insert({"title": "b"})
    table.update(1, {"title": "c"})
    assert purge_changes(store, NOW) == 0  # older than NOW only
    assert purge_changes(store, NOW + 10) == 1
    assert changes_after(store, "task") == [
        Change(2, "task", 2, "created", NOW + 10),
        Change(3, "task", 1, "updated", NOW + 10),
    ]
    assert last_change(store, "task") == 3
    assert purge_changes(store, NOW + 11) == 2
    assert changes_after(store, "task") == []


def test_a_rolled_back_transaction_leaves_no_row_and_no_change(
    table: CollectionTable, store: Store
) -> None:
    table.insert({"title": "kept"})
    with pytest.raises(RuntimeError), store.transaction():
        table.insert({"title": "lost"})
        table.update(1, {"title": "changed"})
        table.delete(1)
        raise RuntimeError("the batch failed")
    assert count(store, "SELECT COUNT(*) FROM task") == 1
    assert table.get(1) == {"id": 1, **EMPTY, "title": "kept", "version": 1}
    assert changes_after(store, "task") == [Change(1, "task", 1, "created", NOW)]
    # A savepoint: an inner failure undoes only its own writes.
    with store.transaction():
        table.insert({"title": "outer"})
        with pytest.raises(RuntimeError), store.transaction():
            table.update(1, {"title": "inner"})
            raise RuntimeError("one request failed")
    assert table.get(1)["title"] == "kept"  # type: ignore[index]
    assert [change.event for change in changes_after(store, "task")] == ["created", "created"]


def test_first_use_inside_a_rolled_back_block_migrates_again(store: Store) -> None:
    table = make_table(store)
    with pytest.raises(RuntimeError), store.transaction():
        table.insert({"title": "lost"})
        raise RuntimeError("rolled back, table and all")
    assert table.insert({"title": "a"})["id"] == 1


def test_deep_cursor_pages_are_index_ranges_on_sqlite() -> None:
    """Every statement of a cursor page is an index search, never a scan or a sort."""
    store = open_store(None)
    order = (Sort("priority", descending=True), Sort("title"))
    table = make_table(store, indexes=[order])
    table.migrate()
    for number in range(50):
        table.insert({"title": f"t{number % 7}", "priority": number % 3})
    plan = table._plan(store)
    try:
        for sort in ((), (Sort("priority"),), (Sort("title", descending=True),), order):
            query = Query(sort=sort, per_page=5, page=4)
            keys = plan.keys(query)
            cursor = table.query(query).next_cursor
            assert cursor is not None
            values = plan.read_cursor(keys, cursor)
            statements = plan.select_after(table._names, [], [], keys, values, 6)
            assert len(statements) == len(keys)
            for sql, params in statements:
                with store.read() as conn:
                    steps = conn.execute(f"EXPLAIN QUERY PLAN {sql}", [*params, 6]).fetchall()
                details = [str(step[-1]) for step in steps]
                assert len(details) == 1, details
                assert details[0].startswith("SEARCH task USING "), details
                assert "TEMP B-TREE" not in details[0], details
    finally:
        store.close()


def test_declared_orders_have_indexes(store: Store) -> None:
    table = make_table(store, indexes=[(Sort("priority", descending=True), Sort("title"))])
    table.migrate()
    if store.dialect == "sqlite":
        sql = "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?"
    else:
        sql = (
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ?"
        )
    with store.read() as conn:
        names = sorted(str(row[0]) for row in conn.execute(sql, ("task",)).fetchall())
    # One per sortable property, and one for the declared order (named by its columns' CRC).
    assert [name for name in names if name.endswith("_idx")] == [
        "task_169ac8b2_idx", "task_done_idx", "task_priority_idx", "task_status_idx",
        "task_title_idx",
    ]  # fmt: skip


def test_search_needs_searchable_properties(store: Store) -> None:
    table = make_table(store, searchable=())
    with pytest.raises(CollectionError) as raised:
        table.query(Query(search="a"))
    assert (raised.value.param, raised.value.reason) == (
        "search",
        "This collection cannot be searched.",
    )
    assert table.query(Query(search="")).items == []  # an empty search is no search


def test_change_numbers_follow_commit_order(
    engine: str, store_location: str | None, tmp_path: Path
) -> None:
    """A second writer takes its change number only after the first commits, so a reader
    that saw a number never finds a smaller one committed later."""
    location = str(tmp_path / "shared.db") if engine == "sqlite" else store_location
    first_store, second_store = open_store(location), open_store(location)
    try:
        first, second = make_table(first_store), make_table(second_store)
        first.migrate()
        finished = threading.Event()

        def write_second() -> None:
            second.insert({"title": "second"})
            finished.set()

        with first_store.transaction():
            first.insert({"title": "first"})
            writer = threading.Thread(target=write_second)
            writer.start()
            assert not finished.wait(0.5)  # waits for the first writer's commit
        writer.join(10)
        assert finished.is_set()
        changes = changes_after(first_store, "task")
        assert [(change.seq, change.item_id) for change in changes] == [(1, 1), (2, 2)]
    finally:
        first_store.close()
        second_store.close()


@pytest.mark.parametrize(
    "values",
    [
        {"priority": 2**63 - 1, "score": 1e308, "title": "é 🙂 \u2028 '\"\\ %_"},
        {"priority": -(2**63), "score": 5e-324, "title": ""},
        {"meta": {"": [{"a": None}], "ü": 1.5, "n": 2**63 - 1}, "tags": []},
    ],
    ids=["largest", "smallest", "json"],
)
def test_extreme_values_round_trip(table: CollectionTable, values: dict[str, Any]) -> None:
    item = table.insert(values)
    assert {name: item[name] for name in values} == values
    assert table.get(item["id"]) == item


#: Stored values of each kind, as an engine may hand them back (None in every kind).
_STORED: dict[str, list[Any]] = {
    "boolean": [None, 0, 1, True, False],
    "integer": [None, 0, -3, 2**53, True],
    "number": [None, 0, 1.5, -2, 3],
    "json": [None, "[1, 2]", '{"a": null}', b'"x"', "3"],
    "string": [None, "", "text", 7, "2024-01-02T03:04:05Z"],
    "date-time": [None, "2024-01-02T03:04:05Z", "2024-01-02T03:04:05"],
}


@pytest.mark.parametrize("kind", list(_STORED))
def test_a_columns_db_reader_answers_as_from_db(kind: str) -> None:
    """What a table reading rows calls for a value that is not None gives what
    ``Column.from_db`` gives, type included."""
    column = Column("c", kind)  # type: ignore[arg-type]
    for value in _STORED[kind]:
        read = None if value is None else column.db_reader(value)
        assert (read, type(read)) == (column.from_db(value), type(column.from_db(value))), value


@pytest.mark.parametrize("wordpress_dates", [False, True])
def test_an_item_is_read_from_its_row_as_each_columns_from_db_makes_it(
    store: Store, wordpress_dates: bool
) -> None:
    """A row's values become the item through each column's reader: the item
    ``Column.from_db`` would make, type for type; a row of another length is refused."""
    table = make_table(store, wordpress_dates=wordpress_dates)
    rows = [
        (1, "t", 2, 1.5, 1, "2024-01-02T03:04:05Z", "open", '["a"]', '{"k": 1}', 3),
        (2, None, None, None, None, None, None, None, None, 1),
        (3, "", 0, 2, 0, "2024-01-02T03:04:05", "closed", "[]", "{}", 7),
    ]
    for row in rows:
        expected: dict[str, Any] = {"id": row[0]}
        for column, value in zip(table.columns.values(), row[1:-1], strict=True):
            expected[column.name] = column.from_db(value)
        expected["version"] = row[-1]
        if wordpress_dates and isinstance(expected["due"], str):
            expected["due"] = expected["due"].removesuffix("Z")
        item = table._item(row)
        assert [(k, v, type(v)) for k, v in item.items()] == [
            (k, v, type(v)) for k, v in expected.items()
        ]
    with pytest.raises(ValueError):
        table._item(rows[0][:-2] + rows[0][-1:])
    assert table._select_one == f'SELECT {table._names} FROM "{table.table}" WHERE "id" = ?'


class _Number(enum.IntEnum):
    ONE = 1


def test_an_id_is_tested_in_get_as_valid_id_tests_it(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``get`` tests the id itself (no call of ``_valid_id``), with its answer: a plain
    ``int`` or an ``int`` subclass in range is looked up; a bool, an id out of range or
    not an int finds nothing."""
    table = make_table(store)
    table.migrate()
    table.insert({"title": "one"})
    general = collection_table._valid_id
    asked: list[object] = []

    def counted(item_id: object) -> bool:
        asked.append(item_id)
        return general(item_id)

    monkeypatch.setattr(collection_table, "_valid_id", counted)
    ids = (1, 2, MAX_INT, True, _Number.ONE, 0, -1, MAX_INT + 1, 1.0, "1", None)
    for item_id in ids:
        found = table.get(item_id)  # type: ignore[arg-type]
        assert (found is not None) is (general(item_id) and item_id == 1), item_id
    assert asked == []


@pytest.mark.parametrize("wordpress_dates", [False, True])
def test_get_makes_the_item_as_item_makes_it_from_its_row(
    store: Store, wordpress_dates: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``get`` answers the item ``_item`` makes of the row, type for type, itself (no
    ``_item`` call), with and without WordPress dates."""
    table = make_table(store, wordpress_dates=wordpress_dates)
    table.migrate()
    ids = [
        table.insert(values)["id"]
        for values in (
            {"title": "t", "due": "2024-01-02T03:04:05Z", "tags": ["a"], "meta": {"k": 1}},
            {"title": ""},
            {"title": "x", "priority": 7, "score": 2.5, "done": True},
        )
    ]
    general = CollectionTable._item
    asked: list[int] = []

    def counted(self: CollectionTable, row: Any) -> dict[str, Any]:
        asked.append(row[0])
        return general(self, row)

    monkeypatch.setattr(CollectionTable, "_item", counted)
    for item_id in ids:
        row = store.read_one(table._select_one, (item_id,))
        expected = general(table, row)
        found = table.get(item_id)
        assert found is not None
        assert [(k, v, type(v)) for k, v in found.items()] == [
            (k, v, type(v)) for k, v in expected.items()
        ]
    assert asked == []
    if wordpress_dates:
        assert table.get(ids[0])["due"] == "2024-01-02T03:04:05"  # type: ignore[index]
    assert table.get(999) is None


def test_items_read_together_are_each_as_read_alone(table: CollectionTable) -> None:
    """``get_many`` over more ids than one query takes: each item exactly as ``get`` reads
    it (every column's type, nulls kept), by id; ids that are no item's (a bool, a text, out
    of range, deleted) left out, an int subclass's id read as its number."""
    for number in range(1, 251):
        table.insert(
            {
                "title": f"t{number}",
                "priority": number,
                "score": number / 4 if number % 3 else None,
                "done": number % 2 == 0,
                "due": "2024-05-06T07:08:09Z" if number % 5 == 0 else None,
                "tags": ["a", str(number)] if number % 7 == 0 else None,
                "meta": {"n": number} if number % 11 == 0 else None,
            }
        )
    table.delete(200)
    asked: list[Any] = [*range(250, 0, -1), 7, True, "5", 0, -2, MAX_INT + 1, _Number.ONE]
    found = table.get_many(asked)
    assert sorted(found) == [number for number in range(1, 251) if number != 200]
    for number, item in found.items():
        alone = table.get(number)
        assert item == alone
        assert list(item) == list(alone or {})  # the same keys in the same order
    assert found[35] == {
        "id": 35,
        "title": "t35",
        "priority": 35,
        "score": 8.75,
        "done": False,
        "due": "2024-05-06T07:08:09Z",
        "status": "open",
        "tags": ["a", "35"],
        "meta": None,
        "version": 1,
    }
    assert table.get_many([True, "5", 0, 2.0]) == {}  # type: ignore[list-item]
    assert table.get_many([_Number.ONE, 3]) == {1: table.get(1), 3: table.get(3)}
