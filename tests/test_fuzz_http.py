"""Hostile input over HTTP never gives a 5xx (hypothesis drives both adapters' shared core)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import svcrest.demo
from svcrest import App

PIECES = [
    "page",
    "per_page",
    "start",
    "limit",
    "sort",
    "filter",
    "search",
    "_fields",
    "_envelope",
    "_method",
    "rest_route",
    "dir",
    "id",
    "title",
    "content",
    "date",
    "author",
    "_wpnonce",
    "[]",
    "[a]",
    "=",
    "&",
    "%",
    "%ff",
    "%00",
    "1",
    "-1",
    "0",
    "1e400",
    "abc",
    "[",
    "{",
    '"',
    "null",
    "true",
    "99999999999999999999",
    "/",
    "..",
    "%2F",
]
WORDS = st.lists(st.sampled_from(PIECES), min_size=0, max_size=8).map("".join)
PATHS = st.one_of(
    st.sampled_from(["/svc-json/demo/v1/notes", "/svc-json/demo/v1/notes/1", "/svc-json/"]),
    WORDS.map(lambda w: "/svc-json/demo/v1/notes/" + w),
    WORDS.map(lambda w: "/svc-json/" + w),
    WORDS.map(lambda w: "/?rest_route=" + w),
)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | WORDS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(WORDS, children, max_size=3),
    max_leaves=8,
)
BODIES = st.one_of(
    st.just((b"", "")),
    JSON_VALUES.map(lambda v: (orjson.dumps(v), "application/json")),
    WORDS.map(lambda w: (w.encode(), "application/x-www-form-urlencoded")),
    st.binary(max_size=64).map(lambda b: (b, "application/json")),
)


@pytest.fixture(scope="module")
def editor_client() -> Iterator[httpx.Client]:
    app = App()
    svcrest.demo.register(app)
    app.users.create("ed", "pw", roles=("editor",))
    with httpx.Client(transport=httpx.WSGITransport(app=app.wsgi), base_url=app.home) as client:
        client.post("/login", data={"log": "ed", "pwd": "pw"})
        client.headers["X-SVC-Nonce"] = client.get("/auth/nonce").json()["nonce"]
        for title in ("one", "two"):
            client.post("/svc-json/demo/v1/notes", json={"title": title})
        yield client


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"]),
    path=PATHS,
    query=WORDS,
    body=BODIES,
)
def test_no_server_errors(
    editor_client: httpx.Client, method: str, path: str, query: str, body: tuple[bytes, str]
) -> None:
    content, content_type = body
    headers = {"Content-Type": content_type} if content_type else {}
    separator = "&" if "?" in path else "?"
    response = editor_client.request(
        method, path + separator + query, content=content, headers=headers
    )
    assert response.status_code < 500, response.text
    if (
        method != "HEAD"
        and response.headers.get("content-type", "").startswith("application/json")
        and response.status_code >= 400
    ):
        error = response.json()
        assert set(error) == {"code", "message", "data"}
        assert error["data"]["status"] == response.status_code
