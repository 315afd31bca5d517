"""HTTP/2 over cleartext (h2c, with prior knowledge) to ``svcrest serve`` on granian, which
speaks it by default (its HTTP mode ``auto``; ``svcrest serve`` has no TLS options, so no
ALPN): on the ASGI and the RSGI interface a GET, a POST with a body larger than one HTTP/2
frame, and a change feed's Server-Sent Events stream (a write reaches it) over one HTTP/2
connection, with the ``books`` collection of ``tests/e2e/store_site.py``."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from httpx_sse import connect_sse

from tests.e2e.test_change_streams_servers import BOOKS, CHANGES, PLUGIN, _later
from tests.e2e.test_many_hosts import Host, serving

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=["asgi", "rsgi"], ids=["granian-asgi", "granian-rsgi"])
def host(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Host]:
    db = str(tmp_path_factory.mktemp(f"h2-{request.param}") / "s.db")
    options = ["--server", "granian", "--interface", str(request.param), "--db", db, *PLUGIN]
    with serving([("127.0.0.1", options, None)]) as (found,):
        yield found


def _h2(host: Host) -> httpx.Client:
    """A client speaking HTTP/2 only (prior knowledge: no upgrade from HTTP/1.1)."""
    return httpx.Client(base_url=host.url, http1=False, http2=True, timeout=10)


def test_get_and_post_over_http2(host: Host) -> None:
    with _h2(host) as client:
        title = "t" * 100_000  # several DATA frames (16 KiB each by default)
        created = client.post(BOOKS, json={"title": title, "year": 1999})
        assert created.http_version == "HTTP/2"
        assert created.status_code == 201
        book = created.json()
        assert (book["title"], book["year"]) == (title, 1999)
        read = client.get(f"{BOOKS}/{book['id']}")
        assert read.http_version == "HTTP/2"
        assert read.status_code == 200
        assert read.json()["title"] == title
        assert read.headers["content-type"] == "application/json; charset=UTF-8"
        assert read.headers["etag"]
        again = client.get(f"{BOOKS}/{book['id']}", headers={"If-None-Match": read.headers["etag"]})
        assert again.status_code == 304
        assert again.content == b""


def test_a_change_feed_over_http2(host: Host) -> None:
    with _h2(host) as client, connect_sse(client, "GET", CHANGES) as source:
        response = source.response
        assert response.http_version == "HTTP/2"
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"

        def write() -> None:
            with _h2(host) as writer:
                assert writer.post(BOOKS, json={"title": "live"}).status_code == 201

        writer = _later(0.5, write)
        try:
            event = next(iter(source.iter_sse()))
        finally:
            writer.join()
        assert event.event == "created"
        assert event.json()["title"] == "live"
