"""Raw WSGI callables: the ceilings of the granian WSGI figures.

``app`` answers ``GET /svc-json/demo/v1/items/{id}`` with ``{"id": id, "title": "item"}``
and two header lines (Content-Type, Content-Length); ``svc_headers`` sends the same body with
the twelve header lines of a svcrest answer (the lines of ``raw_svc_headers``, Content-Length
last), doing nothing else; ``svc_auth_headers`` the fourteen of an answer to a logged-in
user (``Cache-Control: no-store`` and a fresh ``X-SVC-Nonce`` besides). No framework that
sends those lines can be faster on the same server; what one costs against ``app`` is the
price of the lines alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from raw_asgi import NOT_FOUND, item_id
from raw_svc_headers import HEADERS as SVC_HEADERS

PLAIN = [("Content-Type", "application/json")]
SVC = [(name.decode(), value.decode()) for name, value in SVC_HEADERS]
#: svcrest's lines for a logged-in user: no-store after the REST block, the nonce last.
AUTH = [
    *SVC[:7],
    ("Cache-Control", "no-store"),
    *SVC[7:],
    ("X-SVC-Nonce", "0123456789abcdef0123456789abcdef"),
]


def _serving(lines: list[tuple[str, str]]) -> Callable[..., Iterable[bytes]]:
    """A WSGI callable answering the one route with ``lines`` and ``Content-Length``."""

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        found = item_id(environ["REQUEST_METHOD"], environ["PATH_INFO"])
        if found is None:
            status, body = "404 Not Found", NOT_FOUND
        else:
            status = "200 OK"
            body = json.dumps({"id": found, "title": "item"}, separators=(",", ":")).encode()
        start_response(status, [*lines, ("Content-Length", str(len(body)))])
        return [body]

    return serve


#: The one route with two header lines.
app = _serving(PLAIN)
#: The one route with svcrest's twelve header lines.
svc_headers = _serving(SVC)
#: The one route with the fourteen header lines of svcrest's answer to a logged-in user.
svc_auth_headers = _serving(AUTH)
