"""CookieAuth's memo of Cookie headers: only valid cookies, bounded, and never a verdict."""

from __future__ import annotations

from typing import Any

import pytest

from svcrest.auth import rest_cookie
from svcrest.auth.cookies import COOKIE_NAME, parse_cookie_header
from svcrest.auth.rest_cookie import MAX_REMEMBERED_HEADER, MAX_REMEMBERED_HEADERS, CookieAuth
from svcrest.http.headers import Headers
from svcrest.http.request import Request
from svcrest.http.user import ANONYMOUS, User
from tests.auth.test_auth_service import Env
from tests.auth.test_auth_service import env as env


def _request(header: str) -> Request:
    return Request.from_http("GET", "/svc/v1/x", "", Headers([("cookie", header)]), b"")


def _counting_parser(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every header ``parse_cookie_header`` is asked to parse by the cookie check."""
    parsed: list[str] = []

    def parse(header: Any) -> dict[str, str]:
        parsed.append(header)
        return parse_cookie_header(header)

    monkeypatch.setattr(rest_cookie, "parse_cookie_header", parse)
    return parsed


def _user(cookie_auth: CookieAuth, header: str) -> User:
    return cookie_auth.cookie_user(ANONYMOUS, _request(header))


def test_a_valid_cookie_header_is_parsed_once(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = _counting_parser(monkeypatch)
    cookie_auth = CookieAuth(lambda: env.auth)
    value = env.log_in(env.alice).value
    header = f"theme=dark; {COOKIE_NAME}={value}"
    assert [_user(cookie_auth, header).id for _ in range(3)] == [env.alice.id] * 3
    assert parsed == [header]
    assert cookie_auth._header_values == {header: value}
    # Every request still checks the cookie: one auth_cookie_valid each.
    assert env.names() == ["auth_cookie_valid"] * 3


def test_a_remembered_header_still_loses_its_user_on_logout(env: Env) -> None:
    cookie_auth = CookieAuth(lambda: env.auth)
    issued = env.log_in(env.alice)
    header = f"{COOKIE_NAME}={issued.value}"
    assert _user(cookie_auth, header).id == env.alice.id
    env.auth.log_out(env.alice.id, issued.token)
    assert _user(cookie_auth, header) is ANONYMOUS


def test_invalid_and_long_headers_are_never_remembered(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed = _counting_parser(monkeypatch)
    cookie_auth = CookieAuth(lambda: env.auth)
    value = env.log_in(env.alice).value
    forged = f"{COOKIE_NAME}={value[:-1]}{'0' if value[-1] != '0' else '1'}"
    long = f"{COOKIE_NAME}={value}; pad={'x' * MAX_REMEMBERED_HEADER}"
    assert [_user(cookie_auth, forged) for _ in range(2)] == [ANONYMOUS, ANONYMOUS]
    assert [_user(cookie_auth, long).id for _ in range(2)] == [env.alice.id] * 2
    assert parsed == [forged, forged, long, long]
    assert cookie_auth._header_values == {}


def test_bounded_in_entries_oldest_first(env: Env) -> None:
    assert MAX_REMEMBERED_HEADERS == 1024
    assert MAX_REMEMBERED_HEADER == 1024
    cookie_auth = CookieAuth(lambda: env.auth, max_headers=2)
    value = env.log_in(env.alice).value
    headers = [f"n={index}; {COOKIE_NAME}={value}" for index in range(3)]
    for header in headers:
        assert _user(cookie_auth, header).id == env.alice.id
    assert cookie_auth._header_values == {headers[1]: value, headers[2]: value}
