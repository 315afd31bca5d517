"""Weighted header lists (Accept, Accept-Encoding)."""

from __future__ import annotations

import pytest

from svcrest.http.qvalues import MAX_ITEMS, q_weights


@pytest.mark.parametrize(
    ("header", "weights"),
    [
        ("gzip, br;q=0.5", {"gzip": 1.0, "br": 0.5}),
        ("Application/JSON;charset=utf-8;Q=0.8, */*;q=0", {"application/json": 0.8, "*/*": 0.0}),
        ("gzip;q=0.2, gzip;q=0.9", {"gzip": 0.2}),  # the first mention wins
        ("br;q=x, gzip;q=2, zstd;q=-1, deflate", {"deflate": 1.0}),  # unreadable: left out
        (" , ;q=1,", {}),
    ],
)
def test_weights(header: str, weights: dict[str, float]) -> None:
    assert q_weights(header) == weights


def test_only_the_first_items_are_read() -> None:
    header = ", ".join(f"x/{number}" for number in range(MAX_ITEMS + 5))
    assert list(q_weights(header)) == [f"x/{number}" for number in range(MAX_ITEMS)]
