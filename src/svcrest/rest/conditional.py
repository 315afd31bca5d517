"""Conditional requests of a route with an ``etag_callback`` (RFC 9110 §13): ``If-None-Match``
→ 304, ``If-Match`` → 412, ``require_if_match`` → 428.

A handler whose route gives an ``etag_callback`` (a cheap version read, plain or ``async``) is
wrapped by :func:`guarded` when the route table prepares it: the wrapper runs after the
permission check and before the callback, answers 304 to a GET or HEAD whose ``If-None-Match``
names the version, refuses a PUT, PATCH or DELETE whose ``If-Match`` does not (412
``rest_precondition_failed``) or that lacks one where ``require_if_match`` is set (428
``rest_precondition_required``), and otherwise runs the callback and tags its answer. Every
finished answer then gets its validator, 304 and coding in the answer step
(:mod:`svcrest.rest.answer`); tags are compared in :mod:`svcrest.http.tags`, with the formats
of the site dispatching the request. See docs/guides/http-semantics.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from svcrest.chains import settled
from svcrest.http.errors import RestError
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.http.tags import matching_tag, strong_match
from svcrest.rest.definition_errors import RouteDefinitionError

__all__ = [
    "READS",
    "guarded",
    "precondition_failed",
    "precondition_required",
    "quoted_tag",
    "site_formats",
]

#: The methods whose 200 answers carry an ``ETag`` (and may become 304s).
READS = frozenset({"GET", "HEAD"})
_WRITES = frozenset({"PUT", "PATCH", "DELETE"})
#: What a version from an ``etag_callback`` may hold (RFC 9110 ``etagc`` without obs-text).
_VERSION = re.compile(r"[\x21\x23-\x7e]{1,200}")


def quoted_tag(version: Any) -> str:
    """The ``ETag`` of an ``etag_callback``'s version: ``"v7"`` for ``v7``. A version must
    be a non-empty string of visible ASCII without ``"`` (at most 200 characters); anything
    else is the route's mistake (a ``ValueError``: answered 500 and logged)."""
    if not isinstance(version, str) or _VERSION.fullmatch(version) is None:
        raise ValueError(f"an etag_callback answered {version!r}, not a version string")
    return '"' + version + '"'


def precondition_failed(tag: str | None) -> RestError:
    """The 412 of an ``If-Match`` that names no current version (the current ``ETag`` in
    its headers when there is one)."""
    error = RestError(
        "rest_precondition_failed",
        "The resource has changed since it was read (If-Match does not match).",
        {"status": 412},
    )
    if tag is not None:
        error.headers = (("ETag", tag),)
    return error


def precondition_required() -> RestError:
    """The 428 of a write without ``If-Match`` on a route with ``require_if_match``."""
    return RestError(
        "rest_precondition_required",
        "This request must be conditional: send If-Match with the ETag you read.",
        {"status": 428},
    )


def guarded(
    callback: Callable[..., Any] | None,
    etag_callback: Any,
    require_if_match: bool,
) -> Callable[[Request], Any]:
    """The callback of a handler with an ``etag_callback`` (both fitted to the request),
    checking ``If-None-Match`` / ``If-Match`` first (see the module). Raises
    ``RouteDefinitionError`` when ``etag_callback`` cannot be called."""
    if not callable(etag_callback):
        raise RouteDefinitionError("the route option 'etag_callback' must be callable")
    if callback is None:
        raise RouteDefinitionError("a handler with an 'etag_callback' needs a 'callback'")
    call: Callable[..., Any] = callback
    version_of: Callable[..., Any] = etag_callback

    async def guard(request: Request) -> Any:
        method = request.method
        if method not in READS and method not in _WRITES:
            return await settled(call(request))
        tag = await _current_tag(version_of, request)
        not_modified = _precondition(request, tag, require_if_match)
        if not_modified is not None:
            return not_modified
        result = await settled(call(request))
        if method in _WRITES and method != "DELETE" and tag is not None:
            tag = await _current_tag(version_of, request)  # the version the write made
        return _tagged(result, tag)

    return guard


async def _current_tag(version_of: Callable[..., Any], request: Request) -> str | None:
    """The quoted version an ``etag_callback`` answers for ``request`` (None: no version)."""
    version = await settled(version_of(request))
    return None if version is None else quoted_tag(version)


def _precondition(request: Request, tag: str | None, require_if_match: bool) -> Response | None:
    """The 304 of a GET or HEAD whose ``If-None-Match`` names ``tag``; raises the 412 or 428
    of a write whose ``If-Match`` does not (or is missing where required); None: go on."""
    if request.method in READS:
        if request.may_have_query and "_envelope" in request.query_params:
            return None  # an ``_envelope`` answer is always a 200 with its body
        header = request.get_header("If-None-Match")
        matched = (
            None
            if tag is None or header is None
            else matching_tag(header, tag, site_formats(request.site))
        )
        return None if matched is None else Response(None, 304, [("ETag", matched)])
    header = request.get_header("If-Match")
    if header is None:
        if require_if_match:
            raise precondition_required()
    elif tag is None or not strong_match(header, tag, site_formats(request.site)):
        raise precondition_failed(tag)
    return None


def site_formats(site: Any) -> Sequence[str]:
    """The tag suffixes of ``site``'s response formats (:mod:`svcrest.http.tags`); none for
    a site that answers JSON only (or no site: a request dispatched outside one)."""
    serializers = getattr(site, "serializers", None)
    return () if serializers is None else serializers.tag_suffixes


def _tagged(result: Any, tag: str | None) -> Any:
    """A callback's answer with ``ETag: tag`` when it is a success."""
    if tag is None or isinstance(result, RestError):
        return result
    response = result if isinstance(result, Response) else Response(result)
    if 200 <= response.status < 300:
        response.set_header_line("ETag", tag)
    return response
