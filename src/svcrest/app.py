"""App: one site — its settings, hooks, lazily created server, URLs, users and auth."""

from __future__ import annotations

import datetime as dt
import functools
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from svcrest.abilities.registry import AbilityRegistrationError, AbilityRegistry
from svcrest.auth.app_passwords import install_application_password_auth
from svcrest.auth.rest_cookie import install_cookie_auth
from svcrest.auth.session_watch import SessionWatch, revocation_marks
from svcrest.dates import resolve_timezone
from svcrest.dates import rest_get_date_with_gmt as _date_with_gmt
from svcrest.hooks import Hooks
from svcrest.http.context import current_context, enter_dispatch_user, leave_dispatch_user
from svcrest.http.forms import parse_form
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.http.serializers import JSON_SERIALIZER, Serializer, Serializers
from svcrest.http.streams import DEFAULT_MAX_STREAMS, StreamSlots
from svcrest.rest import discovery
from svcrest.rest.auth_schemes import AuthSchemes
from svcrest.rest.batch import register_batch_route
from svcrest.rest.compat import install_rest_compat
from svcrest.rest.defaults import (
    CORS_ALLOW_METHODS,
    WORDPRESS_CORS_ALLOW_METHODS,
    CorsLines,
    cors_allow_methods_value,
    register_default_filters,
)
from svcrest.rest.definition_errors import RouteDefinitionError
from svcrest.rest.openapi import build_openapi
from svcrest.rest.reauth import still_authenticated
from svcrest.rest.resources.controller import RestController
from svcrest.rest.resources.fields_registry import (
    GetCallback,
    RestField,
    RestFields,
    UpdateCallback,
)
from svcrest.rest.routing.definitions import (
    ROUTE_ONLY_OPTIONS,
    RoutePatternError,
    argument_notices,
    build_full_route,
    lacks_permission_callback,
)
from svcrest.rest.server import RestServer
from svcrest.rest.settings import Site
from svcrest.rest.urls import DEFAULT_PREFIX, get_rest_url, https_forced
from svcrest.serve.asgi import handle_asgi
from svcrest.serve.rsgi import handle_rsgi, rsgi_del, rsgi_init
from svcrest.serve.wsgi import WSGIAdapter
from svcrest.site.auth_pages import install_auth_pages
from svcrest.site.authorize_app import AUTHORIZE_PATH, install_authorize_application_page
from svcrest.site.docs_pages import install_docs_pages
from svcrest.site.edge import RequestEdge, RequestObserver
from svcrest.site.host import ASGIApp, Page
from svcrest.site.mcp import install_mcp_page
from svcrest.site.pages import install_core_pages
from svcrest.site.processes import ProcessCheck
from svcrest.site.wp_compat import install_wordpress_compat_pages
from svcrest.syncrun import run_sync

if TYPE_CHECKING:
    from svcrest.abilities.ability import Ability, AbilityCategory
    from svcrest.auth.service import AuthService
    from svcrest.auth.throttle import LoginThrottle
    from svcrest.auth.users import UserStore
    from svcrest.serve.metrics import Figures
    from svcrest.store.base import Store
    from svcrest.store.change_record import Changes
    from svcrest.store.request_guards import StoredGuards
    from svcrest.store.webhooks import Webhooks

__all__ = ["DEFAULT_MAX_BODY_SIZE", "App", "DoingItWrong"]

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=RestController)
DEFAULT_MAX_BODY_SIZE = 10 * 1024 * 1024
#: The REST server's own ``dispatch_async`` (a subclass may have its own).
_DISPATCH_ASYNC = RestServer.dispatch_async


class DoingItWrong(UserWarning):
    """A developer notice: the API was called in a way that cannot work (WordPress's
    ``_doing_it_wrong``).

    ``refused_route`` is the full route when the notice is that of a route
    ``register_rest_route`` refused (it returned False), else None: ``svcrest serve`` and
    ``svcrest routes`` stop on such a notice, so a site never starts without a route its
    plugin meant to register.
    """

    refused_route: str | None = None


class App:
    """A svcrest site: register routes, then serve it (``app`` is an ASGI application and
    an RSGI one, ``app.wsgi`` the same site over WSGI) or dispatch internally with
    ``rest_do_request``."""

    # PERF: the attributes only the App's own code reads live in slots. CPython 3.11 keeps
    # at most 30 attributes of a class's instances in shared-key values; past that an
    # instance's dict becomes a plain dict, and every method call on the App
    # (``rest_base_path``, ``rest_output_link_header``, ``rest_url``) and attribute read
    # looks its name up in that dict first. Measured: WSGI GET -723 instructions, a
    # StoreCollection item GET -2,221. ``__dict__`` keeps every other attribute (and a
    # subclass's) where it was, ``__weakref__`` the App's weak references.
    __slots__ = (
        "__dict__",
        "__weakref__",
        "_auth",
        "_changes",
        "_controllers",
        "_default_base_path",
        "_home_path",
        "_link_cache",
        "_lock",
        "_plain_link",
        "_request_guards",
        "_request_observer",
        "_secret_key",
        "_store",
        "_store_spec",
        "_throttle",
        "_tzinfo",
        "_url_filter_memo",
        "_users",
        "_webhooks",
        "_wsgi",
    )

    def __init__(
        self,
        home: str = "http://127.0.0.1:8000",
        *,
        pretty_permalinks: bool = True,
        timezone: str = "UTC",
        name: str = "svcrest",
        description: str = "",
        secret_key: str | bytes | None = None,
        secret_key_fallbacks: Iterable[str | bytes] = (),
        store: Any = None,
        site: ASGIApp | None = None,
        blog_id: int = 1,
        clock: Callable[[], float] | None = None,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        wordpress_compat: bool = False,
        version: str | None = None,
        server_timing: bool = False,
        cors_allow_methods: str | Iterable[str] | None = None,
        mcp: bool = False,
        max_streams: int = DEFAULT_MAX_STREAMS,
    ) -> None:
        parts = urlsplit(home)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"home must be an absolute http(s) URL, not {home!r}")
        if version is not None and (not isinstance(version, str) or not version.strip()):
            raise ValueError(f"version must be a non-empty string or None, not {version!r}")
        self.hooks = Hooks()
        self.name = name
        self.description = description
        self.timezone = timezone
        self._tzinfo = resolve_timezone(timezone)
        self.blog_id = blog_id
        self.sites: dict[int, Site] = {blog_id: Site(blog_id, home.rstrip("/"), pretty_permalinks)}
        self.site = site
        self._home_path = parts.path.rstrip("/")
        self._default_base_path = self._home_path + "/" + DEFAULT_PREFIX
        self._url_filter_memo: tuple[int, bool] = (-1, False)
        self._link_cache: dict[bool, str | None] = {}
        #: (hooks version, the discovery Link value of a request not over TLS) while no URL
        #: filter is registered: see :meth:`rest_output_link_header`.
        self._plain_link: tuple[int, str | None] = (-1, None)
        self.clock: Callable[[], float] = clock or time.time
        self.max_body_size = max_body_size
        #: The streams this process serves at once (change feeds' Server-Sent Events and
        #: JSON Lines; :attr:`max_streams` bounds them, ``svcrest serve --max-streams``).
        self.streams = StreamSlots(max_streams)
        #: Clients written for WordPress work unchanged: ``X-WP-Nonce`` is read as
        #: ``X-SVC-Nonce``, ``X-WP-Total``/``X-WP-TotalPages`` are sent beside svcrest's, and
        #: ``/wp-admin/admin-ajax.php?action=rest-nonce`` answers a fresh nonce as text.
        self.wordpress_compat = wordpress_compat
        #: REST answers carry ``Server-Timing: auth;dur=…, dispatch;dur=…, total;dur=…``
        #: (off by default: it tells clients how long each part took).
        self.server_timing = server_timing
        #: The CORS lines answering each Origin, with ``Access-Control-Allow-Methods``:
        #: ``cors_allow_methods`` when given, else current WordPress's list (with PATCH) under
        #: ``wordpress_compat``, else the spec's (WordPress 4.4's, no PATCH).
        self.cors = CorsLines(
            cors_allow_methods_value(cors_allow_methods)
            if cors_allow_methods is not None
            else WORDPRESS_CORS_ALLOW_METHODS
            if wordpress_compat
            else CORS_ALLOW_METHODS
        )
        #: The site's own API version: ``info.version`` of ``/openapi.json`` (None: the
        #: REST API's version, ``REST_API_VERSION``).
        self.version = version
        self._secret_key = secret_key.encode() if isinstance(secret_key, str) else secret_key
        self.secret_key_fallbacks: tuple[bytes, ...] = tuple(
            key.encode() if isinstance(key, str) else key for key in secret_key_fallbacks
        )
        if any(not isinstance(key, bytes) or not key for key in self.secret_key_fallbacks):
            raise ValueError("secret_key_fallbacks must be non-empty str or bytes keys")
        self._store_spec = store
        self._store: Store | None = None
        self._users: UserStore | None = None
        self._throttle: LoginThrottle | None = None
        self._request_guards: StoredGuards | None = None
        self._webhooks: Webhooks | None = None
        self._changes: Changes | None = None
        self._auth: AuthService | None = None
        #: The response formats besides JSON, chosen by ``Accept`` (None: JSON only; see
        #: :meth:`add_serializer`). PERF: a plain attribute, read by every REST answer.
        self.serializers: Serializers | None = None
        #: The REST server once created, None before (read-only: ``rest_get_server()``
        #: creates it). PERF: a plain attribute, read by every REST request.
        self.rest_server: RestServer | None = None
        self._lock = threading.RLock()
        self._wsgi: WSGIAdapter | None = None
        #: Refuses serving an in-memory store from several worker processes (read by the
        #: adapters; see ``svcrest.site.processes``).
        self.process_check = ProcessCheck()
        self._request_observer: RequestObserver | None = None
        #: The site's observers as prepared for its requests (``svcrest.site.edge``): None
        #: until the first request, and again after :attr:`request_observer` changes.
        self.request_edge: RequestEdge | None = None
        #: Told of each batch request's size when set (the same metrics).
        self.batch_observer: Callable[[int], None] | None = None
        #: Fields added to resources by ``register_rest_field`` (WordPress's
        #: ``$wp_rest_additional_fields``), read by every bound ``RestController``.
        self.rest_fields = RestFields()
        self._controllers: list[RestController] = []
        self.hooks.add_action("rest_api_init", register_default_filters)
        self.hooks.add_action("rest_api_init", register_batch_route)
        #: Site pages outside the REST prefix: path (relative to home) → Page.
        self.pages: dict[str, Page] = {}
        install_core_pages(self)
        #: The site's authentication schemes (docs/guides/authentication.md): add one with
        #: ``app.auth_schemes.add(AuthScheme(...))``.
        self.auth_schemes = AuthSchemes(self.hooks)
        install_cookie_auth(self.auth_schemes, lambda: self.auth, wordpress_compat=wordpress_compat)
        install_application_password_auth(
            self.auth_schemes,
            lambda: self.users,
            lambda: self.throttle,
            lambda: self.home,
            authorize_url=lambda: self.home + AUTHORIZE_PATH,
        )
        self.hooks.add_action("rest_api_init", self._register_application_passwords)
        if wordpress_compat:
            install_rest_compat(self.hooks)
            install_wordpress_compat_pages(self)
        install_auth_pages(self)
        install_authorize_application_page(self)
        install_docs_pages(self)
        #: The site's abilities and ability categories (``register_ability``).
        self.abilities = AbilityRegistry(self.hooks)
        self.abilities.on_first = self._serve_abilities
        #: ``<home>/mcp`` serves the Model Context Protocol (docs/guides/mcp.md): the
        #: abilities and the routes marked ``"mcp": True`` as tools. Off: no such page, and
        #: nothing else changes.
        self.mcp = mcp
        if mcp:
            install_mcp_page(self)

    # -- site settings ----------------------------------------------------------------------

    @property
    def home(self) -> str:
        """The current site's home address, without a trailing slash."""
        return self.sites[self.blog_id].home

    @property
    def pretty_permalinks(self) -> bool:
        """Whether the current site uses ``/<prefix>/…`` URLs (else ``?rest_route=``)."""
        return self.sites[self.blog_id].pretty_permalinks

    @property
    def timezone_string(self) -> str:
        """The IANA timezone name, or "" for a fixed offset (as WordPress reports it)."""
        tz = self.timezone
        return "" if tz[:1] in "+-" else tz

    def gmt_offset(self) -> float | int:
        """The site's current UTC offset in hours (5.5 for +05:30)."""
        now = dt.datetime.fromtimestamp(self.clock(), dt.UTC).astimezone(self._tzinfo)
        offset = now.utcoffset() or dt.timedelta()
        hours = offset.total_seconds() / 3600
        return int(hours) if hours.is_integer() else hours

    def add_site(self, blog_id: int, home: str, *, pretty_permalinks: bool = True) -> None:
        """Add a site of a multisite install, for URL building."""
        self.sites[blog_id] = Site(blog_id, home.rstrip("/"), pretty_permalinks)
        self._link_cache.clear()
        self._plain_link = (-1, None)
        self._home_path = urlsplit(self.home).path.rstrip("/")
        self._default_base_path = self._home_path + "/" + DEFAULT_PREFIX

    def get_site(self, blog_id: int | None = None) -> Site:
        """The site ``blog_id`` (None: the current one); ValueError for an unknown id."""
        key = self.blog_id if blog_id is None else blog_id
        try:
            return self.sites[key]
        except KeyError:
            raise ValueError(f"unknown blog id {blog_id!r}; add it with App.add_site") from None

    def add_serializer(self, serializer: Serializer) -> Serializer:
        """Answer in ``serializer``'s format too (``app.add_serializer(msgpack_serializer())``):
        from then on each REST answer's format is chosen by the request's ``Accept`` (JSON
        when it names none of the site's formats) and carries ``Vary: Accept``
        (docs/guides/response-formats.md). ValueError when its media type, one of its
        aliases or its tag suffix is taken already."""
        current = self.serializers
        self.serializers = (current or Serializers((JSON_SERIALIZER,))).with_serializer(serializer)
        return serializer

    # -- URLs and discovery -----------------------------------------------------------------

    def rest_get_url_prefix(self) -> str:
        """The URL prefix (default ``svc-json``), through the ``rest_url_prefix`` filter."""
        if not self._url_filters():
            return DEFAULT_PREFIX
        prefix = self.hooks.apply_filters("rest_url_prefix", DEFAULT_PREFIX)
        return str(prefix).strip("/")

    @property
    def request_observer(self) -> RequestObserver | None:
        """Told of each request answered (method, route pattern, status, seconds) when set:
        ``svcrest serve --admin-port`` sets the Prometheus metrics (docs/guides/operating.md)."""
        return self._request_observer

    @request_observer.setter
    def request_observer(self, observer: RequestObserver | None) -> None:
        self._request_observer = observer
        self.request_edge = None  # prepared again, with it, on the next request

    @property
    def home_path(self) -> str:
        """The URL path of the current site's home, without a trailing slash ("" at the root)."""
        return self._home_path

    def rest_base_path(self) -> str:
        """The URL path REST requests live under: the home's path + ``/`` + the prefix."""
        # PERF: the memo of ``_url_filters`` read in place (this runs on every request).
        memo = self._url_filter_memo
        if memo[0] == self.hooks.version and not memo[1]:
            return self._default_base_path
        if not self._url_filters():
            return self._default_base_path
        return self._home_path + "/" + self.rest_get_url_prefix()

    def _url_filters(self) -> bool:
        """Whether ``rest_url`` or ``rest_url_prefix`` has callbacks. PERF: remembered per
        version of the hooks (read on every request)."""
        memo = self._url_filter_memo
        hooks = self.hooks
        if memo[0] != hooks.version:
            version = hooks.version
            memo = self._url_filter_memo = (
                version,
                hooks.has_callbacks("rest_url") or hooks.has_callbacks("rest_url_prefix"),
            )
        return memo[1]

    def get_rest_url(
        self, blog_id: int | None = None, path: str = "/", scheme: str = "rest"
    ) -> str:
        """The URL of REST ``path`` on site ``blog_id`` (None: the current site), as WordPress's
        ``get_rest_url``: pretty or ``?rest_route=`` form, ``scheme`` ``"http"``/``"https"``
        forced, ``"relative"`` without scheme and host, https when the current request came
        over TLS to the home's host; then the ``rest_url`` filter."""
        return get_rest_url(self, blog_id, path, scheme)

    def rest_url(self, path: str = "", scheme: str = "json") -> str:
        """``get_rest_url`` for the current site (WordPress's ``rest_url``)."""
        return get_rest_url(self, None, path, scheme)

    def rest_output_rsd(self) -> str:
        """The RSD ``api`` line (WordPress's ``rest_output_rsd``)."""
        return discovery.rest_output_rsd(self)

    def rest_output_link_wp_head(self) -> str:
        """The HTML head ``link`` tag (WordPress's ``rest_output_link_wp_head``)."""
        return discovery.rest_output_link_wp_head(self)

    def rest_output_link_header(self) -> str | None:
        """The discovery ``Link`` header value (WordPress's ``rest_output_link_header``), None
        when not sent."""
        # PERF: a request not over TLS, no URL filter: the value remembered for this version
        # of the hooks (this runs on every REST answer; 39 bytecodes and a call before).
        plain = self._plain_link
        if plain[0] == self.hooks.version:
            ctx = current_context()
            if ctx is None or not ctx.secure:
                return plain[1]
        return self._link_header()

    def _link_header(self) -> str | None:
        """:meth:`rest_output_link_header` made (or read from the per-scheme memory)."""
        version = self.hooks.version
        if self._url_filters():
            return discovery.rest_output_link_header(self)
        # Without URL filters the value depends only on whether https is forced, which needs
        # a request over TLS.
        ctx = current_context()
        key = ctx is not None and ctx.secure and https_forced(self.home)
        cache = self._link_cache
        if key not in cache:
            cache[key] = discovery.rest_output_link_header(self)
        if not key:
            self._plain_link = (version, cache[key])
        return cache[key]

    # -- dates ------------------------------------------------------------------------------

    def rest_get_date_with_gmt(self, date: str, force_utc: bool = False) -> tuple[str, str] | None:
        """``rest_get_date_with_gmt`` in the site's timezone: ``(local, utc)`` or None."""
        return _date_with_gmt(date, force_utc, self.timezone)

    # -- deprecation ------------------------------------------------------------------------

    def deprecated_function(
        self, function: str, version: str, replacement: str | None = None
    ) -> None:
        """Report a call of a deprecated function (WordPress's ``_deprecated_function``): the
        ``deprecated_function_run`` action, then a ``DeprecationWarning`` unless the
        ``deprecated_function_trigger_error`` filter says False (it does during REST requests,
        which get an ``X-SVC-DeprecatedFunction`` header instead)."""
        self.hooks.do_action("deprecated_function_run", function, replacement, version)
        if self.hooks.apply_filters("deprecated_function_trigger_error", True):
            use = f" Use {replacement} instead." if replacement else " No alternative available."
            warnings.warn(
                f"{function} is deprecated since version {version}.{use}",
                DeprecationWarning,
                stacklevel=3,
            )

    def deprecated_argument(self, function: str, version: str, message: str | None = None) -> None:
        """Report the use of a deprecated argument (WordPress's ``_deprecated_argument``), as
        ``deprecated_function`` does, with the ``deprecated_argument_*`` hooks and the
        ``X-SVC-DeprecatedParam`` header."""
        self.hooks.do_action("deprecated_argument_run", function, message, version)
        if self.hooks.apply_filters("deprecated_argument_trigger_error", True):
            extra = f" {message}" if message else " No alternative available."
            warnings.warn(
                f"{function} was called with an argument that is deprecated since version "
                f"{version}.{extra}",
                DeprecationWarning,
                stacklevel=3,
            )

    def deprecated(self, version: str, replacement: str | None = None) -> Callable[[F], F]:
        """Decorator: each call of the function reports it as deprecated."""

        def decorate(function: F) -> F:
            @functools.wraps(function)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                self.deprecated_function(function.__qualname__, version, replacement)
                return function(*args, **kwargs)

            return wrapper  # type: ignore[return-value]

        return decorate

    # -- server and routes ------------------------------------------------------------------

    def rest_get_server(self) -> RestServer:
        """The REST server, created on first use (class from ``svc_rest_server_class``);
        ``rest_api_init`` fires once, with the server, when it is created."""
        server = self.rest_server
        if server is not None:
            return server
        with self._lock:
            if self.rest_server is None:
                server_class = self.hooks.apply_filters("svc_rest_server_class", RestServer)
                created = server_class(self)
                self.rest_server = created
                self.hooks.do_action("rest_api_init", created)
            return self.rest_server

    def register_rest_route(
        self, namespace: str, route: str, args: Any = None, override: bool = False
    ) -> bool:
        """Register ``route`` under ``namespace`` (WordPress's ``register_rest_route``); False
        (with a ``DoingItWrong`` warning) for an empty namespace or route or a definition that
        cannot work.

        A handler without ``permission_callback`` is registered (and public) but warns with
        ``DoingItWrong`` naming the route, as WordPress 5.5 does: say
        ``"permission_callback": svcrest.public`` for a route meant to be open."""
        return self._register_rest_route(namespace, route, args, override, stacklevel=3)

    def _register_rest_route(
        self, namespace: str, route: str, args: Any, override: bool, *, stacklevel: int
    ) -> bool:
        """``register_rest_route`` with warnings attributed ``stacklevel`` frames up."""
        if not namespace:
            warnings.warn(
                "Routes must be namespaced with plugin or theme name and version.",
                DoingItWrong,
                stacklevel=stacklevel,
            )
            return False
        if not route:
            warnings.warn("Route must be specified.", DoingItWrong, stacklevel=stacklevel)
            return False
        full_route = build_full_route(namespace, route)
        try:
            registered = self.rest_get_server().register_route(
                namespace.strip("/"), full_route, args, override
            )
        except RouteDefinitionError as exc:
            message = (
                exc.as_written(namespace, route) if isinstance(exc, RoutePatternError) else str(exc)
            )
            refusal = DoingItWrong(message)
            refusal.refused_route = full_route
            warnings.warn(refusal, stacklevel=stacklevel)
            return False
        for notice in argument_notices(args):
            warnings.warn(
                f"In the REST API route {full_route.lstrip('/')}: {notice}",
                DoingItWrong,
                stacklevel=stacklevel,
            )
        if lacks_permission_callback(args):
            warnings.warn(
                f"The REST API route definition for {full_route.lstrip('/')} is missing the"
                " required permission_callback argument. For REST API routes that are"
                " intended to be public, use svcrest.public as the permission callback.",
                DoingItWrong,
                stacklevel=stacklevel,
            )
        return registered

    def route(
        self,
        namespace: str,
        route: str,
        *,
        methods: Any = "GET",
        args: Mapping[str, Any] | None = None,
        permission_callback: Callable[..., Any] | None = None,
        route_args: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> Callable[[F], F]:
        """Decorator form of ``register_rest_route`` for one handler; returns the function.

        ``args`` belong to this handler; ``route_args`` are shared by every handler of the
        route, registered before or after (``register_rest_route``'s route-level ``args``):
        give ``{"id": {"type": "integer"}}`` once and every method gets ``id`` as an int.
        A callback's annotated parameters after the request are arguments too (typed
        handlers: ``def get_book(request, id: int)``), called with keyword arguments. Other
        keywords are the handler's (``blocking``, ``db_timeout`` …), except the route's own
        options ``schema``, ``rate_limit`` and ``idempotency``, which go to the route.
        """

        def decorate(callback: F) -> F:
            handler: dict[str, Any] = {
                "methods": methods,
                "callback": callback,
                "args": dict(args or {}),
                **options,
            }
            if permission_callback is not None:
                handler["permission_callback"] = permission_callback
            definition: dict[Any, Any] = {0: handler}
            for key in ROUTE_ONLY_OPTIONS:  # options of the route, not of this handler
                if key in handler:
                    definition[key] = handler.pop(key)
            if route_args is not None:
                definition["args"] = dict(route_args)
            self._register_rest_route(namespace, route, definition, False, stacklevel=3)
            return callback

        return decorate

    def register_controller(self, controller: C, *, mcp: bool | None = None) -> C:
        """Bind ``controller`` to this site and call its ``register_routes(app)`` (a
        ``RestController``: WordPress's ``WP_REST_Controller``); returns it. ``mcp``: when
        given, sets the controller's ``mcp`` (True: its operations are MCP tools)."""
        if mcp is not None:
            controller.mcp = mcp
        controller.bind(self)
        with self._lock:
            self._controllers.append(controller)
        controller.register_routes(self)
        return controller

    def register_rest_field(
        self,
        object_type: str | Iterable[str],
        attribute: str,
        *,
        get_callback: GetCallback | None = None,
        update_callback: UpdateCallback | None = None,
        schema: dict[str, Any] | None = None,
    ) -> None:
        """Add the field ``attribute`` to every resource whose object type (its schema's
        ``title``) is ``object_type`` (one name or several), as WordPress's
        ``register_rest_field``: answers hold ``get_callback(data, attribute, request,
        object_type)`` when ``_fields`` and the context include it; writes that send it call
        ``update_callback(value, item, attribute, request, object_type)`` (an error it
        returns or raises is the answer); ``schema`` joins the resource's schema, args,
        OPTIONS help, the index and OpenAPI. The routes of controllers already registered
        are registered again with the field's args."""
        types = self.rest_fields.register(
            object_type, attribute, RestField(get_callback, update_callback, schema)
        )
        with self._lock:
            controllers = list(self._controllers)
        for controller in controllers:
            if controller.get_object_type() in types:
                controller.register_routes(_Reregistration(self))

    def openapi(self) -> dict[str, Any]:
        """The OpenAPI 3.1.0 document of every route shown in the index (a new dict on each
        call, so a route registered later is in the next one); see ``svcrest.rest.openapi``."""
        return build_openapi(self.rest_get_server(), self)

    # -- internal requests ------------------------------------------------------------------

    @staticmethod
    def rest_ensure_request(value: Any) -> Request:
        """A Request as it is; a mapping → GET with empty route and those query params;
        a string → GET of that route, its query string (``/ns/v1/x?done=true&tag[]=a``) read
        into the query params as the HTTP layer reads one (PHP's keys: ``a[]``, ``a[k]``).
        WordPress's ``rest_do_request`` keeps the ``?`` in the route, which then matches
        nothing."""
        if isinstance(value, Request):
            return value
        if isinstance(value, Mapping):
            return Request("GET", "", query=value)
        if isinstance(value, str):
            route, mark, query = value.partition("?")
            if not mark:
                return Request("GET", value)
            return Request("GET", route, query=parse_form(query.partition("#")[0]))
        raise TypeError(f"cannot make a request of {type(value).__name__}")

    @property
    def max_streams(self) -> int:
        """The most streams (a change feed's Server-Sent Events or JSON Lines) this process
        serves at once; past it a stream is refused with 503 ``svc_streams_busy`` and
        ``Retry-After``. Long-polls do not count."""
        return self.streams.limit

    @max_streams.setter
    def max_streams(self, value: int) -> None:
        self.streams.limit = value

    def stream_session_check(self, request: Request) -> SessionWatch | None:
        """For a stream answering ``request`` (being served): an awaitable check of whether
        its user still holds the credentials it was authenticated with (a logout, an ended
        session or a revoked application password, on any host, make it False), run again
        only when a revocation may have happened; None for an anonymous request (it has no
        session to lose)."""
        ctx = current_context()
        if ctx is None or not request.user.is_logged_in:
            return None
        server = self.rest_get_server()
        return SessionWatch(
            lambda: still_authenticated(server, request, ctx), revocation_marks(self.auth)
        )

    async def rest_do_request_async(self, request: Any) -> Response:
        """Dispatch ``request`` internally (no authentication run); always a Response."""
        req = request if type(request) is Request else self.rest_ensure_request(request)
        ctx = current_context()
        if ctx is not None:
            req.user = ctx.user
        server = self.rest_server or self.rest_get_server()
        # ``svcrest.current_user()`` inside the dispatch answers the request's user.
        token = enter_dispatch_user(req.user)
        try:
            if type(server).dispatch_async is _DISPATCH_ASYNC:
                # PERF: what ``dispatch_async`` runs, without its coroutine (unless a server
                # class of the ``svc_rest_server_class`` filter has its own).
                return await server.dispatch_planned(req, server.plan())
            return await server.dispatch_async(req)
        finally:
            leave_dispatch_user(token)

    def rest_do_request(self, request: Any) -> Response:
        """The sync form of ``rest_do_request_async``."""
        result: Response = run_sync(lambda: self.rest_do_request_async(request))
        return result

    # -- abilities --------------------------------------------------------------------------

    def _serve_abilities(self) -> None:
        """Register the ``svc-abilities/v1`` routes (once, with the first category or
        ability: a site without abilities has no such namespace)."""
        from svcrest.abilities.routes import register_ability_routes

        def register(server: RestServer) -> None:
            register_ability_routes(server, self.abilities, self.rest_url)

        if self.rest_server is not None:
            register(self.rest_server)
        else:
            self.hooks.add_action("rest_api_init", register)

    def register_ability_category(
        self,
        slug: str,
        *,
        label: str,
        description: str,
        meta: Mapping[str, Any] | None = None,
    ) -> AbilityCategory | None:
        """Register an ability category (WordPress's ``wp_register_ability_category``): a
        slug of lowercase letters, digits and dashes, a label and a description. Returns the
        category, or None with a ``DoingItWrong`` warning (WordPress's message) when it
        cannot be registered (a slug taken or malformed, an empty label…)."""
        try:
            return self.abilities.register_category(
                slug, label=label, description=description, meta=meta
            )
        except AbilityRegistrationError as exc:
            warnings.warn(str(exc), DoingItWrong, stacklevel=2)
            return None

    def register_ability(
        self,
        name: str,
        *,
        label: str,
        description: str,
        category: str,
        input_schema: Mapping[str, Any] | None = None,
        output_schema: Mapping[str, Any] | None = None,
        execute_callback: Callable[..., Any],
        permission_callback: Callable[..., Any],
        annotations: Mapping[str, Any] | None = None,
        show_in_rest: bool = True,
    ) -> Ability | None:
        """Register an ability (WordPress's ``wp_register_ability``).

        ``name`` is ``namespace/ability-name`` (lowercase letters, digits, dashes);
        ``category`` a registered category's slug; ``input_schema`` / ``output_schema`` JSON
        Schemas the input and the result are checked against (the rules of route arguments);
        ``execute_callback(input)`` returns the result (or a RestError) and
        ``permission_callback(input)`` True, False or a RestError; either may be async and
        may take no argument, and reads the caller with ``svcrest.current_user()``.
        ``annotations``: ``readonly``, ``destructive``, ``idempotent`` (each True, False or
        None). ``show_in_rest``: listed and run under ``svc-abilities/v1``. Returns the
        ability, or None with a ``DoingItWrong`` warning (WordPress's message) when it cannot
        be registered.
        """
        try:
            return self.abilities.register(
                name,
                label=label,
                description=description,
                category=category,
                input_schema=input_schema,
                output_schema=output_schema,
                execute_callback=execute_callback,
                permission_callback=permission_callback,
                annotations=annotations,
                show_in_rest=show_in_rest,
            )
        except AbilityRegistrationError as exc:
            warnings.warn(str(exc), DoingItWrong, stacklevel=2)
            return None

    def get_ability(self, name: str) -> Ability | None:
        """The ability ``name`` (WordPress's ``wp_get_ability``), None when there is none."""
        return self.abilities.get(name)

    def get_abilities(self) -> list[Ability]:
        """Every ability, in registration order (WordPress's ``wp_get_abilities``)."""
        return self.abilities.get_all()

    def unregister_ability(self, name: str) -> Ability | None:
        """Remove an ability (WordPress's ``wp_unregister_ability``); the removed one or
        None."""
        return self.abilities.unregister(name)

    def get_ability_category(self, slug: str) -> AbilityCategory | None:
        """The category ``slug`` (WordPress's ``wp_get_ability_category``), or None."""
        return self.abilities.get_category(slug)

    def get_ability_categories(self) -> list[AbilityCategory]:
        """Every category, in registration order (WordPress's
        ``wp_get_ability_categories``)."""
        return self.abilities.get_categories()

    def unregister_ability_category(self, slug: str) -> AbilityCategory | None:
        """Remove a category (WordPress's ``wp_unregister_ability_category``); the removed one
        or None."""
        return self.abilities.unregister_category(slug)

    # -- storage, users and auth --------------------------------------------------------------

    def _register_application_passwords(self, server: RestServer) -> None:
        """The application password routes."""
        from svcrest.auth.app_password_routes import ApplicationPasswordsController

        ApplicationPasswordsController(
            lambda: self.users, self.rest_url, lambda: self.home
        ).register(server)

    @property
    def store(self) -> Store:
        """The app's store (``svcrest.store.Store``), opened on first use."""
        if self._store is None:
            with self._lock:
                if self._store is None:
                    from svcrest.store.locations import open_store

                    self._store = open_store(self._store_spec)
        return self._store

    @property
    def store_in_memory(self) -> bool:
        """Whether the store lives in this process's memory only: ``App()`` without a store,
        ``store=":memory:"`` or an in-memory ``SqliteStore``."""
        from svcrest.store.locations import is_memory

        store = self._store if self._store is not None else self._store_spec
        if store is None or isinstance(store, str):
            return is_memory(store)
        return getattr(store, "dialect", "") == "sqlite" and getattr(store, "path", "") is None

    def batch_transaction(self) -> AbstractContextManager[Any]:
        """One write transaction of the store, for atomic batches (``rest.batch``)."""
        return self.store.transaction()

    @property
    def secret_key(self) -> bytes:
        """The site secret: given, or generated once and kept in the store."""
        if self._secret_key is None:
            from svcrest.auth.service import ensure_secret_key

            self._secret_key = ensure_secret_key(self.store)
        return self._secret_key

    @property
    def users(self) -> UserStore:
        """The site's users."""
        if self._users is None:
            with self._lock:
                if self._users is None:
                    from svcrest.auth.users import UserStore

                    self._users = UserStore(self.store, self.hooks, clock=self.clock)
        return self._users

    @property
    def request_guards(self) -> StoredGuards:
        """Idempotency records and rate-limit counts in the store
        (docs/guides/idempotency-and-rate-limits.md), migrated on first use."""
        if self._request_guards is None:
            store = self.store
            with self._lock:
                if self._request_guards is None:
                    from svcrest.store.request_guards import StoredGuards

                    self._request_guards = StoredGuards(store, self.clock)
        return self._request_guards

    @property
    def webhooks(self) -> Webhooks:
        """The site's webhook subscriptions (docs/guides/webhooks.md):
        ``app.webhooks.subscribe(url, events=("note.created",))`` posts each such event,
        signed as Standard Webhooks sign, to ``url``; ``list()``, ``get(id)``, ``delete(id)``
        and ``deliveries()`` show and manage them. Kept in the store (tables created on
        first use); sent by ``svcrest serve``."""
        if self._webhooks is None:
            with self._lock:
                if self._webhooks is None:
                    from svcrest.store.webhooks import Webhooks

                    self._webhooks = Webhooks(lambda: self.store, clock=self.clock)
        return self._webhooks

    @property
    def changes(self) -> Changes:
        """The site's change log (docs/guides/resources.md, "Change feeds"):
        ``app.changes.record(object_type, id, event)`` records a write of any controller
        (``event`` one of ``created``, ``updated``, ``deleted``), joining the store
        transaction of the calling thread when there is one (a rollback records nothing),
        else in a transaction of its own; a ``RestController`` with ``changes = True``
        serves the feed of them at ``GET /<ns>/<rest_base>/changes``."""
        if self._changes is None:
            with self._lock:
                if self._changes is None:
                    from svcrest.store.change_record import Changes

                    self._changes = Changes(
                        lambda: self.store, clock=lambda: self.clock(), hooks=self.hooks
                    )
        return self._changes

    @property
    def throttle(self) -> LoginThrottle:
        """Login throttling: failures per (login, address), per address and per login a
        day, in the store (docs/guides/authentication.md, "Throttling")."""
        if self._throttle is None:
            users = self.users  # the store, opened and migrated
            with self._lock:
                if self._throttle is None:
                    from svcrest.auth.throttle import LoginThrottle

                    self._throttle = LoginThrottle(
                        users.store, self.clock, users.used_application_password_from
                    )
        return self._throttle

    @property
    def auth(self) -> AuthService:
        """Nonces, auth cookies and sessions."""
        if self._auth is None:
            with self._lock:
                if self._auth is None:
                    from svcrest.auth.service import AuthService

                    self._auth = AuthService(
                        self.store,
                        self.hooks,
                        self.users,
                        self.secret_key,
                        self.clock,
                        secret_key_fallbacks=self.secret_key_fallbacks,
                    )
        return self._auth

    def operating_figures(self) -> Figures:
        """What the store's pool, the session cache and the login throttle counted so far,
        for the admin port's metrics (docs/guides/operating.md); opens nothing."""
        from svcrest.serve.metrics import Figures
        from svcrest.store.postgres import PostgresStore

        store, auth, throttle = self._store, self._auth, self._throttle
        pool = store.pool if isinstance(store, PostgresStore) else None
        cache = auth.session_cache if auth is not None else None
        return Figures(
            pool=pool is not None,
            pool_in_use=0 if pool is None else pool.size - pool.idle,
            pool_idle=0 if pool is None else pool.idle,
            pool_waiting=0 if pool is None else pool.waiting,
            pool_timeouts=0 if pool is None else pool.timeouts,
            cache_hits=0 if cache is None else cache.hits,
            cache_misses=0 if cache is None else cache.misses,
            cache_untrusted=0 if cache is None else cache.untrusted,
            cache_listening=None if cache is None else cache.listening,
            login_refusals=0 if throttle is None else throttle.refusals,
        )

    # -- serving ----------------------------------------------------------------------------

    #: The App is an ASGI application: calling it is calling ``handle_asgi`` with the App
    #: (PERF: no wrapping coroutine per request).
    __call__ = handle_asgi
    #: The App is an RSGI application too (granian's ``--interface rsgi``): its requests,
    #: and the worker's start and end (PERF: no wrapping coroutine per request either).
    __rsgi__ = handle_rsgi
    __rsgi_init__ = rsgi_init
    __rsgi_del__ = rsgi_del

    @property
    def wsgi(self) -> WSGIAdapter:
        """The same site as a WSGI application."""
        if self._wsgi is None:
            self._wsgi = WSGIAdapter(self)
        return self._wsgi

    def __repr__(self) -> str:
        return f"<App {self.home!r}>"


class _Reregistration:
    """``register_rest_route`` for a controller registering its routes again (a field was
    added): each route's first registration replaces what the route had, later ones of the
    same route merge as they did the first time."""

    def __init__(self, app: App) -> None:
        self._app = app
        self._seen: set[str] = set()

    def register_rest_route(
        self, namespace: str, route: str, args: Any = None, override: bool = False
    ) -> bool:
        key = f"{namespace}\0{route}"
        first = key not in self._seen
        self._seen.add(key)
        return self._app._register_rest_route(
            namespace, route, args, override or first, stacklevel=3
        )
