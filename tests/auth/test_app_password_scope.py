"""Application passwords with a scope: the namespaces they may reach and read-only, fixed at
creation, stored on both engines, enforced after matching (also for batch requests)."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from svcrest import App, Request, Response, public
from svcrest.auth.passwords import ScryptParams
from svcrest.auth.users import AUTH_SCHEMA, UserStore
from svcrest.http.scope import AppPasswordScope, clean_scope
from svcrest.store import open_store
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]

FAST = ScryptParams(n=16, r=1, p=1)
HOME = "http://127.0.0.1:8000"
REST = "/svc-json"
SCOPE_ERROR = {
    "code": "rest_application_password_scope",
    "message": "This application password may not be used for this request.",
    "data": {"status": 403},
}


class Site:
    """alice (editor); ``demo/v1`` (GET/POST /me, POST /write, both in batches) and
    ``other/v1`` (GET /thing)."""

    def __init__(self, store: str | None) -> None:
        self.app = App(HOME, clock=lambda: 1_700_000_000.0, secret_key="k", store=store)
        self.app.users.password_params = FAST
        self.alice = self.app.users.create("alice", "alice-pw", roles=("editor",))
        batch = {"v1": True}
        self.app.register_rest_route(
            "demo/v1",
            "/me",
            {
                "methods": "GET, POST",
                "callback": lambda r: {"id": r.user.id},
                "permission_callback": public,
                "allow_batch": batch,
            },
        )
        self.app.register_rest_route(
            "demo/v1",
            "/write",
            {
                "methods": "POST",
                "callback": lambda r: {"written": r.user.id},
                "permission_callback": lambda r: r.user.can("edit_notes"),
                "allow_batch": batch,
            },
        )
        self.app.register_rest_route(
            "other/v1",
            "/thing",
            {
                "methods": "GET, POST",
                "callback": self.thing,
                "permission_callback": public,
                "allow_batch": batch,
            },
        )

    @staticmethod
    def thing(request: Request) -> dict[str, Any]:
        return {"thing": request.user.id}

    def password(self, scope: list[str] | None = None, read_only: bool = False) -> dict[str, str]:
        password, _ = self.app.users.create_application_password(
            self.alice.id, "agent", scope=scope, read_only=read_only
        )
        token = base64.b64encode(f"alice:{password}".encode()).decode()
        return {"Authorization": f"Basic {token}"}


@pytest.fixture
def site(store_location: str | None) -> Iterator[Site]:
    made = Site(store_location)
    yield made
    made.app.store.close()


# -- the store ------------------------------------------------------------------------------


def test_scope_and_read_only_are_stored_and_listed(site: Site) -> None:
    users = site.app.users
    _, scoped = users.create_application_password(
        site.alice.id, "agent", scope=["/notes/v1/", "other/v1", "notes/v1"], read_only=True
    )
    _, plain = users.create_application_password(site.alice.id, "plain")
    assert (scoped["scope"], scoped["read_only"]) == (["notes/v1", "other/v1"], True)
    listed = users.list_application_passwords(site.alice.id)
    assert [(item["name"], item["scope"], item["read_only"]) for item in listed] == [
        ("agent", ["notes/v1", "other/v1"], True),
        ("plain", None, False),
    ]
    assert users.get_application_password(site.alice.id, scoped["uuid"]) == scoped
    assert plain["scope"] is None


def test_verify_answers_the_scope(site: Site) -> None:
    users = site.app.users
    scoped_pw, scoped = users.create_application_password(site.alice.id, "agent", scope=["demo/v1"])
    read_pw, read = users.create_application_password(site.alice.id, "reader", read_only=True)
    plain_pw, plain = users.create_application_password(site.alice.id, "plain")
    found = users.verify_application_password("alice", scoped_pw)
    assert found is not None and found[1:] == (
        scoped["uuid"],
        AppPasswordScope(("demo/v1",), False),
    )
    found = users.verify_application_password("alice", read_pw)
    assert found is not None and found[1:] == (read["uuid"], AppPasswordScope(None, True))
    found = users.verify_application_password("alice", plain_pw)
    assert found is not None and found[1:] == (plain["uuid"], None)


@pytest.mark.parametrize(
    ("scope", "message"),
    [
        ([], "scope must name at least one namespace"),
        ("demo/v1", "scope must be a list of namespaces"),
        ([3], "scope must be a list of namespaces"),
        (["demo v1"], "'demo v1' is not a REST namespace"),
        (["demo//v1"], "'demo//v1' is not a REST namespace"),
        ([f"n{i}/v1" for i in range(21)], "scope may name at most 20 namespaces"),
    ],
)
def test_a_bad_scope_is_refused(site: Site, scope: Any, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        site.app.users.create_application_password(site.alice.id, "agent", scope=scope)
    assert str(raised.value) == message
    assert site.app.users.list_application_passwords(site.alice.id) == []


def test_clean_scope_keeps_order_and_drops_repeats() -> None:
    assert clean_scope(None) is None
    assert clean_scope(["b/v1", "/a/v2/", "b/v1"]) == ("b/v1", "a/v2")


def test_a_store_made_before_scopes_migrates(store_location: str | None, tmp_path: Any) -> None:
    location = store_location or str(tmp_path / "site.db")
    store = open_store(location)
    try:
        store.migrate("auth", AUTH_SCHEMA[:2])
        with store.transaction() as conn:
            conn.execute(
                "INSERT INTO users (login, login_key, display_name, roles, password_hash,"
                " registered) VALUES ('old', 'old', 'old', 'editor', 'x', 1)"
            )
            user_id = conn.execute("SELECT id FROM users").fetchone()[0]
            conn.execute(
                "INSERT INTO application_passwords (uuid, user_id, name, password_hash,"
                " created) VALUES ('u-1', ?, 'before', 'h', 5)",
                (user_id,),
            )
        from svcrest.hooks import Hooks

        users = UserStore(store, Hooks())
        assert users.list_application_passwords(int(user_id)) == [
            {
                "uuid": "u-1",
                "name": "before",
                "created": 5,
                "last_used": None,
                "last_ip": None,
                "scope": None,
                "read_only": False,
            }
        ]
    finally:
        store.close()


# -- enforcement over HTTP ------------------------------------------------------------------


def test_a_scoped_password_reaches_only_its_namespaces(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    headers = site.password(scope=["demo/v1"])
    me = client.get(f"{REST}/demo/v1/me", headers=headers)
    assert (me.status_code, me.json()) == (200, {"id": site.alice.id})
    written = client.post(f"{REST}/demo/v1/write", headers=headers)
    assert (written.status_code, written.json()) == (200, {"written": site.alice.id})
    for method in ("GET", "POST"):
        other = client.request(method, f"{REST}/other/v1/thing", headers=headers)
        assert (other.status_code, other.json()) == (403, SCOPE_ERROR)
    # Its own user's application passwords are outside it: no minting an unscoped one.
    minted = client.post(
        f"{REST}/svc/v2/users/me/application-passwords", json={"name": "x"}, headers=headers
    )
    assert (minted.status_code, minted.json()) == (403, SCOPE_ERROR)
    assert len(site.app.users.list_application_passwords(site.alice.id)) == 1


def test_a_read_only_password_only_reads(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    headers = site.password(read_only=True)
    for path in ("/demo/v1/me", "/other/v1/thing"):
        read = client.get(REST + path, headers=headers)
        assert read.status_code == 200
        assert client.request("HEAD", REST + path, headers=headers).status_code == 200
        assert client.request("OPTIONS", REST + path, headers=headers).status_code == 200
        wrote = client.post(REST + path, headers=headers)
        assert (wrote.status_code, wrote.json()) == (403, SCOPE_ERROR)


def test_scoped_and_read_only_together(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    headers = site.password(scope=["demo/v1"], read_only=True)
    assert client.get(f"{REST}/demo/v1/me", headers=headers).status_code == 200
    for method, path in (("POST", "/demo/v1/me"), ("GET", "/other/v1/thing")):
        answer = client.request(method, REST + path, headers=headers)
        assert (answer.status_code, answer.json()) == (403, SCOPE_ERROR)


def test_a_password_without_scope_and_other_users_are_unchanged(
    site: Site, client_for: ClientFor
) -> None:
    client = client_for(site.app)
    headers = site.password()
    assert client.post(f"{REST}/other/v1/thing", headers=headers).json() == {"thing": site.alice.id}
    assert client.post(f"{REST}/other/v1/thing").json() == {"thing": 0}


def test_the_indexes_may_be_read(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    headers = site.password(scope=["demo/v1"], read_only=True)
    index = client.get(f"{REST}/", headers=headers)
    assert index.status_code == 200
    assert "other/v1" in index.json()["namespaces"]
    namespace = client.get(f"{REST}/other/v1", headers=headers)
    assert (namespace.status_code, namespace.json()["namespace"]) == (200, "other/v1")


def test_each_batch_request_is_checked_against_the_scope(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    headers = site.password(scope=["demo/v1"])
    answer = client.post(
        f"{REST}/batch/v1",
        json={
            "requests": [
                {"path": "/demo/v1/write"},
                {"path": "/other/v1/thing"},
                {"path": "/demo/v1/me"},
            ]
        },
        headers=headers,
    )
    assert answer.status_code == 207
    assert [(item["status"], item["body"]) for item in answer.json()["responses"]] == [
        (200, {"written": site.alice.id}),
        (403, SCOPE_ERROR),
        (200, {"id": site.alice.id}),
    ]


def test_a_read_only_batch_writes_nothing(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    headers = site.password(read_only=True)
    answer = client.post(
        f"{REST}/batch/v1",
        json={"requests": [{"path": "/demo/v1/write"}, {"path": "/other/v1/thing"}]},
        headers=headers,
    )
    assert [(item["status"], item["body"]) for item in answer.json()["responses"]] == [
        (403, SCOPE_ERROR),
        (403, SCOPE_ERROR),
    ]


def test_an_embedded_link_outside_the_scope_is_refused(site: Site, client_for: ClientFor) -> None:
    def linked(request: Request) -> Response:
        response = Response({"id": 1})
        response.add_link("thing", f"{HOME}{REST}/other/v1/thing", embeddable=True)
        response.add_link("me", f"{HOME}{REST}/demo/v1/me", embeddable=True)
        return response

    site.app.register_rest_route(
        "demo/v1", "/linked", {"methods": "GET", "callback": linked, "permission_callback": public}
    )
    client = client_for(site.app)
    answer = client.get(f"{REST}/demo/v1/linked?_embed", headers=site.password(["demo/v1"]))
    assert answer.status_code == 200
    assert answer.json()["_embedded"] == {"thing": [SCOPE_ERROR], "me": [{"id": site.alice.id}]}
    plain = client.get(f"{REST}/demo/v1/linked?_embed", headers=site.password())
    assert plain.json()["_embedded"] == {
        "thing": [{"thing": site.alice.id}],
        "me": [{"id": site.alice.id}],
    }
