"""Blocking callbacks (issue 13): ``"blocking": True`` runs sync callbacks off the event loop
under ASGI, in place under WSGI; a store write lock held too long answers 503."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from svcrest import App, Request
from svcrest.blocking import inline, inline_context, is_offloaded, offload
from svcrest.store import sqlite as sqlite_store
from tests.conftest import SiteClient

# Where each callback ran: the pool's threads are named svcrest-blocking_N.
POOL = "svcrest-blocking"


def _threads_app(tmp_path: Path) -> tuple[App, list[str]]:
    app = App(store=str(tmp_path / "site.db"))
    ran: list[str] = []

    def allowed(request: Request) -> bool:
        ran.append("permission " + threading.current_thread().name.split("_")[0])
        return True

    def where(request: Request) -> dict[str, Any]:
        ran.append("callback " + threading.current_thread().name.split("_")[0])
        return {"user": request.user.id}

    handler = {"methods": "GET", "callback": where, "permission_callback": allowed}
    app.register_rest_route("t/v1", "/blocking", {**handler, "blocking": True})
    app.register_rest_route("t/v1", "/plain", handler)
    return app, ran


def test_blocking_callbacks_run_in_the_pool_under_asgi_only(
    tmp_path: Path, adapter: str, client_for: Callable[..., SiteClient]
) -> None:
    app, ran = _threads_app(tmp_path)
    client = client_for(app)
    for route in ("blocking", "plain"):
        response = client.get(f"/svc-json/t/v1/{route}")
        assert (response.status_code, response.json()) == (200, {"user": 0})
    # The permission callback runs twice a request: for the answer, then for its Allow.
    here = threading.current_thread().name
    pooled = POOL if adapter == "asgi" else here
    assert ran == [
        f"permission {pooled}",
        f"callback {pooled}",
        f"permission {pooled}",
        f"permission {here}",
        f"callback {here}",
        f"permission {here}",
    ]
    app.store.close()


def test_offload_keeps_coroutines_and_wrappers() -> None:
    async def coroutine_function() -> None:
        return None

    def plain(request: Any) -> Any:
        return request

    assert offload(coroutine_function) is coroutine_function
    wrapped = offload(plain)
    assert is_offloaded(wrapped) and not is_offloaded(plain)
    assert offload(wrapped) is wrapped
    assert wrapped.__wrapped__ is plain  # type: ignore[attr-defined]


def _thread_names() -> tuple[list[str], Callable[[], None]]:
    """A list, and a function that appends the name of the thread it runs on to it."""
    names: list[str] = []

    def record() -> None:
        names.append(threading.current_thread().name)

    return names, record


def test_inline_runs_offloaded_functions_in_place() -> None:
    import asyncio

    names, record = _thread_names()

    async def call() -> None:
        await offload(record)()
        with inline():
            await offload(record)()

    asyncio.run(call())
    assert names[0].startswith(POOL)
    assert names[1] == threading.current_thread().name


def test_a_held_write_lock_answers_503_with_retry_after(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    adapter: str,
    client_for: Callable[..., SiteClient],
) -> None:
    monkeypatch.setattr(sqlite_store, "_BUSY_TIMEOUT_MS", 100)  # the connections made from now
    db = tmp_path / "site.db"
    app = App(store=str(db))

    def write(request: Request) -> dict[str, bool]:
        with app.store.transaction() as conn:
            conn.execute("SELECT 1")
        return {"written": True}

    public = {"permission_callback": lambda: True}
    app.register_rest_route("t/v1", "/write", {"methods": "POST", "callback": write, **public})
    client = client_for(app)
    assert client.post("/svc-json/t/v1/write").json() == {"written": True}
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        response = client.post("/svc-json/t/v1/write")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "1"
    assert response.json() == {
        "code": "svc_store_busy",
        "message": "The database is busy; please try again shortly.",
        "data": {"status": 503},
    }
    assert client.post("/svc-json/t/v1/write").json() == {"written": True}
    app.store.close()


def test_inline_context_runs_offloaded_functions_in_place_and_leaves_the_caller_alone() -> None:
    import asyncio

    names, record = _thread_names()

    async def call() -> None:
        await offload(record)()

    context = inline_context()
    context.run(asyncio.run, call())
    asyncio.run(call())  # the caller's own context: not inline
    assert names[0] == threading.current_thread().name
    assert names[1].startswith(POOL)


def test_inline_context_of_a_thread_without_context_variables() -> None:
    import contextvars

    from svcrest.syncrun import run_in_context

    var: contextvars.ContextVar[str] = contextvars.ContextVar("test_inline_var", default="")
    names: list[str] = []
    seen: list[str] = []

    async def call() -> None:
        await offload(lambda: names.append(threading.current_thread().name))()
        seen.append(var.get())
        var.set("set by a request")

    def serve_twice() -> None:  # a fresh thread: its context is empty
        for _ in range(2):
            run_in_context(call(), inline_context())  # the coroutine runs in the context given

    thread = threading.Thread(target=serve_twice, name="fresh")
    thread.start()
    thread.join(10)
    assert names == ["fresh", "fresh"]  # in place, both times
    assert seen == ["", ""]  # the second context did not see what the first set
