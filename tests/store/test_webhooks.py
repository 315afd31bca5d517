"""Webhook subscriptions and the outbox on every engine: validation, a delivery queued in the
writing transaction (none for a rolled-back write or atomic batch), claims."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from svcrest import App, Request, public
from svcrest.store import Store, open_store
from svcrest.store.collection_table import CollectionTable
from svcrest.store.webhooks import (
    Webhooks,
    check_event,
    check_url,
    claim_deliveries,
    finish_delivery,
    generate_secret,
    next_due,
    queue_deliveries,
    secret_key,
)
from tests.conftest import SiteClient

NOW = 1_700_000_000.0
SCHEMA: dict[str, Any] = {
    "title": "note",
    "type": "object",
    "properties": {"title": {"type": "string", "default": ""}},
}
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


@pytest.fixture
def store(store_location: str | None) -> Iterator[Store]:
    opened = open_store(store_location)
    yield opened
    opened.close()


@pytest.fixture
def hooks(store: Store) -> Webhooks:
    return Webhooks(store, clock=lambda: NOW)


@pytest.fixture
def table(store: Store) -> CollectionTable:
    made = CollectionTable(store, SCHEMA, clock=lambda: NOW)
    made.migrate()
    return made


def outbox(store: Store) -> list[tuple[Any, ...]]:
    """(message id, subscription, event, payload, status, attempts, next attempt) of each row."""
    with store.read() as conn:
        rows = conn.execute(
            "SELECT message_id, webhook_id, event, payload, status, attempts, next_attempt"
            " FROM svc_webhook_deliveries ORDER BY id"
        ).fetchall()
    return [tuple(row) for row in rows]


# -- subscriptions -------------------------------------------------------------------------------


def test_subscribe_list_get_and_delete(hooks: Webhooks) -> None:
    first = hooks.subscribe("https://example.com/hook", events=("note.created", "note.deleted"))
    second = hooks.subscribe("http://10.0.0.5:8080/in", ["task.updated"], secret=SECRET)
    assert (first.id, first.url, first.events, first.created) == (
        1,
        "https://example.com/hook",
        ("note.created", "note.deleted"),
        NOW,
    )
    assert first.secret.startswith("whsec_")
    assert len(base64.b64decode(first.secret[6:])) == 24
    assert "secret" not in repr(first) and first.secret not in repr(first)
    assert second.secret == SECRET
    assert hooks.list() == [first, second]
    assert hooks.get(2) == second
    assert hooks.get(3) is None
    assert hooks.delete(1) is True
    assert hooks.delete(1) is False
    assert hooks.list() == [second]


def test_generated_secrets_differ_and_decode() -> None:
    one, two = generate_secret(), generate_secret()
    assert one != two
    assert len(secret_key(one)) == 24
    assert secret_key(SECRET) == base64.b64decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/x", "a webhook URL is http or https, not 'ftp'"),
        ("file:///etc/passwd", "a webhook URL is http or https, not 'file'"),
        ("/relative", "a webhook URL is http or https, not 'relative'"),
        ("https:///nohost", "a webhook URL names a host"),
        ("https://example.com/a b", "a webhook URL has no whitespace or control characters"),
        ("https://example.com:99999/", "not a valid webhook URL: Port out of range 0-65535"),
        ("", "a webhook URL is a non-empty string of at most 2048 characters"),
    ],
    ids=["ftp", "file", "relative", "no-host", "space", "port", "empty"],
)
def test_a_url_that_is_not_http_is_refused(url: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        check_url(url)
    assert str(raised.value) == message


@pytest.mark.parametrize("event", ["note", "note.saved", ".created", "a b.created", 5])
def test_an_event_name_must_be_type_dot_event(event: object) -> None:
    with pytest.raises(ValueError, match="a webhook event is"):
        check_event(event)


@pytest.mark.parametrize(
    ("secret", "message"),
    [
        ("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "a webhook secret is 'whsec_' followed by base64"),
        ("whsec_not base64!", "the webhook secret after 'whsec_' is not valid base64"),
        ("whsec_" + base64.b64encode(b"short").decode(), "key is 24 to 64 bytes, not 5"),
    ],
    ids=["no-prefix", "not-base64", "short"],
)
def test_a_bad_secret_is_refused(hooks: Webhooks, secret: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        hooks.subscribe("https://example.com/", ["note.created"], secret=secret)
    assert hooks.list() == []


def test_subscribe_needs_events(hooks: Webhooks) -> None:
    with pytest.raises(ValueError, match="1 to 100 events"):
        hooks.subscribe("https://example.com/", [])
    with pytest.raises(ValueError, match="not one string"):
        hooks.subscribe("https://example.com/", "note.created")


# -- the outbox ----------------------------------------------------------------------------------


def test_each_write_queues_a_delivery_per_matching_subscription(
    hooks: Webhooks, table: CollectionTable, store: Store
) -> None:
    hooks.subscribe("https://a.example/", ["note.created", "note.updated"])
    hooks.subscribe("https://b.example/", ["note.created", "task.created"])
    table.insert({"title": "Milk"})
    table.update(1, {"title": "Bread"})
    table.delete(1)
    rows = outbox(store)
    created = orjson.dumps(
        {
            "type": "note.created",
            "timestamp": "2023-11-14T22:13:20.000Z",
            "data": {"id": 1, "title": "Milk", "version": 1},
        }
    ).decode()
    updated = (
        created.replace("created", "updated")
        .replace("Milk", "Bread")
        .replace('"version":1', '"version":2')
    )
    assert [row[1:] for row in rows] == [
        (1, "note.created", created, "pending", 0, NOW),
        (2, "note.created", created, "pending", 0, NOW),
        (1, "note.updated", updated, "pending", 0, NOW),
    ]
    # One message id per event, shared by its deliveries.
    assert rows[0][0] == rows[1][0] != rows[2][0]
    assert rows[0][0].startswith("msg_")
    assert next_due(store) == NOW


def test_a_rolled_back_write_queues_nothing(
    hooks: Webhooks, table: CollectionTable, store: Store
) -> None:
    hooks.subscribe("https://a.example/", ["note.created", "note.updated", "note.deleted"])
    with pytest.raises(RuntimeError), store.transaction():
        table.insert({"title": "lost"})
        raise RuntimeError("the write failed")
    assert outbox(store) == []
    assert next_due(store) is None
    with store.transaction():
        table.insert({"title": "kept"})
        with pytest.raises(RuntimeError), store.transaction():
            table.update(1, {"title": "inner"})
            raise RuntimeError("one request failed")
    assert [row[2] for row in outbox(store)] == ["note.created"]


def test_a_deleted_subscription_loses_its_pending_deliveries(
    hooks: Webhooks, table: CollectionTable, store: Store
) -> None:
    hooks.subscribe("https://a.example/", ["note.created"])
    kept = hooks.subscribe("https://b.example/", ["note.created"])
    table.insert({"title": "x"})
    hooks.delete(1)
    assert [row[1] for row in outbox(store)] == [kept.id]
    assert [(d.subscription, d.url, d.event) for d in hooks.deliveries()] == [
        (2, "https://b.example/", "note.created")
    ]


def test_record_without_data_sends_the_id(hooks: Webhooks, store: Store) -> None:
    hooks.subscribe("https://a.example/", ["thing.deleted"])
    with store.transaction() as conn:
        assert queue_deliveries(conn, "thing", "deleted", {"id": 7}, NOW) == 1
        assert queue_deliveries(conn, "thing", "created", {"id": 7}, NOW) == 0
    assert orjson.loads(outbox(store)[0][3])["data"] == {"id": 7}


# -- claims --------------------------------------------------------------------------------------


def test_a_claimed_delivery_is_not_claimed_again_until_its_lease_ends(
    hooks: Webhooks, table: CollectionTable, store: Store
) -> None:
    hooks.subscribe("https://a.example/", ["note.created"], secret=SECRET)
    table.insert({"title": "a"})
    table.insert({"title": "b"})
    first = claim_deliveries(store, NOW + 1, lease=60, limit=1)
    assert [(c.id, c.url, c.secret, c.attempts) for c in first] == [
        (1, "https://a.example/", SECRET, 0)
    ]
    second = claim_deliveries(store, NOW + 1, lease=60, limit=10)
    assert [c.id for c in second] == [2]
    assert claim_deliveries(store, NOW + 30, lease=60, limit=10) == []
    # The first deliverer died: after its lease, another takes the row again.
    again = claim_deliveries(store, NOW + 61, lease=60, limit=1)
    assert [c.id for c in again] == [1]
    # The first claim is lost: its late result is not written.
    assert not finish_delivery(
        store, first[0], status="delivered", next_attempt=NOW + 62, http_status=200, error=None
    )
    assert finish_delivery(
        store, again[0], status="delivered", next_attempt=NOW + 62, http_status=200, error=None
    )
    assert [(d.id, d.status, d.attempts, d.last_status) for d in hooks.deliveries()] == [
        (1, "delivered", 1, 200),
        (2, "pending", 0, None),
    ]


# -- atomic batches ------------------------------------------------------------------------------


def _batch_app(store_location: str | None) -> App:
    app = App("http://hooks.test", store=store_location, clock=lambda: NOW)
    table = CollectionTable(lambda: app.store, SCHEMA, clock=lambda: NOW)

    def create(request: Request) -> Any:
        title = request.get_param("title")
        if title == "bad":
            from svcrest import RestError

            return RestError("bad_title", "No.", {"status": 400})
        return table.insert({"title": title})

    app.register_rest_route(
        "t/v1",
        "/notes",
        {
            "methods": "POST",
            "callback": create,
            "permission_callback": public,
            "allow_batch": {"v1": True, "atomic": True},
        },
    )
    return app


def test_an_atomic_batch_queues_only_when_it_commits(
    store_location: str | None, client_for: Any
) -> None:
    app = _batch_app(store_location)
    app.webhooks.subscribe("https://a.example/", ["note.created"])
    client: SiteClient = client_for(app)

    def batch(*titles: str) -> int:
        requests = [{"path": "/t/v1/notes", "body": {"title": title}} for title in titles]
        response = client.post(
            "/svc-json/batch/v1", json={"validation": "atomic", "requests": requests}
        )
        assert response.status_code == 207
        return len(response.json()["responses"])

    try:
        assert batch("a", "b", "bad") == 3
        assert app.webhooks.deliveries() == []
        assert batch("c", "d") == 2
        payloads = [orjson.loads(row[3])["data"]["title"] for row in outbox(app.store)]
        assert payloads == ["c", "d"]
    finally:
        app.store.close()


def test_a_change_recorded_without_data_sends_the_id(hooks: Webhooks, store: Store) -> None:
    from svcrest.store.changes import ensure_change_log, record_change

    ensure_change_log(store)
    hooks.subscribe("https://a.example/", ["bookmark.deleted"])
    with store.transaction() as conn:
        record_change(store, conn, "bookmark", 9, "deleted", NOW)
    assert orjson.loads(outbox(store)[0][3]) == {
        "type": "bookmark.deleted",
        "timestamp": "2023-11-14T22:13:20.000Z",
        "data": {"id": 9},
    }
