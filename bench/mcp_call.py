"""An MCP ``tools/call`` of a readonly ability against the same callback behind a plain GET.

Usage::

    python bench/mcp_call.py [--rounds 15] [--calls 3000] [--json]

One ``App(mcp=True)`` has the callback ``site_name()`` as the readonly ability
``bench/site-name`` (an object output schema, no input schema), as the route ``GET
/svc-json/bench/v1/name``, and as the readonly ability ``bench/site-name-typed`` (the same
with an input schema). All are public. The ASGI callable is driven in-process (no sockets,
as ``inprocess.py``), each case a loop of requests with the best mean time per call of
``--rounds`` rounds (noise only ever slows a round down):

- ``REST GET``: ``GET /svc-json/bench/v1/name``;
- ``REST GET of the run route``: ``GET /svc-json/svc-abilities/v1/abilities/bench/site-name/run``
  (what ``tools/call`` dispatches internally);
- ``MCP tools/call``: ``POST /mcp`` with ``{"method": "tools/call", "params": {"name":
  "bench-site-name", "arguments": {}}}`` and a session id (an ability without input called
  without arguments on a site whose dispatch would add nothing to its run: run directly);
- ``MCP ping``: ``POST /mcp`` with ``ping``: the transport alone (a POST with a body read,
  the JSON-RPC message, authentication, the session);
- ``MCP tools/call, dispatched``: the call of ``bench/site-name-typed``, the same callback
  with an input schema (an object, by default empty): a tool with input is never run
  directly, its call is the internal dispatch of its run route;
- ``internal GET`` and ``internal GET of the run route``: ``app.rest_do_request_async`` of
  the plain route and of the run route, without HTTP (what a ``tools/call`` dispatches).

The goal is ``tools/call`` ≤ 1.5 times the plain GET; both ratios are printed, to the plain GET
and to the REST GET of the ability's own run route (exit 1 past the goal with ``--check``).

``--instructions N`` counts instead the CPU instructions of each case with valgrind's
callgrind (``callgrind.py``): a run of 200 warm-up requests and ``N`` more, less a run of
the warm-up alone, divided by ``N``. Repeatable on a loaded machine, unlike the seconds.

``--steps N`` counts the steps of the run route's internal dispatch alone, each ``N`` times on
the warmed-up site less a run doing nothing: the argument step (``ArgPlan.run``), the
permission step (``can_run``), the callback step (``run``, the ability's run included), the
ability's run (``run_permitted``), its output check, one of its actions, and the whole
dispatch of the run route and of the plain route (each with its ``Request.for_dispatch``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import shutil
import sys
import time
from collections.abc import Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from callgrind import collected

GOAL = 1.5
WARM_UP = 200
HOST_HEADERS = [(b"host", b"127.0.0.1:8000"), (b"user-agent", b"bench")]


def site_name() -> dict[str, Any]:
    """The callback both forms run."""
    return {"name": "bench", "description": "a site"}


def make_app() -> Any:
    import svcrest

    app = svcrest.App(mcp=True)
    app.register_ability_category("bench", label="Bench", description="Benchmarks.")

    def site_name_ability(name: str, label: str, description: str, **extra: Any) -> None:
        app.register_ability(
            name,
            label=label,
            description=description,
            category="bench",
            output_schema={
                "type": "object",
                "properties": {"name": {"type": "string"}, "description": {"type": "string"}},
            },
            execute_callback=site_name,
            permission_callback=svcrest.public,
            annotations={"readonly": True},
            **extra,
        )

    site_name_ability("bench/site-name", "Site name", "The site's name.")
    site_name_ability(
        "bench/site-name-typed",
        "Site name (typed input)",
        "The site's name, with an input schema: its calls are dispatched.",
        input_schema={"type": "object", "properties": {}, "default": {}},
    )
    app.register_rest_route(
        "bench/v1",
        "/name",
        {"methods": "GET", "callback": site_name, "permission_callback": svcrest.public},
    )
    return app


def _scope(method: str, path: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [*HOST_HEADERS, *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }


def case(
    app: Any, method: str, path: str, headers: list[tuple[bytes, bytes]], body: bytes = b""
) -> tuple[Callable[[int], Any], list[bytes]]:
    """A coroutine function running ``n`` requests, and the bodies answered."""
    scope = _scope(method, path, headers)
    message = {"type": "http.request", "body": body, "more_body": False}
    answers: list[bytes] = []

    async def receive() -> dict[str, Any]:
        return message

    async def send(sent: MutableMapping[str, Any]) -> None:
        if sent["type"] == "http.response.body" and len(answers) < 1:
            answers.append(sent.get("body", b""))
        elif sent["type"] == "http.response.start" and sent["status"] != 200:
            raise SystemExit(f"{method} {path} answered {sent['status']}")

    async def run(n: int) -> None:
        for _ in range(n):
            await app(dict(scope), receive, send)

    return run, answers


def session_of(app: Any, loop: asyncio.AbstractEventLoop) -> str:
    found: list[str] = []
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}},
        }
    ).encode()
    scope = _scope("POST", "/mcp", [(b"content-type", b"application/json")])

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(sent: MutableMapping[str, Any]) -> None:
        if sent["type"] == "http.response.start":
            for name, value in sent["headers"]:
                if name.lower() == b"mcp-session-id":
                    found.append(value.decode())

    loop.run_until_complete(app(scope, receive, send))
    return found[0]


def best_of(run: Callable[[int], Any], rounds: int, calls: int, loop: Any) -> float:
    timings = []
    for _ in range(rounds):
        start = time.perf_counter()
        loop.run_until_complete(run(calls))
        timings.append((time.perf_counter() - start) / calls)
    return min(timings) * 1e6


def make_cases(app: Any, loop: asyncio.AbstractEventLoop) -> dict[str, Any]:
    """The cases of one site, by name."""
    session = session_of(app, loop)
    call = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "bench-site-name", "arguments": {}},
        }
    ).encode()
    ping = b'{"jsonrpc":"2.0","id":3,"method":"ping"}'
    ping_length = (b"content-length", str(len(ping)).encode())
    mcp_headers = [
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-session-id", session.encode()),
        (b"mcp-protocol-version", b"2025-06-18"),
        (b"content-length", str(len(call)).encode()),
    ]
    typed = call.replace(b'"bench-site-name"', b'"bench-site-name-typed"')
    return {
        **core_cases(app, mcp_headers, call, ping, ping_length, typed),
        **internal_cases(app),
    }


def core_cases(
    app: Any,
    mcp_headers: list[tuple[bytes, bytes]],
    call: bytes,
    ping: bytes,
    ping_length: Any,
    typed: bytes,
) -> dict[str, Any]:
    """The five cases over ASGI."""
    typed_length = (b"content-length", str(len(typed)).encode())
    return {
        "REST GET": case(app, "GET", "/svc-json/bench/v1/name", []),
        "REST GET of the run route": case(
            app, "GET", "/svc-json/svc-abilities/v1/abilities/bench/site-name/run", []
        ),
        "MCP tools/call": case(app, "POST", "/mcp", mcp_headers, call),
        "MCP ping": case(app, "POST", "/mcp", [*mcp_headers[:-1], ping_length], ping),
        "MCP tools/call, dispatched": case(
            app, "POST", "/mcp", [*mcp_headers[:-1], typed_length], typed
        ),
    }


def internal_cases(app: Any) -> dict[str, Any]:
    """Internal dispatch alone (``app.rest_do_request_async``, no HTTP): of the plain route,
    and of the run route as ``tools/call`` dispatches it (what the call adds to a ping)."""
    from svcrest import Request

    def internal(route: str) -> tuple[Callable[[int], Any], list[bytes]]:
        async def run(n: int) -> None:
            for _ in range(n):
                response = await app.rest_do_request_async(Request("GET", route))
                if response.status != 200:
                    raise SystemExit(f"{route} answered {response.status}")

        return run, []

    return {
        "internal GET": internal("/bench/v1/name"),
        "internal GET of the run route": internal(
            "/svc-abilities/v1/abilities/bench/site-name/run"
        ),
    }


def new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:
        return asyncio.new_event_loop()


def run_one(name: str, calls: int) -> None:
    """Warm the case ``name`` up, then send ``calls`` more requests (what ``--instructions``
    counts under callgrind)."""
    loop = new_loop()
    run, _ = make_cases(make_app(), loop)[name]
    loop.run_until_complete(run(WARM_UP))
    # The objects the warm-up left alive are moved out of the collector's generations: its
    # full passes no longer walk the whole site at moments that differ between runs (counts
    # of one tree moved by thousands), while the garbage of each request is still collected.
    gc.collect()
    gc.freeze()
    if calls:
        loop.run_until_complete(run(calls))


def count_instructions(requests: int) -> dict[str, float]:
    """Instructions per request of every case."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind")
    names = list(make_cases(make_app(), new_loop()))

    def counted(name: str, calls: int) -> int:
        return collected([__file__, "--one", name, "--calls", str(calls)])

    with ThreadPoolExecutor(max_workers=2) as pool:
        warm = list(pool.map(lambda name: counted(name, 0), names))
        full = list(pool.map(lambda name: counted(name, requests), names))
    return {
        name: (after - before) / requests
        for name, before, after in zip(names, warm, full, strict=True)
    }


#: The steps ``--steps`` counts: each one's name, and the step it runs after (its count is
#: the difference), or None.
STEPS: dict[str, str | None] = {
    "argument step": None,
    "permission step": "argument step",
    "callback step": "permission step",
    "ability run": "argument step",
    "output check": "argument step",
    "one action": "argument step",
    "run route dispatch": None,
    "plain route dispatch": None,
}


def run_step(name: str, calls: int) -> None:
    """Warm the site up, then run the step ``name`` ``calls`` times (``"none"``: nothing)."""
    from svcrest import Request
    from svcrest.http.context import DISPATCH_USER
    from svcrest.http.headers import Headers

    loop = new_loop()
    app = make_app()
    run, _ = make_cases(app, loop)["MCP tools/call"]
    loop.run_until_complete(run(WARM_UP))
    server = app.rest_get_server()
    route = "/svc-abilities/v1/abilities/bench/site-name/run"
    chosen = server.table.handler_for(route, "GET")
    assert chosen is not None
    _, handler, params = chosen
    definition, plan = handler.definition, handler.arg_plan
    controller = definition["permission_callback"].__self__
    ability = app.abilities.by_name["bench/site-name"]
    headers = Headers()

    def request(path: str = route) -> Any:
        made = Request.for_dispatch("GET", path, headers, {})
        made.site, made.url_params, made.handler = app, dict(params), definition
        return made

    requests = [request() for _ in range(calls)]
    DISPATCH_USER.set(requests[0].user if requests else None)
    if name in ("none", "run route dispatch", "plain route dispatch"):
        path = {"run route dispatch": route, "plain route dispatch": "/bench/v1/name"}.get(name)
        if path is not None:
            loop.run_until_complete(_dispatched(server, path, calls))
        return
    for each in requests:
        plan.run(each, definition["args"])
    result = {"name": "bench", "description": "a site"}
    for each in requests:
        if name == "permission step":
            controller.can_run(each)
        elif name == "callback step":
            controller.can_run(each)
            controller.run(each)
        elif name == "ability run":
            ability.run_permitted(None)
        elif name == "output check":
            ability.validate_output(result)
        elif name == "one action":
            app.hooks.do_action("svc_before_execute_ability", ability.name, None)


async def _dispatched(server: Any, path: str, calls: int) -> None:
    from svcrest import Request
    from svcrest.http.headers import Headers

    headers = Headers()
    for _ in range(calls):
        await server.dispatch_planned(Request.for_dispatch("GET", path, headers, {}), server.plan())


def count_steps(calls: int) -> dict[str, float]:
    """Instructions of each step of :data:`STEPS` (less the step it follows)."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--steps needs valgrind")
    names = ["none", *STEPS]
    with ThreadPoolExecutor(max_workers=2) as pool:
        counts = dict(
            zip(
                names,
                pool.map(
                    lambda name: collected([__file__, "--step", name, "--calls", str(calls)]),
                    names,
                ),
                strict=True,
            )
        )
    alone = {name: (counts[name] - counts["none"]) / calls for name in STEPS}
    return {
        name: alone[name] - (alone[after] if after is not None else 0.0)
        for name, after in STEPS.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--check", action="store_true", help=f"exit 1 past {GOAL}x")
    parser.add_argument("--instructions", type=int, metavar="REQUESTS")
    parser.add_argument("--steps", type=int, metavar="CALLS")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--step", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if not counted(options):
        timed(options)


def counted(options: argparse.Namespace) -> bool:
    """Run the mode that counts instructions (or one of its child runs), if one is asked
    for; False when none is."""
    if options.one:
        run_one(options.one, options.calls)
    elif options.step:
        run_step(options.step, options.calls)
    elif options.steps:
        for name, value in count_steps(options.steps).items():
            print(f"{name:28} {value:9,.0f} instructions")
    elif options.instructions:
        counts = count_instructions(options.instructions)
        ratio = counts["MCP tools/call"] / counts["REST GET"]
        if options.json:
            print(json.dumps({"instructions": counts, "ratio": ratio, "goal": GOAL}))
        else:
            for name, value in counts.items():
                print(f"{name:28} {value:9,.0f} instructions")
            print(f"tools/call / REST GET       {ratio:7.2f}x (goal ≤ {GOAL}x)")
    else:
        return False
    return True


def timed(options: argparse.Namespace) -> None:
    """The cases timed in seconds (best of the rounds, interleaved)."""
    loop = new_loop()
    app = make_app()
    cases = make_cases(app, loop)
    for run, _ in cases.values():  # warm-up: the server, the route table, the tools
        loop.run_until_complete(run(WARM_UP))
    figures: dict[str, float] = {name: float("inf") for name in cases}
    for _ in range(3):  # interleaved, so a slow spell of the machine hits every case
        for name, (run, _) in cases.items():
            figures[name] = min(figures[name], best_of(run, options.rounds, options.calls, loop))
    answer = json.loads(cases["MCP tools/call"][1][0])
    assert answer["result"]["structuredContent"] == site_name(), answer
    ratio = figures["MCP tools/call"] / figures["REST GET"]
    run_ratio = figures["MCP tools/call"] / figures["REST GET of the run route"]
    if options.json:
        print(
            json.dumps(
                {
                    "microseconds": figures,
                    "ratio": ratio,
                    "run_route_ratio": run_ratio,
                    "goal": GOAL,
                }
            )
        )
    else:
        for name, value in figures.items():
            print(f"{name:28} {value:7.1f} µs")
        print(f"tools/call / REST GET       {ratio:7.2f}x (goal ≤ {GOAL}x)")
        print(f"tools/call / run route GET  {run_ratio:7.2f}x")
    if options.check and ratio > GOAL:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
