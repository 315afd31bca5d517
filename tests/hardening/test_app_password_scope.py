"""Hostile requests with a scoped or read-only application password, both adapters: paths
that climb out of the namespace (``..``, escaped slashes, double slashes, case), a
``rest_route`` in the query, method overrides, batch requests naming other namespaces, and
hostile ``scope`` / ``read_only`` values when a password is created over REST. (The scope's
ordinary rules are in tests/auth/test_app_password_scope.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.auth.test_app_password_scope import REST, SCOPE_ERROR, ClientFor, Site

NO_ROUTE = {
    "code": "rest_no_route",
    "message": "No route was found matching the URL and request method.",
    "data": {"status": 404},
}
NO_METHOD = {**NO_ROUTE, "data": {"status": 405}}
PASSWORDS = f"{REST}/svc/v2/users/me/application-passwords"


@pytest.fixture
def site() -> Iterator[Site]:
    made = Site(None)
    yield made
    made.app.store.close()


@pytest.mark.parametrize(
    ("path", "status", "body"),
    [
        (f"{REST}/demo/v1/../other/v1/thing", 404, NO_ROUTE),
        (f"{REST}/demo/v1/%2E%2E/other/v1/thing", 404, NO_ROUTE),
        (f"{REST}/demo/v1%2F..%2Fother/v1/thing", 404, NO_ROUTE),
        (f"{REST}//other/v1/thing", 404, NO_ROUTE),
        (f"{REST}/other/v1/thing/", 403, SCOPE_ERROR),
        (f"{REST}/OTHER/v1/thing", 403, SCOPE_ERROR),
        ("/?rest_route=/other/v1/thing", 403, SCOPE_ERROR),
        ("/?rest_route=/demo/v1/../other/v1/thing", 404, NO_ROUTE),
        ("/?rest_route=/other/v1/thing&_method=GET", 403, SCOPE_ERROR),
    ],
    ids=[
        "dot-dot",
        "escaped-dots",
        "escaped-slashes",
        "double-slash",
        "trailing-slash",
        "upper-case",
        "rest-route",
        "rest-route-dot-dot",
        "rest-route-override",
    ],
)
def test_a_path_out_of_the_scope_never_reaches_another_namespace(
    site: Site, client_for: ClientFor, path: str, status: int, body: dict[str, Any]
) -> None:
    headers = site.password(scope=["demo/v1"])
    response = client_for(site.app).get(path, headers=headers)
    assert (response.status_code, response.json()) == (status, body)


def test_a_rest_route_in_the_query_of_a_pretty_url_is_only_a_parameter(
    site: Site, client_for: ClientFor
) -> None:
    headers = site.password(scope=["demo/v1"])
    response = client_for(site.app).get(
        f"{REST}/demo/v1/me?rest_route=/other/v1/thing", headers=headers
    )
    assert (response.status_code, response.json()) == (200, {"id": site.alice.id})


@pytest.mark.parametrize(
    ("method", "path", "headers", "status"),
    [
        # Only a POST may name another method (a GET stays a read): no route reads /write.
        ("GET", "/demo/v1/write?_method=POST", {}, 405),
        ("POST", "/demo/v1/me?_method=GET", {}, 200),
        ("POST", "/demo/v1/me", {"X-HTTP-Method-Override": "GET"}, 200),
        ("GET", "/demo/v1/me", {"X-HTTP-Method-Override": "POST"}, 200),
        ("POST", "/demo/v1/me?_method=HEAD", {}, 200),
        ("POST", "/demo/v1/me?_method=OPTIONS", {}, 200),
        ("POST", "/demo/v1/me?_method=get", {}, 200),
        ("POST", "/demo/v1/me?_method[]=GET", {}, 403),
    ],
    ids=[
        "get-as-post",
        "post-as-get",
        "header-post-as-get",
        "header-get-as-post",
        "post-as-head",
        "post-as-options",
        "lower-case-get",
        "override-array",
    ],
)
def test_a_read_only_password_writes_through_no_method_override(
    site: Site,
    client_for: ClientFor,
    method: str,
    path: str,
    headers: dict[str, str],
    status: int,
) -> None:
    sent = {**site.password(read_only=True), **headers}
    response = client_for(site.app).request(method, REST + path, headers=sent)
    assert response.status_code == status
    if status == 403:
        assert response.json() == SCOPE_ERROR
    if status == 405:
        assert response.json() == NO_METHOD


@pytest.mark.parametrize(
    ("path", "answer"),
    [
        ("/other/v1/thing", SCOPE_ERROR),
        ("/demo/v1/../other/v1/thing", NO_ROUTE),
        ("/demo/v1/me?rest_route=/other/v1/thing", {"id": 1}),
        ("/?rest_route=/other/v1/thing", NO_METHOD),
    ],
    ids=["other", "dot-dot", "rest-route-param", "rest-route-root"],
)
def test_each_batch_request_stays_in_the_scope(
    site: Site, client_for: ClientFor, path: str, answer: dict[str, Any]
) -> None:
    headers = site.password(scope=["demo/v1"])
    response = client_for(site.app).post(
        f"{REST}/batch/v1",
        json={"requests": [{"method": "POST", "path": path}]},
        headers=headers,
    )
    assert response.status_code == 207
    [one] = response.json()["responses"]
    assert one["body"] == answer
    assert one["status"] == (answer.get("data") or {}).get("status", 200)


@pytest.mark.parametrize(
    ("given", "name", "reason"),
    [
        (
            {"scope": [f"n{i}/v1" for i in range(21)]},
            "scope",
            "scope must contain at most 20 items.",
        ),
        ({"scope": []}, "scope", "scope must contain at least 1 item."),
        ({"scope": [""]}, "scope", "scope[0] must be at least 1 character long."),
        ({"scope": [["a"]]}, "scope", "scope[0] is not of type string."),
        ({"scope": {"a": "b"}}, "scope", "scope is not of type array."),
        ({"scope": ["a" * 10_000]}, "scope", "scope[0] must be at most 100 characters long."),
        ({"read_only": "maybe"}, "read_only", "read_only is not of type boolean."),
        ({"read_only": [True]}, "read_only", "read_only is not of type boolean."),
    ],
    ids=["21", "empty", "empty-name", "nested", "object", "long", "maybe", "list"],
)
def test_a_hostile_scope_or_read_only_is_400_and_makes_no_password(
    site: Site, client_for: ClientFor, given: dict[str, Any], name: str, reason: str
) -> None:
    headers = site.password()
    response = client_for(site.app).post(PASSWORDS, json={"name": "x", **given}, headers=headers)
    assert response.status_code == 400
    body = response.json()
    assert (body["code"], body["message"]) == (
        "rest_invalid_param",
        f"Invalid parameter(s): {name}",
    )
    assert body["data"]["params"] == {name: reason}
    assert len(site.app.users.list_application_passwords(site.alice.id)) == 1
