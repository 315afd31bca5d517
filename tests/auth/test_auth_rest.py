"""Cookie + nonce authentication over HTTP (spec 5; DESIGN §3), on both adapters."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import orjson
import pytest

from svcrest import App, Request, RestError, public
from tests.conftest import SiteClient, raw_request

ClientFor = Callable[..., SiteClient]
HOME = "http://127.0.0.1:8000"
ME = "/svc-json/demo/v1/me"
NOW = 1_700_000_000.0


class Site:
    """An App with two users, a whoami route and a write route that records its runs."""

    def __init__(self, store: str | None = None) -> None:
        self.now = [NOW]
        self.app = App(HOME, clock=lambda: self.now[0], secret_key="test-secret", store=store)
        self.writes: list[int] = []
        self.alice = self.app.users.create("alice", "alice-pw", roles=("editor",))
        self.bob = self.app.users.create("bob", "bob-pw", roles=("subscriber",))
        self.app.register_rest_route(
            "demo/v1",
            "/me",
            {"permission_callback": public, "methods": "GET, POST", "callback": self.me},
        )
        self.app.register_rest_route(
            "demo/v1",
            "/write",
            {
                "methods": "POST",
                "callback": self.write,
                "permission_callback": lambda r: r.user.can("edit_notes"),
            },
        )

    def me(self, request: Request) -> dict[str, Any]:
        return {"id": request.user.id, "login": request.user.login}

    def write(self, request: Request) -> dict[str, bool]:
        self.writes.append(request.user.id)
        return {"written": True}


def login(client: SiteClient, user: str, password: str, **extra: str) -> httpx.Response:
    return client.post("/login", data={"log": user, "pwd": password, **extra})


def nonce_of(client: SiteClient) -> str:
    response = client.get("/auth/nonce")
    assert response.status_code == 200
    return str(response.json()["nonce"])


@pytest.fixture
def site(store_location: str | None) -> Iterator[Site]:
    """The site on each engine."""
    made = Site(store_location)
    yield made
    made.app.store.close()


def test_login_sets_cookie_and_redirects(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    response = login(client, "alice", "alice-pw")
    assert response.status_code == 303
    assert response.headers["location"] == HOME + "/"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("svc_logged_in=alice|")
    assert cookie.endswith("; Path=/; HttpOnly; SameSite=Lax")
    assert "Max-Age" not in cookie


def test_remember_me_and_secure_cookie(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app, "https://127.0.0.1:8000")
    cookie = login(client, "alice", "alice-pw", rememberme="forever").headers["set-cookie"]
    assert "; Secure" in cookie
    assert "; Max-Age=1209600" in cookie


@pytest.mark.parametrize(
    ("user", "password"),
    [("alice", "wrong"), ("nobody", "x"), ("", "")],
    ids=["bad-password", "unknown-user", "empty"],
)
def test_failed_login_sets_no_cookie(
    site: Site, client_for: ClientFor, user: str, password: str
) -> None:
    response = login(client_for(site.app), user, password)
    assert response.status_code == 403
    assert "set-cookie" not in response.headers
    assert "Unknown username or incorrect password." in response.text


def test_cookie_without_nonce_is_anonymous_and_cannot_write(
    site: Site, client_for: ClientFor
) -> None:
    client = client_for(site.app)
    login(client, "alice", "alice-pw")
    assert client.get(ME).json() == {"id": 0, "login": ""}
    response = client.post("/svc-json/demo/v1/write")
    assert response.status_code == 401
    assert site.writes == []


def test_valid_nonce_authenticates_and_refreshes(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    login(client, "alice", "alice-pw")
    nonce = nonce_of(client)
    response = client.get(ME, headers={"X-SVC-Nonce": nonce})
    assert response.json() == {"id": site.alice.id, "login": "alice"}
    assert response.headers["x-svc-nonce"] == nonce  # same tick, same nonce
    assert response.headers["cache-control"] == "no-store"
    assert "X-SVC-Nonce" not in response.headers["access-control-expose-headers"]
    write = client.post("/svc-json/demo/v1/write", headers={"X-SVC-Nonce": nonce})
    assert write.status_code == 200
    assert site.writes == [site.alice.id]


def test_wpnonce_param_wins_over_header(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    login(client, "alice", "alice-pw")
    nonce = nonce_of(client)
    assert client.get(f"{ME}?_wpnonce={nonce}", headers={"X-SVC-Nonce": "bad"}).json()["id"] == (
        site.alice.id
    )
    assert client.get(f"{ME}?_wpnonce=bad", headers={"X-SVC-Nonce": nonce}).status_code == 403
    form = client.post(ME, data={"_wpnonce": nonce}, headers={"X-SVC-Nonce": "bad"})
    assert form.json()["id"] == site.alice.id


def _forged_nonces(site: Site, token: str) -> dict[str, str]:
    auth = site.app.auth
    current = auth.create_nonce("svc_rest", site.alice.id, token)
    return {
        "garbage": "0123456789abcdef0123456789abcdef",
        "other-user": auth.create_nonce("svc_rest", site.bob.id, token),
        "other-action": auth.create_nonce("log-out", site.alice.id, token),
        "other-session": auth.create_nonce("svc_rest", site.alice.id, "x" * 43),
        "truncated": current[:-1],
        "uppercase": current.upper(),
        "non-ascii": "n\u00f6nce" * 8,
        "huge": "a" * 100_000,
    }


def test_invalid_nonces_are_403_and_nothing_runs(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    login(client, "alice", "alice-pw")
    token = next(iter(client.cookies.values())).split("|")[2]
    for name, nonce in _forged_nonces(site, token).items():
        response = client.post("/svc-json/demo/v1/write", data={"_wpnonce": nonce})
        assert response.status_code == 403, name
        assert response.json() == {
            "code": "rest_cookie_invalid_nonce",
            "message": "Cookie nonce is invalid",
            "data": {"status": 403},
        }
    assert site.writes == []


def test_binary_nonce_header_is_403(site: Site, adapter: str) -> None:
    status, _, body = raw_request(
        site.app, adapter, "GET", ME, [(b"x-svc-nonce", b"\xff\xfe\x01\x7f\xc3\xa4")]
    )
    assert status == 403
    assert orjson.loads(body)["code"] == "rest_cookie_invalid_nonce"


def test_nonce_ages(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    login(client, "alice", "alice-pw")
    nonce = nonce_of(client)
    site.now[0] += 43_200  # one tick later: previous-tick nonce still accepted
    response = client.get(ME, headers={"X-SVC-Nonce": nonce})
    assert response.json()["id"] == site.alice.id
    fresh = response.headers["x-svc-nonce"]
    assert fresh != nonce
    site.now[0] += 43_200  # two ticks old
    assert client.get(ME, headers={"X-SVC-Nonce": nonce}).status_code == 403
    assert client.get(ME, headers={"X-SVC-Nonce": fresh}).json()["id"] == site.alice.id


def test_anonymous_nonce_rules(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    anonymous_nonce = nonce_of(client)
    assert client.get(ME, headers={"X-SVC-Nonce": anonymous_nonce}).json()["id"] == 0
    assert client.get(ME, headers={"X-SVC-Nonce": "bad"}).status_code == 403


def _cookie_variants(value: str) -> dict[str, str]:
    login_, expiration, token, mac = value.split("|")
    flipped = mac[:-1] + ("0" if mac[-1] != "0" else "1")
    other_token = token[:-1] + ("A" if token[-1] != "A" else "B")
    return {
        "tampered-hmac": f"{login_}|{expiration}|{token}|{flipped}",
        "tampered-login": f"bob|{expiration}|{token}|{mac}",
        "tampered-expiration": f"{login_}|{int(expiration) + 1}|{token}|{mac}",
        "tampered-token": f"{login_}|{expiration}|{other_token}|{mac}",
        "truncated": value[:-5],
        "extra-field": value + "|x",
        "three-fields": f"{login_}|{expiration}|{mac}",
        "empty": "",
        "non-ascii": value.replace("alice", "\u00e4lice"),
        "huge": "a" * 100_000,
    }


def test_bad_cookies_are_anonymous(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    value = login(client, "alice", "alice-pw").headers["set-cookie"].split(";")[0].split("=", 1)[1]
    nonce = site.app.auth.create_nonce("svc_rest", 0, "").encode()
    for name, variant in _cookie_variants(value).items():
        cookie = f"svc_logged_in={variant}".encode()
        status, _, body = raw_request(
            site.app, client.adapter, "GET", ME, [(b"cookie", cookie), (b"x-svc-nonce", nonce)]
        )
        assert status == 200, name
        assert orjson.loads(body)["id"] == 0, name


def test_binary_cookie_is_anonymous(site: Site, adapter: str) -> None:
    raw = b"svc_logged_in=" + bytes(b for b in range(1, 256) if b not in b"\r\n;")
    status, _, body = raw_request(site.app, adapter, "GET", ME, [(b"cookie", raw)])
    assert (status, orjson.loads(body)["id"]) == (200, 0)


def test_expired_logged_out_and_password_changed_cookies(site: Site, client_for: ClientFor) -> None:
    def logged_in_client() -> tuple[SiteClient, str]:
        client = client_for(site.app)
        login(client, "alice", "alice-pw")
        return client, nonce_of(client)

    expired, expired_nonce = logged_in_client()
    logged_out, logged_out_nonce = logged_in_client()
    changed, changed_nonce = logged_in_client()
    site.now[0] += 2 * 86400 + 1
    assert expired.get(ME, headers={"X-SVC-Nonce": expired_nonce}).status_code == 403
    site.now[0] = NOW
    home = logged_out.get("/").text
    logout_nonce = home.split('name="_wpnonce" value="')[1].split('"')[0]
    response = logged_out.post("/logout", data={"_wpnonce": logout_nonce})
    assert response.status_code == 303
    assert "svc_logged_in=;" in response.headers["set-cookie"]
    stale = {"Cookie": f"svc_logged_in={_value(changed)}", "X-SVC-Nonce": logged_out_nonce}
    site.app.users.set_password(site.alice.id, "new-pw")
    assert changed.get(ME, headers={"X-SVC-Nonce": changed_nonce}).status_code == 403
    assert client_for(site.app).get(ME, headers=stale).status_code == 403


def _value(client: SiteClient) -> str:
    return str(next(iter(client.cookies.values())))


def test_logout_needs_its_nonce(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    login(client, "alice", "alice-pw")
    response = client.post("/logout", data={"_wpnonce": "bad"})
    assert response.status_code == 403
    assert client.get(ME, headers={"X-SVC-Nonce": nonce_of(client)}).json()["id"] == site.alice.id


def test_login_rotates_the_session(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    login(client, "alice", "alice-pw")
    first = _value(client)
    login(client, "alice", "alice-pw")
    second = _value(client)
    assert first != second
    old = client_for(site.app)
    nonce = site.app.auth.create_nonce("svc_rest", site.alice.id, first.split("|")[2])
    response = old.get(ME, headers={"Cookie": f"svc_logged_in={first}", "X-SVC-Nonce": nonce})
    assert response.status_code == 403  # the old session is gone: anonymous with a user nonce


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Origin": "http://127.0.0.1:9999"},
    ],
    ids=["foreign-origin", "null-origin", "sec-fetch-site", "other-port"],
)
def test_cross_origin_cannot_log_in_or_read_a_nonce(
    site: Site, client_for: ClientFor, headers: dict[str, str]
) -> None:
    client = client_for(site.app)
    response = client.post("/login", data={"log": "alice", "pwd": "alice-pw"}, headers=headers)
    assert response.status_code == 403
    assert "set-cookie" not in response.headers
    login(client, "alice", "alice-pw")
    nonce = client.get("/auth/nonce", headers=headers)
    assert nonce.status_code == 403
    assert "nonce" not in nonce.json()
    assert "access-control-allow-origin" not in nonce.headers


def test_same_origin_headers_are_accepted(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    same = {"Origin": HOME, "Sec-Fetch-Site": "same-origin"}
    assert login(client, "alice", "alice-pw", **{}).status_code == 303
    assert client.get("/auth/nonce", headers=same).status_code == 200


@pytest.mark.parametrize(
    ("target", "location"),
    [
        ("/svc-json/", HOME + "/svc-json/"),
        (HOME + "/x?y=1", HOME + "/x?y=1"),
        ("https://evil.example/", HOME + "/"),
        ("//evil.example/", HOME + "/"),
        ("/\\evil.example", HOME + "/"),
        ("javascript:alert(1)", HOME + "/"),
        ("http://127.0.0.1:8001/", HOME + "/"),
    ],
)
def test_redirect_stays_on_site(
    site: Site, client_for: ClientFor, target: str, location: str
) -> None:
    response = login(client_for(site.app), "alice", "alice-pw", redirect_to=target)
    assert response.headers["location"] == location


def test_home_page_embeds_settings_only_when_logged_in(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    assert "svcApiSettings" not in client.get("/").text
    login(client, "alice", "alice-pw")
    page = client.get("/").text
    nonce = nonce_of(client)
    assert f'var svcApiSettings = {{"root":"{HOME}/svc-json/","nonce":"{nonce}"}};' in page


def test_site_pages_send_no_cors(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    for path in ("/", "/login", "/auth/nonce", "/rsd.xml"):
        response = client.get(path, headers={"Origin": HOME})
        assert "access-control-allow-origin" not in response.headers, path


def test_concurrent_users_never_mix(site: Site) -> None:
    app = site.app

    async def main() -> None:
        transport = httpx.ASGITransport(app=app)
        clients: list[tuple[httpx.AsyncClient, int, str | None]] = []
        for user, password, user_id in (
            ("alice", "alice-pw", site.alice.id),
            ("bob", "bob-pw", site.bob.id),
        ):
            client = httpx.AsyncClient(transport=transport, base_url=HOME)
            await client.post("/login", data={"log": user, "pwd": password})
            nonce = (await client.get("/auth/nonce")).json()["nonce"]
            clients.append((client, user_id, nonce))
        anonymous = httpx.AsyncClient(transport=transport, base_url=HOME)
        clients.append((anonymous, 0, None))

        async def call(index: int) -> None:
            client, user_id, nonce = clients[index % 3]
            headers = {"X-SVC-Nonce": nonce} if nonce else {}
            response = await client.get(ME, headers=headers)
            assert response.json()["id"] == user_id
            assert ("cache-control" in response.headers) == (user_id != 0)

        await asyncio.gather(*(call(i) for i in range(150)))
        for client, _, _ in clients:
            await client.aclose()

    asyncio.run(main())


def test_spec_5_1_row_1_earlier_result_is_returned_unchanged(
    site: Site, client_for: ClientFor
) -> None:
    seen: list[Any] = []

    def earlier(result: Any, request: Request) -> Any:
        return "authenticated elsewhere"

    def later(result: Any, request: Request) -> Any:
        seen.append(result)
        return result

    site.app.hooks.add_filter("rest_authentication_errors", earlier, 50)
    site.app.hooks.add_filter("rest_authentication_errors", later, 200)
    client = client_for(site.app)
    response = client.get(ME, headers={"X-SVC-Nonce": "not checked"})
    assert response.status_code == 200
    assert seen == ["authenticated elsewhere"]


def test_spec_5_1_row_2_other_authentication_needs_no_nonce(
    site: Site, client_for: ClientFor
) -> None:
    def token_auth(user: Any, request: Request) -> Any:
        if request.get_header("Authorization") == "Bearer bob-token":
            return site.bob
        return user

    site.app.hooks.add_filter("determine_current_user", token_auth, 20)
    client = client_for(site.app)
    response = client.get(ME, headers={"Authorization": "Bearer bob-token"})
    assert response.json() == {"id": site.bob.id, "login": "bob"}
    assert "x-svc-nonce" not in response.headers


@pytest.mark.parametrize("kind", ["plain", "async"])
@pytest.mark.parametrize("priority", [5, 200])
@pytest.mark.parametrize("hook", ["determine_current_user", "rest_authentication_errors"])
def test_authentication_callbacks_may_be_async_anywhere_in_their_chain(
    site: Site, client_for: ClientFor, hook: str, priority: int, kind: str
) -> None:
    """A callback before (5) or after (200) the built-in ones, answering plainly or after
    a real wait: the chain goes on from it either way."""
    seen: list[Any] = []

    def note(value: Any) -> Any:
        seen.append(value.code if isinstance(value, RestError) else getattr(value, "id", value))
        return value

    async def waits(value: Any, request: Request) -> Any:
        await asyncio.sleep(0)
        return note(value)

    site.app.hooks.add_filter(hook, waits if kind == "async" else lambda v, r: note(v), priority)
    site.app.hooks.add_filter(hook, lambda value, request: note(value), 300)  # the last
    client = client_for(site.app)
    login(client, "alice", "alice-pw")
    nonce = nonce_of(client)
    seen.clear()
    good = client.get(ME, headers={"X-SVC-Nonce": nonce})
    bad = client.get(ME, headers={"X-SVC-Nonce": "0" * len(nonce)})
    assert (good.status_code, good.json()) == (200, {"id": site.alice.id, "login": "alice"})
    assert good.headers["x-svc-nonce"] == nonce
    assert (bad.status_code, bad.json()["code"]) == (403, "rest_cookie_invalid_nonce")
    alice = site.alice.id
    expected = {  # per request: what the callback saw, then what the last one saw
        ("determine_current_user", 5): [0, alice, 0, alice],  # first: the anonymous user
        ("determine_current_user", 200): [alice, alice, alice, alice],
        ("rest_authentication_errors", 5): [None, True, None, "rest_cookie_invalid_nonce"],
        ("rest_authentication_errors", 200): [True, True, *["rest_cookie_invalid_nonce"] * 2],
    }
    assert seen == expected[hook, priority]


@pytest.mark.parametrize(
    ("variant", "status"),
    [
        ("valid", True),
        ("garbage", "malformed"),
        ("bad-hash", "bad_hash"),
        ("unknown-user", "bad_username"),
        ("expired", "expired"),
        ("logged-out", "bad_session_token"),
    ],
)
def test_spec_5_2_cookie_status_collection(
    site: Site, client_for: ClientFor, variant: str, status: Any
) -> None:
    from svcrest.http.context import current_context

    seen: list[Any] = []

    def record(result: Any, request: Request) -> Any:
        ctx = current_context()
        seen.append(ctx.cookie_status if ctx else None)
        return result

    site.app.hooks.add_filter("rest_authentication_errors", record, 5)
    client = client_for(site.app)
    value = login(client, "alice", "alice-pw").headers["set-cookie"].split(";")[0].split("=", 1)
    cookie = value[1]
    login_, expiration, token, mac = cookie.split("|")
    if variant == "garbage":
        cookie = "garbage"
    elif variant == "bad-hash":
        cookie = f"{login_}|{expiration}|{token}|{'0' * 64}"
    elif variant == "unknown-user":
        cookie = f"nobody|{expiration}|{token}|{mac}"
    elif variant == "expired":
        site.now[0] += 3 * 86400
    elif variant == "logged-out":
        site.app.auth.log_out(site.alice.id, token)
    client_for(site.app).get(ME, headers={"Cookie": f"svc_logged_in={cookie}"})
    assert seen == [status]


def test_callbacks_added_after_start_up_run_on_a_remembered_cookie(
    site: Site, client_for: ClientFor
) -> None:
    """A cookie found valid before is answered from memory while ``auth_cookie_valid`` has
    only the built-in callback; a plugin's callback on it (or on
    ``determine_current_user``), added later, is still called with the same arguments, and
    ``did_action`` counts every check either way."""
    hooks = site.app.hooks
    client = client_for(site.app)
    login(client, "alice", "alice-pw")
    nonce = nonce_of(client)
    counted = hooks.did_action("auth_cookie_valid")
    for _ in range(3):  # the first fills the memories, the others are answered from them
        assert client.get(ME, headers={"X-SVC-Nonce": nonce}).json()["id"] == site.alice.id
    assert hooks.did_action("auth_cookie_valid") == counted + 3
    seen: list[tuple[Any, ...]] = []
    hooks.add_action("auth_cookie_valid", lambda elements, user: seen.append((elements, user)))
    users: list[int] = []

    def note_user(user: Any, request: Request) -> Any:
        users.append(user.id)
        return user

    hooks.add_filter("determine_current_user", note_user)
    for _ in range(2):
        assert client.get(ME, headers={"X-SVC-Nonce": nonce}).json()["id"] == site.alice.id
    assert hooks.did_action("auth_cookie_valid") == counted + 5
    assert users == [site.alice.id] * 2
    assert [user.id for _, user in seen] == [site.alice.id] * 2
    elements = seen[0][0]
    assert sorted(elements) == ["expiration", "hmac", "scheme", "token", "username"]
    assert (elements["username"], elements["scheme"]) == ("alice", "logged_in")
    assert seen[0][0] is not seen[1][0]  # a fresh dict each time: the memory is not handed out


def test_a_remembered_cookie_with_a_bad_nonce_is_still_403(
    site: Site, client_for: ClientFor
) -> None:
    client = client_for(site.app)
    login(client, "alice", "alice-pw")
    nonce = nonce_of(client)
    for _ in range(2):
        assert client.get(ME, headers={"X-SVC-Nonce": nonce}).status_code == 200
    refused = client.get(ME, headers={"X-SVC-Nonce": "0" * len(nonce)})
    assert refused.status_code == 403
    assert refused.json()["code"] == "rest_cookie_invalid_nonce"
    anonymous = client.get(ME)  # no nonce: anonymous, as before
    assert anonymous.json() == {"id": 0, "login": ""}


@pytest.mark.parametrize(
    "basic",
    ["Basic YWxpY2U6d3Jvbmc=", "Basic not-base64", "Bearer token"],
    ids=["wrong-password", "undecodable", "other-scheme"],
)
def test_a_cookie_with_an_authorization_line_behaves_as_before(
    site: Site, client_for: ClientFor, basic: str
) -> None:
    """A request carrying both credentials runs both schemes: the cookie's user, found
    first, stands (WordPress's ``wp_validate_application_password`` leaves a user set
    before it alone), and without the nonce the request is anonymous."""
    client = client_for(site.app)
    login(client, "alice", "alice-pw")
    nonce = nonce_of(client)
    for _ in range(2):
        response = client.get(ME, headers={"X-SVC-Nonce": nonce, "Authorization": basic})
        assert response.json() == {"id": site.alice.id, "login": "alice"}
    without_nonce = client.get(ME, headers={"Authorization": basic})
    assert (without_nonce.status_code, without_nonce.json()) == (200, {"id": 0, "login": ""})
