"""Registering and running abilities, as WordPress 6.9's Abilities API (its
tests/phpunit/tests/abilities-api/ wpRegisterAbility, wpAbility, wpRegisterAbilityCategory and
wpAbilitiesRegistry, ported)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import svcrest
from svcrest import App, Request, RestError, current_user
from svcrest.app import DoingItWrong
from svcrest.hooks import Hooks
from svcrest.http.context import as_current_user
from svcrest.http.user import User

ADD_SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"type": "number", "description": "First number.", "required": True},
        "b": {"type": "number", "description": "Second number.", "required": True},
    },
    "additionalProperties": False,
}


def _app() -> App:
    app = App()
    app.register_ability_category("math", label="Math", description="Mathematical operations.")
    return app


def _add(app: App, name: str = "test/add-numbers", **overrides: Any) -> Any:
    options: dict[str, Any] = {
        "label": "Add numbers",
        "description": "Calculates the result of adding two numbers.",
        "category": "math",
        "input_schema": ADD_SCHEMA,
        "output_schema": {"type": "number", "description": "The result."},
        "execute_callback": lambda input: input["a"] + input["b"],
        "permission_callback": lambda input: True,
        "annotations": {"readonly": True},
        **overrides,
    }
    return app.register_ability(name, **options)


# -- registration -------------------------------------------------------------------------------


def test_a_registered_ability_has_its_properties() -> None:
    app = _app()
    ability = _add(app)
    assert ability is app.get_ability("test/add-numbers")
    assert ability is not None
    assert ability.name == "test/add-numbers"
    assert ability.label == "Add numbers"
    assert ability.description == "Calculates the result of adding two numbers."
    assert ability.category == "math"
    assert ability.input_schema == ADD_SCHEMA
    assert ability.output_schema == {"type": "number", "description": "The result."}
    assert ability.meta == {
        "annotations": {"readonly": True, "destructive": None, "idempotent": None},
        "show_in_rest": True,
    }
    assert app.get_abilities() == [ability]


def test_an_unknown_ability_is_none() -> None:
    assert _app().get_ability("test/unknown") is None


@pytest.mark.parametrize(
    "name",
    ["without-namespace", "Test/Uppercase", "test/under_score", "test/", "/ability", "a/b/c", 7],
)
def test_a_malformed_name_is_refused(name: Any) -> None:
    app = _app()
    with pytest.warns(DoingItWrong) as caught:
        assert _add(app, name) is None
    assert str(caught[0].message) == (
        'Ability name must be a string containing a namespace prefix, i.e. "my-plugin/'
        'my-ability". It can only contain lowercase alphanumeric characters, dashes and the'
        " forward slash."
    )
    assert app.get_abilities() == []


def test_a_name_registered_twice_is_refused() -> None:
    app = _app()
    first = _add(app)
    with pytest.warns(DoingItWrong, match='^Ability "test/add-numbers" is already registered.$'):
        assert _add(app) is None
    assert app.get_ability("test/add-numbers") is first


def test_an_unregistered_category_is_refused() -> None:
    app = _app()
    with pytest.warns(DoingItWrong) as caught:
        assert _add(app, category="nope") is None
    assert str(caught[0].message) == (
        'Ability category "nope" is not registered. Please register the ability category'
        ' before assigning it to ability "test/add-numbers".'
    )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"label": ""}, "The ability properties must contain a `label` string."),
        ({"label": 5}, "The ability properties must contain a `label` string."),
        ({"description": ""}, "The ability properties must contain a `description` string."),
        ({"category": ""}, "The ability properties must contain a `category` string."),
        (
            {"execute_callback": "nope"},
            "The ability properties must contain a valid `execute_callback` function.",
        ),
        (
            {"permission_callback": None},
            "The ability properties must provide a valid `permission_callback` function.",
        ),
        (
            {"input_schema": "string"},
            "The ability properties should provide a valid `input_schema` definition.",
        ),
        (
            {"output_schema": ["number"]},
            "The ability properties should provide a valid `output_schema` definition.",
        ),
        ({"annotations": True}, "The ability meta should provide a valid `annotations` array."),
        (
            {"show_in_rest": "yes"},
            "The ability meta should provide a valid `show_in_rest` boolean.",
        ),
    ],
    ids=lambda value: next(iter(value)) if isinstance(value, dict) else "",
)
def test_invalid_properties_are_refused(overrides: dict[str, Any], message: str) -> None:
    app = _app()
    with pytest.warns(DoingItWrong) as caught:
        assert _add(app, **overrides) is None
    assert str(caught[0].message) == message
    assert app.get_ability("test/add-numbers") is None


def test_schemas_and_annotations_are_optional() -> None:
    app = _app()
    ability = app.register_ability(
        "test/ping",
        label="Ping",
        description="Answers pong.",
        category="math",
        execute_callback=lambda: "pong",
        permission_callback=svcrest.public,
    )
    assert ability is not None
    assert ability.input_schema == {}
    assert ability.output_schema == {}
    assert ability.meta["annotations"] == {
        "readonly": None,
        "destructive": None,
        "idempotent": None,
    }
    assert ability.execute() == "pong"


def test_unregistering_an_ability() -> None:
    app = _app()
    ability = _add(app)
    assert app.unregister_ability("test/add-numbers") is ability
    assert app.get_ability("test/add-numbers") is None
    assert app.unregister_ability("test/add-numbers") is None


# -- categories ---------------------------------------------------------------------------------


def test_a_registered_category() -> None:
    app = App()
    category = app.register_ability_category(
        "data-retrieval", label="Data", description="Reading data.", meta={"icon": "db"}
    )
    assert category is not None
    assert (category.slug, category.label, category.description, category.meta) == (
        "data-retrieval",
        "Data",
        "Reading data.",
        {"icon": "db"},
    )
    assert app.get_ability_category("data-retrieval") is category
    assert app.get_ability_categories() == [category]
    assert app.get_ability_category("nope") is None
    assert app.unregister_ability_category("data-retrieval") is category
    assert app.get_ability_categories() == []


@pytest.mark.parametrize("slug", ["Math", "math_ops", "-math", "math-", "math--ops", "ma th", ""])
def test_a_malformed_category_slug_is_refused(slug: str) -> None:
    app = App()
    with pytest.warns(DoingItWrong) as caught:
        assert app.register_ability_category(slug, label="L", description="D") is None
    assert str(caught[0].message) == (
        "Ability category slug must contain only lowercase alphanumeric characters and dashes."
    )


def test_a_category_registered_twice_or_without_label_is_refused() -> None:
    app = _app()
    with pytest.warns(DoingItWrong, match='^Ability category "math" is already registered.$'):
        assert app.register_ability_category("math", label="M", description="D") is None
    with pytest.warns(DoingItWrong, match="^The category properties must contain a `label`"):
        assert app.register_ability_category("other", label="", description="D") is None
    with pytest.warns(DoingItWrong, match="must contain a `description` string.$"):
        assert app.register_ability_category("other", label="O", description="") is None


# -- running ------------------------------------------------------------------------------------


def test_execute_runs_the_callback_with_the_input() -> None:
    app = _app()
    assert _add(app).execute({"a": 2, "b": 3}) == 5


def test_an_async_ability_runs_from_sync_and_async_code() -> None:
    app = _app()

    async def add(input: dict[str, Any]) -> Any:
        await asyncio.sleep(0)
        return input["a"] + input["b"]

    async def allowed(input: dict[str, Any]) -> bool:
        return bool(input["a"] >= 0)

    ability = _add(app, execute_callback=add, permission_callback=allowed)
    assert ability.execute({"a": 1, "b": 2}) == 3
    assert asyncio.run(ability.execute_async({"a": 4, "b": 2})) == 6
    refused = ability.execute({"a": -1, "b": 2})
    assert isinstance(refused, RestError)
    assert refused.code == "ability_invalid_permissions"


def test_invalid_input_is_refused_with_the_schema_reason() -> None:
    app = _app()
    calls: list[Any] = []
    ability = _add(app, execute_callback=lambda input: calls.append(input))
    error = ability.execute({"a": 2})
    assert isinstance(error, RestError)
    assert error.code == "ability_invalid_input"
    assert error.message == (
        'Ability "test/add-numbers" has invalid input. Reason: b is a required property of input.'
    )
    error = ability.execute({"a": "two", "b": 1})
    assert error.message == (
        'Ability "test/add-numbers" has invalid input. Reason: input[a] is not of type number.'
    )
    assert calls == []


def test_input_to_an_ability_without_input_schema_is_refused() -> None:
    app = _app()
    ability = _add(app, input_schema=None, execute_callback=lambda: 1)
    assert ability.execute() == 1
    error = ability.execute({"a": 1})
    assert isinstance(error, RestError)
    assert error.code == "ability_missing_input_schema"
    assert error.message == (
        'Ability "test/add-numbers" does not define an input schema required to validate the'
        " provided input."
    )


def test_the_input_schema_default_is_used_for_no_input() -> None:
    app = _app()
    ability = _add(
        app,
        input_schema={"type": "string", "default": "basic", "enum": ["basic", "full"]},
        output_schema={"type": "string"},
        execute_callback=lambda input: f"level {input}",
    )
    assert ability.execute() == "level basic"
    assert ability.execute("full") == "level full"


def test_invalid_output_is_refused() -> None:
    app = _app()
    ability = _add(app, execute_callback=lambda input: "five")
    error = ability.execute({"a": 2, "b": 3})
    assert isinstance(error, RestError)
    assert error.code == "ability_invalid_output"
    assert error.message == (
        'Ability "test/add-numbers" has invalid output. Reason: output is not of type number.'
    )


@pytest.mark.parametrize("verdict", [False, None, 1, "yes"])
def test_a_permission_other_than_true_refuses(verdict: Any) -> None:
    app = _app()
    ability = _add(app, permission_callback=lambda input: verdict)
    assert ability.check_permissions({"a": 1, "b": 1}) is False
    error = ability.execute({"a": 1, "b": 1})
    assert isinstance(error, RestError)
    assert (error.code, error.message) == (
        "ability_invalid_permissions",
        'Ability "test/add-numbers" does not have necessary permission.',
    )


def test_a_permission_error_is_its_verdict() -> None:
    app = _app()
    denied = RestError("no_way", "Not today.", {"status": 403})
    returned = _add(app, permission_callback=lambda input: denied)
    assert returned.check_permissions({"a": 1, "b": 1}) is denied

    def raise_it(input: Any) -> bool:
        raise denied

    raised = _add(app, "test/raised", permission_callback=raise_it)
    assert raised.check_permissions({"a": 1, "b": 1}) is denied
    assert raised.execute({"a": 1, "b": 1}).code == "ability_invalid_permissions"


def test_an_error_from_the_callback_is_the_result() -> None:
    app = _app()
    error = RestError("test_error", "This is a test error")
    assert _add(app, execute_callback=lambda input: error).execute({"a": 1, "b": 1}) is error

    def raise_it(input: Any) -> Any:
        raise error

    assert _add(app, "test/raise", execute_callback=raise_it).execute({"a": 1, "b": 1}) is error


def test_execution_actions_fire_around_a_successful_run() -> None:
    app = _app()
    seen: list[tuple[Any, ...]] = []
    app.hooks.add_action("svc_before_execute_ability", lambda *args: seen.append(("before", *args)))
    app.hooks.add_action("svc_after_execute_ability", lambda *args: seen.append(("after", *args)))
    ability = _add(app)
    ability.execute({"a": 1, "b": 2})
    assert seen == [
        ("before", "test/add-numbers", {"a": 1, "b": 2}),
        ("after", "test/add-numbers", {"a": 1, "b": 2}, 3),
    ]
    seen.clear()
    ability.execute({"a": 1})
    assert seen == []


BEFORE, AFTER = "svc_before_execute_ability", "svc_after_execute_ability"


def test_actions_without_callbacks_are_counted_without_running_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = _app()
    ability = _add(app)
    ran: list[str] = []
    do_action = Hooks.do_action

    def counted(hooks: Hooks, name: str, *args: Any) -> None:
        ran.append(name)
        do_action(hooks, name, *args)

    monkeypatch.setattr(Hooks, "do_action", counted)
    for _ in range(3):
        assert ability.execute({"a": 1, "b": 2}) == 3
    assert (app.hooks.did_action(BEFORE), app.hooks.did_action(AFTER)) == (3, 3)
    assert ran.count(BEFORE) <= 1 and ran.count(AFTER) <= 1  # the first run may look
    # An output refused counts the first action, not the second (as do_action would).
    bad = _add(app, "test/bad-output", execute_callback=lambda input: "three")
    assert isinstance(bad.execute({"a": 1, "b": 2}), RestError)
    assert (app.hooks.did_action(BEFORE), app.hooks.did_action(AFTER)) == (4, 3)


def test_callbacks_added_after_runs_are_called_with_the_arguments() -> None:
    app = _app()
    ability = _add(app)
    assert ability.execute({"a": 1, "b": 2}) == 3
    seen: list[tuple[Any, ...]] = []
    app.hooks.add_action(AFTER, lambda *args: seen.append(("after", *args)))
    assert ability.execute({"a": 2, "b": 2}) == 4
    assert seen == [("after", "test/add-numbers", {"a": 2, "b": 2}, 4)]

    # A callback added by the execute callback itself runs after it, in the same run.
    def execute(input: Any) -> Any:
        app.hooks.add_action(BEFORE, lambda *args: seen.append(("before", *args)))
        return input["a"]

    later = _add(app, "test/adds-a-callback", execute_callback=execute)
    seen.clear()
    assert later.execute({"a": 5, "b": 0}) == 5
    assert seen == [("after", "test/adds-a-callback", {"a": 5, "b": 0}, 5)]
    assert later.execute({"a": 6, "b": 0}) == 6
    assert seen[1:] == [
        ("before", "test/adds-a-callback", {"a": 6, "b": 0}),
        ("after", "test/adds-a-callback", {"a": 6, "b": 0}, 6),
    ]
    assert (app.hooks.did_action(BEFORE), app.hooks.did_action(AFTER)) == (4, 4)
    # Removed again: counted still, and not called.
    app.hooks.remove_all_actions(BEFORE)
    app.hooks.remove_all_actions(AFTER)
    seen.clear()
    assert ability.execute({"a": 1, "b": 1}) == 2
    assert seen == []
    assert (app.hooks.did_action(BEFORE), app.hooks.did_action(AFTER)) == (5, 5)


# -- current_user -------------------------------------------------------------------------------


def test_current_user_is_anonymous_in_plain_code() -> None:
    assert current_user().id == 0
    assert current_user().is_logged_in is False


def test_current_user_is_the_user_of_an_internal_dispatch() -> None:
    app = _app()
    editor = app.users.create("ed", "ed-password-1", roles=("editor",))
    seen: list[int] = []

    def whoami(request: Request) -> Any:
        seen.append(current_user().id)
        return {"id": current_user().id, "can_edit": current_user().can("edit_posts")}

    app.register_rest_route(
        "me/v1", "/whoami", {"callback": whoami, "permission_callback": svcrest.public}
    )
    request = Request("GET", "/me/v1/whoami")
    request.user = editor
    assert app.rest_do_request(request).data == {"id": editor.id, "can_edit": True}
    assert app.rest_do_request("/me/v1/whoami").data == {"id": 0, "can_edit": False}
    assert current_user().id == 0  # restored after the dispatch


def test_the_permission_callback_reads_the_current_user() -> None:
    app = _app()
    ability = _add(app, permission_callback=lambda input: current_user().can("edit_posts"))
    assert ability.execute({"a": 1, "b": 2}).code == "ability_invalid_permissions"
    author = User(5, "writer", ("author",))
    with as_current_user(author):
        assert ability.execute({"a": 1, "b": 2}) == 3
