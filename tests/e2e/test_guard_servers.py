"""Idempotency keys and rate limits over real servers: a retry after a connection broken
once the write committed replays the answer (one row); 30 concurrent clients of two hosts
on one PostgreSQL database against ``limit=10`` get exactly 10 answers."""

from __future__ import annotations

import base64
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
from tests.processes import STOP_TIMEOUT, port_free, stop_servers

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
                start_new_session=True,  # its workers in its process group: stopped with it
            )
            started.append((port, process))
        for port, process in started:
            wait_for_port(port, process, timeout=60)
        yield [f"http://127.0.0.1:{port}" for port, _ in started]
    finally:
        stopped = stop_servers([process for _, process in started], STOP_TIMEOUT)
        errors = [process.communicate(timeout=10)[1] for _, process in started]
    assert all(stopped), errors
    assert all(port_free(port) for port, _ in started)


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


def test_a_batch_with_made_up_authorization_stays_within_the_limit(tmp_path: Path) -> None:
    """A logged-in user's 25 batch requests, each with an Authorization of its own, through
    a limit of 10: 10 pass (each made-up header was a fresh bucket: 25 of 25 passed), and
    the other spellings of the user's own header share the user's bucket."""
    from svcrest import App
    from svcrest.auth.passwords import ScryptParams

    db = str(tmp_path / "svcrest.db")
    site = App("http://127.0.0.1:8000", store=db)
    site.users.password_params = ScryptParams(n=16, r=1, p=1)
    user = site.users.create("eve", "eve-password")
    password, _ = site.users.create_application_password(user.id, "batcher")
    site.store.close()
    token = base64.b64encode(f"eve:{password}".encode()).decode()
    requests = [
        {
            "path": "/guard/v1/limited-writes",
            "headers": {"Authorization": f"Basic {base64.b64encode(f'x{n}:y'.encode()).decode()}"},
        }
        for n in range(25)
    ]
    with _serving(db) as (url,), httpx.Client(base_url=url) as client:
        answer = client.post(
            "/svc-json/batch/v1",
            json={"requests": requests},
            headers={"Authorization": f"Basic {token}"},
        )
        assert answer.status_code == 207
        statuses = [slot["status"] for slot in answer.json()["responses"]]
        assert statuses == [201] * 10 + [429] * 15
        for spelling in (f"basic {token}", f"BASIC   {token}"):
            alone = client.post(
                "/svc-json/guard/v1/limited-writes", headers={"Authorization": spelling}
            )
            assert alone.status_code == 429
