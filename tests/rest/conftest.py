"""What the change-feed tests of this directory share (``test_change_feed.py``,
``test_change_streams.py``, ``test_change_feed_shared.py``, ``test_controller_changes.py``): a
clock the test moves, starting at :data:`T0`, and a site of tasks on it (the ``site``
fixture; a file that wants other stream timings overrides it, asking for this one)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from svcrest.store.changes import encode_cursor
from tests.rest.test_store_collection import Site

#: The clock's time when a test starts (Unix seconds).
T0 = 1_000_000.0


class Clock:
    """A clock the test moves (``now``)."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def cursor(seq: int, at: float = T0) -> str:
    """The cursor of change ``seq`` issued at ``at``."""
    return encode_cursor(seq, at)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def site(store_location: str | None, clock: Clock) -> Iterator[Site]:
    made = Site(store_location, clock=clock)
    yield made
    made.app.store.close()
