"""Starlette with ``BENCH_ROUTES`` routes of the scaling table (see ``routetable``)."""

from __future__ import annotations

from routetable import routes, routes_from_env
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


async def get_item(request: Request) -> JSONResponse:
    """Return the item named by the path."""
    return JSONResponse({"id": request.path_params["id"], "title": "item"})


async def other(request: Request) -> JSONResponse:
    """The answer of every route shape but the first."""
    return JSONResponse({"ok": True})


app = Starlette(
    routes=[
        Route(route.template, get_item if route.shape == 0 else other)
        for route in routes(routes_from_env())
    ]
)
