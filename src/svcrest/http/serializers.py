"""Response formats of REST answers: JSON always, others when a site registers them.

A :class:`Serializer` names a media type and turns an answer's data into bytes. JSON
(:data:`JSON_SERIALIZER`) is every site's format, and its only one until the site registers
another with ``app.add_serializer(...)``; from then on each answer's format is chosen by the
request's ``Accept`` header (RFC 9110 §12.5.1, :class:`Serializers`) and every REST answer
carries ``Vary: Accept``. :func:`msgpack_serializer` is the one shipped besides JSON
(``application/msgpack``, extra ``svcrest[msgpack]``). See docs/guides/response-formats.md.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from svcrest.bounded import Memo
from svcrest.http.answer_json import UnencodableValue, dumps_answer, encode_default
from svcrest.http.qvalues import q_weights
from svcrest.http.tags import format_suffix, tag_variant

__all__ = [
    "JSON_SERIALIZER",
    "Serializer",
    "Serializers",
    "UnencodableValue",
    "msgpack_serializer",
]

#: A media type as ``Accept`` names it (``type/subtype``), lower case.
_MEDIA_TYPE = re.compile(r"[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+-]+")
#: What an ``ETag`` variant suffix may hold.
_TAG_SUFFIX = re.compile(r"[a-z0-9]{1,20}")


@dataclass(frozen=True, slots=True)
class Serializer:
    """One response format: ``encode`` turns an answer's data into the body bytes, sent with
    ``Content-Type: content_type``.

    ``media_type`` (and each of ``aliases``) is what a request's ``Accept`` names to ask for
    it. ``tag_suffix`` tells this format's ``ETag`` apart from JSON's when a route gives its
    own version (``"v7"`` becomes ``"v7-msgpack"``); JSON's is empty. ``encode`` raises
    :class:`~svcrest.http.serializers.UnencodableValue` (or ``orjson.JSONEncodeError``) for
    data it cannot hold: the answer is then a logged 500 ``rest_internal_error``.
    """

    media_type: str
    content_type: str
    encode: Callable[[Any], bytes]
    tag_suffix: str
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in (self.media_type, *self.aliases):
            if _MEDIA_TYPE.fullmatch(name) is None:
                raise ValueError(f"a serializer's media type must be type/subtype, not {name!r}")
        if self.media_type != "application/json" and _TAG_SUFFIX.fullmatch(self.tag_suffix) is None:
            raise ValueError(
                f"a serializer's tag_suffix must be 1-20 lower-case letters or digits,"
                f" not {self.tag_suffix!r}"
            )
        if not callable(self.encode):
            raise ValueError("a serializer's encode must be callable")


#: JSON, as every REST answer is without other formats (orjson, with the answer types of
#: :mod:`svcrest.http.answer_json`).
JSON_SERIALIZER = Serializer(
    "application/json", "application/json; charset=UTF-8", dumps_answer, ""
)


def _weight(serializer: Serializer, weights: dict[str, float]) -> float:
    """The weight ``Accept`` gives ``serializer``: its most specific matching range
    (its type or an alias, then ``type/*``, then ``*/*``); 0 when none matches."""
    best: float | None = None
    for name in (serializer.media_type, *serializer.aliases):
        weight = weights.get(name)
        if weight is not None and (best is None or weight > best):
            best = weight
    if best is not None:
        return best
    kind = serializer.media_type.split("/", 1)[0]
    found = weights.get(kind + "/*")
    if found is not None:
        return found
    return weights.get("*/*", 0.0)


class Serializers:
    """The formats a site answers in (JSON first, then the registered ones in their order)
    and the choice among them by ``Accept``.

    The choice: the format with the highest weight, ties going to the earlier one (JSON
    first); an absent or empty ``Accept`` and ``*/*`` get JSON. When ``Accept`` accepts none
    of them the answer is JSON all the same, as WordPress answers JSON whatever a client asks
    for (no 406): a client that cannot read it still gets the error codes and messages it
    would get otherwise.
    """

    __slots__ = ("_chosen", "_lines", "all", "tag_suffixes")

    def __init__(self, serializers: Sequence[Serializer]) -> None:
        found = list(serializers)
        if not found or found[0] is not JSON_SERIALIZER:
            raise ValueError("the first format of a site is JSON_SERIALIZER")
        names: set[str] = set()
        suffixes: set[str] = set()
        for serializer in found:
            for name in (serializer.media_type, *serializer.aliases):
                if name in names:
                    raise ValueError(f"two serializers answer for {name!r}")
                names.add(name)
            if serializer.tag_suffix in suffixes:
                raise ValueError(f"two serializers share the tag suffix {serializer.tag_suffix!r}")
            suffixes.add(serializer.tag_suffix)
        #: The formats, JSON first.
        self.all: tuple[Serializer, ...] = tuple(found)
        #: How this site's formats end their ``ETag`` variants (``-msgpack"``): the tags
        #: a client got in any of them name the same version (:mod:`svcrest.http.tags`).
        self.tag_suffixes: tuple[str, ...] = tuple(
            format_suffix(serializer.tag_suffix) for serializer in found if serializer.tag_suffix
        )
        #: Each format's header lines: its Content-Type, then ``Vary: Accept``.
        self._lines = {
            serializer.media_type: (("Content-Type", serializer.content_type), ("Vary", "Accept"))
            for serializer in found
        }
        # PERF: an Accept value → the format chosen for it (clients send the same few values;
        # parsing one costs ~3 µs). SECURITY: the value is the client's: only values of at
        # most 256 characters are kept, 64 of them, and the memory is emptied when full.
        self._chosen: Memo[str, Serializer] = Memo(64, 256)

    def with_serializer(self, serializer: Serializer) -> Serializers:
        """These formats and ``serializer`` after them (ValueError when a media type or tag
        suffix is already taken)."""
        return Serializers((*self.all, serializer))

    def choose(self, accept: str | None) -> Serializer:
        """The format to answer a request whose ``Accept`` value is ``accept`` in."""
        if not accept:
            return JSON_SERIALIZER
        chosen = self._chosen.get(accept)
        if chosen is None:
            weights = q_weights(accept)
            chosen = JSON_SERIALIZER
            best = 0.0
            for serializer in self.all:
                weight = _weight(serializer, weights)
                if weight > best:
                    chosen, best = serializer, weight
            self._chosen.keep(accept, chosen)
        return chosen

    def negotiate(
        self, accept: str | None, status: int, own: tuple[tuple[str, str], ...]
    ) -> tuple[Serializer | None, tuple[tuple[str, str], ...]]:
        """The format of an answer and its header lines: the format's ``Content-Type`` and
        ``Vary: Accept`` before the response's ``own`` lines, and a success's own ``ETag``
        made this format's variant (``"v7"`` → ``"v7-msgpack"``). A response that sets its
        own ``Content-Type`` keeps it and its JSON body: (None, ``own``)."""
        etag = -1
        for index, (name, _) in enumerate(own):
            lower = name.lower()
            if lower == "content-type":
                return None, own
            if lower == "etag":
                etag = index
        serializer = self.choose(accept)
        suffix = serializer.tag_suffix
        if suffix and etag >= 0 and 200 <= status < 300:
            tag = own[etag][1]
            if tag.endswith('"'):
                own = (*own[:etag], ("ETag", tag_variant(tag, suffix)), *own[etag + 1 :])
        return serializer, (*self._lines[serializer.media_type], *own)


def _msgpack_default(value: Any) -> Any:
    """msgpack's ``default``: a value msgpack cannot hold itself, as a JSON client decodes it
    (a ``datetime`` its RFC 3339 string, a ``Decimal`` a number, a dataclass a map…)."""
    return orjson.loads(orjson.dumps(value, default=encode_default, option=orjson.OPT_NON_STR_KEYS))


def msgpack_serializer() -> Serializer:
    """MessagePack (``application/msgpack``; ``Accept: application/x-msgpack`` asks for it
    too), with the ``msgpack`` library (``pip install 'svcrest[msgpack]'``; ImportError
    without it). An answer holds the same values its JSON holds, except that map keys keep
    their type and ``bytes`` are sent as binary; ``ETag`` variants end in ``-msgpack``."""
    msgpack = importlib.import_module("msgpack")
    packb = msgpack.packb

    def encode(data: Any) -> bytes:
        try:
            body: bytes = packb(data, default=_msgpack_default)
            return body
        except orjson.JSONEncodeError:
            raise
        except (TypeError, ValueError, OverflowError) as error:
            raise UnencodableValue(f"a value msgpack cannot hold ({error})") from error

    return Serializer(
        "application/msgpack", "application/msgpack", encode, "msgpack", ("application/x-msgpack",)
    )
