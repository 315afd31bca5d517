"""``X-Request-Id`` on every answer (REST, site pages, a wrapped site app), kept from the client
when valid, ``request.request_id`` in callbacks, and the 500's log record."""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable
from typing import Any

import pytest

import svcrest
from svcrest import App, Request
from svcrest.http.headers import Headers
from svcrest.http.request_id import REQUEST_IDS, checked_request_id
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
HOME = "http://example.org"
MADE = re.compile("[0-9a-f]{32}")


def new_request_id() -> str:
    """A new id, as the server makes one for a request that sent none."""
    return next(REQUEST_IDS.made)


def request_id_of(headers: Headers) -> str:
    """The id of a request with the header lines ``headers``, as the adapters read it (the
    lines joined) and the server keeps or replaces it."""
    sent = headers.get_joined("x-request-id")
    return checked_request_id(sent) if sent else new_request_id()


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        ("abc", True),
        ("A-z_0.9:x", True),
        ("x" * 128, True),
        ("7", True),
        ("x" * 129, False),
        ("", False),
        ("has space", False),
        ("a/b", False),
        ("é", False),
        ("a\tb", False),
        ("a,b", False),
    ],
    ids=[
        "plain",
        "every-allowed-kind",
        "128",
        "one",
        "129",
        "empty",
        "space",
        "slash",
        "non-ascii",
        "tab",
        "comma",
    ],
)
def test_a_client_id_is_kept_only_when_valid(sent: str, kept: bool) -> None:
    made = request_id_of(Headers([("X-Request-Id", sent)]))
    if kept:
        assert made == sent
    else:
        assert MADE.fullmatch(made)


def test_two_lines_make_a_new_id() -> None:
    made = request_id_of(Headers([("X-Request-Id", "a"), ("X-Request-Id", "b")]))
    assert MADE.fullmatch(made)


def test_made_ids_differ() -> None:
    ids = {new_request_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(MADE.fullmatch(made) for made in ids)


def test_made_ids_count_up_across_blocks() -> None:
    """Ids are made by blocks of 256 (the last two digits appended): 600 in a row share the
    process's prefix and count up by one, across the blocks' ends."""
    ids = [new_request_id() for _ in range(600)]
    assert {made[:16] for made in ids} == {ids[0][:16]}
    counters = [int(made[16:], 16) for made in ids]
    assert counters == list(range(counters[0], counters[0] + 600))


def test_threads_share_the_ids_without_a_repeat() -> None:
    """The server's threads take ids at once: every id made once, every one well formed."""
    taken: list[list[str]] = [[] for _ in range(4)]

    def take(into: list[str]) -> None:
        into.extend(new_request_id() for _ in range(3000))

    threads = [threading.Thread(target=take, args=(into,)) for into in taken]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [made for into in taken for made in into]
    assert len(set(every)) == len(every) == 12000
    assert all(MADE.fullmatch(made) for made in every)


def test_a_forked_worker_makes_ids_of_its_own() -> None:
    """Workers forked from one process draw their own prefix: no id is made twice."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its first ids, then out without running the parent's cleanup
        os.write(write_end, " ".join(new_request_id() for _ in range(3)).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        child = pipe.read().split()
    os.waitpid(pid, 0)
    parent = [new_request_id() for _ in range(3)]
    assert all(MADE.fullmatch(made) for made in [*child, *parent])
    assert {made[:16] for made in child} != {made[:16] for made in parent}
    assert not set(child) & set(parent)


def _app() -> App:
    app = App(HOME)

    def whoami(request: Request) -> dict[str, Any]:
        return {"request_id": request.request_id}

    def broken(request: Request) -> Any:
        raise RuntimeError("boom")

    app.register_rest_route(
        "t/v1", "/id", {"methods": "GET", "callback": whoami, "permission_callback": svcrest.public}
    )
    app.register_rest_route(
        "t/v1",
        "/boom",
        {"methods": "GET", "callback": broken, "permission_callback": svcrest.public},
    )
    return app


def test_rest_answers_carry_the_clients_id(client_for: ClientFor) -> None:
    client = client_for(_app())
    response = client.get("/svc-json/t/v1/id", headers={"X-Request-Id": "lb-7:a.b_c"})
    assert response.status_code == 200
    assert response.headers.get_list("x-request-id") == ["lb-7:a.b_c"]
    assert response.json() == {"request_id": "lb-7:a.b_c"}
    assert "X-Request-Id" in response.headers["access-control-expose-headers"].split(", ")


def test_a_new_id_is_the_callbacks_and_the_answers(client_for: ClientFor) -> None:
    client = client_for(_app())
    response = client.get("/svc-json/t/v1/id", headers={"X-Request-Id": "bad id"})
    made = response.headers["x-request-id"]
    assert MADE.fullmatch(made)
    assert response.json() == {"request_id": made}


@pytest.mark.parametrize(
    ("path", "status"),
    [("/svc-json/t/v1/nothing", 404), ("/login", 200), ("/no-such-page", 404)],
    ids=["rest-404", "site-page", "site-404"],
)
def test_every_answer_carries_an_id(client_for: ClientFor, path: str, status: int) -> None:
    client = client_for(_app())
    response = client.get(path, headers={"X-Request-Id": "r1"})
    assert response.status_code == status
    assert response.headers.get_list("x-request-id") == ["r1"]
    response = client.request("HEAD", path)
    assert MADE.fullmatch(response.headers["x-request-id"])


def test_a_wrapped_site_apps_answer_carries_an_id(client_for: ClientFor) -> None:
    async def site(scope: Any, receive: Any, send: Any) -> None:
        start = {"type": "http.response.start", "status": 200, "headers": []}
        await send(start)
        await send({"type": "http.response.body", "body": b"hi"})

    client = client_for(App(HOME, site=site))
    response = client.get("/widget", headers={"X-Request-Id": "site-1"})
    assert response.text == "hi"
    assert response.headers.get_list("x-request-id") == ["site-1"]


def test_the_500_log_record_names_the_request(
    client_for: ClientFor, caplog: pytest.LogCaptureFixture
) -> None:
    client = client_for(_app())
    with caplog.at_level(logging.ERROR, logger="svcrest"):
        response = client.get("/svc-json/t/v1/boom", headers={"X-Request-Id": "oops-1"})
    assert response.status_code == 500
    assert response.headers["x-request-id"] == "oops-1"
    [record] = [r for r in caplog.records if r.name == "svcrest"]
    assert record.getMessage() == (
        "Unhandled exception while dispatching GET /t/v1/boom (request oops-1)"
    )
    assert record.__dict__["request_id"] == "oops-1"


def test_outside_a_request_the_id_is_empty() -> None:
    assert Request("GET", "/x").request_id == ""
