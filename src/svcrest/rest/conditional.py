"""Conditional requests (RFC 9110 §13): ``ETag``, ``If-None-Match`` → 304, ``If-Match`` → 412,
``require_if_match`` → 428, and the content coding of REST answers.

Two places use this module. A handler whose route gives an ``etag_callback`` (a cheap version
read, plain or ``async``) is wrapped by :func:`guarded` when the route table prepares it: the
wrapper runs after the permission check and before the callback, answers 304 to a GET or HEAD
whose ``If-None-Match`` names the version, refuses a PUT, PATCH or DELETE whose ``If-Match``
does not (412 ``rest_precondition_failed``) or that lacks one where ``require_if_match`` is
set (428 ``rest_precondition_required``), and otherwise runs the callback and tags its answer.
Every finished answer then gets its validator and coding from the REST pipeline's answer step
with the parts here: a 200 answer to a GET or HEAD gets a strong ``ETag`` (the handler's, or a
hash of the exact body bytes sent: :func:`tag_line` remembers a short body's), a 304 when
``If-None-Match`` names it (:func:`not_modified`), and a body of ``MIN_SIZE`` or more is
compressed when the client accepts a coding (:func:`coded_answer`,
:mod:`svcrest.http.compression`). See docs/guides/http-semantics.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from hashlib import blake2b
from typing import Any

from svcrest.bounded import Memo
from svcrest.chains import settled
from svcrest.http.compression import (
    MIN_SIZE,
    breach_prone,
    compress,
    negotiated_coding,
)
from svcrest.http.errors import RestError
from svcrest.http.exchange import HttpResponse
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.rest.routing.definitions import RouteDefinitionError

__all__ = [
    "READS",
    "add_format_suffix",
    "body_tag",
    "coded_answer",
    "guarded",
    "matching_tag",
    "not_modified",
    "precondition_failed",
    "precondition_required",
    "quoted_tag",
    "remembered_tag_line",
    "strong_match",
    "tag_line",
]

#: The methods whose 200 answers carry an ``ETag`` (and may become 304s).
READS = frozenset({"GET", "HEAD"})
_WRITES = frozenset({"PUT", "PATCH", "DELETE"})
#: An entity tag of a list header (``W/`` kept apart) or ``*``.
_TAG = re.compile(r'\s*(?:(W/)?("[\x21\x23-\x7e\x80-\xff]*")|(\*))\s*(?:,|$)')
#: The suffixes that name a content coding's variant of a tag.
_CODED = ('-gzip"', '-br"', '-zstd"')
#: The suffixes that name a response format's variant of a tag (``"v7-msgpack"``): one per
#: format any site of the process registered (:func:`add_format_suffix`), at most a few.
_FORMATS: tuple[str, ...] = ()
#: What a version from an ``etag_callback`` may hold (RFC 9110 ``etagc`` without obs-text).
_VERSION = re.compile(r"[\x21\x23-\x7e]{1,200}")
_VARY_ENCODING = ("Vary", "Accept-Encoding")


def body_tag(body: bytes) -> str:
    """The strong ``ETag`` of a body: 16 bytes of BLAKE2b, quoted hex."""
    return '"' + blake2b(body, digest_size=16).hexdigest() + '"'


def quoted_tag(version: Any) -> str:
    """The ``ETag`` of an ``etag_callback``'s version: ``"v7"`` for ``v7``. A version must
    be a non-empty string of visible ASCII without ``"`` (at most 200 characters); anything
    else is the route's mistake (a ``ValueError``: answered 500 and logged)."""
    if not isinstance(version, str) or _VERSION.fullmatch(version) is None:
        raise ValueError(f"an etag_callback answered {version!r}, not a version string")
    return '"' + version + '"'


def add_format_suffix(suffix: str) -> None:
    """Know ``"…-suffix"`` tags as variants of ``"…"``: the ``ETag`` suffix of a response
    format (docs/guides/response-formats.md), so ``If-None-Match`` and ``If-Match`` with the
    tag a client got in that format name the same version."""
    global _FORMATS
    quoted = "-" + suffix + '"'
    if quoted not in _FORMATS:
        _FORMATS = (*_FORMATS, quoted)


def _base(tag: str) -> str:
    """A tag without the suffix of a coded variant (``"x-gzip"`` → ``"x"``) or a format's
    (``"x-msgpack-gzip"`` → ``"x"``)."""
    for suffix in _CODED:
        if tag.endswith(suffix):
            tag = tag[: -len(suffix)] + '"'
            break
    for suffix in _FORMATS:
        if tag.endswith(suffix):
            return tag[: -len(suffix)] + '"'
    return tag


def matching_tag(header: str, tag: str) -> str | None:
    """The tag of ``If-None-Match`` (a list, ``*``, weak tags) that names ``tag`` or one of
    its coded variants by the weak comparison: the tag to answer the 304 with; None when
    none does."""
    base = _base(tag)
    for found in _TAG.finditer(header):
        if found.group(3) is not None:
            return tag
        opaque = found.group(2)
        if opaque == tag:
            return tag
        if _base(opaque) == base:
            return opaque
    return None


def strong_match(header: str, tag: str) -> bool:
    """Whether ``If-Match`` names ``tag`` (or a coded variant of it) by the strong
    comparison, or is ``*``; a weak tag never matches."""
    base = _base(tag)
    for found in _TAG.finditer(header):
        if found.group(3) is not None:
            return True
        if found.group(1) is None and _base(found.group(2)) == base:
            return True
    return False


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
        matched = None if tag is None or header is None else matching_tag(header, tag)
        return None if matched is None else Response(None, 304, [("ETag", matched)])
    header = request.get_header("If-Match")
    if header is None:
        if require_if_match:
            raise precondition_required()
    elif tag is None or not strong_match(header, tag):
        raise precondition_failed(tag)
    return None


def _tagged(result: Any, tag: str | None) -> Any:
    """A callback's answer with ``ETag: tag`` when it is a success."""
    if tag is None or isinstance(result, RestError):
        return result
    response = result if isinstance(result, Response) else Response(result)
    if 200 <= response.status < 300:
        response.set_header_line("ETag", tag)
    return response


def _put_line(answer: HttpResponse, name: str, value: str) -> None:
    """Add a header line the answer's wire prefix covers (safe as it is: our own value)."""
    line = (name, value)
    prefix = answer.wire_prefix
    answer.headers.insert(len(prefix), line)
    answer.wire_prefix = (*prefix, (name.encode("latin-1"), value.encode("latin-1")))


def _replace_line(answer: HttpResponse, index: int, value: str) -> None:
    """Replace the value of header line ``index`` (in the wire prefix: an own line)."""
    name = answer.headers[index][0]
    answer.headers[index] = (name, value)
    prefix = answer.wire_prefix
    if index < len(prefix):
        line = (name.encode("latin-1"), value.encode("latin-1"))
        answer.wire_prefix = (*prefix[:index], line, *prefix[index + 1 :])


# PERF: a short body → its ETag line and that line's wire form. The same answers repeat (a
# resource read again and again); with this memory the whole step costs a plain GET ~2 µs
# instead of 4.3 µs (hashing and encoding each time; timeit, loaded machine). SECURITY:
# bounded: bodies under 1 KiB only, 256 of them (~300 KB), emptied when full; a look-up needs
# the exact body, so nothing of one answer reaches another.
_TAG_LINES_MAX = 256
_TAG_LINES: Memo[bytes, tuple[tuple[str, str], tuple[bytes, bytes]]] = Memo(
    _TAG_LINES_MAX, MIN_SIZE - 1
)


#: ``remembered_tag_line(body)``: the remembered line of :func:`tag_line`, or None. PERF: a
#: dict's own method (no Python frame: ~10 bytecodes and a frame less a plain GET).
#: (The memory is emptied in place, never replaced, so this stays its method.)
remembered_tag_line = _TAG_LINES.get


def tag_line(body: bytes) -> tuple[tuple[str, str], tuple[bytes, bytes]]:
    """The ``ETag`` line of a short identity body (under ``MIN_SIZE``), and its wire form
    (remembered)."""
    found = _TAG_LINES.get(body)
    if found is None:
        tag = body_tag(body)
        found = _TAG_LINES.keep(body, (("ETag", tag), (b"ETag", tag.encode("latin-1"))))
    return found


def not_modified(request: Request, tag: str) -> bool:
    """Whether ``If-None-Match`` names ``tag`` (an answer with it becomes a 304)."""
    # PERF: the lower-case name straight to the headers (get_header's normalising: ~0.4 µs).
    header = request.headers.get_joined("if-none-match")
    return header is not None and matching_tag(header, tag) is not None


def coded_answer(
    answer: HttpResponse, request: Request, own_tag: int, tagged: bool
) -> HttpResponse:
    """``answer`` (a body of ``MIN_SIZE`` or more) with its validator and content coding:
    when ``tagged`` (a 200 to a GET or HEAD, not an ``_envelope``) an ``ETag`` (own line
    ``own_tag`` of the answer's, -1: the body's hash) and a 304 when ``If-None-Match`` names
    it; the body compressed in the coding the client prefers (``Vary: Accept-Encoding``),
    unless it sets a cookie or carries a nonce (BREACH)."""
    body = answer.body
    coding = None
    compressible = not breach_prone(answer.headers, body)
    if compressible:
        _put_line(answer, *_VARY_ENCODING)
        coding = negotiated_coding(request.get_header("Accept-Encoding"))
    if not tagged:
        if coding is not None:
            answer.body = compress(body, coding)
            _put_line(answer, "Content-Encoding", coding)
        return answer
    index = own_tag
    tag = body_tag(body) if index < 0 else answer.headers[index][1]  # own lines: the prefix
    if coding is not None:
        tag = tag[:-1] + "-" + coding + '"'
    if not_modified(request, tag):
        answer.status = 304
        answer.body = b""
    elif coding is not None:
        answer.body = compress(body, coding)
        _put_line(answer, "Content-Encoding", coding)
    if index < 0:
        _put_line(answer, "ETag", tag)
    elif coding is not None:
        _replace_line(answer, index, tag)
    return answer
