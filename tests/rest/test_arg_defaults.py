"""Argument defaults are checked once, when the route is registered: a default that fails
its own schema is refused then (``DoingItWrong``, ``register_rest_route`` answers False, as
any definition that cannot work), and a request that leaves a scalar default alone does not
validate or sanitise it again. What a callback sees is unchanged: the sanitised default,
a fresh container for a list or object default, and a ``validate_callback`` or
``sanitize_callback`` still called with the default on every request, as WordPress does."""

from __future__ import annotations

from typing import Any

import pytest

from svcrest import App, DoingItWrong, Request, public
from svcrest.rest.schema import sanitize_value, validate_value


def echo(request: Request) -> dict[str, Any]:
    return request.get_params()


def route(app: App, args: dict[str, Any], callback: Any = echo) -> bool:
    return app.register_rest_route(
        "t/v1", "/r", {"callback": callback, "permission_callback": public, "args": args}
    )


def get(app: App, **query: str) -> Any:
    return app.rest_do_request(Request("GET", "/t/v1/r", query=query))


@pytest.mark.parametrize(
    ("definition", "reason"),
    [
        (
            {"type": "string", "enum": ["asc", "desc"], "default": "up"},
            "order is not one of asc and desc.",
        ),
        (
            {"type": "integer", "minimum": 1, "default": 0},
            "order must be greater than or equal to 1",
        ),
        ({"type": "integer", "default": "ten"}, "order is not of type integer."),
        (
            {"type": "array", "items": {"type": "integer"}, "default": ["x"]},
            "order[0] is not of type integer.",
        ),
    ],
    ids=["enum", "minimum", "type", "array-items"],
)
def test_a_default_that_fails_its_own_schema_is_refused_at_registration(
    definition: dict[str, Any], reason: str
) -> None:
    app = App()
    with pytest.warns(DoingItWrong) as caught:
        assert route(app, {"order": definition}) is False
    assert [str(warning.message) for warning in caught] == [
        f"The default of the argument 'order' does not meet its own schema: {reason}"
    ]
    assert caught[0].message.refused_route == "/t/v1/r"  # type: ignore[union-attr]
    assert caught[0].filename == __file__
    assert "/t/v1/r" not in app.rest_get_server().get_routes()


def test_a_shared_route_arg_default_is_checked_too() -> None:
    app = App()
    with pytest.warns(DoingItWrong, match="The default of the argument 'page'"):
        assert (
            app.register_rest_route(
                "t/v1",
                "/r",
                {
                    0: {"callback": echo, "permission_callback": public},
                    "args": {"page": {"type": "integer", "minimum": 1, "default": -1}},
                },
            )
            is False
        )


def test_good_defaults_are_registered_and_answered_sanitised() -> None:
    app = App()
    assert route(
        app,
        {
            "order": {"type": "string", "enum": ["asc", "desc"], "default": "asc"},
            "count": {"type": "integer", "default": "5"},
            "ratio": {"type": "number", "default": 1},
            "flag": {"type": "boolean", "default": "true"},
            "none": {"type": "string", "default": None},
        },
    )
    assert get(app).data == {"order": "asc", "count": 5, "ratio": 1, "flag": True, "none": None}
    sent = get(app, order="desc", count="7", flag="0")
    assert sent.data == {"order": "desc", "count": 7, "ratio": 1, "flag": False, "none": None}
    refused = get(app, order="up")
    assert refused.status == 400
    assert refused.data["code"] == "rest_invalid_param"
    assert list(refused.data["data"]["params"]) == ["order"]


def test_a_scalar_default_left_alone_is_not_checked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    app = App()
    assert route(
        app,
        {
            "order": {"type": "string", "enum": ["asc", "desc"], "default": "asc"},
            "page": {"type": "integer", "minimum": 1, "default": 1},
        },
    )
    checked: list[str] = []
    sanitised: list[str] = []

    def counting_validate(value: Any, definition: Any, name: str) -> Any:
        checked.append(name)
        return validate_value(value, definition, name)

    def counting_sanitize(value: Any, definition: Any, name: str) -> Any:
        sanitised.append(name)
        return sanitize_value(value, definition, name)

    monkeypatch.setattr("svcrest.rest.validation.validate_value", counting_validate)
    monkeypatch.setattr("svcrest.rest.validation.sanitize_value", counting_sanitize)
    for _ in range(3):
        assert get(app).data == {"order": "asc", "page": 1}
    assert (checked, sanitised) == ([], [])
    # A value sent is checked: the plain ones by the quick tests the route prepared…
    assert get(app, order="desc").data == {"order": "desc", "page": 1}
    assert (checked, sanitised) == ([], [])
    # …any other by the full check.
    assert get(app, page=" 2").data == {"order": "asc", "page": 2}
    assert (checked, sanitised) == (["page"], ["page"])


def test_a_container_default_is_a_new_value_for_every_request() -> None:
    app = App()

    def add_one(request: Request) -> Any:
        tags = request["tags"]
        tags.append("x")
        return tags

    assert route(
        app, {"tags": {"type": "array", "items": {"type": "string"}, "default": []}}, add_one
    )
    assert get(app).data == ["x"]
    assert get(app).data == ["x"]


def test_callbacks_still_see_the_default_on_every_request() -> None:
    app = App()
    seen: list[tuple[str, Any]] = []

    def check(value: Any, request: Request, name: str) -> bool:
        seen.append(("validate", value))
        return True

    def clean(value: Any, request: Request, name: str) -> Any:
        seen.append(("sanitize", value))
        return str(value).upper()

    assert route(
        app,
        {
            "a": {"type": "string", "default": "x", "validate_callback": check},
            "b": {"type": "string", "default": "y", "sanitize_callback": clean},
        },
    )
    assert get(app).data == {"a": "x", "b": "Y"}
    assert get(app).data == {"a": "x", "b": "Y"}
    assert seen == [("validate", "x"), ("sanitize", "y")] * 2
