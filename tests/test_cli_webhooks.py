"""``svcrest webhook add|list|delete|deliveries``."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from svcrest import App
from svcrest.serve.webhooks import WebhookDeliverer
from svcrest.store.collection_table import CollectionTable
from tests.cli_run import run

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SCHEMA: dict[str, Any] = {
    "title": "note",
    "type": "object",
    "properties": {"title": {"type": "string", "default": ""}},
}


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "site.db")
    App(store=path).store.close()
    return path


def test_add_prints_a_new_secret_once(capsys: pytest.CaptureFixture[str], db: str) -> None:
    status, out, err = run(
        capsys,
        "webhook",
        "add",
        "https://example.com/hook",
        "--events",
        "note.created, note.deleted",
        "--db",
        db,
    )
    match = re.fullmatch(
        r"Created webhook 1 \(https://example\.com/hook; note\.created,note\.deleted\)"
        r" with secret: (whsec_\S+)\n",
        out,
    )
    assert (status, err, match is not None) == (0, "", True)
    assert match is not None
    assert len(base64.b64decode(match.group(1)[6:])) == 24
    app = App(store=db)
    try:
        assert [s.secret for s in app.webhooks.list()] == [match.group(1)]
    finally:
        app.store.close()


def test_add_with_a_secret_list_and_delete(capsys: pytest.CaptureFixture[str], db: str) -> None:
    add = ("webhook", "add", "http://127.0.0.1:9000/in", "--events", "task.updated")
    assert run(capsys, *add, "--secret", SECRET, "--db", db) == (
        0,
        "Created webhook 1 (http://127.0.0.1:9000/in; task.updated).\n",
        "",
    )
    run(
        capsys,
        "webhook",
        "add",
        "https://b.example/",
        "--events",
        "a.created,b.deleted",
        "--db",
        db,
    )
    assert run(capsys, "webhook", "list", "--db", db) == (
        0,
        "1\thttp://127.0.0.1:9000/in\ttask.updated\n2\thttps://b.example/\ta.created,b.deleted\n",
        "",
    )
    assert run(capsys, "webhook", "delete", "1", "--db", db) == (
        0,
        "Deleted webhook 1 and its deliveries.\n",
        "",
    )
    assert run(capsys, "webhook", "delete", "1", "--db", db) == (
        1,
        "",
        "svcrest: error: no webhook with the id 1\n",
    )
    assert (
        run(capsys, "webhook", "list", "--db", db)[1]
        == "2\thttps://b.example/\ta.created,b.deleted\n"
    )


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (
            ("file:///etc/passwd", "--events", "note.created"),
            "a webhook URL is http or https, not 'file'",
        ),
        (("https://x.example/", "--events", "note.saved"), "a webhook event is"),
        (("https://x.example/", "--events", ","), "a webhook subscribes to 1 to 100 events"),
        (
            ("https://x.example/", "--events", "note.created", "--secret", "abc"),
            "a webhook secret is 'whsec_' followed by base64",
        ),
    ],
    ids=["scheme", "event", "no-events", "secret"],
)
def test_add_refuses_bad_input(
    capsys: pytest.CaptureFixture[str], db: str, argv: tuple[str, ...], error: str
) -> None:
    status, out, err = run(capsys, "webhook", "add", *argv, "--db", db)
    assert (status, out) == (2, "")
    assert err.startswith(f"svcrest: error: {error}")
    assert run(capsys, "webhook", "list", "--db", db)[1] == ""


def test_webhook_commands_refuse_a_missing_database(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = str(tmp_path / "none.db")
    status, out, err = run(capsys, "webhook", "list", "--db", missing)
    assert (status, out) == (2, "")
    assert "does not exist" in err
    assert not Path(missing).exists()


def test_deliveries_prints_one_line_a_delivery(capsys: pytest.CaptureFixture[str], db: str) -> None:
    assert run(capsys, "webhook", "deliveries", "--db", db) == (0, "", "")
    app = App(store=db, clock=lambda: 1_700_000_000.0)
    try:
        app.webhooks.subscribe("https://a.example/h", ["note.created", "note.updated"])
        app.webhooks.subscribe("https://b.example/h", ["note.created"])
        table = CollectionTable(lambda: app.store, SCHEMA, clock=lambda: 1_700_000_000.0)
        table.insert({"title": "x"})
        table.update(1, {"title": "y"})
        answers = {"a.example": 200, "b.example": 500}
        client = httpx.Client(
            transport=httpx.MockTransport(lambda r: httpx.Response(answers[r.url.host]))
        )
        WebhookDeliverer(app.store, clock=lambda: 1_700_000_000.0, client=client).deliver_due()
        ids = [d.message_id for d in app.webhooks.deliveries()]
    finally:
        app.store.close()
    assert ids[0] == ids[1] != ids[2]
    assert run(capsys, "webhook", "deliveries", "--db", db) == (
        0,
        f"{ids[0]}\tnote.created\thttps://a.example/h\t1\tdelivered\n"
        f"{ids[1]}\tnote.created\thttps://b.example/h\t1\tpending\n"
        f"{ids[2]}\tnote.updated\thttps://a.example/h\t1\tdelivered\n",
        "",
    )
    assert run(capsys, "webhook", "deliveries", "--limit", "1", "--db", db)[1] == (
        f"{ids[2]}\tnote.updated\thttps://a.example/h\t1\tdelivered\n"
    )
