"""A change feed's ``data`` is the item as the same subscriber's GET of it shows it, ``_fields``
included: WordPress applies ``_fields`` (``rest_filter_response_fields``) after the
``rest_prepare_<type>`` filters, so a field such a filter adds is left out unless ``_fields``
names it, and ``_links`` is kept only when ``_fields`` names ``_links`` or ``_embedded`` (or
nothing). Each event's ``data`` is compared with a real GET of the item with the same
``_fields`` by the same user: the Server-Sent Event's ``data`` line byte for byte with the
GET's body, the long-poll's entry dict for dict. A ``StoreCollection``'s feed (its rendering
shared per viewer without a prepare filter, per subscriber with one) and a controller's
(``app.changes.record``), on both store engines, through the App's ASGI interface."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any, cast

import orjson
import pytest

from svcrest import App
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.store.change_feed import UNKEYED, fields_key
from tests.rest.conftest import Clock, cursor
from tests.rest.feed_sites import get_body, next_frame, opened, run
from tests.rest.test_change_streams import JSONL, SSE, stream
from tests.rest.test_controller_changes import Books
from tests.rest.test_store_collection import TASKS, ClientFor, Site

#: The ``_fields`` a subscriber asks for (the empty one: none), each a GET and a feed.
QUERIES = [
    "",
    "_fields=id,title",
    "_fields=title,_links",
    "_fields=id,_links.self",
    "_fields=id,extra",
    "_fields=priority,_embedded",
    "_fields[]=title&_fields[]=extra",
]


def add_extra(response: Response, item: Any, request: Request) -> Response:
    """A ``rest_prepare_<type>`` filter adding two fields (``_fields`` may name ``extra``)."""
    response.data["extra"] = f"{item['title']}!"
    response.data["other"] = request.user.id
    return response


async def polled(app: App, path: str, headers: Mapping[str, str], query: str) -> Any:
    """The long-poll answer of the feed at ``path`` from the log's start."""
    return orjson.loads(await get_body(app, path, headers, f"since={cursor(0)}&{query}"))


@pytest.mark.parametrize("prepared", [False, True], ids=["shared", "prepare-filter"])
def test_a_collection_feeds_each_subscriber_its_gets_fields(
    store_location: str | None, clock: Clock, prepared: bool
) -> None:
    site = Site(store_location, clock=clock)
    site.tasks.feed.heartbeat = 0.3
    if prepared:
        site.app.hooks.add_filter("rest_prepare_task", add_extra)
    try:

        async def check() -> None:
            asked: list[tuple[Mapping[str, str], str]] = [(SSE, query) for query in QUERIES]
            asked += [({**SSE, **site.headers["al"]}, query) for query in QUERIES]
            streams = await opened(site, asked)
            await asyncio.to_thread(site.seed, "plan")
            for one, (headers, query) in zip(streams, asked, strict=True):
                plain = {name: value for name, value in headers.items() if name != "Accept"}
                body = await get_body(site.app, f"{TASKS}/1", plain, query)
                frame = await next_frame(one)
                assert frame == b"id: %s\nevent: created\ndata: %s\n\n" % (
                    cursor(1).encode(),
                    body,
                ), (query, frame, body)
                answer = await polled(site.app, f"{TASKS}/changes", plain, query)
                assert answer == {
                    "changes": [{"id": cursor(1), "event": "created", "data": orjson.loads(body)}],
                    "cursor": cursor(1),
                }, query
            for one in streams:
                await one.leave()

        run(check())
    finally:
        site.app.store.close()


def test_the_expected_views_are_the_gets(store_location: str | None, clock: Clock) -> None:
    """The GETs the feeds are compared with show what WordPress's would (so that the
    comparison above cannot pass on two equal mistakes)."""
    site = Site(store_location, clock=clock)
    site.app.hooks.add_filter("rest_prepare_task", add_extra)
    site.seed("plan")
    root = "http://127.0.0.1:8000/svc-json/todo/v1/tasks"
    links = {"self": [{"href": f"{root}/1"}], "collection": [{"href": root}]}
    try:

        async def check() -> dict[str, Any]:
            return {
                query: orjson.loads(await get_body(site.app, f"{TASKS}/1", {}, query))
                for query in QUERIES
            }

        assert run(check()) == {
            "": {
                "id": 1,
                "title": "plan",
                "priority": 0,
                "done": False,
                "author": 1,
                "extra": "plan!",
                "other": 0,
                "_links": links,
            },
            "_fields=id,title": {"id": 1, "title": "plan"},
            "_fields=title,_links": {"title": "plan", "_links": links},
            "_fields=id,_links.self": {"id": 1, "_links": links},
            "_fields=id,extra": {"id": 1, "extra": "plan!"},
            "_fields=priority,_embedded": {"priority": 0, "_links": links},
            "_fields[]=title&_fields[]=extra": {"title": "plan", "extra": "plan!"},
        }
    finally:
        site.app.store.close()


class Shelf(Books):
    """Books answered as ``RestController`` prepares an item: ``_fields``, ``self`` and
    ``collection`` links, the filter ``rest_prepare_book``."""

    def get_item(self, request: Request) -> Response | RestError:
        title = self.books.get(request["id"])
        if title is None:
            return RestError("rest_book_invalid_id", "Invalid book ID.", {"status": 404})
        return self.prepare_item_for_response({"id": request["id"], "title": title}, request)


@pytest.mark.parametrize("prepared", [False, True], ids=["plain", "prepare-filter"])
def test_a_controllers_feed_gives_each_subscriber_its_gets_fields(
    store_location: str | None, clock: Clock, prepared: bool
) -> None:
    app = App(secret_key="k" * 32, store=store_location, clock=clock)
    books = app.register_controller(Shelf())
    if prepared:
        app.hooks.add_filter("rest_prepare_book", add_extra)
    path = "/svc-json/shelf/v1/books"
    queries = ["", "_fields=title", "_fields=title,_links", "_fields=id,extra"]
    try:

        async def check() -> None:
            asked: list[tuple[Mapping[str, str], str]] = [(SSE, query) for query in queries]
            shelf = cast(Site, SimpleNamespace(app=app))
            streams = await opened(shelf, asked, f"{path}/changes")
            await asyncio.to_thread(books.add, "Dune")
            for one, query in zip(streams, queries, strict=True):
                body = await get_body(app, f"{path}/1", {}, query)
                frame = await next_frame(one)
                assert frame == b"id: %s\nevent: created\ndata: %s\n\n" % (
                    cursor(1).encode(),
                    body,
                ), (query, frame, body)
                answer = await polled(app, f"{path}/changes", {}, query)
                assert answer["changes"][0]["data"] == orjson.loads(body), query
                await one.leave()

        run(check())
    finally:
        app.store.close()


@pytest.mark.parametrize("prepared", [False, True], ids=["shared", "prepare-filter"])
def test_a_long_poll_keeps_its_answer_and_gives_each_entry_the_gets_fields(
    site: Site, client_for: ClientFor, prepared: bool
) -> None:
    """On both adapters (WSGI answers every feed by long-polling): the site's ``_fields``
    filter leaves the answer's ``changes`` and ``cursor`` alone."""
    if prepared:
        site.app.hooks.add_filter("rest_prepare_task", add_extra)
    site.seed("plan")
    client = client_for(site.app)
    for query in QUERIES:
        item = client.get(f"{TASKS}/1?{query}")
        assert item.status_code == 200
        answer = client.get(f"{TASKS}/changes?since={cursor(0)}&{query}")
        assert answer.status_code == 200
        assert answer.json() == {
            "changes": [{"id": cursor(1), "event": "created", "data": item.json()}],
            "cursor": cursor(1),
        }, query


@pytest.mark.parametrize(
    ("fields", "key"),
    [
        (None, None),
        ("id,title", "id,title"),
        (["title", "extra"], ("title", "extra")),
        (["title", 3], UNKEYED),
        ({"k": "id"}, UNKEYED),
        (7, UNKEYED),
    ],
)
def test_a_subscribers_fields_as_part_of_its_viewer_key(fields: Any, key: Any) -> None:
    """The one decision both feeds' viewer keys take ``_fields`` from: a string as it is,
    names as a tuple, anything else not shared."""
    request = Request("GET", "/demo/v1/notes/changes")
    if fields is not None:
        request.set_param("_fields", fields)
    found = fields_key(request)
    assert found is key if key is None or key is UNKEYED else found == key


def test_the_feed_leaves_the_requests_fields_as_the_client_sent_them(
    site: Site, client_for: ClientFor
) -> None:
    """The feed's route says its answer applied ``_fields`` (the handler option
    ``fields_applied``) instead of moving them out of the request's query: the filters after
    the callback and after dispatch see the query as sent, and no URL parameter."""
    seen: list[tuple[str, Any, bool]] = []

    def after_callbacks(response: Any, handler: Any, request: Request) -> Any:
        seen.append(("after", request.query_params.get("_fields"), "_fields" in request.url_params))
        return response

    def post_dispatch(response: Any, server: Any, request: Request) -> Any:
        seen.append(("post", request.query_params.get("_fields"), "_fields" in request.url_params))
        return response

    site.app.hooks.add_filter("rest_request_after_callbacks", after_callbacks)
    site.app.hooks.add_filter("rest_post_dispatch", post_dispatch, 20)
    site.seed("plan")
    client = client_for(site.app)
    answer = client.get(f"{TASKS}/changes?since={cursor(0)}&_fields=id,title")
    assert answer.status_code == 200
    assert seen == [("after", "id,title", False), ("post", "id,title", False)]
    routes = site.app.rest_get_server().get_routes("todo/v1")
    assert [one.get("fields_applied") for one in routes["/todo/v1/tasks/changes"]] == [True]


def test_a_long_poll_with_fields_answers_its_exact_body(site: Site, client_for: ClientFor) -> None:
    """On both adapters: the whole answer, each entry's ``data`` shaped by ``_fields``
    (WSGI answers a stream's ``Accept`` by long-polling too; ASGI streams it, below)."""
    site.seed("plan")
    client = client_for(site.app)
    accepts: list[dict[str, str]] = [{}]
    if client.adapter == "wsgi":
        accepts += [SSE, JSONL]
    first = cursor(1).encode()
    for headers in accepts:
        for query, data in [
            ("_fields=id,title", b'{"id":1,"title":"plan"}'),
            ("_fields=done", b'{"done":false}'),
            ("_fields=changes,cursor", b"{}"),
        ]:
            answer = client.get(f"{TASKS}/changes?since={cursor(0)}&{query}", headers=headers)
            assert answer.status_code == 200
            assert answer.content == (
                b'{"changes":[{"id":"%s","event":"created","data":%s}],"cursor":"%s"}'
                % (first, data, first)
            ), (headers, query)


def test_streams_with_fields_send_their_exact_frames(site: Site) -> None:
    """Over ASGI: a Server-Sent Event and a JSON line, each entry's ``data`` shaped by
    ``_fields``, from a feed whose request keeps its query."""
    site.seed("plan")
    first = cursor(1).encode()
    query = f"since={cursor(0)}&_fields=id,title"

    async def check() -> None:
        async with stream(site.app, SSE, query) as events:
            assert await next_frame(events) == (
                b'id: %s\nevent: created\ndata: {"id":1,"title":"plan"}\n\n' % first
            )
        async with stream(site.app, JSONL, query) as lines:
            assert await lines.until(b"\n") == b"\n"  # the keep-alive: a blank line
            assert await lines.until(b"\n") == (
                b'{"id":"%s","event":"created","data":{"id":1,"title":"plan"}}\n' % first
            )

    run(check())
