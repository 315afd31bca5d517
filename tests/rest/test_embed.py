"""``?_embed``: WordPress's link-embedding cases (``rest-server.php``) on both adapters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from svcrest import App, Request, Response, RestError, public
from svcrest.auth.passwords import ScryptParams
from svcrest.demo import register
from tests.conftest import SiteClient

HOME = "http://embed.test"
ROOT = f"{HOME}/svc-json"
ClientFor = Callable[[App], SiteClient]


def _app(seen: list[Any]) -> App:
    app = App(HOME)

    def embeddable(request: Request) -> dict[str, Any]:
        seen.append((request.get_param("context"), request.get_param("parameter"), request.user.id))
        return {"hello": "world", "parameter": request.get_param("parameter")}

    def failing(request: Request) -> RestError:
        return RestError("wp-api-test-error", "Test message", {"status": 403})

    def answer(request: Request) -> Response:
        response = Response({"id": 1})
        response.add_link("alternate", f"{ROOT}/test/embeddable", embeddable=True)
        response.add_link("alternate", "http://example.com/elsewhere", embeddable=True)
        response.add_link("alternate", f"{ROOT}/test/embeddable?parameter=x&context=edit")
        response.add_link("up", f"{ROOT}/test/embeddable?parameter=up", embeddable=True)
        response.add_link("error", f"{ROOT}/test/error", embeddable=True)
        response.add_link("self", f"{ROOT}/test/answer")
        return response

    def listing(request: Request) -> list[Any]:
        server = app.rest_get_server()
        return [server.prepare_response_for_collection(answer(request)), {"plain": True}, 5]

    app.register_rest_route(
        "test", "/embeddable", {"permission_callback": public, "callback": embeddable}
    )
    app.register_rest_route("test", "/error", {"permission_callback": public, "callback": failing})
    app.register_rest_route("test", "/answer", {"permission_callback": public, "callback": answer})
    app.register_rest_route("test", "/list", {"permission_callback": public, "callback": listing})
    return app


EMBEDDED = {"hello": "world", "parameter": None}
ERROR = {"code": "wp-api-test-error", "message": "Test message", "data": {"status": 403}}
LINKS = {
    "alternate": [
        {"href": f"{ROOT}/test/embeddable", "embeddable": True},
        {"href": "http://example.com/elsewhere", "embeddable": True},
        {"href": f"{ROOT}/test/embeddable?parameter=x&context=edit"},
    ],
    "up": [{"href": f"{ROOT}/test/embeddable?parameter=up", "embeddable": True}],
    "error": [{"href": f"{ROOT}/test/error", "embeddable": True}],
    "self": [{"href": f"{ROOT}/test/answer"}],
}
ALL_EMBEDDED = {
    "alternate": [EMBEDDED, {}, {}],
    "up": [{"hello": "world", "parameter": "up"}],
    "error": [ERROR],
}


@pytest.mark.parametrize("embed", ["_embed", "_embed=", "_embed=1", "_embed=true", "_embed=TRUE"])
def test_everything_embedded(client_for: ClientFor, embed: str) -> None:
    seen: list[Any] = []
    response = client_for(_app(seen)).get(f"/svc-json/test/answer?{embed}")
    assert response.status_code == 200
    assert response.json() == {"id": 1, "_links": LINKS, "_embedded": ALL_EMBEDDED}
    # Each href once; context=embed unless the link names one; the caller's user.
    assert seen == [("embed", None, 0), ("embed", "up", 0)]


def test_without_embed_nothing_is_fetched(client_for: ClientFor) -> None:
    seen: list[Any] = []
    response = client_for(_app(seen)).get("/svc-json/test/answer")
    assert response.json() == {"id": 1, "_links": LINKS}
    assert seen == []


@pytest.mark.parametrize(
    ("rels", "expected"),
    [
        ("up", {"up": [{"hello": "world", "parameter": "up"}]}),
        ("up,error", {"up": [{"hello": "world", "parameter": "up"}], "error": [ERROR]}),
        ("self", None),
        ("nothing", None),
    ],
)
def test_embed_only_the_rels_asked(client_for: ClientFor, rels: str, expected: Any) -> None:
    data = client_for(_app([])).get(f"/svc-json/test/answer?_embed={rels}").json()
    assert data.get("_embedded") == expected


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ("id", {"id": 1}),
        ("id,_links", {"id": 1, "_links": LINKS}),
        # As in WordPress, asking for ``_embedded`` keeps ``_links`` too.
        ("id,_embedded", {"id": 1, "_links": LINKS, "_embedded": ALL_EMBEDDED}),
        ("id,_embedded.up", {"id": 1, "_links": LINKS, "_embedded": {"up": ALL_EMBEDDED["up"]}}),
        ("id,_links.self", {"id": 1, "_links": LINKS}),
    ],
)
def test_fields_over_links_and_embedded(client_for: ClientFor, fields: str, expected: Any) -> None:
    data = client_for(_app([])).get(f"/svc-json/test/answer?_embed&_fields={fields}").json()
    assert data == expected


def test_list_items_embedded(client_for: ClientFor) -> None:
    data = client_for(_app([])).get("/svc-json/test/list?_embed=up").json()
    assert data == [
        {"id": 1, "_links": LINKS, "_embedded": {"up": ALL_EMBEDDED["up"]}},
        {"plain": True},
        5,
    ]


def test_plain_permalink_links_are_embedded(client_for: ClientFor) -> None:
    app = App(HOME, pretty_permalinks=False)

    def answer(request: Request) -> Response:
        response = Response({"id": 2})
        response.add_link("up", app.rest_url("/test/target"), embeddable=True)
        response.add_link("other", f"{HOME}/not-rest", embeddable=True)
        return response

    app.register_rest_route(
        "test",
        "/target",
        {"permission_callback": public, "callback": lambda r: {"context": r["context"]}},
    )
    app.register_rest_route("test", "/answer", {"permission_callback": public, "callback": answer})
    data = client_for(app).get("/", params={"rest_route": "/test/answer", "_embed": ""}).json()
    assert data["_embedded"] == {"up": [{"context": "embed"}]}


def test_add_link_shape() -> None:
    response = Response({})
    response.add_link("author", "http://x/1", embeddable=True, title="T")
    response.add_link("author", "http://x/2")
    assert response.links == {
        "author": [
            {"href": "http://x/1", "title": "T", "embeddable": True},
            {"href": "http://x/2"},
        ]
    }
    server = App().rest_get_server()
    assert server.prepare_response_for_collection(response) == {"_links": response.links}
    assert server.prepare_response_for_collection({"a": 1}) == {"a": 1}


def test_demo_notes_embed_their_author(client_for: ClientFor) -> None:
    app = App(HOME, clock=lambda: 1_700_000_000)
    register(app)
    app.users.password_params = ScryptParams(n=16, r=1, p=1)
    editor = app.users.create("ed", "pw", roles=("editor",), display_name="Ed Itor")
    app.users.create("quiet", "pw", roles=("subscriber",), display_name="Never wrote")
    request = Request("POST", "/demo/v1/notes", json={"title": "T"})
    request.user = editor
    assert app.rest_do_request(request).status == 201
    client = client_for(app)
    author = {"id": 1, "name": "Ed Itor"}
    assert client.get("/svc-json/demo/v1/notes/1?_embed")
    listing = client.get("/svc-json/demo/v1/notes?_embed=author").json()
    assert listing[0]["_embedded"] == {"author": [author]}
    item = client.get("/svc-json/demo/v1/notes/1?_embed=author").json()
    assert item["_embedded"] == {"author": [author]}
    assert client.get("/svc-json/demo/v1/users/1").json() == author
    hidden = client.get("/svc-json/demo/v1/users/2")  # not an author: not shown
    assert (hidden.status_code, hidden.json()) == (
        404,
        {"code": "rest_user_invalid_id", "message": "Invalid user ID.", "data": {"status": 404}},
    )


# -- ``_envelope`` with ``_embed`` (WordPress's ``test_envelope_param``, ticket 54015) -----------


def _envelope_app() -> App:
    app = App(HOME)

    def embedded_response(request: Request) -> dict[str, Any]:
        # WordPress's ``embedded_response_callback``.
        return {"hello": True, "parameters": request.get_params()}

    def enveloped(request: Request) -> Response:
        response = Response({"amount of arbitrary data": "alot"}, 987)
        response.header("Arbitrary-Header", "value")
        response.header("Multiple", "maybe")
        response.header("Multiple", "yes", False)
        response.add_link("alternate", f"{ROOT}/test/embeddable", embeddable=True)
        return response

    app.register_rest_route(
        "test", "/embeddable", {"permission_callback": public, "callback": embedded_response}
    )

    def linked(request: Request) -> Response:
        response = Response({"id": 3, "title": "T"})
        response.add_link("alternate", f"{ROOT}/test/embeddable", embeddable=True)
        return response

    app.register_rest_route(
        "test", "/enveloped", {"permission_callback": public, "callback": enveloped}
    )
    app.register_rest_route("test", "/linked", {"permission_callback": public, "callback": linked})
    return app


ENVELOPE_LINKS = {"alternate": [{"href": f"{ROOT}/test/embeddable", "embeddable": True}]}
ENVELOPE_HEADERS = {"Arbitrary-Header": "value", "Multiple": "maybe, yes", "Allow": "GET"}


@pytest.mark.parametrize(
    "embed",
    ["_embed", "_embed=", "_embed=1", "_embed=true", "_embed=alternate", "_embed[]=alternate"],
)
@pytest.mark.parametrize("order", ["envelope-first", "embed-first"])
def test_envelope_param(client_for: ClientFor, embed: str, order: str) -> None:
    query = f"_envelope&{embed}" if order == "envelope-first" else f"{embed}&_envelope"
    response = client_for(_envelope_app()).get(f"/svc-json/test/enveloped?{query}")
    assert response.status_code == 200
    assert response.json() == {
        "body": {
            "amount of arbitrary data": "alot",
            "_links": ENVELOPE_LINKS,
            "_embedded": {"alternate": [{"hello": True, "parameters": {"context": "embed"}}]},
        },
        "status": 987,
        "headers": ENVELOPE_HEADERS,
    }


def test_envelope_without_embed_has_links_and_nothing_embedded(client_for: ClientFor) -> None:
    response = client_for(_envelope_app()).get("/svc-json/test/enveloped?_envelope")
    assert response.json() == {
        "body": {"amount of arbitrary data": "alot", "_links": ENVELOPE_LINKS},
        "status": 987,
        "headers": ENVELOPE_HEADERS,
    }


def test_envelope_with_embed_and_fields(client_for: ClientFor) -> None:
    client = client_for(_envelope_app())
    embedded = {"alternate": [{"hello": True, "parameters": {"context": "embed"}}]}
    for fields, body in [
        ("id,_embedded", {"id": 3, "_links": ENVELOPE_LINKS, "_embedded": embedded}),
        ("title", {"title": "T"}),
        ("title,_links", {"title": "T", "_links": ENVELOPE_LINKS}),
    ]:
        response = client.get(f"/svc-json/test/linked?_envelope&_embed&_fields={fields}")
        assert response.json() == {"body": body, "status": 200, "headers": {"Allow": "GET"}}


# -- the root index under ``_fields`` (WordPress's ``test_get_index_fields_name`` and
# ``test_get_index_should_return_help_and_not_name``, ticket 57902) ------------------------

HELP = {"help": [{"href": "https://developer.wordpress.org/rest-api/"}]}


@pytest.mark.parametrize("fields", ["_links", "_embedded"])
def test_get_index_should_return_help_and_not_name(client_for: ClientFor, fields: str) -> None:
    response = client_for(App(HOME)).get(f"/svc-json/?_fields={fields}")
    assert response.status_code == 200
    assert response.json() == {"_links": HELP}


def test_get_index_fields_name(client_for: ClientFor) -> None:
    response = client_for(App(HOME, name="Embedded")).get("/svc-json/?_fields=name")
    assert response.json() == {"name": "Embedded"}


def test_get_index_fields_embedded_with_embed(client_for: ClientFor) -> None:
    # The help link is not embeddable: nothing is fetched, ``_links`` stays.
    response = client_for(App(HOME)).get("/svc-json/?_fields=_embedded&_embed")
    assert response.json() == {"_links": HELP}
