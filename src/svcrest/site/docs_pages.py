"""``GET {home}/openapi.json`` and the API docs page ``GET {home}/docs`` (docs/guides/openapi.md).

The docs page is Swagger UI 5 (it reads OpenAPI 3.1), whose files come from the
``swagger-ui-bundle-v2`` package (Apache-2.0; a runtime dependency of svcrest) and are served
by the site itself under ``/docs/swagger-ui/<version>/``: the page loads nothing from
elsewhere, and its Content-Security-Policy lets it load nothing from elsewhere. Swagger UI's
online validator badge is off. For a logged-in user the page carries the ``svc_rest`` nonce (so
"Try it out" works with the login cookie) and is never cacheable.

The document is built from the registry on each request of ``/openapi.json``, so it is always
in step with the routes.
"""

from __future__ import annotations

import functools
import html
import re
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Final
from urllib.parse import urlsplit

import orjson

from svcrest.auth.rest_cookie import NONCE_ACTION
from svcrest.http.context import RequestContext
from svcrest.http.exchange import HttpRequest, HttpResponse
from svcrest.rest.openapi import build_openapi, rest_root_for_servers
from svcrest.site.host import Page, PageHandler, SiteHost
from svcrest.site.pages import FAVICON_PATH, html_page, site_request_user

__all__ = [
    "DOCS_PATH",
    "OPENAPI_PATH",
    "SWAGGER_FILES",
    "install_docs_pages",
    "swagger_ui_dir",
]

OPENAPI_PATH: Final = "/openapi.json"
DOCS_PATH: Final = "/docs"
#: The Swagger UI files the page uses, and their content types.
SWAGGER_FILES: Final = {
    "swagger-ui-bundle.js": "text/javascript; charset=UTF-8",
    "swagger-ui.css": "text/css; charset=UTF-8",
}
#: The page's own script (served from ``svcrest/static`` by the core pages).
DOCS_SCRIPT: Final = "/static/openapi-docs.js"
_VERSION_DIR = re.compile(r"swagger-ui-(\d+)\.(\d+)\.(\d+)")
#: Swagger UI reads OpenAPI 3.1 from version 5 on.
_MIN_MAJOR = 5


@functools.cache
def swagger_ui_dir() -> tuple[str, Traversable] | None:
    """The newest Swagger UI (5 or later) the ``swagger_ui_bundle`` package ships, as
    ``(version, folder)``; None when it is not installed. Looked up once per process."""
    try:
        vendor = resources.files("swagger_ui_bundle") / "vendor"
    except ModuleNotFoundError:
        return None
    if not vendor.is_dir():
        return None
    found: list[tuple[tuple[int, int, int], Traversable]] = []
    for entry in vendor.iterdir():
        match = _VERSION_DIR.fullmatch(entry.name)
        if match is not None and entry.is_dir() and int(match[1]) >= _MIN_MAJOR:
            version = (int(match[1]), int(match[2]), int(match[3]))
            if all((entry / name).is_file() for name in SWAGGER_FILES):
                found.append((version, entry))
    if not found:
        return None
    version, folder = max(found, key=lambda item: item[0])
    return ".".join(map(str, version)), folder


@functools.cache
def _asset(name: str) -> bytes:
    """A Swagger UI file's bytes, read once per process (a fixed set of files)."""
    located = swagger_ui_dir()
    if located is None:  # pragma: no cover - pages are only installed when it is found
        raise FileNotFoundError(name)
    return (located[1] / name).read_bytes()


def _asset_page(name: str) -> PageHandler:
    content_type = SWAGGER_FILES[name]

    async def serve(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
        return HttpResponse(
            200,
            [
                ("Content-Type", content_type),
                ("X-Content-Type-Options", "nosniff"),
                # The URL names the version: a new version is a new URL.
                ("Cache-Control", "public, max-age=31536000, immutable"),
            ],
            _asset(name),
        )

    return serve


async def _openapi_json(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
    document = build_openapi(app.rest_get_server(), app)
    return HttpResponse(
        200,
        [
            ("Content-Type", "application/json; charset=UTF-8"),
            ("X-Content-Type-Options", "nosniff"),
            ("Cache-Control", "no-cache"),
        ],
        orjson.dumps(document, option=orjson.OPT_NON_STR_KEYS),
    )


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _policy(app: SiteHost) -> str:
    """SECURITY: the page may load only this site's files and talk only to the REST root
    (``frame-ancestors 'none'`` joins it as on every site page: ``forbid_framing``)."""
    connect = " ".join(dict.fromkeys(("'self'", _origin(rest_root_for_servers(app)))))
    return (
        "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        f"img-src 'self' data:; font-src 'self' data:; connect-src {connect}; "
        "base-uri 'none'; form-action 'none'"
    )


def _missing_assets(app: SiteHost) -> HttpResponse:
    spec = html.escape(app.home_path + OPENAPI_PATH)
    body = (
        "<h1>API documentation</h1>\n<p>The docs page needs Swagger UI 5, which the "
        "<code>swagger-ui-bundle-v2</code> package ships; it is not installed. The OpenAPI "
        f'document is at <a href="{spec}"><code>{spec}</code></a>.</p>'
    )
    return html_page(app, f"{app.name} API", body, status=503)


async def _docs(app: SiteHost, http: HttpRequest, ctx: RequestContext) -> HttpResponse:
    located = swagger_ui_dir()
    if located is None:
        return _missing_assets(app)
    await site_request_user(app, http, ctx)
    base = app.home_path
    assets = html.escape(f"{base}{DOCS_PATH}/swagger-ui/{located[0]}/")
    nonce = ""
    if ctx.user.is_logged_in:
        nonce = app.auth.create_nonce(NONCE_ACTION, ctx.user.id, ctx.session_token)
    title = f"{app.name} API"
    document = (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n"
        f'<link rel="stylesheet" href="{assets}swagger-ui.css">\n'
        f'<link rel="icon" type="image/svg+xml" href="{html.escape(base + FAVICON_PATH)}">\n'
        "<style>body{margin:0;background:#fafafa;font-family:system-ui,sans-serif}"
        ".docs-bar{padding:.6rem 1.25rem;background:#1d2327;color:#f0f0f1;font-size:14px}"
        ".docs-bar a{color:#72aee6;margin-right:1rem}</style>\n"
        "</head>\n<body>\n"
        f'<nav class="docs-bar"><a href="{html.escape(base + "/")}">&larr; '
        f"{html.escape(app.name)}</a>"
        f'<a href="{html.escape(base + OPENAPI_PATH)}">openapi.json</a></nav>\n'
        f'<div id="swagger-ui" data-spec-url="{html.escape(base + OPENAPI_PATH)}" '
        f'data-nonce="{html.escape(nonce)}"></div>\n'
        "<noscript><p>This page needs JavaScript; the OpenAPI document is at "
        f'<a href="{html.escape(base + OPENAPI_PATH)}">openapi.json</a>.</p></noscript>\n'
        f'<script src="{assets}swagger-ui-bundle.js"></script>\n'
        f'<script src="{html.escape(base + DOCS_SCRIPT)}"></script>\n'
        "</body>\n</html>\n"
    )
    headers = [
        ("Content-Type", "text/html; charset=UTF-8"),
        ("X-Content-Type-Options", "nosniff"),
        ("Content-Security-Policy", _policy(app)),
        ("Referrer-Policy", "same-origin"),
    ]
    if nonce:
        # SECURITY: the page carries a nonce; no cache may keep it.
        headers.append(("Cache-Control", "no-store"))
    return HttpResponse(200, headers, document.encode())


def install_docs_pages(app: SiteHost) -> None:
    """Register ``/openapi.json``, ``/docs`` and the Swagger UI files it loads."""
    app.pages[OPENAPI_PATH] = Page(_openapi_json)
    app.pages[DOCS_PATH] = Page(_docs)
    located = swagger_ui_dir()
    if located is not None:
        for name in SWAGGER_FILES:
            app.pages[f"{DOCS_PATH}/swagger-ui/{located[0]}/{name}"] = Page(_asset_page(name))
