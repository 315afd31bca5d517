"""The application password REST routes (DESIGN §10; WordPress 5.6's controller and codes)."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from svcrest import App
from svcrest.auth.passwords import ScryptParams
from svcrest.auth.users import ApplicationPasswordLimitError
from tests.auth.peers import PeerClient
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
FAST = ScryptParams(n=16, r=1, p=1)
HOME = "http://127.0.0.1:8000"
BASE = "/svc-json/svc/v2/users"
NOW = 1_700_000_000.0
CREATED = "2023-11-14T22:13:20"


def error(code: str, message: str, status: int) -> dict[str, Any]:
    return {"code": code, "message": message, "data": {"status": status}}


def manage(status: int) -> dict[str, Any]:
    return error(
        "rest_cannot_manage_application_passwords",
        "Sorry, you are not allowed to manage application passwords for this user.",
        status,
    )


NOT_FOUND = error("rest_application_password_not_found", "Application password not found.", 404)
INVALID_USER = error("rest_user_invalid_id", "Invalid user ID.", 404)
NOT_LOGGED_IN = error("rest_not_logged_in", "You are not currently logged in.", 401)


class Site:
    def __init__(self, store: str | None, home: str = HOME) -> None:
        self.now = [NOW]
        self.app = App(
            home,
            clock=lambda: self.now[0],
            secret_key="test-secret",
            store=store,
        )
        self.app.users.password_params = FAST
        self.admin = self.app.users.create("admin", "admin-pw", roles=("administrator",))
        self.alice = self.app.users.create("alice", "alice-pw", roles=("editor",))
        self.bob = self.app.users.create("bob", "bob-pw")


@pytest.fixture
def site(store_location: str | None) -> Iterator[Site]:
    made = Site(store_location)
    yield made
    made.app.store.close()


def as_user(client_for: ClientFor, site: Site, login: str) -> tuple[SiteClient, dict[str, str]]:
    """A client logged in as ``login`` and the nonce header its REST requests send."""
    client = client_for(site.app)
    response = client.post("/login", data={"log": login, "pwd": f"{login}-pw"})
    assert response.status_code == 303
    nonce = client.get("/auth/nonce").json()["nonce"]
    return client, {"X-SVC-Nonce": nonce}


def item_json(site: Site, user_id: int, item: dict[str, Any]) -> dict[str, Any]:
    return {
        "uuid": item["uuid"],
        "app_id": "",
        "name": item["name"],
        "created": CREATED,
        "last_used": None,
        "last_ip": None,
        "scope": None,
        "read_only": False,
    }


def test_create_answers_201_with_the_password_once(site: Site, client_for: ClientFor) -> None:
    client, nonce = as_user(client_for, site, "alice")
    response = client.post(
        f"{BASE}/me/application-passwords", data={"name": "phpunit"}, headers=nonce
    )
    assert response.status_code == 201
    data = response.json()
    assert re.fullmatch(r"([A-Za-z0-9]{4} ){5}[A-Za-z0-9]{4}", data["password"])
    [item] = site.app.users.list_application_passwords(site.alice.id)
    self_url = f"{HOME}/svc-json/svc/v2/users/{site.alice.id}/application-passwords/{item['uuid']}"
    assert data == {
        **item_json(site, site.alice.id, item),
        "password": data["password"],
        "_links": {"self": [{"href": self_url}]},
    }
    assert response.headers["location"] == self_url
    # The password works for Basic authentication, chunked as it was shown.
    token = base64.b64encode(f"alice:{data['password']}".encode()).decode()
    me = client_for(site.app).get(
        f"{BASE}/me/application-passwords", headers={"Authorization": f"Basic {token}"}
    )
    assert me.status_code == 200
    assert [entry["uuid"] for entry in me.json()] == [item["uuid"]]
    assert all("password" not in entry for entry in me.json())
    got = client.get(f"{BASE}/me/application-passwords/{item['uuid']}", headers=nonce)
    assert got.status_code == 200
    assert got.json() == {
        **item_json(site, site.alice.id, item),
        "last_used": CREATED,
        "last_ip": got.json()["last_ip"],
        "_links": {"self": [{"href": self_url}]},
    }
    assert isinstance(got.json()["last_ip"], str)


def test_create_needs_a_name(site: Site, client_for: ClientFor) -> None:
    client, nonce = as_user(client_for, site, "alice")
    url = f"{BASE}/me/application-passwords"
    missing = client.post(url, headers=nonce)
    assert missing.status_code == 400
    assert missing.json()["code"] == "rest_missing_callback_param"
    for name in ("", "   "):
        response = client.post(url, data={"name": name}, headers=nonce)
        assert response.status_code == 400
        assert response.json()["code"] == "rest_invalid_param"
    assert site.app.users.list_application_passwords(site.alice.id) == []


LIMIT_REACHED = error(
    "application_password_limit_reached",
    "A user may have at most 50 application passwords.",
    409,
)


def test_a_user_holds_at_most_50_passwords(site: Site, client_for: ClientFor) -> None:
    """One user made 300 passwords, each a rate-limit bucket of its own; now 50 at most."""
    users = site.app.users
    for n in range(49):
        users.create_application_password(site.alice.id, f"app {n}")
    client, nonce = as_user(client_for, site, "alice")
    url = f"{BASE}/me/application-passwords"
    assert client.post(url, data={"name": "fiftieth"}, headers=nonce).status_code == 201
    refused = client.post(url, data={"name": "one more"}, headers=nonce)
    assert refused.status_code == 409
    assert refused.json() == LIMIT_REACHED
    assert len(users.list_application_passwords(site.alice.id)) == 50
    with pytest.raises(ApplicationPasswordLimitError):
        users.create_application_password(site.alice.id, "cli")
    # Another user's count is their own; a revoked password frees a place.
    assert users.create_application_password(site.bob.id, "bob's")[1]["name"] == "bob's"
    first = users.list_application_passwords(site.alice.id)[0]
    assert users.delete_application_password(site.alice.id, first["uuid"])
    assert client.post(url, data={"name": "again"}, headers=nonce).status_code == 201


def test_the_bound_of_passwords_is_a_filter(site: Site, client_for: ClientFor) -> None:
    seen: list[tuple[int, int]] = []

    def bound(value: int, user_id: int) -> int:
        seen.append((value, user_id))
        return 2

    site.app.hooks.add_filter("svc_max_application_passwords", bound)
    client, nonce = as_user(client_for, site, "bob")
    url = f"{BASE}/me/application-passwords"
    statuses = [
        client.post(url, data={"name": f"n{n}"}, headers=nonce).status_code for n in range(3)
    ]
    assert statuses == [201, 201, 409]
    assert seen == [(50, site.bob.id)] * 3


def test_list_get_delete_one_and_all(site: Site, client_for: ClientFor) -> None:
    users = site.app.users
    _, first = users.create_application_password(site.alice.id, "one")
    _, second = users.create_application_password(site.alice.id, "two")
    client, nonce = as_user(client_for, site, "alice")
    url = f"{BASE}/{site.alice.id}/application-passwords"
    listed = client.get(url, headers=nonce)
    assert listed.status_code == 200
    assert [{k: v for k, v in e.items() if k != "_links"} for e in listed.json()] == [
        item_json(site, site.alice.id, first),
        item_json(site, site.alice.id, second),
    ]
    deleted = client.request("DELETE", f"{url}/{first['uuid']}", headers=nonce)
    assert (deleted.status_code, deleted.json()) == (
        200,
        {"deleted": True, "previous": item_json(site, site.alice.id, first)},
    )
    again = client.request("DELETE", f"{url}/{first['uuid']}", headers=nonce)
    assert (again.status_code, again.json()) == (404, NOT_FOUND)
    assert (client.get(f"{url}/{first['uuid']}", headers=nonce).json()) == NOT_FOUND
    users.create_application_password(site.alice.id, "three")
    everything = client.request("DELETE", url, headers=nonce)
    assert (everything.status_code, everything.json()) == (200, {"deleted": True, "count": 2})
    assert client.get(url, headers=nonce).json() == []
    assert second["uuid"] not in str(client.get(url, headers=nonce).json())


def test_a_user_cannot_manage_another_users_passwords(site: Site, client_for: ClientFor) -> None:
    _, item = site.app.users.create_application_password(site.alice.id, "alice's")
    client, nonce = as_user(client_for, site, "bob")
    url = f"{BASE}/{site.alice.id}/application-passwords"
    forbidden = manage(403)
    for method, path, data in [
        ("GET", url, None),
        ("POST", url, {"name": "sneaky"}),
        ("DELETE", url, None),
        ("GET", f"{url}/{item['uuid']}", None),
        ("DELETE", f"{url}/{item['uuid']}", None),
    ]:
        response = client.request(method, path, data=data, headers=nonce)
        assert (response.status_code, response.json()) == (403, forbidden), (method, path)
    assert len(site.app.users.list_application_passwords(site.alice.id)) == 1


def test_an_administrator_manages_anyones(site: Site, client_for: ClientFor) -> None:
    _, item = site.app.users.create_application_password(site.bob.id, "bob's")
    client, nonce = as_user(client_for, site, "admin")
    url = f"{BASE}/{site.bob.id}/application-passwords"
    assert client.get(f"{url}/{item['uuid']}", headers=nonce).status_code == 200
    created = client.post(url, data={"name": "by admin"}, headers=nonce)
    assert created.status_code == 201
    response = client.request("DELETE", url, headers=nonce)
    assert response.json() == {"deleted": True, "count": 2}


def test_anonymous_requests(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    response = client.get(f"{BASE}/me/application-passwords")
    assert (response.status_code, response.json()) == (401, NOT_LOGGED_IN)
    response = client.get(f"{BASE}/{site.alice.id}/application-passwords")
    assert (response.status_code, response.json()) == (401, manage(401))


@pytest.mark.parametrize("user_id", ["0", "999"])
def test_an_unknown_user_is_404(site: Site, client_for: ClientFor, user_id: str) -> None:
    client, nonce = as_user(client_for, site, "admin")
    response = client.get(f"{BASE}/{user_id}/application-passwords", headers=nonce)
    assert (response.status_code, response.json()) == (404, INVALID_USER)


def test_an_unknown_uuid_is_404(site: Site, client_for: ClientFor) -> None:
    client, nonce = as_user(client_for, site, "alice")
    url = f"{BASE}/me/application-passwords/not-a-uuid"
    assert (client.get(url, headers=nonce).status_code, client.get(url, headers=nonce).json()) == (
        404,
        NOT_FOUND,
    )


def test_plain_http_to_another_host_is_501(
    store_location: str | None, client_for: ClientFor
) -> None:
    made = Site(store_location, home="http://site.test")
    client, nonce = as_user(client_for, made, "alice")
    response = client.get(f"{BASE}/me/application-passwords", headers=nonce)
    assert (response.status_code, response.json()) == (
        501,
        error("application_passwords_disabled", "Application passwords are not available.", 501),
    )
    made.app.store.close()


def test_a_loopback_host_from_another_machine_is_501(
    store_location: str | None, adapter: str
) -> None:
    made = Site(store_location, home="http://192.168.1.10:8000")
    client = PeerClient(made.app, adapter, "192.168.1.50", base_url="http://localhost:8000")
    try:
        assert client.post("/login", data={"log": "alice", "pwd": "alice-pw"}).status_code == 303
        nonce = {"X-SVC-Nonce": client.get("/auth/nonce").json()["nonce"]}
        response = client.get(f"{BASE}/me/application-passwords", headers=nonce)
        assert (response.status_code, response.json()) == (
            501,
            error(
                "application_passwords_disabled", "Application passwords are not available.", 501
            ),
        )
        secure = client.get(f"https://localhost:8000{BASE}/me/application-passwords", headers=nonce)
        assert secure.status_code == 200
    finally:
        client.close()
        made.app.store.close()


def test_the_root_index_lists_application_passwords(site: Site, client_for: ClientFor) -> None:
    response = client_for(site.app).get("/svc-json/")
    assert response.json()["authentication"] == {
        "application-passwords": {"endpoints": {"authorization": f"{HOME}/authorize-application"}}
    }


def test_every_site_has_the_routes_and_the_authentication_entry(client_for: ClientFor) -> None:
    app = App(HOME)
    index = client_for(app).get("/svc-json/").json()
    assert index["authentication"] == {
        "application-passwords": {
            "endpoints": {"authorization": "http://127.0.0.1:8000/authorize-application"}
        }
    }
    assert index["namespaces"] == ["svc/v2"]
    assert list(index["routes"]) == [
        "/",
        "/batch/v1",
        "/svc/v2",
        "/svc/v2/users/(?P<user_id>(?:[\\d]+|me))/application-passwords",
        "/svc/v2/users/(?P<user_id>(?:[\\d]+|me))/application-passwords/(?P<uuid>[\\w\\-]+)",
    ]


# -- scopes -----------------------------------------------------------------------------------


def test_a_scope_given_as_text_is_a_list_as_wordpress_reads_arrays(
    site: Site, client_for: ClientFor
) -> None:
    client, nonce = as_user(client_for, site, "alice")
    response = client.post(
        f"{BASE}/me/application-passwords",
        data={"name": "agent", "scope": "notes/v1,other/v1", "read_only": "true"},
        headers=nonce,
    )
    assert response.status_code == 201
    assert (response.json()["scope"], response.json()["read_only"]) == (
        ["notes/v1", "other/v1"],
        True,
    )


def test_create_with_a_scope_and_read_only(site: Site, client_for: ClientFor) -> None:
    client, nonce = as_user(client_for, site, "alice")
    response = client.post(
        f"{BASE}/me/application-passwords",
        json={"name": "agent", "scope": ["notes/v1", "/svc/v2/"], "read_only": True},
        headers=nonce,
    )
    assert response.status_code == 201
    data = response.json()
    [item] = site.app.users.list_application_passwords(site.alice.id)
    assert (item["scope"], item["read_only"]) == (["notes/v1", "svc/v2"], True)
    assert {key: data[key] for key in ("name", "scope", "read_only")} == {
        "name": "agent",
        "scope": ["notes/v1", "svc/v2"],
        "read_only": True,
    }
    listed = client.get(f"{BASE}/me/application-passwords", headers=nonce).json()
    assert [(entry["scope"], entry["read_only"]) for entry in listed] == [
        (["notes/v1", "svc/v2"], True)
    ]
    one = client.get(f"{BASE}/me/application-passwords/{item['uuid']}", headers=nonce).json()
    assert (one["scope"], one["read_only"]) == (["notes/v1", "svc/v2"], True)


@pytest.mark.parametrize(
    ("body", "status", "code", "message"),
    [
        ({"scope": []}, 400, "rest_invalid_param", "Invalid parameter(s): scope"),
        ({"scope": [3]}, 400, "rest_invalid_param", "Invalid parameter(s): scope"),
        (
            {"scope": ["no spaces/v1"]},
            400,
            "rest_invalid_param",
            "'no spaces/v1' is not a REST namespace",
        ),
        ({"read_only": "maybe"}, 400, "rest_invalid_param", "Invalid parameter(s): read_only"),
    ],
)
def test_create_refuses_a_bad_scope(
    site: Site, client_for: ClientFor, body: dict[str, Any], status: int, code: str, message: str
) -> None:
    client, nonce = as_user(client_for, site, "alice")
    response = client.post(
        f"{BASE}/me/application-passwords", json={"name": "agent", **body}, headers=nonce
    )
    answer = response.json()
    assert (response.status_code, answer.get("code"), answer.get("message")) == (
        status,
        code,
        message,
    )
    assert site.app.users.list_application_passwords(site.alice.id) == []


def test_the_schema_shows_scope_and_read_only(site: Site, client_for: ClientFor) -> None:
    client, nonce = as_user(client_for, site, "alice")
    help_ = client.request("OPTIONS", f"{BASE}/me/application-passwords", headers=nonce).json()
    properties = help_["schema"]["properties"]
    assert properties["scope"]["type"] == ["array", "null"]
    assert properties["read_only"]["type"] == "boolean"
    [create] = [e for e in help_["endpoints"] if e["methods"] == ["POST"]]
    assert create["args"]["scope"]["type"] == "array"
    assert create["args"]["read_only"] == {
        "type": "boolean",
        "default": False,
        "description": "Whether the password may only read (GET, HEAD, OPTIONS).",
        "required": False,
    }
