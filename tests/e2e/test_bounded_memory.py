"""Memory stays flat under requests an anonymous client can make arbitrarily many and large.

A real ``svcrest serve`` in a subprocess receives 600 requests with distinct 100 KB
``Origin`` headers and 3,000 list reads with distinct 2 KB query strings; its resident
memory (``VmRSS``, the server's processes added up) must grow by less than 50 MB. Every
cache the server keeps is bounded in entries and bytes, so the growth is the allocator's,
not ours.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_e2e_server import free_port, wait_for_port
from tests.processes import GRACEFUL_TIMEOUT, STOP_TIMEOUT, port_free, stop_server

LIMIT_BYTES = 50 * 1024 * 1024


def _children(pid: int) -> list[int]:
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += [int(child) for child in (task / "children").read_text().split()]
    return children


def rss_bytes(pid: int) -> int:
    """The resident memory of ``pid`` and its descendants: granian serves from a worker
    process under its supervisor (uvicorn with one worker has no supervisor)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024 + sum(rss_bytes(child) for child in _children(pid))
    raise AssertionError("no VmRSS line")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    port = free_port()
    db = str(tmp_path_factory.mktemp("memory") / "site.db")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "svcrest",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--db",
            db,
            "--graceful-timeout",
            str(GRACEFUL_TIMEOUT),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        start_new_session=True,  # its worker in its process group: stopped with it
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}", process.pid
    finally:
        stopped = stop_server(process, STOP_TIMEOUT)
    assert stopped
    assert port_free(port)


def test_distinct_origins_and_query_strings_do_not_grow_the_server(
    served: tuple[str, int],
) -> None:
    base, pid = served
    notes = base + "/svc-json/demo/v1/notes"
    with httpx.Client(timeout=30) as client:
        # Warm up: routes compiled, caches filled with what a normal client sends.
        for index in range(200):
            assert client.get(notes, params={"page": "1", "q": str(index)}).status_code == 200
        before = rss_bytes(pid)
        for index in range(600):
            origin = f"https://{index:06d}.example/" + "a" * (100 * 1024)
            answer = client.get(notes, headers={"Origin": origin})
            assert answer.status_code == 200
            assert "access-control-allow-origin" not in answer.headers
        for index in range(3000):
            query = f"per_page=5&page=1&x{index}=" + "b" * 2048
            assert client.get(f"{notes}?{query}").status_code == 200
        after = rss_bytes(pid)
    assert after - before < LIMIT_BYTES, f"grew by {(after - before) / 2**20:.1f} MB"
