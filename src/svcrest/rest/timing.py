"""``Server-Timing`` on REST answers, for ``App(server_timing=True)`` (off by default: it
reveals how long authentication and the handler took, which may help an attacker time a
password or token check).

The line names three parts, in milliseconds with three decimals (W3C Server Timing):
``auth`` (from the pipeline's start through authentication), ``dispatch`` (routing,
permission, the handler and the dispatch filters) and ``total`` (the whole REST pipeline,
the answer encoded).
"""

from __future__ import annotations

__all__ = ["server_timing_line"]


def server_timing_line(
    started: float, authenticated: float, dispatched: float, ended: float
) -> tuple[str, str]:
    """The ``Server-Timing`` header line of times read from ``time.perf_counter``."""
    auth = (authenticated - started) * 1000
    dispatch = (dispatched - authenticated) * 1000
    total = (ended - started) * 1000
    return (
        "Server-Timing",
        f"auth;dur={auth:.3f}, dispatch;dur={dispatch:.3f}, total;dur={total:.3f}",
    )
