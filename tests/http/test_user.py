"""Users and WordPress's role → capability map (``svcrest.http.user``)."""

from __future__ import annotations

import pytest

from svcrest.http.user import ANONYMOUS, ROLE_CAPABILITIES, User, capabilities_for


def test_the_anonymous_user() -> None:
    assert (ANONYMOUS.id, ANONYMOUS.login, ANONYMOUS.roles) == (0, "", ())
    assert ANONYMOUS.is_logged_in is False
    assert ANONYMOUS.can("read") is False
    assert User(3).is_logged_in is True


def test_the_roles_nest_as_in_wordpress() -> None:
    subscriber = ROLE_CAPABILITIES["subscriber"]
    author = ROLE_CAPABILITIES["author"]
    editor = ROLE_CAPABILITIES["editor"]
    administrator = ROLE_CAPABILITIES["administrator"]
    assert subscriber == frozenset({"read"})
    assert subscriber < author < editor < administrator
    assert set(ROLE_CAPABILITIES) == {"administrator", "editor", "author", "subscriber"}


@pytest.mark.parametrize(
    ("role", "capability", "granted"),
    [
        ("author", "publish_posts", True),
        ("author", "edit_others_posts", False),
        ("editor", "edit_others_posts", True),
        ("editor", "edit_notes", True),
        ("author", "edit_notes", False),
        ("administrator", "edit_notes", True),
        ("administrator", "manage_options", True),
        ("editor", "manage_options", False),
        ("subscriber", "read", True),
        ("subscriber", "edit_posts", False),
        ("ghost", "read", False),
    ],
)
def test_can(role: str, capability: str, granted: bool) -> None:
    assert User(1, "u", (role,)).can(capability) is granted


def test_capabilities_of_several_roles_are_their_union() -> None:
    assert capabilities_for(("subscriber", "ghost")) == frozenset({"read"})
    assert capabilities_for(()) == frozenset()
    assert capabilities_for(("author", "editor")) == ROLE_CAPABILITIES["editor"]


def test_a_user_is_a_frozen_value_compared_without_its_login_state() -> None:
    assert User(5, "kim", ("editor",)) == User(5, "kim", ("editor",))
    assert User(5, "kim") != User(5, "max")
    with pytest.raises(AttributeError):
        User(5).id = 6  # type: ignore[misc]
