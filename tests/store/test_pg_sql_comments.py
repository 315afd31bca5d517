"""``sql_comments=1``: each statement a request runs on PostgreSQL begins with
``/* request_id=… */``, as the server sees it (``pg_stat_activity``); off by default."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import svcrest
from svcrest import App
from svcrest.store.base import StoreError
from svcrest.store.pg_url import split_url
from tests.conftest import SiteClient
from tests.pg import PostgresServer

OWN_QUERY = "SELECT query FROM pg_stat_activity WHERE pid = pg_backend_pid()"
OWN_QUERY_WITH_PARAMETER = "SELECT query, ? AS n FROM pg_stat_activity WHERE pid = pg_backend_pid()"


def seen_site(url: str) -> App:
    app = App("http://example.org", store=url)

    def seen() -> dict[str, Any]:
        store = app.store
        alone = store.read_one(OWN_QUERY)[0]
        with store.read() as conn:
            in_block = conn.execute(OWN_QUERY_WITH_PARAMETER, (7,)).fetchone()[0]
        return {"alone": alone, "in_block": in_block}

    app.register_rest_route(
        "t/v1", "/seen", {"methods": "GET", "callback": seen, "permission_callback": svcrest.public}
    )
    return app


def test_statements_of_a_request_name_it(
    postgres: PostgresServer, client_for: Callable[..., SiteClient]
) -> None:
    app = seen_site(postgres.new_schema() + "&sql_comments=1")
    client = client_for(app)
    answer = client.get("/svc-json/t/v1/seen", headers={"X-Request-Id": "edge-42.a:b_C"})
    assert answer.status_code == 200
    assert answer.json() == {
        "alone": f"/* request_id=edge-42.a:b_C */ {OWN_QUERY}",
        "in_block": (
            "/* request_id=edge-42.a:b_C */ "
            "SELECT query, $1 AS n FROM pg_stat_activity WHERE pid = pg_backend_pid()"
        ),
    }
    made = client.get("/svc-json/t/v1/seen")  # an id the site made
    request_id = made.headers["x-request-id"]
    assert made.json()["alone"] == f"/* request_id={request_id} */ {OWN_QUERY}"
    # Outside a request: no comment.
    assert app.store.read_one(OWN_QUERY)[0] == OWN_QUERY
    app.store.close()


def test_statements_are_left_alone_by_default(
    postgres: PostgresServer, client_for: Callable[..., SiteClient]
) -> None:
    app = seen_site(postgres.new_schema())
    answer = client_for(app).get("/svc-json/t/v1/seen", headers={"X-Request-Id": "edge-43"})
    assert answer.json()["alone"] == OWN_QUERY
    app.store.close()


def test_the_option_is_read_from_the_url() -> None:
    assert split_url("postgresql:///d?sql_comments=1")[1].sql_comments is True
    assert split_url("postgresql:///d?sql_comments=0")[1].sql_comments is False
    assert split_url("postgresql:///d")[1].sql_comments is False
    with pytest.raises(StoreError) as raised:
        split_url("postgresql:///d?sql_comments=maybe")
    assert str(raised.value) == "sql_comments must be 1 or 0"
