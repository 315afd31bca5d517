"""The session cache on PostgreSQL: a broken listener, the setting that turns it off, expired
sessions and revocations made by another process."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from svcrest import App, Request, public
from svcrest.auth.cookies import format_auth_cookie
from svcrest.auth.passwords import password_fragment
from svcrest.auth.service import SESSION_CACHE_FILTER, SESSION_LIFETIME
from svcrest.auth.session_cache import DEFAULT_MAX_ENTRIES, LEASE, SessionCache
from svcrest.site.pages import LOGOUT_ACTION
from svcrest.store.pg_relay import _STARTED
from tests.auth.test_auth_hosts import behind_svcrest, cache_on, make_host
from tests.conftest import SiteClient
from tests.pg import PostgresServer

ClientFor = Callable[..., SiteClient]


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def url(postgres: PostgresServer) -> str:
    return postgres.new_schema()


@pytest.fixture
def host(url: str) -> Iterator[App]:
    app = make_host(url)
    app.users.create("alice", "alice-pw", roles=("editor",))
    yield app
    app.store.close()


def issue(app: App) -> str:
    user = app.users.get(1)
    assert user is not None
    return app.auth.log_in(user, remember=False, ip="ip", user_agent="ua", secure=False).value


def the_cache(app: App) -> SessionCache:
    cache = app.auth.session_cache
    assert cache is not None
    return cache


def test_postgresql_hosts_cache_sessions_with_the_default_bounds(host: App) -> None:
    cache = the_cache(host)
    assert (cache.max_entries, cache.max_bytes, cache.lease) == (
        DEFAULT_MAX_ENTRIES,
        8 << 20,
        0.05,
    )


def test_the_filter_turns_the_cache_off(url: str) -> None:
    app = make_host(url)
    app.hooks.add_filter(SESSION_CACHE_FILTER, lambda entries: 0)
    app.users.create("alice", "alice-pw")
    cookie = issue(app)
    assert app.auth.session_cache is None
    assert app.auth.validate_cookie(cookie) is not None
    behind_svcrest(app, "DELETE FROM sessions")
    assert app.auth.validate_cookie(cookie) is None
    app.store.close()


def test_a_broken_listener_turns_the_cache_off_until_it_listens_again(
    host: App,
) -> None:
    cookie = issue(host)
    cache_on(host, cookie)
    cache = the_cache(host)
    listener: Any = host.store._listeners[0]  # type: ignore[attr-defined]
    # The host's one listening connection, held by the relay's process this process started.
    relay = _STARTED[listener._path]
    behind_svcrest(
        host,
        "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
        " WHERE application_name = 'svcrest-listen' AND datname = current_database()",
    )
    deadline = time.monotonic() + 5
    while listener.listening:  # the relay tells its clients at once
        assert time.monotonic() < deadline, "the listener did not notice"
        time.sleep(0.01)
    os.kill(relay, signal.SIGSTOP)  # no reconnection for now (it waits a second first)
    # Still correct: the session is read from the store, the cache is empty and unused.
    assert host.auth.validate_cookie(cookie) is not None
    assert (cache.listening, cache.trusted, len(cache)) == (False, False, 0)
    behind_svcrest(host, "DELETE FROM sessions")  # no notification: only a read sees it
    assert host.auth.validate_cookie(cookie) is None
    assert (cache.listening, len(cache)) == (False, 0)
    # The listener reconnects in the background; then the cache serves again.
    os.kill(relay, signal.SIGCONT)
    second = issue(host)
    deadline = time.monotonic() + 10
    while not cache.listening:
        assert time.monotonic() < deadline, "the listener did not reconnect"
        time.sleep(0.01)
        assert host.auth.validate_cookie(second) is not None
    assert listener.epoch == 2
    cache_on(host, second)


def test_an_expired_session_is_refused_from_the_cache(url: str) -> None:
    clock = Clock()
    app = make_host(url, clock=clock)
    user = app.users.create("alice", "alice-pw")
    issued = app.auth.log_in(user, remember=False, ip="ip", user_agent="ua", secure=False)
    encoded = app.users.password_hash(1)
    assert encoded is not None
    # A cookie that outlives its session (signed with the site secret): only the session's
    # own expiration refuses it.
    longer = format_auth_cookie(
        app.secret_key,
        "alice",
        issued.expiration + 86400,
        issued.token,
        password_fragment(encoded),
    )
    seen: list[str] = []
    app.hooks.add_action("auth_cookie_bad_session_token", lambda info: seen.append("bad"))
    cache = the_cache(app)
    deadline = time.monotonic() + 5
    while True:
        assert time.monotonic() < deadline, "never refused from the cache"
        clock.now = issued.expiration - SESSION_LIFETIME
        cache.clear()
        while not cache.trusted:
            assert app.auth.validate_cookie(longer) is not None
            time.sleep(0.002)
        assert app.auth.validate_cookie(longer) is not None
        clock.now = issued.expiration + 1
        assert app.auth.validate_cookie(longer) is None
        if len(cache) == 0:  # the expired entry was found in the cache and dropped
            break
    clock.now = issued.expiration
    assert app.auth.validate_cookie(longer) is not None  # up to and including that second
    assert seen[-1] == "bad"
    app.store.close()


def test_a_password_set_by_the_command_line_refuses_cached_cookies(url: str) -> None:
    app = make_host(url)
    app.users.create("alice", "alice-pw")
    cookie = issue(app)
    cache_on(app, cookie)
    command = [
        sys.executable,
        "-m",
        "svcrest",
        "user",
        "set-password",
        "alice",
        "--db",
        url,
    ]
    command.append("--password-stdin")
    done = subprocess.run(command, input="new-password-1\n", capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert app.auth.validate_cookie(cookie) is None
    app.store.close()


@pytest.mark.parametrize("adapter", ["asgi", "wsgi"])
def test_a_logout_holds_its_answer_for_the_lease_not_the_event_loop(
    host: App, monkeypatch: pytest.MonkeyPatch, adapter: str
) -> None:
    user = host.users.get(1)
    assert user is not None
    issued = host.auth.log_in(user, remember=False, ip="ip", user_agent="ua", secure=False)
    nonce = host.auth.create_nonce(LOGOUT_ACTION, user.id, issued.token)
    slept: list[float] = []
    awaited: list[float] = []
    real_sleep = asyncio.sleep

    async def recorded_sleep(delay: float) -> None:
        awaited.append(delay)
        await real_sleep(delay)

    monkeypatch.setattr(time, "sleep", slept.append)  # a sleep on the loop would hold it
    monkeypatch.setattr(asyncio, "sleep", recorded_sleep)

    async def log_out() -> httpx.Response:
        transport = httpx.ASGITransport(app=host)
        async with httpx.AsyncClient(transport=transport, base_url=host.home) as client:
            client.cookies.set("svc_logged_in", issued.value)
            return await client.post("/logout", data={"_wpnonce": nonce})

    if adapter == "asgi":
        response = asyncio.run(log_out())
    else:  # the WSGI thread's own loop waits, as an ASGI server's would
        with httpx.Client(transport=httpx.WSGITransport(app=host.wsgi), base_url=host.home) as c:
            c.cookies.set("svc_logged_in", issued.value)
            response = c.post("/logout", data={"_wpnonce": nonce})
    assert response.status_code == 303
    assert slept == []
    assert len(awaited) == 1 and 0 < awaited[0] <= LEASE
    assert host.auth.validate_cookie(issued.value) is None


def test_revocations_in_an_atomic_batch_wait_the_lease_after_its_commit(
    host: App, url: str, client_for: ClientFor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside the batch's transaction a revocation is not sent yet: the wait comes after
    the commit, once for every revocation of the batch."""
    cookie = issue(host)
    revoked = 0

    def revoke(request: Request) -> dict[str, int]:
        nonlocal revoked
        host.auth.sessions.destroy_all(1)
        revoked += 1
        return {"revoked": revoked}

    host.register_rest_route(
        "hosts/v1",
        "/revoke",
        {
            "methods": "POST",
            "callback": revoke,
            "permission_callback": public,
            "allow_batch": {"v1": True, "atomic": True},
        },
    )
    witness = make_host(url)  # another host: sees what was committed, nothing else
    slept: list[tuple[float, bool]] = []

    def recorded_sleep(delay: float) -> None:
        slept.append((delay, witness.auth.validate_cookie(cookie) is None))

    monkeypatch.setattr(time, "sleep", recorded_sleep)
    request = {"method": "POST", "path": "/hosts/v1/revoke"}
    response = client_for(host).post(
        "/svc-json/batch/v1", json={"validation": "atomic", "requests": [request, request]}
    )
    assert response.status_code == 207
    assert [slot["body"] for slot in response.json()["responses"]] == [
        {"revoked": 1},
        {"revoked": 2},
    ]
    assert slept == [(LEASE, True)]  # one wait, begun when the revocation was committed
    witness.store.close()
