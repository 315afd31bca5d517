"""``X-Forwarded-Proto`` and ``X-Forwarded-For`` from trusted proxies, for servers that read
neither (granian).

Behind a TLS-terminating proxy the server sees the proxy's address and plain http. With
``svcrest serve --proxy-headers --forwarded-allow-ips IPS`` uvicorn applies the two headers
itself; granian does not, so the launcher has granian load the site through
:func:`wsgi_from_env` / :func:`asgi_from_env` / :func:`rsgi_from_env`, which wrap it in
:class:`ForwardedWSGI` / :class:`ForwardedASGI` / :class:`ForwardedRSGI`. The rules are
uvicorn's: only a request whose peer is in the allowed list (addresses, networks such as
``10.0.0.0/8``, or ``*``) is changed; ``X-Forwarded-Proto`` sets the scheme when it is
exactly ``http`` or ``https``; the client address is the nearest ``X-Forwarded-For`` entry
(from the right) that is not itself trusted, or the leftmost when all are. A request
forwarded as https then gets ``Secure`` cookies and https URLs.
"""

from __future__ import annotations

import functools
import importlib
import ipaddress
import os
from collections.abc import Iterable, MutableMapping
from typing import Any, Final

from svcrest.serve.rsgi import client_host

__all__ = [
    "ASGI_FACTORY",
    "ENV_ALLOW_IPS",
    "ENV_TARGET",
    "RSGI_FACTORY",
    "WSGI_FACTORY",
    "ForwardedASGI",
    "ForwardedRSGI",
    "ForwardedWSGI",
    "TrustedPeers",
    "asgi_from_env",
    "call_factory",
    "configure",
    "rsgi_from_env",
    "wsgi_from_env",
]

#: The factories granian loads with ``--proxy-headers``.
WSGI_FACTORY: Final = "svcrest.serve.forwarded:wsgi_from_env"
ASGI_FACTORY: Final = "svcrest.serve.forwarded:asgi_from_env"
RSGI_FACTORY: Final = "svcrest.serve.forwarded:rsgi_from_env"
#: The site's own factory (``module:function``) the wrappers call.
ENV_TARGET: Final = "SVCREST_FORWARDED_TARGET"
#: The comma-separated trusted addresses (``--forwarded-allow-ips``).
ENV_ALLOW_IPS: Final = "SVCREST_FORWARDED_ALLOW_IPS"
_SCHEMES: Final = frozenset({"http", "https"})

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _host_of(entry: str) -> str:
    """The address of one ``X-Forwarded-For`` entry, without a port (``[::1]:80``,
    ``10.0.0.1:80``); an entry that is neither is kept whole (and so never trusted)."""
    if entry.startswith("["):
        end = entry.find("]")
        return entry[1:end] if end > 0 else entry
    if entry.count(":") == 1:
        return entry.partition(":")[0]
    return entry


class TrustedPeers:
    """The addresses whose forwarded headers are believed (``--forwarded-allow-ips``)."""

    def __init__(self, spec: str) -> None:
        items = [item.strip() for item in spec.split(",") if item.strip()]
        self.everyone = "*" in items
        self._addresses: set[ipaddress.IPv4Address | ipaddress.IPv6Address] = set()
        self._networks: list[Network] = []
        self._literals: set[str] = set()
        for item in items:
            try:
                if "/" in item:
                    self._networks.append(ipaddress.ip_network(item, strict=False))
                else:
                    self._addresses.add(ipaddress.ip_address(item))
            except ValueError:  # not an address: a literal peer (a unix socket path)
                self._literals.add(item)
        # PERF: parsing an address costs ~1 µs; bounded, as forwarded entries are the client's.
        self._trusted = functools.lru_cache(maxsize=1024)(self._compute)

    def _compute(self, host: str) -> bool:
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return host in self._literals
        return address in self._addresses or any(address in net for net in self._networks)

    def __contains__(self, host: object) -> bool:
        if self.everyone:
            return True
        if not isinstance(host, str) or not host or len(host) > 255:
            return False
        return bool(self._trusted(host))

    def client(self, forwarded_for: str) -> str:
        """The client address ``forwarded_for`` names ("" when it names none)."""
        entries = [_host_of(item.strip()) for item in forwarded_for.split(",")]
        if not self.everyone:
            for host in reversed(entries):
                if host not in self:
                    return host
        return entries[0] if entries else ""


def _forwarded_scheme(value: str | None) -> str | None:
    if value is None:
        return None
    scheme = value.strip().lower()
    return scheme if scheme in _SCHEMES else None


class ForwardedWSGI:
    """A WSGI application whose requests from trusted peers take the forwarded scheme
    (``wsgi.url_scheme``) and client (``REMOTE_ADDR``)."""

    def __init__(self, app: Any, peers: TrustedPeers) -> None:
        self.app = app
        self.peers = peers

    def __call__(self, environ: MutableMapping[str, Any], start_response: Any) -> Any:
        if environ.get("REMOTE_ADDR") in self.peers:
            scheme = _forwarded_scheme(environ.get("HTTP_X_FORWARDED_PROTO"))
            if scheme is not None:
                environ["wsgi.url_scheme"] = scheme
            forwarded_for = environ.get("HTTP_X_FORWARDED_FOR")
            if forwarded_for:
                client = self.peers.client(forwarded_for)
                if client:
                    environ["REMOTE_ADDR"] = client
        return self.app(environ, start_response)


def _forwarded_lines(headers: Iterable[tuple[bytes, bytes]]) -> tuple[str | None, str]:
    """The last ``X-Forwarded-Proto`` line and every ``X-Forwarded-For`` line, joined."""
    proto: str | None = None
    forwarded_for: list[str] = []
    for name, value in headers:
        if name == b"x-forwarded-proto":
            proto = value.decode("latin-1")
        elif name == b"x-forwarded-for":
            forwarded_for.append(value.decode("latin-1"))
    return proto, ", ".join(forwarded_for)


class ForwardedASGI:
    """An ASGI application whose HTTP scopes from trusted peers take the forwarded
    ``scheme`` and ``client``."""

    def __init__(self, app: Any, peers: TrustedPeers) -> None:
        self.app = app
        self.peers = peers

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        client = scope.get("client")
        if scope.get("type") == "http" and client and client[0] in self.peers:
            proto, forwarded_for = _forwarded_lines(scope.get("headers", ()))
            scope = dict(scope)
            scheme = _forwarded_scheme(proto)
            if scheme is not None:
                scope["scheme"] = scheme
            address = self.peers.client(forwarded_for) if forwarded_for else ""
            if address:
                scope["client"] = (address, 0)
        await self.app(scope, receive, send)


def _rsgi_address(host: str) -> str:
    """``host`` as an RSGI client address (``"203.0.113.1:0"``, ``"[2001:db8::1]:0"``)."""
    return f"[{host}]:0" if ":" in host else f"{host}:0"


class _ForwardedScope:
    """An RSGI scope with the forwarded ``scheme`` and ``client``; every other field is the
    scope's own."""

    __slots__ = ("_scope", "client", "scheme")

    def __init__(self, scope: Any, scheme: str, client: str) -> None:
        self._scope = scope
        self.scheme = scheme
        self.client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._scope, name)


class ForwardedRSGI:
    """An RSGI application (granian's own interface) whose HTTP scopes from trusted peers
    take the forwarded ``scheme`` and ``client``; the worker's start and end reach the
    site."""

    def __init__(self, app: Any, peers: TrustedPeers) -> None:
        self.app = app
        self.peers = peers

    def __rsgi_init__(self, loop: Any) -> None:
        self.app.__rsgi_init__(loop)

    def __rsgi_del__(self, loop: Any) -> None:
        self.app.__rsgi_del__(loop)

    async def __rsgi__(self, scope: Any, protocol: Any) -> None:
        if scope.proto == "http" and client_host(scope.client) in self.peers:
            headers = scope.headers
            protos = headers.get_all("x-forwarded-proto")
            forwarded_for = ", ".join(headers.get_all("x-forwarded-for"))
            scheme = _forwarded_scheme(protos[-1] if protos else None)
            address = self.peers.client(forwarded_for) if forwarded_for else ""
            if scheme is not None or address:
                client = _rsgi_address(address) if address else scope.client
                scope = _ForwardedScope(scope, scheme or scope.scheme, client)
        await self.app.__rsgi__(scope, protocol)


def configure(target: str, allow_ips: str) -> None:
    """Set the environment :func:`wsgi_from_env` and :func:`asgi_from_env` read: the site's
    factory ``target`` and the trusted addresses."""
    os.environ[ENV_TARGET] = target
    os.environ[ENV_ALLOW_IPS] = allow_ips


def call_factory(target: str) -> Any:
    """What the factory ``target`` (``module:function``, a dotted function name allowed)
    returns."""
    module, _, name = target.partition(":")
    factory: Any = importlib.import_module(module)
    for part in name.split("."):
        factory = getattr(factory, part)
    return factory()


def _site_from_env() -> Any:
    return call_factory(os.environ[ENV_TARGET])


def _peers_from_env() -> TrustedPeers:
    return TrustedPeers(os.environ.get(ENV_ALLOW_IPS, "127.0.0.1"))


def wsgi_from_env() -> ForwardedWSGI:
    """The WSGI factory of granian's workers with ``--proxy-headers``: the site the factory
    ``SVCREST_FORWARDED_TARGET`` builds, trusting ``SVCREST_FORWARDED_ALLOW_IPS``."""
    return ForwardedWSGI(_site_from_env(), _peers_from_env())


def asgi_from_env() -> ForwardedASGI:
    """The ASGI factory of granian's workers with ``--proxy-headers`` (see
    :func:`wsgi_from_env`)."""
    return ForwardedASGI(_site_from_env(), _peers_from_env())


def rsgi_from_env() -> ForwardedRSGI:
    """The RSGI factory of granian's workers with ``--proxy-headers`` (see
    :func:`wsgi_from_env`)."""
    return ForwardedRSGI(_site_from_env(), _peers_from_env())
