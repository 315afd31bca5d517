"""Falcon ASGI: one resource with an ``int`` path field, answered through ``resp.media``."""

from __future__ import annotations

import falcon.asgi


class Item:
    """The item resource."""

    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response, id: int) -> None:
        resp.media = {"id": id, "title": "item"}


app = falcon.asgi.App()
app.add_route("/svc-json/demo/v1/items/{id:int}", Item())
