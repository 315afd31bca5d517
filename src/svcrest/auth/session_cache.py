"""A bounded cache of verified login sessions, invalidated across hosts (docs/guides/many-hosts.md).

A cookie check reads the user and the session from the store; on PostgreSQL that is a round
trip to the server per request. :class:`SessionCache` keeps what such a read found for a valid
session (the user, their password's cookie fragment and the session's expiration), so later
requests with the same cookie skip the read, but only while the store's notification channel
(``NOTIFY``/``LISTEN``) tells this process about every change that could revoke it.

SECURITY: why no entry outlives a revocation.

- Every write that can revoke a session or change what a cookie check returns (a logout,
  ending all sessions, a password change, a deleted user, a role change) calls
  :func:`announce` inside its transaction: PostgreSQL delivers the notification to every
  listening connection when, and only when, that transaction commits, in commit order.
- Before every look-up, :meth:`SessionCache.lookup` drains the listener's socket (a
  non-blocking read, no round trip) and drops the entries of each user named.
- Delivery takes time (microseconds, milliseconds on a loaded machine), so the drain alone
  could miss a revocation committed just before the request. Hence a lease: each process
  pings its listener connection (``SELECT 1``, one round trip: no commit, no transaction id,
  no notification to anyone) every ``lease / 3`` seconds while its cache is in use, and
  trusts the cache only while the newest ping answered was sent less than ``lease`` seconds
  ago: every notification committed before a ping was sent reaches the listener before the
  ping's answer (:mod:`svcrest.store.pg_listen`), so every revocation committed before
  then has been applied. A revoking write waits
  ``lease`` seconds after its commit (:func:`settle`) before it returns, or before its
  request is answered when it runs on an event loop; inside an outer transaction (an atomic
  batch) the wait follows that transaction's commit (``after_commit``): any request that
  starts afterwards, on any host, either sees a heartbeat sent after the revocation's commit
  (and so the revocation itself) or does not trust its cache.
- A read that started before an invalidation is applied is not cached (the generation
  check of :meth:`SessionCache.put`): it may have seen the row before the change.
- While the listener is not listening (its connection broke, or the network went silent)
  pings stop being answered and the lease runs out; a broken connection also forgets
  everything, and so does listening anew (a new epoch: notifications may have been lost).
- The cost does not grow with the number of processes: a process pings only its own
  listener, and is sent only the revocations. While its cache is unused the pings stop and
  the same thread drains the listener once a second, so an idle process never holds back
  PostgreSQL's notification queue (a listener that is not read stops its backend, and a
  full queue fails every notifying commit).
- Each hit still checks the session's expiration against the clock, and the HMAC of the
  cookie; entries are forgotten after ``max_age`` seconds anyway.

A store without a channel (SQLite) gets no cache: :func:`open_session_cache` returns None.
Writes made behind svcrest's back (SQL typed by hand) must ``NOTIFY svcrest_auth, '*'`` and
wait the lease (50 ms) before a revocation is sure to apply everywhere.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

from svcrest.bounded import BoundedDict
from svcrest.http.user import User
from svcrest.store.base import Connection, Listener, NotifyingStore, Store, StoreError

__all__ = [
    "CHANNEL",
    "DEFAULT_MAX_AGE",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_ENTRIES",
    "LEASE",
    "SETTLE_UNTIL",
    "CachedSession",
    "SessionCache",
    "announce",
    "open_session_cache",
    "settle",
    "wait_settled",
]

_log = logging.getLogger("svcrest.auth")

#: The notification channel of auth changes; a payload is a user id, or ``*`` for everyone.
CHANNEL = "svcrest_auth"
_EVERYONE = "*"
#: Default bounds: entries, approximate bytes, and seconds an entry is trusted at most.
DEFAULT_MAX_ENTRIES = 10_000
DEFAULT_MAX_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_AGE = 60.0
#: Seconds a cache trusts its entries after sending the newest heartbeat it received back;
#: also how long a revoking write waits after its commit.
LEASE = 0.05
#: Seconds without a look-up after which a cache stops pinging (it then drains its listener
#: every ``_DRAIN`` seconds).
_IDLE = 2.0
_DRAIN = 1.0
#: The payload prefix of the heartbeats older versions sent on the channel (ignored).
_HEARTBEAT = "hb:"
#: What an entry costs beyond its strings (objects, dict slots, the key tuple), roughly.
_ENTRY_OVERHEAD = 600

Key = tuple[str, str]


def announce(store: Store, conn: Connection, user_id: int | None) -> None:
    """Inside a write transaction of ``store``: tell every host, at commit, that the
    sessions or the record of ``user_id`` (None: of every user) changed. Nothing to do on a
    store without a notification channel (no host caches sessions there)."""
    if isinstance(store, NotifyingStore):
        store.notify(conn, CHANNEL, _EVERYONE if user_id is None else str(int(user_id)))


#: The monotonic time before which the current request's answer must not leave (a revoking
#: write deferred its wait, see :func:`settle`); per request, as every asyncio task has its
#: own context.
SETTLE_UNTIL: ContextVar[float] = ContextVar("svcrest_settle_until", default=0.0)


def settle(store: Store) -> None:
    """After a write that called :func:`announce` has committed: wait out the lease, so that
    no host trusts a cache entry the write revoked from now on (see the module docstring).
    Nothing to do on a store without a notification channel.

    PERF: on a thread that runs an event loop (an ASGI request handled on the loop) a sleep
    would hold every other request of the process, so the wait is deferred instead: the
    request's answer is held until the lease has passed (:func:`wait_settled`, awaited by
    the one entry point before it answers). The revocation is just as sure to apply from the
    client's next request on, which cannot start before it has the answer."""
    if not isinstance(store, NotifyingStore):
        return
    if store.in_block():
        # SECURITY: inside an outer transaction (an atomic batch) the notification is sent
        # only when that transaction commits: the wait starts then, not now.
        store.after_commit(_SettleAfterCommit(store))
        return
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop on this thread: sleeping holds only this caller
        time.sleep(LEASE)
        return
    SETTLE_UNTIL.set(max(SETTLE_UNTIL.get(), time.monotonic() + LEASE))


@dataclass(frozen=True, slots=True)
class _SettleAfterCommit:
    """:func:`settle` for ``store``, run when its outermost block has committed; equal for
    the same store, so several revocations in one transaction wait once."""

    store: Store

    def __call__(self) -> None:
        settle(self.store)


async def wait_settled() -> None:
    """Wait until the lease of every revoking write this request deferred has passed
    (returns at once, with no wait, when there was none)."""
    until = SETTLE_UNTIL.get()
    if until:
        delay = until - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)


@dataclass(frozen=True, slots=True)
class CachedSession:
    """What a cookie check read for a valid session: the user, the cookie key fragment of
    their password hash, and the session's expiration (Unix seconds)."""

    user: User
    fragment: str
    expiration: int


@dataclass(slots=True)
class _Entry:
    session: CachedSession
    size: int
    stored: float


def _size(key: Key, session: CachedSession) -> int:
    user = session.user
    strings = (*key, user.login, user.display_name, session.fragment, *user.roles)
    return _ENTRY_OVERHEAD + sum(len(text) for text in strings)


def _entry_size(key: Key, entry: _Entry) -> int:
    return entry.size


class SessionCache:
    """Verified sessions keyed by (cookie login, token hash), trusted only while
    ``listener`` listens and a ping of it sent less than ``lease`` seconds ago was
    answered; at most ``max_entries`` entries and about ``max_bytes`` bytes (least recently
    used go first), each for at most ``max_age`` seconds of ``monotonic``. Thread-safe; the
    pings go from a daemon thread started with the cache and ending with the listener, which
    drains the listener while the cache is idle (without ``heartbeat_thread``, pings are
    sent only when :meth:`send_heartbeat` is called: tests drive it)."""

    def __init__(
        self,
        listener: Listener,
        *,
        lease: float = LEASE,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_age: float = DEFAULT_MAX_AGE,
        monotonic: Callable[[], float] = time.monotonic,
        heartbeat_thread: bool = True,
    ) -> None:
        if max_entries < 1 or max_bytes < 1 or max_age <= 0 or lease <= 0:
            raise ValueError("a session cache needs positive bounds")
        self._listener = listener
        self.lease = lease
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_age = max_age
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._entries: BoundedDict[Key, _Entry] = BoundedDict(
            max_entries, max_bytes, _entry_size, self._unindex
        )
        self._by_user: dict[int, set[Key]] = {}
        self._generation = 0
        # The listener's epoch when this cache last looked (heartbeats sent in it count).
        self._epoch = listener.epoch
        self._listening = True
        # Pings: the send time of each one in flight, the newest send time answered (the
        # horizon), the time of the last look-up.
        self._sequence = itertools.count(1)
        self._in_flight: dict[int, float] = {}
        self._horizon = float("-inf")
        self._last_used = float("-inf")
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        #: Look-ups since the cache was made: found (``hits``), not found (``misses``) while
        #: the cache was trusted, and made while it was not (``untrusted``: not listening,
        #: or the lease ran out). Read by the admin port's metrics.
        self.hits = 0
        self.misses = 0
        self.untrusted = 0
        if heartbeat_thread:
            self._start_heartbeats()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size_bytes(self) -> int:
        """The approximate bytes the entries hold."""
        return self._entries.size_bytes

    @property
    def listening(self) -> bool:
        """Whether the last look-up found the listener listening."""
        return self._listening

    @property
    def trusted(self) -> bool:
        """Whether the last look-up could trust the cache (listening, lease held)."""
        return self._listening and self._monotonic() - self._horizon <= self.lease

    def invalidations(self) -> int | None:
        """A number that moves with every invalidation this cache applies (a revocation
        on any host), once those received are applied; None while its listener is not
        listening (anything may have been revoked meanwhile)."""
        with self._lock:
            self._sync()
            return self._generation if self._listening else None

    def lookup(self, key: Key) -> tuple[CachedSession | None, int]:
        """The trusted entry of ``key`` (or None) and a ticket for :meth:`put`, after
        applying every notification already received."""
        with self._lock:
            now = self._monotonic()
            if now - self._last_used > _IDLE:
                self._wake.set()  # the pings were stopped: start them again now
            self._last_used = now
            self._sync()
            if not self._listening:
                self.untrusted += 1
                return None, -1
            # SECURITY: only within the lease is every revocation committed before this
            # request known to have been applied (see the module docstring).
            if now - self._horizon > self.lease:
                self._wake.set()
                self.untrusted += 1
                return None, self._generation
            entry = self._entries.entries.get(key)
            if entry is None:
                self.misses += 1
                return None, self._generation
            if now - entry.stored > self.max_age:
                self._entries.remove(key)
                self.misses += 1
                return None, self._generation
            self._entries.refresh(key)
            self.hits += 1
            return entry.session, self._generation

    def put(self, key: Key, ticket: int, session: CachedSession) -> None:
        """Remember ``session`` under ``key`` when nothing was invalidated since the
        :meth:`lookup` that gave ``ticket`` (the read may predate the invalidation)."""
        with self._lock:
            self._sync()
            # SECURITY: an invalidation applied since the ticket may concern this read.
            if not self._listening or ticket != self._generation:
                return
            entry = _Entry(session, _size(key, session), self._monotonic())
            if self._entries.put(key, entry):
                self._by_user.setdefault(session.user.id, set()).add(key)

    def discard(self, key: Key) -> None:
        """Forget ``key`` (its session was found expired)."""
        with self._lock:
            self._entries.remove(key)

    def clear(self) -> None:
        """Forget every entry; reads in flight are not cached."""
        with self._lock:
            self._clear()

    # -- under the lock --------------------------------------------------------------------------

    def _sync(self) -> None:
        """Apply what the listener received; forget everything when it is not listening or
        listens anew (notifications may have been lost)."""
        # SECURITY: the answered ping is read before the payloads are drained: everything
        # committed before it was sent is then among what poll() returns, or applied before.
        answered = self._listener.answered
        payloads = self._listener.poll()
        if payloads is None:
            if self._listening or self._entries:
                self._clear()
            self._listening = False
            self._in_flight.clear()
            self._horizon = float("-inf")
            return
        epoch = self._listener.epoch
        if epoch != self._epoch:
            self._clear()
            self._epoch = epoch
            self._listening = True
            # Heartbeats sent before this epoch's LISTEN prove nothing.
            self._horizon = float("-inf")
            self._in_flight.clear()
        for payload in payloads:
            if payload.startswith(_HEARTBEAT):
                continue  # a heartbeat of an older version's process
            self._generation += 1
            if payload.isdigit():
                for key in tuple(self._by_user.get(int(payload), ())):
                    self._entries.remove(key)
            else:  # "*", or anything unexpected: forget everyone
                self._clear()
        if answered and self._in_flight:
            self._heartbeat_back(answered)

    def _heartbeat_back(self, number: int) -> None:
        """Ping ``number`` was answered: everything committed before it was sent has been
        applied; earlier pings still in flight are moot."""
        sent = self._in_flight.get(number)
        if sent is None:
            return
        self._horizon = max(self._horizon, sent)
        for earlier in [n for n in self._in_flight if n <= number]:
            del self._in_flight[earlier]

    def _start_heartbeats(self) -> None:
        self._thread = threading.Thread(
            target=self._heartbeats, name="svcrest-session-cache", daemon=True
        )
        self._thread.start()

    # -- heartbeats ----------------------------------------------------------------------------

    def send_heartbeat(self) -> bool:
        """Ping the listener once (a round trip; every notification committed before it is
        then received); whether it was answered."""
        number = next(self._sequence)
        with self._lock:
            self._in_flight[number] = self._monotonic()
            if len(self._in_flight) > 64:  # lost ones (a broken listener) are dropped
                del self._in_flight[min(self._in_flight)]
        return self._listener.ping(number)

    def _heartbeats(self) -> None:
        """Ping every third of the lease while the cache is in use, else drain the listener
        every ``_DRAIN`` seconds; end when the listener is closed."""
        while not self._listener.closed:
            if self._monotonic() - self._last_used > _IDLE:
                with self._lock:
                    self._sync()  # SECURITY: an unread listener holds back the queue
                self._wake.wait(_DRAIN)
                self._wake.clear()
                continue
            try:
                answered = self.send_heartbeat()
            except Exception as exc:  # never let the thread die: the lease runs out instead
                _log.warning("session cache ping failed: %s", exc)
                answered = False
            self._wake.wait(self.lease / 3 if answered else self.lease)
            self._wake.clear()

    def _unindex(self, key: Key, entry: _Entry) -> None:
        """Called by the entries for each one that leaves them (replaced, evicted, removed)."""
        keys = self._by_user.get(entry.session.user.id)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_user[entry.session.user.id]

    def _clear(self) -> None:
        self._entries.clear()
        self._by_user.clear()
        self._generation += 1


def open_session_cache(store: Store, max_entries: int) -> SessionCache | None:
    """A session cache listening on ``store``'s channel, or None when ``max_entries`` is
    not positive or the store has no notification channel (SQLite)."""
    if max_entries < 1 or not isinstance(store, NotifyingStore):
        return None
    try:
        listener = store.listen(CHANNEL)
    except StoreError as exc:  # no way to listen (behind PgBouncer without a listen URL)
        _log.warning("no session cache: %s", exc)
        return None
    return SessionCache(listener, max_entries=max_entries)
