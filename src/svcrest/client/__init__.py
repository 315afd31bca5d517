"""The client proxy: create/read/update/destroy mapped onto HTTP verbs and URLs.

`RestProxy` builds methods, URLs and requests for an `Operation` and sends them with httpx;
error responses raise `ProxyError`. `AsyncRestProxy` is the same proxy over
``httpx.AsyncClient``; `ResultSet` is a page read by ``read_result`` / ``iter_pages``.
"""

from __future__ import annotations

from svcrest.client.errors import ProxyError
from svcrest.client.operation import Operation
from svcrest.client.proxy import AsyncRestProxy, RestProxy
from svcrest.client.results import ResultSet

__all__ = ["AsyncRestProxy", "Operation", "ProxyError", "RestProxy", "ResultSet"]
