"""Hostile input to webhooks: ``app.webhooks.subscribe`` and ``svcrest webhook add|delete|
deliveries`` refuse what a delivery could not send or would leak (credentials in the URL, a
host one URL parser reads differently from another, a host no HTTP client can send to, odd
secrets and events), and a delivery whose URL cannot be sent is a failed attempt, never an
exception out of the deliverer. (The plain refusals are in tests/store/test_webhooks.py and
tests/test_cli_webhooks.py.)"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from svcrest import App
from svcrest.serve.webhooks import WebhookDeliverer
from svcrest.store import Store, open_store
from svcrest.store.collection_table import CollectionTable
from svcrest.store.webhooks import Webhooks
from tests.cli_run import run

NOW = 1_700_000_000.0
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SCHEMA: dict[str, Any] = {
    "title": "note",
    "type": "object",
    "properties": {"title": {"type": "string", "default": ""}},
}
NO_CREDENTIALS = "a webhook URL carries no user name or password (deliveries are signed)"
NOT_SENDABLE = "not a valid webhook URL: "


@pytest.fixture
def store() -> Iterator[Store]:
    opened = open_store(None)
    yield opened
    opened.close()


@pytest.fixture
def hooks(store: Store) -> Webhooks:
    return Webhooks(store, clock=lambda: NOW)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("https://user:secret@receiver.example/hook", NO_CREDENTIALS),
        ("https://user@receiver.example/hook", NO_CREDENTIALS),
        ("https://:secret@receiver.example/hook", NO_CREDENTIALS),
        # urllib reads the host as evil.example, a browser-style parser as receiver.example
        ("https://receiver.example\\@evil.example/", NO_CREDENTIALS),
        ("https://a@b@evil.example/", NO_CREDENTIALS),
        ("https://xn--a.example/", NOT_SENDABLE),
        ("https://ex\u00adample.com/", NOT_SENDABLE),
        ("https://exa%00mple.com/", NOT_SENDABLE),
        ("https://%65xample.com/", NOT_SENDABLE),
        ("https://example.com" + "/a" * 1100, "a webhook URL is a non-empty string of at most"),
        ("javascript:alert(1)//example.com", "a webhook URL is http or https, not 'javascript'"),
        ("gopher://example.com/", "a webhook URL is http or https, not 'gopher'"),
        ("http:example.com", "a webhook URL names a host"),
        ("https://example.com/\u2028", "a webhook URL has no whitespace or control characters"),
        ("https://example.com/\x00", "a webhook URL has no whitespace or control characters"),
    ],
    ids=[
        "user-password",
        "user",
        "password",
        "backslash-at",
        "two-ats",
        "bad-idna",
        "soft-hyphen",
        "percent-nul-host",
        "percent-host",
        "too-long",
        "javascript",
        "gopher",
        "no-slashes",
        "line-separator",
        "nul",
    ],
)
def test_a_url_a_delivery_could_not_send_or_would_leak_is_refused(
    hooks: Webhooks, url: str, message: str
) -> None:
    with pytest.raises(ValueError) as raised:
        hooks.subscribe(url, ["note.created"])
    assert str(raised.value).startswith(message)
    assert hooks.list() == []


@pytest.mark.parametrize(
    "url",
    [
        "https://receiver.example/hook?token=abc#frag",
        "HTTPS://RECEIVER.EXAMPLE/hook",
        "https://b\u00fccher.example/",
        "http://[::1]:8080/hook",
        "http://127.0.0.1:9/hook",
        "https://receiver.example/%E2%82%AC",
    ],
    ids=["query-fragment", "upper-case", "idn", "ipv6", "loopback", "escaped-path"],
)
def test_urls_a_delivery_can_send_are_kept_as_given(hooks: Webhooks, url: str) -> None:
    assert hooks.subscribe(url, ["note.created"], secret=SECRET).url == url
    assert [hook.url for hook in hooks.list()] == [url]


@pytest.mark.parametrize(
    ("secret", "message"),
    [
        ("whsec_" + "A" * 1_000_000, "a webhook secret's key is 24 to 64 bytes, not 750000"),
        ("whsec_" + base64.b64encode(b"k" * 65).decode(), "a webhook secret's key is 24 to 64"),
        (" " + SECRET, "a webhook secret is 'whsec_' followed by base64"),
        (SECRET + "\n", "the webhook secret after 'whsec_' is not valid base64"),
        (SECRET.replace("whsec_", "WHSEC_"), "a webhook secret is 'whsec_' followed by base64"),
        ("whsec_", "a webhook secret's key is 24 to 64 bytes, not 0"),
        ("whsec_\u00e9\u00e9\u00e9\u00e9", "the webhook secret after 'whsec_' is not valid base64"),
        (b"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "a webhook secret is 'whsec_' followed"),
    ],
    ids=[
        "huge",
        "65-bytes",
        "space-before",
        "newline-after",
        "prefix-case",
        "empty",
        "latin",
        "bytes",
    ],
)
def test_a_huge_or_invalid_secret_is_refused(hooks: Webhooks, secret: Any, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        hooks.subscribe("https://receiver.example/", ["note.created"], secret=secret)
    assert str(raised.value).startswith(message)
    assert hooks.list() == []


@pytest.mark.parametrize(
    ("url", "events", "message"),
    [
        (b"https://receiver.example/", ["note.created"], "a webhook URL is a non-empty string"),
        (None, ["note.created"], "a webhook URL is a non-empty string"),
        (
            "https://receiver.example/",
            [f"n{i}.created" for i in range(101)],
            "a webhook subscribes to 1 to 100",
        ),
        ("https://receiver.example/", ["note.created" + "x" * 10_000], "a webhook event is"),
        ("https://receiver.example/", [None], "a webhook event is"),
        ("https://receiver.example/", ["note.created\n"], "a webhook event is"),
    ],
    ids=["url-bytes", "url-none", "101-events", "event-huge", "event-none", "event-newline"],
)
def test_odd_urls_and_events_are_refused(
    hooks: Webhooks, url: Any, events: Any, message: str
) -> None:
    with pytest.raises(ValueError) as raised:
        hooks.subscribe(url, events)
    assert str(raised.value).startswith(message)
    assert hooks.list() == []


@pytest.mark.parametrize(
    "url",
    ["https://xn--a.example/hook", "https://ex\u00adample.com/hook"],
    ids=["bad-idna", "soft-hyphen"],
)
def test_a_stored_url_that_cannot_be_sent_is_a_failed_attempt(store: Store, url: str) -> None:
    # A subscription stored before its URL was checked this way (or edited in the store).
    hooks = Webhooks(store, clock=lambda: NOW)
    hooks.subscribe("https://receiver.example/hook", ["note.created"], secret=SECRET)
    with store.transaction() as conn:
        conn.execute("UPDATE svc_webhooks SET url = ?", (url,))
    table = CollectionTable(store, SCHEMA, clock=lambda: NOW)
    table.migrate()
    table.insert({"title": "Milk"})
    table.insert({"title": "Bread"})
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(204)

    client = httpx.Client(transport=httpx.MockTransport(answer))
    deliverer = WebhookDeliverer(store, clock=lambda: NOW, jitter=lambda: 0.5, client=client)
    assert deliverer.deliver_due() == 2  # both attempted: the first does not stop the batch
    assert sent == []
    deliveries = hooks.deliveries()
    assert [(d.status, d.attempts, d.last_status) for d in deliveries] == [
        ("pending", 1, None),
        ("pending", 1, None),
    ]
    assert all(d.last_error and d.last_error.startswith("InvalidURL: ") for d in deliveries)
    assert deliverer.next_due() == NOW + 1.0


# -- the CLI ---------------------------------------------------------------------------------


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "site.db")
    App(store=path).store.close()
    return path


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (
            ("add", "https://user:pw@receiver.example/", "--events", "note.created"),
            NO_CREDENTIALS,
        ),
        (("add", "https://xn--a.example/", "--events", "note.created"), NOT_SENDABLE),
        (("add", "https://receiver.example/", "--events", " , ,"), "a webhook subscribes to 1"),
        (
            ("add", "https://receiver.example/", "--events", "note.created", "--secret", ""),
            "a webhook secret is 'whsec_' followed by base64",
        ),
        (("delete", "99999999999999999999"), "argument ID"),
        (("delete", "-1"), "argument ID"),
        (("delete", "abc"), "argument ID"),
        (("deliveries", "--limit", "-1"), "argument --limit"),
        (("deliveries", "--limit", "1e9"), "argument --limit"),
    ],
    ids=[
        "credentials",
        "bad-idna",
        "blank-events",
        "empty-secret",
        "id-past-64-bits",
        "id-negative",
        "id-word",
        "limit-negative",
        "limit-float",
    ],
)
def test_the_cli_refuses_hostile_arguments_with_status_2(
    capsys: pytest.CaptureFixture[str], db: str, argv: tuple[str, ...], error: str
) -> None:
    status, out, err = run(capsys, "webhook", *argv, "--db", db)
    assert (status, out) == (2, "")
    assert error in err
    assert "Traceback" not in err
    assert run(capsys, "webhook", "list", "--db", db)[1] == ""


def test_the_cli_deletes_an_id_never_made_with_status_1(
    capsys: pytest.CaptureFixture[str], db: str
) -> None:
    status, out, err = run(capsys, "webhook", "delete", str(2**63 - 1), "--db", db)
    assert (status, out) == (1, "")
    assert err == f"svcrest: error: no webhook with the id {2**63 - 1}\n"
