"""Falcon WSGI: one resource with an ``int`` path field, answered through ``resp.media``
(the anchor of the granian WSGI figures)."""

from __future__ import annotations

import falcon


class Item:
    """The item resource."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, id: int) -> None:
        resp.media = {"id": id, "title": "item"}


app = falcon.App()
app.add_route("/svc-json/demo/v1/items/{id:int}", Item())
