"""Change feeds behind real servers: ``svcrest serve`` with the books collection
(``tests/e2e/store_site.py``), read with ``httpx-sse`` as a client would.

- uvicorn and granian on ASGI: a write reaches a Server-Sent Events subscriber at once, with
  the usual header lines; JSON Lines; ``--max-streams`` answers 503 ``svc_streams_busy``
  past it, and a client that leaves gives its slot back; a long-poll is answered within a
  second of a commit.
- granian and uvicorn on WSGI: every ``Accept`` gets the long-poll JSON.
- A stopping server (SIGTERM to ``svcrest serve``, uvicorn and granian, one worker and two):
  an open stream ends at once and cleanly (its chunked body finished, Server-Sent Events
  after a last comment) and a waiting long-poll answers what it has, so the server exits
  within seconds instead of its 30 s graceful time-out; on WSGI (granian, one worker and
  two, and uvicorn) a client long-polling on one kept-alive connection gets its waiting
  long-poll answered at once with ``Connection: close``, and every process of the server
  is gone within seconds.
- Two uvicorn hosts on one PostgreSQL: a write on one reaches a subscriber (stream and
  long-poll) on the other, and revoking an application password on one ends the stream it
  opened on the other within 5 seconds.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from httpx_sse import connect_sse

from svcrest.serve.streams import STOPPING_COMMENT
from tests.e2e.test_e2e_server import free_port, wait_for_port
from tests.e2e.test_many_hosts import Host, admin_password, log_in, nonce_of, serving
from tests.pg import PostgresServer
from tests.processes import STOP_TIMEOUT, stop_server

BOOKS = "/svc-json/shop/v1/books"
CHANGES = f"{BOOKS}/changes"
PLUGIN = ["--plugin", "tests.e2e.store_site:register", "--no-demo"]

pytestmark = pytest.mark.slow


def _started(
    server: str, interface: str, workers: int, tmp_path: Path
) -> tuple[subprocess.Popen[str], int, str]:
    """``svcrest serve`` with the books site on a free port, in a session of its own (its
    workers in its process group, which the tests watch and end); the process, its port and
    its URL (not waited for)."""
    port = free_port()
    command = [sys.executable, "-m", "svcrest", "serve", "--server", server, "--port", str(port)]
    command += ["--interface", interface, "--workers", str(workers)]
    command += ["--db", str(tmp_path / "s.db"), *PLUGIN]
    process = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    return process, port, f"http://127.0.0.1:{port}"


def _stopped_log(process: subprocess.Popen[str]) -> str:
    """Stop a server of :func:`_started` (with its process group; at once when it stopped
    already) and read what it logged."""
    stop_server(process, STOP_TIMEOUT)
    assert process.stderr is not None
    log = process.stderr.read()
    process.stderr.close()
    return log


def _later(seconds: float, action: object) -> threading.Thread:
    """Run ``action()`` after ``seconds`` on a thread of its own (started)."""

    def run() -> None:
        time.sleep(seconds)
        action()  # type: ignore[operator]

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _write(base: str, title: str) -> None:
    with httpx.Client(base_url=base) as client:
        assert client.post(BOOKS, json={"title": title}).status_code == 201


@pytest.fixture(
    params=[("uvicorn", "asgi"), ("granian", "asgi"), ("granian", "rsgi")],
    ids=["uvicorn", "granian", "granian-rsgi"],
)
def asgi_host(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Host]:
    """A host serving streams: an ASGI server, or granian's RSGI."""
    server, interface = request.param
    options = ["--server", server, "--interface", interface, "--db", str(tmp_path / "s.db")]
    with serving([("127.0.0.1", [*options, *PLUGIN, "--max-streams", "1"], None)]) as found:
        yield found[0]


def test_a_write_reaches_a_subscriber_as_server_sent_events(asgi_host: Host) -> None:
    with httpx.Client(base_url=asgi_host.url, timeout=10) as client:
        with connect_sse(client, "GET", CHANGES) as source:
            response = source.response
            assert response.status_code == 200
            assert response.headers["content-type"] == "text/event-stream"
            assert response.headers["x-request-id"]
            assert "content-length" not in response.headers
            assert "etag" not in response.headers
            began = time.monotonic()
            writer = _later(0.2, lambda: _write(asgi_host.url, "Dune"))
            try:
                event = next(iter(source.iter_sse()))
            finally:
                writer.join()
            assert time.monotonic() - began < 2.0
            assert event.event == "created"
            assert event.json()["title"] == "Dune"
            assert event.id  # the cursor a reconnection sends as Last-Event-ID
        resumed = {"Last-Event-ID": event.id}
        _write(asgi_host.url, "Emma")
        # JSON Lines from the same cursor: the next change only
        with client.stream(
            "GET", CHANGES, headers={**resumed, "Accept": "application/jsonl"}
        ) as lines:
            assert lines.headers["content-type"] == "application/jsonl"
            entry = next(json.loads(line) for line in lines.iter_lines() if line.strip())
            assert (entry["event"], entry["data"]["title"]) == ("created", "Emma")


def test_max_streams_and_a_leaving_client_frees_its_slot(asgi_host: Host) -> None:
    with httpx.Client(base_url=asgi_host.url, timeout=10) as client:
        with connect_sse(client, "GET", CHANGES) as source:
            assert source.response.status_code == 200
            busy = client.get(CHANGES, headers={"Accept": "text/event-stream"})
            assert busy.status_code == 503
            assert busy.headers["retry-after"] == "5"
            assert busy.json()["code"] == "svc_streams_busy"
            # a long-poll does not count, and answers within a second of a commit
            began = time.monotonic()
            writer = _later(0.3, lambda: _write(asgi_host.url, "Ulysses"))
            try:
                polled = client.get(CHANGES, params={"wait": 10})
            finally:
                writer.join()
            assert polled.status_code == 200
            assert [c["data"]["title"] for c in polled.json()["changes"]] == ["Ulysses"]
            assert time.monotonic() - began < 1.3
        # the client left: its slot is free again (the server notices within moments)
        deadline = time.monotonic() + 5
        while True:
            with client.stream("GET", CHANGES, headers={"Accept": "text/event-stream"}) as again:
                if again.status_code == 200:
                    break
            assert time.monotonic() < deadline, "the slot was not given back"
            time.sleep(0.1)


@pytest.mark.parametrize("server", ["granian", "uvicorn"])
def test_wsgi_answers_every_accept_with_the_long_poll(server: str, tmp_path: Path) -> None:
    options = ["--server", server, "--interface", "wsgi", "--db", str(tmp_path / "s.db")]
    with (
        serving([("127.0.0.1", [*options, *PLUGIN], None)]) as found,
        httpx.Client(base_url=found[0].url, timeout=10) as client,
    ):
        for accept in ("text/event-stream", "application/jsonl"):
            answer = client.get(CHANGES, headers={"Accept": accept})
            assert answer.status_code == 200
            assert answer.headers["content-type"].startswith("application/json")
            assert set(answer.json()) == {"changes", "cursor"}


@pytest.mark.parametrize(
    ("server", "workers", "interface"),
    [
        ("uvicorn", 1, "asgi"),
        ("uvicorn", 2, "asgi"),
        ("granian", 1, "asgi"),
        ("granian", 2, "asgi"),
        ("granian", 1, "rsgi"),
        ("granian", 2, "rsgi"),
    ],
    ids=[
        "uvicorn",
        "uvicorn-2-workers",
        "granian",
        "granian-2-workers",
        "granian-rsgi",
        "granian-rsgi-2-workers",
    ],
)
def test_a_stopping_server_ends_its_streams_and_long_polls_at_once(
    server: str, workers: int, interface: str, tmp_path: Path
) -> None:
    process, port, url = _started(server, interface, workers, tmp_path)
    received: dict[str, bytes] = {}
    polled: list[httpx.Response] = []
    failures: list[BaseException] = []
    opened = threading.Event()

    def subscribe(kind: str) -> None:
        try:
            with (
                httpx.Client(base_url=url, timeout=60) as client,
                client.stream("GET", CHANGES, headers={"Accept": kind}) as answer,
            ):
                assert answer.status_code == 200
                body = b""
                for chunk in answer.iter_raw():  # raises when the body is cut short
                    body += chunk
                    opened.set()
                received[kind] = body
        except BaseException as exc:
            failures.append(exc)
            opened.set()

    def poll() -> None:
        try:
            with httpx.Client(base_url=url, timeout=60) as client:
                polled.append(client.get(CHANGES, params={"wait": 30}))
        except BaseException as exc:
            failures.append(exc)

    try:
        wait_for_port(port, process)
        _write(url, "before")
        readers = [
            threading.Thread(target=subscribe, args=(kind,))
            for kind in ("text/event-stream", "application/jsonl")
        ]
        readers.append(threading.Thread(target=poll))
        for reader in readers:
            reader.start()
            if reader.name != readers[-1].name:
                assert opened.wait(10)
                opened.clear()
        time.sleep(1.0)  # the long-poll waits
        began = time.monotonic()
        stopped = stop_server(process, 25)  # SIGTERM, then its whole process group gone
        stopped_in = time.monotonic() - began
        for reader in readers:
            reader.join(10)
    finally:
        log = _stopped_log(process)  # at once when stopped above
    assert not failures, (failures, log)
    assert stopped, log
    assert stopped_in < 5.0, log
    assert received["text/event-stream"] == b": keep-alive\n\n" + STOPPING_COMMENT
    assert received["application/jsonl"] == b"\n"
    assert polled[0].status_code == 200
    answer = polled[0].json()
    assert answer["changes"] == [] and answer["cursor"]


@pytest.mark.parametrize(
    ("server", "workers"),
    [("granian", 1), ("granian", 2), ("uvicorn", 1)],
    ids=["granian", "granian-2-workers", "uvicorn"],
)
def test_a_stopping_wsgi_server_ends_a_polling_clients_long_poll_and_connection_at_once(
    server: str, workers: int, tmp_path: Path
) -> None:
    """A client long-polls (``wait=30``) one request after another on one kept-alive
    connection, as ``RestProxy.changes()`` does; SIGTERM to ``svcrest serve`` on WSGI: the
    waiting long-poll answers at once (an empty page, its cursor, ``Connection: close``), and
    every process of the server is gone within seconds, not after its graceful time-out
    (30 s) with a worker still answering the client."""
    process, port, url = _started(server, "wsgi", workers, tmp_path)
    answers: list[tuple[float, httpx.Response]] = []
    failures: list[BaseException] = []
    stopping = threading.Event()

    def poll() -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            while True:
                try:
                    answer = client.get(CHANGES, params={"wait": 30})
                except httpx.TransportError:  # the server is gone: the poller leaves
                    return
                except BaseException as exc:
                    failures.append(exc)
                    return
                answers.append((time.monotonic(), answer))
                if stopping.is_set() and answer.headers.get("connection") == "close":
                    return

    gone_in = None
    try:
        wait_for_port(port, process)
        poller = threading.Thread(target=poll)
        poller.start()
        time.sleep(1.0)  # the long-poll waits
        assert not answers
        began = time.monotonic()
        stopping.set()
        if stop_server(process, 25):  # SIGTERM, then its whole process group gone
            gone_in = time.monotonic() - began
        poller.join(10)
    finally:
        log = _stopped_log(process)  # at once when stopped above
    assert not failures, (failures, log)
    assert gone_in is not None and gone_in < 5.0, (gone_in, log)
    assert len(answers) == 1, [(answer.headers, answer.text) for _, answer in answers]
    answered_at, answer = answers[0]
    assert answered_at - began < 2.0
    assert answer.status_code == 200
    assert answer.headers["connection"] == "close"
    body = answer.json()
    assert body["changes"] == [] and body["cursor"]


@pytest.fixture(scope="module")
def two_hosts(postgres: PostgresServer) -> Iterator[tuple[Host, Host]]:
    db = postgres.new_database()
    options = ["--server", "uvicorn", "--db", db, *PLUGIN]
    with serving([(address, options, None) for address in ("127.0.0.2", "127.0.0.3")]) as found:
        yield found[0], found[1]


def test_a_write_on_one_host_reaches_subscribers_on_the_other(
    two_hosts: tuple[Host, Host],
) -> None:
    first, second = two_hosts
    with httpx.Client(base_url=second.url, timeout=10) as client:
        with connect_sse(client, "GET", CHANGES) as source:
            assert source.response.status_code == 200
            began = time.monotonic()
            writer = _later(0.2, lambda: _write(first.url, "Across"))
            try:
                event = next(iter(source.iter_sse()))
            finally:
                writer.join()
            assert (event.event, event.json()["title"]) == ("created", "Across")
            assert time.monotonic() - began < 2.0
        since = event.id
        began = time.monotonic()
        writer = _later(0.3, lambda: _write(first.url, "Polled"))
        try:
            polled = client.get(CHANGES, params={"since": since, "wait": 10})
        finally:
            writer.join()
        assert [c["data"]["title"] for c in polled.json()["changes"]] == ["Polled"]
        assert time.monotonic() - began < 1.3


def test_a_password_revoked_on_one_host_ends_its_stream_on_the_other(
    two_hosts: tuple[Host, Host],
) -> None:
    first, second = two_hosts
    password = admin_password(first, second)
    with httpx.Client(base_url=first.url, timeout=10) as a:
        cookie = log_in(a, password)
        headers = {"Cookie": f"svc_logged_in={cookie}", "X-SVC-Nonce": nonce_of(a)}
        made = a.post(
            "/svc-json/svc/v2/users/me/application-passwords",
            json={"name": "feed"},
            headers=headers,
        )
        assert made.status_code == 201, made.text
        secret, uuid = made.json()["password"], made.json()["uuid"]
        basic = base64.b64encode(f"admin:{secret}".encode()).decode()
        authorization = {"Authorization": f"Basic {basic}"}
        with (
            httpx.Client(base_url=second.url, timeout=10) as b,
            connect_sse(b, "GET", CHANGES, headers=authorization) as source,
        ):
            assert source.response.status_code == 200
            revoked = a.delete(
                f"/svc-json/svc/v2/users/me/application-passwords/{uuid}", headers=headers
            )
            assert revoked.status_code == 200
            began = time.monotonic()
            for _ in source.iter_sse():  # keep-alive comments are not events
                pass
            assert time.monotonic() - began < 5.0
