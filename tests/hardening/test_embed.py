"""Hostile ``?_embed`` on both adapters (WordPress's ``rest_parse_embed_param`` and
``embed_links``): empty members, thousands of repeated rels, the parameter repeated or sent
as a PHP array, NUL; links that point back to themselves, to a route whose permission
refuses, to a callback that raises, to another host, or that carry ``_embed``,
``_envelope`` or ``_method`` in their own query string. Each answers 200 with the rels asked,
every href fetched once and one level deep, errors embedded in the error shape without
their text, never a 500. (The ordinary cases are in tests/rest/test_embed.py.)"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from svcrest import App, Request, Response, public
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
HOME = "http://127.0.0.1:8000"
ROOT = HOME + "/svc-json/t/v1"
ITEM = "/svc-json/t/v1/items/1"
LINKS = {
    "self": ROOT + "/items/1",
    "secret": ROOT + "/secret",
    "boom": ROOT + "/boom",
    "other-host": "http://evil.example/svc-json/t/v1/items/2",
    "plain": HOME + "/?rest_route=/t/v1/items/3",
    "nested": ROOT + "/items/4?_embed=1",
    "enveloped": ROOT + "/items/5?_envelope",
    "overridden": ROOT + "/items/6?_method=DELETE",
}
REFUSED = {
    "code": "rest_forbidden",
    "message": "Sorry, you are not allowed to do that.",
    "data": {"status": 401},
}
FAILED = {
    "code": "rest_internal_error",
    "message": "Internal server error.",
    "data": {"status": 500},
}


def _links() -> dict[str, list[dict[str, Any]]]:
    return {rel: [{"href": href, "embeddable": True}] for rel, href in LINKS.items()}


def _item(ident: str, context: str | None = "embed") -> dict[str, Any]:
    return {"id": ident, "context": context, "_links": _links()}


def make_app(calls: Counter[str]) -> App:
    app = App(HOME)

    def item(request: Request) -> Response:
        calls[request.method + " " + request.route] += 1
        response = Response({"id": request["id"], "context": request.get_param("context")})
        for rel, href in LINKS.items():
            response.add_link(rel, href, embeddable=True)
        return response

    def boom(request: Request) -> Any:
        raise ValueError("secret text of the failure")

    app.register_rest_route(
        "t/v1",
        r"/items/(?P<id>\d+)",
        {"methods": "GET, DELETE", "callback": item, "permission_callback": public},
    )
    app.register_rest_route(
        "t/v1", "/secret", {"callback": lambda r: {"s": 1}, "permission_callback": lambda r: False}
    )
    app.register_rest_route("t/v1", "/boom", {"callback": boom, "permission_callback": public})
    app.register_rest_route(
        "t/v1",
        "/list",
        {
            "callback": lambda request: [{"id": n, "_links": _links()} for n in range(50)],
            "permission_callback": public,
        },
    )
    return app


@pytest.mark.parametrize(
    ("query", "rels"),
    [
        ("_embed=self,,", ["self"]),
        ("_embed=,self,", ["self"]),
        ("_embed=" + ",".join(["self"] * 10_000), ["self"]),
        ("_embed=self&_embed=secret", ["secret"]),  # a repeated plain key: the last (PHP)
        ("_embed[]=self&_embed[]=secret", ["self", "secret"]),
        ("_embed[a]=self&_embed[b]=plain", ["self", "plain"]),  # wp_parse_list's values
        ("_embed=%00", []),
        ("_embed=%20self%20", ["self"]),
        ("_embed=SELF", []),  # rels are compared as written
        ("_embed=other-host", []),  # never fetched: nothing embedded
    ],
    ids=[
        "trailing-empties",
        "empties-around",
        "10000-repeats",
        "repeated-key",
        "php-list",
        "php-map",
        "nul",
        "blanks",
        "upper-case",
        "other-host-only",
    ],
)
def test_embed_parameter_odd_forms(client_for: ClientFor, query: str, rels: list[str]) -> None:
    calls: Counter[str] = Counter()
    response = client_for(make_app(calls)).get(ITEM + "?" + query)
    assert response.status_code == 200
    data = response.json()
    assert list(data.get("_embedded", {})) == rels
    assert calls["GET /t/v1/items/1"] == 1 + ("self" in rels)


def test_everything_embedded_once_and_one_level_deep(client_for: ClientFor) -> None:
    calls: Counter[str] = Counter()
    response = client_for(make_app(calls)).get(ITEM + "?_embed=,,,")  # empty list: every rel
    assert response.status_code == 200
    body = response.json()
    assert body["_embedded"] == {
        "self": [_item("1")],
        "secret": [REFUSED],
        "boom": [FAILED],
        "plain": [_item("3")],
        "nested": [_item("4", "embed")],  # its own ?_embed is not followed
        "enveloped": [_item("5")],  # WordPress envelopes only the outer answer
        "overridden": [_item("6")],  # always a GET
    }
    assert "other-host" not in body["_embedded"]
    assert b"secret text" not in response.content
    assert calls == Counter(
        {
            "GET /t/v1/items/1": 2,
            "GET /t/v1/items/3": 1,
            "GET /t/v1/items/4": 1,
            "GET /t/v1/items/5": 1,
            "GET /t/v1/items/6": 1,
        }
    )


def test_a_list_whose_items_link_the_same_hrefs_fetches_each_once(client_for: ClientFor) -> None:
    calls: Counter[str] = Counter()
    response = client_for(make_app(calls)).get("/svc-json/t/v1/list?_embed=self,plain")
    assert response.status_code == 200
    items = response.json()
    assert len(items) == 50
    assert all(item["_embedded"] == {"self": [_item("1")], "plain": [_item("3")]} for item in items)
    assert calls == Counter({"GET /t/v1/items/1": 1, "GET /t/v1/items/3": 1})


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("/svc-json/t/v1/secret", 401, "rest_forbidden"),
        ("/svc-json/t/v1/nothing", 404, "rest_no_route"),
        ("/svc-json/t/v1/boom", 500, "rest_internal_error"),
    ],
    ids=["refused", "no-route", "raises"],
)
def test_embed_on_an_error_answers_the_error_alone(
    client_for: ClientFor, path: str, status: int, code: str
) -> None:
    response = client_for(make_app(Counter())).get(path + "?_embed")
    assert response.status_code == status
    assert set(response.json()) == {"code", "message", "data"}
    assert response.json()["code"] == code


def test_embed_with_envelope_and_a_refused_link(client_for: ClientFor) -> None:
    response = client_for(make_app(Counter())).get(ITEM + "?_embed=secret,boom&_envelope")
    assert response.status_code == 200
    envelope = response.json()
    assert envelope["status"] == 200
    assert envelope["body"]["_embedded"] == {"secret": [REFUSED], "boom": [FAILED]}
