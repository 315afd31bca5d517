"""A WSGI environ's header lines (``svcrest.http.environ``), read on demand."""

from __future__ import annotations

from typing import Any

import pytest

from svcrest.http import environ as environ_module
from svcrest.http.environ import EnvironHeaders, environ_header_lines


def environ(**keys: Any) -> dict[str, Any]:
    """An environ as a WSGI server makes it: CGI variables, then ``keys``."""
    return {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": "/svc-json/",
        "SERVER_NAME": "example.org",
        "wsgi.input": None,
        "HOME": "/root",  # granian copies the process's environment in
        **keys,
    }


def test_the_lines_in_the_environs_order() -> None:
    lines, index = environ_header_lines(
        environ(
            HTTP_ACCEPT="*/*",
            CONTENT_TYPE="application/json",
            HTTP_X_CUSTOM_THING="1",
            CONTENT_LENGTH="",
            HTTP_X_SVC_NONCE="n",
        )
    )
    assert lines == [
        ("Accept", "*/*"),
        ("Content-Type", "application/json"),
        ("X-Custom-Thing", "1"),
        ("X-Svc-Nonce", "n"),
    ]
    assert index == {
        "accept": ["*/*"],
        "content-type": ["application/json"],
        "x-custom-thing": ["1"],
        "x-svc-nonce": ["n"],
    }


def test_keys_a_server_does_not_make_from_a_client_line_are_skipped() -> None:
    lines, _ = environ_header_lines(environ(HTTP_lower="x", SCRIPT_NAME="", CONTENT_LENGTH="5"))
    assert lines == [("Content-Length", "5")]


def test_content_type_is_read_from_either_key() -> None:
    headers = EnvironHeaders(environ(HTTP_CONTENT_TYPE="text/plain"))
    assert headers.get_joined("content-type") == "text/plain"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("accept", "*/*"),
        ("x-wp-nonce", None),
        ("x-custom-thing", "1"),
        ("x_custom_thing", None),  # no line name has an underscore after the server's mapping
    ],
)
def test_get_joined_without_listing(name: str, value: str | None) -> None:
    headers = EnvironHeaders(environ(HTTP_ACCEPT="*/*", HTTP_X_CUSTOM_THING="1"))
    assert headers.get_joined(name) == value


@pytest.mark.parametrize(
    ("keys", "names", "expected"),
    [
        ({"HTTP_AUTHORIZATION": "Basic x"}, {"authorization", "cookie"}, True),
        ({"HTTP_ACCEPT": "*/*"}, {"authorization", "cookie"}, False),
        ({"HTTP_X_API_KEY": ""}, {"x-api-key"}, True),  # an empty line is still a line
        ({"CONTENT_TYPE": ""}, {"content-type"}, False),  # an empty CGI key is no line
        ({"CONTENT_TYPE": "text/plain"}, {"content-type"}, True),
    ],
    ids=["present", "absent", "empty-line", "empty-cgi-key", "cgi-key"],
)
def test_has_any(keys: dict[str, str], names: set[str], expected: bool) -> None:
    headers = EnvironHeaders(environ(**keys))
    assert headers.has_any(frozenset(names)) is expected
    listed = EnvironHeaders(environ(**keys))
    listed.listed()
    assert listed.has_any(frozenset(names)) is expected  # the same once listed


def test_a_change_lists_the_lines_first() -> None:
    headers = EnvironHeaders(environ(HTTP_ACCEPT="*/*"))
    headers.add("X-Added", "yes")
    assert headers.get_joined("accept") == "*/*"
    assert headers.get_joined("x-added") == "yes"


#: Header names and the environ keys that carry them, for the probe's tests.
_NAMES = {
    "authorization": "HTTP_AUTHORIZATION",
    "cookie": "HTTP_COOKIE",
    "x-wp-nonce": "HTTP_X_WP_NONCE",
    "x-svc-nonce": "HTTP_X_SVC_NONCE",
    "x-api-key": "HTTP_X_API_KEY",
    "content-type": "CONTENT_TYPE",  # and HTTP_CONTENT_TYPE
}


@pytest.mark.parametrize("count", range(1, len(_NAMES) + 1))
def test_has_any_of_up_to_four_keys_tests_each_and_answers_as_the_keys_view(count: int) -> None:
    """One to four keys are tested one by one (the fast path), more through the environ's
    keys view: both answer as the view's ``isdisjoint`` would, for every line present."""
    names = frozenset(list(_NAMES)[:count])
    keys, four, _ = environ_module._probe(names)
    carriers = {key for name in names for key in environ_module._keys_of_name(name)}
    assert keys == tuple(sorted(carriers))
    assert (four is not None) is (len(keys) <= 4)
    if four is not None:
        assert set(four) == set(keys)
    for present in [*_NAMES.values(), "HTTP_CONTENT_TYPE", "HTTP_ACCEPT"]:
        value = "text/plain" if "CONTENT" in present else "x"
        environ_keys = environ(**{present: value})
        expected = not environ_keys.keys().isdisjoint(keys)
        assert EnvironHeaders(environ_keys).has_any(names) is expected, present
