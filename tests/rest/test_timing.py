"""The ``Server-Timing`` line (``svcrest.rest.timing``)."""

from __future__ import annotations

from svcrest.rest.timing import server_timing_line


def test_the_line_names_three_parts_in_milliseconds() -> None:
    assert server_timing_line(10.0, 10.0015, 10.0040, 10.0052) == (
        "Server-Timing",
        "auth;dur=1.500, dispatch;dur=2.500, total;dur=5.200",
    )


def test_instant_parts_are_zero() -> None:
    assert server_timing_line(3.0, 3.0, 3.0, 3.0) == (
        "Server-Timing",
        "auth;dur=0.000, dispatch;dur=0.000, total;dur=0.000",
    )
