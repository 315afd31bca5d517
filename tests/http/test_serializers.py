"""The choice of a response format by ``Accept`` (svcrest.http.serializers)."""

from __future__ import annotations

import pytest

from svcrest import Serializer, msgpack_serializer
from svcrest.http.serializers import JSON_SERIALIZER, Serializers


def _formats() -> Serializers:
    return Serializers((JSON_SERIALIZER,)).with_serializer(msgpack_serializer())


def test_json_comes_first() -> None:
    with pytest.raises(ValueError, match="JSON_SERIALIZER"):
        Serializers((msgpack_serializer(),))


def test_the_memory_of_accept_values_is_bounded() -> None:
    formats = _formats()
    long_value = "application/msgpack, " + "x/y;q=0.1, " * 30
    assert formats.choose(long_value).media_type == "application/msgpack"
    assert long_value not in formats._chosen.entries
    for index in range(200):
        formats.choose(f"application/msgpack, x/y{index}")
    assert len(formats._chosen) == 200 - 3 * 64  # emptied when full, three times


def test_negotiate_adds_the_format_lines_and_the_etag_variant() -> None:
    formats = _formats()
    own = (("Allow", "GET"), ("ETag", '"v3"'))
    serializer, lines = formats.negotiate("application/msgpack", 200, own)
    assert serializer is not None and serializer.media_type == "application/msgpack"
    assert lines == (
        ("Content-Type", "application/msgpack"),
        ("Vary", "Accept"),
        ("Allow", "GET"),
        ("ETag", '"v3-msgpack"'),
    )
    # Not a success (a 304 names the tag the client sent): the tag as it is.
    assert formats.negotiate("application/msgpack", 304, own)[1][-1] == ("ETag", '"v3"')
    json, lines = formats.negotiate(None, 200, own)
    assert json is JSON_SERIALIZER
    assert lines[-1] == ("ETag", '"v3"')
    assert formats.negotiate("application/msgpack", 200, (("content-type", "text/html"),)) == (
        None,
        (("content-type", "text/html"),),
    )


def test_a_serializer_names_a_media_type_and_a_suffix() -> None:
    with pytest.raises(ValueError, match="callable"):
        Serializer("application/cbor", "application/cbor", None, "cbor")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tag_suffix"):
        Serializer("application/cbor", "application/cbor", bytes, "CBOR!")
