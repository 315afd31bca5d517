"""Hostile input to fields added by ``app.register_rest_field`` on a ``StoreCollection``, both
adapters: values against the field's schema (type, enum, bounds, extra properties, null),
dotted ``_fields`` past the field's depth or repeated, and an edit-context field asked for
by a reader. A refused write keeps nothing, neither the item nor the field. (The field's
ordinary behaviour is in tests/rest/test_store_collection.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.rest.test_store_collection import TASKS, ClientFor, Site

META_SCHEMA: dict[str, Any] = {
    "type": "object",
    "context": ["view", "edit"],
    "properties": {
        "color": {"type": "string", "enum": ["red", "blue"]},
        "size": {"type": "integer", "minimum": 0},
    },
    "additionalProperties": False,
}


class Fielded(Site):
    """The tasks site with a ``meta`` field (object) and an edit-only ``secret`` field."""

    def __init__(self) -> None:
        super().__init__(None)
        self.seed("a")
        self.meta: dict[int, Any] = {}
        self.updates = 0

        def get_meta(data: dict[str, Any], *_: Any) -> Any:
            return self.meta.get(data["id"], {"color": "red", "size": 1})

        def update_meta(value: Any, item: Any, *_: Any) -> bool:
            self.updates += 1
            self.meta[item["id"]] = value
            return True

        self.app.register_rest_field(
            "task", "meta", get_callback=get_meta, update_callback=update_meta, schema=META_SCHEMA
        )
        self.app.register_rest_field(
            "task",
            "secret",
            get_callback=lambda *_: "s3cret",
            schema={"type": "string", "context": ["edit"]},
        )


@pytest.fixture
def site() -> Iterator[Fielded]:
    made = Fielded()
    yield made
    made.app.store.close()


def titles(site: Site) -> list[str]:
    rows = site.tasks.table.get_many(range(1, 10))
    return [rows[task_id]["title"] for task_id in sorted(rows)]


@pytest.mark.parametrize(
    ("meta", "reason"),
    [
        ("str", "meta is not of type object."),
        (None, "meta is not of type object."),
        ([1], "meta is not of type object."),
        ({"color": "green"}, "meta[color] is not one of red and blue."),
        ({"color": ["red"]}, "meta[color] is not of type string."),
        ({"size": -1}, "meta[size] must be greater than or equal to 0"),
        ({"size": "x"}, "meta[size] is not of type integer."),
        ({"size": 1.5}, "meta[size] is not of type integer."),
        ({"zzz": 1}, "zzz is not a valid property of Object."),
    ],
    ids=[
        "string",
        "null",
        "list",
        "enum",
        "enum-list",
        "minimum",
        "size-word",
        "size-fraction",
        "extra-property",
    ],
)
@pytest.mark.parametrize("method", ["POST", "PATCH"])
def test_a_value_against_the_fields_schema_is_400_and_nothing_is_kept(
    site: Fielded, client_for: ClientFor, method: str, meta: Any, reason: str
) -> None:
    url = TASKS if method == "POST" else f"{TASKS}/1"
    response = client_for(site.app).request(
        method, url, json={"title": "x", "meta": meta}, headers=site.headers["ed"]
    )
    assert response.status_code == 400
    body = response.json()
    assert (body["code"], body["message"]) == ("rest_invalid_param", "Invalid parameter(s): meta")
    assert body["data"]["params"] == {"meta": reason}
    assert titles(site) == ["a"]
    assert (site.updates, site.meta) == (0, {})


@pytest.mark.parametrize(
    "size", ["1e20", 1e20, 2**63, "9" * 30], ids=["string", "float", "2**63", "30-digits"]
)
@pytest.mark.parametrize("method", ["POST", "PATCH"])
def test_a_size_past_64_bits_is_refused_not_a_500(
    site: Fielded, client_for: ClientFor, method: str, size: Any
) -> None:
    url = TASKS if method == "POST" else f"{TASKS}/1"
    response = client_for(site.app).request(
        method, url, json={"title": "x", "meta": {"size": size}}, headers=site.headers["ed"]
    )
    reason = (
        "meta[size] must be between -9223372036854775808 (inclusive) and 9223372036854775807"
        " (inclusive)"
    )
    assert (response.status_code, response.json()) == (
        400,
        {
            "code": "rest_invalid_param",
            "message": "Invalid parameter(s): meta",
            "data": {
                "status": 400,
                "params": {"meta": reason},
                "details": {
                    "meta": {
                        "code": "rest_out_of_bounds",
                        "message": reason,
                        "data": {"param": "meta[size]"},
                    }
                },
            },
        },
    )
    assert titles(site) == ["a"]
    assert (site.updates, site.meta) == (0, {})


@pytest.mark.parametrize("size", [2**63 - 1, "9.2e18"], ids=["2**63-1", "9.2e18"])
def test_a_size_at_the_end_of_64_bits_is_kept(
    site: Fielded, client_for: ClientFor, size: Any
) -> None:
    response = client_for(site.app).request(
        "PATCH", f"{TASKS}/1", json={"meta": {"size": size}}, headers=site.headers["ed"]
    )
    assert response.status_code == 200
    assert site.meta == {1: {"size": int(float(size)) if isinstance(size, str) else size}}
    assert response.json()["meta"] == {"size": site.meta[1]["size"]}


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        ("_fields=meta.color", {"meta": {"color": "red"}}),
        ("_fields=meta.color.x.y.z", {"meta": {"color": "red"}}),
        ("_fields=" + ",".join(["meta"] * 5000), {"meta": {"color": "red", "size": 1}}),
        ("_fields=" + "a." * 3000, {}),
        ("_fields=secret", {}),
        ("_fields[]=meta&_fields[]=secret", {"meta": {"color": "red", "size": 1}}),
    ],
    ids=["dotted", "dotted-past-depth", "repeated", "deep-unknown", "edit-only", "array-form"],
)
def test_fields_never_show_more_than_the_readers_view(
    site: Fielded, client_for: ClientFor, query: str, shown: dict[str, Any]
) -> None:
    response = client_for(site.app).get(f"{TASKS}/1?{query}", headers=site.headers["sue"])
    assert (response.status_code, response.json()) == (200, shown)


def test_the_edit_context_of_a_field_needs_the_right_to_edit(
    site: Fielded, client_for: ClientFor
) -> None:
    response = client_for(site.app).get(
        f"{TASKS}/1?context=edit&_fields=secret", headers=site.headers["sue"]
    )
    assert response.status_code == 403
    assert response.json() == {
        "code": "rest_forbidden_context",
        "message": "Sorry, you are not allowed to edit task items.",
        "data": {"status": 403},
    }
