"""Sending webhooks: the Standard Webhooks signature, the retry schedule (an injected clock and
jitter), a live receiver, time-outs, redirects, and claims shared by two deliverers."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import orjson
import pytest
from standardwebhooks.webhooks import Webhook

from svcrest.serve.webhooks import WebhookDeliverer, retry_delay, sign
from svcrest.store import Store, open_store
from svcrest.store.collection_table import CollectionTable
from svcrest.store.webhooks import Webhooks
from tests.conftest import Clock
from tests.pg import PostgresServer

NOW = 1_700_000_000.0
DAY = 24 * 3600.0
SCHEMA: dict[str, Any] = {
    "title": "note",
    "type": "object",
    "properties": {"title": {"type": "string", "default": ""}},
}
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def test_the_signature_is_the_standard_webhooks_test_vector() -> None:
    # The Python library's published vector (standard-webhooks, tests/test_webhooks.py).
    signature = sign(SECRET, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, b'{"test": 2432232314}')
    assert signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


@pytest.mark.parametrize(
    ("attempts", "jitter", "delay"),
    [
        (1, 0.5, 1.0),
        (1, 0.0, 0.8),
        (1, 0.999, 1.1996),
        (2, 0.5, 2.0),
        (3, 0.0, 3.2),
        (12, 0.5, 2048.0),
        (12, 0.999, 2456.7808),
        (13, 0.5, 3600.0),
        (13, 0.0, 2880.0),
        (13, 0.999, 3600.0),
        (100, 0.5, 3600.0),
    ],
)
def test_retry_delays_double_with_twenty_percent_jitter_up_to_an_hour(
    attempts: int, jitter: float, delay: float
) -> None:
    assert retry_delay(attempts, jitter) == pytest.approx(delay)


@pytest.fixture
def store(store_location: str | None) -> Iterator[Store]:
    opened = open_store(store_location)
    yield opened
    opened.close()


def _site(
    store: Store, url: str = "https://receiver.test/hook", clock: Callable[[], float] = lambda: NOW
) -> CollectionTable:
    Webhooks(store, clock=clock).subscribe(url, ["note.created"], secret=SECRET)
    table = CollectionTable(store, SCHEMA, clock=clock)
    table.migrate()
    return table


def _mock(statuses: Callable[[httpx.Request], int], sent: list[httpx.Request]) -> httpx.Client:
    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(statuses(request))

    return httpx.Client(transport=httpx.MockTransport(handler))


def _drive(deliverer: WebhookDeliverer, clock: Clock, until: float) -> list[float]:
    """Step the clock to each due time until ``until``; the times attempts were made."""
    times: list[float] = []
    while True:
        due = deliverer.next_due()
        if due is None or due > until:
            return times
        clock.now = max(clock.now, due)
        made = deliverer.deliver_due()
        times.extend([clock.now] * made)


def test_a_failing_receiver_is_retried_for_24_hours_then_failed(store: Store) -> None:
    _site(store).insert({"title": "Milk"})
    clock = Clock(NOW)
    sent: list[httpx.Request] = []
    deliverer = WebhookDeliverer(
        store, clock=clock, jitter=lambda: 0.5, client=_mock(lambda r: 503, sent)
    )
    times = _drive(deliverer, clock, NOW + 2 * DAY)
    doubling = [NOW + 2.0**n - 1 for n in range(13)]  # 0, 1, 3, 7 … 4095 s after the event
    hourly = [doubling[-1] + 3600.0 * k for k in range(1, 23)]  # … 83,295 s
    assert times == [*doubling, *hourly, NOW + DAY]
    assert len(times) == 36
    [delivery] = Webhooks(store).deliveries()
    assert (delivery.status, delivery.attempts, delivery.last_status) == ("failed", 36, 503)
    assert deliverer.next_due() is None
    assert len({request.headers["webhook-id"] for request in sent}) == 1
    assert deliverer.deliver_due() == 0


def test_jitter_moves_each_retry_and_a_2xx_delivers(store: Store) -> None:
    _site(store).insert({"title": "Milk"})
    clock = Clock(NOW)
    sent: list[httpx.Request] = []
    answers = iter([500, 500, 204])
    jitters = iter([0.0, 0.75])
    deliverer = WebhookDeliverer(
        store,
        clock=clock,
        jitter=lambda: next(jitters),
        client=_mock(lambda r: next(answers), sent),
    )
    times = _drive(deliverer, clock, NOW + DAY)
    assert times == pytest.approx([NOW, NOW + 0.8, NOW + 0.8 + 2.2])
    [delivery] = Webhooks(store).deliveries()
    assert (delivery.status, delivery.attempts, delivery.last_status) == ("delivered", 3, 204)
    # Each attempt signs anew with its own timestamp; the id stays.
    stamps = [request.headers["webhook-timestamp"] for request in sent]
    assert stamps == [str(int(t)) for t in times]
    assert {request.headers["webhook-id"] for request in sent} == {delivery.message_id}


# -- a live receiver -----------------------------------------------------------------------------


class Receiver(http.server.ThreadingHTTPServer):
    """A local HTTP server answering each POST with the next status of ``answers``."""

    def __init__(self, answers: list[int], delay: float = 0.0) -> None:
        self.answers = iter(answers)
        self.delay = delay
        self.received: list[tuple[str, dict[str, str], bytes]] = []
        super().__init__(("127.0.0.1", 0), _Handler)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        self.server.received.append((self.path, dict(self.headers.items()), body))
        time.sleep(self.server.delay)
        status = next(self.server.answers)
        self.send_response(status)
        if status in (301, 302, 307):
            self.send_header("location", self.server.url + "/elsewhere")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Callable[..., Receiver]]:
    made: list[Receiver] = []

    def make(answers: list[int], delay: float = 0.0) -> Receiver:
        server = Receiver(answers, delay)
        made.append(server)
        return server

    yield make
    for server in made:
        server.stop()


def test_a_live_receiver_gets_a_signed_post_that_verifies(
    store: Store, receiver: Callable[..., Receiver]
) -> None:
    server = receiver([500, 200])
    queued = float(int(time.time()) - 60)  # a receiver checks the time a delivery is sent
    table = _site(store, server.url + "/hook", clock=lambda: queued)
    table.insert({"title": "Milk"})
    clock = Clock(time.time())
    deliverer = WebhookDeliverer(store, clock=clock, jitter=lambda: 0.5)
    try:
        assert deliverer.deliver_due() == 1
        assert deliverer.deliver_due() == 0  # not due yet
        clock.now += 1.2
        assert deliverer.deliver_due() == 1
    finally:
        deliverer.stop()
    assert len(server.received) == 2
    path, headers, body = server.received[1]
    assert path == "/hook"
    assert headers["content-type"] == "application/json"
    # The receiver's side: the Standard Webhooks library verifies it.
    verified = Webhook(SECRET).verify(body, headers)
    assert verified == {
        "type": "note.created",
        "timestamp": datetime.fromtimestamp(queued, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "data": {"id": 1, "title": "Milk", "version": 1},
    }
    assert orjson.loads(server.received[0][2]) == verified
    [delivery] = Webhooks(store).deliveries()
    assert (delivery.status, delivery.attempts, delivery.url) == (
        "delivered",
        2,
        server.url + "/hook",
    )


def test_a_redirect_is_not_followed_and_a_slow_receiver_times_out(
    store: Store, receiver: Callable[..., Receiver]
) -> None:
    redirecting = receiver([302])
    slow = receiver([200], delay=1.0)
    Webhooks(store, clock=lambda: NOW).subscribe(slow.url + "/slow", ["note.created"])
    _site(store, redirecting.url + "/moved").insert({"title": "x"})
    clock = Clock(NOW)
    deliverer = WebhookDeliverer(store, clock=clock, jitter=lambda: 0.5, timeout=0.2)
    try:
        assert deliverer.deliver_due() == 2
    finally:
        deliverer.stop()
    assert [entry[0] for entry in redirecting.received] == ["/moved"]  # never /elsewhere
    by_url = {d.url: d for d in Webhooks(store).deliveries()}
    moved, timed_out = by_url[redirecting.url + "/moved"], by_url[slow.url + "/slow"]
    assert (moved.status, moved.attempts, moved.last_status) == ("pending", 1, 302)
    assert (timed_out.status, timed_out.attempts, timed_out.last_status) == ("pending", 1, None)
    assert timed_out.last_error == "ReadTimeout: timed out"
    assert moved.next_attempt == timed_out.next_attempt == NOW + 1.0


def test_the_thread_delivers_and_stops(store: Store, receiver: Callable[..., Receiver]) -> None:
    server = receiver([204])
    deliverer = WebhookDeliverer(store)
    deliverer.start(poll=0.05)
    try:
        _site(store, server.url).insert({"title": "x"})
        deadline = time.monotonic() + 5
        while not server.received and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        deliverer.stop(timeout=5)
    assert len(server.received) == 1
    assert [d.status for d in Webhooks(store).deliveries()] == ["delivered"]


# -- many deliverers on one PostgreSQL ---------------------------------------------------------


def test_two_deliverers_on_postgresql_send_each_delivery_once(postgres: PostgresServer) -> None:
    url = postgres.new_schema()
    first, second = open_store(url), open_store(url)
    try:
        table = _site(first)
        for number in range(40):
            table.insert({"title": str(number)})
        sent: dict[str, list[str]] = {"first": [], "second": []}
        lock = threading.Lock()

        def client(name: str) -> httpx.Client:
            def handler(request: httpx.Request) -> httpx.Response:
                time.sleep(0.005)  # the other deliverer claims meanwhile
                with lock:
                    sent[name].append(request.headers["webhook-id"])
                return httpx.Response(200)

            return httpx.Client(transport=httpx.MockTransport(handler))

        deliverers = {
            "first": WebhookDeliverer(first, client=client("first"), batch=3),
            "second": WebhookDeliverer(second, client=client("second"), batch=3),
        }
        barrier = threading.Barrier(2)

        def work(deliverer: WebhookDeliverer) -> None:
            barrier.wait()
            while deliverer.deliver_due():
                pass

        threads = [threading.Thread(target=work, args=(d,)) for d in deliverers.values()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        every = sent["first"] + sent["second"]
        assert len(every) == 40
        assert len(set(every)) == 40  # each once
        assert sent["first"] and sent["second"]  # both took part
        deliveries = Webhooks(first).deliveries()
        assert {d.status for d in deliveries} == {"delivered"}
        assert {d.attempts for d in deliveries} == {1}
        assert {d.message_id for d in deliveries} == set(every)
    finally:
        first.close()
        second.close()


def test_a_row_locked_by_one_claim_is_skipped_by_another(postgres: PostgresServer) -> None:
    url = postgres.new_schema()
    first, second = open_store(url), open_store(url)
    try:
        table = _site(first)
        table.insert({"title": "a"})
        table.insert({"title": "b"})
        from svcrest.store.webhooks import claim_deliveries

        with first.transaction() as conn:  # another host's claim, not yet committed
            conn.execute("SELECT id FROM svc_webhook_deliveries WHERE id = 1 FOR UPDATE")
            started = time.monotonic()
            taken = claim_deliveries(second, NOW + 1, lease=60, limit=10)
            assert time.monotonic() - started < 2  # skipped, not waited for
        assert [claimed.id for claimed in taken] == [2]
        assert [c.id for c in claim_deliveries(first, NOW + 1, lease=60, limit=10)] == [1]
    finally:
        first.close()
        second.close()


def test_finished_deliveries_are_kept_a_week(store: Store) -> None:
    table = _site(store)
    table.insert({"title": "a"})
    clock = Clock(NOW)
    answers = iter([200, 503, 503])
    deliverer = WebhookDeliverer(
        store, clock=clock, jitter=lambda: 0.5, client=_mock(lambda r: next(answers), [])
    )
    assert deliverer.deliver_due() == 1
    clock.now = NOW + 10
    table.insert({"title": "b"})  # queued at NOW: retried until NOW + 1 day
    assert deliverer.deliver_due() == 1
    hooks = Webhooks(store)
    assert [d.status for d in hooks.deliveries()] == ["delivered", "pending"]
    clock.now = NOW + 7 * DAY  # a week after the first finished: not yet over it
    assert deliverer.deliver_due() == 1  # the second's last attempt: past a day, failed
    assert [d.status for d in hooks.deliveries()] == ["delivered", "failed"]
    clock.now = NOW + 7 * DAY + 3601  # the next hourly purge
    deliverer.deliver_due()
    assert [d.status for d in hooks.deliveries()] == ["failed"]
