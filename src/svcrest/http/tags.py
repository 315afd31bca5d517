"""Entity tags (RFC 9110 §8.8.3) and their variants: the one place that knows how a tag is
made, varied and compared.

A tag names one version of one representation. The same version in another form gets a
variant of its tag, a suffix before the closing quote: a response format's
(``"v7"`` → ``"v7-msgpack"``, the format's ``tag_suffix``) and then a content coding's
(``"v7-msgpack-gzip"``). Comparing tags compares their bases: a client holding any variant
names the version. Which format suffixes count is each site's own (its formats,
:class:`~svcrest.http.serializers.Serializers`), so two sites in one process never read
each other's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from hashlib import blake2b

__all__ = [
    "CODED_SUFFIXES",
    "body_tag",
    "format_suffix",
    "matching_tag",
    "strong_match",
    "tag_base",
    "tag_variant",
]

#: One member of a list header, from where it starts to its comma: an entity tag (``W/``
#: kept apart) or ``*``.
_TAG = re.compile(r'\s*(?:(W/)?("[\x21\x23-\x7e\x80-\xff]*")|(\*))\s*(?:,|$)')
#: The suffixes that name a content coding's variant of a tag (every coding the process
#: may send: :data:`svcrest.http.compression.CODINGS`).
CODED_SUFFIXES = ('-gzip"', '-br"', '-zstd"')


def body_tag(body: bytes) -> str:
    """The strong ``ETag`` of a body: 16 bytes of BLAKE2b, quoted hex."""
    return '"' + blake2b(body, digest_size=16).hexdigest() + '"'


def tag_variant(tag: str, suffix: str) -> str:
    """``tag``'s variant ``suffix`` (a format's or a coding's): ``"v7"`` → ``"v7-gzip"``."""
    return tag[:-1] + "-" + suffix + '"'


def format_suffix(suffix: str) -> str:
    """How a format's ``tag_suffix`` ends a tag (``msgpack`` → ``-msgpack"``): the form
    :func:`tag_base` takes in ``formats``."""
    return "-" + suffix + '"'


def tag_base(tag: str, formats: Sequence[str] = ()) -> str:
    """``tag`` without a coding's suffix and then one of ``formats``
    (:func:`format_suffix` forms): ``"x-msgpack-gzip"`` → ``"x"``."""
    for suffix in CODED_SUFFIXES:
        if tag.endswith(suffix):
            tag = tag[: -len(suffix)] + '"'
            break
    for suffix in formats:
        if tag.endswith(suffix):
            return tag[: -len(suffix)] + '"'
    return tag


def _members(header: str) -> Iterator[re.Match[str]]:
    """The well-formed members of an ``If-None-Match`` / ``If-Match`` list, in order; a
    member that is not a tag (``junk"v1"``, ``w/"v1"``) is skipped whole, to its comma.

    SECURITY: each member is tried once, from where it starts. Searching for a tag anywhere
    in the header restarted the match at every character of a run of blanks, work quadratic
    in the header's length (32,000 blanks: 16 s of CPU a request; servers take 128 KiB).
    """
    position, end = 0, len(header)
    while position < end:
        found = _TAG.match(header, position)
        if found is not None:
            yield found
            position = found.end()
            continue
        comma = header.find(",", position)
        if comma < 0:
            return
        position = comma + 1


def matching_tag(header: str, tag: str, formats: Sequence[str] = ()) -> str | None:
    """The tag of ``If-None-Match`` (a list, ``*``, weak tags) that names ``tag`` or one of
    its variants (a coding's, one of ``formats``) by the weak comparison: the tag to answer
    the 304 with; None when none does."""
    base = tag_base(tag, formats)
    for found in _members(header):
        if found.group(3) is not None:
            return tag
        opaque = found.group(2)
        if opaque == tag:
            return tag
        if tag_base(opaque, formats) == base:
            return opaque
    return None


def strong_match(header: str, tag: str, formats: Sequence[str] = ()) -> bool:
    """Whether ``If-Match`` names ``tag`` (or a variant of it) by the strong comparison, or
    is ``*``; a weak tag never matches."""
    base = tag_base(tag, formats)
    for found in _members(header):
        if found.group(3) is not None:
            return True
        if found.group(1) is None and tag_base(found.group(2), formats) == base:
            return True
    return False
