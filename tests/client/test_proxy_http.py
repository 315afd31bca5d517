"""RestProxy over HTTP: CRUD, batching, sync, errors, login and the one-time nonce refresh.

Every test scripts the exact requests the proxy must send (method, URL, body, headers) and the
WordPress-shaped responses the site answers, through `httpx.MockTransport`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from svcrest.client import Operation, ProxyError, RestProxy
from svcrest.client.proxy import AsyncRestProxy
from svcrest.client.results import next_link

SITE = "http://example.test"
URL = f"{SITE}/svc-json/demo/v1/notes"
CLOCK = 1700000000000
DC = f"_dc={CLOCK}"
NO_BODY: Any = object()


def reply(
    status: int = 200, data: Any = None, headers: Mapping[str, str] | None = None
) -> httpx.Response:
    """A JSON response (an empty body when ``data`` is None)."""
    content = b"" if data is None else json.dumps(data).encode()
    all_headers = {"Content-Type": "application/json; charset=UTF-8", **(headers or {})}
    return httpx.Response(status, content=content, headers=all_headers)


def rest_error(code: str, message: str, status: int) -> httpx.Response:
    """A WordPress-shaped error response."""
    return reply(status, {"code": code, "message": message, "data": {"status": status}})


INVALID_NONCE = ("rest_cookie_invalid_nonce", "Cookie check failed", 403)


@dataclass
class Step:
    """One expected request and the response to it."""

    method: str
    url: str
    response: httpx.Response
    json: Any = NO_BODY
    form: dict[str, str] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    absent: tuple[str, ...] = ()


class Script:
    """A MockTransport handler that asserts each request against the next `Step`."""

    def __init__(self, *steps: Step) -> None:
        self.steps = list(steps)
        self.sent: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert len(self.sent) < len(self.steps), (
            f"unexpected request {request.method} {request.url}"
        )
        step = self.steps[len(self.sent)]
        self.sent.append(request)
        assert (request.method, str(request.url)) == (step.method, step.url)
        if step.form is not None:
            assert request.headers["Content-Type"] == "application/x-www-form-urlencoded"
            assert httpx.QueryParams(request.content.decode()) == httpx.QueryParams(step.form)
        elif step.json is NO_BODY:
            assert request.content == b""
        else:
            assert request.headers["Content-Type"] == "application/json"
            assert json.loads(request.content) == step.json
        for name, value in step.headers.items():
            assert request.headers.get(name) == value, name
        for name in step.absent:
            assert name not in request.headers, name
        return step.response

    def finished(self) -> bool:
        return len(self.sent) == len(self.steps)


@pytest.fixture
def script() -> Iterator[Script]:
    """An empty script; tests add their steps."""
    yield Script()


def proxy_with(script: Script, url: str = URL, **options: Any) -> RestProxy:
    client = httpx.Client(transport=httpx.MockTransport(script))
    return RestProxy(url, clock=lambda: CLOCK, client=client, **options)


def run(script: Script, *steps: Step, **options: Any) -> RestProxy:
    script.steps.extend(steps)
    return proxy_with(script, **options)


# -- CRUD ---------------------------------------------------------------------------------


def test_create_posts_each_record_and_returns_the_saved_ones(script: Script) -> None:
    proxy = run(
        script,
        Step("POST", f"{URL}?{DC}", reply(201, {"id": 1, "title": "A"}), json={"title": "A"}),
        Step("POST", f"{URL}?{DC}", reply(201, {"id": 2, "title": "B"}), json={"title": "B"}),
    )
    saved = proxy.create({"title": "A"}, {"title": "B"})
    assert saved == [{"id": 1, "title": "A"}, {"id": 2, "title": "B"}]
    assert script.finished()


def test_create_with_batch_actions_sends_one_request(script: Script) -> None:
    proxy = run(
        script,
        Step(
            "POST",
            f"{URL}?{DC}",
            reply(201, [{"id": 1, "title": "A"}, {"id": 2, "title": "B"}]),
            json=[{"title": "A"}, {"title": "B"}],
        ),
        batch_actions=True,
    )
    assert proxy.create({"title": "A"}, {"title": "B"}) == [
        {"id": 1, "title": "A"},
        {"id": 2, "title": "B"},
    ]
    assert script.finished()


def test_batch_of_one_record_sends_the_record_itself(script: Script) -> None:
    proxy = run(
        script,
        Step("PUT", f"{URL}/4?{DC}", reply(200, {"id": 4, "title": "X"}), json={"id": 4}),
        batch_actions=True,
    )
    assert proxy.update({"id": 4}) == [{"id": 4, "title": "X"}]


def test_create_of_nothing_sends_nothing(script: Script) -> None:
    proxy = run(script)
    assert proxy.create() == []
    assert proxy.update() == []
    proxy.destroy()
    assert script.sent == []


def test_read_the_collection_with_params(script: Script) -> None:
    notes = [{"id": 1}, {"id": 2}]
    proxy = run(
        script,
        Step("GET", f"{URL}?{DC}&per_page=2&search=tea", reply(200, notes, {"X-SVC-Total": "7"})),
    )
    assert proxy.read(per_page=2, search="tea") == notes


def test_read_one_record(script: Script) -> None:
    proxy = run(script, Step("GET", f"{URL}/5?{DC}", reply(200, {"id": 5, "title": "T"})))
    assert proxy.read(5) == {"id": 5, "title": "T"}


def test_read_with_append_id_off_sends_the_id_parameter(script: Script) -> None:
    proxy = run(script, Step("GET", f"{URL}?{DC}&id=5", reply(200, {"id": 5})), append_id=False)
    assert proxy.read(5) == {"id": 5}


def test_update_puts_each_record_to_its_url(script: Script) -> None:
    proxy = run(
        script,
        Step("PUT", f"{URL}/3?{DC}", reply(200, {"id": 3, "title": "C"}), json={"id": 3}),
        Step("PUT", f"{URL}/0?{DC}", reply(200, {"id": 0, "title": "Z"}), json={"id": 0}),
    )
    assert proxy.update({"id": 3}, {"id": 0}) == [{"id": 3, "title": "C"}, {"id": 0, "title": "Z"}]


def test_update_with_custom_action_methods(script: Script) -> None:
    proxy = run(
        script,
        Step("PATCH", f"{URL}/3?{DC}", reply(200, {"id": 3}), json={"id": 3, "title": "C"}),
        action_methods={"update": "PATCH"},
    )
    assert proxy.update({"id": 3, "title": "C"}) == [{"id": 3}]


def test_destroy_deletes_each_record_without_body(script: Script) -> None:
    proxy = run(
        script,
        Step("DELETE", f"{URL}/3?{DC}", reply(200, {"deleted": True})),
        Step("DELETE", f"{URL}/4?{DC}", reply(204)),
    )
    proxy.destroy({"id": 3}, {"id": 4})
    assert script.finished()


def test_destroy_with_batch_actions_sends_the_records_once(script: Script) -> None:
    proxy = run(
        script,
        Step("DELETE", f"{URL}/3?{DC}", reply(200), json=[{"id": 3}, {"id": 4}]),
        batch_actions=True,
    )
    proxy.destroy({"id": 3}, {"id": 4})
    assert script.finished()


def test_sync_creates_then_updates_then_destroys(script: Script) -> None:
    proxy = run(
        script,
        Step("POST", f"{URL}?{DC}", reply(201, {"id": 9, "title": "new"}), json={"title": "new"}),
        Step("PUT", f"{URL}/1?{DC}", reply(200, {"id": 1, "title": "u"}), json={"id": 1}),
        Step("PUT", f"{URL}/2?{DC}", reply(200, {"id": 2, "title": "v"}), json={"id": 2}),
        Step("DELETE", f"{URL}/3?{DC}", reply(200, {"deleted": True})),
    )
    result = proxy.sync(
        create=[{"title": "new"}], update=[{"id": 1}, {"id": 2}], destroy=[{"id": 3}]
    )
    assert result == {
        "create": [{"id": 9, "title": "new"}],
        "update": [{"id": 1, "title": "u"}, {"id": 2, "title": "v"}],
    }
    assert script.finished()


def test_sync_with_batch_actions_sends_one_request_per_action(script: Script) -> None:
    proxy = run(
        script,
        Step(
            "PUT", f"{URL}/1?{DC}", reply(200, [{"id": 1}, {"id": 2}]), json=[{"id": 1}, {"id": 2}]
        ),
        Step("DELETE", f"{URL}/3?{DC}", reply(200), json=[{"id": 3}, {"id": 4}]),
        batch_actions=True,
    )
    result = proxy.sync(update=[{"id": 1}, {"id": 2}], destroy=[{"id": 3}, {"id": 4}])
    assert result == {"create": [], "update": [{"id": 1}, {"id": 2}]}
    assert script.finished()


def test_sync_stops_at_the_first_error(script: Script) -> None:
    proxy = run(
        script,
        Step("POST", f"{URL}?{DC}", rest_error("rest_forbidden", "Sorry.", 401), json={"t": 1}),
    )
    with pytest.raises(ProxyError) as caught:
        proxy.sync(create=[{"t": 1}], destroy=[{"id": 3}])
    assert caught.value.code == "rest_forbidden"
    assert script.finished()


def test_send_runs_any_operation(script: Script) -> None:
    proxy = run(script, Step("GET", f"{URL}?{DC}&page=2&sort=title&dir=ASC", reply(200, [])))
    proxy.simple_sort_mode = True
    assert proxy.send(Operation("read", page=2, sorters=["title"])) == []


def test_relative_url_with_a_client_base_url(script: Script) -> None:
    script.steps.append(Step("GET", f"{URL}/5?{DC}", reply(200, {"id": 5})))
    client = httpx.Client(transport=httpx.MockTransport(script), base_url=f"{SITE}/svc-json/")
    proxy = RestProxy("demo/v1/notes", clock=lambda: CLOCK, client=client)
    assert proxy.read(5) == {"id": 5}


# -- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "code", "message", "status", "data"),
    [
        (
            rest_error("rest_no_route", "No route was found.", 404),
            "rest_no_route",
            "No route was found.",
            404,
            {"status": 404},
        ),
        (
            httpx.Response(502, content=b"<html>Bad gateway</html>"),
            "http_error",
            "Bad Gateway",
            502,
            None,
        ),
        (httpx.Response(500), "http_error", "Internal Server Error", 500, None),
        (reply(400, {"message": "no code"}), "http_error", "Bad Request", 400, None),
        (reply(409, {"code": "x", "message": 5}), "x", "Conflict", 409, None),
        (reply(400, ["a list"]), "http_error", "Bad Request", 400, None),
    ],
    ids=["wordpress-shaped", "not-json", "empty", "json-without-code", "message-not-str", "list"],
)
def test_error_responses_raise_proxy_error(
    script: Script, response: httpx.Response, code: str, message: str, status: int, data: Any
) -> None:
    proxy = run(script, Step("GET", f"{URL}/5?{DC}", response))
    with pytest.raises(ProxyError) as caught:
        proxy.read(5)
    error = caught.value
    assert (error.code, error.message, error.status, error.data) == (code, message, status, data)


def test_a_success_body_that_is_not_json_raises(script: Script) -> None:
    proxy = run(script, Step("GET", f"{URL}?{DC}", httpx.Response(200, content=b"<html>")))
    with pytest.raises(ProxyError) as caught:
        proxy.read()
    assert (caught.value.code, caught.value.status) == ("invalid_json", 200)


def test_an_empty_success_body_reads_as_none(script: Script) -> None:
    proxy = run(script, Step("GET", f"{URL}?{DC}", httpx.Response(204)))
    assert proxy.read() is None


# -- login and nonces ---------------------------------------------------------------------


LOGGED_IN = {"Set-Cookie": "svc_logged_in=admin%7C1%7Ctok%7Chmac; Path=/; HttpOnly"}


def login_steps(nonce: str = "n1", home: str = SITE) -> list[Step]:
    return [
        Step(
            "POST",
            f"{home}/login",
            reply(200, {"user": {"id": 1, "login": "admin"}}, LOGGED_IN),
            json={"log": "admin", "pwd": "s3cret&é"},
            absent=("X-SVC-Nonce",),
        ),
        Step(
            "GET",
            f"{home}/auth/nonce",
            reply(200, {"nonce": nonce}),
            headers={"Cookie": "svc_logged_in=admin%7C1%7Ctok%7Chmac"},
        ),
    ]


def test_login_keeps_the_cookie_and_sends_the_nonce(script: Script) -> None:
    proxy = run(
        script,
        *login_steps(),
        Step(
            "POST",
            f"{URL}?{DC}",
            reply(201, {"id": 1}),
            json={"title": "A"},
            headers={"X-SVC-Nonce": "n1", "Cookie": "svc_logged_in=admin%7C1%7Ctok%7Chmac"},
        ),
    )
    assert proxy.nonce is None
    assert proxy.login("admin", "s3cret&é") == "n1"
    assert proxy.nonce == "n1"
    assert proxy.create({"title": "A"}) == [{"id": 1}]
    assert script.finished()


def test_login_with_home_uses_that_site(script: Script) -> None:
    home = "http://example.test/blog"
    proxy = run(script, *login_steps(home=home))
    assert proxy.login("admin", "s3cret&é", home=home + "/") == "n1"
    assert proxy.home == home


def test_login_site_from_a_relative_url_and_the_client_base_url(script: Script) -> None:
    script.steps.extend(login_steps())
    client = httpx.Client(transport=httpx.MockTransport(script), base_url=f"{SITE}/svc-json/")
    proxy = RestProxy("demo/v1/notes", client=client)
    assert proxy.login("admin", "s3cret&é") == "n1"


def test_login_refused_raises(script: Script) -> None:
    proxy = run(
        script,
        Step(
            "POST",
            f"{SITE}/login",
            rest_error("login_refused", "Cross-origin login.", 403),
            json={"log": "admin", "pwd": "x"},
        ),
    )
    with pytest.raises(ProxyError) as caught:
        proxy.login("admin", "x")
    assert (caught.value.code, caught.value.status) == ("login_refused", 403)
    assert proxy.nonce is None
    assert script.finished()


def test_login_without_a_nonce_in_the_answer_raises(script: Script) -> None:
    proxy = run(
        script,
        Step("POST", f"{SITE}/login", reply(200, {"user": {}}), json={"log": "a", "pwd": "b"}),
        Step("GET", f"{SITE}/auth/nonce", reply(200, {"nonce": ""})),
    )
    with pytest.raises(ProxyError) as caught:
        proxy.login("a", "b")
    assert caught.value.code == "invalid_nonce_response"


def test_a_nonce_in_a_response_header_replaces_the_held_one(script: Script) -> None:
    proxy = run(
        script,
        Step(
            "GET",
            f"{URL}?{DC}",
            reply(200, [], {"X-SVC-Nonce": "n2"}),
            headers={"X-SVC-Nonce": "n1"},
        ),
        Step("GET", f"{URL}?{DC}", reply(200, []), headers={"X-SVC-Nonce": "n2"}),
    )
    proxy.nonce = "n1"
    proxy.read()
    assert proxy.nonce == "n2"
    proxy.read()
    assert script.finished()


def test_a_forged_nonce_is_refreshed_once_and_the_request_retried(script: Script) -> None:
    proxy = run(
        script,
        *login_steps(),
        Step(
            "PUT",
            f"{URL}/3?{DC}",
            rest_error(*INVALID_NONCE),
            json={"id": 3},
            headers={"X-SVC-Nonce": "forged"},
        ),
        Step("GET", f"{SITE}/auth/nonce", reply(200, {"nonce": "fresh"})),
        Step(
            "PUT",
            f"{URL}/3?{DC}",
            reply(200, {"id": 3, "title": "ok"}),
            json={"id": 3},
            headers={"X-SVC-Nonce": "fresh"},
        ),
    )
    proxy.login("admin", "s3cret&é")
    proxy.nonce = "forged"
    assert proxy.update({"id": 3}) == [{"id": 3, "title": "ok"}]
    assert proxy.nonce == "fresh"
    assert script.finished()


def test_a_second_invalid_nonce_raises_without_a_loop(script: Script) -> None:
    proxy = run(
        script,
        Step("DELETE", f"{URL}/3?{DC}", rest_error(*INVALID_NONCE), headers={"X-SVC-Nonce": "bad"}),
        Step("GET", f"{SITE}/auth/nonce", reply(200, {"nonce": "still-bad"})),
        Step(
            "DELETE",
            f"{URL}/3?{DC}",
            rest_error(*INVALID_NONCE),
            headers={"X-SVC-Nonce": "still-bad"},
        ),
    )
    proxy.nonce = "bad"
    with pytest.raises(ProxyError) as caught:
        proxy.destroy({"id": 3})
    assert (caught.value.code, caught.value.status) == ("rest_cookie_invalid_nonce", 403)
    assert len(script.sent) == 3
    assert script.finished()


def test_each_request_gets_its_own_single_retry(script: Script) -> None:
    proxy = run(
        script,
        Step("DELETE", f"{URL}/3?{DC}", rest_error(*INVALID_NONCE)),
        Step("GET", f"{SITE}/auth/nonce", reply(200, {"nonce": "n2"})),
        Step("DELETE", f"{URL}/3?{DC}", reply(200), headers={"X-SVC-Nonce": "n2"}),
        Step("DELETE", f"{URL}/4?{DC}", rest_error(*INVALID_NONCE)),
        Step("GET", f"{SITE}/auth/nonce", reply(200, {"nonce": "n3"})),
        Step("DELETE", f"{URL}/4?{DC}", reply(200), headers={"X-SVC-Nonce": "n3"}),
    )
    proxy.nonce = "n1"
    proxy.destroy({"id": 3}, {"id": 4})
    assert script.finished()


def test_a_failed_nonce_refresh_raises_the_original_error(script: Script) -> None:
    proxy = run(
        script,
        Step("GET", f"{URL}?{DC}", rest_error(*INVALID_NONCE)),
        Step("GET", f"{SITE}/auth/nonce", httpx.Response(403, content=b"Forbidden")),
    )
    proxy.nonce = "bad"
    with pytest.raises(ProxyError) as caught:
        proxy.read()
    assert caught.value.code == "rest_cookie_invalid_nonce"
    assert isinstance(caught.value.__cause__, ProxyError)
    assert caught.value.__cause__.code == "http_error"
    assert script.finished()


def test_other_errors_are_not_retried(script: Script) -> None:
    proxy = run(script, Step("GET", f"{URL}?{DC}", rest_error("rest_forbidden", "No.", 403)))
    proxy.nonce = "n1"
    with pytest.raises(ProxyError):
        proxy.read()
    assert script.finished()


# -- the proxy's own client -----------------------------------------------------------------


def test_the_proxy_creates_and_closes_its_own_client() -> None:
    with RestProxy(URL) as proxy:
        client = proxy.client
        assert isinstance(client, httpx.Client)
        assert proxy.client is client
    assert client.is_closed


def test_a_given_client_is_not_closed(script: Script) -> None:
    proxy = proxy_with(script)
    proxy.close()
    assert not proxy.client.is_closed
    proxy.client.close()


# -- the async variant ----------------------------------------------------------------------


def async_proxy_with(script: Script, **options: Any) -> AsyncRestProxy:
    client = httpx.AsyncClient(transport=httpx.MockTransport(script))
    return AsyncRestProxy(URL, clock=lambda: CLOCK, client=client, **options)


def test_async_crud_and_nonce_refresh(script: Script) -> None:
    script.steps.extend(
        [
            *login_steps(),
            Step("POST", f"{URL}?{DC}", reply(201, {"id": 1}), json={"t": 1}),
            Step("GET", f"{URL}/1?{DC}", rest_error(*INVALID_NONCE), headers={"X-SVC-Nonce": "n1"}),
            Step("GET", f"{SITE}/auth/nonce", reply(200, {"nonce": "n2"})),
            Step("GET", f"{URL}/1?{DC}", reply(200, {"id": 1}), headers={"X-SVC-Nonce": "n2"}),
            Step("PUT", f"{URL}/1?{DC}", reply(200, {"id": 1, "t": 2}), json={"id": 1, "t": 2}),
            Step("DELETE", f"{URL}/1?{DC}", reply(200)),
            Step("GET", f"{URL}/1?{DC}", rest_error("rest_not_found", "Gone.", 404)),
        ]
    )

    async def scenario() -> None:
        async with async_proxy_with(script) as proxy:
            assert await proxy.login("admin", "s3cret&é") == "n1"
            assert await proxy.create({"t": 1}) == [{"id": 1}]
            assert await proxy.read(1) == {"id": 1}
            assert await proxy.sync(update=[{"id": 1, "t": 2}], destroy=[{"id": 1}]) == {
                "create": [],
                "update": [{"id": 1, "t": 2}],
            }
            with pytest.raises(ProxyError) as caught:
                await proxy.read(1)
            assert caught.value.status == 404
            await proxy.client.aclose()

    asyncio.run(scenario())
    assert script.finished()


def test_async_proxy_closes_its_own_client() -> None:
    async def scenario() -> httpx.AsyncClient:
        async with AsyncRestProxy(URL) as proxy:
            return proxy.client

    assert asyncio.run(scenario()).is_closed


# -- paging ---------------------------------------------------------------------------------


def next_page(url: str) -> dict[str, str]:
    return {"Link": f'<{url}>; rel="next"'}


def paging_loop_steps() -> list[Step]:
    """Page 1 links to page 2, whose next link leads back to page 1's URL."""
    first = f"{URL}?per_page=1&page=1"
    second = f"{URL}?per_page=1&page=2"
    return [
        Step("GET", f"{URL}?{DC}&per_page=1", reply(200, [{"id": 2}], next_page(first))),
        Step("GET", first, reply(200, [{"id": 2}], next_page(second))),
        Step("GET", second, reply(200, [{"id": 1}], next_page(first))),
    ]


LOOP = "The next page link leads back to a page already read: " + f"{URL}?per_page=1&page=1"


def test_iter_pages_stops_at_a_next_link_back_to_a_page_read(script: Script) -> None:
    proxy = run(script, *paging_loop_steps())
    read: list[Any] = []
    with pytest.raises(ProxyError) as caught:
        for page in proxy.iter_pages(per_page=1):
            read.append(page.records)
    assert read == [[{"id": 2}], [{"id": 2}], [{"id": 1}]]
    assert (caught.value.code, caught.value.message, caught.value.status) == (
        "paging_loop",
        LOOP,
        200,
    )
    assert script.finished()


def test_async_iter_pages_stops_at_a_loop_too(script: Script) -> None:
    script.steps.extend(paging_loop_steps())

    async def scenario() -> list[Any]:
        read: list[Any] = []
        async with async_proxy_with(script) as proxy:
            with pytest.raises(ProxyError, match="paging_loop"):
                async for page in proxy.iter_pages(per_page=1):
                    read.append(page.records)
            await proxy.client.aclose()
        return read

    assert asyncio.run(scenario()) == [[{"id": 2}], [{"id": 2}], [{"id": 1}]]
    assert script.finished()


def test_a_paging_loop_is_told_to_on_exception(script: Script) -> None:
    told: list[tuple[str, str | None]] = []

    def on_exception(error: ProxyError, operation: Operation | None) -> None:
        told.append((error.code, None if operation is None else operation.action))

    proxy = run(script, *paging_loop_steps(), on_exception=on_exception)
    with pytest.raises(ProxyError):
        list(proxy.iter_pages(per_page=1))
    assert told == [("paging_loop", "read")]


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (
            f'<{SITE}/svc-json/>; rel="https://api.w.org/", <{URL}?page=1>; rel="prev",'
            " </svc-json/demo/v1/notes?page=3>; rel=next",
            f"{URL}?page=3",
        ),
        ('<a?page=2>; rel="prev next"', f"{SITE}/svc-json/demo/v1/a?page=2"),
        ('<a?page=2>; rel="NEXT"', f"{SITE}/svc-json/demo/v1/a?page=2"),
        ('<a?page=2>; rel="next", <b?page=3>; rel="next"', f"{SITE}/svc-json/demo/v1/a?page=2"),
        (f'<{SITE}/svc-json/>; rel="https://api.w.org/"', None),
    ],
    ids=["among-several", "one-of-two-rels", "upper-case", "first-of-two", "none"],
)
def test_next_link_reads_the_header_as_the_browser_module_does(
    header: str, expected: str | None
) -> None:
    # The same rules as svc-rest.mjs's nextLink (tests/js/proxy.test.mjs).
    response = httpx.Response(200, headers={"Link": header}, request=httpx.Request("GET", URL))
    assert next_link(response) == expected
