"""Sending the webhook outbox: Standard Webhooks signatures, retries, and the deliverer thread.

The rule: a delivery is an HTTP POST of the queued body to its subscription's URL, signed as
Standard Webhooks sign (headers ``webhook-id``, ``webhook-timestamp`` and ``webhook-signature:
v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">``, keyed with the secret's base64 part
after ``whsec_``). A 2xx answer delivers it; any other answer, a time-out or a failed
connection is retried with jittered exponential back-off (:func:`retry_delay`: 1 s ± 20 %,
doubling, at most an hour apart) until 24 hours after the event, when a last failure marks it
``failed``.

SECURITY: a delivery goes only to its subscription's URL (read in the claiming transaction);
redirects are never followed (a 3xx is a failure), the answer's body is never read, and
every phase of the request has a time-out (connect, write, each read of the answer's
headers; a receiver trickling its headers a byte at a time can still hold one deliverer,
whose lease then lets another take its other deliveries). Other
schemes than ``http``/``https`` were refused when the subscription was added. Proxies from
the environment (``HTTPS_PROXY``) are honoured, so an egress proxy can restrict where
deliveries may go (say, no private addresses).

:class:`WebhookDeliverer` is testable without sleeping: ``deliver_due()`` makes the attempts
due at its ``clock()``; ``jitter()`` (``random.random`` by default) picks each delay.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Final

import httpx

from svcrest.store.base import Store, StoreError
from svcrest.store.webhooks import (
    Claimed,
    DeliveryStatus,
    claim_deliveries,
    ensure_webhook_tables,
    finish_delivery,
    next_due,
    purge_deliveries,
    secret_key,
)

__all__ = [
    "FIRST_RETRY",
    "KEEP_FINISHED",
    "MAX_RETRY_INTERVAL",
    "RETRY_FOR",
    "WebhookDeliverer",
    "retry_delay",
    "sign",
]

#: The first retry's delay (seconds, before jitter); each later one doubles it.
FIRST_RETRY: Final = 1.0
#: The longest delay between two attempts (seconds).
MAX_RETRY_INTERVAL: Final = 3600.0
#: How long after its event a delivery is retried (seconds): then it is ``failed``.
RETRY_FOR: Final = 24 * 3600.0
#: How long delivered and failed deliveries are kept (seconds) for ``svcrest webhook
#: deliveries``: a week.
KEEP_FINISHED: Final = 7 * 24 * 3600.0
#: The jitter: each delay is its nominal value times 1 ± this.
JITTER: Final = 0.2
_LOG = logging.getLogger("svcrest.webhooks")


def sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` of a delivery: ``v1,`` and the base64 HMAC-SHA256 of
    ``{message_id}.{timestamp}.{body}`` keyed with the ``whsec_`` secret's decoded key."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def retry_delay(attempts: int, jitter: float) -> float:
    """The delay (seconds) before the next attempt after ``attempts`` failed ones: 1 s
    doubling each time (2, 4, 8…), times ``0.8 + 0.4 * jitter`` (``jitter`` in [0, 1): ±20 %),
    never more than an hour."""
    nominal = min(FIRST_RETRY * 2.0 ** min(max(attempts - 1, 0), 32), MAX_RETRY_INTERVAL)
    return min(nominal * (1.0 - JITTER + 2 * JITTER * jitter), MAX_RETRY_INTERVAL)


class WebhookDeliverer:
    """Sends the due deliveries of a store's webhook outbox (run by ``svcrest serve`` in
    each process; any number of them, on any hosts, share one store: each delivery is
    claimed by one at a time).

    ``store``: the store, or a callable returning it. ``clock``: the time (Unix seconds).
    ``jitter``: a number in [0, 1) for each retry's delay (``random.random``). ``client``: the
    ``httpx.Client`` to post with (default: one of this deliverer, no redirects followed,
    ``timeout`` seconds for each phase). ``batch``: the deliveries one step claims at most.
    ``lease``: how long a claim lasts before another deliverer may take the row again
    (default: long enough for the batch to time out one by one).
    """

    def __init__(
        self,
        store: Store | Callable[[], Store],
        *,
        clock: Callable[[], float] = time.time,
        jitter: Callable[[], float] = random.random,
        client: httpx.Client | None = None,
        timeout: float = 10.0,
        batch: int = 10,
        lease: float | None = None,
    ) -> None:
        if not 0 < timeout <= 60:
            raise ValueError("timeout must be between 0 and 60 seconds")
        if not 1 <= batch <= 100:
            raise ValueError("batch must be between 1 and 100")
        self._get_store: Callable[[], Store] = (
            (lambda: store) if isinstance(store, Store) else store
        )
        self._clock = clock
        self._jitter = jitter
        self._own_client = client is None
        self._client = client or httpx.Client(
            timeout=httpx.Timeout(timeout), follow_redirects=False
        )
        self._batch = batch
        # Each request takes at most about 3 times timeout (connect, write, the answer's headers).
        self.lease = lease if lease is not None else 60.0 + 3 * timeout * batch
        self._ready = False
        self._next_purge = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def store(self) -> Store:
        """The store, with the webhook tables migrated."""
        store = self._get_store()
        if not self._ready:
            ensure_webhook_tables(store)
            self._ready = True
        return store

    def next_due(self) -> float | None:
        """When the next pending delivery is due (None: none is pending)."""
        return next_due(self.store)

    def deliver_due(self) -> int:
        """Claim the deliveries due now (at most ``batch``) and make one attempt of each;
        returns how many attempts were made. Once an hour, first delete the deliveries
        finished more than :data:`KEEP_FINISHED` ago."""
        store = self.store
        now = self._clock()
        if now >= self._next_purge:  # at most once an hour
            self._next_purge = now + 3600.0
            purge_deliveries(store, now - KEEP_FINISHED)
        due = next_due(store)
        if due is None or due > now:
            return 0
        claimed = claim_deliveries(store, now, self.lease, self._batch)
        for delivery in claimed:
            self._attempt(store, delivery)
        return len(claimed)

    def _attempt(self, store: Store, delivery: Claimed) -> None:
        timestamp = int(self._clock())
        headers = {
            "content-type": "application/json",
            "user-agent": "svcrest-webhooks",
            "webhook-id": delivery.message_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": sign(
                delivery.secret, delivery.message_id, timestamp, delivery.payload
            ),
        }
        http_status: int | None = None
        status: DeliveryStatus
        error: str | None = None
        try:
            # SECURITY: streamed and closed unread: a receiver cannot make us hold its body.
            with self._client.stream(
                "POST", delivery.url, content=delivery.payload, headers=headers
            ) as response:
                http_status = response.status_code
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        except (httpx.InvalidURL, UnicodeError) as exc:  # a URL stored before it was checked
            error = f"InvalidURL: {exc}"
        now = self._clock()
        attempts = delivery.attempts + 1
        if http_status is not None and 200 <= http_status < 300:
            status, next_attempt = "delivered", now
        else:
            deadline = delivery.created + RETRY_FOR
            if now >= deadline:
                status, next_attempt = "failed", now
            else:
                status = "pending"
                next_attempt = min(now + retry_delay(attempts, self._jitter()), deadline)
        finish_delivery(
            store,
            delivery,
            status=status,
            next_attempt=next_attempt,
            http_status=http_status,
            error=error,
        )

    # -- the background thread -----------------------------------------------------------------

    def run(self, poll: float = 1.0) -> None:
        """Deliver until :meth:`stop`: each step, then a wait of at most ``poll`` seconds
        (shorter when a delivery is due sooner). A failing store is logged and tried again
        after ``poll``; a closed one ends the loop, and so does a store getter raising
        ReferenceError (its site was collected)."""
        while not self._stop.is_set():
            try:
                while self.deliver_due():
                    if self._stop.is_set():
                        return
                due = self.next_due()
            except ReferenceError:  # the store's getter says its site is gone
                return
            except StoreError as exc:
                if getattr(self._get_store(), "closed", False):
                    return
                _LOG.warning("webhook delivery failed: %s", exc)
                due = None
            except Exception:  # a broken connection: try again later
                _LOG.exception("webhook delivery failed")
                due = None
            wait = poll if due is None else min(poll, max(due - self._clock(), 0.0))
            self._stop.wait(wait)

    def start(self, poll: float = 1.0) -> threading.Thread:
        """Run :meth:`run` in a daemon thread (``svcrest-webhooks``); returns it."""
        thread = threading.Thread(
            target=self.run, args=(poll,), name="svcrest-webhooks", daemon=True
        )
        self._thread = thread
        thread.start()
        return thread

    def stop(self, timeout: float | None = None) -> None:
        """Stop the thread (after the attempt under way) and close the deliverer's client."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._own_client:
            self._client.close()
