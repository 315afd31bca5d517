"""Discovery strings (``svcrest.rest.discovery``), as WordPress's ``rest_output_rsd``,
``rest_output_link_wp_head`` and ``rest_output_link_header`` make them."""

from __future__ import annotations

from typing import Any

import pytest

from svcrest import App
from svcrest.rest.discovery import (
    rest_output_link_header,
    rest_output_link_wp_head,
    rest_output_rsd,
    rsd_document,
)


class Root:
    """A site whose REST root URL is ``url`` (what a ``rest_url`` filter may make it)."""

    home = "http://example.org/a&b"

    def __init__(self, url: str) -> None:
        self.url = url

    def get_rest_url(self) -> str:
        return self.url


def site(url: str) -> Any:
    return Root(url)


def test_the_three_strings_of_a_site() -> None:
    app = App("http://example.org/a&b")
    assert rest_output_rsd(app) == (
        '\t<api name="SVC-API" blogID="1" preferred="false"'
        ' apiLink="http://example.org/a&amp;b/svc-json/" />\n'
    )
    assert rest_output_link_wp_head(app) == (
        "<link rel='https://api.w.org/' href='http://example.org/a&amp;b/svc-json/' />\n"
    )
    assert rest_output_link_header(app) == (
        '<http://example.org/a&b/svc-json/>; rel="https://api.w.org/"'
    )


@pytest.mark.parametrize(
    ("root", "header"),
    [
        ("http://x/<a>/", '<http://x/%3Ca%3E/>; rel="https://api.w.org/"'),
        ("http://x/\r\nSet-Cookie: a=b", '<http://x/%0D%0ASet-Cookie:%20a=b>; rel="https://api.w.org/"'),
        ("http://x/\x7f\t", '<http://x/%7F%09>; rel="https://api.w.org/"'),
    ],
    ids=["angle-brackets", "line-break", "controls"],
)  # fmt: skip
def test_the_link_header_cannot_be_split_or_broken_out_of(root: str, header: str) -> None:
    assert rest_output_link_header(site(root)) == header


@pytest.mark.parametrize(
    ("root", "header"),
    [
        ("http://x/café/", '<http://x/caf%C3%A9/>; rel="https://api.w.org/"'),
        ("http://x/€", '<http://x/%E2%82%AC>; rel="https://api.w.org/"'),
        ("http://x/\U0001f600", '<http://x/%F0%9F%98%80>; rel="https://api.w.org/"'),
    ],
    ids=["latin-1", "bmp", "astral"],
)  # fmt: skip
def test_a_character_outside_ascii_is_percent_encoded_as_utf8(root: str, header: str) -> None:
    assert rest_output_link_header(site(root)) == header


def test_an_empty_root_gives_nothing() -> None:
    empty = site("")
    assert rest_output_rsd(empty) == ""
    assert rest_output_link_wp_head(empty) == ""
    assert rest_output_link_header(empty) is None
    assert "\t\t<apis>\n\t\t</apis>\n" in rsd_document(empty)


def test_the_rsd_document() -> None:
    assert rsd_document(site("http://example.org/a&b/svc-json/")) == (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<rsd version="1.0" xmlns="http://archipelago.phrasewise.com/rsd">\n'
        "\t<service>\n"
        "\t\t<engineName>svcrest</engineName>\n"
        "\t\t<engineLink>http://example.org/a&amp;b</engineLink>\n"
        "\t\t<homePageLink>http://example.org/a&amp;b</homePageLink>\n"
        "\t\t<apis>\n"
        '\t\t\t<api name="SVC-API" blogID="1" preferred="false"'
        ' apiLink="http://example.org/a&amp;b/svc-json/" />\n'
        "\t\t</apis>\n"
        "\t</service>\n"
        "</rsd>\n"
    )
