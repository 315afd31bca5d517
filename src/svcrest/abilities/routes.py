"""The abilities REST routes under ``svc-abilities/v1``, as WordPress 6.9's ``wp-abilities/v1``.

``/abilities`` lists the abilities shown in REST (paged: ``page``, ``per_page`` up to 100,
default 50; ``category``), ``/abilities/<name>`` shows one, ``/abilities/<name>/run`` runs one:
GET for a ``readonly`` ability (``input`` from the query, objects in PHP bracket form
``input[a]=1``), DELETE for a ``destructive`` and ``idempotent`` one (``input`` from the query),
POST for the others (JSON ``{"input": ...}``); another method answers 405
``rest_ability_invalid_method``. ``/categories`` and ``/categories/<slug>`` list and show the
categories. Listing and showing need the ``read`` capability (401 anonymous, 403
``rest_forbidden``); a run is refused by the ability's permission callback with
``rest_ability_cannot_execute`` (401 anonymous, 403 logged in) or the RestError it gave.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar, Token
from typing import Any

from svcrest.abilities.ability import Ability, AbilityCategory
from svcrest.abilities.registry import AbilityRegistry
from svcrest.chains import NOT_AWAITABLE, Pending
from svcrest.http.context import (
    current_context,
    dispatch_user,
    enter_dispatch_user,
    leave_dispatch_user,
)
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.http.user import User
from svcrest.rest.paginate import paginate
from svcrest.rest.resources.controller import page_args
from svcrest.rest.schema import sanitize_value

__all__ = ["NAMESPACE", "register_ability_routes"]

NAMESPACE = "svc-abilities/v1"
_NAME_PATTERN = r"[a-zA-Z0-9\-\/]+"
_SLUG_PATTERN = r"[a-z0-9]+(?:-[a-z0-9]+)*"
_ANY_TYPE = ["integer", "number", "boolean", "string", "array", "object", "null"]
_NOT_KEY = re.compile(r"[^a-z0-9_\-]")
#: The run methods whose input is in the query.
_QUERY_METHODS = frozenset({"GET", "HEAD", "DELETE"})
#: The types of input a hook may change in place (JSON's containers).
_MUTABLE = frozenset({dict, list})

#: The run the route's permission check has just allowed in this context: the request, the
#: ability, its input and the user. The run route's callback then runs the ability without
#: checking the same input and permission again (WordPress checks them in
#: ``check_ability_permissions`` and again in ``WP_Ability::execute``; PERF: the second check
#: was a third of the run route's cost). Only a callback answering the very request the check
#: allowed, with the same input object and user, skips them; any other call checks all. The
#: callback uses it up by clearing its request (PERF: no second write of the variable: an MCP
#: ``tools/call`` 154,266 → 152,883 instructions, bench/mcp_call.py).
_ALLOWED_RUN: ContextVar[list[Any] | None] = ContextVar("svcrest_allowed_ability_run", default=None)

#: Which fields each ``context`` shows (WordPress's schema ``context`` lists).
_ABILITY_EMBED = ("name", "label", "category")
_CATEGORY_EMBED = ("slug", "label")


def _not_found() -> RestError:
    return RestError("rest_ability_not_found", "Ability not found.", {"status": 404})


def _status(error: RestError, status: int) -> RestError:
    """``error`` with ``status`` unless its data names one already."""
    data = error.data if isinstance(error.data, dict) else {}
    if "status" not in data:
        return RestError(error.code, error.message, {**data, "status": status})
    return error


def _context_arg() -> dict[str, Any]:
    return {
        "description": "Scope under which the request is made; determines fields present in"
        " response.",
        "type": "string",
        "enum": ["view", "embed", "edit"],
        "default": "view",
    }


def _paging_args() -> dict[str, Any]:
    return {"context": _context_arg(), **page_args(per_page_default=50)}


def _sanitize_key(value: Any) -> str:
    """WordPress's ``sanitize_key``: lower case, only ``a-z0-9_-`` kept."""
    return _NOT_KEY.sub("", str(value).lower())


def _prop(description: str, type_: Any, *contexts: str) -> dict[str, Any]:
    return {"description": description, "type": type_, "context": list(contexts), "readonly": True}


def _ability_schema() -> dict[str, Any]:
    annotation = {"type": ["boolean", "null"]}
    return {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "title": "ability",
        "type": "object",
        "properties": {
            "name": _prop("Unique identifier for the ability.", "string", "view", "edit", "embed"),
            "label": _prop("Display label for the ability.", "string", "view", "edit", "embed"),
            "description": _prop("Description of the ability.", "string", "view", "edit"),
            "category": _prop(
                "Ability category this ability belongs to.", "string", "view", "edit", "embed"
            ),
            "input_schema": _prop("JSON Schema for the ability input.", "object", "view", "edit"),
            "output_schema": _prop("JSON Schema for the ability output.", "object", "view", "edit"),
            "meta": {
                **_prop("Meta information about the ability.", "object", "view", "edit"),
                "properties": {
                    "annotations": {
                        "type": "object",
                        "properties": {
                            "readonly": annotation,
                            "destructive": annotation,
                            "idempotent": annotation,
                        },
                    },
                    "show_in_rest": {"type": "boolean"},
                },
            },
        },
    }


def _category_schema() -> dict[str, Any]:
    return {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "title": "ability-category",
        "type": "object",
        "properties": {
            "slug": _prop(
                "Unique identifier for the ability category.", "string", "view", "edit", "embed"
            ),
            "label": _prop("Display label for the category.", "string", "view", "edit", "embed"),
            "description": _prop("Description of the category.", "string", "view", "edit"),
            "meta": _prop("Meta information about the category.", "object", "view", "edit"),
        },
    }


def _run_schema() -> dict[str, Any]:
    return {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "title": "ability-execution",
        "type": "object",
        "properties": {
            "result": _prop("The result of the ability execution.", _ANY_TYPE, "view", "edit")
        },
    }


def _run_result_schema() -> dict[str, Any]:
    return {"description": "The result of the ability execution, of its output schema."}


def _in_context(data: dict[str, Any], request: Request, embed: Iterable[str]) -> dict[str, Any]:
    """``data`` cut to the fields of the request's ``context`` (``embed``: only ``embed``)."""
    if request.get_param("context") == "embed":
        return {key: data[key] for key in embed}
    return data


def _answer(result: Any) -> Any:
    """The run route's answer of an ability's result."""
    if type(result) is dict:  # PERF: the usual result; the server makes its Response
        return result
    if isinstance(result, RestError):
        return _status(result, 500)
    if isinstance(result, Response):  # kept as it is, as WordPress's rest_ensure_response
        return result
    return Response(result)


async def _answer_later(pending: Any, user: Any) -> Any:
    """:func:`_answer` once an async run has finished (run as ``user``)."""
    token = enter_dispatch_user(user)
    try:
        result = await pending
    finally:
        leave_dispatch_user(token)
    return _answer(result)


def _denial(verdict: Any, user: User) -> RestError:
    """The run's refusal by a permission callback's ``verdict`` (anything but True)."""
    denied = 403 if user.is_logged_in else 401
    if isinstance(verdict, RestError):
        return _status(verdict, denied)
    return RestError(
        "rest_ability_cannot_execute",
        "Sorry, you are not allowed to execute this ability.",
        {"status": denied},
    )


async def _direct_later(pending: Any, ability: Ability, user: User) -> Any:
    """:meth:`AbilitiesController.direct_answer` once an async permission callback
    answered (run as ``user``)."""
    token = enter_dispatch_user(user)
    try:
        verdict = await pending
        if verdict is not True:
            return _denial(verdict, user)
        result = ability.run_permitted(None)
        if type(result) is Pending:
            result = await result
    finally:
        leave_dispatch_user(token)
    return _answer(result)


def expected_method(ability: Ability) -> str:
    """The run method an ability's annotations ask for: GET for ``readonly``, DELETE for
    ``destructive`` and ``idempotent``, POST otherwise (WordPress's
    ``validate_request_method``)."""
    return ability.run_method


def _as_user(user: User) -> Token[User | None] | None:
    """Make ``user`` the one :func:`~svcrest.current_user` answers, unless it is already
    (PERF: internal dispatch and an HTTP request have set it): the token to reset, or
    None."""
    current = dispatch_user()
    if current is user:
        return None
    if current is None:
        ctx = current_context()
        if ctx is not None and ctx.user is user:
            return None
    return enter_dispatch_user(user)


_METHOD_MESSAGES = {
    "GET": "Read-only abilities require GET method.",
    "DELETE": "Abilities that perform destructive actions require DELETE method.",
    "POST": "Abilities that perform updates require POST method.",
}


class AbilitiesController:
    """The five routes over one registry; ``rest_url`` builds the links."""

    def __init__(self, registry: AbilityRegistry, rest_url: Callable[[str], str]) -> None:
        self.registry = registry
        self.rest_url = rest_url
        self._by_name = registry.by_name
        #: The run handler's arguments as registered (see :meth:`is_own_run`).
        self._run_args: dict[str, Any] = {}

    # -- reading ----------------------------------------------------------------------------

    @staticmethod
    def can_read(request: Request) -> bool:
        """Listing and showing need ``read`` (WordPress: ``current_user_can( 'read' )``)."""
        return request.user.can("read")

    def _shown(self, name: str) -> Ability | None:
        ability = self._by_name.get(name)
        return ability if ability is not None and ability.show_in_rest else None

    def ability_data(self, ability: Ability, request: Request) -> dict[str, Any]:
        """An ability as the REST API shows it, with ``_links`` (self, collection,
        ``wp:action-run``) unless ``_fields`` leaves them out."""
        data = _in_context(
            {
                "name": ability.name,
                "label": ability.label,
                "description": ability.description,
                "category": ability.category,
                "input_schema": ability.input_schema,
                "output_schema": ability.output_schema,
                "meta": ability.meta,
            },
            request,
            _ABILITY_EMBED,
        )
        base = f"{NAMESPACE}/abilities"
        data["_links"] = {
            "self": [{"href": self.rest_url(f"{base}/{ability.name}")}],
            "collection": [{"href": self.rest_url(base)}],
            "wp:action-run": [{"href": self.rest_url(f"{base}/{ability.name}/run")}],
        }
        return data

    def category_data(self, category: AbilityCategory, request: Request) -> dict[str, Any]:
        """A category as the REST API shows it, with ``_links`` (self, collection,
        abilities)."""
        data = _in_context(
            {
                "slug": category.slug,
                "label": category.label,
                "description": category.description,
                "meta": category.meta,
            },
            request,
            _CATEGORY_EMBED,
        )
        data["_links"] = {
            "self": [{"href": self.rest_url(f"{NAMESPACE}/categories/{category.slug}")}],
            "collection": [{"href": self.rest_url(f"{NAMESPACE}/categories")}],
            "abilities": [
                {"href": self.rest_url(f"{NAMESPACE}/abilities?category={category.slug}")}
            ],
        }
        return data

    def get_abilities(self, request: Request) -> Response:
        """``GET /abilities``: the abilities shown in REST, of ``category`` when given."""
        category = request.get_param("category")
        shown = [
            ability
            for ability in self.registry.get_all()
            if ability.show_in_rest and (not category or ability.category == category)
        ]
        page, per_page = request.get_param("page"), request.get_param("per_page")
        window = shown[(page - 1) * per_page : page * per_page]
        items = [self.ability_data(ability, request) for ability in window]
        return paginate(request, items, total=len(shown), page=page, per_page=per_page)

    def get_ability(self, request: Request) -> dict[str, Any] | RestError:
        """``GET /abilities/<name>``: 404 ``rest_ability_not_found`` for an unknown one or one
        not shown in REST."""
        ability = self._shown(request.url_params["name"])
        if ability is None:
            return _not_found()
        return self.ability_data(ability, request)

    def get_categories(self, request: Request) -> Response:
        """``GET /categories``."""
        categories = self.registry.get_categories()
        page, per_page = request.get_param("page"), request.get_param("per_page")
        window = categories[(page - 1) * per_page : page * per_page]
        items = [self.category_data(category, request) for category in window]
        return paginate(request, items, total=len(categories), page=page, per_page=per_page)

    def get_category(self, request: Request) -> dict[str, Any] | RestError:
        """``GET /categories/<slug>``: 404 ``rest_ability_category_not_found``."""
        category = self.registry.get_category(request.url_params["slug"])
        if category is None:
            return RestError(
                "rest_ability_category_not_found", "Ability category not found.", {"status": 404}
            )
        return self.category_data(category, request)

    # -- running ----------------------------------------------------------------------------

    @staticmethod
    def run_input(request: Request) -> Any:
        """The run's input: ``input`` of the query for GET and DELETE, of the JSON body
        otherwise (WordPress's ``get_input_from_request``)."""
        if request.method in _QUERY_METHODS:
            return request.query_param("input")
        json = request.json_params
        return json.get("input") if isinstance(json, dict) else None

    def coerce_input(self, value: Any, request: Request, param: str) -> Any:
        """The ``input`` argument's sanitizer: an input the ability's schema accepts is coerced
        to the schema's types (``"5"`` from a query string becomes 5); any other is left for
        the ability's own check to refuse."""
        if value is None:
            return value
        ability = self._by_name.get(request.url_params.get("name", ""))
        if ability is None or not ability.input_schema:
            return value
        if ability.validate_input(value) is not None:
            return value
        coerced = sanitize_value(value, ability.input_schema, "input")
        return value if isinstance(coerced, RestError) else coerced

    def can_run(self, request: Request) -> Any:
        """The run's permission check (WordPress's ``check_ability_permissions``): the
        ability shown in REST, the method its annotations ask for, a valid input, then the
        ability's permission callback, run as the request's user. True or a RestError; a
        coroutine of it for an async permission callback (PERF: none for a sync one)."""
        # PERF: _shown, run_input and an empty input's checked_input written out (three
        # Python calls).
        ability = self._by_name.get(request.url_params["name"])
        if ability is None or not ability.show_in_rest:
            return _not_found()
        method = request.method
        if method == ability.plain_method and (
            not request.may_have_query or request.query_param("input") is None
        ):
            # PERF: a plain run (public, no input schema) without input, asked with its own
            # method: what follows allows it and hands nothing over (with the run's
            # ``_ALLOWED_RUN`` read only when needed: an MCP tools/call 144,303 → 143,095
            # instructions, bench/mcp_call.py).
            return True
        expected = ability.run_method
        if method != expected and (method != "HEAD" or expected != "GET"):
            return RestError(
                "rest_ability_invalid_method", _METHOD_MESSAGES[expected], {"status": 405}
            )
        input = (
            request.query_param("input") if method in _QUERY_METHODS else self.run_input(request)
        )
        if input is not None or ability.input_schema:
            input = ability.checked_input(input)
        if type(input) is RestError:
            return _status(input, 400)
        user = request.user
        if ability.is_public:
            verdict: Any = True
        else:
            token = _as_user(user)
            try:
                verdict = ability.permission_verdict(input)
            finally:
                if token is not None:
                    leave_dispatch_user(token)
        if verdict is True:  # PERF: :meth:`_verdict` of the usual answer written out
            if input is not None or not ability.plain_run:
                _ALLOWED_RUN.set([request, ability, input, user])
            return True
        if type(verdict) not in NOT_AWAITABLE and not isinstance(verdict, RestError):
            return self._can_run_later(verdict, request, ability, input)
        return self._verdict(verdict, request, ability, input)

    async def _can_run_later(
        self, pending: Any, request: Request, ability: Ability, input: Any
    ) -> bool | RestError:
        """:meth:`can_run` once an async permission callback answered (run as the user)."""
        token = enter_dispatch_user(request.user)
        try:
            verdict = await pending
        finally:
            leave_dispatch_user(token)
        return self._verdict(verdict, request, ability, input)

    @staticmethod
    def _verdict(verdict: Any, request: Request, ability: Ability, input: Any) -> bool | RestError:
        user = request.user
        if verdict is True:
            _ALLOWED_RUN.set([request, ability, input, user])
            return True
        return _denial(verdict, user)

    def run(self, request: Request) -> Any:
        """``GET|POST|DELETE /abilities/<name>/run``: the ability's result as the body; its
        errors with their status (500 when they name none). A coroutine of the answer while
        an async callback runs (PERF: none for a sync one)."""
        ability = self._by_name.get(request.url_params["name"])
        if ability is None or not ability.show_in_rest:
            return _not_found()
        # PERF: a request without a query parameter read without a call (with can_run's:
        # tools/call 138,761 → 138,035 instructions).
        method = request.method
        input = (
            (request.query_param("input") if request.may_have_query else None)
            if method in _QUERY_METHODS
            else self.run_input(request)
        )
        user = request.user
        # PERF: internal dispatch has set the user (the test of _as_user, a call nearer).
        token = None if dispatch_user() is user else _as_user(user)
        try:
            if input is None and ability.plain_run:
                # Nothing to hand over: what ``execute`` checks passes without a look.
                result = ability.run_permitted(None)
            elif (
                (allowed := _ALLOWED_RUN.get()) is not None
                and allowed[0] is request
                and allowed[1] is ability
                and (allowed[2] is input or allowed[2] is ability.normalize_input(input))
                and allowed[3] is user
            ):
                allowed[0] = None  # used up
                input = allowed[2]
                # The input is checked again when it may have changed in place (a hook).
                invalid = ability.validate_input(input) if type(input) in _MUTABLE else None
                result = invalid or ability.run_permitted(input)
            else:
                result = ability.execute_async(input)
        finally:
            if token is not None:
                leave_dispatch_user(token)
        if type(result) is dict:  # PERF: the usual result (see _answer), a call less
            return result
        if type(result) is Pending:
            return _answer_later(result, user)
        return _answer(result)

    def is_own_run(self, definition: Mapping[str, Any]) -> bool:
        """Whether ``definition`` is this controller's run handler with the arguments it was
        registered with (``name`` from the URL, ``input`` defaulting to null): a run of an
        ability without input schema asked with its GET or DELETE run method and no
        ``input`` then passes the argument step without a look, and its permission check
        and run answer :meth:`direct_answer`."""
        args = definition.get("args")
        return (
            definition.get("callback") == self.run
            and definition.get("permission_callback") == self.can_run
            and isinstance(args, Mapping)
            and len(args) == len(self._run_args)
            and all(args.get(name) == arg for name, arg in self._run_args.items())
        )

    @staticmethod
    def direct_answer(ability: Ability, user: User) -> Any:
        """What :meth:`can_run` then :meth:`run` answer together for a request by ``user``
        (the current user) of an ability without input schema, with its GET or DELETE run
        method and no ``input``: the ability's result, the run route's answer of it, the
        RestError refusing it (its permission callback asked once, without input), or a
        coroutine of one of those for an async callback."""
        if not ability.is_public:
            verdict = ability.permission_verdict(None)
            if verdict is not True:
                if type(verdict) not in NOT_AWAITABLE and not isinstance(verdict, RestError):
                    return _direct_later(verdict, ability, user)
                return _denial(verdict, user)
        result = ability.run_permitted(None)
        if type(result) is dict:
            return result
        if type(result) is Pending:
            return _answer_later(result, user)
        return _answer(result)

    # -- registration -----------------------------------------------------------------------

    def register(self, server: Any) -> None:
        """Register the routes on ``server`` (the run route first: its pattern is the longer
        one, and the first registered match wins)."""
        base = "/" + NAMESPACE
        name_arg = {
            "name": {
                "description": "Unique identifier for the ability.",
                "type": "string",
                "pattern": f"^{_NAME_PATTERN}$",
            }
        }
        input_arg = {
            "description": "Input parameters for the ability execution.",
            "type": _ANY_TYPE,
            "default": None,
            "sanitize_callback": self.coerce_input,
        }
        self._run_args = {**name_arg, "input": input_arg}
        server.register_route(
            NAMESPACE,
            f"{base}/abilities/(?P<name>{_NAME_PATTERN}?)/run",
            {
                "args": name_arg,
                0: {
                    "methods": ["GET", "POST", "DELETE"],
                    "callback": self.run,
                    "permission_callback": self.can_run,
                    # The answer is the ability's result itself, of its output schema.
                    "response_schema": _run_result_schema,
                    "args": {"input": input_arg},
                },
                "schema": _run_schema,
            },
        )
        read = self.can_read
        server.register_route(
            NAMESPACE,
            f"{base}/abilities",
            {
                0: {
                    "methods": "GET",
                    "callback": self.get_abilities,
                    "permission_callback": read,
                    "args": {
                        **_paging_args(),
                        "category": {
                            "description": "Limit results to abilities in specific ability"
                            " category.",
                            "type": "string",
                            "sanitize_callback": _sanitize_key,
                        },
                    },
                },
                "schema": _ability_schema,
            },
        )
        server.register_route(
            NAMESPACE,
            f"{base}/abilities/(?P<name>{_NAME_PATTERN})",
            {
                "args": name_arg,
                0: {
                    "methods": "GET",
                    "callback": self.get_ability,
                    "permission_callback": read,
                    "args": {"context": _context_arg()},
                },
                "schema": _ability_schema,
            },
        )
        server.register_route(
            NAMESPACE,
            f"{base}/categories",
            {
                0: {
                    "methods": "GET",
                    "callback": self.get_categories,
                    "permission_callback": read,
                    "args": _paging_args(),
                },
                "schema": _category_schema,
            },
        )
        server.register_route(
            NAMESPACE,
            f"{base}/categories/(?P<slug>{_SLUG_PATTERN})",
            {
                "args": {
                    "slug": {
                        "description": "Unique identifier for the ability category.",
                        "type": "string",
                        "pattern": f"^{_SLUG_PATTERN}$",
                    }
                },
                0: {
                    "methods": "GET",
                    "callback": self.get_category,
                    "permission_callback": read,
                    "args": {"context": _context_arg()},
                },
                "schema": _category_schema,
            },
        )


def register_ability_routes(
    server: Any, registry: AbilityRegistry, rest_url: Callable[[str], str]
) -> None:
    """Register the ``svc-abilities/v1`` routes of ``registry`` on ``server``."""
    AbilitiesController(registry, rest_url).register(server)
