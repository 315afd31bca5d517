"""Headers: case-insensitive, multi-valued, ordered."""

from __future__ import annotations

import pytest

from svcrest.http.headers import Headers


def test_lookup_is_case_insensitive() -> None:
    headers = Headers({"Content-Type": "text/plain"})
    assert headers["content-type"] == "text/plain"
    assert "CONTENT-TYPE" in headers
    assert headers.get("x-missing") is None


def test_add_keeps_every_line_and_getitem_joins() -> None:
    headers = Headers()
    headers.add("Link", "<a>")
    headers.add("link", "<b>")
    assert headers.get_list("LINK") == ["<a>", "<b>"]
    assert headers["Link"] == "<a>, <b>"
    assert headers.items_list() == [("Link", "<a>"), ("link", "<b>")]
    assert len(headers) == 1


def test_setitem_replaces_every_line() -> None:
    headers = Headers([("Allow", "GET"), ("allow", "POST"), ("X", "1")])
    headers["ALLOW"] = "PUT"
    assert headers.items_list() == [("X", "1"), ("ALLOW", "PUT")]


def test_delitem() -> None:
    headers = Headers({"A": "1"})
    del headers["a"]
    assert "A" not in headers
    with pytest.raises(KeyError):
        del headers["a"]


def test_equality_with_mapping_ignores_case() -> None:
    assert Headers({"Allow": "GET"}) == {"allow": "GET"}
    assert Headers({"Allow": "GET"}) != {"allow": "POST"}
