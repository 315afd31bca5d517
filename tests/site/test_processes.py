"""An in-memory store served by several worker processes is refused (503, the fix named,
logged once), on both adapters; a store every worker shares is served."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any
from wsgiref.util import setup_testing_defaults

import httpx
import pytest

from svcrest import App, public
from svcrest.site.processes import ENV_WORKERS
from svcrest.store.sqlite import SqliteStore

REFUSAL = {
    "code": "svc_store_not_shared",
    "message": "This site keeps its data in memory (App() without a store), but the server"
    " runs several worker processes, each with its own copy: serve it with one worker, or"
    " give it a database (svcrest serve --db var/svcrest.db, or"
    " App(store='var/svcrest.db')).",
    "data": {"status": 503},
}
LOGGED = f"svcrest: refusing every request: {REFUSAL['message']}"


@pytest.fixture(autouse=True)
def no_worker_count(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (ENV_WORKERS, "WEB_CONCURRENCY"):
        monkeypatch.setenv(name, "")  # recorded: removed again after the test
        monkeypatch.delenv(name)


def _app(store: Any = None) -> App:
    app = App("http://site.test", store=store)
    app.register_rest_route(
        "t/v1", "/ok", {"permission_callback": public, "callback": lambda: {"ok": True}}
    )
    return app


def _wsgi_get(app: App, multiprocess: bool) -> tuple[str, list[tuple[str, str]], bytes]:
    environ: dict[str, Any] = {"PATH_INFO": "/svc-json/t/v1/ok"}
    setup_testing_defaults(environ)
    environ["wsgi.multiprocess"] = multiprocess
    started: list[Any] = []
    body = b"".join(app.wsgi(environ, lambda status, headers: started.append((status, headers))))
    [(status, headers)] = started
    return status, headers, body


def _asgi_get(app: App) -> httpx.Response:
    async def get() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=app.home) as client:
            return await client.get("/svc-json/t/v1/ok")

    return asyncio.run(get())


def test_wsgi_multiprocess_refuses_an_in_memory_store(caplog: pytest.LogCaptureFixture) -> None:
    app = _app()
    with caplog.at_level(logging.ERROR, logger="svcrest"):
        for _ in range(3):
            status, headers, body = _wsgi_get(app, multiprocess=True)
            assert status == "503 Service Unavailable"
            assert headers == [
                ("Content-Type", "application/json; charset=UTF-8"),
                ("Content-Length", str(len(body))),
            ]
            assert json.loads(body) == REFUSAL
    assert [record.getMessage() for record in caplog.records] == [LOGGED]  # once


@pytest.mark.parametrize(
    "store", [None, ":memory:", "sqlite://", "sqlite:///:memory:", "memory-store"]
)
def test_every_in_memory_form_is_refused(store: Any) -> None:
    app = _app(SqliteStore(None) if store == "memory-store" else store)
    assert app.store_in_memory is True
    assert _wsgi_get(app, multiprocess=True)[0] == "503 Service Unavailable"
    app.store.close()


def test_a_file_store_is_served_by_several_workers(tmp_path: Path) -> None:
    app = _app(str(tmp_path / "s.db"))
    assert app.store_in_memory is False
    status, _, body = _wsgi_get(app, multiprocess=True)
    assert (status, json.loads(body)) == ("200 OK", {"ok": True})
    app.store.close()


def test_one_process_serves_an_in_memory_store() -> None:
    app = _app()
    status, _, body = _wsgi_get(app, multiprocess=False)
    assert (status, json.loads(body)) == ("200 OK", {"ok": True})


@pytest.mark.parametrize(
    ("name", "value", "status"),
    [
        (ENV_WORKERS, "1", "200 OK"),  # svcrest serve knows better than uvicorn's WSGI bridge
        ("WEB_CONCURRENCY", "1", "200 OK"),
        (ENV_WORKERS, "3", "503 Service Unavailable"),
    ],
)
def test_a_declared_worker_count_decides(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, status: str
) -> None:
    monkeypatch.setenv(name, value)
    assert _wsgi_get(_app(), multiprocess=True)[0] == status


@pytest.mark.parametrize(
    ("name", "value", "status"),
    [
        (None, None, 200),
        (ENV_WORKERS, "3", 503),
        ("WEB_CONCURRENCY", "3", 503),
        ("WEB_CONCURRENCY", "1", 200),
        ("WEB_CONCURRENCY", "many", 200),
    ],
)
def test_asgi_reads_the_worker_count_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, name: str | None, value: str | None, status: int
) -> None:
    if name is not None and value is not None:
        monkeypatch.setenv(name, value)
    response = _asgi_get(_app())
    assert response.status_code == status
    if status == 503:
        assert response.json() == REFUSAL
        assert response.headers["content-type"] == "application/json; charset=UTF-8"
