"""Starlette: one route with an ``int`` path parameter, answered with ``JSONResponse``."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


async def get_item(request: Request) -> JSONResponse:
    """Return the item named by the path."""
    return JSONResponse({"id": request.path_params["id"], "title": "item"})


app = Starlette(routes=[Route("/svc-json/demo/v1/items/{id:int}", get_item)])
