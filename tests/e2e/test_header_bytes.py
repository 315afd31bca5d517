"""Header values that are not ASCII text, over granian's ASGI and RSGI interfaces (real
``svcrest serve`` processes, ``tests/e2e/header_site.py`` answering what it got).

HTTP allows bytes beyond ASCII in a header value (RFC 9110's ``obs-text``); browsers send a
cookie set with such bytes as they are (UTF-8). granian's ASGI interface hands the line over
and svcrest reads it as Latin-1, as every ASGI server does; granian's RSGI interface leaves
the whole line out of the request (its header map holds text only), so the site answers as
if the client had not sent it: no 400, nothing logged. A control byte is refused 400 by
granian itself on both.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.test_many_hosts import Host, log_in, nonce_of, serving

pytestmark = pytest.mark.slow

ECHO = "/svc-json/t/v1/echo"
CAFE = "café".encode()  # UTF-8: b"caf\xc3\xa9"
#: What a Latin-1 reading of CAFE gives (ASGI's header values are bytes; svcrest decodes
#: them as Latin-1, as WSGI's environ does).
CAFE_AS_LATIN1 = CAFE.decode("latin-1")


@pytest.fixture(scope="module", params=["asgi", "rsgi"], ids=["granian-asgi", "granian-rsgi"])
def site(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Host, str, str]]:
    """granian on ``interface`` with the echo plugin; the admin's login cookie and nonce."""
    interface = str(request.param)
    db = str(tmp_path_factory.mktemp(f"bytes-{interface}") / "s.db")
    options = ["--server", "granian", "--interface", interface, "--db", db]
    with serving(
        [("127.0.0.1", [*options, "--plugin", "tests.e2e.header_site:register"], None)]
    ) as (host,):
        password = next(
            match.group(1)
            for line in host.output
            if (match := re.fullmatch(r"Created user admin with password: ([\w-]{24})", line))
        )
        with httpx.Client(base_url=host.url) as client:
            cookie = log_in(client, password)
            nonce = nonce_of(client)
        yield interface, host, cookie, nonce


def _echo(host: Host, headers: list[tuple[bytes, bytes]], body: bytes = b"") -> httpx.Response:
    with httpx.Client(base_url=host.url, timeout=10) as client:
        if body:
            return client.post(ECHO, headers=headers, content=body)
        return client.get(ECHO, headers=headers)


def test_a_custom_header_in_utf8_is_latin1_on_asgi_and_left_out_on_rsgi(
    site: tuple[str, Host, str, str],
) -> None:
    interface, host, _, _ = site
    response = _echo(host, [(b"X-Custom", CAFE), (b"User-Agent", b"Agent/1 (" + CAFE + b")")])
    assert response.status_code == 200
    got = response.json()["headers"]
    if interface == "asgi":
        assert got["x-custom"] == CAFE_AS_LATIN1 == "cafÃ©"
        assert got["user-agent"] == f"Agent/1 ({CAFE_AS_LATIN1})"
    else:
        assert got["x-custom"] is None
        assert got["user-agent"] is None


def test_a_login_cookie_beside_a_utf8_cookie_on_one_line(
    site: tuple[str, Host, str, str],
) -> None:
    """One ``Cookie`` line (as a browser sends it over HTTP/1.1) holding the login cookie
    and another site cookie whose value is UTF-8: on ASGI the user is logged in; on RSGI the
    line is gone, so the nonce meets the anonymous user (WordPress's "Cookie nonce is
    invalid", 403) on every request that sends one."""
    interface, host, cookie, nonce = site
    line = b"svc_logged_in=" + cookie.encode() + b"; pref=" + CAFE
    response = _echo(host, [(b"Cookie", line), (b"X-SVC-Nonce", nonce.encode())])
    if interface == "asgi":
        assert response.status_code == 200
        assert response.json()["user"] == 1
        assert response.json()["headers"]["cookie"] == line.decode("latin-1")
    else:
        assert response.status_code == 403
        assert response.json() == {
            "code": "rest_cookie_invalid_nonce",
            "message": "Cookie nonce is invalid",
            "data": {"status": 403},
        }


def test_the_same_cookies_on_two_lines_keep_the_login(site: tuple[str, Host, str, str]) -> None:
    """The same cookies as two ``Cookie`` lines (as HTTP/2 clients send cookie crumbs): on
    RSGI only the UTF-8 one is left out, and the user stays logged in on both."""
    interface, host, cookie, nonce = site
    login = b"svc_logged_in=" + cookie.encode()
    lines = [(b"Cookie", login), (b"Cookie", b"pref=" + CAFE), (b"X-SVC-Nonce", nonce.encode())]
    response = _echo(host, lines)
    assert response.status_code == 200
    assert response.json()["user"] == 1
    expected = f"{login.decode()}; pref={CAFE_AS_LATIN1}" if interface == "asgi" else login.decode()
    assert response.json()["headers"]["cookie"] == expected


def test_a_json_body_whose_content_type_is_not_ascii(site: tuple[str, Host, str, str]) -> None:
    """``Content-Type: application/json`` with a parameter in UTF-8: on ASGI the body is
    read as JSON; on RSGI the type is gone and the body is not read as JSON parameters."""
    interface, host, _, _ = site
    content_type = b"application/json; note=" + CAFE
    response = _echo(host, [(b"Content-Type", content_type)], b'{"a": 1}')
    assert response.status_code == 200
    if interface == "asgi":
        assert response.json()["json"] == {"a": 1}
        assert response.json()["headers"]["content-type"] == content_type.decode("latin-1")
    else:
        assert response.json()["json"] is None
        assert response.json()["headers"]["content-type"] is None


def test_a_control_byte_in_a_header_value_is_refused_by_granian(
    site: tuple[str, Host, str, str],
) -> None:
    _, host, _, _ = site
    assert _echo(host, [(b"X-Custom", b"a\x01b")]).status_code == 400


def test_ascii_values_reach_the_site_on_both(site: tuple[str, Host, str, str]) -> None:
    _, host, _, _ = site
    response = _echo(host, [(b"X-Custom", b"plain"), (b"If-None-Match", b'"abc"')])
    assert response.status_code == 200
    got = response.json()["headers"]
    assert (got["x-custom"], got["if-none-match"]) == ("plain", '"abc"')
