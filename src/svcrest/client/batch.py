"""The pure half of ``sync(..., batch="server")``: one ``POST {root}batch/v1`` body for many
operations, and its 207 answer mapped back onto them (WordPress 5.6's batch API;
docs/guides/clients.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from svcrest.client.errors import ProxyError, error_from_body
from svcrest.client.operation import Operation
from svcrest.client.urls import split_url

__all__ = [
    "BATCH_ROUTE",
    "DEFAULT_PREFIX",
    "BatchSlot",
    "batch_body",
    "batch_slots",
    "root_of",
    "route_path",
    "slot_error",
]

#: The batch route under the REST root.
BATCH_ROUTE: Final = "batch/v1"
#: The default REST URL prefix: a proxy URL holding it tells the root without ``root=``.
DEFAULT_PREFIX: Final = "/svc-json/"

#: One answer of a batch: ``{"body": ..., "status": ..., "headers": {...}}``.
BatchSlot = dict[str, Any]


def root_of(url: str) -> str | None:
    """The REST root of ``url`` (up to and including ``/svc-json/``), None without that prefix."""
    path = split_url(url)[0]
    index = path.find(DEFAULT_PREFIX)
    return None if index < 0 else path[: index + len(DEFAULT_PREFIX)]


def route_path(url: str, root: str) -> str:
    """The batch ``path`` of ``url``: the route after ``root``, with its query string."""
    if not url.startswith(root):
        raise ValueError(f"the URL {url!r} is not under the REST root {root!r}")
    path, query, _fragment = split_url(url[len(root) :])
    path = "/" + path.lstrip("/")
    return path if not query else f"{path}?{query}"


def batch_body(requests: Sequence[dict[str, Any]], *, atomic: bool) -> dict[str, Any]:
    """The JSON body of the batch request: ``atomic`` or ``normal`` validation."""
    return {"validation": "atomic" if atomic else "normal", "requests": list(requests)}


def slot_error(slot: BatchSlot) -> ProxyError:
    """The `ProxyError` of one failed answer (status >= 400) of a batch."""
    status = slot["status"]
    return error_from_body(slot.get("body"), status, f"HTTP {status}")


def _invalid(status: int) -> ProxyError:
    return ProxyError(
        "invalid_batch_response", "The batch answer is not a list of responses.", status
    )


def batch_slots(
    answer: Any, operations: Sequence[Operation], status: int
) -> tuple[list[BatchSlot], tuple[ProxyError, Operation] | None]:
    """The answers of a batch, one per operation, and its first failure (None when all passed).

    The first failure is the error of the first answer with a status >= 400, with its
    operation (in an atomic batch that failed, the answers after it are 424s that did not run).
    An answer that is not ``{"responses": [...]}`` with one well-formed answer per operation
    raises `ProxyError` ``invalid_batch_response``.
    """
    slots = answer.get("responses") if isinstance(answer, dict) else None
    if not isinstance(slots, list) or len(slots) != len(operations):
        raise _invalid(status)
    for slot in slots:
        if not isinstance(slot, dict) or not isinstance(slot.get("status"), int):
            raise _invalid(status)
    for slot, operation in zip(slots, operations, strict=True):
        if slot["status"] >= 400:
            return slots, (slot_error(slot), operation)
    return slots, None
