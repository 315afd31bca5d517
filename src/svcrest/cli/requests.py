"""``svcrest routes``, ``openapi`` and ``request``: read a site without serving it.

DECISION: ``svcrest request`` does not call ``app.rest_do_request``. Internal dispatch is, by
WordPress's design, only the server's ``dispatch``: no authentication, no
``rest_post_dispatch`` (``_fields``, Allow), no ``_envelope``, no ``rest_pre_serve_request``
(CORS) and none of the REST header block. The command builds an HTTP request instead and
hands it to the App's ASGI callable (what ``svcrest serve`` runs) through httpx's in-process
ASGI transport, so the answer, its status line and every header are exactly what a client of
``svcrest serve`` would get, and every query variable the HTTP path knows (``_fields``,
``_envelope``, ``_method``, ``_embed``) works.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from decimal import Decimal
from http import HTTPStatus
from typing import Final
from urllib.parse import urlsplit

import httpx
import orjson

from svcrest.app import App
from svcrest.cli.common import CliError, svcrest_version
from svcrest.cli.site import (
    existing_site,
    new_app,
    open_store,
    register_plugins,
    require_database,
)
from svcrest.http.answer_json import dumps_answer
from svcrest.http.user import User
from svcrest.rest.urls import rest_route_of


def _site(args: argparse.Namespace) -> App:
    """The site of a command that reads one: its database must exist and open, checked
    before the plugins load (they may open the store while they register)."""
    app = new_app(args.db, args.home)
    require_database(args.db)
    open_store(app, args.db)  # a database that cannot be opened is not a plugin's failure
    register_plugins(app, args.plugin, demo=args.demo)
    return app


def cmd_routes(args: argparse.Namespace) -> int:
    with existing_site(_site(args), args.db) as app:
        routes = app.rest_get_server().get_routes()
    for route, handlers in routes.items():
        methods = dict.fromkeys(method for handler in handlers for method in handler["methods"])
        print(f"{route} {', '.join(methods)}".rstrip())
    return 0


def cmd_openapi(args: argparse.Namespace) -> int:
    with existing_site(_site(args), args.db) as app:
        document = app.openapi()
    option = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
    print(orjson.dumps(document, option=option).decode())
    return 0


def _status_line(status: int) -> str:
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def request_target(app: App, target: str) -> str:
    """The URL path and query string on ``app``'s site that ``svcrest request`` sends for
    ``target``. CliError when ``target`` cannot be served by this site.

    ``target`` is one of:

    - a full URL on the site (``http://127.0.0.1:8000/svc-json/demo/v1/notes?per_page=2``),
      whose scheme, host and port must be those of the home (``--home`` sets it) and which
      must address the REST API;
    - a path that addresses the REST API over HTTP: under the REST root
      (``/svc-json/demo/v1/notes``, with or without the home's own path in front) or with a
      ``rest_route`` query variable (``?rest_route=/demo/v1/notes``, ``/?rest_route=…``);
    - otherwise a route (``/demo/v1/notes?per_page=2``, ``demo/v1/notes``), sent under the
      REST root.
    """
    base_path = app.rest_base_path()
    if "://" in target:
        return _url_target(app, target, base_path)
    path, mark, query = target.partition("?")
    path = path if path.startswith("/") else "/" + path
    home_path = app.home_path
    on_site = not home_path or path == home_path or path.startswith(home_path + "/")
    candidate = path if on_site else home_path + path
    if rest_route_of(base_path, candidate, query) is None:
        candidate = base_path + path  # a route
    return candidate + mark + query


_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, parts.hostname, parts.port or _DEFAULT_PORTS.get(scheme)


def _url_target(app: App, url: str, base_path: str) -> str:
    try:
        parts = urlsplit(url)
        elsewhere = _origin(url) != _origin(app.home)
    except ValueError as exc:
        raise CliError(f"invalid URL {url!r}: {exc}") from exc
    if elsewhere:
        root = f"{parts.scheme}://{parts.netloc}"
        raise CliError(
            f"{url} is not on this site, whose home is {app.home} (to serve it, pass --home {root})"
        )
    path = parts.path or "/"
    if rest_route_of(base_path, path, parts.query) is None:
        raise CliError(
            f"{url} is not a REST URL: its path is not under {app.get_rest_url()} and it has"
            " no rest_route query variable"
        )
    return path + ("?" + parts.query if parts.query else "")


def _act_as(app: App, login: str) -> None:
    """Make ``login`` the current user of the requests ``app`` serves, the way another
    authentication scheme (an application password, a plugin) would: a
    ``determine_current_user`` filter. A user so authenticated needs no nonce."""
    user = app.users.get_by_login(login)
    if user is None:
        raise CliError(f"no user with the login {login!r}")

    def command_line_user(current: User) -> User:
        return user

    app.hooks.add_filter("determine_current_user", command_line_user)


def _request_body(args: argparse.Namespace) -> tuple[dict[str, str], bytes]:
    # The request names itself, so that ``--include`` prints the same lines each time.
    headers = {
        "User-Agent": f"svcrest/{svcrest_version()} (svcrest request)",
        "X-Request-Id": "svcrest-request",
    }
    if args.json is None:
        return headers, b""
    try:
        orjson.loads(args.json)
    except orjson.JSONDecodeError as exc:
        raise CliError(f"--json is not valid JSON: {exc}") from exc
    headers["Content-Type"] = "application/json"
    return headers, args.json.encode()


def _serve_in_process(
    app: App, method: str, url: str, headers: dict[str, str], body: bytes
) -> httpx.Response:
    """``app``'s answer to one HTTP request, served through its ASGI callable in-process."""

    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, trust_env=False) as client:
            return await client.request(method, url, headers=headers, content=body)

    return asyncio.run(send())


def _print_answer(response: httpx.Response, include: bool) -> None:
    """The status line, the header lines as served (with ``include``), then the body: JSON
    indented by two spaces, anything else as text."""
    print(_status_line(response.status_code))
    if include:
        for name, value in response.headers.raw:
            print(f"{name.decode('latin-1')}: {value.decode('latin-1')}")
        print()
    if not response.content:
        return
    try:
        # Numbers with a fraction or an exponent as Decimal: printed with the digits served
        # (``19.90`` stays ``19.90``, as a ``Decimal`` answer sends it).
        data = json.loads(response.content, parse_float=Decimal)
        text = dumps_answer(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    except (ValueError, orjson.JSONEncodeError):  # not JSON, or an integer past 64 bits
        print(response.text)
        return
    print(text.decode())


def cmd_request(args: argparse.Namespace) -> int:
    app = _site(args)
    target = request_target(app, args.route)
    headers, body = _request_body(args)
    with existing_site(app, args.db):
        if args.user is not None:
            _act_as(app, args.user)
        origin = urlsplit(app.home)
        url = f"{origin.scheme}://{origin.netloc}{target}"
        response = _serve_in_process(app, args.method, url, headers, body)
    _print_answer(response, args.include)
    return 0 if response.status_code < 400 else 1
