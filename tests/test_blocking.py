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


def _in_a_fresh_thread(work: Callable[[], None]) -> None:
    """Run ``work`` on a new thread (a server thread: its context is empty)."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # reported on the test's thread
            failed.append(exc)

    thread = threading.Thread(target=run, name="fresh")
    thread.start()
    thread.join(10)
    assert not thread.is_alive()
    if failed:
        raise failed[0]


def test_an_inline_run_calls_offloaded_functions_in_place_also_after_a_wait() -> None:
    import asyncio
    import contextvars

    from svcrest.syncrun import run_in_context, runs_inline

    names: list[str] = []
    flags: list[bool] = []

    async def call() -> None:
        await asyncio.sleep(0.001)  # the thread's loop takes the run over
        await offload(lambda: names.append(threading.current_thread().name))()

    def serve() -> None:
        run_in_context(call(), contextvars.copy_context(), True)
        flags.append(runs_inline())
        run_in_context(call(), contextvars.copy_context())  # not inline: the pool
        flags.append(runs_inline())

    _in_a_fresh_thread(serve)
    assert names[0] == "fresh"
    assert names[1].startswith(POOL)
    assert flags == [False, False]
    assert runs_inline() is False


def test_a_helper_run_inside_an_inline_run_is_inline_too() -> None:
    # rest_do_request from a sync callback of a WSGI request: the thread's loop is running,
    # so the nested run goes to a helper thread, where offloaded functions stay in place.
    import asyncio
    import contextvars

    from svcrest.syncrun import run_in_context, run_sync

    names: list[str] = []

    async def nested() -> None:
        await offload(lambda: names.append(threading.current_thread().name))()

    async def request() -> None:
        await asyncio.sleep(0)
        run_sync(nested)
        names.append("after " + threading.current_thread().name)

    def serve() -> None:
        run_in_context(request(), contextvars.copy_context(), True)
        run_in_context(request(), contextvars.copy_context())  # not inline: the pool

    _in_a_fresh_thread(serve)
    assert len(names) == 4
    assert not names[0].startswith(POOL) and names[0] != "fresh"  # the helper thread
    assert names[1] == "after fresh"
    assert names[2].startswith(POOL)
    assert names[3] == "after fresh"


def test_a_wsgi_request_context_holds_only_the_request_context() -> None:
    # The WSGI request's "blocking" callbacks run in place through the thread's run, not a
    # context variable: the request's context holds the one variable the request sets.
    import contextvars

    from tests.conftest import raw_request

    app = App("http://127.0.0.1:8000")
    held: list[list[str]] = []
    ran: list[str] = []

    def where(request: Request) -> dict[str, Any]:
        held.append(sorted(v.name.split("~")[0] for v in contextvars.copy_context()))
        ran.append(threading.current_thread().name)
        return {"ok": True}

    def allowed(request: Request) -> bool:
        return True

    handler = {"methods": "GET", "callback": where, "permission_callback": allowed}
    app.register_rest_route("t/v1", "/plain", handler)
    app.register_rest_route("t/v1", "/blocking", {**handler, "blocking": True})

    def serve() -> None:
        for route in ("plain", "blocking"):
            status, _, body = raw_request(app, "wsgi", "GET", f"/svc-json/t/v1/{route}", [])
            assert (status, body) == (200, b'{"ok":true}')

    _in_a_fresh_thread(serve)
    assert held == [["svcrest_request_context"], ["svcrest_request_context"]]
    assert ran == ["fresh", "fresh"]
