"""What the site layer needs from the site it serves, and the shape of its pages.

The App satisfies :class:`SiteHost`; nothing here imports it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Protocol

from svcrest.auth.service import AuthService
from svcrest.auth.throttle import LoginThrottle
from svcrest.auth.users import UserStore
from svcrest.http.context import RequestContext
from svcrest.http.exchange import HttpRequest, HttpResponse
from svcrest.rest.server import RestServer
from svcrest.rest.settings import SiteSettings
from svcrest.site.edge import RequestEdge, RequestObserver
from svcrest.site.processes import ProcessCheck

__all__ = ["ASGIApp", "Page", "PageHandler", "PageRefusal", "RequestObserver", "SiteHost"]

#: An ASGI application (``scope, receive, send``).
ASGIApp = Callable[
    [
        MutableMapping[str, Any],
        Callable[[], Awaitable[MutableMapping[str, Any]]],
        Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ],
    Awaitable[None],
]


class SiteHost(SiteSettings, Protocol):
    """A site as its pages and the request entry point see it."""

    #: Site pages outside the REST prefix: path (relative to home) → Page.
    pages: dict[str, Page]
    #: An ASGI app answering every request outside the REST prefix instead of ``pages``.
    site: ASGIApp | None
    #: The REST server once created, None before (:meth:`rest_get_server` creates it).
    rest_server: RestServer | None
    #: Whether several worker processes would split the site's in-memory store.
    process_check: ProcessCheck
    #: Told of each request answered, when set (:data:`RequestObserver`).
    request_observer: RequestObserver | None
    #: The site's observers as prepared for its requests (None until its first request,
    #: and again after ``request_observer`` changes: :mod:`svcrest.site.edge`).
    request_edge: RequestEdge | None

    @property
    def store_in_memory(self) -> bool:
        """Whether the store lives in this process's memory only (``App()`` without one)."""
        ...

    @property
    def auth(self) -> AuthService:
        """Nonces, auth cookies and sessions."""
        ...

    @property
    def users(self) -> UserStore:
        """The site's users."""
        ...

    @property
    def throttle(self) -> LoginThrottle:
        """The site's login failure counts."""
        ...

    def rest_get_server(self) -> RestServer:
        """The REST server (created on first use)."""
        ...

    def rest_output_link_wp_head(self) -> str:
        """The HTML head discovery link tag."""
        ...


#: A page handler: gets the site, the HTTP request and its context, returns the response.
PageHandler = Callable[[SiteHost, HttpRequest, RequestContext], Awaitable[HttpResponse]]


#: A page's own answer to a request the site refuses before its handler: ``(status,
#: reason)``, say ``(413, "Request Too Large")`` or ``(405, "Method Not Allowed")``.
PageRefusal = Callable[[int, str], HttpResponse]


class Page:
    """A page: its handler and the methods it answers (HEAD follows GET). ``html``: False
    for a page that never answers HTML (an API endpoint), whose answers the framing rule
    then leaves unread (:func:`svcrest.site.pages.forbid_framing` changes only HTML).
    ``refuse``: the page's answer to a body past the site's limit (413) or another method
    (405, the site adds ``Allow``), in its own format (an API's clients read no HTML
    page); the site's HTML pages when None."""

    __slots__ = ("handler", "html", "methods", "refuse")

    def __init__(
        self,
        handler: PageHandler,
        methods: tuple[str, ...] = ("GET",),
        *,
        html: bool = True,
        refuse: PageRefusal | None = None,
    ) -> None:
        self.handler = handler
        self.methods = methods
        self.html = html
        self.refuse = refuse
