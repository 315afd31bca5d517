"""A SiteClient whose requests come from a chosen peer address (the connection's client
address as the server sees it: ``REMOTE_ADDR`` over WSGI, the scope's ``client`` over ASGI)."""

from __future__ import annotations

import asyncio

import httpx

from svcrest import App
from tests.conftest import SiteClient


class PeerClient(SiteClient):
    """A :class:`SiteClient` on ``adapter`` whose requests come from ``peer``."""

    def __init__(self, app: App, adapter: str, peer: str, base_url: str | None = None) -> None:
        # Built here rather than by SiteClient, which has no peer option: the same fields.
        self.adapter = adapter
        base = base_url or app.home
        self._loop: asyncio.AbstractEventLoop | None = None
        if adapter == "asgi":
            self._loop = asyncio.new_event_loop()
            transport = httpx.ASGITransport(app=app, client=(peer, 50000))
            self._async = httpx.AsyncClient(
                transport=transport, base_url=base, follow_redirects=False
            )
        else:
            self._sync = httpx.Client(
                transport=httpx.WSGITransport(app=app.wsgi, remote_addr=peer),
                base_url=base,
                follow_redirects=False,
            )
