"""The in-process ASGI GET split by stage: what svcrest's adapter, ``respond`` and the REST
pipeline each add to a request (instructions, callgrind).

Usage::

    python bench/asgi_split.py [--requests 1000] [--stages bare,request,...]

Each stage is a child process counted as ``instructions.py`` counts a case (the same
environment, warm-up, :func:`callgrind.settle`, then ``--requests`` requests less none) of
``inprocess.py``'s anonymous GET. Every stage answers with the bytes svcrest answers that
GET (its header lines and body, taken from one real request first); each does a little more
of svcrest's own work than the one before:

- ``bare``: an ASGI callable sending that answer prepared (two ``send`` calls): the harness
  and the two messages, what no ASGI application can do without;
- ``request``: and the adapter's request made from the scope (``serve/asgi.py``,
  ``_request``: the scope's header lines, ``HttpRequest``);
- ``wire``: and the answer's lines encoded for the server (``HttpResponse.wire_headers``);
- ``adapter``: the adapter whole (``handle_asgi``), ``respond`` replaced by a coroutine
  answering a copy of the prepared ``HttpResponse``;
- ``respond``: and ``respond`` (the request id, the route, the request context), the REST
  pipeline (``serve_rest``) replaced by a coroutine answering that copy;
- ``full``: the GET as served.

Each stage's difference to the one before is its share; ``full`` less ``respond`` is the
REST pipeline's (``serve_rest``: the request, its permission, the callback, the default
filters, the answer). From ``wire`` to ``respond`` each request makes one copy of the
prepared ``HttpResponse`` (``without_init`` and six fields) that svcrest does not, and the
stage replaced by a coroutine keeps its await: ``full`` less ``respond`` is the pipeline's
share less that copy. Figures: ``RESULTS.md``, "Session 20: the ASGI edge under granian".
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from callgrind import collected, prime, settle

STAGES = ("bare", "request", "wire", "adapter", "respond", "full")

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def child(stage: str, requests: int) -> None:
    """Run in the measured process: one real request to take svcrest's answer, the stage's
    application warmed up (50 requests), the heap settled, then ``requests`` requests."""
    import inprocess

    import svcrest.serve.asgi as adapter
    import svcrest.site.respond as responding
    from svcrest.http.exchange import HttpResponse
    from svcrest.instances import without_init

    app = inprocess.make_app()
    loop = asyncio.new_event_loop()
    answers: list[Any] = []
    real_respond = vars(adapter)["respond"]

    async def keep(*args: Any) -> Any:
        answer = await real_respond(*args)
        answers.append(answer)
        return answer

    vars(adapter)["respond"] = keep
    loop.run_until_complete(inprocess.asgi_case(app, inprocess.PATH, [], 200)(50))
    vars(adapter)["respond"] = real_respond
    prepared = answers[-1]
    lines = prepared.wire_headers()
    body = prepared.body
    make_request = adapter._request

    def copied() -> HttpResponse:
        answer = without_init(HttpResponse)
        answer.status = prepared.status
        answer.headers = prepared.headers
        answer.body = prepared.body
        answer.content_length = prepared.content_length
        answer.wire_prefix = prepared.wire_prefix
        answer.request_id = prepared.request_id
        return answer

    async def bare(scope: Any, receive: Any, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": lines})
        await send({"type": "http.response.body", "body": body})

    async def request(scope: Any, receive: Any, send: Send) -> None:
        make_request(scope)
        await send({"type": "http.response.start", "status": 200, "headers": lines})
        await send({"type": "http.response.body", "body": body})

    async def wire(scope: Any, receive: Any, send: Send) -> None:
        make_request(scope)
        await send(
            {"type": "http.response.start", "status": 200, "headers": copied().wire_headers()}
        )
        await send({"type": "http.response.body", "body": body})

    async def answered(*args: Any) -> HttpResponse:
        return copied()

    application: Any = {"bare": bare, "request": request, "wire": wire}.get(stage, app)
    if stage == "adapter":
        vars(adapter)["respond"] = answered
    elif stage == "respond":
        vars(responding)["serve_rest"] = answered
    run = inprocess.asgi_case(application, inprocess.PATH, [], 200)
    loop.run_until_complete(run(50))
    settle()
    if requests:
        loop.run_until_complete(run(requests))


def per_request(stage: str, requests: int) -> int:
    """Instructions a request of ``stage`` (callgrind: ``requests`` requests less none)."""
    args = [__file__, "--child", stage]
    prime([*args, "0"])
    return (collected([*args, str(requests)]) - collected([*args, "0"])) // requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--stages", default=",".join(STAGES), help=", ".join(STAGES))
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("count", nargs="?", type=int, default=0, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options.child, options.count)
        return
    stages = options.stages.split(",")
    unknown = [stage for stage in stages if stage not in STAGES]
    if unknown:
        raise SystemExit(f"unknown stage(s) {', '.join(unknown)}; of {', '.join(STAGES)}")
    print(f"instructions a request ({options.requests} requests, callgrind)")
    print(f"{'stage':<10} {'instructions':>12} {'its share':>10}")
    before: int | None = None
    for stage in stages:
        figure = per_request(stage, options.requests)
        share = "" if before is None else f"{figure - before:+,}"
        print(f"{stage:<10} {figure:>12,} {share:>10}", flush=True)
        before = figure


if __name__ == "__main__":
    main()
