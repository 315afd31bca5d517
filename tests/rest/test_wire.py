"""The header lines of REST answers (``svcrest.rest.wire``): lines prepared once answer as
the same lines read afresh.

A step that hands out the same own lines for many answers (the default filters' ``Allow``
line, with an origin's CORS lines) registers them with ``prepared_lines``; the answer step
then finds their header lines by the tuple's identity. Each test compares that path with
the general one (an equal tuple made afresh).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from svcrest import App, Request, Response, public
from svcrest.http.context import RequestContext
from svcrest.http.user import ANONYMOUS, User
from svcrest.rest import wire
from svcrest.rest.defaults import default_own_lines, rest_send_allow_header, rest_send_cors_headers
from svcrest.rest.wire import answer_lines, prepared_lines

OWN_LINES = (
    (),
    (("Allow", "GET"),),
    (("Allow", "GET, POST"), ("Access-Control-Allow-Origin", "http://example.com")),
    (("Allow", "GET"), ("ETag", '"v1"'), ("X-Plugin", "one")),
    (("Content-Type", "text/plain"), ("Allow", "GET")),
    (("X-Bad", "split\r\nSet-Cookie: a=b"),),
)


def _fresh(own: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """An equal tuple that is not ``own`` (nor any prepared one)."""
    return tuple((str(name), str(value)) for name, value in list(own))


def _site(compat: bool = False, link: bool = True) -> Any:
    app = App(wordpress_compat=compat)
    return app if link else _WithoutLink(app)


class _WithoutLink:
    """A site's settings that send no discovery ``Link`` line."""

    def __init__(self, app: App) -> None:
        self.wordpress_compat = app.wordpress_compat
        self.auth_schemes = app.auth_schemes

    def rest_output_link_header(self) -> str | None:
        return None


def _ctx(status_user: User = ANONYMOUS, overridden: bool = False) -> RequestContext:
    ctx = RequestContext()
    ctx.user = status_user
    ctx.method_overridden = "PUT" if overridden else ""
    return ctx


@pytest.mark.parametrize("own", OWN_LINES)
@pytest.mark.parametrize("status", [200, 404])
@pytest.mark.parametrize("compat", [False, True])
@pytest.mark.parametrize("overridden", [False, True])
def test_prepared_lines_answer_as_the_same_lines_made_afresh(
    own: tuple[tuple[str, str], ...], status: int, compat: bool, overridden: bool
) -> None:
    site = _site(compat)
    ctx = _ctx(overridden=overridden)
    general = answer_lines(site, ctx, status, _fresh(own))
    prepared = prepared_lines(_fresh(own))
    assert answer_lines(site, ctx, status, prepared) == general
    assert answer_lines(site, ctx, status, prepared) == general  # the kept template


class _CountedValue(str):
    """A header value that counts how often it is hashed."""

    hashed = 0

    def __hash__(self) -> int:
        _CountedValue.hashed += 1
        return str.__hash__(self)


def test_a_prepared_answer_finds_its_template_without_reading_its_lines() -> None:
    """The fast path: the template memory hashes prepared lines by identity (the general
    path hashes each line)."""
    site = _site()
    ctx = _ctx()
    value = _CountedValue("yes")
    own = prepared_lines((("Allow", "GET"), ("X-Prepared", value)))
    assert isinstance(own, wire.PreparedLines)
    expected = answer_lines(site, ctx, 200, own)  # made and kept: the lines read
    _CountedValue.hashed = 0
    assert answer_lines(site, ctx, 200, own) == expected
    assert _CountedValue.hashed == 0
    assert answer_lines(site, ctx, 200, (("Allow", "GET"), ("X-Prepared", value))) == expected
    assert _CountedValue.hashed > 0


def test_one_prepared_tuple_answers_each_site_and_user_apart() -> None:
    own = prepared_lines((("Allow", "GET"), ("X-Site", "all")))
    with_link, without_link = _site(), _site(link=False)
    anonymous, logged_in = _ctx(), _ctx(User(id=1, login="a"))
    for site in (with_link, without_link, _site(compat=True)):
        for ctx in (anonymous, logged_in):
            assert answer_lines(site, ctx, 200, own) == answer_lines(site, ctx, 200, _fresh(own))
    names = [name for name, _ in answer_lines(with_link, logged_in, 200, own)[0]]
    assert "Cache-Control" in names and "Link" in names
    names = [name for name, _ in answer_lines(without_link, anonymous, 200, own)[0]]
    assert "Cache-Control" not in names and "Link" not in names


def test_prepared_lines_equal_their_plain_tuple_and_long_ones_stay_plain() -> None:
    own = (("Allow", "GET"), ("X-One", "1"))
    prepared = prepared_lines(own)
    assert type(prepared) is wire.PreparedLines
    assert prepared == own and prepared is not own
    assert hash(prepared) != hash(prepared_lines(own))  # one key per prepared tuple
    # Lines the template memory would not keep stay plain (the general path).
    long_line = (("X-Long", "v" * (wire._TEMPLATE_LINES + 1)),)
    paging = (("Link", "<http://example.com/svc-json/a?page=2>; rel=next"),)
    assert prepared_lines(long_line) is long_line
    assert prepared_lines(paging) is paging


def test_the_default_step_hands_out_one_prepared_tuple_per_route_and_origin() -> None:
    """Its lines are what the filters give (tests/rest/test_finishing_callbacks.py compares
    the answers), the same tuple each time, known to the answer step."""
    app = App()
    route = {"methods": "GET", "callback": lambda r: [1], "permission_callback": public}
    app.register_rest_route("demo/v1", "/items", route)
    server = app.rest_get_server()
    for origin in (None, "http://example.com", "http://evil.example\r\n"):
        found = []
        for _ in range(2):
            request = Request("GET", "/demo/v1/items")
            if origin is not None:
                request.headers["Origin"] = origin
            response = server.dispatch(request)
            found.append(default_own_lines(response, server, request))
        assert found[0] is found[1]
        assert type(found[0]) is wire.PreparedLines
        cors = () if origin != "http://example.com" else server.cors.lines(origin)
        assert found[0] == (("Allow", "GET"), *cors)


async def _async_yes(request: Request) -> bool:
    return True


@pytest.mark.parametrize(
    "lines",
    [
        [("ETag", '"v1"')],
        [("X-One", "1"), ("X-Two", "2")],
        [("ETag", '"v1"'), ("allow", "POST")],  # the filter replaces it: the general path
        [("Access-Control-Allow-Origin", "*")],  # likewise
    ],
)
@pytest.mark.parametrize("origin", [None, "http://example.com", "http://evil.example\r\n"])
@pytest.mark.parametrize("cors", [True, False])
@pytest.mark.parametrize("permission", [public, lambda r: True, _async_yes])
def test_a_response_with_plain_lines_of_its_own_gets_what_the_filters_give(
    lines: list[tuple[str, str]], origin: str | None, cors: bool, permission: Any
) -> None:
    """The default step's shortcut for a response whose own lines are a plain list (a
    StoreCollection item's ``ETag``) answers the lines the two filters leave, with the
    ``Allow`` value remembered or asked of a permission callback (sync or async)."""
    app = App()
    route = {"methods": "GET", "callback": lambda r: [1], "permission_callback": public}
    app.register_rest_route(
        "demo/v1",
        "/items",
        [route, {**route, "methods": "POST", "permission_callback": permission}],
    )
    server = app.rest_get_server()
    answers = []
    for general in (False, True):
        request = Request("GET", "/demo/v1/items")
        if origin is not None:
            request.headers["Origin"] = origin
        response = server.dispatch(request)
        response.add_header_lines(lines)  # a plain list, as set_header_line makes one
        if general:
            allowed = rest_send_allow_header(response, server, request)
            if not isinstance(allowed, Response):
                asyncio.run(allowed)
            if cors:
                rest_send_cors_headers(False, response, request, server)
            answers.append(response.header_tuple())
        else:
            own = default_own_lines(response, server, request, cors)
            answers.append(own if isinstance(own, tuple) else asyncio.run(own))
            names = {name.lower() for name, _ in lines}
            plain = not names & {"allow", "access-control-allow-origin"}
            assert (response._headers is None) is plain  # the shortcut makes no Headers
    assert answers[0] == answers[1]
    assert ("Allow", "GET, POST") in answers[0] or ("allow", "POST") in lines
