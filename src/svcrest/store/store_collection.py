"""StoreCollection: a WordPress-style resource whose items are rows of a table in the site's store.

One declaration gives a collection everything a hand-written WordPress controller repeats:
the table (made and migrated from the item schema, :class:`CollectionTable`), the five
operations of ``WP_REST_Controller`` with WordPress's permission checks, error codes and
answers, WordPress's and Ext JS's collection parameters, totals and ``Link`` headers,
cursors, ``ETag`` / ``If-Match`` from the item's ``version``, ``Idempotency-Key`` on creation,
and batch requests (atomic ones roll the table back).

Example::

    notes = app.register_controller(StoreCollection("todo/v1", "notes", {
        "title": "note",
        "type": "object",
        "properties": {
            "title": {"type": "string", "required": True, "context": ["view", "edit"]},
            "done": {"type": "boolean", "default": False, "context": ["view", "edit"]},
        },
    }, owner_field="author", sortable=("title",), filterable=("done",), searchable=("title",)))

Permissions, as WordPress's ``map_meta_cap`` gives them to posts:

- ``read``: None (everyone may read), a capability name, or a callable ``(user, item) ->
  bool``. A callable is asked of each item: the collection leaves out the items it refuses
  (its totals count them, as WordPress's ``get_items`` skips a post its read check refuses)
  and the item answers 401 / 403 ``rest_forbidden``.
- ``write``: a capability name (default ``edit_posts``) or a callable ``(user, item) ->
  bool``, asked with ``item=None`` of creating an item and of listing in the ``edit``
  context. With ``owner_field`` (readonly, set to the creating user's id) and a capability
  ``edit_<type>``, updating another user's item needs ``edit_others_<type>`` and deleting it
  ``delete_others_<type>`` (``edit_posts`` → ``edit_others_posts`` /
  ``delete_others_posts``); a callable decides for itself, given the item.

A DELETE deletes, with or without ``force``: there is no trash to move the item to, and the
clients that use such collections (Ext JS's Rest proxy, svcrest's proxies) send none.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any, ClassVar, Final, Protocol, cast
from urllib.parse import parse_qsl, urlencode

from svcrest.blocking import offload
from svcrest.bounded import Memo
from svcrest.http.context import current_context
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.http.user import User
from svcrest.rest.conditional import precondition_failed
from svcrest.rest.fields import filter_response_fields, links_wanted
from svcrest.rest.paginate import invalid_page_number, set_total_headers
from svcrest.rest.resources.context_filter import (
    rest_filter_response_by_context,
    rest_is_field_included,
)
from svcrest.rest.resources.controller import ControllerHost, RestController, RouteRegistrar
from svcrest.rest.routing.definitions import public
from svcrest.rest.routing.table import AllowShortcut
from svcrest.rest.settings import Site
from svcrest.store.base import Step, Store
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
from svcrest.store.changes import Change
from svcrest.store.collection_columns import MAX_INT, check_identifier
from svcrest.store.collection_query import Query, Sort, parse_filters, parse_sort
from svcrest.store.collection_table import CollectionTable, VersionMismatch

__all__ = ["Permission", "StoreCollection"]

#: A ``read`` or ``write`` rule: a capability name, or ``(user, item) -> bool`` (``item``
#: None for a question about the collection).
Permission = str | Callable[[User, Mapping[str, Any] | None], bool]

_WRITES: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_READS: Final = frozenset({"GET", "HEAD"})
#: The methods the item route's ``Allow`` shortcut answers for (a subclass writing any of
#: them its own way has its checks asked).
_CHECKS: Final = (
    "get_item_permissions_check",
    "update_item_permissions_check",
    "delete_item_permissions_check",
    "_changeable",
)
_ITEM_WRITES: Final = frozenset({"PUT", "PATCH", "DELETE"})
_ALL_CONTEXTS: Final = ("view", "edit", "embed")
#: A strong entity tag holding an item's version (``"7"``).
_VERSION_TAG: Final = re.compile(r'\s*"(\d{1,19})"\s*')
#: The keywords of a property schema whose values hold sub-schemas (filtered by context
#: further down).
_NESTED: Final = (
    "properties",
    "additionalProperties",
    "patternProperties",
    "items",
    "anyOf",
    "oneOf",
)
#: How many answer shapes (a context and a ``_fields``) a collection remembers, and the longest
#: ``_fields`` remembered.
_SHAPES_MAX: Final = 64
_FIELDS_LONGEST: Final = 256
#: The query parameters a page link replaces.
_PAGING: Final = ("page", "offset", "start", "cursor")


#: The keys of an answer, those among them whose values are filtered by context further down
#: (with their schemas), and the context.
_Shape = tuple[tuple[str, ...], tuple[tuple[str, Mapping[str, Any]], ...], str]


class StoreHost(ControllerHost, Protocol):
    """A site with a store and a secret key (the App)."""

    @property
    def store(self) -> Store:
        """The site's store, the same one for the site's life once read (the App opens its
        own on first use): a collection reads it once."""
        ...

    @property
    def secret_key(self) -> bytes:
        """The site's secret key (signs cursors)."""
        ...

    @property
    def clock(self) -> Callable[[], float]:
        """The site's clock (Unix time)."""
        ...

    def get_site(self, blog_id: int | None = None) -> Site:
        """The site ``blog_id`` (None: the current one), its home and URL style: with the
        hooks, all the site's REST URLs depend on outside a request over TLS."""
        ...


#: No collection URL remembered (see ``StoreCollection._collection_url``).
_NO_URL: tuple[int, Site | None, str] = (-1, None, "")


class _Refused(Exception):
    """Leaves a write's transaction (rolling it back) with the error to answer."""

    def __init__(self, error: RestError) -> None:
        super().__init__(error.code)
        self.error = error


def _item_schema(schema: Mapping[str, Any], owner_field: str | None) -> dict[str, Any]:
    """The schema of the stored items: ``schema`` with ``id`` (and ``owner_field``) added
    as readonly integers seen in every context."""
    if not isinstance(schema, Mapping):
        raise TypeError("the item schema must be a mapping")
    item = copy.deepcopy(dict(schema))
    item.setdefault("$schema", "http://json-schema.org/draft-04/schema#")
    item.setdefault("type", "object")
    properties = item.get("properties")
    if not isinstance(properties, dict):
        raise ValueError("the item schema needs a properties object")
    if "version" in properties:
        raise ValueError("'version' is the store's own column (the item's ETag): rename it")
    own: dict[str, Any] = {"id": "Unique identifier for the item."}
    if owner_field is not None:
        check_identifier(owner_field, "owner_field")
        own[owner_field] = "The id of the user who created the item."
    for name, description in own.items():
        prop = properties.get(name)
        if prop is None:
            prop = {"description": description, "type": "integer", "context": [*_ALL_CONTEXTS]}
            properties[name] = prop
        elif not isinstance(prop, dict) or prop.get("type") != "integer":
            raise ValueError(f"property {name!r} must be an integer")
        prop["readonly"] = True
        prop.pop("required", None)
    if "id" in properties:  # first, as WordPress's schemas list it
        item["properties"] = {"id": properties.pop("id"), **properties}
    return item


def _hidden(prop: object) -> bool:
    """Whether a property is stored but never shown: its ``context`` is empty."""
    return isinstance(prop, Mapping) and prop.get("context") == []


def _check_rule(rule: object, what: str) -> None:
    if rule is not None and not callable(rule) and not (isinstance(rule, str) and rule):
        raise TypeError(f"{what} must be a capability name or a callable (user, item) -> bool")


def _others_capabilities(write: Permission, owner_field: str | None) -> tuple[str, str] | None:
    """The capabilities of writing another user's item (``edit_others_<type>``,
    ``delete_others_<type>``), for a ``write`` capability named ``edit_<type>``."""
    if owner_field is None or callable(write):
        return None
    if not write.startswith("edit_") or write == "edit_":
        raise ValueError(
            "with owner_field, write must be a capability named edit_<type> (as edit_posts),"
            f" whose edit_others_<type> lets a user edit others' items, not {write!r}"
        )
    kind = write[len("edit_") :]
    return f"edit_others_{kind}", f"delete_others_{kind}"


def _item_id(request: Request) -> int:
    """The item id the URL names, or 0 (no item's) when it names no possible item. A
    permission check may see the route's raw capture (the ``Allow`` header asks every
    handler's) before its sanitising: a run of digits longer than any id is never converted
    (``int()`` refuses more than 4,300 digits)."""
    value = request.get_param("id")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    digits = (value.lstrip("0") or "0") if isinstance(value, str) else ""
    if not (digits.isascii() and digits.isdigit()) or len(digits) > len(str(MAX_INT)):
        return 0
    return int(digits)


def _expected_version(request: Request) -> int | None:
    """The version ``If-Match`` names (``"7"``), so that the write checks it again in its own
    statement; None when it names none or several (``*``, a list), or another form of tag."""
    header = request.get_header("If-Match")
    if header is None:
        return None
    found = _VERSION_TAG.fullmatch(header)
    return int(found.group(1)) if found is not None else None


def _shaped_data(item: Mapping[str, Any], shape: _Shape) -> dict[str, Any]:
    """The keys of ``item`` a ``shape`` keeps, nested values filtered by its context (a
    function of the module, not a static method: one read through ``self`` is not a method
    call CPython 3.11 specialises)."""
    keys, nested, context = shape
    # PERF: a loop, not a dict comprehension (a function made and called in CPython 3.11;
    # with CollectionTable.get's own id test, an item GET 203,676 → 201,706 instructions).
    data = {}
    for key in keys:
        if key in item:
            data[key] = item[key]
    for key, schema in nested:
        value = data.get(key)
        if isinstance(value, dict | list):
            data[key] = rest_filter_response_by_context(value, schema, context)
    return data


def _plain_links(collection: str, item_id: Any) -> dict[str, list[dict[str, Any]]]:
    """The ``self`` and ``collection`` links of item ``item_id`` of the collection at URL
    ``collection``, as :meth:`StoreCollection.prepare_links` gives them when no ``rest_url``
    filter changes a URL (a list answer's items, an item's answer and its feed view)."""
    return {"self": [{"href": f"{collection}/{item_id}"}], "collection": [{"href": collection}]}


class _Unbound:
    """The site of a collection not bound to one yet: any read of it raises what
    :attr:`~svcrest.rest.resources.controller.RestController.app` raises."""

    __slots__ = ("owner",)

    def __init__(self, owner: str) -> None:
        self.owner = owner

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"{self.owner} is not bound to a site: use app.register_controller")


class StoreCollection(RestController):
    """A resource whose items are rows of a table in the site's store (SQLite or
    PostgreSQL), on WordPress's ``WP_REST_Controller``: register it with
    ``app.register_controller(StoreCollection(namespace, rest_base, schema, ...))``.

    ``schema``: the item schema (its ``title`` is the object type; ``integer``, ``number``,
    ``string``, ``boolean``, ``date-time`` strings, objects and arrays); ``id`` is added when
    missing, and ``version`` is kept by the store (the ``ETag``). ``table``: the table's name
    (default the ``title``). ``owner_field``: an integer property, readonly, set to the
    creating user's id. ``read`` / ``write``: a capability name or ``(user, item) -> bool``
    (``read`` None: public; ``write`` None: ``edit_posts``). A ``read`` callable is asked
    of each item (the collection leaves out those it refuses, as WordPress's ``get_items``
    skips a post its read check refuses); a ``write`` callable is asked with ``item=None``
    of creating and of listing in the ``edit`` context. With ``owner_field`` and a ``write``
    capability ``edit_<type>``, another user's item needs ``edit_others_<type>`` to be
    updated and ``delete_others_<type>`` to be deleted (WordPress's ``map_meta_cap``).
    ``searchable`` / ``sortable`` / ``filterable``: the properties ``search`` looks in and
    ``orderby`` / ``sort`` / ``filter`` may name (any other is 400 ``rest_invalid_param``);
    a sortable property needs a ``default`` or ``required``. ``cursor``: pages also carry a
    ``Link rel="next"`` with an opaque ``cursor`` parameter, whose pages cost the same at any
    depth (no totals: nothing is counted).

    Routes: ``/<rest_base>`` (GET, POST) and ``/<rest_base>/<id>`` (GET, POST / PUT / PATCH,
    DELETE), in batches (``/batch/v1``, atomic ones too), creations (POST) honouring
    ``Idempotency-Key``. Collection params: WordPress's ``context``, ``page``, ``per_page``,
    ``offset``, ``search``, ``orderby``, ``order``, ``include``, ``exclude``; Ext JS's
    ``start``, ``limit``, ``sort`` and ``filter`` (JSON text or PHP-style brackets; ``sort``
    over ``orderby``, ``start`` over ``offset`` over ``page``, ``limit`` over ``per_page``).
    Answers: ``X-SVC-Total`` / ``X-SVC-TotalPages`` (``X-WP-*`` too under
    ``wordpress_compat``) and ``Link`` rel prev / next; an item's ``ETag`` is its
    ``version`` (``"3"``), and ``If-Match`` naming another answers 412
    ``rest_precondition_failed`` on POST / PUT / PATCH / DELETE; create answers 201 with
    ``Location``; create and update answer in the ``edit`` context; DELETE answers
    ``{"deleted": true, "previous": item}``.

    ``clock``: Unix time, of the change log's records and cursors; the bound site's
    ``clock`` when None (tests inject one into the App).
    ``steps``: schema steps run before the table is made or checked (``Store.migrate``'s,
    the table's name as the component), to adopt a table made earlier by hand (rename its
    version column to ``version``, convert stored values). ``wordpress_dates``:
    ``date-time`` properties answer as WordPress's dates do, ``YYYY-MM-DDTHH:MM:SS``
    without a zone. A property whose ``context`` is empty is stored but never shown (not in
    answers nor in the public schema): a sort key, say.

    Overridable beyond ``RestController``'s methods: ``prepare_links(item)`` (the
    ``_links`` of an item: ``self`` and ``collection``, as WordPress's posts controller's
    ``prepare_links``) and ``version_tag(item_id, version)`` (the item's ``ETag``).
    ``mcp``: the five operations are MCP tools on a site serving MCP (``App(mcp=True)``),
    each listed to the users its rule lets run it (a rule about one item is asked, for the
    listing, with no item).

    Changes: ``/<rest_base>/changes`` (GET) long-polls the collection's change log
    (``?since=<cursor>&wait=<seconds, at most 30>``), answering ``{"changes": [...],
    "cursor": ...}``, or streams it to ``Accept: text/event-stream`` (Server-Sent Events,
    resumed from ``Last-Event-ID``) and ``application/jsonl`` under an ASGI server; changes
    are kept for the filter ``svc_changes_retention`` (seconds, one day by default), and an
    older cursor answers 410 ``rest_changes_expired``; while changes keep coming, a
    subscriber is woken at most every ``svc_changes_coalesce`` seconds (0.05 by default).

    Attributes: ``table`` (the :class:`CollectionTable`), ``feed`` (its
    :class:`~svcrest.store.change_feed.ChangeFeed`), ``read``, ``write``, ``owner_field``,
    ``cursor``.
    """

    allow_batch: ClassVar[Mapping[str, bool] | None] = {"v1": True, "atomic": True}
    #: Always: every write records its change, and ``register_routes`` registers the feed.
    changes: bool = True

    def __init__(
        self,
        namespace: str,
        rest_base: str,
        schema: Mapping[str, Any],
        *,
        table: str | None = None,
        owner_field: str | None = None,
        read: Permission | None = None,
        write: Permission | None = None,
        searchable: Iterable[str] = (),
        sortable: Iterable[str] = (),
        filterable: Iterable[str] = (),
        cursor: bool = False,
        clock: Callable[[], float] | None = None,
        steps: Sequence[Step] = (),
        wordpress_dates: bool = False,
        mcp: bool = False,
    ) -> None:
        super().__init__()
        #: The bound site (the App: :meth:`bind`), or one that raises on any read until
        #: then. PERF: one attribute read where the request path needs the site (the
        #: :attr:`app` property is not specialised by CPython 3.11: a generic look-up and a
        #: Python call), without a test of being bound at each read.
        self._bound_site: StoreHost = cast(StoreHost, _Unbound(type(self).__name__))
        #: The bound site's store once read (a site's store is its own for its life).
        self._site_store: Store | None = None
        #: (the site's hooks' version, the current site, the collection's URL) of the
        #: last request not over TLS (see :meth:`_collection_url`).
        self._url_memo: tuple[int, Site | None, str] = _NO_URL
        self._clock = clock
        self.mcp = bool(mcp)
        if not isinstance(namespace, str) or not namespace.strip("/"):
            raise ValueError("namespace must be a non-empty string such as 'shop/v1'")
        if not isinstance(rest_base, str) or not rest_base.strip("/"):
            raise ValueError("rest_base must be a non-empty string such as 'books'")
        _check_rule(read, "read")
        _check_rule(write, "write")
        self.namespace = namespace.strip("/")
        self.rest_base = rest_base.strip("/")
        item_schema = _item_schema(schema, owner_field)
        # The class attribute of RestController, given per instance here.
        setattr(self, "schema", item_schema)  # noqa: B010
        self.owner_field = owner_field
        self.read: Permission | None = read
        self.write: Permission = "edit_posts" if write is None else write
        self.cursor = bool(cursor)
        self._others = _others_capabilities(self.write, owner_field)
        #: (context, _fields, fields version) → the answer's keys and the nested ones.
        self._shapes: Memo[tuple[str, str, int], _Shape] = Memo(
            _SHAPES_MAX, _FIELDS_LONGEST, length=lambda key: len(key[1])
        )
        #: (the registered fields' version, whether any is registered to this type).
        self._fields_seen = (-1, False)
        kind = type(self)
        self._plain = all(
            getattr(kind, name) is getattr(StoreCollection, name)
            for name in (
                "get_fields_for_response",
                "filter_response_by_context",
                "add_additional_fields_to_object",
                "get_item_schema",
            )
        )
        self._own_links = kind.prepare_links is not StoreCollection.prepare_links
        # SECURITY: a subclass's own rendering may look at more of the request than the
        # feed's viewer key holds: its subscribers then share no rendering.
        collected = kind.prepare_response_for_collection
        self._shared_views = (
            self._plain
            and kind.prepare_item_for_response is StoreCollection.prepare_item_for_response
            and collected is RestController.prepare_response_for_collection
        )
        self._own_tags = kind.version_tag is not StoreCollection.version_tag
        #: Whether an item is answered as the class's own ``prepare_item_for_response`` and
        #: ``version_tag`` answer it (:meth:`get_item` then makes the answer itself).
        self._plain_items = (
            self._plain
            and kind.prepare_item_for_response is StoreCollection.prepare_item_for_response
            and not self._own_tags
        )
        self.table = CollectionTable(
            self._store,
            item_schema,
            table=table,
            sortable=sortable,
            filterable=filterable,
            searchable=searchable,
            secret=self._secret,
            clock=self._now,
            steps=steps,
            wordpress_dates=wordpress_dates,
        )
        self.feed = ChangeFeed(
            lambda: self.table.store,  # the table and the change log made first
            self.table.object_type,
            retention=self._retention,
            coalesce=self._coalesce,
            clock=self._now,
        )
        self._prepare_hook = f"rest_prepare_{self.table.object_type}"
        self._feed_render = _ChangeRender(self)

    # -- the site ------------------------------------------------------------------------------

    def _store(self) -> Store:
        # PERF: the site's store read once, on first use (its ``store`` is a property: a
        # Python call CPython 3.11 does not specialise, on each item read before; an item
        # GET 220,695 → 220,151 instructions, bench/budget.py).
        store = self._site_store
        if store is None:
            store = self._site_store = self._bound_site.store
            # PERF: the table asks the store of a C callable until the next ``bind`` (this
            # method's Python call on each item read before: an item GET 175,631 → 175,312
            # instructions, bench/budget.py).
            self.table.follow_store(repeat(store).__next__)
        return store

    def _now(self) -> float:
        return self._clock() if self._clock is not None else self._bound_site.clock()

    def _secret(self) -> bytes:
        return self._bound_site.secret_key

    def _retention(self) -> float:
        return float(self._hooks().apply_filters("svc_changes_retention", DEFAULT_RETENTION))

    def _coalesce(self) -> float:
        return float(self._hooks().apply_filters("svc_changes_coalesce", COALESCE))

    def bind(self, app: ControllerHost) -> None:
        """Bind the collection to ``app``, a site with a ``store`` (the App)."""
        if not hasattr(type(app), "store"):
            raise TypeError("a StoreCollection needs a site with a store (an App)")
        super().bind(app)
        self._bound_site = cast(StoreHost, app)
        self._site_store = None
        self.table.follow_store(self._store)
        self._url_memo = _NO_URL

    def register_routes(self, app: RouteRegistrar) -> None:
        """Register the routes of ``RestController`` with the store's options: writes may
        block (the store's write lock), creations honour ``Idempotency-Key``; PUT, PATCH and
        DELETE check ``If-Match`` against the item's version."""
        self._register_operations(_StoreRoutes(app, self.item_version, self._allow_shortcut()))
        self.register_changes_route(app)

    def register_changes_route(self, app: RouteRegistrar) -> None:
        """Register ``GET /<rest_base>/changes`` (:meth:`get_changes`), read by those the
        collection's listing lets in (anyone when ``read`` is None); a subclass that
        registers its own routes calls it."""
        app.register_rest_route(
            self.namespace,
            f"/{self.rest_base}/changes",
            {
                "methods": "GET",
                "callback": self.get_changes,
                # A public collection's feed is public (and documented so: no 401/403).
                "permission_callback": (
                    public if self.read is None else self.get_items_permissions_check
                ),
                "args": copy.deepcopy(FEED_ARGS),
                # Each entry's data shows the request's _fields; the answer stays whole.
                "fields_applied": True,
            },
        )

    # -- the change feed -----------------------------------------------------------------------

    async def get_changes(self, request: Request) -> Response | RestError:
        """``GET /<rest_base>/changes``: the long-poll of the collection's changes
        (``since``, ``wait``; see :class:`~svcrest.store.change_feed.ChangeFeed`), each item
        as this user's GET would show it in the ``view`` context (the feed's ``_fields``
        applying to each item as to that GET's answer; ``_embed`` is not followed), only
        when the ``read`` rule lets this user read it now; events of items deleted since
        are left out, and a deletion is ``{"id": n}``, shown when the ``read`` rule allows
        reading the collection (a callable is asked with no item). ``Accept:
        text/event-stream`` (Server-Sent Events) and ``application/jsonl`` (JSON Lines) get
        a stream of the same entries when an ASGI server serves the request
        (:meth:`ChangeFeed.stream`), bounded by the site's ``streams`` and ended when the
        subscriber's session ends; elsewhere (WSGI, internal requests) the long-poll
        answer."""
        return await self.feed.serve(request, self._feed_render, self._bound_site)

    def _view_key(self, request: Request) -> Hashable | None:
        """The key of what the feed shows ``request``'s user of an item (see
        :class:`_ChangeRender`), or None when it cannot be told from the request: a
        subclass chooses fields or prepares items its own way, fields are registered to the
        type, or a ``rest_prepare_<type>`` filter (which is handed the request) is added."""
        if not self._shared_views or self._hooks().has_callbacks(self._prepare_hook):
            return None
        version = self.app.rest_fields.version
        if (version != self._fields_seen[0] or self._fields_seen[1]) and self._shape(
            request
        ) is None:  # (fields registered to the type: worked out per request)
            return None
        fields = fields_key(request)
        if fields is UNKEYED:
            return None
        # SECURITY: the whole user (id and roles), not its id alone, and the site.
        return (request.user, id(request.site), request.get_param("context"), fields, version)

    def _feed_view(self, request: Request) -> Callable[[Change, Any], Any] | None:
        """What the feed shows ``request``'s user of a change (:class:`_ChangeRender`'s
        ``view``) as a function of the change and its item, the answer's keys, the
        collection's URL and the ``_fields`` decided once for the changes of one read; None
        when the answer is not the class's own (a subclass prepares items or chooses fields
        or links its own way, or this instance was given its own ``prepare_item_for_response``,
        fields are registered to the type, a ``rest_prepare_<type>`` filter or a ``rest_url``
        filter is added).

        PERF: an item's view in the feed was a GET's ``prepare_item_for_response`` and
        ``as_got`` each change (the shape, the URL and the hooks asked again, a
        ``Response`` made): 33,331 -> 12,843 instructions a change's permission and view
        (SQLite, 400 changes a wake; bench/feed_render.py --parts view)."""
        prepare = getattr(self.prepare_item_for_response, "__func__", None)
        if (
            not self._shared_views
            or self._own_links
            or prepare is not StoreCollection.prepare_item_for_response  # (one of its own)
            or self._bound_site.hooks.has_callbacks(self._prepare_hook)
        ):
            return None
        shape = self._shape(request)
        collection = self._collection_url() if shape is not None else None
        if shape is None or collection is None:
            return None
        fields = request.get_param("_fields")
        with_links = fields is None or links_wanted(fields)

        def view(change: Change, item: Any) -> Any:
            if change.event == "deleted":
                return {"id": change.item_id}
            if type(item) is not dict:
                return as_got(self.prepare_item_for_response(item, request), request)
            # The answer of prepare_item_for_response (_shaped) then as_got, made at once.
            data: Any = _shaped_data(item, shape)
            item_id = item.get("id")
            if fields is not None:
                data = filter_response_fields(data, fields)
            if item_id is None or not with_links or not isinstance(data, dict):
                return data
            return {**data, "_links": _plain_links(collection, item_id)}

        return view

    # -- answers -----------------------------------------------------------------------------

    def prepare_item_for_response(self, item: Any, request: Request) -> Response:
        """As ``RestController``'s (the properties ``_fields`` and the ``context`` let
        through, ``self`` and ``collection`` links, the filter ``rest_prepare_<type>``).

        PERF: the keys an answer holds depend only on the context and ``_fields``: they are
        worked out once per pair (remembered, bounded) instead of once per item, unless
        fields are registered to the type or a subclass overrides how they are chosen."""
        plain = self._plain and (type(item) is dict or isinstance(item, Mapping))
        shape = self._shape(request) if plain else None
        if shape is None:
            response = super().prepare_item_for_response(item, request)
            if self._own_links and isinstance(item, Mapping):
                links = self.prepare_links(item)
                links.update({rel: one for rel, one in response.links.items() if rel not in links})
                response.links = links
            return response
        return self._shaped(item, request, shape, self._collection_url())

    def prepare_links(self, item: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
        """The ``_links`` of ``item`` (WordPress's ``prepare_links`` of its posts controller):
        ``self`` and ``collection``. Override it to add links, say an ``author`` link with
        ``"embeddable": True`` that ``_embed`` follows; each rel maps to a list of
        ``{"href": url, ...}``."""
        base = f"/{self.namespace}/{self.rest_base}"
        return {
            "self": [{"href": self.app.rest_url(f"{base}/{item['id']}")}],
            "collection": [{"href": self.app.rest_url(base)}],
        }

    def version_tag(self, item_id: int, version: int) -> str:
        """The entity tag (unquoted) of version ``version`` of item ``item_id``: its
        ``ETag`` (``"3"``) and what ``If-Match`` / ``If-None-Match`` name. Override it to
        show another form (say ``f"{item_id}-{version}"``); ``If-Match`` is then checked
        before the write rather than again in the write's own statement."""
        return str(version)

    def _tag(self, item: Mapping[str, Any]) -> str:
        if self._own_tags:
            return f'"{self.version_tag(item["id"], item["version"])}"'
        # PERF: what the class's own version_tag gives (``str`` of the version), without
        # its Python call (with the item's ``get_param("id")`` and the site's hooks read
        # in ``_shaped``: an item GET 210,837 → 209,639 instructions, bench/budget.py).
        return f'"{item["version"]}"'

    def _expected(self, request: Request) -> int | None:
        return None if self._own_tags else _expected_version(request)

    def get_public_item_schema(self) -> dict[str, Any]:
        """As ``RestController``'s, without the properties whose ``context`` is empty (they
        are stored, a sort key say, but never shown) and without the ``required`` of a
        ``readonly`` property (no client sends it: there it only keeps the column from
        holding null, as a sortable property needs)."""
        schema = super().get_public_item_schema()
        properties = schema.get("properties")
        if isinstance(properties, dict):
            for name in [n for n, p in properties.items() if _hidden(p)]:
                del properties[name]
            for prop in properties.values():
                if isinstance(prop, dict) and prop.get("readonly"):
                    prop.pop("required", None)
        return schema

    def _collection_url(self) -> str | None:
        """The collection's URL, from which an item's is made (None when a ``rest_url``
        filter may change each URL: then each is asked for).

        PERF: outside a request over TLS (where ``get_rest_url`` may force https for the
        request's host), the URL is remembered for the version of the site's hooks (its
        filters) and the current site (its home and URL style): an item GET 220,151 →
        210,837 instructions (bench/budget.py; the nine Python calls of ``rest_url``)."""
        app = self._bound_site
        hooks = app.hooks
        ctx = current_context()
        plain = ctx is None or not ctx.secure
        if plain:
            version, site, url = self._url_memo
            if version == hooks.version and site is app.get_site():
                return url
        if hooks.has_callbacks("rest_url"):
            return None
        url = app.rest_url(f"/{self.namespace}/{self.rest_base}")
        if plain:
            self._url_memo = (hooks.version, app.get_site(), url)
        return url

    def _collected(self, item: Mapping[str, Any], shape: _Shape, collection: str) -> Any:
        """An item of a list answer (``prepare_response_for_collection`` of its answer)."""
        data = _shaped_data(item, shape)
        item_id = item.get("id")
        if self._own_links:
            data["_links"] = self.prepare_links(item)
        elif item_id is not None:
            data["_links"] = _plain_links(collection, item_id)
        return data

    def _shaped(
        self, item: Mapping[str, Any], request: Request, shape: _Shape, collection: str | None
    ) -> Response:
        response = Response(_shaped_data(item, shape))
        item_id = item.get("id")
        if self._own_links:
            response.links = self.prepare_links(item)
        elif item_id is not None:
            if collection is None:
                base = f"/{self.namespace}/{self.rest_base}"
                response.add_link("self", self.app.rest_url(f"{base}/{item_id}"))
                response.add_link("collection", self.app.rest_url(base))
            else:  # the links rest_url would give (no rest_url filter)
                response.links = _plain_links(collection, item_id)
        hooks = self._bound_site.hooks  # bound: the shape was worked out with the site
        name = self._prepare_hook
        if hooks.has_callbacks(name):
            prepared: Response = hooks.apply_filters(name, response, item, request)
            return prepared
        return response

    def _shape(self, request: Request) -> _Shape | None:
        """The keys of an answer to ``request`` (None: too unusual to work out here)."""
        fields_version = self._bound_site.rest_fields.version
        if fields_version != self._fields_seen[0]:
            self._fields_seen = (fields_version, bool(self.get_additional_fields()))
        if self._fields_seen[1]:
            return None
        context = request.get_param("context") or "view"
        raw = request.get_param("_fields")
        if raw is None:
            fields_key = ""
        elif isinstance(raw, str):
            fields_key = "=" + raw
        elif isinstance(raw, list) and all(isinstance(one, str) for one in raw):
            fields_key = "[" + "\x00".join(raw)
        else:
            return None
        if not isinstance(context, str):
            return None
        memo_key = (context, fields_key, fields_version)
        # PERF: the entries' own ``get``, a dict method (specialised), not the memo's held one.
        shape = self._shapes.entries.get(memo_key)
        if shape is None:
            shape = self._shapes.keep(memo_key, self._work_out_shape(request, context))
        return shape

    def _work_out_shape(self, request: Request, context: str) -> _Shape:
        properties = self.get_item_schema().get("properties") or {}
        fields = self.get_fields_for_response(request)
        keys: list[str] = []
        nested: list[tuple[str, Mapping[str, Any]]] = []
        for name, schema in properties.items():
            if not rest_is_field_included(name, fields):
                continue
            contexts = schema.get("context") if isinstance(schema, Mapping) else None
            if contexts is not None and context not in contexts:
                continue
            keys.append(name)
            if isinstance(schema, Mapping) and any(word in schema for word in _NESTED):
                nested.append((name, schema))
        return tuple(keys), tuple(nested), context

    # -- rules ---------------------------------------------------------------------------------

    def _may_write(self, user: User, item: Mapping[str, Any] | None) -> bool:
        rule = self.write
        return bool(rule(user, item)) if callable(rule) else user.can(rule)

    def _may_change(self, user: User, item: Mapping[str, Any], deleting: bool) -> bool:
        """Whether ``user`` may update (or delete) ``item``: WordPress's ``edit_post`` /
        ``delete_post`` meta capabilities."""
        if callable(self.write):
            return bool(self.write(user, item))
        if not user.can(self.write):
            return False
        others = self._others
        if others is None or (self.owner_field and item.get(self.owner_field) == user.id):
            return True
        return user.can(others[1] if deleting else others[0])

    def _may_read(self, user: User, item: Mapping[str, Any] | None) -> bool:
        rule = self.read
        if rule is None:
            return True
        return bool(rule(user, item)) if callable(rule) else user.can(rule)

    def _edit_context(self, request: Request) -> bool:
        return bool(request.get_param("context") == "edit")

    # -- reading -------------------------------------------------------------------------------

    def get_items_permissions_check(self, request: Request) -> RestError | bool:
        """Read capability (a callable is asked per item instead); the ``edit`` context
        needs ``write`` (``rest_forbidden_context``)."""
        if isinstance(self.read, str) and not request.user.can(self.read):
            return self.forbidden("rest_forbidden", request)
        if self._edit_context(request) and not self._may_write(request.user, None):
            return self.forbidden("rest_forbidden_context", request)
        return True

    def get_items(self, request: Request) -> Response | RestError:
        """A page of items, with totals and ``Link`` headers."""
        asked = self.prepare_items_query(request)
        query = self._query(asked)
        page = self.table.query(query)
        user, readable = request.user, self.read
        found = [item for item in page.items if not callable(readable) or readable(user, item)]
        kind, shape = type(self), None
        if (
            self._plain
            and kind.prepare_item_for_response is StoreCollection.prepare_item_for_response
            and kind.prepare_response_for_collection
            is RestController.prepare_response_for_collection
        ):
            shape = self._shape(request)
        if shape is not None:
            # PERF: the answer's keys and the collection's URL worked out once per page; with
            # no filter to hand a Response to, each item is its data and links at once.
            collection = self._collection_url()
            if collection is not None and not self._hooks().has_callbacks(self._prepare_hook):
                items = [self._collected(item, shape, collection) for item in found]
            else:
                collect = self.prepare_response_for_collection
                items = [collect(self._shaped(item, request, shape, collection)) for item in found]
        else:
            items = [
                self.prepare_response_for_collection(self.prepare_item_for_response(item, request))
                for item in found
            ]
        response = Response(items)
        if page.total is not None:
            pages = set_total_headers(response, page.total, query.per_page)
            if query.offset is None and page.total > 0 and query.page > pages:
                return invalid_page_number()
            self._page_links(request, response, query, page.total, pages)
        if page.next_cursor is not None and self.cursor:
            link = _link(request, {"cursor": page.next_cursor})
            response.header("Link", f'<{link}>; rel="next"', False)
        return response

    def prepare_items_query(self, request: Request) -> dict[str, Any]:
        """The query of ``request`` by WordPress's names (``page``, ``per_page``, ``offset``,
        ``search``, ``orderby``, ``order``, ``include``, ``exclude``, and ``sort``, ``filter``,
        ``cursor``), Ext JS's ``start`` / ``limit`` read as ``offset`` / ``per_page``, through
        the filter ``rest_<type>_query(query, request)``."""
        get = request.get_param
        start, limit = get("start"), get("limit")
        query: dict[str, Any] = {
            "page": get("page") or 1,
            "per_page": limit if limit is not None else (get("per_page") or 10),
            "offset": start if start is not None else get("offset"),
            "search": get("search"),
            "orderby": get("orderby") or "id",
            "order": get("order") or "asc",
            "include": get("include") or [],
            "exclude": get("exclude") or [],
            "sort": get("sort"),
            "filter": get("filter"),
            "cursor": get("cursor") if self.cursor else None,
        }
        return dict(
            self._hooks().apply_filters(f"rest_{self.get_object_type()}_query", query, request)
        )

    def _query(self, asked: Mapping[str, Any]) -> Query:
        sort = parse_sort(asked["sort"]) if asked.get("sort") else ()
        by_include = asked.get("orderby") == "include"
        if by_include and not asked.get("include"):
            raise RestError(
                "rest_orderby_include_missing_include",
                "You need to define an include parameter to order by include.",
                {"status": 400},
            )
        if not sort and not by_include:
            sort = (Sort(str(asked["orderby"]), str(asked["order"]).lower() == "desc"),)
        filters = parse_filters(asked["filter"]) if asked.get("filter") else ()
        cursor = asked.get("cursor") or None
        return Query(
            per_page=int(asked["per_page"]),
            page=int(asked["page"]),
            offset=None if asked.get("offset") is None else int(asked["offset"]),
            include=tuple(asked.get("include") or ()),
            exclude=tuple(asked.get("exclude") or ()),
            search=asked.get("search") or None,
            sort=sort,
            filters=filters,
            cursor=cursor,
            count=cursor is None,
            include_order=by_include and not sort,
        )

    def _page_links(
        self, request: Request, response: Response, query: Query, total: int, pages: int
    ) -> None:
        """``Link`` rel prev / next: the request's URL with its page moved (``page``, or the
        ``start`` / ``offset`` it gave); with cursors, next is the cursor's (but for the
        order of ``include``, which has no cursor)."""
        per_page, offset = query.per_page, query.offset
        if offset is None:
            prev = {"page": query.page - 1} if query.page > 1 else None
            after = {"page": query.page + 1} if query.page < pages else None
        else:
            before, later = max(offset - per_page, 0), offset + per_page
            prev = self._moved(request, before, per_page) if offset > 0 else None
            after = self._moved(request, later, per_page) if later < total else None
        if prev is not None:
            response.header("Link", f'<{_link(request, prev)}>; rel="prev"', False)
        if after is not None and (not self.cursor or query.include_order):
            response.header("Link", f'<{_link(request, after)}>; rel="next"', False)

    def _moved(self, request: Request, offset: int, per_page: int) -> dict[str, Any]:
        """The paging parameters of the page at ``offset``: ``start`` (with Ext JS's
        ``page`` beside it) or ``offset``, as the request sent them."""
        if request.get_param("start") is None:
            return {"offset": offset}
        return {"page": offset // per_page + 1, "start": offset}

    def get_item_permissions_check(self, request: Request) -> RestError | bool:
        """Read capability or callable (the item read only when the rule needs it), then
        the ``edit`` context needs the right to update this item (``rest_forbidden_context``)."""
        read = self.read
        edit = request.get_param("context") == "edit"
        if read is None and not edit:
            return True  # PERF: the usual read, answered at once
        if isinstance(read, str) and not request.user.can(read):
            return self.forbidden("rest_forbidden", request)
        if not callable(read) and not edit:
            return True
        if request.get_param("id") is None:  # no item named (an MCP tool listing asks so)
            return self._may_read(request.user, None) or self.forbidden("rest_forbidden", request)
        item = self.table.get(_item_id(request))
        if item is None:
            return self.invalid_id()
        if not self._may_read(request.user, item):
            return self.forbidden("rest_forbidden", request)
        if edit and not self._may_change(request.user, item, False):
            return self.forbidden("rest_forbidden_context", request)
        return True

    def get_item(self, request: Request) -> Response | RestError:
        """The item, its ``ETag`` its version."""
        # PERF: get_param, not ``request["id"]`` (the same read, one Python call less).
        item = self.table.get(request.get_param("id"))
        if item is None:
            return self.invalid_id()
        if self._plain_items and type(item) is dict:
            # PERF: the class's own prepare_item_for_response and _tag written out (their
            # two Python calls: an item GET 175,312 → 174,155 instructions, bench/budget.py).
            shape = self._shape(request)
            if shape is not None:
                response = self._shaped(item, request, shape, self._collection_url())
                response.set_header_line("ETag", f'"{item["version"]}"')
                return response
        response = self.prepare_item_for_response(item, request)
        response.set_header_line("ETag", self._tag(item))
        return response

    def item_version(self, request: Request) -> str | None:
        """The version of the item the URL names (None when there is none): the routes'
        ``etag_callback``, which ``If-Match`` is checked against."""
        item_id = _item_id(request)
        version = self.table.version(item_id)
        return None if version is None else self.version_tag(item_id, version)

    # -- writing -------------------------------------------------------------------------------

    def create_item_permissions_check(self, request: Request) -> RestError | bool:
        """``write`` (asked with no item), else ``rest_cannot_create``."""
        if not self._may_write(request.user, None):
            return self.forbidden("rest_cannot_create", request)
        return True

    def _values(self, prepared: Any) -> dict[str, Any]:
        if isinstance(prepared, RestError):
            raise _Refused(prepared)
        values = dict(prepared)
        if self.owner_field is not None:
            values.pop(self.owner_field, None)
        return values

    def create_item(self, request: Request) -> Response | RestError:
        """Insert the item (the owner field set to the user), run the registered fields'
        updates in the same transaction; 201 with ``Location``, in the ``edit`` context."""
        store = self.table.store  # migrated before the transaction
        try:
            values = self._values(self.prepare_item_for_database(request))
            if self.owner_field is not None:
                values[self.owner_field] = request.user.id
            with store.transaction():
                item = self.table.insert(values)
                error = self.complete_insert(item, request, creating=True)
                if error is not None:
                    raise _Refused(error)
        except _Refused as refused:
            return refused.error
        request.set_param("context", "edit")
        response = self.prepare_item_for_response(item, request)
        response.set_status(201)
        path = f"/{self.namespace}/{self.rest_base}/{item['id']}"
        response.header("Location", self.app.rest_url(path))
        response.set_header_line("ETag", self._tag(item))
        return response

    def _changeable(self, request: Request, deleting: bool) -> RestError | bool:
        if request.method in _READS and not callable(self.write):
            # Asked for the Allow header of a GET (WordPress's rest_send_allow_header runs
            # every handler's check; only True allows): PERF: answered without reading the
            # item when the capability alone decides (an anonymous GET of an item: 230 µs
            # → 140 µs in process, two reads of the item saved).
            if not request.user.is_logged_in or not request.user.can(self.write):
                return False
            if self._others is None:
                return True
        code = "rest_cannot_delete" if deleting else "rest_cannot_edit"
        if request.get_param("id") is None:
            # No item named (an MCP tool listing asks so): the rule asked with no item.
            return self._may_write(request.user, None) or self.forbidden(code, request)
        item = self.table.get(_item_id(request))
        if item is None:
            return self.invalid_id()
        if not self._may_change(request.user, item, deleting):
            return self.forbidden(code, request)
        return True

    def _allow_shortcut(self) -> AllowShortcut | None:
        """The item route's ``allow_shortcut`` (its three permission checks told without
        their calls when the rules decide them: :meth:`_item_verdicts`); None when a subclass
        writes any of the checks its own way (they are asked then)."""
        kind = type(self)
        if any(getattr(kind, name) is not getattr(StoreCollection, name) for name in _CHECKS):
            return None
        covers = (
            self.get_item_permissions_check,
            self.update_item_permissions_check,
            self.delete_item_permissions_check,
        )
        return AllowShortcut(covers, self._item_verdicts)

    def _item_verdicts(self, request: Request) -> int | None:
        """What the item route's checks (read, update, delete: bits 1, 2, 4) answer for the
        ``Allow`` header of a read (WordPress's ``rest_send_allow_header`` asks each), when
        the rules decide it without the item: a ``read`` rule that is None or a capability
        outside the ``edit`` context, a capability as ``write`` and, for a user who has it,
        no other users' capability to ask; None otherwise (the checks are asked).

        PERF: one call in place of the three checks and the chain's steps (an item GET
        191,063 → 175,631 instructions, bench/budget.py)."""
        write = self.write
        if request.method not in _READS or callable(write):
            return None
        read = self.read
        if callable(read) or request.get_param("context") == "edit":
            return None
        user = request.user
        mask = 1 if read is None or user.can(read) else 0
        if not user.is_logged_in or not user.can(write):
            return mask
        return None if self._others is not None else mask | 6

    def update_item_permissions_check(self, request: Request) -> RestError | bool:
        """404 ``rest_<type>_invalid_id`` for no such item, then the right to update it
        (``rest_cannot_edit``)."""
        if not request.user.is_logged_in and request.method in _READS and not callable(self.write):
            # PERF: the Allow header of an anonymous read, ``_changeable``'s answer without
            # its call (both checks: an item GET 209,639 → 208,267 instructions).
            return False
        return self._changeable(request, deleting=False)

    def update_item(self, request: Request) -> Response | RestError:
        """Update the item (its version checked again against ``If-Match`` in the same
        statement) and the registered fields, in one transaction; answered in the ``edit``
        context."""
        store = self.table.store
        try:
            changes = self._values(self.prepare_item_for_database(request))
            with store.transaction():
                item = self._written(
                    self.table.update(
                        request["id"], changes, expected_version=self._expected(request)
                    )
                )
                error = self.complete_insert(item, request, creating=False)
                if error is not None:
                    raise _Refused(error)
        except _Refused as refused:
            return refused.error
        request.set_param("context", "edit")
        response = self.prepare_item_for_response(item, request)
        response.set_header_line("ETag", self._tag(item))
        return response

    def _written(self, result: dict[str, Any] | VersionMismatch | None) -> dict[str, Any]:
        if result is None:
            raise _Refused(self.invalid_id())
        if isinstance(result, VersionMismatch):
            tag = self._tag({"id": result.id, "version": result.version})
            raise _Refused(precondition_failed(tag))
        return result

    def delete_item_permissions_check(self, request: Request) -> RestError | bool:
        """404 ``rest_<type>_invalid_id`` for no such item, then the right to delete it
        (``rest_cannot_delete``)."""
        if not request.user.is_logged_in and request.method in _READS and not callable(self.write):
            return False  # PERF: as in update_item_permissions_check
        return self._changeable(request, deleting=True)

    def delete_item(self, request: Request) -> Response | RestError:
        """Delete the item: ``{"deleted": true, "previous": item}`` (in the ``edit``
        context), then the action ``rest_delete_<type>``."""
        try:
            item = self._written(
                self.table.delete(request["id"], expected_version=self._expected(request))
            )
        except _Refused as refused:
            return refused.error
        request.set_param("context", "edit")
        previous = self.prepare_item_for_response(item, request)
        response = Response({"deleted": True, "previous": previous.data})
        self.complete_delete(item, response, request)
        return response

    # -- parameters ----------------------------------------------------------------------------

    def get_collection_params(self) -> dict[str, dict[str, Any]]:
        """WordPress's (``context``, ``page``, ``per_page``, ``search``, ``offset``,
        ``order``, ``orderby``, ``include``, ``exclude``) and Ext JS's (``start``,
        ``limit``, ``sort``, ``filter``), and ``cursor`` with cursors."""
        params = super().get_collection_params()
        table = self.table
        params.update(
            {
                "offset": {
                    "description": "Offset the result set by a specific number of items.",
                    "type": "integer",
                    "minimum": 0,
                },
                # PERF: defaults are validated and sanitised once, at registration, not per
                # request (svcrest.rest.validation): a page of 10 costs 1,317,124 instructions
                # with these two defaults, 1,492,367 checking them per request, 1,402,729
                # before without them (bench/collection_get.py --instructions; item 322,420
                # against 374,248: its ``context`` default).
                "order": {
                    "description": "Order sort attribute ascending or descending.",
                    "type": "string",
                    "default": "asc",
                    "enum": ["asc", "desc"],
                },
                "orderby": {
                    "description": "Sort collection by object attribute.",
                    "type": "string",
                    "default": "id",
                    "enum": ["id", *table.sortable, "include"],
                },
                "include": {
                    "description": "Limit result set to specific IDs.",
                    "type": "array",
                    "items": {"type": "integer"},
                },
                "exclude": {
                    "description": "Ensure result set excludes specific IDs.",
                    "type": "array",
                    "items": {"type": "integer"},
                },
                "start": {
                    "description": "Offset of the first item (Ext JS's start).",
                    "type": "integer",
                    "minimum": 0,
                },
                "limit": {
                    "description": "Maximum number of items (Ext JS's limit).",
                    "type": "integer",
                    "minimum": 1,
                    "maximum": table.max_per_page,
                },
                "sort": {
                    "type": ["string", "array", "object"],
                    "description": (
                        'Sort keys (Ext JS\'s): [{"property": name, "direction": "ASC" or'
                        ' "DESC"}], as JSON or PHP-style brackets; properties: '
                        + ", ".join(["id", *table.sortable])
                        + "."
                    ),
                },
                "filter": {
                    "type": ["string", "array", "object"],
                    "description": (
                        'Filters (Ext JS\'s): [{"property": name, "value": value, "operator":'
                        ' "="}], as JSON or PHP-style brackets; properties: '
                        + ", ".join(["id", *table.filterable])
                        + "."
                    ),
                },
            }
        )
        if self.cursor:
            params["cursor"] = {
                "description": "Continue after the page whose Link rel=next gave this cursor.",
                "type": "string",
            }
        return params


def _link(request: Request, changes: Mapping[str, Any]) -> str:
    """The URL of ``request`` with its paging parameters replaced by ``changes`` (a cursor
    replaces them all); every other parameter kept as it was sent."""
    pairs: list[tuple[str, str]] = []
    if request.query_string is not None:
        sent = parse_qsl(request.query_string, keep_blank_values=True)
    else:
        sent = [
            (name, str(value))
            for name, value in request.query_params.items()
            if isinstance(value, str | int | float) and not isinstance(value, bool)
        ]
    dropped = _PAGING if "cursor" in changes else tuple(changes)
    placed: set[str] = set()
    for name, value in sent:
        if name == "rest_route":
            continue
        if name in changes:
            if name not in placed:
                pairs.append((name, str(changes[name])))
                placed.add(name)
        elif name not in dropped:
            pairs.append((name, value))
    pairs.extend((name, str(value)) for name, value in changes.items() if name not in placed)
    site = request.site
    base = site.rest_url(request.route) if site is not None else request.route
    return f"{base}{'&' if '?' in base else '?'}{urlencode(pairs)}"


class _StoreRoutes:
    """The registrar ``StoreCollection.register_routes`` hands to ``RestController``'s: the
    routes as it makes them, with the store's options added."""

    def __init__(
        self,
        app: RouteRegistrar,
        etag_callback: Callable[[Request], Any],
        allow: AllowShortcut | None = None,
    ) -> None:
        self._app = app
        self._etag = etag_callback
        self._allow = allow

    def register_rest_route(
        self, namespace: str, route: str, args: Any = None, override: bool = False
    ) -> bool:
        options = dict(args)
        for key, handler in options.items():
            if not isinstance(key, int):
                continue
            methods = handler["methods"]
            methods = {methods} if isinstance(methods, str) else set(methods)
            if methods & _WRITES:
                # Writes may wait for the store's write lock: their callbacks run off the
                # event loop (as "blocking": True would run them). PERF: their permission
                # checks (reads) stay plain, so the Allow header of a GET, which asks them,
                # needs no coroutine: a GET of an item 95 µs → 60 µs in process.
                handler["callback"] = offload(handler["callback"])
            if methods & _ITEM_WRITES:
                handler["etag_callback"] = self._etag
        if "(?P<id>" not in route:
            # Creations honour Idempotency-Key (the item's writes are idempotent already).
            # PERF: not on the item route, whose every GET would run the guard's step.
            options["idempotency"] = "optional"
        elif self._allow is not None:
            options["allow_shortcut"] = self._allow
        return self._app.register_rest_route(namespace, route, options, override)


class _ChangeRender(FeedRender):
    """How a collection's feed shows a change: the item as the subscriber's GET would show
    it in the ``view`` context, when the ``read`` rule lets the subscriber read it now; a
    deletion as ``{"id": n}`` when the rule lets the subscriber read the collection. The
    item is read once a wake for every subscriber; subscribers with the same user and the
    same ``context`` and ``_fields`` share its rendering."""

    def __init__(self, collection: StoreCollection) -> None:
        self._collection = collection

    def load(self, change: Change) -> Any:
        if change.event == "deleted":
            return None
        return self._collection.table.get(change.item_id)

    def load_all(self, changes: Sequence[Change]) -> list[Any]:
        items = self._collection.table.get_many(
            change.item_id for change in changes if change.event != "deleted"
        )
        return [None if c.event == "deleted" else items.get(c.item_id) for c in changes]

    def allowed(self, change: Change, loaded: Any, request: Request) -> bool:
        if change.event == "deleted":
            return self._collection._may_read(request.user, None)
        return loaded is not None and self._collection._may_read(request.user, loaded)

    def view(self, change: Change, loaded: Any, request: Request) -> Any:
        if change.event == "deleted":
            return {"id": change.item_id}
        return as_got(self._collection.prepare_item_for_response(loaded, request), request)

    def viewing(self, request: Request) -> Callable[[Change, Any], Any] | None:
        return self._collection._feed_view(request)

    def viewer(self, request: Request) -> Hashable | None:
        return self._collection._view_key(request)

    def viewer_stamp(self) -> Hashable | None:
        # The key's parts that may move under an open stream: a rest_prepare_<type>
        # filter added or removed (the hooks' version), fields registered to the type.
        collection = self._collection
        return (collection._hooks().version, collection.app.rest_fields.version)

    def allowed_by_viewer(self, change: Change) -> bool:
        # SECURITY: the read rule is asked with the user alone (and the item, loaded once
        # for everyone), and the viewer key holds the whole user.
        return True
