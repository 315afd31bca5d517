"""The registry of fields plugins add to resources (``svcrest.rest.resources.fields_registry``),
WordPress's ``register_rest_field``, one per site."""

from __future__ import annotations

import pytest

from svcrest.rest.resources.fields_registry import RestField, RestFields

COLOR = RestField(schema={"type": "string"})
SIZE = RestField(get_callback=lambda data, attribute, request, object_type: 3)


def test_fields_by_type_in_registration_order() -> None:
    fields = RestFields()
    assert fields.register("note", "color", COLOR) == ["note"]
    assert fields.register(("note", "book"), "size", SIZE) == ["note", "book"]
    assert dict(fields.for_type("note")) == {"color": COLOR, "size": SIZE}
    assert list(fields.for_type("note")) == ["color", "size"]
    assert dict(fields.for_type("book")) == {"size": SIZE}
    assert dict(fields.for_type("page")) == {}
    assert dict(fields.for_type(None)) == {}


def test_a_later_registration_replaces_the_earlier_and_the_version_grows() -> None:
    fields = RestFields()
    assert fields.version == 0
    fields.register("note", "color", COLOR)
    replacement = RestField(schema={"type": "integer"})
    fields.register("note", "color", replacement)
    assert fields.version == 2
    assert fields.for_type("note")["color"] is replacement


def test_the_view_is_read_only_and_live() -> None:
    fields = RestFields()
    fields.register("note", "color", COLOR)
    view = fields.for_type("note")
    with pytest.raises(TypeError):
        view["size"] = SIZE  # type: ignore[index]
    fields.register("note", "size", SIZE)
    assert list(view) == ["color", "size"]


def test_a_field_is_a_frozen_value() -> None:
    assert RestField() == RestField(None, None, None)
    with pytest.raises(AttributeError):
        COLOR.schema = None  # type: ignore[misc]
