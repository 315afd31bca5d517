"""The header lines of REST answers, made safe and encoded for the wire once.

Every REST answer starts with the same block (``Content-Type``, ``X-Content-Type-Options``,
``X-Robots-Tag``, the discovery ``Link``, ``Vary: Origin``, the CORS lists, ``Cache-Control:
no-store`` where the answer must not be cached) followed by the response's own lines (Allow,
CORS, a plugin's). Both repeat from one answer to the next: :func:`answer_lines` answers them
from two bounded memories (:class:`~svcrest.bounded.Memo`), with the index of the response's
own ``ETag`` line, so that encoding a plain answer's header costs two dict look-ups.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from svcrest.bounded import Memo
from svcrest.http.context import RequestContext
from svcrest.http.exchange import encode_lines, safe_lines, wire_lines
from svcrest.http.serializers import JSON_SERIALIZER
from svcrest.http.user import ANONYMOUS
from svcrest.rest.auth_schemes import CONTENT_ALLOW_HEADERS

if TYPE_CHECKING:
    from svcrest.rest.settings import SiteSettings

__all__ = [
    "JSON_CONTENT_TYPE",
    "AnswerLines",
    "PreparedLines",
    "answer_lines",
    "header_block",
    "prepared_lines",
]

#: The Content-Type of JSON answers (the header block's, for a site that answers JSON only).
JSON_CONTENT_TYPE = JSON_SERIALIZER.content_type
_STATIC_REST_HEADERS = (
    ("Content-Type", JSON_CONTENT_TYPE),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Robots-Tag", "noindex"),
)
_EXPOSE = (
    "X-SVC-Total, X-SVC-TotalPages, Link, ETag, RateLimit, RateLimit-Policy, Retry-After,"
    " Idempotent-Replayed, X-Request-Id"
)
#: With ``wordpress_compat``, WordPress's paging headers are exposed too (``wpapi`` reads them).
_EXPOSE_COMPAT = _EXPOSE + ", X-WP-Total, X-WP-TotalPages"
#: CORS ``Access-Control-Allow-Headers`` of a site without authentication schemes.
_NO_SCHEME_ALLOW_HEADERS = ", ".join(CONTENT_ALLOW_HEADERS)
#: The header lines of a REST answer but the pending ones: the lines (made safe), their wire
#: encoding, and the index of the response's own ``ETag`` line among them (-1: none).
AnswerLines = tuple[tuple[tuple[str, str], ...], tuple[tuple[bytes, bytes], ...], int]


# PERF: (Link value, not cacheable, the response sets its own Content-Type) → the REST header
# lines every response starts with and their wire encoding (built once: ~2 µs a response).
# SECURITY: bounded; the Link value comes from the site's settings and URL filters, not from
# the client, and the block is emptied when full.
_HEADER_BLOCKS_MAX = 64
_HEADER_BLOCKS: Memo[
    tuple[str | None, bool, bool, bool, str],
    tuple[tuple[tuple[str, str], ...], tuple[tuple[bytes, bytes], ...]],
] = Memo(_HEADER_BLOCKS_MAX)


def header_block(
    link: str | None,
    no_store: bool,
    own_content_type: bool,
    wordpress_compat: bool = False,
    allow_headers: str = _NO_SCHEME_ALLOW_HEADERS,
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[bytes, bytes], ...]]:
    """The REST header lines every response starts with, and their wire encoding
    (``allow_headers``: the site's CORS ``Access-Control-Allow-Headers``, see
    :class:`~svcrest.rest.auth_schemes.AuthSchemes`)."""
    key = (link, no_store, own_content_type, wordpress_compat, allow_headers)
    block = _HEADER_BLOCKS.get(key)
    if block is None:
        lines = [
            item
            for item in _STATIC_REST_HEADERS
            if not own_content_type or item[0] != "Content-Type"
        ]
        if link is not None:
            lines.append(("Link", link))
        lines.append(("Vary", "Origin"))
        lines.append(
            ("Access-Control-Expose-Headers", _EXPOSE_COMPAT if wordpress_compat else _EXPOSE)
        )
        lines.append(("Access-Control-Allow-Headers", allow_headers))
        if no_store:
            lines.append(("Cache-Control", "no-store"))
        safe = tuple(safe_lines(lines))
        block = _HEADER_BLOCKS.keep(key, (safe, wire_lines(safe)))
    return block


# PERF: (REST header block key, the response's own lines) → every header line of the answer
# but the pending ones, made safe, their wire encoding and where the own ``ETag`` line is: a
# response's own lines (Allow, CORS) repeat from one answer to the next, and encoding them
# line by line cost ~2 µs. SECURITY: bounded in entries and bytes: only answers whose own
# lines total at most ``_TEMPLATE_LINES`` characters and no ``?`` are kept (the CORS lines
# hold a validated Origin of at most 300 characters; a plugin's header may echo a client's
# value; a paging Link holds the client's query string), and the memory is emptied when full.
_TEMPLATES_MAX = 256
_TEMPLATE_LINES = 1024
_TemplateKey = tuple[str | None, bool, bool, tuple[tuple[str, str], ...], str]


def _own_lines_length(key: _TemplateKey) -> int:
    """How the template memory measures a key: the characters of its own lines; more than
    it keeps when a value holds ``?`` (SECURITY: never keyed on a query string, which a
    paging ``Link`` carries)."""
    own = key[3]
    if any("?" in value for _, value in own):
        return _TEMPLATE_LINES + 1
    return sum(len(name) + len(value) for name, value in own)


_TEMPLATES: Memo[_TemplateKey, AnswerLines] = Memo(
    _TEMPLATES_MAX, _TEMPLATE_LINES, _own_lines_length
)
#: ``_TEMPLATES.get``, read once (PERF: see :class:`~svcrest.bounded.Memo`).
_template_of = _TEMPLATES.get


class PreparedLines(tuple[tuple[str, str], ...]):
    """Header lines a step made once and hands out for many answers (a memory's value: a
    route's ``Allow`` line, with an origin's CORS lines): a tuple hashed by identity, so the
    answer step's template memory finds their answer's lines without hashing and comparing
    each line (with the default step handing out one such tuple per route and origin: a WSGI
    GET with CORS lines 77,604 → 76,187 instructions, bench/budget.py).

    Equal to a plain tuple of the same lines, but not the same key: such a tuple is another
    entry of the memory, with the same lines (never a wrong answer). Make them with
    :func:`prepared_lines`."""

    __slots__ = ()
    __hash__ = object.__hash__


def prepared_lines(own: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """``own`` as :class:`PreparedLines` for a caller that keeps it and hands it out again;
    lines the template memory would not keep (long, or holding a ``?``) are left as they are
    (each answer of theirs takes the general path)."""
    if _own_lines_length((None, False, False, own, "")) <= _TEMPLATE_LINES:
        return PreparedLines(own)
    return own


def _template(
    link: str | None,
    no_store: bool,
    wordpress_compat: bool,
    own: tuple[tuple[str, str], ...],
    allow_headers: str = _NO_SCHEME_ALLOW_HEADERS,
) -> AnswerLines:
    """The REST header block followed by the response's own lines ``own``, made safe, their
    wire encoding, and the index of the own ``ETag`` line among them (-1: none)."""
    own_content_type = False
    own_tag = -1
    for index, (name, _) in enumerate(own):
        # PERF: the length first; a lower-cased copy only for a name of a length it may be.
        if len(name) == 12 and name.lower() == "content-type":
            own_content_type = True
        elif len(name) == 4 and own_tag < 0 and name.lower() == "etag":
            own_tag = index
    lines, wire = header_block(link, no_store, own_content_type, wordpress_compat, allow_headers)
    if own_tag >= 0:
        own_tag += len(lines)
    if own:
        lines = (*lines, *safe_lines(own))
        wire = (*wire, *encode_lines(own))
    return _TEMPLATES.keep(
        (link, no_store, wordpress_compat, own, allow_headers), (lines, wire, own_tag)
    )


def answer_lines(
    settings: SiteSettings, ctx: RequestContext, status: int, own: tuple[tuple[str, str], ...]
) -> AnswerLines:
    """The header lines of a REST answer of ``status`` with the response's own lines ``own``
    but the pending ones (see :data:`AnswerLines`).

    SECURITY: an answer is ``Cache-Control: no-store`` when it is for a logged-in user, when
    it is an error (a refused nonce or login must not be replayed from a cache) or when the
    method was overridden (a cache keys on the method it saw).
    """
    user = ctx.user
    no_store = (
        status >= 400
        or ctx.method_overridden != ""
        or (user is not ANONYMOUS and user.is_logged_in)
    )
    link = settings.rest_output_link_header()
    compat = settings.wordpress_compat
    schemes = settings.auth_schemes
    allow = schemes.allow_headers_compat if compat else schemes.allow_headers
    found = _template_of((link, no_store, compat, own, allow))
    return found if found is not None else _template(link, no_store, compat, own, allow)
