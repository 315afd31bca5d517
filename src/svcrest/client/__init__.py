"""The client proxy: create/read/update/destroy mapped onto HTTP verbs and URLs.

`RestProxy` builds methods, URLs and requests for an `Operation` and sends them with httpx;
error responses raise `ProxyError`. `AsyncRestProxy` is the same proxy over
``httpx.AsyncClient``; `ResultSet` is a page read by ``read_result`` / ``iter_pages``.
``changes()`` follows a collection's change feed as a `ChangeStream` (`AsyncChangeStream`)
of `ChangeEvent` objects; a cursor past the server's retention raises `ChangesExpired`.
"""

from __future__ import annotations

from svcrest.client.changes import AsyncChangeStream, ChangeEvent, ChangesExpired, ChangeStream
from svcrest.client.errors import ProxyError
from svcrest.client.operation import Operation
from svcrest.client.proxy import AsyncRestProxy, RestProxy
from svcrest.client.results import ResultSet

__all__ = [
    "AsyncChangeStream",
    "AsyncRestProxy",
    "ChangeEvent",
    "ChangeStream",
    "ChangesExpired",
    "Operation",
    "ProxyError",
    "RestProxy",
    "ResultSet",
]
