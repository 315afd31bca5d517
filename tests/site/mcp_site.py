"""A plugin for the MCP tests (``svcrest serve --mcp --plugin tests.site.mcp_site:register``):
abilities and ``"mcp": True`` routes open to different users, and a bearer scheme whose
token ``subscriber-token`` names the user ``sub1``.

What each caller may run:

- anonymous: ``site-info`` (public), ``get_mcpdemo_v1_echo`` (public route);
- a subscriber (``read``): those, and ``site-whoami``;
- an editor (``edit_posts``): those, ``math-double`` and ``post_mcpdemo_v1_items``;
- an administrator (``manage_options``): everything, ``site-purge`` too.
"""

from __future__ import annotations

from typing import Any

import svcrest
from svcrest import App, Request, RestError
from svcrest.rest.auth_schemes import AuthScheme

SUBSCRIBER = "sub1"
SUBSCRIBER_TOKEN = "subscriber-token"


def _can(capability: str) -> Any:
    def check() -> bool:
        return svcrest.current_user().can(capability)

    return check


def _bearer(app: App) -> AuthScheme:
    def token(request: Request) -> str | None:
        header = request.get_header("Authorization") or ""
        return header[7:] if header.startswith("Bearer ") else None

    def user_of(sent: str) -> Any:
        return app.users.get_by_login(SUBSCRIBER) if sent == SUBSCRIBER_TOKEN else None

    def bearer_user(user: object, request: Request) -> object:
        sent = token(request)
        found = user_of(sent) if sent is not None else None
        return found if found is not None else user

    def bad_token(result: object, request: Request) -> object:
        sent = token(request)
        if result is None and sent is not None and user_of(sent) is None:
            return RestError("bad_token", "Unknown token.", {"status": 401})
        return result

    return AuthScheme(
        name="bearer",
        headers=("Authorization",),
        callbacks=(
            ("determine_current_user", bearer_user, 30),
            ("rest_authentication_errors", bad_token, 80),
        ),
    )


def plain_ability(
    app: App, name: str, label: str = "Plain", description: str = "For a test.", **extra: Any
) -> None:
    """Register the ability ``name`` in the ``site`` category: public and read-only, its
    run answering ``{"name": "x"}``, unless ``extra`` sets those or adds settings."""
    settings: dict[str, Any] = {
        "label": label,
        "description": description,
        "category": "site",
        "execute_callback": lambda: {"name": "x"},
        "permission_callback": svcrest.public,
        "annotations": {"readonly": True},
        **extra,
    }
    app.register_ability(name, **settings)


def register(app: App) -> None:
    app.auth_schemes.add(_bearer(app))
    app.register_ability_category("site", label="Site", description="About this site.")
    app.register_ability(
        "site/info",
        label="Site information",
        description="The site's name.",
        category="site",
        output_schema={
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        },
        execute_callback=lambda: {"name": app.name},
        permission_callback=svcrest.public,
        annotations={"readonly": True, "destructive": False, "idempotent": True},
    )
    app.register_ability(
        "site/whoami",
        label="Who am I",
        description="The login of the caller.",
        category="site",
        output_schema={"type": "string"},
        execute_callback=lambda: svcrest.current_user().login,
        permission_callback=_can("read"),
        annotations={"readonly": True},
    )
    app.register_ability(
        "math/double",
        label="Double",
        description="Twice the number given.",
        category="site",
        input_schema={"type": "integer", "minimum": 0},
        output_schema={"type": "integer"},
        execute_callback=lambda number: number * 2,
        permission_callback=_can("edit_posts"),
    )
    app.register_ability(
        "site/purge",
        label="Purge",
        description="Forget what the site cached.",
        category="site",
        output_schema={"type": "boolean"},
        execute_callback=lambda: True,
        permission_callback=_can("manage_options"),
        annotations={"destructive": True, "idempotent": True},
    )

    def echo(request: Request) -> dict[str, Any]:
        """Say the word back."""
        return {"word": request.get_param("word")}

    def item_schema() -> dict[str, Any]:
        return {
            "$schema": "http://json-schema.org/draft-04/schema#",
            "title": "mcpdemo-item",
            "type": "object",
            "properties": {"word": {"type": "string"}, "length": {"type": "integer"}},
        }

    app.register_rest_route(
        "mcpdemo/v1",
        "/echo",
        {
            "methods": "GET",
            "callback": echo,
            "permission_callback": svcrest.public,
            "args": {"word": {"type": "string", "required": True, "description": "A word."}},
            "mcp": True,
        },
    )

    def create(request: Request) -> dict[str, Any]:
        """Measure a word."""
        word = str(request.get_param("word"))
        return {"word": word, "length": len(word)}

    app.register_rest_route(
        "mcpdemo/v1",
        "/items",
        {
            0: {
                "methods": "POST",
                "callback": create,
                "permission_callback": lambda request: request.user.can("edit_posts"),
                "args": {"word": {"type": "string", "required": True}},
                "mcp": True,
            },
            "schema": item_schema,
        },
    )
    # Not a tool: no "mcp" marker.
    app.register_rest_route(
        "mcpdemo/v1",
        "/hidden",
        {"methods": "GET", "callback": echo, "permission_callback": svcrest.public},
    )
