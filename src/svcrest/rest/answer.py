"""The answer step of a REST request: from a finished response to the HTTP answer, in one
written order.

1. **Format**: JSON, or the format the request's ``Accept`` chooses among the site's own
   (:class:`~svcrest.http.serializers.Serializers`, held by each site: nothing here is
   shared by two sites of one process); its ``Content-Type`` and ``Vary: Accept``.
2. **Body**: the data encoded (none for 204 and 304; a logged 500 when the format cannot
   hold it).
3. **Validator**: a 200 answer to a GET or HEAD (not an ``_envelope``) gets a strong
   ``ETag``: the handler's own (an ``etag_callback``'s version, made the format's variant),
   else a hash of the exact body bytes (a short body's line remembered: :func:`tag_line`).
4. **304** when ``If-None-Match`` names that tag or one of its variants
   (:mod:`svcrest.http.tags`, with the site's formats).
5. **Coding**: a body of ``MIN_SIZE`` or more is compressed in the coding the client prefers
   (``Vary: Accept-Encoding``; its tag the coding's variant), unless it sets a cookie,
   carries a nonce, or answers a request carrying an authentication scheme's secret header
   line (BREACH: :mod:`svcrest.http.compression`).

A stream (:class:`~svcrest.http.streams.StreamResponse`, whose data is None) leaves at step 2
as an :class:`~svcrest.http.exchange.HttpStream`: its chunks are sent as they come, with no
validator and no coding.

:func:`answer` is the step; :func:`finish` and :func:`error_answer` answer without a
validator (errors met outside dispatch). Header lines come from :mod:`svcrest.rest.wire`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

from svcrest.bounded import Memo
from svcrest.http.answer_json import (
    UnencodableValue,
    encode_default,
    one_line,
    unencodable_reason,
)
from svcrest.http.compression import MIN_SIZE, breach_prone, compress, negotiated_coding
from svcrest.http.context import RequestContext
from svcrest.http.errors import RestError
from svcrest.http.exchange import HttpResponse, HttpStream
from svcrest.http.headers import Headers
from svcrest.http.request import Request
from svcrest.http.response import Response
from svcrest.http.streams import StreamResponse
from svcrest.http.tags import body_tag, matching_tag, tag_variant
from svcrest.instances import without_init
from svcrest.rest.conditional import READS
from svcrest.rest.embed import EnvelopeResponse
from svcrest.rest.server import internal_error
from svcrest.rest.wire import answer_lines

if TYPE_CHECKING:
    from svcrest.http.serializers import Serializer
    from svcrest.rest.auth_schemes import AuthSchemes
    from svcrest.rest.settings import SiteSettings

__all__ = [
    "answer",
    "coded_answer",
    "encoded_body",
    "error_answer",
    "finish",
    "not_modified",
    "remembered_tag_line",
    "tag_line",
]

logger = logging.getLogger("svcrest")

_NO_BODY_STATUSES = frozenset({204, 304})
_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS
_VARY_ENCODING = ("Vary", "Accept-Encoding")


def answer(
    settings: SiteSettings,
    ctx: RequestContext,
    request: Request,
    result: Response,
    own: tuple[tuple[str, str], ...],
    data: Any,
) -> HttpResponse:
    """The HTTP answer of a finished response, in the module's order: the format ``Accept``
    chose among the site's (JSON by default), the body (a 500 when the format cannot hold
    the data), a 200 to a GET or HEAD (not an ``_envelope``) with its ``ETag``, a 304 when
    ``If-None-Match`` names it, and a body of ``MIN_SIZE`` or more in the content coding the
    client prefers."""
    status = result.status
    serializers = settings.serializers
    # PERF: a site that answers JSON only (the usual one) chooses nothing: one attribute
    # read, no call (+324 of 118,226 instructions a plain GET; bench/instructions.py).
    serializer = None
    formats: tuple[str, ...] = ()
    if serializers is not None:
        serializer, own = serializers.negotiate(request.headers.get_joined("accept"), status, own)
        formats = serializers.tag_suffixes
    lines, wire, own_tag = answer_lines(settings, ctx, status, own)
    try:
        # PERF: :func:`encoded_body` written out (a Python call, ~700 instructions, less a
        # request: the answer step went from 247 to 177 bytecodes with its calls folded).
        if data is None or status in _NO_BODY_STATUSES:
            if type(result) is StreamResponse:  # sent as it comes: no validator, no coding
                return _stream(ctx, status, lines, wire, result)
            body = b""
        elif serializer is None:
            body = orjson.dumps(data, default=encode_default, option=_JSON_OPTIONS)
        else:
            body = serializer.encode(data)
    except (orjson.JSONEncodeError, UnencodableValue) as error:
        return _unencodable(settings, ctx, request, result, error)
    tagged = status == 200 and request.method in READS and type(result) is not EnvelopeResponse
    short = len(body) < MIN_SIZE
    tag = None
    if tagged and short:
        # PERF: the usual answer, a short body validated by its remembered ETag line, added
        # to the lines before the answer is made (no insertion, no second tuple).
        if own_tag < 0:
            found = remembered_tag_line(body)
            line, line_wire = found if found is not None else tag_line(body)
            lines = (*lines, line)
            wire = (*wire, line_wire)
            tag = line[1]
        else:
            tag = lines[own_tag][1]
    pending = ctx.pending_headers
    # PERF: every field set here, in field order, without the generated ``__init__`` (a class
    # call with a Python ``__init__``: a WSGI GET 86,038 → 84,424 instructions,
    # bench/instructions.py); tests/rest/test_lean_pipeline.py reads every field back.
    answered = without_init(HttpResponse)
    answered.status = status
    answered.headers = [*lines, *pending] if pending else [*lines]
    answered.body = body
    answered.content_length = None
    answered.wire_prefix = wire
    answered.request_id = ""
    if not short:
        return coded_answer(answered, request, own_tag, tagged, formats, settings.auth_schemes)
    if tag is None:
        return answered
    # PERF: :func:`not_modified` written out (a Python call less a tagged answer).
    condition = request.headers.get_joined("if-none-match")
    if condition is not None and matching_tag(condition, tag, formats) is not None:
        answered.status = 304  # with the 200's lines (ETag, Cache-Control, Vary), no body
        answered.body = b""
    return answered


def _stream(
    ctx: RequestContext,
    status: int,
    lines: tuple[tuple[str, str], ...],
    wire: tuple[tuple[bytes, bytes], ...],
    result: StreamResponse,
) -> HttpStream:
    """The answer of a stream: the REST header lines and the pending ones, then the chunks
    as they come (no ``ETag``, no 304, no content coding)."""
    pending = ctx.pending_headers
    return HttpStream(status, [*lines, *pending] if pending else [*lines], wire, result.chunks)


def _unencodable(
    settings: SiteSettings,
    ctx: RequestContext,
    request: Request,
    result: Response,
    error: orjson.JSONEncodeError | UnencodableValue,
) -> HttpResponse:
    """The 500 of an answer its format cannot hold, logged on one line naming the route and why
    (a plugin's mistake, not the client's: no traceback). SECURITY: the method and path
    come from the client: control characters are escaped, so the line stays one line."""
    logger.error(
        "The answer of %s %s (route %s) cannot be sent as %s: %s; answered 500",
        one_line(request.method),
        one_line(request.route),
        one_line(result.matched_route or "none"),
        # orjson's error is a TypeError: a format's own refusal is the narrower class.
        "the format asked for" if isinstance(error, UnencodableValue) else "JSON",
        unencodable_reason(error),
    )
    return error_answer(settings, ctx, internal_error(), request.headers)


def finish(
    settings: SiteSettings,
    ctx: RequestContext,
    status: int,
    own_lines: tuple[tuple[str, str], ...],
    data: Any,
    serializer: Serializer | None = None,
) -> HttpResponse:
    """The HTTP answer of a REST response: the REST header block, the response's own header
    lines, the pending ones (nonce, deprecations), and the body (none for ``data`` None, 204
    and 304): JSON, or in ``serializer``'s format (its Content-Type is then among
    ``own_lines``: :meth:`~svcrest.http.serializers.Serializers.negotiate`); no validator
    (see :func:`serve_rest`)."""
    lines, wire, _ = answer_lines(settings, ctx, status, own_lines)
    pending = ctx.pending_headers
    body = encoded_body(status, data, serializer)
    return HttpResponse(status, [*lines, *pending] if pending else [*lines], body, None, wire)


def encoded_body(status: int, data: Any, serializer: Serializer | None = None) -> bytes:
    """The bytes of an answer's ``data`` (none for None, 204 and 304): JSON, or in
    ``serializer``'s format."""
    if data is None or status in _NO_BODY_STATUSES:
        return b""
    if serializer is not None:
        return serializer.encode(data)
    # PERF: orjson calls ``default`` only for what it cannot encode itself (Decimal, set…);
    # passing it costs a plain answer nothing measurable (``{"ok": true}``: 386 ns without,
    # 390 ns with, medians of 40 interleaved timeit rounds on a loaded machine).
    return orjson.dumps(data, default=encode_default, option=_JSON_OPTIONS)


def error_answer(
    settings: SiteSettings,
    ctx: RequestContext,
    error: RestError,
    headers: Headers | None = None,
) -> HttpResponse:
    """The HTTP answer of an error raised outside dispatch (413, a bad ``rest_route``, 500,
    a store's 503 met by the cookie check), with the error's own header lines; in the
    format the request's ``headers`` accept when the site has more than JSON."""
    own = error.headers
    serializers = settings.serializers
    if serializers is None or headers is None:
        return finish(settings, ctx, error.status, own, error.to_dict())
    serializer, own = serializers.negotiate(headers.get_joined("accept"), error.status, own)
    return finish(settings, ctx, error.status, own, error.to_dict(), serializer)


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


def not_modified(request: Request, tag: str, formats: Sequence[str] = ()) -> bool:
    """Whether ``If-None-Match`` names ``tag`` or a variant of it (a coding's, one of the
    site's ``formats``: :mod:`svcrest.http.tags`): an answer with it becomes a 304."""
    # PERF: the lower-case name straight to the headers (get_header's normalising: ~0.4 µs).
    header = request.headers.get_joined("if-none-match")
    return header is not None and matching_tag(header, tag, formats) is not None


def coded_answer(
    answer: HttpResponse,
    request: Request,
    own_tag: int,
    tagged: bool,
    formats: Sequence[str],
    schemes: AuthSchemes,
) -> HttpResponse:
    """``answer`` (a body of ``MIN_SIZE`` or more) with its validator and content coding:
    when ``tagged`` (a 200 to a GET or HEAD, not an ``_envelope``) an ``ETag`` (own line
    ``own_tag`` of the answer's, -1: the body's hash) and a 304 when ``If-None-Match`` names
    it; the body compressed in the coding the client prefers (``Vary: Accept-Encoding``),
    unless it sets a cookie or carries a nonce, or the request carries a secret header line
    of one of the site's ``schemes`` (BREACH)."""
    body = answer.body
    coding = None
    compressible = not breach_prone(
        answer.headers, body, schemes.secret_lines, request.headers, schemes.secret_request_lines
    )
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
        tag = tag_variant(tag, coding)
    if not_modified(request, tag, formats):
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
