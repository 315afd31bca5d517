"""The client proxy: create/read/update/destroy mapped onto HTTP verbs and URLs.

`RestProxy` builds methods, URLs and requests for an `Operation` and sends them with httpx;
error responses raise `ProxyError`. ``svcrest.client.proxy.AsyncRestProxy`` is the same proxy
over ``httpx.AsyncClient``.
"""

from __future__ import annotations

from svcrest.client.errors import ProxyError
from svcrest.client.operation import Operation
from svcrest.client.proxy import RestProxy

__all__ = ["Operation", "ProxyError", "RestProxy"]
