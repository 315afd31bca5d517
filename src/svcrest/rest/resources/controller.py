"""RestController: WordPress's ``WP_REST_Controller``, the base class of a resource.

A subclass sets ``namespace`` and ``rest_base``, describes its items with a schema (the class
attribute ``schema``, or an overridden ``get_item_schema``) and implements the operations it
offers over any storage: ``get_items`` / ``get_item`` / ``create_item`` / ``update_item`` /
``delete_item``, each with its ``*_permissions_check``. ``register_routes`` registers a route
for what the subclass implements, with args and OPTIONS help made from the schema.

The rule lives here: the schema is the one source of a resource's args, contexts and fields,
and fields other plugins register (``app.register_rest_field``) join it wherever it is read.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, cast

from svcrest.hooks import Hooks
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.rest.fields import parse_fields
from svcrest.rest.resources.context_filter import (
    rest_filter_response_by_context,
    rest_is_field_included,
)
from svcrest.rest.resources.endpoint_args import (
    CREATABLE,
    EDITABLE,
    rest_get_endpoint_args_for_schema,
)
from svcrest.rest.resources.fields_registry import RestField, RestFields
from svcrest.rest.server import RestServer

__all__ = ["ChangeFeeds", "ControllerHost", "RestController", "RouteRegistrar", "page_args"]

_FORBIDDEN_MESSAGES = {
    "rest_forbidden_context": "Sorry, you are not allowed to edit {type} items.",
    "rest_cannot_create": "Sorry, you are not allowed to create {type} items as this user.",
    "rest_cannot_edit": "Sorry, you are not allowed to edit this {type}.",
    "rest_cannot_delete": "Sorry, you are not allowed to delete this {type}.",
    "rest_cannot_view": "Sorry, you are not allowed to view this {type}.",
}


class RouteRegistrar(Protocol):
    """What ``register_routes`` needs of a site: ``register_rest_route``."""

    def register_rest_route(
        self, namespace: str, route: str, args: Any = None, override: bool = False
    ) -> bool:
        """Register ``route`` under ``namespace`` (WordPress's ``register_rest_route``)."""
        ...


class ControllerHost(RouteRegistrar, Protocol):
    """The site a controller is bound to: its hooks, its registered fields, its REST URLs."""

    hooks: Hooks
    rest_fields: RestFields

    def rest_url(self, path: str = "", scheme: str = "json") -> str:
        """The full URL of REST ``path``."""
        ...


class ChangeFeeds(Protocol):
    """What a site offers a controller with ``changes``: the options of the route of its
    change feed (the App's ``app.changes``)."""

    def feed_route(self, controller: RestController) -> dict[str, Any]:
        """The options of ``GET /<rest_base>/changes`` for ``controller``."""
        ...


def _not_implemented(method: str) -> RestError:
    """WordPress's answer of a controller method a subclass did not write."""
    return RestError(
        "invalid-method",
        f"Method 'RestController.{method}' not implemented. Must be overridden in subclass.",
        {"status": 405},
    )


def page_args(*, per_page_default: int) -> dict[str, dict[str, Any]]:
    """WordPress's paging args of a collection: ``page`` (≥ 1, default 1) and ``per_page``
    (1 to 100, default ``per_page_default``: 10 for WordPress's controllers, 50 for its
    abilities)."""
    return {
        "page": {
            "description": "Current page of the collection.",
            "type": "integer",
            "default": 1,
            "minimum": 1,
        },
        "per_page": {
            "description": "Maximum number of items to be returned in result set.",
            "type": "integer",
            "default": per_page_default,
            "minimum": 1,
            "maximum": 100,
        },
    }


class RestController:
    """A resource's controller (WordPress's ``WP_REST_Controller``): subclass it, set
    ``namespace``, ``rest_base`` and ``schema`` (or override ``get_item_schema``), implement
    the operations offered, and register it with ``app.register_controller(controller)``.

    Every method WordPress's class has is here with its meaning. An operation or permission
    check a subclass does not write answers 405 ``invalid-method``, and the default
    ``register_routes`` registers only the methods written. Helpers the operations share:
    ``prepare_items_query`` (``rest_<type>_query``), ``prepare_item_for_database``
    (``rest_pre_insert_<type>``), ``complete_insert`` (``rest_insert_<type>``, the
    registered fields' update callbacks, ``rest_after_insert_<type>``), ``complete_delete``
    (``rest_delete_<type>``), ``forbidden`` and ``invalid_id`` (WordPress's error codes).
    """

    #: The routes' namespace (``"shop/v1"``).
    namespace: str = ""
    #: The collection's path under the namespace (``"books"``).
    rest_base: str = ""
    #: The item schema (JSON Schema; its ``title`` is the object type fields register to).
    schema: ClassVar[Mapping[str, Any] | None] = None
    #: The routes' ``allow_batch`` option (``{"v1": True}`` lets ``/batch/v1`` run them, as
    #: WordPress's posts controller does); None: not in batches.
    allow_batch: ClassVar[Mapping[str, bool] | None] = None
    #: True: every operation is an MCP tool on a site serving MCP (``App(mcp=True)``): list,
    #: get, create, update (as PUT) and delete, named after their OpenAPI ``operationId``.
    #: ``app.register_controller(controller, mcp=True)`` sets it too.
    mcp: bool = False
    #: True: the controller records its writes with ``app.changes.record(object_type, id,
    #: event)`` (the object type being the schema's ``title``), and the default
    #: ``register_routes`` also registers ``GET /<rest_base>/changes``, the feed of those
    #: changes (:meth:`register_changes_route`).
    changes: bool = False

    def __init__(self) -> None:
        self._app: ControllerHost | None = None
        self._schema_memo: tuple[int, dict[str, Any]] | None = None

    # -- binding and routes -----------------------------------------------------------------

    @property
    def app(self) -> ControllerHost:
        """The site the controller is bound to (by ``app.register_controller``)."""
        if self._app is None:
            raise RuntimeError(
                f"{type(self).__name__} is not bound to a site: use app.register_controller"
            )
        return self._app

    def bind(self, app: ControllerHost) -> None:
        """Bind the controller to ``app`` (``app.register_controller`` does, then registers
        the routes)."""
        self._app = app
        self._schema_memo = None

    def _implements(self, name: str) -> bool:
        return getattr(type(self), name) is not getattr(RestController, name)

    def register_routes(self, app: RouteRegistrar) -> None:
        """Register ``/<rest_base>`` (GET with the collection params, POST with creatable
        args) and ``/<rest_base>/(?P<id>[\\d]+)`` (GET with ``context``; POST, PUT and PATCH
        with editable args; DELETE with ``force``), each method only when the subclass
        implements its operation, with the public schema as each route's ``schema``; with
        ``changes``, also ``/<rest_base>/changes`` (:meth:`register_changes_route`)."""
        self._register_operations(app)
        if self.changes:
            self.register_changes_route(app)

    def register_changes_route(self, app: RouteRegistrar) -> None:
        """Register ``GET /<rest_base>/changes``: the feed of the changes the controller
        records with ``app.changes.record``, long-polled (``since``, ``wait``) or streamed
        (Server-Sent Events, JSON Lines), read by those ``get_items_permissions_check``
        lets in; each entry's ``data`` is the item as this subscriber's ``get_item`` shows
        it (``{"id": n}`` for a deletion). The site must offer change feeds (the App's
        ``changes``); TypeError otherwise."""
        feeds = getattr(self.app, "changes", None)
        if not callable(getattr(feeds, "feed_route", None)):
            raise TypeError(f"{type(self).__name__} needs a site with change feeds (an App)")
        route = cast(ChangeFeeds, feeds).feed_route(self)
        app.register_rest_route(self.namespace, f"/{self.rest_base}/changes", route)

    def _register_operations(self, app: RouteRegistrar) -> None:
        """The routes of the operations the subclass implements (see :meth:`register_routes`)."""
        collection: dict[Any, Any] = {}
        if self._implements("get_items"):
            collection[len(collection)] = {
                "methods": "GET",
                "callback": self.get_items,
                "permission_callback": self.get_items_permissions_check,
                "args": self.get_collection_params(),
            }
        if self._implements("create_item"):
            collection[len(collection)] = {
                "methods": "POST",
                "callback": self.create_item,
                "permission_callback": self.create_item_permissions_check,
                "args": self.get_endpoint_args_for_item_schema(CREATABLE),
            }
        self._mark_tools(collection, listing=True)
        if collection:
            collection.update(self._route_options())
            app.register_rest_route(self.namespace, f"/{self.rest_base}", collection)
        item = self._item_handlers()
        self._mark_tools(item)
        if item:
            item["args"] = {
                "id": {"description": "Unique identifier for the object.", "type": "integer"}
            }
            item.update(self._route_options())
            app.register_rest_route(self.namespace, f"/{self.rest_base}/(?P<id>[\\d]+)", item)

    def _mark_tools(self, handlers: dict[Any, Any], listing: bool = False) -> None:
        """With ``mcp``, each handler is an MCP tool: the update handler (POST, PUT and
        PATCH, WordPress's EDITABLE) as one tool, its PUT; the collection's GET says it
        answers an array of items (a tool's output schema must hold for what it sends)."""
        if not self.mcp:
            return
        for handler in handlers.values():
            methods = handler["methods"]
            handler["mcp"] = "PUT" if isinstance(methods, list) and "PUT" in methods else True
            if listing and methods == "GET":
                handler["response_schema"] = self._collection_schema
            elif methods == "DELETE":
                handler["response_schema"] = self._deletion_schema

    def _collection_schema(self) -> dict[str, Any]:
        return {"type": "array", "items": self.get_public_item_schema()}

    def _deletion_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "deleted": {"type": "boolean"},
                "previous": self.get_public_item_schema(),
            },
        }

    def _route_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"schema": self.get_public_item_schema}
        if self.allow_batch is not None:
            options["allow_batch"] = dict(self.allow_batch)
        return options

    def _item_handlers(self) -> dict[Any, Any]:
        item: dict[Any, Any] = {}
        if self._implements("get_item"):
            item[len(item)] = {
                "methods": "GET",
                "callback": self.get_item,
                "permission_callback": self.get_item_permissions_check,
                "args": {"context": self.get_context_param(default="view")},
            }
        if self._implements("update_item"):
            item[len(item)] = {
                "methods": ["POST", "PUT", "PATCH"],
                "callback": self.update_item,
                "permission_callback": self.update_item_permissions_check,
                "args": self.get_endpoint_args_for_item_schema(EDITABLE),
            }
        if self._implements("delete_item"):
            item[len(item)] = {
                "methods": "DELETE",
                "callback": self.delete_item,
                "permission_callback": self.delete_item_permissions_check,
                "args": {
                    "force": {
                        "type": "boolean",
                        "default": False,
                        "description": "Whether to bypass Trash and force deletion.",
                    }
                },
            }
        return item

    # -- the five operations (WordPress: 405 until a subclass writes them) ------------------

    def get_items_permissions_check(self, request: Request) -> Any:
        """Whether ``request`` may list the collection (True, or a ``RestError``)."""
        return _not_implemented("get_items_permissions_check")

    def get_items(self, request: Request) -> Any:
        """The collection (a list of ``prepare_response_for_collection`` items)."""
        return _not_implemented("get_items")

    def get_item_permissions_check(self, request: Request) -> Any:
        """Whether ``request`` may read the item ``request["id"]``."""
        return _not_implemented("get_item_permissions_check")

    def get_item(self, request: Request) -> Any:
        """The item ``request["id"]``."""
        return _not_implemented("get_item")

    def create_item_permissions_check(self, request: Request) -> Any:
        """Whether ``request`` may create an item."""
        return _not_implemented("create_item_permissions_check")

    def create_item(self, request: Request) -> Any:
        """Create an item (WordPress answers 201 with ``Location``, in the ``edit``
        context)."""
        return _not_implemented("create_item")

    def update_item_permissions_check(self, request: Request) -> Any:
        """Whether ``request`` may update the item ``request["id"]``."""
        return _not_implemented("update_item_permissions_check")

    def update_item(self, request: Request) -> Any:
        """Update the item ``request["id"]`` (answered in the ``edit`` context)."""
        return _not_implemented("update_item")

    def delete_item_permissions_check(self, request: Request) -> Any:
        """Whether ``request`` may delete the item ``request["id"]``."""
        return _not_implemented("delete_item_permissions_check")

    def delete_item(self, request: Request) -> Any:
        """Delete the item ``request["id"]`` (``{"deleted": true, "previous": item}``)."""
        return _not_implemented("delete_item")

    # -- preparing items --------------------------------------------------------------------

    def prepare_item_for_database(self, request: Request) -> Any:
        """The item to store from a create or update ``request``: each writable schema
        property sent (registered fields are written by their update callbacks instead),
        through the filter ``rest_pre_insert_<type>(prepared, request)``."""
        schema = self.get_item_schema()
        properties = schema.get("properties")
        fields = self.get_additional_fields()
        prepared: dict[str, Any] = {}
        if isinstance(properties, Mapping):
            for name, params in properties.items():
                if name in fields or (isinstance(params, Mapping) and params.get("readonly")):
                    continue
                if request.has_param(name):
                    prepared[name] = request.get_param(name)
        return self._hooks().apply_filters(
            f"rest_pre_insert_{self.get_object_type()}", prepared, request
        )

    def prepare_item_for_response(self, item: Any, request: Request) -> Response:
        """The answer of one item: its schema properties that ``_fields`` asks for, the
        registered fields' values, filtered by the request's ``context`` (default ``view``),
        with ``self`` and ``collection`` links when it has an ``id``; then the filter
        ``rest_prepare_<type>(response, item, request)``."""
        data = dict(item) if isinstance(item, Mapping) else {}
        properties = self.get_item_schema().get("properties")
        if isinstance(properties, Mapping) and properties:
            fields = self.get_fields_for_response(request)
            data = {
                key: value
                for key, value in data.items()
                if key in properties and rest_is_field_included(key, fields)
            }
        data = self.add_additional_fields_to_object(data, request)
        context = request.get_param("context") or "view"
        response = Response(self.filter_response_by_context(data, str(context)))
        if isinstance(item, Mapping) and item.get("id") is not None and self._app is not None:
            base = f"/{self.namespace}/{self.rest_base}"
            response.add_link("self", self._app.rest_url(f"{base}/{item['id']}"))
            response.add_link("collection", self._app.rest_url(base))
        prepared: Response = self._hooks().apply_filters(
            f"rest_prepare_{self.get_object_type()}", response, item, request
        )
        return prepared

    def prepare_response_for_collection(self, response: Any) -> Any:
        """An item of a list answer: a Response's data with its ``_links``; anything else
        as it is (WordPress's ``prepare_response_for_collection``)."""
        return RestServer.prepare_response_for_collection(response)

    def filter_response_by_context(self, data: Any, context: str) -> Any:
        """``data`` with what ``context`` may not see removed, by the item schema
        (``rest_filter_response_by_context``)."""
        return rest_filter_response_by_context(data, self.get_item_schema(), context)

    # -- collections ------------------------------------------------------------------------

    def prepare_items_query(self, request: Request) -> dict[str, Any]:
        """The collection query of ``request``: ``page``, ``per_page``, ``offset`` and
        ``search`` (and any other collection param sent), through the filter
        ``rest_<type>_query(query, request)`` (WordPress's ``rest_post_query``)."""
        query: dict[str, Any] = {}
        for name in self.get_collection_params():
            if name != "context" and request.get_param(name) is not None:
                query[name] = request.get_param(name)
        page = query.get("page", 1)
        per_page = query.get("per_page", 10)
        if isinstance(page, int) and isinstance(per_page, int):
            query["offset"] = (page - 1) * per_page
        return dict(
            self._hooks().apply_filters(f"rest_{self.get_object_type()}_query", query, request)
        )

    def get_collection_params(self) -> dict[str, dict[str, Any]]:
        """The collection's query args: ``context``, ``page`` (≥ 1, default 1),
        ``per_page`` (1 to 100, default 10) and ``search``, as WordPress's."""
        return {
            "context": self.get_context_param(default="view"),
            **page_args(per_page_default=10),
            "search": {
                "description": "Limit results to those matching a string.",
                "type": "string",
            },
        }

    def get_context_param(self, default: str | None = None, **args: Any) -> dict[str, Any]:
        """The ``context`` arg: a string, its enum every context the schema's properties
        name (in WordPress's order: reverse sorted), ``default`` when given, ``args``
        merged over."""
        param: dict[str, Any] = {
            "description": (
                "Scope under which the request is made; determines fields present in response."
            ),
            "type": "string",
        }
        properties = self.get_item_schema().get("properties")
        contexts: dict[str, None] = {}
        if isinstance(properties, Mapping):
            for attributes in properties.values():
                named = attributes.get("context") if isinstance(attributes, Mapping) else None
                if named:
                    contexts.update(dict.fromkeys(named))
        if contexts:
            param["enum"] = sorted(contexts, reverse=True)
        if default is not None:
            param["default"] = default
        param.update(args)
        return param

    # -- schema -----------------------------------------------------------------------------

    def get_item_schema(self) -> dict[str, Any]:
        """The item schema with the registered fields added (``add_additional_fields_schema``).

        By default made from the ``schema`` attribute and remembered until a field is
        registered (callers must not change it); a subclass may override it as in WordPress,
        ending with ``return self.add_additional_fields_schema(schema)``."""
        version = -1 if self._app is None else self._app.rest_fields.version
        memo = self._schema_memo
        if memo is not None and memo[0] == version:
            return memo[1]
        base = copy.deepcopy(dict(self.schema)) if self.schema is not None else {}
        schema = self.add_additional_fields_schema(base)
        self._schema_memo = (version, schema)
        return schema

    def get_public_item_schema(self) -> dict[str, Any]:
        """The item schema as shown to clients: without the properties' ``arg_options``."""
        schema = copy.deepcopy(self.get_item_schema())
        properties = schema.get("properties")
        if isinstance(properties, dict):
            for prop in properties.values():
                if isinstance(prop, dict):
                    prop.pop("arg_options", None)
        return schema

    def get_endpoint_args_for_item_schema(self, method: str = CREATABLE) -> dict[str, Any]:
        """The args of an endpoint writing items (``rest_get_endpoint_args_for_schema`` of
        the item schema; ``method`` ``"POST"`` for creation, ``"POST, PUT, PATCH"`` for
        editing)."""
        return rest_get_endpoint_args_for_schema(self.get_item_schema(), method)

    def get_object_type(self) -> str | None:
        """The object type fields register to: the schema's ``title``."""
        title = self.get_item_schema().get("title")
        return title if isinstance(title, str) and title else None

    # -- registered fields ------------------------------------------------------------------

    def get_additional_fields(self, object_type: str | None = None) -> Mapping[str, RestField]:
        """The fields registered to ``object_type`` (default: this controller's), read-only."""
        if self._app is None:
            return {}
        if object_type is None:
            object_type = self.get_object_type()
        return self._app.rest_fields.for_type(object_type)

    def add_additional_fields_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        """``schema`` with each registered field that has a schema as a property (the
        fields of the type its ``title`` names)."""
        title = schema.get("title")
        if not isinstance(title, str) or not title:
            return schema
        for name, field in self.get_additional_fields(title).items():
            if field.schema is not None:
                schema.setdefault("properties", {})[name] = copy.deepcopy(field.schema)
        return schema

    def get_fields_for_response(self, request: Request) -> list[str]:
        """The fields an answer to ``request`` holds: the schema's properties (and
        registered fields without a schema) visible in the request's ``context``, plus
        ``_links`` (and ``_embedded`` under ``_embed``), narrowed to ``_fields`` when sent
        (``id`` always kept when the schema has it; a dotted ``meta.color`` kept when its
        top property is there)."""
        properties = self.get_item_schema().get("properties")
        known: dict[str, Any] = dict(properties) if isinstance(properties, Mapping) else {}
        for name, field in self.get_additional_fields().items():
            if field.schema is None:
                known[name] = {}
        context = request.get_param("context")
        fields = [
            name
            for name, options in known.items()
            if not context
            or not isinstance(options, Mapping)
            or not options.get("context")
            or context in options["context"]
        ]
        fields.append("_links")
        if request.has_param("_embed"):
            fields.append("_embedded")
        fields = list(dict.fromkeys(fields))
        requested = request.get_param("_fields")
        wanted = parse_fields(requested) if requested is not None else []
        if not wanted:
            return fields
        if "id" in fields:
            wanted.append("id")
        return [name for name in wanted if name.split(".", 1)[0] in fields]

    def add_additional_fields_to_object(self, data: Any, request: Request) -> Any:
        """``data`` with each registered field's value (its ``get_callback(data, attribute,
        request, object_type)``) when the answer holds that field."""
        fields = self.get_additional_fields()
        if not fields or not isinstance(data, dict):
            return data
        requested = self.get_fields_for_response(request)
        object_type = self.get_object_type() or ""
        for name, field in fields.items():
            if field.get_callback is None or not rest_is_field_included(name, requested):
                continue
            data[name] = field.get_callback(data, name, request, object_type)
        return data

    def update_additional_fields_for_object(self, item: Any, request: Request) -> Any:
        """Write each registered field the request sends with its ``update_callback(value,
        item, attribute, request, object_type)``; the first ``RestError`` returned or
        raised is returned (the write's answer), else True."""
        object_type = self.get_object_type() or ""
        for name, field in self.get_additional_fields().items():
            if field.update_callback is None or request.get_param(name) is None:
                continue
            try:
                result = field.update_callback(
                    request.get_param(name), item, name, request, object_type
                )
            except RestError as raised:
                return raised
            if isinstance(result, RestError):
                return result
        return True

    # -- the hooks of writes, and WordPress's errors ----------------------------------------

    def complete_insert(self, item: Any, request: Request, *, creating: bool) -> RestError | None:
        """After an item was stored: the action ``rest_insert_<type>(item, request,
        creating)``, the registered fields' update callbacks (their first error is
        returned: the write's answer), then ``rest_after_insert_<type>``."""
        hooks = self._hooks()
        object_type = self.get_object_type()
        hooks.do_action(f"rest_insert_{object_type}", item, request, creating)
        updated = self.update_additional_fields_for_object(item, request)
        if isinstance(updated, RestError):
            return updated
        hooks.do_action(f"rest_after_insert_{object_type}", item, request, creating)
        return None

    def complete_delete(self, item: Any, response: Response, request: Request) -> None:
        """After an item was deleted: the action ``rest_delete_<type>(item, response,
        request)``."""
        self._hooks().do_action(f"rest_delete_{self.get_object_type()}", item, response, request)

    def forbidden(self, code: str, request: Request) -> RestError:
        """WordPress's refusal ``code`` (``rest_forbidden_context``, ``rest_cannot_create``,
        ``rest_cannot_edit``, ``rest_cannot_delete``, ``rest_cannot_view``): 401 for the
        anonymous user, 403 for a logged-in one."""
        template = _FORBIDDEN_MESSAGES.get(code, "Sorry, you are not allowed to do that.")
        message = template.format(type=self.get_object_type() or "item")
        return RestError(code, message, {"status": 401 if request.user.id == 0 else 403})

    def invalid_id(self) -> RestError:
        """WordPress's 404 for an id that names no item: ``rest_<type>_invalid_id``."""
        object_type = self.get_object_type() or "item"
        return RestError(
            f"rest_{object_type}_invalid_id", f"Invalid {object_type} ID.", {"status": 404}
        )

    def _hooks(self) -> Hooks:
        """The site's hooks; an unbound controller's are empty."""
        return self._app.hooks if self._app is not None else Hooks()
