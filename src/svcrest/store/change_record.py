"""A site's change log for any controller: ``app.changes.record(object_type, id, event)``.

The rule: a controller whose items live anywhere (a dict, another service) records each
write with :meth:`Changes.record`, and its ``GET /<ns>/<rest_base>/changes`` (a
``RestController`` with ``changes = True``) follows them as a ``StoreCollection``'s feed
follows its own. A change is recorded in the store's change log
(:func:`svcrest.store.changes.record_change`): inside a ``store.transaction()`` block of the
calling thread, as a SAVEPOINT of that block's transaction, so that a rollback of the
caller's transaction records nothing; elsewhere in a transaction of its own, committed
before ``record`` returns. Readers of the feed are woken at the commit (PostgreSQL: a
``NOTIFY`` sent only if the transaction commits; SQLite: the store's change mark).

A feed entry's ``data`` is the item as the subscriber's own GET would show it, asked of the
controller when the entry is sent: ``get_item_permissions_check`` then ``get_item`` with a
request for ``GET /<ns>/<rest_base>/<id>`` in the ``view`` context by the subscriber, with
the subscriber's ``_fields``, which then filters the answer as the GET's is filtered
(after the ``rest_prepare_<type>`` filters; ``_links`` only when it names them or names
nothing); an item either refuses (or answers with an error, as a deleted item's 404) is
left out. A deletion's ``data`` is ``{"id": n}``, shown when
``get_items_permissions_check`` still lets the subscriber in. The permission checks are
asked per subscriber; ``get_item`` once per user, site and ``_fields`` for all the streams
a wake serves in a process, since the request it is asked with holds nothing else of the
subscriber's.
"""

from __future__ import annotations

import copy
import inspect
import time
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from svcrest.hooks import Hooks
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.rest.resources.controller import RestController
from svcrest.store.base import Store
from svcrest.store.change_feed import (
    COALESCE,
    DEFAULT_RETENTION,
    FEED_ARGS,
    UNKEYED,
    ChangeFeed,
    FeedRender,
    as_got,
    fields_key,
)
from svcrest.store.changes import EVENTS, Change, ensure_change_log, record_change
from svcrest.store.lazy_tables import LazyTables

__all__ = ["Changes"]

#: What a controller of a feed must implement (a feed renders with them).
_NEEDED = ("get_items_permissions_check", "get_item_permissions_check", "get_item")


class Changes:
    """The change log of a site (``app.changes``) in ``store`` (a store, or a callable
    returning it; the change log's tables are created on first use). ``clock``: the time
    recorded; ``hooks``: the site's, whose filter ``svc_changes_retention`` (seconds) bounds
    how long the feeds keep changes and ``svc_changes_coalesce`` (seconds) how often at
    most a feed's subscribers are woken while changes keep coming."""

    def __init__(
        self,
        store: Store | Callable[[], Store],
        *,
        clock: Callable[[], float] = time.time,
        hooks: Hooks | None = None,
    ) -> None:
        self._tables = LazyTables(store, ensure_change_log)
        self._clock = clock
        self._hooks = hooks

    @property
    def store(self) -> Store:
        """The store, with the change log migrated."""
        return self._tables.store()

    def record(
        self,
        object_type: str,
        id: int,
        event: str,
        *,
        data: Mapping[str, Any] | None = None,
    ) -> int:
        """Record ``event`` (``"created"``, ``"updated"`` or ``"deleted"``) of item ``id``
        of ``object_type`` (a schema's ``title``); returns its position in the log. Inside
        a ``store.transaction()`` block of this thread it joins that block's transaction (a
        rollback of it records nothing); elsewhere it commits a transaction of its own. The
        webhook subscriptions of ``<object_type>.<event>`` get ``data`` (the item; ``{"id":
        id}`` when None), queued in the same transaction. ValueError for another event, an
        empty object type or an id that is not a non-negative integer."""
        if not isinstance(event, str) or event not in EVENTS:
            raise ValueError(f"event must be one of {', '.join(EVENTS)}, not {event!r}")
        if not isinstance(object_type, str) or not object_type:
            raise ValueError(f"object_type must be a non-empty string, not {object_type!r}")
        if isinstance(id, bool) or not isinstance(id, int) or id < 0:
            raise ValueError(f"id must be a non-negative integer, not {id!r}")
        store = self.store
        with store.transaction() as conn:
            return record_change(
                store, conn, object_type, id, EVENTS[EVENTS.index(event)], self._clock(), data=data
            )

    def _retention(self) -> float:
        if self._hooks is None:
            return float(DEFAULT_RETENTION)
        return float(self._hooks.apply_filters("svc_changes_retention", DEFAULT_RETENTION))

    def _coalesce(self) -> float:
        if self._hooks is None:
            return COALESCE
        return float(self._hooks.apply_filters("svc_changes_coalesce", COALESCE))

    def feed_route(self, controller: RestController) -> dict[str, Any]:
        """The options of ``controller``'s ``GET /<rest_base>/changes``: the feed of the
        changes recorded for its object type (its schema's ``title``), read by those its
        ``get_items_permissions_check`` lets in. TypeError when the controller lacks a
        title, does not implement ``get_items_permissions_check``,
        ``get_item_permissions_check`` and ``get_item``, or implements one as a coroutine
        (a feed renders its entries synchronously)."""
        name = type(controller).__name__
        object_type = controller.get_object_type()
        if object_type is None:
            raise TypeError(f"{name}'s change feed needs a schema with a title")
        for method in _NEEDED:
            own = getattr(type(controller), method)
            if own is getattr(RestController, method):
                raise TypeError(f"{name}'s change feed needs {method}")
            if inspect.iscoroutinefunction(own):
                raise TypeError(f"{name}'s change feed needs a synchronous {method}")
        feed = ChangeFeed(
            lambda: self.store,
            object_type,
            retention=self._retention,
            coalesce=self._coalesce,
            clock=self._clock,
        )
        render = _renderer(controller)

        async def get_changes(request: Request) -> Response | RestError:
            return await feed.serve(request, render, controller.app)

        return {
            "methods": "GET",
            "callback": get_changes,
            "permission_callback": controller.get_items_permissions_check,
            "args": copy.deepcopy(FEED_ARGS),
            # Each entry's data shows the request's _fields; the answer stays whole.
            "fields_applied": True,
        }


def _allowed(answer: object) -> bool:
    return bool(answer) and not isinstance(answer, RestError)


def _renderer(controller: RestController) -> FeedRender:
    """How ``controller``'s feed shows a change to a subscriber (see the module's text)."""
    return _ControllerRender(controller)


class _ControllerRender(FeedRender):
    """A controller's feed render: its permission checks asked per subscriber, its
    ``get_item`` once per user, site and ``_fields`` for every stream of a wake: the
    request it is asked with holds nothing else of the subscriber's."""

    # As in the controller's own GET, its checks and get_item run on the event loop.
    blocking = False

    def __init__(self, controller: RestController) -> None:
        self._controller = controller
        self._route = f"/{controller.namespace}/{controller.rest_base}/"

    def _asked(self, change: Change, request: Request) -> Request:
        query: dict[str, Any] = {"context": "view"}
        fields = request.get_param("_fields")
        if fields is not None:
            query["_fields"] = fields
        asked = Request("GET", self._route + str(change.item_id), query=query)
        asked.url_params["id"] = change.item_id
        asked.user = request.user
        asked.site = request.site
        return asked

    def allowed(self, change: Change, loaded: Any, request: Request) -> bool:
        controller = self._controller
        if change.event == "deleted":
            return _allowed(controller.get_items_permissions_check(request))
        return _allowed(controller.get_item_permissions_check(self._asked(change, request)))

    def view(self, change: Change, loaded: Any, request: Request) -> Any:
        if change.event == "deleted":
            return {"id": change.item_id}
        controller = self._controller
        answer = controller.get_item(self._asked(change, request))
        if isinstance(answer, RestError):
            return None
        if isinstance(answer, Response) and answer.status >= 400:
            return None
        return as_got(answer, request)

    def viewer(self, request: Request) -> Hashable | None:
        fields = fields_key(request)
        if fields is UNKEYED:
            return None
        # SECURITY: the whole user (id and roles), the site and the ``_fields``: all the
        # asked request holds.
        return (request.user, id(request.site), fields)

    def viewer_stamp(self) -> Hashable | None:
        return 0  # the key is the request's user, site and _fields alone: it never moves

    def allowed_by_viewer(self, change: Change) -> bool:
        # SECURITY: an item's check is asked with a request of the change holding only the
        # key's user and site; a deletion's is asked with the subscriber's own request.
        return change.event != "deleted"
