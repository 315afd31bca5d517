"""Every instance the package makes with ``without_init`` (no class call, its fields set by
hand) comes out as the class call makes it: the same slots set, to the same values. A slot
added to one of these classes fails here until every hand-made copy sets it too."""

from __future__ import annotations

import ast
import asyncio
import io
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from svcrest import App, public
from svcrest.http.context import RequestContext
from svcrest.http.environ import EnvironHeaders
from svcrest.http.exchange import HttpRequest, HttpResponse
from svcrest.http.headers import Headers
from svcrest.http.request import Request
from svcrest.http.response import Response, data_response
from svcrest.http.scope_headers import ScopeHeaders
from svcrest.http.user import ANONYMOUS
from svcrest.instances import without_init
from svcrest.serve import asgi, rsgi, wsgi
from svcrest.site.mcp import endpoint, protocol
from svcrest.site.respond import respond
from tests.serve.test_rsgi import FakeScope

SRC = Path(__file__).resolve().parent.parent / "src" / "svcrest"
#: Where a ``without_init`` call is written, and the class it makes (``cls`` in a classmethod).
BUILT_BY_HAND = Counter(
    {
        ("http/context.py", "cls"): 1,  # RequestContext.serving
        ("http/request.py", "cls"): 2,  # Request.from_http, Request.for_dispatch
        ("http/response.py", "Response"): 1,  # data_response
        ("rest/answer.py", "HttpResponse"): 1,  # answer
        ("serve/asgi.py", "HttpRequest"): 1,  # _request
        ("serve/asgi.py", "ScopeHeaders"): 1,  # _request
        ("serve/rsgi.py", "HttpRequest"): 1,  # _request
        ("serve/rsgi.py", "RSGIScopeHeaders"): 1,  # _request
        ("serve/wsgi.py", "HttpRequest"): 1,  # _request
        ("serve/wsgi.py", "EnvironHeaders"): 1,  # _request
        ("site/mcp/endpoint.py", "HttpResponse"): 1,  # _answered
        ("site/mcp/protocol.py", "Message"): 1,  # read_message
    }
)
UNSET = object()


def slots(instance: object) -> dict[str, Any]:
    """Every slot of ``instance``'s class and its bases, with its value (``UNSET`` when the
    slot was never set)."""
    found: dict[str, Any] = {}
    for klass in type(instance).__mro__:
        names = klass.__dict__.get("__slots__", ())
        for name in (names,) if isinstance(names, str) else names:
            if name not in ("__weakref__", "__dict__"):
                found[name] = getattr(instance, name, UNSET)
    return found


def written_calls() -> Counter[tuple[str, str]]:
    """Each ``without_init(<name>)`` call in the package's source, by module and name."""
    calls: Counter[tuple[str, str]] = Counter()
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "without_init"
            ):
                (argument,) = node.args
                assert isinstance(argument, ast.Name), ast.unparse(node)
                calls[path.relative_to(SRC).as_posix(), argument.id] += 1
    return calls


def test_without_init_is_object_new_itself() -> None:
    """No wrapper (a Python frame would cost what the trick saves)."""
    assert without_init is object.__new__
    made = without_init(HttpRequest)
    assert type(made) is HttpRequest
    assert all(value is UNSET for value in slots(made).values())


def test_every_hand_made_class_is_compared_here() -> None:
    """A new ``without_init`` call fails here until a case below compares what it makes."""
    assert written_calls() == BUILT_BY_HAND
    compared = Counter(place for place, _ in CASES.values())
    assert compared == BUILT_BY_HAND


def test_the_slot_reader_sees_a_slot_left_unset() -> None:
    """What the comparison relies on: an unset slot reads as ``UNSET``, not as a default."""
    made = without_init(HttpResponse)
    made.status = 200
    assert slots(made)["status"] == 200
    assert slots(made)["request_id"] is UNSET
    assert slots(made) != slots(HttpResponse(200))


def _app() -> App:
    app = App()
    app.register_rest_route(
        "demo/v1",
        r"/items/(?P<id>\d+)",
        {"methods": "GET", "permission_callback": public, "callback": lambda r: {"id": 7}},
    )
    return app


def _answer() -> tuple[object, object]:
    answered = asyncio.run(respond(_app(), HttpRequest("GET", "/svc-json/demo/v1/items/7"), None))
    assert type(answered) is HttpResponse
    assert answered.body == b'{"id":7}'
    made = HttpResponse(200, list(answered.headers), b'{"id":7}', None, answered.wire_prefix)
    made.request_id = answered.request_id  # the one field the edge sets after the answer step
    return answered, made


def _mcp_answer(answer_type: str) -> Callable[[], tuple[object, object]]:
    def case() -> tuple[object, object]:
        answered = endpoint._answered(answer_type, b"{}", (("Mcp-Session-Id", "s"),))
        sse = answer_type == "text/event-stream"
        lines = endpoint._SSE_LINES if sse else endpoint._JSON_LINES
        body = b"event: message\ndata: {}\n\n" if sse else b"{}"
        wire = endpoint._SSE_WIRE if sse else endpoint._JSON_WIRE
        made = HttpResponse(200, [*lines, ("Mcp-Session-Id", "s")], body, wire_prefix=wire)
        return answered, made

    return case


ENVIRON = {
    "REQUEST_METHOD": "GET",
    "PATH_INFO": "/svc-json/f/v1/see",
    "QUERY_STRING": "q=1",
    "REMOTE_ADDR": "10.1.2.3",
    "HTTP_HOST": "h.example",
    "wsgi.url_scheme": "https",
}
SCOPE = {
    "type": "http",
    "method": "GET",
    "scheme": "https",
    "path": "/svc-json/f/v1/see",
    "query_string": b"q=1",
    "headers": [(b"host", b"h.example")],
    "client": ("10.1.2.3", 5000),
}


def _adapter_request(http: HttpRequest) -> tuple[object, object]:
    """The request with its headers compared as lines (each adapter has its own kind)."""
    made = HttpRequest("GET", "/svc-json/f/v1/see", "q=1", Headers(), b"", "https", "h.example")
    made.client = "10.1.2.3"
    built = slots(http)
    built["headers"] = [(name.lower(), value) for name, value in http.headers.items_list()]
    assert built["headers"] == [("host", "h.example")]
    expected = slots(made)
    expected["headers"] = [("host", "h.example")]
    return built, expected


def _rsgi_scope() -> FakeScope:
    return FakeScope(
        "GET",
        "/svc-json/f/v1/see",
        "q=1",
        lines=[("host", "h.example")],
        scheme="https",
        client="10.1.2.3:5000",
    )


def _rsgi_headers() -> tuple[object, object]:
    scope = _rsgi_scope()
    return rsgi._request(scope)[0].headers, rsgi.RSGIScopeHeaders(scope.headers)


def _environ_headers() -> tuple[object, object]:
    environ = {**ENVIRON, "wsgi.input": io.BytesIO(b"")}
    return wsgi._request(environ).headers, EnvironHeaders(environ)


def _context() -> tuple[object, object]:
    http = HttpRequest("GET", "/", "", Headers(), b"", "https", "a.example", "10.0.0.7")
    made = RequestContext(True, ANONYMOUS, secure=True, host="a.example", client="10.0.0.7")
    made.request_id = "r-1"
    return RequestContext.serving(http, True, "r-1"), made


def _from_http() -> tuple[object, object]:
    headers = Headers([("Accept", "*/*")])
    made = Request("GET", "/demo/v1/items", headers=headers)
    made.query_string = "a=1"
    made._query_params = None
    made.may_have_query = True
    return Request.from_http("GET", "/demo/v1/items", "a=1", headers, b""), made


def _for_dispatch() -> tuple[object, object]:
    headers = Headers()
    query = {"a": "1"}
    made = Request("POST", "/demo/v1/items", query=query, json={"b": 2}, headers=headers)
    made._query_params = query  # for_dispatch keeps the caller's dict
    built = Request.for_dispatch("POST", "/demo/v1/items", headers, query, {"b": 2})
    return built, made


def _message() -> tuple[object, object]:
    read = protocol.read_message(b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"a":1}}')
    return read, protocol.Message("ping", 3, {"a": 1}, True)


#: case -> (where it is made by hand, what makes the hand-made and the class-call instances)
CASES: dict[str, tuple[tuple[str, str], Callable[[], tuple[object, object]]]] = {
    "answer": (("rest/answer.py", "HttpResponse"), _answer),
    "mcp-json": (("site/mcp/endpoint.py", "HttpResponse"), _mcp_answer("application/json")),
    "asgi-request": (
        ("serve/asgi.py", "HttpRequest"),
        lambda: _adapter_request(asgi._request(SCOPE)[0]),
    ),
    "asgi-headers": (
        ("serve/asgi.py", "ScopeHeaders"),
        lambda: (asgi._request(SCOPE)[0].headers, ScopeHeaders([(b"host", b"h.example")])),
    ),
    "rsgi-request": (
        ("serve/rsgi.py", "HttpRequest"),
        lambda: _adapter_request(rsgi._request(_rsgi_scope())[0]),
    ),
    "rsgi-headers": (("serve/rsgi.py", "RSGIScopeHeaders"), _rsgi_headers),
    "wsgi-request": (
        ("serve/wsgi.py", "HttpRequest"),
        lambda: _adapter_request(wsgi._request({**ENVIRON})),
    ),
    "wsgi-headers": (("serve/wsgi.py", "EnvironHeaders"), _environ_headers),
    "data-response": (
        ("http/response.py", "Response"),
        lambda: (data_response({"a": 1}), Response({"a": 1})),
    ),
    "serving-context": (("http/context.py", "cls"), _context),
    "request-from-http": (("http/request.py", "cls"), _from_http),
    "request-for-dispatch": (("http/request.py", "cls"), _for_dispatch),
    "mcp-message": (("site/mcp/protocol.py", "Message"), _message),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_hand_made_instance_is_the_class_calls(case: str) -> None:
    built, made = CASES[case][1]()
    expected = made if isinstance(made, dict) else slots(made)
    got = built if isinstance(built, dict) else slots(built)
    assert got == expected


def test_the_mcp_event_stream_answer_is_the_class_calls() -> None:
    built, made = _mcp_answer("text/event-stream")()
    assert slots(built) == slots(made)
