"""REST URL building: the prefix, get_rest_url and rest_url, as WordPress builds them."""

from __future__ import annotations

from urllib.parse import quote, urlsplit, urlunsplit

from svcrest.http.context import current_context
from svcrest.http.errors import RestError
from svcrest.http.forms import parse_form
from svcrest.rest.settings import Site, SiteSettings

__all__ = [
    "DEFAULT_PREFIX",
    "Site",
    "get_rest_url",
    "https_forced",
    "normalise_path",
    "rest_route_of",
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


def rest_route_of(base_path: str, path: str, query_string: str) -> str | RestError | None:
    """The REST route a request addresses, None when it is not a REST request.

    ``base_path`` is the REST root's URL path (``<home path>/<prefix>``). The path is REST
    when it is the base or below it (``/svc-jsonx`` is not); otherwise a non-empty
    ``rest_route`` query variable makes it one. One trailing slash is ignored; the base
    alone is the root ``/``.
    """
    # PERF: the usual REST path in four tests and a slice (with ``send`` bound once in
    # svcrest.syncrun, a WSGI GET 84,055 → 83,427 instructions, bench/instructions.py).
    if path.startswith(base_path):
        route = path[len(base_path) :]
        if not route:
            return "/"
        if route[0] == "/":
            return route[:-1] if route[-1] == "/" and len(route) > 1 else route
    if "rest_route" in query_string:
        value = parse_form(query_string).get("rest_route")
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            # WordPress's ``rest_api_loaded`` answer to an array (its ticket 62932).
            return RestError(
                "rest_path_invalid_type",
                "The REST route parameter must be a string.",
                {"status": 400},
            )
        route = "/" + value.lstrip("/")
    else:
        return None
    if route[-1] == "/" and len(route) > 1:
        route = route[:-1]
    return route
