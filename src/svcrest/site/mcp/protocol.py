"""JSON-RPC 2.0 as the Model Context Protocol uses it: messages read, answers and errors
written, protocol versions negotiated, session ids issued and checked.

Nothing here does I/O or knows the site; :mod:`svcrest.site.mcp.endpoint` serves it over
HTTP. The error codes are JSON-RPC's (-32700 parse, -32600 invalid request, -32601 method not
found, -32602 invalid params, -32603 internal) and MCP's -32002 (resource not found).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any, Final

import orjson

from svcrest.http.answer_json import encode_default
from svcrest.instances import without_init

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LATEST_VERSION",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "RESOURCE_NOT_FOUND",
    "SUPPORTED_VERSIONS",
    "Message",
    "ProtocolError",
    "error_body",
    "negotiate_version",
    "new_session_id",
    "read_message",
    "result_body",
    "session_id_valid",
]

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
#: MCP's code for ``resources/read`` of a URI the server does not know.
RESOURCE_NOT_FOUND: Final = -32002

#: The protocol revisions served through the ``initialize`` handshake, oldest first.
SUPPORTED_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION: Final = SUPPORTED_VERSIONS[-1]
#: The version of a request without ``MCP-Protocol-Version`` (the transport's rule).
DEFAULT_VERSION: Final = "2025-03-26"

_SESSION_CONTEXT: Final = b"svcrest mcp session\x00"
_SIGNATURE_BYTES: Final = 16
#: Longest session id accepted (ours are 66 characters).
MAX_SESSION_ID: Final = 128


class ProtocolError(Exception):
    """A JSON-RPC error to answer: ``code``, ``message`` and optional ``data``."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


@dataclass(slots=True)
class Message:
    """One JSON-RPC message from the client: a request (``id`` given), a notification
    (``method`` without ``id``) or a response to the server (neither: nothing to answer).
    PERF: not frozen (a frozen dataclass's ``__init__`` cost ~0.3 µs a message); nothing
    changes it once read. :func:`read_message` sets the usual request's fields itself."""

    method: str | None
    id: str | int | None
    params: dict[str, Any]
    is_request: bool


def read_message(body: bytes) -> Message:
    """The message of a POST body; ProtocolError -32700 for bytes that are not JSON and
    -32600 for JSON that is not one JSON-RPC 2.0 message (batches included: MCP 2025-06-18
    removed them, and the official clients never send one)."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise ProtocolError(PARSE_ERROR, "Parse error") from None
    if type(value) is not dict or value.get("jsonrpc") != "2.0":
        raise ProtocolError(INVALID_REQUEST, "Invalid Request")
    method = value.get("method")
    ident = value.get("id", _NO_ID)
    params = value.get("params")
    # PERF: the usual request (a method, an id, params or none) read with type tests
    # alone (orjson makes exactly these types; a bool is not an id).
    kind = type(ident)
    if type(method) is str and (kind is int or kind is str) and type(params) in _PARAMS:
        # PERF: every field set here, without the generated ``__init__`` (a class call with
        # a Python ``__init__``: a ping 94,397 → 93,784 instructions, bench/mcp_call.py);
        # tests/site/test_mcp_protocol.py compares it with the constructor's.
        message = without_init(Message)
        message.method = method
        message.id = ident
        message.params = {} if params is None else params
        message.is_request = True
        return message
    return _other_message(value, method, ident, params)


_NO_ID: Final = object()
_PARAMS: Final = frozenset({dict, type(None)})


def _other_message(value: dict[str, Any], method: Any, ident: Any, params: Any) -> Message:
    """:func:`read_message` of anything but the usual request: a notification, a response
    to the server, or an invalid message."""
    has_id = ident is not _NO_ID
    if not has_id:
        ident = None
    elif isinstance(ident, bool) or not isinstance(ident, (str, int)):
        raise ProtocolError(INVALID_REQUEST, "Invalid Request")
    if method is None:
        if "result" in value or "error" in value:
            return Message(None, ident, {}, False)  # a response to the server: accepted
        raise ProtocolError(INVALID_REQUEST, "Invalid Request")
    if not isinstance(method, str):
        raise ProtocolError(INVALID_REQUEST, "Invalid Request")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise ProtocolError(INVALID_REQUEST, "Invalid Request")
    return Message(method, ident, params, has_id)


def result_body(ident: str | int | None, result: Any) -> bytes:
    """The JSON-RPC response carrying ``result``."""
    return orjson.dumps(
        {"jsonrpc": "2.0", "id": ident, "result": result},
        default=encode_default,
        option=orjson.OPT_NON_STR_KEYS,
    )


def error_body(ident: str | int | None, error: ProtocolError) -> bytes:
    """The JSON-RPC error response of ``error`` (``id`` null when it could not be read)."""
    detail: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        detail["data"] = error.data
    return orjson.dumps({"jsonrpc": "2.0", "id": ident, "error": detail})


def negotiate_version(requested: Any) -> str:
    """The version answered to ``initialize``: the client's when served, else the newest
    served (the client then decides whether it can go on)."""
    return requested if requested in SUPPORTED_VERSIONS else LATEST_VERSION


def _signature(key: bytes, token: str) -> str:
    mac = hmac.new(key, _SESSION_CONTEXT + token.encode(), hashlib.sha256)
    return mac.digest()[:_SIGNATURE_BYTES].hex()


def new_session_id(key: bytes) -> str:
    """A new ``Mcp-Session-Id``: a random token and its signature with the site's key, so
    every worker process recognises it without shared state. SECURITY: a session grants
    nothing (each request authenticates on its own); the signature only keeps clients from
    making up ids."""
    token = secrets.token_urlsafe(24)
    return f"{token}.{_signature(key, token)}"


def session_id_valid(key: bytes, value: str) -> bool:
    """Whether ``value`` is a session id this site issued (signed with ``key``)."""
    if len(value) > MAX_SESSION_ID:
        return False
    token, dot, signature = value.partition(".")
    if not dot or not token:
        return False
    return hmac.compare_digest(signature, _signature(key, token))
