"""An application password's scope (``svcrest.http.scope``): the namespaces it may reach and
whether it may only read."""

from __future__ import annotations

import pytest

from svcrest.http.scope import (
    MAX_SCOPE_NAMESPACES,
    READ_METHODS,
    AppPasswordScope,
    clean_scope,
    scope_error,
)


def test_the_scope_error_is_a_403() -> None:
    error = scope_error()
    assert error.to_dict() == {
        "code": "rest_application_password_scope",
        "message": "This application password may not be used for this request.",
        "data": {"status": 403},
    }
    assert error.status == 403
    assert frozenset({"GET", "HEAD", "OPTIONS"}) == READ_METHODS


@pytest.mark.parametrize(
    ("scope", "cleaned"),
    [
        (None, None),
        (["notes/v1"], ("notes/v1",)),
        ([" /notes/v1/ ", "notes/v1", "b/v2"], ("notes/v1", "b/v2")),
        (("a",), ("a",)),
        ([f"n{i}" for i in range(MAX_SCOPE_NAMESPACES)], tuple(f"n{i}" for i in range(20))),
    ],
    ids=["none", "one", "stripped-and-distinct", "tuple", "twenty"],
)
def test_clean_scope(scope: object, cleaned: tuple[str, ...] | None) -> None:
    assert clean_scope(scope) == cleaned


@pytest.mark.parametrize(
    ("scope", "message"),
    [
        ("notes/v1", "scope must be a list of namespaces"),
        ([1], "scope must be a list of namespaces"),
        ([], "scope must name at least one namespace"),
        (["/"], "'/' is not a REST namespace"),
        (["a b"], "'a b' is not a REST namespace"),
        (["a//b"], "'a//b' is not a REST namespace"),
        (["x" * 101], "is not a REST namespace"),
        ([f"n{i}" for i in range(21)], "scope may name at most 20 namespaces"),
    ],
    ids=["string", "number", "empty", "slash", "space", "double-slash", "long", "21"],
)
def test_clean_scope_refuses(scope: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        clean_scope(scope)


NOTES_READER = AppPasswordScope(("notes/v1",), read_only=True)
NOTES_WRITER = AppPasswordScope(("notes/v1",), read_only=False)
EVERYTHING_READER = AppPasswordScope(None, read_only=True)


@pytest.mark.parametrize(
    ("scope", "namespace", "route", "method", "allowed"),
    [
        (NOTES_READER, "notes/v1", "/notes/v1/notes", "GET", True),
        (NOTES_READER, "notes/v1", "/notes/v1/notes", "POST", False),
        (NOTES_WRITER, "notes/v1", "/notes/v1/notes", "DELETE", True),
        (NOTES_WRITER, "other/v1", "/other/v1/x", "GET", False),
        (NOTES_WRITER, "", "/", "GET", True),  # the root index
        (NOTES_WRITER, "other/v1", "/other/v1", "GET", True),  # a namespace's index
        (NOTES_WRITER, "other/v1", "/other/v1", "POST", False),
        (NOTES_READER, "batch/v1", "/batch/v1", "POST", True),  # checked request by request
        (EVERYTHING_READER, "any/v1", "/any/v1/x", "HEAD", True),
        (EVERYTHING_READER, "any/v1", "/any/v1/x", "PUT", False),
    ],
)
def test_allows(
    scope: AppPasswordScope, namespace: str, route: str, method: str, allowed: bool
) -> None:
    assert scope.allows(namespace, route, method) is allowed


@pytest.mark.parametrize(
    ("scope", "path", "method", "allowed"),
    [
        (NOTES_WRITER, "/notes/v1", "POST", True),
        (NOTES_WRITER, "/notes/v1/notes/7", "PATCH", True),
        (NOTES_WRITER, "/notes/v10/x", "GET", False),  # another namespace sharing a prefix
        (NOTES_READER, "/notes/v1/notes", "POST", False),
        (EVERYTHING_READER, "/anything", "OPTIONS", True),
    ],
)
def test_allows_path(scope: AppPasswordScope, path: str, method: str, allowed: bool) -> None:
    assert scope.allows_path(path, method) is allowed
