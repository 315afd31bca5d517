"""Both proxies' ``conditional`` option against the live demo notes: the ETag of each record
read is sent as ``If-Match`` on update and destroy, and a 412 raises ``ProxyError``
``rest_precondition_failed`` (docs/guides/http-semantics.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from svcrest.client import ProxyError
from tests.client.test_proxy_live import BATCH, NOTES, app, drivers, editor, titles

__all__ = ["app", "drivers"]  # the fixtures this module uses


def test_a_conditional_update_sends_the_etag_it_read(drivers: Any) -> None:
    driver = editor(drivers, seed=1, conditional=True)
    assert driver("read", 1)["title"] == "Banana bread"
    assert driver.proxy.etags == {"1": '"1-1"'}
    [saved] = driver("update", {"id": 1, "title": "Changed"})
    assert saved["title"] == "Changed"
    sent = driver.sent[-1]
    assert (sent.method, str(sent.url).split("?")[0]) == ("PUT", f"{NOTES}/1")
    assert sent.headers["If-Match"] == '"1-1"'
    assert driver.proxy.etags == {"1": '"1-2"'}  # the version the update made
    driver("update", {"id": 1, "title": "Again"})
    assert driver.sent[-1].headers["If-Match"] == '"1-2"'


def test_a_record_changed_meanwhile_raises_412(drivers: Any) -> None:
    mine = editor(drivers, seed=1, conditional=True)
    theirs = editor(drivers)
    mine("read", 1)
    theirs("update", {"id": 1, "title": "Theirs"})
    with pytest.raises(ProxyError) as caught:
        mine("update", {"id": 1, "title": "Mine"})
    error = caught.value
    assert (error.code, error.status) == ("rest_precondition_failed", 412)
    assert error.data == {"status": 412}
    with pytest.raises(ProxyError) as destroyed:
        mine("destroy", {"id": 1})
    assert destroyed.value.code == "rest_precondition_failed"
    assert titles(theirs) == ["Theirs"]
    mine("read", 1)  # read again: the fresh ETag lets the destroy through
    mine("destroy", {"id": 1})
    assert mine.sent[-1].headers["If-Match"] == '"1-2"'
    assert mine.proxy.etags == {}
    assert titles(theirs) == []


def test_without_conditional_no_if_match_is_sent(drivers: Any) -> None:
    driver = editor(drivers, seed=1)
    driver("read", 1)
    driver("update", {"id": 1, "title": "Changed"})
    assert "If-Match" not in driver.sent[-1].headers
    assert driver.proxy.conditional is False


def test_a_server_batch_sends_each_records_if_match(drivers: Any) -> None:
    mine = editor(drivers, seed=2, conditional=True)
    theirs = editor(drivers)
    mine("read", 1)
    mine("read", 2)
    theirs("update", {"id": 2, "title": "Theirs"})
    mine.sent.clear()
    with pytest.raises(ProxyError) as caught:
        mine(
            "sync",
            update=[{"id": 1, "title": "A2"}],
            destroy=[{"id": 2}],
            batch="server",
            atomic=True,
        )
    assert (caught.value.code, caught.value.status) == ("rest_precondition_failed", 412)
    assert [f"{r.method} {r.url}" for r in mine.sent] == [f"POST {BATCH}"]
    assert json.loads(mine.sent[0].content)["requests"] == [
        {
            "method": "PUT",
            "path": "/demo/v1/notes/1",
            "body": {"id": 1, "title": "A2"},
            "headers": {"If-Match": '"1-1"'},
        },
        {"method": "DELETE", "path": "/demo/v1/notes/2", "headers": {"If-Match": '"2-1"'}},
    ]
    assert titles(theirs) == ["Banana bread", "Theirs"]  # the atomic batch rolled back
    result = mine("sync", update=[{"id": 1, "title": "A2"}], batch="server")
    assert [note["title"] for note in result["update"]] == ["A2"]
    assert mine.proxy.etags["1"] == '"1-2"'
