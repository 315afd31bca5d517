"""The scope of an application password: the REST namespaces it may be used for, and whether
it may only read.

An application password created with a scope (a list of namespaces such as ``notes/v1``, and
``read_only``) authenticates only requests it covers: a route of one of its namespaces, with
a reading method (GET, HEAD, OPTIONS) when it is read-only. Anything else answers 403
``rest_application_password_scope``. The site's indexes (``/`` and each namespace's, routes
of no namespace) may be read with any scoped password, as may the batch route, whose
requests are each checked against the scope.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from svcrest.http.errors import RestError

__all__ = [
    "MAX_SCOPE_NAMESPACES",
    "READ_METHODS",
    "AppPasswordScope",
    "clean_scope",
    "scope_error",
]

#: Methods a read-only password may use.
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Namespaces one password's scope may list.
MAX_SCOPE_NAMESPACES = 20
_NAMESPACE = re.compile(r"[A-Za-z0-9_.~-]+(?:/[A-Za-z0-9_.~-]+)*")
_MAX_NAMESPACE_LENGTH = 100
#: Routes a scoped password may always reach: the batch route (each of its requests is
#: checked on its own).
_BATCH_ROUTE = "/batch/v1"


def scope_error() -> RestError:
    """The 403 of a request outside the scope of the application password that
    authenticated it."""
    return RestError(
        "rest_application_password_scope",
        "This application password may not be used for this request.",
        {"status": 403},
    )


def clean_scope(scope: object) -> tuple[str, ...] | None:
    """A scope's namespaces as stored: None (every namespace) for None; else a tuple of the
    distinct namespaces in order, without surrounding slashes. ValueError for anything but a
    list of namespace strings, an empty list, or more than :data:`MAX_SCOPE_NAMESPACES`."""
    if scope is None:
        return None
    if not isinstance(scope, (list, tuple)):
        raise ValueError("scope must be a list of namespaces")
    cleaned: dict[str, None] = {}
    for item in scope:
        if not isinstance(item, str):
            raise ValueError("scope must be a list of namespaces")
        namespace = item.strip().strip("/")
        if len(namespace) > _MAX_NAMESPACE_LENGTH or not _NAMESPACE.fullmatch(namespace):
            raise ValueError(f"{item!r} is not a REST namespace")
        cleaned[namespace] = None
    if not cleaned:
        raise ValueError("scope must name at least one namespace")
    if len(cleaned) > MAX_SCOPE_NAMESPACES:
        raise ValueError(f"scope may name at most {MAX_SCOPE_NAMESPACES} namespaces")
    return tuple(cleaned)


@dataclass(frozen=True, slots=True)
class AppPasswordScope:
    """What one application password may do: ``namespaces`` (None: every one) and
    ``read_only``. Only a scoped password has one (``RequestContext.app_password_scope``)."""

    namespaces: tuple[str, ...] | None
    read_only: bool

    def allows(self, namespace: str, route: str, method: str) -> bool:
        """Whether a request with ``method`` to the route ``route`` (its pattern or its path)
        of ``namespace`` is within the scope."""
        if method in READ_METHODS and (namespace == "" or route == "/" + namespace):
            return True  # the root index and the namespaces' indexes
        if route == _BATCH_ROUTE:
            return True  # each of its requests is checked on its own
        if self.read_only and method not in READ_METHODS:
            return False
        return self.namespaces is None or namespace in self.namespaces

    def allows_path(self, path: str, method: str) -> bool:
        """:meth:`allows` for a route's path (or pattern) alone: its namespace is the scope's
        namespace it starts with."""
        if self.read_only and method not in READ_METHODS:
            return False
        if self.namespaces is None:
            return True
        return any(path == "/" + ns or path.startswith("/" + ns + "/") for ns in self.namespaces)
