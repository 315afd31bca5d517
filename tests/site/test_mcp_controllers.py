"""Controllers opting into MCP as a whole (``RestController.mcp``, ``StoreCollection(...,
mcp=True)``, ``app.register_controller(controller, mcp=True)``): every operation a tool,
listed and run through the official MCP Python SDK's client (in process, over ASGI) by
anonymous, a subscriber, an editor and a scoped password, each exactly as they may."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any, ClassVar

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import svcrest
from svcrest import App, Request, RestController, StoreCollection

NOTE_SCHEMA = {
    "title": "mcpnote",
    "type": "object",
    "properties": {
        "title": {"type": "string", "description": "The note's title.", "required": True},
        "done": {"type": "boolean", "default": False},
    },
}
LIST, CREATE = "get_mcpnotes_v1_notes", "post_mcpnotes_v1_notes"
GET, UPDATE, DELETE = (
    "get_mcpnotes_v1_notes_id",
    "put_mcpnotes_v1_notes_id",
    "delete_mcpnotes_v1_notes_id",
)
SHELF = "get_shelf_v1_books"


class Shelf(RestController):
    """A read-only controller written by hand: public, opted in by ``register_controller``."""

    namespace = "shelf/v1"
    rest_base = "books"
    schema: ClassVar[dict[str, Any]] = {
        "title": "book",
        "type": "object",
        "properties": {"title": {"type": "string"}},
    }

    def get_items_permissions_check(self, request: Request) -> bool:
        return True

    def get_items(self, request: Request) -> Any:
        return [{"title": "Dune"}]


class Hidden(Shelf):
    """The same controller, not opted in: no tool."""

    namespace = "hidden/v1"


class Marked(Shelf):
    """Opted in by its class attribute."""

    namespace = "marked/v1"
    mcp = True


def _basic(login: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode()}


def make_site() -> tuple[App, dict[str, dict[str, str]]]:
    app = App(mcp=True)
    notes = StoreCollection("mcpnotes/v1", "notes", NOTE_SCHEMA, read="read", mcp=True)
    app.register_controller(notes)
    notes.table.insert({"title": "first"})
    app.register_controller(Shelf(), mcp=True)
    app.register_controller(Hidden())
    app.register_controller(Marked())
    callers: dict[str, dict[str, str]] = {"anonymous": {}}
    for login, role in (("sub1", "subscriber"), ("editor1", "editor")):
        user = app.users.create(login, "a long password", roles=[role])
        password, _ = app.users.create_application_password(user.id, "agent")
        callers[login] = _basic(login, password)
    editor = app.users.get_by_login("editor1")
    assert editor is not None
    password, _ = app.users.create_application_password(
        editor.id, "reader", scope=["mcpnotes/v1"], read_only=True
    )
    callers["scoped"] = _basic("editor1", password)
    return app, callers


CALLS: list[tuple[str, dict[str, Any]]] = [
    (CREATE, {"title": "second"}),
    (LIST, {}),
    (GET, {"id": 1}),
    (UPDATE, {"id": 1, "done": True}),
    (DELETE, {"id": 1, "force": True}),
    (SHELF, {}),
]


async def _session(
    app: App, headers: dict[str, str], calls: list[tuple[str, dict[str, Any]]] = CALLS
) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    transport = httpx2.ASGITransport(app=app)
    async with (
        httpx2.AsyncClient(transport=transport, headers=headers, timeout=30) as http,
        Client(streamable_http_client(app.home + "/mcp", http_client=http)) as client,
    ):
        tools = (await client.list_tools()).tools
        seen["tools"] = {tool.name: tool for tool in tools}
        seen["names"] = [tool.name for tool in tools]
        results: dict[str, Any] = {}
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            text = result.content[0].text  # type: ignore[union-attr]
            results[name] = (
                json.loads(text)["code"] if result.is_error else result.structured_content
            )
        seen["results"] = results
    return seen


def _run(who: str) -> dict[str, Any]:
    app, callers = make_site()
    return asyncio.run(_session(app, callers[who]))


NOTE = {"id": 1, "title": "first", "done": False}
CREATED = {"id": 2, "title": "second", "done": False}
DONE = {**NOTE, "done": True}
NOTES = "http://127.0.0.1:8000/svc-json/mcpnotes/v1/notes"


def listed(note: dict[str, Any]) -> dict[str, Any]:
    """A note as the collection lists it, with its links."""
    links = {"self": [{"href": f"{NOTES}/{note['id']}"}], "collection": [{"href": NOTES}]}
    return {**note, "_links": links}


CANNOT = "rest_forbidden"
SCOPE = "rest_application_password_scope"


@pytest.mark.parametrize(
    ("who", "names", "results"),
    [
        (
            "anonymous",
            [SHELF, "get_marked_v1_books"],
            {
                CREATE: "rest_cannot_create",
                LIST: CANNOT,
                GET: CANNOT,
                UPDATE: "rest_cannot_edit",
                DELETE: "rest_cannot_delete",
                SHELF: {"result": [{"title": "Dune"}]},
            },
        ),
        (
            "sub1",
            [LIST, GET, SHELF, "get_marked_v1_books"],
            {
                CREATE: "rest_cannot_create",
                LIST: {"result": [listed(NOTE)]},
                GET: NOTE,
                UPDATE: "rest_cannot_edit",
                DELETE: "rest_cannot_delete",
                SHELF: {"result": [{"title": "Dune"}]},
            },
        ),
        (
            "editor1",
            [LIST, CREATE, GET, UPDATE, DELETE, SHELF, "get_marked_v1_books"],
            {
                CREATE: CREATED,
                LIST: {"result": [listed(NOTE), listed(CREATED)]},
                GET: NOTE,
                UPDATE: DONE,
                DELETE: {"deleted": True, "previous": DONE},
                SHELF: {"result": [{"title": "Dune"}]},
            },
        ),
        (
            "scoped",
            [LIST, GET],
            {
                CREATE: SCOPE,
                LIST: {"result": [listed(NOTE)]},
                GET: NOTE,
                UPDATE: SCOPE,
                DELETE: SCOPE,
                SHELF: SCOPE,
            },
        ),
    ],
)
def test_each_caller_lists_and_runs_exactly_the_operations_it_may(
    who: str, names: list[str], results: dict[str, Any]
) -> None:
    seen = _run(who)
    assert seen["names"] == names
    assert seen["results"] == results


def test_the_tools_take_their_schemas_from_the_args_and_their_hints_from_the_methods() -> None:
    tools = _run("editor1")["tools"]
    hints = {
        name: tools[name].annotations.model_dump(exclude_none=True)
        for name in (LIST, CREATE, GET, UPDATE, DELETE)
    }
    assert hints == {
        LIST: {"read_only_hint": True, "destructive_hint": False, "idempotent_hint": True},
        CREATE: {"read_only_hint": False, "destructive_hint": False, "idempotent_hint": False},
        GET: {"read_only_hint": True, "destructive_hint": False, "idempotent_hint": True},
        UPDATE: {"read_only_hint": False, "destructive_hint": True, "idempotent_hint": True},
        DELETE: {"read_only_hint": False, "destructive_hint": True, "idempotent_hint": True},
    }
    create = tools[CREATE].input_schema
    assert create["required"] == ["title"]
    assert create["properties"]["title"] == {"type": "string", "description": "The note's title."}
    update = tools[UPDATE].input_schema
    assert update["required"] == ["id"]
    assert set(update["properties"]) == {"id", "title", "done"}
    assert set(tools[GET].input_schema["properties"]) == {"id", "context"}
    assert set(tools[DELETE].input_schema["properties"]) == {"id", "force"}
    listing = tools[LIST].input_schema["properties"]
    assert {"page", "per_page", "search", "context"} <= set(listing)
    # An item is the schema's object; a page comes back as {"result": [...]}.
    assert tools[GET].output_schema["properties"]["title"]["type"] == "string"
    assert tools[LIST].output_schema["properties"]["result"]["type"] == "array"


def test_without_mcp_a_controller_has_no_tools() -> None:
    app, callers = make_site()
    names = asyncio.run(_session(app, callers["editor1"]))["names"]
    assert not [name for name in names if "hidden" in name]
    assert not any(name.startswith(("post_mcpnotes_v1_notes_", "patch_")) for name in names)


def test_register_controller_mcp_false_turns_a_marked_class_off() -> None:
    app = App(mcp=True)
    marked = app.register_controller(Marked(), mcp=False)
    assert marked.mcp is False
    names = asyncio.run(_session(app, {}, calls=[]))["names"]
    assert names == []
    response = app.rest_do_request("/marked/v1/books")
    assert response.data == [{"title": "Dune"}]  # still a REST route
    assert svcrest.RestController.mcp is False
