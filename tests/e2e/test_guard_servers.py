"""Idempotency keys and rate limits over real servers: a retry after a connection broken
once the write committed replays the answer (one row); 30 concurrent clients of two hosts
on one PostgreSQL database against ``limit=10`` get exactly 10 answers."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_e2e_server import free_port, wait_for_port
from tests.pg import PostgresServer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = "tests.e2e.guard_site:register"
ITEMS = "/svc-json/guard/v1/items"
LIMITED = "/svc-json/guard/v1/limited"


@contextlib.contextmanager
def _serving(db: str, count: int = 1) -> Iterator[list[str]]:
    """``count`` ``svcrest serve`` processes of ``db`` with the guard plugin."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started: list[tuple[int, subprocess.Popen[str]]] = []
    try:
        for _ in range(count):
            port = free_port()
            command = [sys.executable, "-m", "svcrest", "serve", "--port", str(port)]
            command += ["--db", db, "--plugin", PLUGIN, "--no-access-log"]
            process = subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            started.append((port, process))
        for port, process in started:
            wait_for_port(port, process, timeout=60)
        yield [f"http://127.0.0.1:{port}" for port, _ in started]
    finally:
        for _, process in started:
            process.terminate()
        for _, process in started:
            try:
                process.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()


def _count(client: httpx.Client) -> int:
    return int(client.get(ITEMS).json()["count"])


def test_a_retry_after_a_broken_connection_replays_the_answer(tmp_path: Path) -> None:
    body = json.dumps({"title": "once", "linger": 1.5}).encode()
    key = '"3f1c9a52-7b0e-4f7e-9a53-2d8c0e6b1f44"'
    with _serving(str(tmp_path / "svcrest.db")) as (url,), httpx.Client(base_url=url) as client:
        port = int(url.rsplit(":", 1)[1])
        raw = socket.create_connection(("127.0.0.1", port))
        head = (
            f"POST {ITEMS} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: application/json\r\nIdempotency-Key: {key}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        raw.sendall(head.encode() + body)
        deadline = time.monotonic() + 20
        while _count(client) == 0:  # committed, the answer not sent yet (it lingers)
            assert time.monotonic() < deadline, "the write never committed"
            time.sleep(0.05)
        # Kill the connection (a reset, not a clean close) before the answer comes.
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        raw.close()
        headers = {"Content-Type": "application/json", "Idempotency-Key": key}
        statuses = []
        while True:
            retry = client.post(ITEMS, content=body, headers=headers)
            statuses.append(retry.status_code)
            if retry.status_code != 409:
                break
            assert retry.json()["code"] == "rest_idempotency_in_flight"
            assert time.monotonic() < deadline, statuses
            time.sleep(0.1)
        assert retry.status_code == 201, retry.text
        assert retry.headers["idempotent-replayed"] == "true"
        assert retry.json() == {"id": 1, "title": "once"}
        assert _count(client) == 1
        other = client.post(ITEMS, content=body.replace(b"once", b"twice"), headers=headers)
        assert other.status_code == 422
        assert _count(client) == 1


def test_a_rate_limit_is_exact_across_two_hosts(postgres: PostgresServer) -> None:
    db = postgres.new_database()
    with _serving(db, count=2) as urls:
        # Each host serves once first: its plugin and the store are ready.
        warm = [httpx.get(url + "/svc-json/guard/v1") for url in urls]
        assert [answer.status_code for answer in warm] == [200, 200]

        def one(index: int) -> tuple[int, str]:
            answer = httpx.get(urls[index % 2] + LIMITED, timeout=30)
            return answer.status_code, answer.headers.get("ratelimit", "")

        with ThreadPoolExecutor(max_workers=30) as pool:
            answers = list(pool.map(one, range(30)))
    statuses = sorted(status for status, _ in answers)
    assert statuses == [200] * 10 + [429] * 20
    remaining = sorted(value.split(";")[1] for status, value in answers if status == 200)
    assert remaining == sorted(f"r={n}" for n in range(10))


@pytest.fixture(autouse=True)
def _no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx must talk to the local servers directly."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
