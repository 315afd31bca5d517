"""The application password REST routes, as WordPress 5.6's controller.

``svc/v2/users/(?P<user_id>\\d+|me)/application-passwords``: GET lists, POST creates (``name``;
201 with the password, shown this once), DELETE revokes all (``{"deleted": true, "count":
n}``). ``…/(?P<uuid>[\\w-]+)``: GET one, DELETE one (``{"deleted": true, "previous": item}``).
A user manages their own; ``administrator`` manages anyone's. Error codes are WordPress
5.6's: ``rest_cannot_manage_application_passwords`` (401 anonymous, 403 logged in),
``rest_not_logged_in`` (``me`` when anonymous, 401), ``rest_user_invalid_id`` (404),
``rest_application_password_not_found`` (404), ``application_passwords_disabled`` (501:
plain http to a host that is not loopback); and, past the bound of passwords one user may
hold (50; the filter ``svc_max_application_passwords``), ``application_password_limit_reached``
(409).

A password may be created with a ``scope`` (a list of REST namespaces) and ``read_only``
(GET, HEAD and OPTIONS only): both are part of the item, fixed for the password's life (there
is no update route; WordPress's item route updates only the name). A request it authenticates
outside them answers 403 ``rest_application_password_scope`` (:mod:`svcrest.http.scope`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from svcrest.auth.app_passwords import application_passwords_available
from svcrest.auth.users import ApplicationPassword, ApplicationPasswordLimitError, UserStore
from svcrest.http.context import current_context
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.http.scope import MAX_SCOPE_NAMESPACES
from svcrest.http.user import User

__all__ = ["NAMESPACE", "ApplicationPasswordsController", "format_item"]

NAMESPACE = "svc/v2"
COLLECTION = "/users/(?P<user_id>(?:[\\d]+|me))/application-passwords"
ITEM = COLLECTION + "/(?P<uuid>[\\w\\-]+)"


def _gmdate(timestamp: int | None) -> str | None:
    if timestamp is None:
        return None
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")


def format_item(item: ApplicationPassword, password: str | None = None) -> dict[str, Any]:
    """An item as the REST API shows it (WordPress's ``prepare_item_for_response``); the
    password, chunked in groups of four, only when just created."""
    data: dict[str, Any] = {
        "uuid": item["uuid"],
        "app_id": "",
        "name": item["name"],
        "created": _gmdate(item["created"]),
        "last_used": _gmdate(item["last_used"]),
        "last_ip": item["last_ip"] or None,
        "scope": item.get("scope"),
        "read_only": bool(item.get("read_only", False)),
    }
    if password is not None:
        data["password"] = " ".join(password[i : i + 4] for i in range(0, len(password), 4))
    return data


def _item_schema() -> dict[str, Any]:
    return {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "title": "application-password",
        "type": "object",
        "properties": {
            "uuid": {"type": "string", "format": "uuid", "readonly": True},
            "app_id": {"type": "string", "readonly": True},
            "name": {"type": "string", "required": True},
            "password": {"type": "string", "readonly": True},
            "created": {"type": "string", "format": "date-time", "readonly": True},
            "last_used": {"type": ["string", "null"], "format": "date-time", "readonly": True},
            "last_ip": {"type": ["string", "null"], "format": "ip", "readonly": True},
            "scope": {
                "type": ["array", "null"],
                "items": {"type": "string"},
                "description": "The REST namespaces the password may be used for (null: every"
                " one); fixed at creation.",
            },
            "read_only": {
                "type": "boolean",
                "description": "Whether the password may only read (GET, HEAD, OPTIONS); fixed"
                " at creation.",
            },
        },
    }


def _list_schema() -> dict[str, Any]:
    return {"type": "array", "items": _item_schema()}


def _deleted_all_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"deleted": {"type": "boolean"}, "count": {"type": "integer"}},
    }


def _deleted_one_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"deleted": {"type": "boolean"}, "previous": _item_schema()},
    }


class ApplicationPasswordsController:
    """The routes over ``users`` (called on use); ``rest_url`` builds the ``self`` links;
    ``home`` gives the site's home address (where application passwords work: see
    ``application_passwords_available``)."""

    def __init__(
        self,
        users: Callable[[], UserStore],
        rest_url: Callable[[str], str],
        home: Callable[[], str] | None = None,
    ) -> None:
        self._users = users
        self._rest_url = rest_url
        self._home = home

    def register(self, server: Any) -> None:
        """Register both routes on ``server`` (on ``rest_api_init``)."""
        allowed = self.allowed
        server.register_route(
            NAMESPACE,
            "/" + NAMESPACE + COLLECTION,
            {
                0: {
                    "methods": "GET",
                    "callback": self.get_items,
                    "permission_callback": allowed,
                    # What the OpenAPI document says each method answers.
                    "response_schema": _list_schema,
                },
                1: {
                    "methods": "POST",
                    "callback": self.create_item,
                    "permission_callback": allowed,
                    "args": {
                        "name": {
                            "type": "string",
                            "required": True,
                            "minLength": 1,
                            "pattern": ".*\\S.*",
                            "description": "The name of the application password.",
                        },
                        "scope": {
                            "type": "array",
                            "items": {"type": "string", "minLength": 1, "maxLength": 100},
                            "minItems": 1,
                            "maxItems": MAX_SCOPE_NAMESPACES,
                            "description": "The REST namespaces the password may be used for"
                            " (every one when left out).",
                        },
                        "read_only": {
                            "type": "boolean",
                            "default": False,
                            "description": "Whether the password may only read (GET, HEAD,"
                            " OPTIONS).",
                        },
                    },
                },
                2: {
                    "methods": "DELETE",
                    "callback": self.delete_items,
                    "permission_callback": allowed,
                    "response_schema": _deleted_all_schema,
                },
                "schema": _item_schema,
            },
        )
        server.register_route(
            NAMESPACE,
            "/" + NAMESPACE + ITEM,
            {
                0: {"methods": "GET", "callback": self.get_item, "permission_callback": allowed},
                1: {
                    "methods": "DELETE",
                    "callback": self.delete_item,
                    "permission_callback": allowed,
                    "response_schema": _deleted_one_schema,
                },
                "schema": _item_schema,
            },
        )

    # -- the requested user and permissions --------------------------------------------------

    def _target(self, request: Request) -> User | RestError:
        """WordPress's ``get_user``: the user the route names, or the error to answer."""
        ctx = current_context()
        home = self._home() if self._home is not None else ""
        if ctx is not None and ctx.is_rest and not application_passwords_available(ctx, home):
            return RestError(
                "application_passwords_disabled",
                "Application passwords are not available.",
                {"status": 501},
            )
        invalid = RestError("rest_user_invalid_id", "Invalid user ID.", {"status": 404})
        raw = request.get_param("user_id")
        current = request.user
        if raw == "me":
            if not current.is_logged_in:
                return RestError(
                    "rest_not_logged_in", "You are not currently logged in.", {"status": 401}
                )
            user_id = current.id
        else:
            try:
                user_id = int(str(raw))
            except ValueError:
                return invalid
            if user_id <= 0:
                return invalid
        # PERF: the current user was read for this request already (the permission check of
        # every method of the route, for Allow, and the callback each ask for the target).
        found = current if current.is_logged_in and current.id == user_id else None
        if found is None:
            found = self._users().get(user_id)
        if found is None or not found.is_logged_in:
            return invalid
        return found

    def allowed(self, request: Request) -> bool | RestError:
        """The permission check of every method (WordPress 5.6's ``do_permissions_check``)."""
        target = self._target(request)
        if isinstance(target, RestError):
            return target
        current = request.user
        if current.is_logged_in and (current.id == target.id or "administrator" in current.roles):
            return True
        return RestError(
            "rest_cannot_manage_application_passwords",
            "Sorry, you are not allowed to manage application passwords for this user.",
            {"status": 403 if current.is_logged_in else 401},
        )

    def _response(
        self, user: User, item: ApplicationPassword, password: str | None = None
    ) -> Response:
        response = Response(format_item(item, password))
        response.add_link("self", self._self_url(user, item))
        return response

    def _self_url(self, user: User, item: ApplicationPassword) -> str:
        return self._rest_url(f"{NAMESPACE}/users/{user.id}/application-passwords/{item['uuid']}")

    def _found(self, request: Request) -> tuple[User, ApplicationPassword] | RestError:
        target = self._target(request)
        if isinstance(target, RestError):
            return target
        item = self._users().get_application_password(target.id, str(request.get_param("uuid")))
        if item is None:
            return RestError(
                "rest_application_password_not_found",
                "Application password not found.",
                {"status": 404},
            )
        return target, item

    # -- callbacks ------------------------------------------------------------------------------

    def get_items(self, request: Request) -> Any:
        target = self._target(request)
        if isinstance(target, RestError):
            return target
        data = []
        for item in self._users().list_application_passwords(target.id):
            entry = format_item(item)
            entry["_links"] = {"self": [{"href": self._self_url(target, item)}]}
            data.append(entry)
        return Response(data)

    def create_item(self, request: Request) -> Any:
        target = self._target(request)
        if isinstance(target, RestError):
            return target
        try:
            password, item = self._users().create_application_password(
                target.id,
                str(request.get_param("name")),
                scope=request.get_param("scope"),
                read_only=request.get_param("read_only") is True,
            )
        except ApplicationPasswordLimitError as exc:
            return RestError("application_password_limit_reached", str(exc), {"status": 409})
        except ValueError as exc:
            return RestError(
                "application_password_empty_name"
                if "required" in str(exc)
                else "rest_invalid_param",
                str(exc),
                {"status": 400},
            )
        response = self._response(target, item, password)
        response.set_status(201)
        response.header("Location", self._self_url(target, item))
        return response

    def delete_items(self, request: Request) -> Any:
        target = self._target(request)
        if isinstance(target, RestError):
            return target
        count = self._users().delete_all_application_passwords(target.id)
        return Response({"deleted": True, "count": count})

    def get_item(self, request: Request) -> Any:
        found = self._found(request)
        if isinstance(found, RestError):
            return found
        return self._response(*found)

    def delete_item(self, request: Request) -> Any:
        found = self._found(request)
        if isinstance(found, RestError):
            return found
        target, item = found
        previous = format_item(item)
        if not self._users().delete_application_password(target.id, item["uuid"]):
            return RestError(
                "rest_application_password_not_found",
                "Application password not found.",
                {"status": 404},
            )
        return Response({"deleted": True, "previous": previous})
