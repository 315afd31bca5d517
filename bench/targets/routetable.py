"""The route table of the scaling benchmark, shared by its targets and ``scaling.py``.

Route ``k`` of ``n`` lives in namespace ``ns{k % 100}/v1`` and cycles through four shapes so
that the last registered route is always ``/items{k}/(?P<id>\\d+)``. Each shape is given both
as a WordPress-style regex (svcrest) and as a path template (Starlette and Falcon, which both
spell an integer field ``{id:int}``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

NAMESPACES = 100
PREFIX = "/svc-json"

# (svcrest regex, Starlette/Falcon template); ``{k}`` is the route's index.
SHAPES = (
    (r"/items{k}/(?P<id>\d+)", "/items{k}/{{id:int}}"),
    (r"/items{k}", "/items{k}"),
    (r"/things{k}/(?P<slug>[a-z0-9-]+)", "/things{k}/{{slug}}"),
    (r"/items{k}/(?P<id>\d+)/comments/(?P<cid>\d+)", "/items{k}/{{id:int}}/comments/{{cid:int}}"),
)


class RouteDef(NamedTuple):
    """One route: its namespace, svcrest regex and peer path template (with the prefix)."""

    namespace: str
    regex: str
    template: str
    shape: int


def routes(n: int) -> Iterator[RouteDef]:
    """The ``n`` routes in registration order."""
    for k in range(n):
        namespace = f"ns{k % NAMESPACES}/v1"
        shape = (n - 1 - k) % len(SHAPES)
        regex, template = SHAPES[shape]
        yield RouteDef(
            namespace,
            regex.format(k=k),
            f"{PREFIX}/{namespace}{template.format(k=k)}",
            shape,
        )


def last_route(n: int) -> str:
    """The route (below the prefix) that only the last registered route matches."""
    return f"/ns{(n - 1) % NAMESPACES}/v1/items{n - 1}/42"


def missing_route(n: int) -> str:
    """A route (below the prefix) in a registered namespace that no route matches."""
    return f"/ns{(n - 1) % NAMESPACES}/v1/nothing/42"


def get_item(request: Any) -> dict[str, Any]:
    """svcrest callback of the first shape: the item named by the URL parameter."""
    return {"id": int(request["id"]), "title": "item"}


def other(request: Any) -> dict[str, Any]:
    """svcrest callback of every other shape."""
    return {"ok": True}


def register_svcrest(app: Any, table: Iterable[RouteDef]) -> None:
    """Register ``table`` on a svcrest ``App`` in order (public GET handlers)."""
    import svcrest

    public = getattr(svcrest, "public", None)  # older trees, compared with this, lack it
    for route in table:
        callback = get_item if route.shape == 0 else other
        handler = {"methods": "GET", "callback": callback, "permission_callback": public}
        app.register_rest_route(route.namespace, route.regex, handler)


def routes_from_env() -> int:
    """The table size a target builds: ``BENCH_ROUTES`` (default 10)."""
    import os

    return int(os.environ.get("BENCH_ROUTES", "10"))
