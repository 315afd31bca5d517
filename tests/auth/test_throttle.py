"""Login throttling: per (login, address) and per address, in the store, /login and Basic."""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from svcrest import App, Request, public
from svcrest.auth.passwords import ScryptParams
from svcrest.auth.throttle import (
    DAY,
    MAX_ADDRESS_FAILURES,
    MAX_FAILURES,
    MAX_LOGIN_FAILURES_PER_DAY,
    WINDOW,
    LoginThrottle,
)
from svcrest.store.locations import open_store
from tests.auth.peers import PeerClient
from tests.conftest import SiteClient

ClientFor = Callable[..., SiteClient]
FAST = ScryptParams(n=16, r=1, p=1)
HOME = "http://127.0.0.1:8000"
ME = "/svc-json/demo/v1/me"
NOW = 1_700_000_000.0
THROTTLED = {
    "code": "svc_too_many_login_attempts",
    "message": "Too many failed login attempts. Try again later.",
    "data": {"status": 429},
}


class Site:
    def __init__(self, store: str | None) -> None:
        self.now = [NOW]
        self.app = App(HOME, clock=lambda: self.now[0], secret_key="test-secret", store=store)
        self.app.users.password_params = FAST
        self.alice = self.app.users.create("alice", "alice-pw", roles=("editor",))
        self.bob = self.app.users.create("bob", "bob-pw")

        def me(request: Request) -> dict[str, Any]:
            return {"id": request.user.id}

        self.app.register_rest_route(
            "demo/v1", "/me", {"permission_callback": public, "methods": "GET", "callback": me}
        )


@pytest.fixture
def site(store_location: str | None) -> Iterator[Site]:
    made = Site(store_location)
    yield made
    made.app.store.close()


def failed(throttle: LoginThrottle, login: str, ip: str) -> None:
    """A failed attempt of ``login`` from ``ip``: reserved (and counted), never settled."""
    assert throttle.reserve(login, ip).retry_after is None


def basic(login: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode()}


def test_the_throttle_counts_per_login_and_address_pair(site: Site) -> None:
    throttle = site.app.throttle
    for _ in range(MAX_FAILURES - 1):
        failed(throttle, "alice", "10.0.0.1")
    assert throttle.retry_after("alice", "10.0.0.1") is None
    site.now[0] += 10
    failed(throttle, "ALICE", "10.0.0.1")
    assert throttle.retry_after("alice", "10.0.0.1") == WINDOW - 10
    assert throttle.retry_after("Alice", "10.0.0.1") == WINDOW - 10
    # The owner, from an address with no failures, is let through; so is another login.
    assert throttle.retry_after("alice", "10.0.0.9") is None
    assert throttle.retry_after("alice", "") is None
    assert throttle.retry_after("bob", "10.0.0.1") is None
    site.now[0] += WINDOW - 10 - 1
    assert throttle.retry_after("alice", "10.0.0.1") == 1
    site.now[0] += 1  # the first nine left the window: one failure is left
    assert throttle.retry_after("alice", "10.0.0.1") is None


def test_one_address_spraying_many_logins_is_throttled(site: Site) -> None:
    throttle = site.app.throttle
    for number in range(MAX_ADDRESS_FAILURES - 1):
        failed(throttle, f"user{number}", "10.0.0.1")
    assert throttle.retry_after("someone", "10.0.0.1") is None
    site.now[0] += 30
    failed(throttle, "last", "10.0.0.1")
    assert throttle.retry_after("someone", "10.0.0.1") == WINDOW - 30
    assert throttle.retry_after("user0", "10.0.0.2") is None
    site.now[0] += WINDOW - 30
    assert throttle.retry_after("someone", "10.0.0.1") is None


def test_a_reservation_counts_until_it_succeeds(site: Site) -> None:
    throttle = site.app.throttle
    held = [throttle.reserve("alice", "10.0.0.1") for _ in range(MAX_FAILURES)]
    assert [reservation.retry_after for reservation in held] == [None] * MAX_FAILURES
    assert all(len(reservation.ids) == 2 for reservation in held)
    refused = throttle.reserve("alice", "10.0.0.1")
    assert (refused.retry_after, refused.ids) == (WINDOW, ())
    throttle.succeeded(held[0])
    assert throttle.retry_after("alice", "10.0.0.1") is None
    assert throttle.reserve("alice", "10.0.0.1").retry_after is None
    assert throttle.reserve("alice", "10.0.0.1").retry_after == WINDOW


def test_an_attempt_runs_its_check_only_when_allowed(site: Site) -> None:
    throttle = site.app.throttle
    checks: list[str] = []

    def wrong() -> str | None:
        checks.append("wrong")
        return None

    for _ in range(MAX_FAILURES):
        assert throttle.attempt("alice", "10.0.0.1", wrong) == (None, None)
    assert throttle.attempt("alice", "10.0.0.1", lambda: "alice") == (None, WINDOW)
    assert len(checks) == MAX_FAILURES
    # A right answer is not a failure: it does not count.
    assert throttle.attempt("alice", "10.0.0.2", lambda: "alice") == ("alice", None)
    for _ in range(MAX_FAILURES - 1):
        assert throttle.attempt("alice", "10.0.0.2", wrong) == (None, None)
    assert throttle.retry_after("alice", "10.0.0.2") is None


def test_the_form_login_answers_429_after_ten_failures(site: Site, client_for: ClientFor) -> None:
    client = client_for(site.app)
    for _ in range(MAX_FAILURES):
        response = client.post("/login", data={"log": "alice", "pwd": "wrong"})
        assert response.status_code == 403
    response = client.post("/login", data={"log": "alice", "pwd": "alice-pw"})
    assert response.status_code == 429
    assert response.headers["retry-after"] == str(WINDOW)
    assert "Too many failed login attempts. Try again later." in response.text
    assert "svc_logged_in" not in client.cookies
    json = client.post("/login", json={"log": "alice", "pwd": "alice-pw"})
    assert (json.status_code, json.json(), json.headers["retry-after"]) == (
        429,
        THROTTLED,
        str(WINDOW),
    )
    site.now[0] += WINDOW
    response = client.post("/login", data={"log": "alice", "pwd": "alice-pw"})
    assert response.status_code == 303


def test_basic_auth_is_throttled_too(site: Site, client_for: ClientFor) -> None:
    password, _ = site.app.users.create_application_password(site.alice.id, "phpunit")
    client = client_for(site.app)
    for _ in range(MAX_FAILURES):
        assert client.get(ME, headers=basic("alice", "wrong")).status_code == 401
    response = client.get(ME, headers=basic("alice", password))
    assert (response.status_code, response.json()) == (429, THROTTLED)
    assert response.headers["retry-after"] == str(WINDOW)
    site.now[0] += 60
    response = client.post("/login", data={"log": "alice", "pwd": "alice-pw"})
    assert (response.status_code, response.headers["retry-after"]) == (429, str(WINDOW - 60))
    site.now[0] += WINDOW - 60
    assert client.get(ME, headers=basic("alice", password)).json() == {"id": site.alice.id}


def test_hosts_share_the_counts(engine: str, tmp_path: Any, request: pytest.FixtureRequest) -> None:
    if engine == "sqlite":
        location = str(tmp_path / "site.db")
    else:
        location = request.getfixturevalue("postgres").new_schema()
    first, second = open_store(location), open_store(location)
    try:
        one, two = LoginThrottle(first, lambda: NOW), LoginThrottle(second, lambda: NOW)
        for _ in range(MAX_FAILURES):
            failed(one, "carol", "")
        assert two.retry_after("carol", "") == WINDOW
        assert two.retry_after("dave", "") is None
    finally:
        first.close()
        second.close()


# -- nobody can lock an account out from elsewhere ---------------------------------------------

ATTACKER, OWNER = "203.0.113.66", "198.51.100.7"


def test_failures_from_one_address_do_not_lock_the_owner_out_of_login(
    site: Site, adapter: str
) -> None:
    attacker = PeerClient(site.app, adapter, ATTACKER)
    owner = PeerClient(site.app, adapter, OWNER)
    try:
        for _ in range(MAX_FAILURES):
            assert attacker.post("/login", data={"log": "alice", "pwd": "wrong"}).status_code == 403
        refused = attacker.post("/login", json={"log": "alice", "pwd": "alice-pw"})
        assert (refused.status_code, refused.json(), refused.headers["retry-after"]) == (
            429,
            THROTTLED,
            str(WINDOW),
        )
        form = attacker.post("/login", data={"log": "alice", "pwd": "alice-pw"})
        assert (form.status_code, form.headers["retry-after"]) == (429, str(WINDOW))
        answer = owner.post("/login", json={"log": "alice", "pwd": "alice-pw"})
        assert (answer.status_code, answer.json()["user"]["id"]) == (200, site.alice.id)
        assert "retry-after" not in answer.headers
        assert owner.post("/login", data={"log": "alice", "pwd": "alice-pw"}).status_code == 303
    finally:
        attacker.close()
        owner.close()


def test_failures_from_one_address_do_not_lock_the_owner_out_of_basic(
    site: Site, adapter: str
) -> None:
    password, _ = site.app.users.create_application_password(site.alice.id, "phpunit")
    # https: application passwords work from any address.
    attacker = PeerClient(site.app, adapter, ATTACKER, base_url="https://127.0.0.1:8000")
    owner = PeerClient(site.app, adapter, OWNER, base_url="https://127.0.0.1:8000")
    try:
        for _ in range(MAX_FAILURES):
            assert attacker.get(ME, headers=basic("alice", "wrong")).status_code == 401
        refused = attacker.get(ME, headers=basic("alice", password))
        assert (refused.status_code, refused.json(), refused.headers["retry-after"]) == (
            429,
            THROTTLED,
            str(WINDOW),
        )
        answer = owner.get(ME, headers=basic("alice", password))
        assert (answer.status_code, answer.json()) == (200, {"id": site.alice.id})
        assert "retry-after" not in answer.headers
        # The attacker's address stays refused for that login, on /login too.
        login = attacker.post("/login", json={"log": "alice", "pwd": "alice-pw"})
        assert (login.status_code, login.headers["retry-after"]) == (429, str(WINDOW))
    finally:
        attacker.close()
        owner.close()


def test_an_address_spraying_logins_is_refused_for_every_login(site: Site, adapter: str) -> None:
    attacker = PeerClient(site.app, adapter, ATTACKER)
    owner = PeerClient(site.app, adapter, OWNER)
    try:
        for number in range(MAX_ADDRESS_FAILURES):
            answer = attacker.post("/login", json={"log": f"user{number}", "pwd": "guess"})
            assert answer.status_code == 403
        refused = attacker.post("/login", json={"log": "bob", "pwd": "bob-pw"})
        assert (refused.status_code, refused.json(), refused.headers["retry-after"]) == (
            429,
            THROTTLED,
            str(WINDOW),
        )
        assert owner.post("/login", json={"log": "bob", "pwd": "bob-pw"}).status_code == 200
    finally:
        attacker.close()
        owner.close()


# -- parallel attempts stop at the limit exactly -----------------------------------------------

PARALLEL = 40


@pytest.fixture
def file_site(engine: str, tmp_path: Any, request: pytest.FixtureRequest) -> Iterator[Site]:
    """A site on a SQLite file (one connection per thread) or a PostgreSQL schema."""
    if engine == "sqlite":
        location = str(tmp_path / "site.db")
    else:
        location = request.getfixturevalue("postgres").new_schema()
    made = Site(location)
    yield made
    made.app.store.close()


def _in_parallel(send: Callable[[], int]) -> list[int]:
    """The statuses of PARALLEL calls of ``send``, started together on as many threads."""
    start = threading.Barrier(PARALLEL)

    def run() -> int:
        start.wait()
        return send()

    with concurrent.futures.ThreadPoolExecutor(PARALLEL) as pool:
        return sorted(pool.map(lambda _: run(), range(PARALLEL)))


def _slowed(calls: list[str], function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``, counting its calls and taking 20 ms longer each (so attempts overlap)."""

    def slow(*args: Any) -> Any:
        calls.append("call")
        time.sleep(0.02)
        return function(*args)

    return slow


def test_parallel_wrong_logins_evaluate_exactly_the_limit(
    file_site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    users = file_site.app.users
    evaluations: list[str] = []
    monkeypatch.setattr(users, "authenticate", _slowed(evaluations, users.authenticate))
    local = threading.local()

    def send() -> int:
        if not hasattr(local, "client"):
            transport = httpx.WSGITransport(app=file_site.app.wsgi, remote_addr=ATTACKER)
            local.client = httpx.Client(transport=transport, base_url=HOME)
        return int(local.client.post("/login", json={"log": "alice", "pwd": "wrong"}).status_code)

    statuses = _in_parallel(send)
    assert len(evaluations) == MAX_FAILURES
    assert statuses == [403] * MAX_FAILURES + [429] * (PARALLEL - MAX_FAILURES)


def test_parallel_wrong_logins_over_asgi_evaluate_exactly_the_limit(
    file_site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    users = file_site.app.users
    evaluations: list[str] = []
    monkeypatch.setattr(users, "authenticate", _slowed(evaluations, users.authenticate))

    async def send_all() -> list[int]:
        transport = httpx.ASGITransport(app=file_site.app, client=(ATTACKER, 50000))
        async with httpx.AsyncClient(transport=transport, base_url=HOME) as client:
            answers = await asyncio.gather(
                *(
                    client.post("/login", json={"log": "alice", "pwd": "wrong"})
                    for _ in range(PARALLEL)
                )
            )
        return sorted(answer.status_code for answer in answers)

    statuses = asyncio.run(send_all())
    assert len(evaluations) == MAX_FAILURES
    assert statuses == [403] * MAX_FAILURES + [429] * (PARALLEL - MAX_FAILURES)


def test_parallel_wrong_basic_attempts_evaluate_exactly_the_limit(
    file_site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    users = file_site.app.users
    evaluations: list[str] = []
    monkeypatch.setattr(
        users,
        "verify_application_password",
        _slowed(evaluations, users.verify_application_password),
    )
    local = threading.local()

    def send() -> int:
        if not hasattr(local, "client"):
            transport = httpx.WSGITransport(app=file_site.app.wsgi, remote_addr="127.0.0.1")
            local.client = httpx.Client(transport=transport, base_url=HOME)
        return int(local.client.get(ME, headers=basic("alice", "wrong")).status_code)

    statuses = _in_parallel(send)
    assert len(evaluations) == MAX_FAILURES
    assert statuses == [401] * MAX_FAILURES + [429] * (PARALLEL - MAX_FAILURES)


# -- one login's failures a day, from every address (a botnet) ---------------------------------

#: NOW is 6,400 s before the end of its UTC day.
DAY_LEFT = 6400
BOTS = [f"203.0.113.{n}" for n in range(1, 9)]


def test_the_day_limit_of_a_login_is_1000_by_default(site: Site) -> None:
    assert MAX_LOGIN_FAILURES_PER_DAY == 1000
    assert site.app.throttle.login_day_limit == 1000
    assert DAY - NOW % DAY == DAY_LEFT


def test_a_botnet_gets_a_bounded_number_of_guesses_a_day(site: Site, adapter: str) -> None:
    """Each address stays under its own limits; together they stop at the login's day
    limit. The owner, at an address a right password came from before, still logs in."""
    site.app.throttle.login_day_limit = 5
    owner = PeerClient(site.app, adapter, OWNER)
    bots = [PeerClient(site.app, adapter, address) for address in BOTS]
    try:
        assert owner.post("/login", data={"log": "alice", "pwd": "alice-pw"}).status_code == 303
        for bot in bots[:5]:
            assert bot.post("/login", data={"log": "alice", "pwd": "wrong"}).status_code == 403
        for pwd in ("wrong", "alice-pw"):  # a right password from a new address too
            refused = bots[5].post("/login", json={"log": "alice", "pwd": pwd})
            assert (refused.status_code, refused.json()) == (429, THROTTLED)
            assert refused.headers["retry-after"] == str(DAY_LEFT)
        assert site.app.throttle.retry_after("ALICE", BOTS[6]) == DAY_LEFT
        # The owner's address is known: not locked out.
        again = owner.post("/login", data={"log": "alice", "pwd": "alice-pw"})
        assert again.status_code == 303
        assert site.app.throttle.retry_after("alice", OWNER) is None
        # Another login is not touched.
        assert bots[6].post("/login", data={"log": "bob", "pwd": "bob-pw"}).status_code == 303
        site.now[0] += DAY_LEFT  # a new day
        assert bots[7].post("/login", data={"log": "alice", "pwd": "wrong"}).status_code == 403
    finally:
        for client in (owner, *bots):
            client.close()


def test_basic_attempts_count_for_the_day_and_know_the_passwords_address(adapter: str) -> None:
    app = App("https://site.example", clock=lambda: NOW, secret_key="test-secret")
    app.users.password_params = FAST
    alice = app.users.create("alice", "alice-pw")
    password, _ = app.users.create_application_password(alice.id, "laptop")
    app.register_rest_route(
        "demo/v1",
        "/me",
        {"permission_callback": public, "callback": lambda request: {"id": request.user.id}},
    )
    app.throttle.login_day_limit = 3
    owner = PeerClient(app, adapter, OWNER)
    bots = [PeerClient(app, adapter, address) for address in BOTS]
    try:
        assert owner.get(ME, headers=basic("alice", password)).json() == {"id": alice.id}
        for bot in bots[:3]:
            assert bot.get(ME, headers=basic("alice", "wrong")).status_code == 401
        for guess in ("wrong", password):
            refused = bots[3].get(ME, headers=basic("alice", guess))
            assert (refused.status_code, refused.json()) == (429, THROTTLED)
            assert refused.headers["retry-after"] == str(DAY_LEFT)
        # The address that last used the password is the account's.
        assert owner.get(ME, headers=basic("alice", password)).json() == {"id": alice.id}
    finally:
        for client in (owner, *bots):
            client.close()
