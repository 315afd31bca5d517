"""The sans-I/O REST request: method, route, headers and parameter buckets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from svcrest.http.context import current_context
from svcrest.http.errors import RestError
from svcrest.http.forms import MIN_BOUNDED_LENGTH, parse_form, parse_form_body
from svcrest.http.headers import Headers, HeadersInit
from svcrest.http.jsonbody import decode_json_body, is_json_content_type
from svcrest.http.multipart import MULTIPART_MEDIA_TYPE, UploadedFile, parse_multipart
from svcrest.http.user import ANONYMOUS, User
from svcrest.instances import without_init
from svcrest.types import JSONLike

__all__ = ["FORM_BODY_METHODS", "Request", "RestUrls"]


#: Methods whose form body (urlencoded or multipart) gives parameters, as in WordPress: a GET
#: never reads a form body.
FORM_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_FORM_MEDIA_TYPE = "application/x-www-form-urlencoded"


class RestUrls(Protocol):
    """What a request knows of the site that dispatches it: its REST URLs."""

    def rest_url(self, path: str = "", scheme: str = "json") -> str:
        """The full URL of REST ``path`` on the current site."""
        ...


def _refuse_coded_body(coding: str) -> None:
    """Raise the 415 of a body in a content coding other than ``identity``."""
    if all(part.strip().lower() in ("", "identity") for part in coding.split(",")):
        return
    error = RestError(
        "rest_unsupported_content_encoding",
        "Request bodies must be sent without a content coding.",
        {"status": 415},
    )
    error.headers = (("Accept-Encoding", "identity"),)
    raise error


class Request:
    """A REST request.

    Parameters live in buckets, read with this precedence: URL path params > JSON body >
    form body (urlencoded or ``multipart/form-data``, whose files are in ``files``) > query
    string > defaults. Unlike WordPress (where body and query parameters win over URL
    captures), a URL capture can never be overridden by a parameter of the same name.
    As in WordPress, the form body counts only for POST, PUT, PATCH and DELETE (a GET, HEAD
    or OPTIONS request never reads one, even one given as ``body=``), and for those other
    methods the JSON body counts only when the request declares a JSON content type.
    ``get_param`` walks the buckets in that order; ``get_params`` merges them.

    The query string and a form body are parsed on first use; a JSON body is parsed by
    ``parse_json_body`` (the server calls it before validation on every matched route; it
    checks a multipart body too).

    ``site`` is set by the server that dispatches the request (its REST URLs, for links);
    ``query_string`` is the raw query string as the HTTP layer received it (None for a
    request built from a mapping; a plain attribute, read on every request: CPython 3.11
    reads a property through its slow, unspecialised path).
    """

    __slots__ = (
        "_body_params",
        "_files",
        "_form_error",
        "_json_params",
        "_json_parsed",
        "_query_params",
        "default_params",
        "handler",
        "headers",
        "may_have_query",
        "method",
        "query_string",
        "raw_body",
        "route",
        "site",
        "url_params",
        "user",
    )

    def _fill(
        self,
        method: str,
        route: str,
        headers: Headers,
        raw_body: bytes,
        query_string: str | None,
        query_params: dict[str, Any] | None,
        may_have_query: bool,
        body_params: dict[str, Any] | None,
    ) -> None:
        """Set every slot: the one initialiser of both constructors."""
        self.method = method
        self.route = route
        self.headers = headers
        self.raw_body = raw_body
        self.url_params: dict[str, Any] = {}
        self.default_params: dict[str, Any] = {}
        self.query_string: str | None = query_string
        self._query_params: dict[str, Any] | None = query_params
        #: False only while the request can have no query parameter: its query string is
        #: empty, and no parameter was set in (nor the bucket handed out by)
        #: ``query_params``. PERF: a plain attribute, read where a step looks only at query
        #: parameters (``_fields``, ``_envelope``, ``_embed``…): such a step skips the
        #: request without parsing or calling anything.
        self.may_have_query = may_have_query
        self._body_params: dict[str, Any] | None = body_params
        self._files: dict[str, UploadedFile | list[UploadedFile]] | None = None
        self._form_error: RestError | None = None
        self._json_params: Any = None
        self._json_parsed = False
        #: The current user (the anonymous user, id 0, unless authentication set one).
        self.user: User = ANONYMOUS
        #: The handler definition that matched, once dispatch has found it.
        self.handler: Mapping[str, Any] | None = None
        #: The site of the server dispatching the request (None until dispatch).
        self.site: RestUrls | None = None

    def __init__(
        self,
        method: str = "GET",
        route: str = "",
        *,
        query: Mapping[str, Any] | None = None,
        body: Mapping[str, Any] | None = None,
        json: JSONLike = None,
        headers: HeadersInit = None,
        raw_body: bytes = b"",
    ) -> None:
        query_params = dict(query) if query is not None else {}
        self._fill(
            method.upper(),
            route,
            # PERF: no headers, or a plain Headers, known without ``isinstance`` (the ABC's
            # check runs a Python-level ``__instancecheck__``).
            Headers()
            if headers is None
            else headers
            if type(headers) is Headers or isinstance(headers, Headers)
            else Headers(headers),
            raw_body,
            None,
            query_params,
            bool(query_params),
            dict(body) if body is not None else None,
        )
        # ``json`` given: the decoded body; None: decode ``raw_body`` when it is JSON.
        if json is not None:
            self._json_parsed = True
            self._json_params = json

    @classmethod
    def from_http(
        cls, method: str, route: str, query_string: str, headers: Headers, raw_body: bytes
    ) -> Request:
        """A request built by the HTTP layer; the query string is parsed on first use.

        The HTTP layer's values need no normalising: ``method`` is upper case already (the
        adapters make it so; PERF: no ``upper()`` call: a WSGI GET 98 instructions less)."""
        request = without_init(cls)  # PERF: no class call and no keyword checks
        request._fill(
            method, route, headers, raw_body, query_string, None, query_string != "", None
        )
        return request

    @classmethod
    def for_dispatch(
        cls,
        method: str,
        route: str,
        headers: Headers,
        query: dict[str, Any],
        json: JSONLike = None,
        raw_body: bytes = b"",
    ) -> Request:
        """A request for internal dispatch made by code that has its parts in their final
        form already: ``method`` upper case, ``headers`` a :class:`Headers`, ``query`` a
        dict the request keeps as its query parameters (not copied), ``json`` the decoded
        body of ``raw_body`` when there is one. As the keyword constructor builds it
        otherwise (no query string: ``query_string`` is None).

        PERF: the keyword constructor's checks and copies, and the type call with keywords,
        cost ~0.6 µs (an MCP ``tools/call`` builds one per call)."""
        request = without_init(cls)
        request._fill(method, route, headers, raw_body, None, query, bool(query), None)
        if json is not None:
            request._json_parsed = True
            request._json_params = json
        return request

    # -- buckets ----------------------------------------------------------------------------

    @property
    def query_params(self) -> dict[str, Any]:
        """Parameters from the query string. The bucket handed out may be changed by its
        reader: ``may_have_query`` is true from then on."""
        params = self._query_params
        if params is None:
            params = self._query_params = parse_form(self.query_string or "")
        self.may_have_query = True
        return params

    @query_params.setter
    def query_params(self, value: dict[str, Any]) -> None:
        self._query_params = value
        self.may_have_query = True

    def query_param(self, name: str, default: Any = None) -> Any:
        """The query parameter ``name`` (``default`` when absent). Unlike
        :attr:`query_params`, it hands out no bucket, so nothing can be changed through it
        and :attr:`may_have_query` stays as it is: a request without a query string
        answers without parsing anything."""
        if not self.may_have_query:
            return default
        params = self._query_params
        if params is None:
            params = self._query_params = parse_form(self.query_string or "")
        return params.get(name, default)

    def _form_media_type(self) -> str | None:
        """The body's form media type (urlencoded or multipart) when its fields are
        parameters: a POST, PUT, PATCH or DELETE with a body; else None."""
        if not self.raw_body or self.method not in FORM_BODY_METHODS:
            return None
        media = (self.get_header("content-type") or "").split(";", 1)[0].strip().lower()
        return media if media in (_FORM_MEDIA_TYPE, MULTIPART_MEDIA_TYPE) else None

    def _parse_form_body(self) -> None:
        """Fill the form bucket and ``files`` from the body; a body that is refused (past
        PHP's limits, or malformed multipart) gives nothing here, never part of itself
        (``parse_json_body`` raises its error)."""
        media = self._form_media_type()
        params: dict[str, Any] = {}
        files: dict[str, UploadedFile | list[UploadedFile]] = {}
        try:
            if media == _FORM_MEDIA_TYPE:
                params = parse_form_body(self.raw_body)
            elif media == MULTIPART_MEDIA_TYPE:
                params, files = parse_multipart(
                    self.raw_body, self.get_header("content-type") or ""
                )
        except RestError as error:
            self._form_error = error
        if self._body_params is None:
            self._body_params = params
        if self._files is None:
            self._files = files

    @property
    def body_params(self) -> dict[str, Any]:
        """Parameters from a form body (``application/x-www-form-urlencoded`` or
        ``multipart/form-data``) of a POST, PUT, PATCH or DELETE."""
        if self._body_params is None:
            self._parse_form_body()
            assert self._body_params is not None
        return self._body_params

    @body_params.setter
    def body_params(self, value: dict[str, Any]) -> None:
        self._body_params = value

    @property
    def files(self) -> dict[str, UploadedFile | list[UploadedFile]]:
        """Files of a ``multipart/form-data`` body: field name → the file, or a list of files
        for a name ending in ``[]`` (the brackets dropped)."""
        if self._files is None:
            self._parse_form_body()
            assert self._files is not None
        return self._files

    @files.setter
    def files(self, value: dict[str, UploadedFile | list[UploadedFile]]) -> None:
        self._files = value

    @property
    def json_params(self) -> dict[str, Any]:
        """Parameters from a JSON object body (empty for other JSON values).

        Reading this before ``parse_json_body`` parses leniently: an invalid body gives
        no parameters here (the server refuses such requests before any callback runs).
        """
        if not self._json_parsed:
            try:
                self.parse_json_body()
            except Exception:
                self._json_parsed = True
                self._json_params = None
        value = self._json_params
        return value if isinstance(value, dict) else {}

    @json_params.setter
    def json_params(self, value: dict[str, Any]) -> None:
        self._json_params = value
        self._json_parsed = True

    def is_json_content_type(self) -> bool:
        """Whether the request declares a JSON body."""
        return is_json_content_type(self.get_header("content-type") or "")

    def parse_json_body(self) -> None:
        """Decode a JSON body once; raises ``RestError`` ``rest_invalid_json`` (400). A form
        body is checked here too, strictly: a malformed ``multipart/form-data`` one raises
        ``rest_invalid_multipart`` (400), one of either kind past PHP's limits (1000 fields,
        64 levels of brackets) ``rest_invalid_multipart`` or ``rest_invalid_body`` (400). A
        body sent in a content coding (``Content-Encoding: gzip``…) raises
        ``rest_unsupported_content_encoding`` (415, with ``Accept-Encoding: identity``, RFC 9110
        §15.5.16): request bodies are read as they are."""
        if self._json_parsed:
            if self._form_error is not None:  # read leniently before: still refused
                raise self._form_error
            return
        self._json_parsed = True
        if self.raw_body and "content-encoding" in self.headers:
            _refuse_coded_body(self.headers.get_joined("content-encoding") or "")
        if self.raw_body and self.is_json_content_type():
            self._json_params = decode_json_body(self.raw_body)
        elif (media := self._form_media_type()) is not None:
            # SECURITY: a urlencoded body past PHP's limits is refused, never read in part;
            # PERF: one too short to break a limit is left to be parsed on first read.
            if media == _FORM_MEDIA_TYPE and len(self.raw_body) < MIN_BOUNDED_LENGTH:
                return
            if self._body_params is None or self._files is None:
                self._parse_form_body()
            if self._form_error is not None:
                raise self._form_error

    def get_json_params(self) -> Any:
        """The decoded JSON body, whatever its type (None when there is none)."""
        self.json_params  # noqa: B018 - parse on first use
        return self._json_params

    def param_buckets(self) -> tuple[dict[str, Any], ...]:
        """The parameter buckets a read walks, in precedence order: URL, JSON, form, query,
        defaults for POST, PUT, PATCH and DELETE; URL, query, defaults for the other methods
        (WordPress's order for a GET), with the JSON body after the URL when the request
        declares a JSON content type."""
        if self.method in FORM_BODY_METHODS:
            return (
                self.url_params,
                self.json_params,
                self.body_params,
                self.query_params,
                self.default_params,
            )
        # A GET without a body or a given JSON value has no JSON to read: the content type
        # is looked up only otherwise.
        if (self.raw_body or self._json_parsed) and self.is_json_content_type():
            return (self.url_params, self.json_params, self.query_params, self.default_params)
        return (self.url_params, self.query_params, self.default_params)

    def lone_url_params(self) -> dict[str, Any] | None:
        """The URL parameters when no other bucket but the defaults can hold a parameter
        (what :meth:`param_buckets` walks is the URL, the query and the defaults, and no
        query parameter can exist: :attr:`may_have_query` is false), else None. PERF: the
        argument step's test of a request whose only parameters are its URL's, without
        handing out the query bucket (reads of the query afterwards stay without a look)."""
        if self.may_have_query or self.method in FORM_BODY_METHODS:
            return None
        if (self.raw_body or self._json_parsed) and self.is_json_content_type():
            return None
        return self.url_params

    # -- parameter access -------------------------------------------------------------------

    def get_param(self, name: str) -> Any:
        """The value of ``name`` from the highest-precedence bucket holding it, else None."""
        # PERF: most reads are of URL params; the other buckets are parsed only when needed.
        url_params = self.url_params
        if name in url_params:
            return url_params[name]
        if (
            not self.may_have_query
            and self.method not in FORM_BODY_METHODS
            and not ((self.raw_body or self._json_parsed) and self.is_json_content_type())
        ):
            # PERF: no query parameter can exist (``lone_url_params``'s test, written out:
            # no call a read): the defaults answer, and the query bucket is not handed out
            # (a read leaves ``may_have_query`` false, so the steps that look only at query
            # parameters still skip the request).
            return self.default_params.get(name)
        for bucket in self.param_buckets():
            if name in bucket:
                return bucket[name]
        return None

    def has_param(self, name: str) -> bool:
        """Whether any bucket holds ``name``."""
        return any(name in bucket for bucket in self.param_buckets())

    def get_params(self) -> dict[str, Any]:
        """Every parameter, merged with the precedence of the buckets."""
        merged: dict[str, Any] = {}
        for bucket in reversed(self.param_buckets()):
            merged.update(bucket)
        return merged

    def set_param(self, name: str, value: Any) -> None:
        """Set ``name`` where reads will find it.

        As in WordPress, the value replaces ``name`` in every bucket that holds it (URL,
        JSON, form, query; the defaults are left alone); a new name goes into the bucket of
        the request's body (JSON, or form for the methods that read one) or, for a request
        without one, into the query bucket.
        """
        found = False
        for bucket in self.param_buckets()[:-1]:
            if name in bucket:
                bucket[name] = value
                found = True
        if found:
            return
        if self.is_json_content_type() and isinstance(self._json_params, dict):
            self._json_params[name] = value
        elif self.method not in FORM_BODY_METHODS or (
            self.method == "DELETE" and not self.raw_body
        ):
            self.query_params[name] = value
        else:
            self.body_params[name] = value

    def __getitem__(self, name: str) -> Any:
        return self.get_param(name)

    def __setitem__(self, name: str, value: Any) -> None:
        self.set_param(name, value)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.has_param(name)

    # -- headers ----------------------------------------------------------------------------

    @property
    def request_id(self) -> str:
        """The ``X-Request-Id`` of the HTTP request being served (kept from the client when
        valid, else made by the site; docs/guides/operating.md); an internal request
        (``rest_do_request``, ``_embed``, batch) has its HTTP request's; "" outside one."""
        ctx = current_context()
        return "" if ctx is None else ctx.request_id

    def get_header(self, name: str) -> str | None:
        """A header value, case-insensitively (``-`` and ``_`` are the same); None if absent.

        Several lines of one header are joined with ", ".
        """
        return self.headers.get_joined(name.replace("_", "-").lower())

    def set_header(self, name: str, value: str) -> None:
        """Replace every value of a header (``-`` and ``_`` are the same, as in get_header)."""
        self.headers[name.replace("_", "-")] = value

    def __repr__(self) -> str:
        return f"<Request {self.method} {self.route!r}>"
