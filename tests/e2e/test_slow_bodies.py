"""Slow and structure-heavy request bodies over real servers: ``svcrest serve`` with a 2 s
body time-out on the default pair (granian ASGI), granian WSGI and uvicorn ASGI.

Twelve clients announcing a 1000-byte body and sending a byte every 0.3 s (more than
granian's WSGI threads) must not stop the site: a GET of the index is answered at once
meanwhile, and the slow clients are answered 408 after the time-out (on WSGI, beyond the
share of the slow-reader places one client address may hold, 503 at once). A client posting 9 MiB
bodies of empty arrays back to back (refused 413 before parsing) must not slow the others
down either."""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from svcrest.serve.bodies import address_share, slow_body_readers
from svcrest.serve.launcher import granian_threads
from tests.e2e.test_serving_bounds import Server, _serve

pytestmark = pytest.mark.slow

BODY_TIMEOUT = 2.0
TRICKLE = 0.3  # seconds between two bytes of a slow body
# On WSGI a read may ask for up to 8 bytes while the bytes seem to flow (svcrest.serve.bodies):
# a slow body is answered at worst 8 byte intervals past the time-out.
LATEST_408 = BODY_TIMEOUT + 8 * TRICKLE + 0.5
SLOW_CLIENTS = 12
#: The reading places one client address may hold on a granian WSGI worker (of its default
#: threads, half may read bodies; one address may hold half of those).
SLOW_READERS = address_share(slow_body_readers(granian_threads()))
INDEX = "/svc-json/"
NOTES = "/svc-json/demo/v1/notes"


@pytest.fixture(
    scope="module",
    params=[None, ("granian", "wsgi"), ("uvicorn", "asgi"), ("granian", "rsgi")],
    ids=["default-granian-asgi", "granian-wsgi", "uvicorn-asgi", "granian-rsgi"],
)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    choice = ["--body-timeout", str(BODY_TIMEOUT)]
    if request.param is None:
        name, interface = "granian", "asgi"
    else:
        name, interface = request.param
        choice += ["--server", name, "--interface", interface]
    directory: Path = tmp_path_factory.mktemp(f"{name}-{interface}")
    for started in _serve(directory, "def register(app):\n    pass\n", name, interface, choice):
        if request.param is None:
            assert "with granian (asgi)" in started.log_text()
        # The worker has loaded the site and answered once (the first answer builds caches).
        assert httpx.get(started.url + INDEX, timeout=30).status_code == 200
        yield started


async def _slow_body(port: int) -> tuple[float, bytes, bool]:
    """Announce a 1000-byte JSON body and send a byte every 0.3 s: the seconds until the
    server answered (or closed), its answer, and whether it closed the connection within 1.5 s
    of its answer."""
    started = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = f"POST {NOTES} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    writer.write(head.encode() + b"Content-Length: 1000\r\n\r\n")
    try:
        for _ in range(100):
            try:
                writer.write(b" ")
                await writer.drain()
                answer = await asyncio.wait_for(reader.read(65536), timeout=TRICKLE)
            except TimeoutError:
                continue
            except OSError:
                return time.monotonic() - started, b"", True
            answered = time.monotonic() - started
            if not answer:
                return answered, b"", True
            answer = await _whole_answer(reader, answer)
            return answered, answer, await _closed_soon(reader, writer)
        raise AssertionError("the server kept a slow body for 30 s")
    finally:
        writer.close()


async def _whole_answer(reader: asyncio.StreamReader, answer: bytes) -> bytes:
    """``answer`` read on to the end of its body (its head announces the length)."""
    while b"\r\n\r\n" not in answer:
        answer += await asyncio.wait_for(reader.read(65536), timeout=5)
    head, body = answer.split(b"\r\n\r\n", 1)
    [length] = [
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    ]
    while len(body) < length:
        body += await asyncio.wait_for(reader.read(65536), timeout=5)
    return head + b"\r\n\r\n" + body


async def _closed_soon(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        try:
            if not await asyncio.wait_for(reader.read(65536), timeout=0.3):
                return True
        except TimeoutError:
            pass
        except OSError:
            return True
        try:
            writer.write(b" ")
            await writer.drain()
        except OSError:
            return True
    return False


async def _slow_clients_and_a_probe(
    server: Server,
) -> tuple[list[tuple[float, bytes, bool]], list[float]]:
    slow = [asyncio.create_task(_slow_body(server.port)) for _ in range(SLOW_CLIENTS)]
    await asyncio.sleep(0.6)  # every slow client is in: its request is waiting for its body
    latencies = []
    async with httpx.AsyncClient(timeout=10) as client:
        for _ in range(5):
            sent = time.monotonic()
            response = await client.get(server.url + INDEX)
            assert response.status_code == 200
            latencies.append(time.monotonic() - sent)
            await asyncio.sleep(0.1)
    return await asyncio.gather(*slow), latencies


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def _error(answer: bytes) -> object:
    return orjson.loads(answer.split(b"\r\n\r\n", 1)[1])


def test_slow_bodies_are_answered_408_and_others_served(server: Server) -> None:
    results, latencies = asyncio.run(_slow_clients_and_a_probe(server))
    assert max(latencies) < 1.0, latencies
    timed_out = [result for result in results if result[1] and _status(result[1]) == 408]
    busy = [result for result in results if result[1] and _status(result[1]) == 503]
    expected_408 = SLOW_READERS if server.interface == "wsgi" else SLOW_CLIENTS
    assert (len(timed_out), len(busy)) == (expected_408, SLOW_CLIENTS - expected_408), results
    for seconds, answer, closed in timed_out:
        assert BODY_TIMEOUT - 0.2 <= seconds <= LATEST_408, results
        assert _error(answer) == {
            "code": "svc_body_timeout",
            "message": "The request body was not received within 2 seconds.",
            "data": {"status": 408, "body_timeout": 2.0},
        }
        if server.interface != "wsgi":  # ASGI, RSGI
            assert b"\r\nconnection: close\r\n" in answer.lower()
            assert closed, answer
    for seconds, answer, _ in busy:
        assert seconds < 1.5, results
        assert b"\r\nretry-after: 1\r\n" in answer.lower()
        assert _error(answer) == {
            "code": "svc_body_busy",
            "message": "Too many slow request bodies are being received; please try again shortly.",
            "data": {"status": 503},
        }
    # Served as before once they are gone.
    assert httpx.get(server.url + INDEX, timeout=5).status_code == 200


def test_structure_heavy_bodies_do_not_slow_others_down(server: Server) -> None:
    """50 GETs of the index while 9 MiB bodies of empty arrays are posted back to back: each
    body is refused 413 before parsing, and the GETs keep their usual latency."""
    body = b"[" + b",".join([b"[]"] * (9 * 1024 * 1024 // 3)) + b"]"
    stop = threading.Event()
    posted: list[int] = []
    failures: list[BaseException] = []

    def post_back_to_back() -> None:
        try:
            with httpx.Client(timeout=30) as client:
                while not stop.is_set():
                    response = client.post(
                        server.url + NOTES,
                        content=body,
                        headers={"Content-Type": "application/json"},
                    )
                    assert response.status_code == 413, response.text[:200]
                    assert response.json()["code"] == "rest_json_too_complex"
                    posted.append(response.status_code)
        except BaseException as exc:  # reported by the test
            failures.append(exc)

    with httpx.Client(timeout=10) as client:
        usual = []
        for _ in range(10):
            sent = time.monotonic()
            assert client.get(server.url + INDEX).status_code == 200
            usual.append(time.monotonic() - sent)
        poster = threading.Thread(target=post_back_to_back)
        poster.start()
        try:
            time.sleep(0.5)
            started = time.monotonic()
            latencies: list[float] = []
            # 50 GETs at least, and until three bodies were refused: on a loaded machine the
            # GETs may finish before the poster has sent three 9 MiB bodies.
            while len(latencies) < 50 or (len(posted) < 3 and not failures):
                sent = time.monotonic()
                assert client.get(server.url + INDEX).status_code == 200
                latencies.append(time.monotonic() - sent)
                assert time.monotonic() - started < 60, (len(latencies), posted)
            took = (time.monotonic() - started) * 50 / len(latencies)
        finally:
            stop.set()
            poster.join(60)
    assert failures == []
    assert len(posted) >= 3, posted
    assert took < 25, took
    assert statistics.median(latencies) < max(0.25, 3 * statistics.median(usual)), (
        latencies,
        usual,
    )
