"""Falcon ASGI with ``BENCH_ROUTES`` routes of the scaling table (see ``routetable``)."""

from __future__ import annotations

from typing import Any

import falcon.asgi
from routetable import routes, routes_from_env


class Item:
    """The resource of the first route shape."""

    async def on_get(self, req: Any, resp: Any, id: int) -> None:
        resp.media = {"id": id, "title": "item"}


class Other:
    """The resource of every other shape."""

    async def on_get(self, req: Any, resp: Any, **params: Any) -> None:
        resp.media = {"ok": True}


app = falcon.asgi.App()
_item, _other = Item(), Other()
for _route in routes(routes_from_env()):
    app.add_route(_route.template, _item if _route.shape == 0 else _other)
