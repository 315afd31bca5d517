"""Normalising what ``register_rest_route`` is given: handlers, their defaults, route options
and the full route string, as WordPress's ``register_rest_route`` reads them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, NotRequired, TypedDict, cast

from svcrest.blocking import offload
from svcrest.rest.deadlines import with_db_timeout
from svcrest.rest.definition_errors import RouteDefinitionError
from svcrest.rest.schema.keywords import definition_notices
from svcrest.rest.typed import ReturnedSchema, prepare_typed, response_schema, return_schema
from svcrest.rest.validation import default_error

__all__ = [
    "ROUTE_ONLY_OPTIONS",
    "Handler",
    "RoutePatternError",
    "argument_notices",
    "build_full_route",
    "handler_definitions",
    "lacks_permission_callback",
    "normalise_handler",
    "normalise_methods",
    "public",
    "shared_route_args",
    "split_route_args",
]


class Handler(TypedDict):
    """A registered handler: the dict given at registration with the defaults filled in.

    ``methods`` maps upper-case method names to True; ``callback`` and
    ``permission_callback`` take the request (plain or ``async``); ``args`` maps argument
    names to their definitions. Any other key given at registration (``show_in_index``, …)
    is kept as it is.
    """

    methods: dict[str, bool]
    callback: Callable[..., Any] | None
    args: dict[str, Any]
    permission_callback: NotRequired[Callable[..., Any] | None]
    show_in_index: NotRequired[bool]
    #: Batch requests this handler joins (``{"v1": True}``; ``"atomic": True`` too), over
    #: the route's ``allow_batch`` option.
    allow_batch: NotRequired[Any]
    #: True: the sync ``callback`` and ``permission_callback`` may block (a lock wait, a
    #: slow query) and run in a bounded thread pool under ASGI (``svcrest.blocking``).
    blocking: NotRequired[bool]
    #: Seconds a store statement of the callback may run before it is cancelled (503
    #: ``svc_store_timeout``; PostgreSQL's ``statement_timeout``).
    db_timeout: NotRequired[float]
    #: A cheap version read ``(request) -> str | None`` (plain or ``async``; also a route
    #: option): the ETag of GET answers, checked against If-None-Match (304) and, on PUT,
    #: PATCH and DELETE, If-Match (412) before the callback (docs/guides/http-semantics.md).
    etag_callback: NotRequired[Callable[..., Any]]
    #: True: a PUT, PATCH or DELETE without If-Match answers 428 (with ``etag_callback``).
    require_if_match: NotRequired[bool]
    #: True: the callback's answer already shows the request's ``_fields`` (applied to the
    #: parts they name, as a change feed does to each entry), so the site's ``_fields``
    #: filter (``rest_filter_response_fields``) leaves it whole.
    fields_applied: NotRequired[bool]


def public(request: object = None) -> bool:
    """The permission callback of a route that is public on purpose (WordPress's
    ``__return_true``): everyone may use it. Give it as ``"permission_callback":
    svcrest.public`` so readers (and tools such as the OpenAPI document) know the route was
    meant to be open, rather than left without a check."""
    return True


class RoutePatternError(RouteDefinitionError):
    """A route whose regular expression does not compile: ``reason`` (Python's words) at
    ``position`` of ``full_route``; :meth:`as_written` says where in the route as the
    plugin wrote it."""

    def __init__(self, full_route: str, reason: str, position: int | None) -> None:
        self.full_route = full_route
        self.reason = reason
        self.position = position
        where = "" if position is None else f" at position {position}"
        super().__init__(f"invalid route pattern {full_route!r}: {reason}{where}")

    def as_written(self, namespace: str, route: str) -> str:
        """The message in terms of ``route`` as given to ``register_rest_route`` (the
        position counted in it, and the text from there on)."""
        if self.position is None:
            return str(self)
        start = (
            self.position
            - len(build_full_route(namespace, ""))
            + len(route)
            - len(route.lstrip("/"))
        )
        if not 0 <= start <= len(route):  # in the namespace: the full route says it
            return str(self)
        rest = f"before {route[start:]!r}" if start < len(route) else "at its end"
        return (
            f"invalid route pattern {route!r} in namespace {namespace.strip('/')!r}:"
            f" {self.reason} at position {start} of the route as written ({rest})"
        )


def normalise_methods(methods: Any) -> dict[str, bool]:
    """``"GET"``, ``" get , post "``, ``["GET", "POST"]`` or ``{"GET", "POST"}`` →
    ``{"GET": True, "POST": True}`` (split on commas, stripped, upper-cased, in order)."""
    if isinstance(methods, Mapping):
        names: Iterable[Any] = [name for name, enabled in methods.items() if enabled]
    elif isinstance(methods, str):
        names = methods.split(",")
    elif isinstance(methods, (list, tuple, set, frozenset)):
        names = sorted(methods) if isinstance(methods, (set, frozenset)) else methods
    else:
        raise RouteDefinitionError(f"methods must be a string or a set of strings: {methods!r}")
    result: dict[str, bool] = {}
    for name in names:
        if not isinstance(name, str):
            raise RouteDefinitionError(f"HTTP method names must be strings: {name!r}")
        for part in name.split(","):
            method = part.strip().upper()
            if method:
                result[method] = True
    return result


def build_full_route(namespace: str, route: str) -> str:
    """The full route: ``/`` + namespace without outer slashes + ``/`` + route without outer
    slashes."""
    return "/" + namespace.strip("/") + "/" + route.strip("/")


#: Options of a whole route that a handler definition cannot carry: inside a handler they
#: would be ignored (a rate limit the author believes is on, silently off).
ROUTE_ONLY_OPTIONS = ("schema", "rate_limit", "idempotency")
#: Options of one handler that a route cannot carry beside its handlers: there they would
#: name no handler (an answer the author believes is left whole, silently filtered).
HANDLER_ONLY_OPTIONS = ("fields_applied",)


def _refuse_misplaced(where: Mapping[str, Any], keys: tuple[str, ...], message: str) -> None:
    """Raise ``RouteDefinitionError`` with ``message`` (a ``str.format`` template of
    ``key``) for the first of ``keys`` that ``where`` holds: an option written where it
    would be ignored."""
    for key in keys:
        if key in where:
            raise RouteDefinitionError(message.format(key=key))


def normalise_handler(handler: Mapping[str, Any], common_args: Mapping[str, Any]) -> Handler:
    """A handler merged over the defaults ``methods="GET"``, ``callback=None`` and ``args={}``
    (its own values win), with the route's shared ``args`` under its own. Raises
    ``RouteDefinitionError`` for a route option (``schema``, ``rate_limit``,
    ``idempotency``) inside the handler, where it would be ignored, for a
    ``fields_applied`` other than True or False, or for an argument whose ``default``
    fails its own schema (every request would be refused)."""
    if not isinstance(handler, Mapping):
        raise RouteDefinitionError(f"a handler definition must be a mapping: {handler!r}")
    _refuse_misplaced(
        handler,
        ROUTE_ONLY_OPTIONS,
        "{key!r} is a route option, and inside a handler definition it would be ignored:"
        " move it out of the handler, next to the handlers ({{0: handler, {key!r}: ...}})",
    )
    merged: dict[str, Any] = {"methods": "GET", "callback": None, "args": {}}
    merged.update(handler)
    merged["methods"] = normalise_methods(merged["methods"])
    args = merged["args"]
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise RouteDefinitionError("a handler's 'args' must be a mapping of argument definitions")
    merged["args"] = {**common_args, **_typed_args(merged, args, common_args)}
    for name, definition in merged["args"].items():
        error = default_error(str(name), definition)
        if error is not None:
            raise RouteDefinitionError(
                f"The default of the argument {name!r} does not meet its own schema:"
                f" {error.message}"
            )
    if "fields_applied" in merged and not isinstance(merged["fields_applied"], bool):
        raise RouteDefinitionError(
            f"fields_applied must be True or False: {merged['fields_applied']!r}"
        )
    db_timeout = _db_timeout(merged.get("db_timeout"))
    for key in ("callback", "permission_callback"):
        value: Callable[..., Any] | None = merged.get(key)
        if value is not None and not callable(value):
            raise RouteDefinitionError(f"{key} must be callable, not {type(value).__name__}")
        if value is not None and db_timeout is not None:
            value = merged[key] = with_db_timeout(value, db_timeout)
        if value is not None and merged.get("blocking"):
            # A sync callback that may block runs off the event loop (svcrest.blocking).
            merged[key] = offload(value)
    return cast(Handler, merged)


def _typed_args(
    merged: dict[str, Any], explicit: Mapping[str, Any], common: Mapping[str, Any]
) -> Mapping[str, Any]:
    """A handler's own args, with those its callback's annotated parameters declare
    (``svcrest.rest.typed``): per argument, the route's shared definition, then the
    annotation's, then the handler's explicit one, key by key. A typed callback is replaced
    by the ``callback(request)`` that calls it with keyword arguments."""
    callback = merged["callback"]
    if callback is None or not callable(callback):
        return explicit
    try:
        typed = prepare_typed(callback)
    except TypeError as exc:
        raise RouteDefinitionError(str(exc)) from None
    except NameError as exc:  # an annotation naming something its module does not define
        name = getattr(callback, "__qualname__", repr(callback))
        raise RouteDefinitionError(f"the annotations of {name} cannot be read: {exc}") from None
    if typed is None:
        return explicit
    merged["callback"] = typed.callback
    combined = {
        name: {**common.get(name, {}), **definition, **explicit.get(name, {})}
        for name, definition in typed.args.items()
    }
    return {**explicit, **combined}


def _db_timeout(value: Any) -> float | None:
    """The ``db_timeout`` option checked: None, or seconds above 0 and at most an hour."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 3600:
        raise RouteDefinitionError(f"db_timeout must be seconds above 0, at most 3600: {value!r}")
    return float(value)


def handler_definitions(args: Any) -> tuple[list[Any], dict[str, Any]]:
    """The handler definitions (as given) and the route options of a registration.

    - a mapping with ``callback`` is one handler;
    - a mapping with integer keys holds handlers under those keys and options under string
      keys (a string key ``args`` holds argument definitions shared by every handler);
    - a list or tuple holds handlers;
    - None or an empty mapping registers a route without handlers.
    """
    if args is None:
        return [], {}
    if isinstance(args, (list, tuple)):
        return list(args), {}
    if not isinstance(args, Mapping):
        raise RouteDefinitionError(f"route args must be a mapping or a list, not {args!r}")
    if "callback" in args:
        return [args], {}
    handlers_in: list[Any] = []
    options: dict[str, Any] = {}
    for key, value in args.items():
        if isinstance(key, int) and not isinstance(key, bool):
            handlers_in.append(value)
        else:
            options[str(key)] = value
    return handlers_in, options


def split_route_args(args: Any) -> tuple[list[Handler], dict[str, Any]]:
    """The normalised handlers and the route options of a registration (shapes as
    :func:`handler_definitions` reads them). Raises ``RouteDefinitionError`` for a
    handler's own option (``fields_applied``) beside the handlers, where it would be
    ignored."""
    handlers_in, options = handler_definitions(args)
    _refuse_misplaced(
        options,
        HANDLER_ONLY_OPTIONS,
        "{key!r} is an option of a handler, and beside the handlers it would be ignored:"
        " put it inside the handler definition ({{0: {{..., {key!r}: True}}}})",
    )
    common = options.pop("args", None) or {}
    if not isinstance(common, Mapping):
        raise RouteDefinitionError("the route option 'args' must be a mapping")
    handlers_in = _returned_schemas(handlers_in, options)
    return [normalise_handler(handler, common) for handler in handlers_in], options


def shared_route_args(args: Any) -> dict[str, Any]:
    """The argument definitions a registration shares with every handler of its route (the
    route-level ``args`` option), as given."""
    _, options = handler_definitions(args)
    common = options.get("args")
    return dict(common) if isinstance(common, Mapping) else {}


def _returned_schemas(handlers: list[Any], options: dict[str, Any]) -> list[Any]:
    """The handlers, each whose callback's return annotation gives a schema with it as its
    ``response_schema`` (unless it has one: each operation documents its own answer), and
    ``options["schema"]`` (unless given) from the first handler whose callback returns a
    ``TypedDict``, a dataclass or a model (the route's item schema)."""
    result: list[Any] = []
    for handler in handlers:
        callback = handler.get("callback") if isinstance(handler, Mapping) else None
        if not callable(callback):
            result.append(handler)
            continue
        item = return_schema(callback)
        if item is not None and "schema" not in options:
            options["schema"] = ReturnedSchema(item)
        answer = response_schema(callback)
        if answer is not None and "response_schema" not in handler:
            handler = {**handler, "response_schema": ReturnedSchema(answer)}
        result.append(handler)
    return result


def argument_notices(args: Any) -> list[str]:
    """The notices of the argument definitions of a registration (its handlers' ``args``
    and the route-level ``args``): a ``type`` that is not built in (WordPress's
    ``_doing_it_wrong``), a keyword that looks like a slip of a known one."""
    handlers, options = handler_definitions(args)
    sources = [options.get("args")]
    sources += [handler.get("args") for handler in handlers if isinstance(handler, Mapping)]
    notices: dict[str, None] = {}
    for source in sources:
        if isinstance(source, Mapping):
            for name, definition in source.items():
                notices.update(dict.fromkeys(definition_notices(str(name), definition)))
    return list(notices)


def lacks_permission_callback(args: Any) -> bool:
    """Whether a handler of the registration ``args`` has no ``permission_callback`` (or
    None): WordPress 5.5 then warns that the route should say who may use it."""
    handlers, _ = handler_definitions(args)
    return any(
        isinstance(handler, Mapping) and handler.get("permission_callback") is None
        for handler in handlers
    )
