"""``svcrest.store.store_collection``'s own parts: the site a collection reads on the request
path, decided once (the HTTP behaviour is in tests/rest/test_store_collection.py)."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from svcrest import App, StoreCollection
from svcrest.chains import run_chain
from svcrest.http.context import REQUEST_CONTEXT, RequestContext
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.http.user import User
from svcrest.store.changes import Change
from tests.conftest import SiteClient

SCHEMA = {"title": "task", "type": "object", "properties": {"title": {"type": "string"}}}
NOT_BOUND = "StoreCollection is not bound to a site: use app.register_controller"


def test_an_unbound_collection_names_the_missing_binding_wherever_it_needs_the_site() -> None:
    """What :attr:`RestController.app` raises, from each reader of the site."""
    tasks = StoreCollection("todo/v1", "tasks", SCHEMA)
    with pytest.raises(RuntimeError, match=NOT_BOUND):
        tasks.app  # noqa: B018
    with pytest.raises(RuntimeError, match=NOT_BOUND):
        tasks._store()
    with pytest.raises(RuntimeError, match=NOT_BOUND):
        tasks._secret()
    with pytest.raises(RuntimeError, match=NOT_BOUND):
        tasks._collection_url()
    with pytest.raises(RuntimeError, match=NOT_BOUND):
        tasks._shape(Request("GET", "/todo/v1/tasks/1"))


def test_a_bound_collection_reads_the_site_it_was_bound_to() -> None:
    app = App()
    tasks = app.register_controller(StoreCollection("todo/v1", "tasks", SCHEMA))
    assert tasks._bound_site is app is tasks.app
    assert tasks._store() is app.store
    assert tasks._collection_url() == app.rest_url("/todo/v1/tasks")
    app.store.close()


class _CountedStore(App):
    """An App counting the reads of its ``store`` property."""

    store_reads = 0

    @property
    def store(self) -> Any:
        self.store_reads += 1
        return App.store.fget(self)  # type: ignore[attr-defined]


def test_a_collection_reads_its_sites_store_once() -> None:
    """The site's ``store`` (a property of the App) is read on first use only: every item
    read after it uses the same store the property gives; bound again, the collection reads
    the new site's."""
    app = _CountedStore()
    tasks = app.register_controller(StoreCollection("todo/v1", "tasks", SCHEMA))
    item_id = tasks.table.insert({"title": "one"})["id"]
    reads = app.store_reads
    assert reads >= 1
    for _ in range(3):
        assert tasks.table.get(item_id) == tasks.table.get(item_id) is not None
    assert tasks._store() is tasks.table.store is App.store.fget(app)  # type: ignore[attr-defined]
    assert app.store_reads == reads
    other = _CountedStore()
    tasks.bind(other)
    assert tasks._store() is App.store.fget(other) is not App.store.fget(app)  # type: ignore[attr-defined]
    assert other.store_reads == 1
    App.store.fget(app).close()  # type: ignore[attr-defined]
    App.store.fget(other).close()  # type: ignore[attr-defined]


def test_a_collections_table_asks_no_python_call_for_its_store_until_bound_again() -> None:
    """Once the site's store is read, the table's getter is a C callable answering it (no
    ``_store`` call an item read); a new ``bind`` hands the table ``_store`` again, which
    reads the new site's store, and the table then answers that one."""
    app = App()
    tasks = app.register_controller(StoreCollection("todo/v1", "tasks", SCHEMA))
    item = tasks.table.insert({"title": "one"})
    getter = tasks.table._tables.store
    assert not isinstance(getter, types.FunctionType | types.MethodType)
    assert getter() is tasks._store() is app.store is tasks.table.store
    assert tasks.table.get(item["id"]) == item
    other = App()
    tasks.bind(other)
    assert tasks.table._tables.store == tasks._store  # asked again, until it has read
    assert tasks.table.store is other.store is not app.store
    getter = tasks.table._tables.store
    assert not isinstance(getter, types.FunctionType | types.MethodType)
    assert getter() is other.store
    app.store.close()
    other.store.close()


def test_the_collection_url_is_remembered_per_hooks_version_and_site(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Outside a request over TLS the collection's URL (its items' links) is the one
    ``rest_url`` gives, asked once per version of the hooks and current site: a URL filter
    added or removed, a site's home changed or another site made current asks again; a
    request over TLS asks each time (https may be forced for its host) and is not
    remembered."""
    app = App("http://a.test")
    tasks = app.register_controller(StoreCollection("todo/v1", "tasks", SCHEMA))
    given = App.rest_url
    asked: list[str] = []

    def counted(self: App, path: str = "", scheme: str = "json") -> str:
        asked.append(path)
        return given(self, path, scheme)

    monkeypatch.setattr(App, "rest_url", counted)

    def urls(expected: str | None, asks: int) -> None:
        asked.clear()
        assert [tasks._collection_url() for _ in range(3)] == [expected] * 3
        assert len(asked) == asks
        if expected is not None:  # what rest_url gives, the general path
            assert given(app, "/todo/v1/tasks") == expected

    urls("http://a.test/svc-json/todo/v1/tasks", 1)
    urls("http://a.test/svc-json/todo/v1/tasks", 0)

    def prefix(value: str) -> str:
        return "api"

    app.hooks.add_filter("rest_url_prefix", prefix)
    urls("http://a.test/api/todo/v1/tasks", 1)
    app.hooks.remove_filter("rest_url_prefix", prefix)
    urls("http://a.test/svc-json/todo/v1/tasks", 1)
    app.add_site(1, "http://b.test/blog")
    urls("http://b.test/blog/svc-json/todo/v1/tasks", 1)
    app.add_site(2, "http://c.test", pretty_permalinks=False)
    app.blog_id = 2
    urls("http://c.test/?rest_route=/todo/v1/tasks", 1)
    app.blog_id = 1
    urls("http://b.test/blog/svc-json/todo/v1/tasks", 1)
    token = REQUEST_CONTEXT.set(RequestContext(secure=True, host="b.test"))
    try:
        urls("https://b.test/blog/svc-json/todo/v1/tasks", 3)
    finally:
        REQUEST_CONTEXT.reset(token)
    urls("http://b.test/blog/svc-json/todo/v1/tasks", 0)

    def filtered(url: str, *args: Any) -> str:
        return url + "?filtered"

    app.hooks.add_filter("rest_url", filtered)
    urls(None, 0)
    app.hooks.remove_filter("rest_url", filtered)
    urls("http://b.test/blog/svc-json/todo/v1/tasks", 1)
    app.store.close()


def test_the_class_own_entity_tag_is_made_without_calling_version_tag(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without a ``version_tag`` of its own, a collection's ``ETag`` is the quoted version,
    what the class's ``version_tag`` gives, made without calling it; a subclass's own
    ``version_tag`` is called."""
    called: list[tuple[int, int]] = []
    given = StoreCollection.version_tag

    def counted(self: StoreCollection, item_id: int, version: int) -> str:
        called.append((item_id, version))
        return given(self, item_id, version)

    monkeypatch.setattr(StoreCollection, "version_tag", counted)
    tasks = StoreCollection("todo/v1", "tasks", SCHEMA)
    assert [tasks._tag({"id": 3, "version": v}) for v in (1, 7, 12)] == ['"1"', '"7"', '"12"']
    assert called == []
    assert tasks._tag({"id": 3, "version": 7}) == f'"{given(tasks, 3, 7)}"'

    class Tagged(StoreCollection):
        def version_tag(self, item_id: int, version: int) -> str:
            called.append((item_id, version))
            return f"{item_id}-{version}"

    assert Tagged("todo/v1", "tasks", SCHEMA)._tag({"id": 3, "version": 7}) == '"3-7"'
    assert called == [(3, 7)]


def _checked(result: Any) -> Any:
    """A permission check's answer, comparable: True, False or an error's code and status."""
    return (result.code, result.status) if not isinstance(result, bool) else result


@pytest.mark.parametrize("write", ["edit_posts", lambda user, item: user.id == 1])
def test_an_anonymous_reads_allow_answer_is_the_general_checks(
    write: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``update_item_permissions_check`` and ``delete_item_permissions_check`` answer an
    anonymous GET or HEAD (the ``Allow`` header of a read) without the general check, with
    its answer; every other request (a write, a logged-in user, a callable rule that must
    see the item) goes through it, and answers as it does."""
    app = App()
    tasks = app.register_controller(StoreCollection("todo/v1", "tasks", SCHEMA, write=write))
    tasks.table.insert({"title": "one"})
    general = StoreCollection._changeable
    asked: list[str] = []

    def counted(self: StoreCollection, request: Request, deleting: bool) -> Any:
        asked.append(request.method)
        return general(self, request, deleting)

    monkeypatch.setattr(StoreCollection, "_changeable", counted)
    admin = User(1, "boss", roles=("administrator",))
    assert admin.can("edit_posts")
    for method in ("GET", "HEAD", "POST", "PUT", "DELETE"):
        for user in (None, admin):
            request = Request(method, "/todo/v1/tasks/1")
            request.url_params = {"id": "1"}
            if user is not None:
                request.user = user
            for deleting, check in (
                (False, tasks.update_item_permissions_check),
                (True, tasks.delete_item_permissions_check),
            ):
                asked.clear()
                answer = _checked(check(request))
                assert answer == _checked(general(tasks, request, deleting)), (method, user)
                fast = user is None and method in ("GET", "HEAD") and not callable(write)
                assert asked == ([] if fast else [method]), (method, user)
                assert answer is False if fast else True
    app.store.close()


def test_an_items_shaped_data_is_made_without_a_comprehension() -> None:
    """The answer's keys are copied by a loop of ``_shaped_data`` itself (a comprehension
    would be a Python call of its own): the keys the shape names that the item has, in the
    shape's order, nested values filtered by the context."""
    from svcrest.store.store_collection import _shaped_data

    code = _shaped_data.__code__
    assert [const for const in code.co_consts if isinstance(const, types.CodeType)] == []
    nested = {"type": "object", "properties": {"a": {"context": ["edit"]}, "b": {}}}
    shape = (("title", "missing", "meta", "id"), (("meta", nested),), "view")
    item = {"id": 3, "meta": {"a": 1, "b": 2}, "title": "t", "other": 0}
    data = _shaped_data(item, shape)
    assert list(data.items()) == [("title", "t"), ("meta", {"b": 2}), ("id", 3)]
    assert item["meta"] == {"a": 1, "b": 2}  # the item's own value left as it was


ClientFor = Callable[..., SiteClient]
_OTHER = {"date", "x-request-id", "server"}


def _answer(response: httpx.Response) -> tuple[int, Any, list[tuple[str, str]]]:
    lines = [(k, v) for k, v in response.headers.multi_items() if k not in _OTHER]
    return response.status_code, response.json(), lines


@pytest.mark.parametrize("headers", [{}, {"Origin": "http://example.com"}])
def test_an_item_get_without_a_query_answers_as_one_with_a_query(
    client_for: ClientFor, headers: dict[str, str]
) -> None:
    """Reading the context and ``_fields`` (and the argument step) hand out no empty query
    bucket, so the item GET stays on the default finishing step; its answer is the general
    chains' (a query the collection ignores)."""
    app = App()
    tasks = app.register_controller(StoreCollection("todo/v1", "tasks", SCHEMA, read=None))
    item = tasks.table.insert({"title": "one"})
    client = client_for(app)
    path = f"/svc-json/todo/v1/tasks/{item['id']}"
    plain, queried = (
        client.get(path, headers=headers),
        client.get(path + "?unused=1", headers=headers),
    )
    assert _answer(plain) == _answer(queried)
    assert plain.json()["title"] == "one"
    request = Request("GET", f"/todo/v1/tasks/{item['id']}")
    assert app.rest_get_server().dispatch(request).status == 200
    assert request.may_have_query is False
    app.store.close()


_ITEM_ROUTE = "/todo/v1/tasks/(?P<id>[\\d]+)"
_USERS = {
    "anonymous": User(0),
    "subscriber": User(3, "sub", roles=("subscriber",)),
    "author": User(2, "writer", roles=("author",)),
    "owner": User(1, "boss", roles=("administrator",)),
}


def _owned_by_one(user: User, item: Any) -> bool:
    return user.id == 1 and (item is None or item.get("title") != "secret")


@pytest.mark.parametrize("read", [None, "read", "edit_posts", _owned_by_one])
@pytest.mark.parametrize(
    ("write", "owner_field"),
    [("edit_posts", None), ("edit_posts", "author"), (_owned_by_one, None), ("edit_pages", None)],
)
def test_the_item_routes_allow_shortcut_answers_as_its_three_checks(
    read: Any, write: Any, owner_field: str | None
) -> None:
    """For every user, rule, method and context, the item route's Allow value is what its
    three permission checks answer (WordPress's rest_send_allow_header asks each): the
    shortcut's where the rules decide it without the item, the checks' elsewhere."""
    app = App()
    tasks = app.register_controller(
        StoreCollection("todo/v1", "tasks", SCHEMA, read=read, write=write, owner_field=owner_field)
    )
    mine = tasks.table.insert({"title": "one"} | ({owner_field: 1} if owner_field else {}))
    theirs = tasks.table.insert({"title": "two"} | ({owner_field: 2} if owner_field else {}))
    entry = app.rest_get_server().table.get(_ITEM_ROUTE)
    assert entry is not None and entry.allow_verdicts == tasks._item_verdicts
    told = 0
    for method in ("GET", "HEAD", "OPTIONS", "POST", "DELETE"):
        for name, user in _USERS.items():
            for context in (None, "view", "embed", "edit"):
                for item in (mine, theirs, {"id": 99}):
                    request = Request(method, f"/todo/v1/tasks/{item['id']}")
                    request.url_params = {"id": str(item["id"])}
                    request.user = user
                    if context is not None:
                        request.set_param("context", context)
                    general = run_chain(entry.allow_chain, {}, request)
                    told += tasks._item_verdicts(request) is not None
                    assert entry.allow_value(request) == general, (method, name, context, item)
    plain = not callable(read) and not callable(write)
    assert (told > 0) is plain
    app.store.close()


def test_an_anonymous_item_get_asks_its_gate_alone(
    client_for: ClientFor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over HTTP: the gate asks the read check; the Allow header's value is the shortcut's
    (the steps asking the three checks are not run), the same as the checks give."""
    from svcrest.rest.routing import table as table_module

    app = App()
    tasks = app.register_controller(StoreCollection("todo/v1", "tasks", SCHEMA, read="read"))
    item = tasks.table.insert({"title": "one"})
    entry = app.rest_get_server().table.get(_ITEM_ROUTE)
    assert entry is not None
    request = Request("GET", f"/todo/v1/tasks/{item['id']}")
    request.url_params = {"id": str(item["id"])}
    assert run_chain(entry.allow_chain, {}, request) == ""  # anonymous: no read capability

    def not_asked(allowed: Any, request: Request) -> Any:
        raise AssertionError("a permission callback was asked for Allow")

    monkeypatch.setattr(table_module, "_allow_asker", lambda *args: not_asked)
    entry.prepare()  # its handlers' Allow steps made again: each refuses to run
    assert entry.allow_verdicts is not None
    client = client_for(app)
    refused = client.get(f"/svc-json/todo/v1/tasks/{item['id']}")
    assert refused.status_code == 401 and "allow" not in refused.headers
    tasks.read = None
    answered = client.get(f"/svc-json/todo/v1/tasks/{item['id']}")
    assert answered.status_code == 200 and answered.headers["allow"] == "GET"
    monkeypatch.undo()
    entry.prepare()
    assert run_chain(entry.allow_chain, {}, request) == "GET"
    app.store.close()


class _OwnUpdates(StoreCollection):
    def update_item_permissions_check(self, request: Request) -> Any:
        return True


class _OwnChanges(StoreCollection):
    def _changeable(self, request: Request, deleting: bool) -> Any:
        return not deleting


@pytest.mark.parametrize(
    ("kind", "allow"), [(_OwnUpdates, "GET, POST, PUT, PATCH"), (_OwnChanges, "GET")]
)
def test_a_subclass_with_its_own_checks_has_them_asked(
    kind: type[StoreCollection], allow: str, client_for: ClientFor
) -> None:
    app = App()
    tasks = app.register_controller(kind("todo/v1", "tasks", SCHEMA))
    item = tasks.table.insert({"title": "one"})
    entry = app.rest_get_server().table.get(_ITEM_ROUTE)
    assert entry is not None and entry.allow_verdicts is None
    answered = client_for(app).get(f"/svc-json/todo/v1/tasks/{item['id']}")
    assert answered.status_code == 200 and answered.headers["allow"] == allow
    app.store.close()


def test_a_handler_added_to_the_item_route_turns_the_shortcut_off(client_for: ClientFor) -> None:
    app = App()
    tasks = app.register_controller(StoreCollection("todo/v1", "tasks", SCHEMA))
    item = tasks.table.insert({"title": "one"})
    app.register_rest_route(
        "todo/v1",
        "/tasks/(?P<id>[\\d]+)",
        {"methods": "LINK", "callback": lambda request: {}, "permission_callback": lambda r: True},
    )
    entry = app.rest_get_server().table.get(_ITEM_ROUTE)
    assert entry is not None and entry.allow_verdicts is None
    answered = client_for(app).get(f"/svc-json/todo/v1/tasks/{item['id']}")
    assert answered.status_code == 200 and answered.headers["allow"] == "GET, LINK"
    app.store.close()


def _response(response: Any) -> Any:
    return response.status, response.data, response.links, response.header_tuple()


def test_an_item_get_answers_as_prepare_item_for_response_without_its_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``get_item`` of the class's own rendering makes the answer itself (no
    ``prepare_item_for_response`` or ``_tag`` call): the same status, data, links and lines
    as the general path, for each context and ``_fields``; a subclass rendering or tagging
    its own way is asked."""
    app = App()
    schema = SCHEMA | {
        "properties": {
            "title": {"type": "string", "context": ["view", "edit", "embed"]},
            "note": {"type": "string", "default": "", "context": ["edit"]},
        }
    }
    tasks = app.register_controller(StoreCollection("todo/v1", "tasks", schema, read=None))
    item = tasks.table.insert({"title": "one", "note": "n"})
    general = StoreCollection.prepare_item_for_response
    called: list[str] = []

    def counted(self: StoreCollection, item: Any, request: Request) -> Any:
        called.append(type(self).__name__)
        return general(self, item, request)

    monkeypatch.setattr(StoreCollection, "prepare_item_for_response", counted)
    admin = User(1, "boss", roles=("administrator",))
    for context in (None, "view", "embed", "edit"):
        for fields in (None, "id,note", ["title"]):
            request = Request("GET", f"/todo/v1/tasks/{item['id']}")
            request.url_params = {"id": item["id"]}
            request.user = admin
            for name, value in (("context", context), ("_fields", fields)):
                if value is not None:
                    request.set_param(name, value)
            fast = tasks.get_item(request)
            assert called == []
            expected = general(tasks, item, request)
            expected.set_header_line("ETag", f'"{item["version"]}"')
            assert _response(fast) == _response(expected), (context, fields)

    class Tagged(StoreCollection):
        def version_tag(self, item_id: int, version: int) -> str:
            return f"{item_id}-{version}"

    class Shown(StoreCollection):
        def prepare_item_for_response(self, item: Any, request: Request) -> Any:
            response = super().prepare_item_for_response(item, request)
            response.data["shown"] = True
            return response

    for kind, path in ((Tagged, "tagged"), (Shown, "shown")):
        other = app.register_controller(kind("todo/v1", path, schema, table=path))
        one = other.table.insert({"title": "one"})
        request = Request("GET", f"/todo/v1/{path}/{one['id']}")
        request.url_params = {"id": one["id"]}
        called.clear()
        answer = other.get_item(request)
        assert isinstance(answer, Response)
        assert called == [kind.__name__]
        assert dict(answer.header_tuple())["ETag"] == ('"1-1"' if kind is Tagged else '"1"')
        assert answer.data.get("shown") is (True if kind is Shown else None)
    app.store.close()


def test_a_feeds_view_worked_out_once_a_read_is_the_views_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The feed's view of a change for one subscriber, worked out once for the changes of
    a read (``viewing``), is exactly what ``view`` gives (the GET's answer: the keys of
    the ``view`` context, ``_fields`` applied, ``_links`` unless ``_fields`` leaves them
    out), without asking ``prepare_item_for_response``; a deletion shows its id. None
    (``view`` asked per change) when the answer is not the class's own."""
    app = App()
    schema = SCHEMA | {
        "properties": {
            "title": {"type": "string", "context": ["view", "edit", "embed"]},
            "note": {"type": "string", "default": "", "context": ["edit"]},
            "tags": {
                "type": "object",
                "context": ["view", "edit"],
                "properties": {
                    "a": {"type": "string", "context": ["view"]},
                    "b": {"type": "string", "context": ["edit"]},
                },
            },
        }
    }
    tasks = app.register_controller(StoreCollection("todo/v1", "tasks", schema, read=None))
    item = tasks.table.insert({"title": "one", "note": "n", "tags": {"a": "x", "b": "y"}})
    render = tasks._feed_render
    created = Change(1, "task", item["id"], "created", 1.0)
    deleted = Change(2, "task", 99, "deleted", 2.0)
    general = StoreCollection.prepare_item_for_response
    called: list[int] = []

    def counted(self: StoreCollection, item: Any, request: Request) -> Any:
        called.append(1)
        return general(self, item, request)

    url = f"http://127.0.0.1:8000/svc-json/todo/v1/tasks/{item['id']}"
    links = {
        "self": [{"href": url}],
        "collection": [{"href": "http://127.0.0.1:8000/svc-json/todo/v1/tasks"}],
    }
    expected = {
        None: {"id": item["id"], "title": "one", "tags": {"a": "x"}, "_links": links},
        "id,note": {"id": item["id"]},
        "title,_links": {"title": "one", "_links": links},
        "tags.a": {"tags": {"a": "x"}},
    }
    for fields, shown in expected.items():
        request = Request("GET", "/todo/v1/tasks/changes")
        request.site = app
        if fields is not None:
            request.set_param("_fields", fields)
        monkeypatch.setattr(StoreCollection, "prepare_item_for_response", general)
        assert render.view(created, item, request) == shown, fields
        view = render.viewing(request)
        assert view is not None
        monkeypatch.setattr(StoreCollection, "prepare_item_for_response", counted)
        assert view(created, item) == shown, fields
        assert view(deleted, None) == {"id": 99}
        assert called == []
    monkeypatch.setattr(StoreCollection, "prepare_item_for_response", general)
    request = Request("GET", "/todo/v1/tasks/changes")
    request.site = app
    monkeypatch.setattr(tasks, "prepare_item_for_response", counted)  # this instance's own
    assert render.viewing(request) is None
    monkeypatch.undo()
    app.hooks.add_filter("rest_prepare_task", lambda response, *_: response)
    assert render.viewing(request) is None

    class Linked(StoreCollection):
        def prepare_links(self, item: Any) -> dict[str, list[dict[str, Any]]]:
            return {"up": [{"href": "/"}]}

    linked = app.register_controller(Linked("todo/v1", "linked", SCHEMA, table="linked"))
    assert linked._feed_render.viewing(request) is None
    app.store.close()
