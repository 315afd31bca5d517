"""FastAPI: one path operation with a typed ``int`` parameter returning a dict.

``response_model=None``: FastAPI builds no response model from the return annotation (its
fastest ordinary form, as with no annotation at all).
"""

from __future__ import annotations

from fastapi import FastAPI

app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)


@app.get("/svc-json/demo/v1/items/{id}", response_model=None)
async def get_item(id: int) -> dict[str, object]:
    """Return the item named by the path."""
    return {"id": id, "title": "item"}
