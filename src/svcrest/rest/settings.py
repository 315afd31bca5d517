"""What the REST layer needs to know about the site it serves.

The layers below the App never import it: they receive an object satisfying
:class:`SiteSettings` (the App does) and read the site's name, addresses, URL prefix, clock
and hooks through it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from svcrest.hooks import Hooks
from svcrest.http.serializers import Serializers
from svcrest.rest.auth_schemes import AuthSchemes

__all__ = ["Site", "SiteSettings"]


@dataclass(frozen=True, slots=True)
class Site:
    """One site of a (multi)site install: its home address and URL style."""

    blog_id: int
    home: str
    pretty_permalinks: bool = True


class SiteSettings(Protocol):
    """The site a REST server serves: settings, URL building and hooks."""

    hooks: Hooks
    name: str
    description: str
    max_body_size: int
    clock: Callable[[], float]
    #: Clients written for WordPress work unchanged (``X-WP-Nonce``, ``X-WP-Total``…).
    wordpress_compat: bool
    #: REST answers carry ``Server-Timing`` (:mod:`svcrest.rest.timing`).
    server_timing: bool
    #: The site's own API version (``info.version`` of its OpenAPI document), or None.
    version: str | None
    #: The site's authentication schemes (CORS, OpenAPI, the index, the credentials check).
    auth_schemes: AuthSchemes
    #: The site's response formats when it has more than JSON (chosen by ``Accept``), None
    #: when it answers JSON only (docs/guides/response-formats.md).
    serializers: Serializers | None

    @property
    def home(self) -> str:
        """The current site's home address, without a trailing slash."""
        ...

    @property
    def home_path(self) -> str:
        """The URL path of the home, without a trailing slash ("" at the root)."""
        ...

    @property
    def timezone_string(self) -> str:
        """The IANA timezone name, or "" for a fixed offset."""
        ...

    def gmt_offset(self) -> float | int:
        """The site's current UTC offset in hours."""
        ...

    def get_site(self, blog_id: int | None = None) -> Site:
        """The site ``blog_id`` (None: the current one)."""
        ...

    def rest_get_url_prefix(self) -> str:
        """The URL prefix REST requests live under (default ``svc-json``)."""
        ...

    def rest_base_path(self) -> str:
        """The URL path of the REST root: home path + ``/`` + prefix."""
        ...

    def get_rest_url(
        self, blog_id: int | None = None, path: str = "/", scheme: str = "rest"
    ) -> str:
        """The full URL of ``path`` on site ``blog_id``."""
        ...

    def rest_url(self, path: str = "", scheme: str = "json") -> str:
        """The full URL of ``path`` on the current site."""
        ...

    def rest_output_link_header(self) -> str | None:
        """The discovery ``Link`` header value, None when not sent."""
        ...
