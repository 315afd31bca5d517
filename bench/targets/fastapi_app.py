"""FastAPI: one path operation with a typed ``int`` parameter returning a dict.

No return annotation, so FastAPI builds no response model (its fastest ordinary form).
"""

from __future__ import annotations

from fastapi import FastAPI

app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)


@app.get("/svc-json/demo/v1/items/{id}")
async def get_item(id: int):  # no return annotation: no response_model
    """Return the item named by the path."""
    return {"id": id, "title": "item"}
