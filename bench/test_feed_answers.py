"""The raw writers of ``feed_latency.py``: their answers' framing and their request's bytes,
on canned bytes (``pytest bench/test_feed_answers.py``; no server needed)."""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from feed_latency import BOOKS, RawWriter, parse_answer, post_request

#: A 201 as uvicorn sends the books' POST (its head shortened; lower-case names).
CREATED = (
    b"HTTP/1.1 201 Created\r\ndate: Sun, 29 Nov 2026 06:01:17 GMT\r\nserver: uvicorn\r\n"
    b"content-type: application/json; charset=UTF-8\r\n"
    b'location: http://127.0.0.2:1/svc-json/shop/v1/books/1\r\netag: "1"\r\n'
    b"content-length: 23\r\n\r\n"
    b'{"id":1,"title":"rate"}'
)
CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5\r\nhello\r\n3;name=value\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n"
)


def test_an_answer_by_content_length_and_none_before_its_last_byte() -> None:
    assert parse_answer(CREATED) == (201, len(CREATED), False)
    assert [parse_answer(CREATED[:cut]) for cut in range(len(CREATED))] == [None] * len(CREATED)


def test_answers_back_to_back_are_framed_one_at_a_time() -> None:
    assert parse_answer(CREATED + CREATED[:30]) == (201, len(CREATED), False)
    assert parse_answer(bytearray(CREATED * 2)) == (201, len(CREATED), False)


def test_a_chunked_answer_ends_after_its_last_chunk_and_trailers() -> None:
    assert parse_answer(CHUNKED + b"HTTP/1.1") == (200, len(CHUNKED), False)
    assert [parse_answer(CHUNKED[:cut]) for cut in range(len(CHUNKED))] == [None] * len(CHUNKED)


def test_bodiless_answers_and_a_closing_server() -> None:
    assert parse_answer(b"HTTP/1.1 100 Continue\r\n\r\n" + CREATED) == (100, 25, False)
    assert parse_answer(b"HTTP/1.1 204 No Content\r\n\r\n") == (204, 27, False)
    closing = b"HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"
    assert parse_answer(closing) == (503, len(closing), True)
    old = b"HTTP/1.0 201 Created\r\nContent-Length: 0\r\n\r\n"
    assert parse_answer(old) == (201, len(old), True)
    kept = b"HTTP/1.0 201 Created\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"
    assert parse_answer(kept) == (201, len(kept), False)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"SSH-2.0-OpenSSH\r\n\r\n", "not an answer"),
        (b"HTTP/1.1 2x1 Created\r\nContent-Length: 0\r\n\r\n", "not an answer"),
        (b"HTTP/1.1 201 Created\r\nserver: x\r\n\r\n{}", "without a length"),
        (b"HTTP/1.1 201 Created\r\nContent-Length: -1\r\n\r\n", "without a length"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabcd\r\n", "CRLF"),
        (b"HTTP/1.1 201 Created\r\n" + b"x-pad: y\r\n" * 7000, "no answer's head"),
    ],
)
def test_bytes_that_are_no_answer_are_refused(data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_answer(data)


class Transport(asyncio.Transport):
    """Records what a protocol writes and whether it closed."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written.append(bytes(data))

    def close(self) -> None:
        self.closed = True


def test_a_writer_resolves_each_post_with_its_status_from_pieces() -> None:
    async def run() -> tuple[list[int], list[bytes], bool]:
        writer, transport = RawWriter(b"REQUEST"), Transport()
        writer.connection_made(transport)
        statuses = []
        for answer in (CREATED, CREATED.replace(b" 201 Created", b" 409 Conflict")):
            posted = writer.post()
            for piece in (answer[:10], answer[10:-1], answer[-1:]):
                writer.data_received(piece)
            statuses.append(await posted)
        return statuses, transport.written, transport.closed

    assert asyncio.run(run()) == ([201, 409], [b"REQUEST", b"REQUEST"], False)


def test_a_writer_fails_its_post_on_broken_bytes_and_on_a_lost_connection() -> None:
    async def run() -> tuple[str, str, bool]:
        writer, transport = RawWriter(b"REQUEST"), Transport()
        writer.connection_made(transport)
        posted = writer.post()
        writer.data_received(b"garbage\r\n\r\n")
        with pytest.raises(ValueError) as broken:
            await posted
        other = RawWriter(b"REQUEST")
        other.connection_made(Transport())
        pending = other.post()
        other.connection_lost(None)
        with pytest.raises(ConnectionError) as lost:
            await pending
        return str(broken.value), str(lost.value), transport.closed

    broken, lost, closed = asyncio.run(run())
    assert broken.startswith("not an answer") and "mid-request" in lost and closed


def test_the_request_is_the_bytes_httpx_sends() -> None:
    """The raw writers POST the same method, path, headers and body as the httpx ones."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        url = f"http://127.0.0.1:{server.getsockname()[1]}"
        seen: list[bytes] = []

        def answer() -> None:
            connection, _address = server.accept()
            with connection:
                data = b""
                while b"\r\n\r\n" not in data or not data.endswith(b"}"):
                    data += connection.recv(65536)
                seen.append(data)
                connection.sendall(b"HTTP/1.1 201 Created\r\ncontent-length: 0\r\n\r\n")

        thread = threading.Thread(target=answer)
        thread.start()
        with httpx.Client(base_url=url, timeout=10) as client:
            assert client.post(BOOKS, json={"title": "rate"}).status_code == 201
        thread.join(10)
    assert seen == [post_request(url)]
    assert b"\r\nContent-Length: 16\r\n" in seen[0]
    assert seen[0].endswith(b'\r\n\r\n{"title":"rate"}')
