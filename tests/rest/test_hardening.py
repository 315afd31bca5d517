"""Regressions found by attacking a served site: caching of refusals, several Cookie lines,
and an Allow header that a failing permission callback must not turn into a 500."""

from __future__ import annotations

import gzip
import logging
from collections.abc import Callable
from typing import Any

import pytest

from svcrest import App, Request, public
from tests.conftest import SiteClient, raw_request

ClientFor = Callable[..., SiteClient]
HOME = "http://127.0.0.1:8000"


def make_app() -> App:
    app = App(HOME, secret_key="hardening-secret")
    app.users.create("alice", "alice-password", roles=("editor",))

    def me(request: Request) -> dict[str, Any]:
        return {"id": request.user.id}

    app.register_rest_route(
        "t/v1", "/me", {"permission_callback": public, "methods": "GET, POST", "callback": me}
    )
    return app


def test_an_anonymous_refused_nonce_is_not_cacheable(client_for: ClientFor) -> None:
    client = client_for(make_app())
    response = client.get("/svc-json/t/v1/me", headers={"X-SVC-Nonce": "0123456789abcdef"})
    assert response.status_code == 403
    assert response.json()["code"] == "rest_cookie_invalid_nonce"
    assert response.headers["cache-control"] == "no-store"


def test_an_error_after_a_method_override_is_not_cacheable(client_for: ClientFor) -> None:
    client = client_for(make_app())
    response = client.post("/svc-json/t/v1/me?_method=DELETE")
    assert response.status_code == 405
    assert response.json()["code"] == "rest_no_route"
    assert response.headers["cache-control"] == "no-store"
    # A plain anonymous read stays cacheable.
    assert "cache-control" not in client.get("/svc-json/t/v1/me").headers


def login_cookie_and_nonce(app: App, client: SiteClient) -> tuple[str, str]:
    answer = client.post("/login", data={"log": "alice", "pwd": "alice-password"})
    assert answer.status_code == 303
    cookie = answer.headers["set-cookie"].split(";", 1)[0]
    nonce = client.get("/auth/nonce", headers={"Cookie": cookie}).json()["nonce"]
    client.cookies.clear()
    return cookie, str(nonce)


def test_a_second_cookie_line_keeps_the_login(adapter: str, client_for: ClientFor) -> None:
    app = make_app()
    cookie, nonce = login_cookie_and_nonce(app, client_for(app))
    alice = app.users.get_by_login("alice")
    assert alice is not None
    if adapter == "asgi":
        lines = [(b"cookie", b"theme=dark"), (b"cookie", cookie.encode())]
    else:  # a WSGI server hands several lines over joined with ", "
        lines = [(b"cookie", b"theme=dark, " + cookie.encode())]
    status, _headers, body = raw_request(
        app, adapter, "GET", "/svc-json/t/v1/me", [*lines, (b"x-svc-nonce", nonce.encode())]
    )
    assert (status, body) == (200, b'{"id":%d}' % alice.id)


def test_a_failing_permission_callback_leaves_a_method_out_of_allow(
    client_for: ClientFor, caplog: pytest.LogCaptureFixture
) -> None:
    app = App(HOME)

    def strict(request: Request) -> bool:
        return int(request["id"]) > 0  # ValueError past Python's integer-string limit

    app.register_rest_route(
        "t/v1",
        r"/items/(?P<id>\d+)",
        [
            {
                "permission_callback": public,
                "methods": "GET",
                "callback": lambda request: {"ok": True},
            },
            {"methods": "PUT", "callback": lambda request: {}, "permission_callback": strict},
        ],
    )
    client = client_for(app)
    with caplog.at_level(logging.WARNING, logger="svcrest"):
        response = client.get("/svc-json/t/v1/items/" + "9" * 5000)
    assert response.status_code == 200
    assert response.json() == {"ok": True}
    assert response.headers["allow"] == "GET"
    assert "A permission callback failed while computing Allow" in caplog.text
    assert "Traceback" not in caplog.text


def test_a_big_json_body_is_parsed_off_the_event_loop(
    adapter: str, client_for: ClientFor, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from svcrest.http.jsonbody import decode_json_body
    from svcrest.rest.server import OFFLOAD_BODY_SIZE

    threads: list[int] = []

    def recording(raw: bytes) -> Any:
        threads.append(threading.get_ident())
        return decode_json_body(raw)

    # The name the request module calls.
    monkeypatch.setattr("svcrest.http.request.decode_json_body", recording)
    app = App(HOME)
    served_on: list[int] = []

    def count(request: Request) -> dict[str, int]:
        served_on.append(threading.get_ident())
        return {"items": len(request["items"])}

    app.register_rest_route(
        "t/v1", "/count", {"permission_callback": public, "methods": "POST", "callback": count}
    )
    client = client_for(app)
    small = client.post("/svc-json/t/v1/count", json={"items": [1, 2, 3]})
    big_items = [7] * (OFFLOAD_BODY_SIZE // 2)
    big = client.post("/svc-json/t/v1/count", json={"items": big_items})
    assert (small.status_code, small.json()) == (200, {"items": 3})
    assert (big.status_code, big.json()) == (200, {"items": len(big_items)})
    # The small body was parsed where the request is served, the big one elsewhere.
    assert threads[0] == served_on[0]
    assert threads[1] != served_on[1]


@pytest.mark.parametrize("coding", ["gzip", "GZIP", "br", "identity, gzip"])
def test_a_coded_request_body_answers_415_naming_the_accepted_coding(
    client_for: ClientFor, coding: str
) -> None:
    """RFC 9110 §15.5.16: a body in a content coding the server does not read answers 415
    with ``Accept-Encoding`` (it was a 400 ``rest_invalid_json``)."""
    calls: list[Any] = []
    app = App(HOME)
    app.register_rest_route(
        "t/v1",
        "/things",
        {"permission_callback": public, "methods": "POST", "callback": calls.append},
    )
    client = client_for(app)
    for content_type, body in (
        ("application/json", gzip.compress(b'{"a": 1}')),
        ("application/x-www-form-urlencoded", gzip.compress(b"a=1")),
    ):
        answer = client.post(
            "/svc-json/t/v1/things",
            content=body,
            headers={"Content-Type": content_type, "Content-Encoding": coding},
        )
        assert answer.status_code == 415
        assert answer.json() == {
            "code": "rest_unsupported_content_encoding",
            "message": "Request bodies must be sent without a content coding.",
            "data": {"status": 415},
        }
        assert answer.headers["accept-encoding"] == "identity"
    assert calls == []
    # ``identity`` is no coding at all.
    plain = client.post(
        "/svc-json/t/v1/things",
        json={"a": 1},
        headers={"Content-Encoding": "identity"},
    )
    assert plain.status_code == 200
    assert len(calls) == 1
