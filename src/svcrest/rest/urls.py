"""REST URL building: the prefix, get_rest_url and rest_url, as WordPress builds them."""

from __future__ import annotations

from urllib.parse import quote, urlsplit, urlunsplit

from svcrest.http.context import current_context
from svcrest.rest.settings import Site, SiteSettings

__all__ = [
    "DEFAULT_PREFIX",
    "Site",
    "get_rest_url",
    "https_forced",
    "normalise_path",
    "rewrite_rules",
]

DEFAULT_PREFIX = "svc-json"
# Characters left as they are in the ``rest_route`` query value; the rest is percent-encoded
# so a path can never end the value early (``&``, ``#``) or change its meaning (``+``, ``%``).
_ROUTE_SAFE = "/:@!$'()*,;=-._~"


def normalise_path(path: str) -> str:
    """Exactly one leading ``/``; an empty path is ``/``."""
    return "/" + path.lstrip("/")


def rewrite_rules(prefix: str) -> list[tuple[str, str]]:
    """WordPress's REST rewrite rules (``rest_api_register_rewrites``) as data, top priority
    first."""
    return [
        (f"^{prefix}/?$", "index.php?rest_route=/"),
        (f"^{prefix}/(.*)?", "index.php?rest_route=/$matches[1]"),
    ]


def _with_scheme(url: str, scheme: str) -> str:
    parts = urlsplit(url)
    if not parts.scheme:
        return url
    return urlunsplit((scheme, parts.netloc, parts.path, parts.query, parts.fragment))


def _build(site: Site, prefix: str, path: str) -> str:
    home = site.home.rstrip("/")
    if site.pretty_permalinks:
        return home + "/" + prefix + "/" + path.lstrip("/")
    route, sep, query = path.partition("?")
    parts = urlsplit(home + "/")
    joiner = "&" if parts.query else "?"
    url = home + "/" + joiner + "rest_route=" + quote(route, safe=_ROUTE_SAFE)
    return url + ("&" + query if sep and query else "")


def https_forced(url: str) -> bool:
    """Whether the current request came over TLS to the host of ``url`` (then REST URLs use
    https, as in WordPress's ``get_rest_url``)."""
    ctx = current_context()
    if ctx is None or not ctx.secure or not ctx.host:
        return False
    host = urlsplit(url).hostname
    return host is not None and host == ctx.host.lower()


def get_rest_url(
    app: SiteSettings, blog_id: int | None = None, path: str = "/", scheme: str = "rest"
) -> str:
    """The full (not escaped) URL of ``path`` on site ``blog_id`` (WordPress's
    ``get_rest_url``)."""
    site = app.get_site(blog_id)
    path = normalise_path(path or "/")
    url = _build(site, app.rest_get_url_prefix(), path)
    if scheme in ("http", "https"):
        url = _with_scheme(url, scheme)
    elif scheme == "relative":
        parts = urlsplit(url)
        url = urlunsplit(("", "", parts.path, parts.query, parts.fragment))
    if https_forced(url):
        url = _with_scheme(url, "https")
    result = app.hooks.apply_filters("rest_url", url, path, site.blog_id, scheme)
    return str(result) if result is not None else ""
