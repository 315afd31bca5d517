"""A request on the budget's paths writes one context variable: the request context.

CPython keeps a context's variables in a hash array mapped trie; two variables of one context
whose hashes share a first-level slot make every ``set`` and ``reset`` walk a second level
(+1,737 instructions a WSGI GET, measured). With one variable a request there is no second
to collide with, whatever the addresses.
"""

from __future__ import annotations

import json
import sys
from contextvars import ContextVar
from typing import Any

import pytest

from svcrest import App, current_user, public
from svcrest.http.request_id import ACCESS_LOG
from tests.conftest import raw_request


def _item(request: Any) -> dict[str, Any]:
    return {"id": int(request["id"]), "user": current_user().id}


def _logged_in(request: Any) -> bool:
    return bool(request.user.id)


def _sets_of_one_get(
    app: App, adapter: str, headers: list[tuple[bytes, bytes]]
) -> tuple[list[tuple[str, str]], bytes]:
    """The context-variable writes (name, ``set``/``reset``) one GET makes, and its body."""
    raw_request(app, adapter, "GET", "/svc-json/demo/v1/items/42", headers)  # warmed up
    writes: list[tuple[str, str]] = []

    def watch(frame: Any, event: str, called: Any) -> None:
        variable = getattr(called, "__self__", None) if event == "c_call" else None
        if isinstance(variable, ContextVar) and called.__name__ in ("set", "reset"):
            writes.append((variable.name, called.__name__))

    sys.setprofile(watch)
    try:
        status, _, body = raw_request(app, adapter, "GET", "/svc-json/demo/v1/items/42", headers)
    finally:
        sys.setprofile(None)
    assert status == 200
    return writes, body


@pytest.fixture(autouse=True)
def _no_access_log(monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget's paths: no access log (``svcrest serve --access-log`` writes the logged
    request too; a test of the launcher in this process may have left it on)."""
    monkeypatch.setattr(ACCESS_LOG, "on", False)


@pytest.mark.parametrize("adapter", ["asgi", "wsgi"])
def test_a_plain_get_sets_one_context_variable(adapter: str) -> None:
    app = App("http://127.0.0.1:8000")
    handler = {"methods": "GET", "callback": _item, "permission_callback": public}
    app.register_rest_route("demo/v1", r"/items/(?P<id>\d+)", handler)
    writes, body = _sets_of_one_get(app, adapter, [])
    assert writes == [("svcrest_request_context", "set"), ("svcrest_request_context", "reset")]
    assert json.loads(body) == {"id": 42, "user": 0}


@pytest.mark.parametrize("adapter", ["asgi", "wsgi"])
def test_a_cookie_and_nonce_get_sets_one_context_variable(adapter: str) -> None:
    app = App("http://127.0.0.1:8000")
    handler = {"methods": "GET", "callback": _item, "permission_callback": _logged_in}
    app.register_rest_route("demo/v1", r"/items/(?P<id>\d+)", handler)
    app.users.create("bench", "bench-password-0123", roles=("administrator",))
    user = app.users.get_by_login("bench")
    assert user is not None
    issued = app.auth.log_in(user, remember=False, ip="127.0.0.1", user_agent="t", secure=False)
    cookie = issued.set_cookie_header().split(";", 1)[0]
    nonce = app.auth.create_nonce("svc_rest", user.id, issued.token)
    headers = [(b"cookie", cookie.encode()), (b"x-svc-nonce", nonce.encode())]
    writes, body = _sets_of_one_get(app, adapter, headers)
    assert writes == [("svcrest_request_context", "set"), ("svcrest_request_context", "reset")]
    assert json.loads(body) == {"id": 42, "user": user.id}
