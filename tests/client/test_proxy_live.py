"""RestProxy and AsyncRestProxy against a live in-process site (the demo's notes), beyond spec
4.10 (DESIGN.md section 13): result sets and paging, ``headers``, ``api``, ``timeout``,
``on_exception`` and ``sync(..., batch="server")``.

Each test runs the sync proxy over ``WSGITransport`` and the async proxy over ``ASGITransport``
through one `Driver`, and records every request the proxy sends.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from svcrest import App
from svcrest.auth.passwords import ScryptParams
from svcrest.client import AsyncRestProxy, Operation, ProxyError, RestProxy, ResultSet
from svcrest.demo import register

NOW = 1_700_000_000
HOME = "http://notes.test"
ROOT = f"{HOME}/svc-json"
NOTES = f"{ROOT}/demo/v1/notes"
BATCH = f"{ROOT}/batch/v1"
CLOCK = 1700000000000
DC = f"_dc={CLOCK}"
# ids 1..5 in this order; newest first is 3, 5, 1, 4, 2.
SEED = [
    ("Banana bread", "2024-01-03T10:00:00Z"),
    ("apple pie", "2024-01-01T10:00:00Z"),
    ("Cherry jam", "2024-01-05T10:00:00Z"),
    ("Date loaf", "2024-01-02T10:00:00Z"),
    ("Elderflower cordial", "2024-01-04T10:00:00Z"),
]
Reported = list[tuple[ProxyError, Operation | None]]


class Driver:
    """A RestProxy over WSGI or an AsyncRestProxy over ASGI, called the same synchronous way."""

    def __init__(self, app: App, adapter: str, url: str = NOTES, **options: Any) -> None:
        self.sent: list[httpx.Request] = []
        self.reported: Reported = []
        options.setdefault("on_exception", lambda error, op: self.reported.append((error, op)))
        self.loop: asyncio.AbstractEventLoop | None = None
        self.proxy: RestProxy | AsyncRestProxy
        if adapter == "wsgi":
            client = httpx.Client(
                transport=httpx.WSGITransport(app=app.wsgi),
                base_url=app.home,
                event_hooks={"request": [self.sent.append]},
            )
            self.proxy = RestProxy(url, clock=lambda: CLOCK, client=client, **options)
        else:
            self.loop = asyncio.new_event_loop()

            async def record(request: httpx.Request) -> None:
                self.sent.append(request)

            async_client = httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app),
                base_url=app.home,
                event_hooks={"request": [record]},
            )
            self.proxy = AsyncRestProxy(url, clock=lambda: CLOCK, client=async_client, **options)

    def __call__(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Call the proxy's method ``name`` (awaited for the async proxy)."""
        result = getattr(self.proxy, name)(*args, **kwargs)
        return result if self.loop is None else self.loop.run_until_complete(result)

    def pages(self, **params: Any) -> list[ResultSet]:
        """Every page of ``iter_pages(**params)``."""
        if isinstance(self.proxy, RestProxy):
            return list(self.proxy.iter_pages(**params))
        proxy = self.proxy

        async def collect() -> list[ResultSet]:
            return [page async for page in proxy.iter_pages(**params)]

        assert self.loop is not None
        return self.loop.run_until_complete(collect())

    def sent_lines(self) -> list[str]:
        """``METHOD URL`` of each request sent so far."""
        return [f"{request.method} {request.url}" for request in self.sent]

    def close(self) -> None:
        client = self.proxy.client
        if isinstance(client, httpx.Client):
            client.close()
        else:
            assert self.loop is not None
            self.loop.run_until_complete(client.aclose())
            self.loop.close()


@pytest.fixture
def app() -> Iterator[App]:
    app = App(HOME, clock=lambda: NOW)
    register(app)
    app.users.password_params = ScryptParams(n=16, r=1, p=1)
    app.users.create("ed", "pw", roles=("editor",))
    yield app
    app.store.close()


@pytest.fixture(params=["wsgi", "asgi"])
def drivers(app: App, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A factory of Drivers on the current adapter; all are closed at the end."""
    made: list[Driver] = []

    def make(url: str = NOTES, **options: Any) -> Driver:
        driver = Driver(app, str(request.param), url, **options)
        made.append(driver)
        return driver

    yield make
    for driver in made:
        driver.close()


def editor(make: Any, seed: int = 0, **options: Any) -> Driver:
    """A driver logged in as the editor, with the first ``seed`` notes of SEED created."""
    driver: Driver = make(**options)
    assert driver("login", "ed", "pw") == driver.proxy.nonce
    records = [{"title": title, "date": date} for title, date in SEED[:seed]]
    if records:
        driver("create", *records)
    driver.sent.clear()
    return driver


def titles(driver: Driver) -> list[str]:
    return sorted(note["title"] for note in driver("read", per_page=100))


# -- result sets and pages ------------------------------------------------------------------


def test_read_result_has_the_records_and_the_paging_headers(drivers: Any) -> None:
    driver = editor(drivers, seed=5)
    result = driver("read_result", per_page=2, page=2)
    assert isinstance(result, ResultSet)
    assert [(note["id"], note["title"]) for note in result.records] == [
        (1, "Banana bread"),
        (4, "Date loaf"),
    ]
    assert (result.total, result.total_pages) == (5, 3)
    assert result.next_url == f"{NOTES}?{DC}&per_page=2&page=3"
    assert result.response.status_code == 200
    assert driver.sent_lines() == [f"GET {NOTES}?{DC}&per_page=2&page=2"]


def test_read_result_of_one_record(drivers: Any) -> None:
    driver = editor(drivers, seed=3)
    result = driver("read_result", 3)
    assert [note["title"] for note in result.records] == ["Cherry jam"]
    assert (result.total, result.total_pages, result.next_url) == (None, None, None)
    assert driver.sent_lines() == [f"GET {NOTES}/3?{DC}"]


def test_iter_pages_follows_the_next_links(drivers: Any) -> None:
    driver = editor(drivers, seed=5)
    pages = driver.pages(per_page=2)
    assert [[note["id"] for note in page.records] for page in pages] == [[3, 5], [1, 4], [2]]
    assert [(page.total, page.total_pages) for page in pages] == [(5, 3)] * 3
    assert [page.next_url for page in pages] == [
        f"{NOTES}?{DC}&per_page=2&page=2",
        f"{NOTES}?{DC}&per_page=2&page=3",
        None,
    ]
    assert driver.sent_lines() == [
        f"GET {NOTES}?{DC}&per_page=2",
        f"GET {NOTES}?{DC}&per_page=2&page=2",
        f"GET {NOTES}?{DC}&per_page=2&page=3",
    ]
    assert {request.headers["X-SVC-Nonce"] for request in driver.sent} == {driver.proxy.nonce}


def test_iter_pages_of_an_empty_collection_is_one_empty_page(drivers: Any) -> None:
    driver = drivers()
    pages = driver.pages()
    assert [(page.records, page.total, page.total_pages) for page in pages] == [([], 0, 0)]


# -- headers, api --------------------------------------------------------------------------------


def test_headers_go_on_every_request_login_and_nonce_included(drivers: Any) -> None:
    driver = drivers(headers={"X-Trace": "t-1", "Accept-Language": "fr"})
    driver("login", "ed", "pw")
    driver("create", {"title": "A"})
    driver("read", 1)
    assert driver.sent_lines() == [
        f"POST {HOME}/login",
        f"GET {HOME}/auth/nonce",
        f"POST {NOTES}?{DC}",
        f"GET {NOTES}/1?{DC}",
    ]
    assert [request.headers.get("X-Trace") for request in driver.sent] == ["t-1"] * 4
    assert [request.headers.get("Accept-Language") for request in driver.sent] == ["fr"] * 4


def test_api_urls_replace_the_url_per_action_and_keep_the_id_rules(drivers: Any) -> None:
    driver = editor(
        drivers,
        url=f"{ROOT}/demo/v1/nowhere",
        api={"create": f"{NOTES}?_fields=id,title", "read": NOTES, "destroy": NOTES},
    )
    assert driver("create", {"title": "T"}) == [{"id": 1, "title": "T"}]
    assert driver("read", 1)["title"] == "T"
    driver("destroy", {"id": 1})
    with pytest.raises(ProxyError) as caught:
        driver("update", {"id": 1, "title": "U"})
    assert (caught.value.status, caught.value.code) == (404, "rest_no_route")
    assert driver.sent_lines() == [
        f"POST {NOTES}?_fields=id,title&{DC}",
        f"GET {NOTES}/1?{DC}",
        f"DELETE {NOTES}/1?{DC}",
        f"PUT {ROOT}/demo/v1/nowhere/1?{DC}",
    ]


# -- on_exception ------------------------------------------------------------------------------


def test_on_exception_is_called_once_per_raised_error(drivers: Any) -> None:
    driver = editor(drivers)
    with pytest.raises(ProxyError) as caught:
        driver("read", 999)
    assert driver.reported == [(caught.value, Operation("read", id=999, params={}))]
    assert (caught.value.code, caught.value.message) == ("rest_note_invalid_id", "Invalid note ID.")
    with pytest.raises(ProxyError) as refused:
        driver("login", "ed", "wrong")
    assert len(driver.reported) == 2
    assert driver.reported[1] == (refused.value, None)


def test_on_exception_is_not_called_when_the_nonce_refresh_recovers(drivers: Any) -> None:
    driver = editor(drivers)
    driver.proxy.nonce = "forged"
    assert [note["title"] for note in driver("create", {"title": "A"})] == ["A"]
    assert driver.reported == []
    assert driver.sent_lines() == [
        f"POST {NOTES}?{DC}",
        f"GET {HOME}/auth/nonce",
        f"POST {NOTES}?{DC}",
    ]


# -- login ----------------------------------------------------------------------------------


def test_a_wrong_password_raises_the_servers_login_error(drivers: Any) -> None:
    driver = drivers()
    for login, password in [("ed", "wrong"), ("nobody", "pw"), ("ed", "")]:
        with pytest.raises(ProxyError) as caught:
            driver("login", login, password)
        refused = caught.value
        assert (refused.code, refused.message, refused.status, refused.data) == (
            "svc_login_failed",
            "Unknown username or incorrect password.",
            403,
            {"status": 403},
        )
        assert str(refused) == ("403 svc_login_failed: Unknown username or incorrect password.")
    assert driver.proxy.nonce is None
    assert [error.code for error, operation in driver.reported] == ["svc_login_failed"] * 3
    assert driver("login", "ed", "pw") == driver.proxy.nonce


def test_a_throttled_login_raises_the_servers_429(drivers: Any) -> None:
    driver = drivers()
    for _ in range(10):
        with pytest.raises(ProxyError):
            driver("login", "ed", "wrong")
    with pytest.raises(ProxyError) as caught:
        driver("login", "ed", "pw")
    assert (caught.value.code, caught.value.message, caught.value.status) == (
        "svc_too_many_login_attempts",
        "Too many failed login attempts. Try again later.",
        429,
    )


# -- sync(batch="server") ------------------------------------------------------------------------


def test_a_server_batch_sync_is_one_request(drivers: Any) -> None:
    driver = editor(drivers, seed=2)
    result = driver(
        "sync",
        create=[{"title": "C"}],
        update=[{"id": 1, "title": "A2"}],
        destroy=[{"id": 2}],
        batch="server",
    )
    assert [(note["id"], note["title"]) for note in result["create"]] == [(3, "C")]
    assert [(note["id"], note["title"]) for note in result["update"]] == [(1, "A2")]
    assert set(result) == {"create", "update"}
    assert driver.sent_lines() == [f"POST {BATCH}"]
    assert json.loads(driver.sent[0].content) == {
        "validation": "normal",
        "requests": [
            {"method": "POST", "path": "/demo/v1/notes", "body": {"title": "C"}},
            {"method": "PUT", "path": "/demo/v1/notes/1", "body": {"id": 1, "title": "A2"}},
            {"method": "DELETE", "path": "/demo/v1/notes/2"},
        ],
    }
    assert driver.sent[0].headers["X-SVC-Nonce"] == driver.proxy.nonce
    assert titles(driver) == ["A2", "C"]


def test_an_atomic_server_batch_commits(drivers: Any) -> None:
    driver = editor(drivers, seed=1)
    result = driver(
        "sync", create=[{"title": "B"}], destroy=[{"id": 1}], batch="server", atomic=True
    )
    assert [note["title"] for note in result["create"]] == ["B"]
    assert result["update"] == []
    assert json.loads(driver.sent[0].content)["validation"] == "atomic"
    assert len(driver.sent) == 1
    assert titles(driver) == ["B"]


def test_a_failed_atomic_sync_raises_and_writes_nothing(drivers: Any) -> None:
    driver = editor(drivers, seed=2)
    with pytest.raises(ProxyError) as caught:
        driver(
            "sync",
            create=[{"title": "never"}],
            update=[{"id": 1, "title": "changed"}],
            destroy=[{"id": 99}],
            batch="server",
            atomic=True,
        )
    error = caught.value
    assert (error.code, error.message, error.status) == (
        "rest_note_invalid_id",
        "Invalid note ID.",
        404,
    )
    assert error.data == {"status": 404}
    assert driver.reported == [(error, Operation("destroy", records=[{"id": 99}]))]
    assert driver.sent_lines() == [f"POST {BATCH}"]
    assert titles(driver) == ["Banana bread", "apple pie"]


def test_a_normal_server_batch_reports_its_first_failure(drivers: Any) -> None:
    driver = editor(drivers, seed=1)
    with pytest.raises(ProxyError) as caught:
        driver("sync", create=[{"title": ""}, {"title": "kept"}], batch="server")
    assert (caught.value.code, caught.value.status) == ("rest_invalid_param", 400)
    assert driver.reported == [(caught.value, Operation("create", records=[{"title": ""}]))]
    assert titles(driver) == ["Banana bread", "kept"]


def test_a_server_batch_of_nothing_sends_nothing(drivers: Any) -> None:
    driver = editor(drivers)
    assert driver("sync", batch="server", atomic=True) == {"create": [], "update": []}
    assert driver.sent == []


def test_a_batch_with_a_forged_nonce_is_retried_once(drivers: Any) -> None:
    driver = editor(drivers)
    driver.proxy.nonce = "forged"
    result = driver("sync", create=[{"title": "A"}], batch="server")
    assert [note["title"] for note in result["create"]] == ["A"]
    assert driver.sent_lines() == [f"POST {BATCH}", f"GET {HOME}/auth/nonce", f"POST {BATCH}"]
    assert driver.reported == []


# -- timeout ---------------------------------------------------------------------------------------


@pytest.fixture
def silent_url() -> Iterator[str]:
    """The URL of a socket that accepts connections and never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.05)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/svc-json/demo/v1/notes"
    stop.set()
    thread.join()
    for connection in accepted:
        connection.close()
    server.close()


def test_a_timeout_raises_proxy_error_even_with_a_given_client(silent_url: str) -> None:
    reported: Reported = []
    with httpx.Client(timeout=60) as client:
        proxy = RestProxy(
            silent_url,
            timeout=0.2,
            client=client,
            on_exception=lambda e, o: reported.append((e, o)),
        )
        with pytest.raises(ProxyError) as caught:
            proxy.read(5)
    error = caught.value
    assert (error.code, error.message, error.status) == (
        "timeout",
        "No answer within 0.2 seconds.",
        0,
    )
    assert isinstance(error.__cause__, httpx.TimeoutException)
    assert [(e.code, o) for e, o in reported] == [("timeout", Operation("read", id=5, params={}))]


def test_an_async_timeout_raises_proxy_error(silent_url: str) -> None:
    async def scenario() -> ProxyError:
        async with httpx.AsyncClient(timeout=60) as client:
            proxy = AsyncRestProxy(silent_url, timeout=0.2, client=client)
            with pytest.raises(ProxyError) as caught:
                await proxy.sync(create=[{"title": "A"}], batch="server")
            return caught.value

    error = asyncio.run(scenario())
    assert (error.code, error.status) == ("timeout", 0)


def test_the_timeout_is_set_on_every_request() -> None:
    default = RestProxy(NOTES, client=httpx.Client(timeout=5))
    short = RestProxy(NOTES, timeout=1.5)
    read = Operation("read")
    assert default.build_request(read).extensions["timeout"] == dict.fromkeys(
        ("connect", "read", "write", "pool"), 30.0
    )
    assert short.build_request(read).extensions["timeout"] == dict.fromkeys(
        ("connect", "read", "write", "pool"), 1.5
    )
    default.client.close()
    short.close()


def test_option_checks() -> None:
    with pytest.raises(ValueError, match="api has unknown actions: list"):
        RestProxy(NOTES, api={"list": NOTES})
    with RestProxy(NOTES) as proxy:
        with pytest.raises(ValueError, match="unknown batch mode 'client'"):
            proxy.sync(create=[{}], batch="client")
        with pytest.raises(ValueError, match="atomic=True needs batch='server'"):
            proxy.sync(create=[{}], atomic=True)
    with (
        RestProxy("http://example.test/wp/notes") as proxy,
        pytest.raises(ValueError, match="cannot tell the REST root"),
    ):
        proxy.batch_request([Operation("create", records=[{}])], atomic=False)


def test_root_option_names_the_batch_route() -> None:
    with RestProxy("http://example.test/api/notes", root="http://example.test/api") as proxy:
        request = proxy.batch_request([Operation("destroy", records=[{"id": 4}])], atomic=False)
    assert str(request.url) == "http://example.test/api/batch/v1"
    assert json.loads(request.content) == {
        "validation": "normal",
        "requests": [{"method": "DELETE", "path": "/notes/4"}],
    }


# -- logout ---------------------------------------------------------------------------------


def test_logout_ends_the_session_the_login_started(app: App, drivers: Any) -> None:
    driver = editor(drivers)
    [note] = driver("create", {"title": "Before logging out"})
    session = driver.proxy.client.cookies.get("svc_logged_in")
    assert session is not None
    before = len(driver.sent)
    assert driver("logout") is True
    logout = driver.sent[before:]
    assert [f"{request.method} {request.url}" for request in logout] == [f"POST {HOME}/logout"]
    assert logout[0].headers["content-type"] == "application/json"
    assert logout[0].headers["x-svc-nonce"]
    assert driver.proxy.nonce is None
    assert driver.proxy.client.cookies.get("svc_logged_in") is None
    # Anonymous again: reads work, writes are refused; the old cookie is void on the server.
    assert driver("read", note["id"])["title"] == "Before logging out"
    with pytest.raises(ProxyError) as refused:
        driver("create", {"title": "After logging out"})
    assert (refused.value.status, refused.value.code) == (401, "rest_cannot_create")
    with httpx.Client(transport=httpx.WSGITransport(app=app.wsgi), base_url=HOME) as replay:
        replay.cookies.set("svc_logged_in", session)
        assert "Logged in as" not in replay.get("/").text


def test_logout_without_a_session_says_so(drivers: Any) -> None:
    driver = drivers()
    assert driver("logout") is False
    # It fetched a nonce first (the anonymous one), then posted the log-out.
    assert driver.sent_lines() == [f"GET {HOME}/auth/nonce", f"POST {HOME}/logout"]
    assert driver.proxy.nonce is None


def test_logout_refreshes_a_stale_nonce_once(drivers: Any) -> None:
    driver = editor(drivers)
    driver.proxy.nonce = "0" * 32
    before = len(driver.sent)
    assert driver("logout") is True
    assert [request.url.path for request in driver.sent[before:]] == [
        "/logout",
        "/auth/nonce",
        "/logout",
    ]


def test_login_again_after_logout(drivers: Any) -> None:
    driver = editor(drivers)
    assert driver("logout") is True
    assert driver("login", "ed", "pw") == driver.proxy.nonce
    assert driver("create", {"title": "Back"})[0]["title"] == "Back"


# -- application passwords ------------------------------------------------------------------


def test_a_proxy_with_an_application_password_writes_without_login(app: App) -> None:
    # As the clients guide shows: `svcrest user app-password add ed "notes script"` prints
    # the password once; an httpx client sends it as Basic credentials, no cookie, no nonce.
    editor_user = app.users.get_by_login("ed")
    assert editor_user is not None
    password, _ = app.users.create_application_password(editor_user.id, "notes script")
    # Application passwords need https (or a loopback host): the requests come over https.
    secure = HOME.replace("http://", "https://")
    url = NOTES.replace(HOME, secure)
    client = httpx.Client(
        transport=httpx.WSGITransport(app=app.wsgi), base_url=secure, auth=("ed", password)
    )
    with client, RestProxy(url, client=client) as notes:
        [note] = notes.create({"title": "With an application password"})
        assert note["author"] == editor_user.id
        assert notes.nonce is None
        assert "svc_logged_in" not in client.cookies
        notes.destroy(note)
    refused = httpx.Client(
        transport=httpx.WSGITransport(app=app.wsgi), base_url=secure, auth=("ed", "wrong")
    )
    with refused, RestProxy(url, client=refused) as notes, pytest.raises(ProxyError) as error:
        notes.create({"title": "Refused"})
    assert (error.value.status, error.value.code) == (401, "incorrect_password")
