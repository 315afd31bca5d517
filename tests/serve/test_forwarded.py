"""Forwarded headers applied by svcrest itself (granian reads none), and ``Secure`` cookies
from a forwarded https request or an https home, on both adapters."""

from __future__ import annotations

import asyncio
import json
import re
import signal
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from svcrest import App, public
from svcrest.http.context import current_context
from svcrest.serve.forwarded import ForwardedASGI, ForwardedRSGI, ForwardedWSGI, TrustedPeers
from tests.conftest import SiteClient
from tests.serve.test_rsgi import FakeProtocol, FakeScope

ClientFor = Callable[..., SiteClient]

HOME = "http://site.test"
FORWARDED = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.1"}
# The cookie's value is signed with a random token: only its attributes are compared.
COOKIE_VALUE = re.compile(r"^svc_logged_in=alice\|[^;]+")


@pytest.mark.parametrize(
    ("spec", "peer", "trusted"),
    [
        ("127.0.0.1", "127.0.0.1", True),
        ("127.0.0.1", "127.0.0.2", False),
        ("10.0.0.1, 10.0.0.2", "10.0.0.2", True),
        ("10.0.0.0/8", "10.20.30.40", True),
        ("10.0.0.0/8", "11.0.0.1", False),
        ("::1", "0:0:0:0:0:0:0:1", True),
        ("*", "198.51.100.7", True),
        ("/run/proxy.sock", "/run/proxy.sock", True),
        ("127.0.0.1", "", False),
        ("127.0.0.1", None, False),
    ],
)
def test_trusted_peers(spec: str, peer: object, trusted: bool) -> None:
    assert (peer in TrustedPeers(spec)) is trusted


@pytest.mark.parametrize(
    ("forwarded_for", "client"),
    [
        ("203.0.113.1", "203.0.113.1"),
        ("203.0.113.1, 10.0.0.2", "203.0.113.1"),  # the proxy chain is trusted
        ("198.51.100.9, 203.0.113.1, 10.0.0.2", "203.0.113.1"),  # a client-made entry left out
        ("203.0.113.1:4711", "203.0.113.1"),
        ("[2001:db8::1]:4711", "2001:db8::1"),
        ("10.0.0.3, 10.0.0.2", "10.0.0.3"),  # all trusted: the leftmost
    ],
)
def test_the_client_is_the_nearest_untrusted_entry(forwarded_for: str, client: str) -> None:
    assert TrustedPeers("10.0.0.0/8").client(forwarded_for) == client


def _client() -> dict[str, str]:
    ctx = current_context()
    assert ctx is not None
    return {"client": ctx.client}


def _site() -> App:
    app = App(HOME, secret_key="test-secret")
    app.users.create("alice", "alice-pw")
    app.register_rest_route(
        "t/v1",
        "/peer",
        {
            "permission_callback": public,
            "callback": _client,
        },
    )
    return app


def _exchange(
    adapter: str, app: App, peer: str, headers: dict[str, str]
) -> tuple[httpx.Response, httpx.Response, httpx.Response]:
    """A login, the index and the peer route, each with ``headers``, from ``peer`` through the
    wrapper trusting 10.0.0.5."""
    peers = TrustedPeers("10.0.0.5")
    login = {"log": "alice", "pwd": "alice-pw"}
    if adapter == "wsgi":
        transport = httpx.WSGITransport(app=ForwardedWSGI(app.wsgi, peers), remote_addr=peer)
        with httpx.Client(transport=transport, base_url=HOME) as client:
            return (
                client.post("/login", data=login, headers=headers),
                client.get("/svc-json/", headers=headers),
                client.get("/svc-json/t/v1/peer", headers=headers),
            )
    wrapped: Any = ForwardedASGI(app, peers)

    async def send() -> tuple[httpx.Response, httpx.Response, httpx.Response]:
        transport = httpx.ASGITransport(app=wrapped, client=(peer, 4000))
        async with httpx.AsyncClient(transport=transport, base_url=HOME) as client:
            return (
                await client.post("/login", data=login, headers=headers),
                await client.get("/svc-json/", headers=headers),
                await client.get("/svc-json/t/v1/peer", headers=headers),
            )

    return asyncio.run(send())


@pytest.mark.parametrize(
    ("peer", "secure", "client"),
    [("10.0.0.5", True, "203.0.113.1"), ("192.0.2.9", False, "192.0.2.9")],
    ids=["trusted", "other"],
)
def test_forwarded_https_from_a_trusted_proxy(
    adapter: str, peer: str, secure: bool, client: str
) -> None:
    app = _site()
    login, index, seen = _exchange(adapter, app, peer, FORWARDED)
    assert login.status_code == 303
    attributes = COOKIE_VALUE.sub("", login.headers["set-cookie"])
    assert attributes == ("; Path=/; HttpOnly; SameSite=Lax" + ("; Secure" if secure else ""))
    scheme = "https" if secure else "http"
    assert index.headers["link"] == f'<{scheme}://site.test/svc-json/>; rel="https://api.w.org/"'
    assert seen.json() == {"client": client}
    app.store.close()


@pytest.mark.parametrize("proto", ["ftp", "https, http", ""])
def test_an_unknown_forwarded_scheme_is_ignored(adapter: str, proto: str) -> None:
    app = _site()
    login, _, _ = _exchange(adapter, app, "10.0.0.5", {"X-Forwarded-Proto": proto})
    assert COOKIE_VALUE.sub("", login.headers["set-cookie"]) == "; Path=/; HttpOnly; SameSite=Lax"
    app.store.close()


def _rsgi_exchange(
    app: App, peer: str, headers: dict[str, str]
) -> tuple[FakeProtocol, FakeProtocol, FakeProtocol]:
    """:func:`_exchange` on the RSGI interface (granian's scope and protocol stand-ins)."""
    wrapped = ForwardedRSGI(app, TrustedPeers("10.0.0.5"))
    lines = [("host", "site.test"), *((name.lower(), value) for name, value in headers.items())]
    form = b"log=alice&pwd=alice-pw"
    form_lines = [
        *lines,
        ("content-type", "application/x-www-form-urlencoded"),
        ("content-length", str(len(form))),
    ]

    async def send() -> tuple[FakeProtocol, FakeProtocol, FakeProtocol]:
        answered = []
        for method, path, sent, body in (
            ("POST", "/login", form_lines, [form]),
            ("GET", "/svc-json/", lines, []),
            ("GET", "/svc-json/t/v1/peer", lines, []),
        ):
            protocol = FakeProtocol(body)
            scope = FakeScope(method, path, lines=sent, client=f"{peer}:4000")
            await wrapped.__rsgi__(scope, protocol)
            answered.append(protocol)
        return answered[0], answered[1], answered[2]

    return asyncio.run(send())


@pytest.mark.parametrize(
    ("peer", "headers", "secure", "client"),
    [
        ("10.0.0.5", FORWARDED, True, "203.0.113.1"),
        ("10.0.0.5", {"X-Forwarded-For": "2001:db8::1"}, False, "2001:db8::1"),
        ("10.0.0.5", {"X-Forwarded-Proto": "ftp"}, False, "10.0.0.5"),
        ("192.0.2.9", FORWARDED, False, "192.0.2.9"),
    ],
    ids=["trusted", "trusted-ipv6-client-only", "unknown-scheme", "other"],
)
def test_rsgi_forwarded_https_from_a_trusted_proxy(
    peer: str, headers: dict[str, str], secure: bool, client: str
) -> None:
    app = _site()
    login, index, seen = _rsgi_exchange(app, peer, headers)
    assert login.status == 303
    attributes = COOKIE_VALUE.sub("", login.lines()["set-cookie"])
    assert attributes == ("; Path=/; HttpOnly; SameSite=Lax" + ("; Secure" if secure else ""))
    scheme = "https" if secure else "http"
    assert index.lines()["link"] == f'<{scheme}://site.test/svc-json/>; rel="https://api.w.org/"'
    assert json.loads(seen.body) == {"client": client}
    app.store.close()


def test_rsgi_the_workers_start_and_end_reach_the_site() -> None:
    app = _site()
    wrapped = ForwardedRSGI(app, TrustedPeers("*"))
    loop = asyncio.new_event_loop()
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        app.streams.close()
        wrapped.__rsgi_init__(loop)
        assert app.streams.closing is False
        wrapped.__rsgi_del__(loop)
        assert app.streams.closing is True
    finally:
        for signum, handler in saved.items():  # the site's start set its own
            signal.signal(signum, handler)
        loop.close()
        app.store.close()


def test_lifespan_passes_through() -> None:
    seen: list[str] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["type"])

    asyncio.run(ForwardedASGI(inner, TrustedPeers("*"))({"type": "lifespan"}, None, None))
    assert seen == ["lifespan"]


def test_an_https_home_makes_cookies_secure(client_for: ClientFor) -> None:
    """Behind a TLS proxy whose headers are not read, the request arrives as plain http; the
    https home still says the browser speaks https."""
    app = App("https://site.test", secret_key="test-secret")
    app.users.create("alice", "alice-pw")
    client = client_for(app, "http://site.test")
    login = client.post("/login", data={"log": "alice", "pwd": "alice-pw"})
    assert login.status_code == 303
    attributes = COOKIE_VALUE.sub("", login.headers["set-cookie"])
    assert attributes == "; Path=/; HttpOnly; SameSite=Lax; Secure"
    logout = client.post("/logout")  # the Secure cookie is not sent back over http: cleared
    assert logout.headers["set-cookie"] == (
        "svc_logged_in=; Path=/; HttpOnly; SameSite=Lax; Secure;"
        " Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0"
    )
    app.store.close()


def test_an_http_home_over_http_is_not_secure(client_for: ClientFor) -> None:
    app = App("http://site.test", secret_key="test-secret")
    app.users.create("alice", "alice-pw")
    login = client_for(app).post("/login", data={"log": "alice", "pwd": "alice-pw"})
    assert COOKIE_VALUE.sub("", login.headers["set-cookie"]) == "; Path=/; HttpOnly; SameSite=Lax"
    app.store.close()
