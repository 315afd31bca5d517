"""Values between JSON and a collection's columns: every value a column takes comes back
equal (round trips through a real SQLite store), and cursors round-trip their keys."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from svcrest.store import Store, open_store
from svcrest.store.collection_columns import MAX_INT, MIN_INT, CollectionError, columns_of_schema
from svcrest.store.collection_query import Query, Sort
from svcrest.store.collection_table import CollectionTable

SCHEMA: dict[str, Any] = {
    "title": "value",
    "properties": {
        "i": {"type": "integer", "default": 0},
        "n": {"type": "number", "default": 0},
        "b": {"type": "boolean", "default": False},
        "s": {"type": "string", "default": ""},
        "d": {"type": "string", "format": "date-time"},
        "o": {"type": "object"},
        "a": {"type": ["array", "null"]},
    },
}
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(MIN_INT, MAX_INT) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=10,
)
TEXT = st.text().filter(lambda text: "\x00" not in text)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)


@pytest.fixture(scope="module")
def memory() -> Iterator[Store]:
    store = open_store(None)
    yield store
    store.close()


@settings(max_examples=150, deadline=None)
@given(
    i=st.integers(MIN_INT, MAX_INT),
    n=FLOATS,
    b=st.booleans(),
    s=TEXT,
    o=st.dictionaries(st.text(), JSON, max_size=4),
    a=st.lists(JSON, max_size=4) | st.none(),
)
def test_values_round_trip(
    memory: Store, i: int, n: float, b: bool, s: str, o: dict[str, Any], a: list[Any] | None
) -> None:
    table = CollectionTable(memory, SCHEMA, sortable=("i", "n", "b", "s"))
    item = table.insert({"i": i, "n": n, "b": b, "s": s, "o": o, "a": a})
    assert table.get(item["id"]) == item
    assert {name: item[name] for name in "inbsoa"} == {
        "i": i, "n": n, "b": b, "s": s, "o": o, "a": a,
    }  # fmt: skip
    # The item's cursor, in every sortable order, reads back the item's keys.
    plan = table._plan(memory)
    for name in ("i", "n", "b", "s"):
        keys = plan.keys(Query(sort=(Sort(name, descending=True),)))
        cursor = plan.make_cursor(keys, item)
        assert plan.read_cursor(keys, cursor) == [item[name], item["id"]]


@settings(max_examples=150, deadline=None)
@given(
    moment=st.datetimes(min_value=dt.datetime(2, 1, 1), max_value=dt.datetime(9998, 12, 31)),
    offset=st.integers(-23 * 60 - 59, 23 * 60 + 59),
)
def test_dates_are_stored_as_the_utc_instant(moment: dt.datetime, offset: int) -> None:
    column = columns_of_schema(SCHEMA)["d"]
    sign = "-" if offset < 0 else "+"
    text = f"{moment.isoformat()}{sign}{abs(offset) // 60:02d}:{abs(offset) % 60:02d}"
    utc = moment.replace(microsecond=0) - dt.timedelta(minutes=offset)
    stored = column.to_db(text)
    assert stored == f"{utc.year:04d}-{utc:%m-%dT%H:%M:%S}Z"
    assert column.to_db(stored) == stored


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        ("2024-02-29T10:00:00+02:00", "2024-02-29T08:00:00Z"),
        ("2024-02-29T10:00:00.999Z", "2024-02-29T10:00:00Z"),
        ("2024-02-29 10:00:00", "2024-02-29T10:00:00Z"),
        ("2024-02-29t10:00:00-05:30", "2024-02-29T15:30:00Z"),
        ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"),
    ],
)
def test_date_forms(value: str, stored: str) -> None:
    assert columns_of_schema(SCHEMA)["d"].to_db(value) == stored


@pytest.mark.parametrize(
    "value",
    [
        "2024-02-30T00:00:00Z",
        "2024-02-29",
        "2024-02-29T10:00:00-0530",
        "0000-01-01T00:00:00Z",
        1700000000,
        "",
    ],
)
def test_bad_dates(value: Any) -> None:
    with pytest.raises(CollectionError, match=r"Invalid parameter\(s\): d"):
        columns_of_schema(SCHEMA)["d"].to_db(value)


@pytest.mark.parametrize(
    ("prop", "message"),
    [
        ({"type": "null"}, "has type 'null'"),
        ({"type": ["string", "integer"]}, "has type None"),
        ({"type": "integer", "default": "x"}, "x is not of type integer."),
        ({"type": "string", "enum": ["a", 3]}, "x is not of type string."),
        ("string", "must be a schema object"),
    ],
    ids=["null", "two-types", "default", "enum", "not-object"],
)
def test_schema_mistakes(prop: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        columns_of_schema({"properties": {"x": prop}})


@pytest.mark.parametrize("names", [("title", "Title"), ("ID",), ("Version",)])
def test_names_differing_only_by_case_are_refused(names: tuple[str, ...]) -> None:
    properties = {name: {"type": "string"} for name in names}
    with pytest.raises(ValueError, match="differs from another column only by case"):
        columns_of_schema({"properties": properties})
