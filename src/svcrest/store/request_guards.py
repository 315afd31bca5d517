"""The store's side of idempotency keys and rate limits (``svcrest.rest.guard``).

Both live in the site's store, so every host and worker sees the same records:

- ``idempotency_keys``: (owner, key) → the request's fingerprint and, once it finished, its
  stored answer (JSON), kept 24 hours. A key is reserved by inserting its row (insert if
  absent, one statement), so two hosts racing on one key cannot both run the request. A
  reservation whose request never finished (its host died) lapses after
  :data:`IN_FLIGHT_LEASE` seconds. One owner keeps at most
  :attr:`StoredGuards.keys_per_owner` rows (:data:`KEYS_PER_OWNER` by default): past it, its
  oldest finished keys are forgotten, and a reservation finding every one still in flight is
  refused.
- ``rate_limit_counts``: (bucket, window start) → the number of requests counted, upserted
  and read back in one statement (``INSERT … ON CONFLICT DO UPDATE … RETURNING``, SQLite
  3.35+ and PostgreSQL), so the count is exact under any concurrency.

Expired rows are deleted a bounded number at a time when new rows are written.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from svcrest.rest.guard import KeyState
from svcrest.store.base import Step, Store

__all__ = [
    "CLEANUP_BATCH",
    "GUARDS_SCHEMA",
    "IN_FLIGHT_LEASE",
    "KEYS_PER_OWNER",
    "KEY_LIFETIME",
    "StoredGuards",
]

#: Seconds a finished request's answer is kept for replays (the draft's suggestion: 24 h).
KEY_LIFETIME = 24 * 3600
#: Seconds a reservation holds while its request runs; a host that died mid-request frees its
#: keys after this.
IN_FLIGHT_LEASE = 600
#: Idempotency keys one owner (a user, an application password, a client address) keeps at
#: most: rows an anonymous client can make are bounded (a retry comes within minutes; the
#: oldest of a thousand finished keys is long past needing one).
KEYS_PER_OWNER = 1000
#: Expired rows deleted at most per write (bounded work on the request path).
CLEANUP_BATCH = 100

GUARDS_SCHEMA: tuple[Step, ...] = (
    "CREATE TABLE idempotency_keys ("
    " owner TEXT NOT NULL,"
    " idem_key TEXT NOT NULL,"
    " fingerprint TEXT NOT NULL,"
    " answer TEXT,"
    " expires BIGINT NOT NULL,"
    " PRIMARY KEY (owner, idem_key))",
    "CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires)",
    "CREATE TABLE rate_limit_counts ("
    " bucket TEXT NOT NULL,"
    " window_start BIGINT NOT NULL,"
    " hits BIGINT NOT NULL,"
    " expires BIGINT NOT NULL,"
    " PRIMARY KEY (bucket, window_start))",
    "CREATE INDEX rate_limit_counts_expires ON rate_limit_counts (expires)",
)


class StoredGuards:
    """Idempotency records and rate-limit counters in ``store`` (migrated on creation);
    ``clock`` gives the time in seconds (the App's)."""

    def __init__(self, store: Store, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock
        #: Idempotency keys one owner keeps at most (see the module).
        self.keys_per_owner = KEYS_PER_OWNER
        store.migrate("request_guards", GUARDS_SCHEMA)

    # -- idempotency keys ------------------------------------------------------------------

    def reserve_key(self, owner: str, key: str, fingerprint: str) -> tuple[KeyState, str | None]:
        """Reserve (owner, key) for a request whose fingerprint is ``fingerprint``.

        Answers ``("reserved", None)`` when this call took the key (the request may run),
        ``("done", answer)`` with the stored answer of a finished request with the same
        fingerprint, ``("in_flight", None)`` while that request runs, and
        ``("mismatch", None)`` for a key first used with another fingerprint, and
        ``("full", None)`` when the owner holds :attr:`keys_per_owner` keys all in flight.
        """
        now = int(self.clock())
        with self.store.transaction() as conn:
            conn.execute(
                "DELETE FROM idempotency_keys WHERE owner = ? AND idem_key = ? AND expires <= ?",
                (owner, key, now),
            )
            inserted = conn.execute(
                "INSERT INTO idempotency_keys (owner, idem_key, fingerprint, answer, expires)"
                " VALUES (?, ?, ?, NULL, ?) ON CONFLICT (owner, idem_key) DO NOTHING",
                (owner, key, fingerprint, now + IN_FLIGHT_LEASE),
            ).rowcount
            if inserted == 1:
                self._clean(conn, "idempotency_keys", "owner, idem_key", now)
                if not self._bounded(conn, owner, key):
                    return "full", None
                return "reserved", None
            row = conn.execute(
                "SELECT fingerprint, answer FROM idempotency_keys WHERE owner = ? AND idem_key = ?",
                (owner, key),
            ).fetchone()
        if row is None:  # pragma: no cover - deleted between the statements of one block
            return "in_flight", None
        if row[0] != fingerprint:
            return "mismatch", None
        if row[1] is None:
            return "in_flight", None
        return "done", str(row[1])

    def _bounded(self, conn: Any, owner: str, key: str) -> bool:
        """Keep ``owner``'s rows within :attr:`keys_per_owner` after ``key`` was inserted:
        its oldest finished keys are deleted; when those are not enough, ``key`` is, and the
        answer is False."""
        held = int(
            conn.execute(
                "SELECT COUNT(*) FROM idempotency_keys WHERE owner = ?", (owner,)
            ).fetchone()[0]
        )
        over = held - max(1, int(self.keys_per_owner))
        if over <= 0:
            return True
        deleted = conn.execute(
            "DELETE FROM idempotency_keys WHERE (owner, idem_key) IN"
            " (SELECT owner, idem_key FROM idempotency_keys"
            " WHERE owner = ? AND answer IS NOT NULL ORDER BY expires LIMIT ?)",
            (owner, over),
        ).rowcount
        if deleted >= over:
            return True
        conn.execute("DELETE FROM idempotency_keys WHERE owner = ? AND idem_key = ?", (owner, key))
        return False

    def store_answer(self, owner: str, key: str, answer: str) -> None:
        """Keep the finished request's ``answer`` under its key for :data:`KEY_LIFETIME`."""
        expires = int(self.clock()) + KEY_LIFETIME
        with self.store.transaction() as conn:
            conn.execute(
                "UPDATE idempotency_keys SET answer = ?, expires = ?"
                " WHERE owner = ? AND idem_key = ?",
                (answer, expires, owner, key),
            )

    def release_key(self, owner: str, key: str) -> None:
        """Forget a reservation whose request failed, so a retry can run."""
        with self.store.transaction() as conn:
            conn.execute(
                "DELETE FROM idempotency_keys WHERE owner = ? AND idem_key = ? AND answer IS NULL",
                (owner, key),
            )

    # -- rate limits -------------------------------------------------------------------------

    def count_request(self, bucket: str, window: int) -> tuple[int, int]:
        """Count one request in ``bucket``'s current fixed window of ``window`` seconds:
        the count including this one, and the seconds until the window ends."""
        now = self.clock()
        start = int(now // window * window)
        with self.store.transaction() as conn:
            row = conn.execute(
                "INSERT INTO rate_limit_counts (bucket, window_start, hits, expires)"
                " VALUES (?, ?, 1, ?) ON CONFLICT (bucket, window_start)"
                " DO UPDATE SET hits = rate_limit_counts.hits + 1 RETURNING hits",
                (bucket, start, start + window),
            ).fetchone()
            hits = int(row[0])
            if hits == 1:  # a new window: the old ones of every bucket may go
                self._clean(conn, "rate_limit_counts", "bucket, window_start", int(now))
        return hits, max(1, start + window - int(now))

    def _clean(self, conn: Any, table: str, key: str, now: int) -> None:
        """Delete at most :data:`CLEANUP_BATCH` expired rows of ``table`` (primary key
        ``key``; both are constants of this module). On PostgreSQL rows another host is
        deleting are skipped: two cleanups never wait on (or deadlock with) each other."""
        skip = " FOR UPDATE SKIP LOCKED" if self.store.dialect == "postgresql" else ""
        conn.execute(
            f"DELETE FROM {table} WHERE ({key}) IN"
            f" (SELECT {key} FROM {table} WHERE expires <= ? LIMIT {CLEANUP_BATCH}{skip})",
            (now,),
        )
