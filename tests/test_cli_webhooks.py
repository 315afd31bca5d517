"""``svcrest webhook add|list|delete|deliveries``."""

from __future__ import annotations

import base64
import gc
import http.server
import re
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from svcrest import App
from svcrest.cli import ENV_DB, ENV_DEMO, app_from_env
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


def _delivery_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "svcrest-webhooks"]


def test_a_serve_worker_sends_webhooks_until_its_site_is_gone(
    monkeypatch: pytest.MonkeyPatch, db: str
) -> None:
    received: list[tuple[str, bytes]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            received.append((self.headers["webhook-signature"], body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    before = set(_delivery_threads())
    monkeypatch.setenv(ENV_DB, db)
    monkeypatch.setenv(ENV_DEMO, "0")
    try:
        app = app_from_env()  # what each `svcrest serve` worker builds
        [thread] = [t for t in _delivery_threads() if t not in before]
        url = f"http://127.0.0.1:{server.server_address[1]}/in"
        app.webhooks.subscribe(url, ["note.created"], secret=SECRET)
        store = app.store
        CollectionTable(store, SCHEMA).insert({"title": "live"})
        deadline = time.monotonic() + 10
        while not received and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [orjson.loads(body)["data"] for _, body in received] == [
            {"id": 1, "title": "live", "version": 1}
        ]
        assert received[0][0].startswith("v1,")
        del app
        gc.collect()
        thread.join(5)
        assert not thread.is_alive()  # the thread kept no reference to the site
        store.close()
    finally:
        server.shutdown()
        server.server_close()
