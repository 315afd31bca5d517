"""Batch requests vs separate requests: 25 note creates, over HTTP, in one run.

Usage::

    python bench/batch.py [--rounds N] [--size N]

Serves the demo under uvicorn (in a thread of this process, on a free loopback port, a
SQLite file store in a temporary directory), logs in as an editor (cookie + nonce, as a
browser would) and, each round, creates ``--size`` notes three ways: one request each on a
keep-alive connection, one ``batch/v1`` request (``normal``), and one atomic batch. The best
round of each is printed with its speed-up over the separate requests (goal: at least 5 times).
A benchmark to run by hand, never a timed test.
"""

from __future__ import annotations

import argparse
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import uvicorn

from svcrest import App
from svcrest.demo import register

NOTES = "/svc-json/demo/v1/notes"
BATCH = "/svc-json/batch/v1"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _serve(app: App, port: int) -> uvicorn.Server:
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return server


def _best(rounds: int, action: Callable[[], None]) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--size", type=int, default=25)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        port = _free_port()
        home = f"http://127.0.0.1:{port}"
        app = App(home, store=str(Path(tmp) / "bench.db"))
        register(app)
        app.users.create("bench", "bench-password-0123", roles=("editor",))
        server = _serve(app, port)
        try:
            with httpx.Client(base_url=home) as client:
                client.post("/login", data={"log": "bench", "pwd": "bench-password-0123"})
                nonce = client.get("/auth/nonce").json()["nonce"]
                headers = {"X-SVC-Nonce": nonce}
                bodies = [{"title": f"Note {i}", "content": "x" * 200} for i in range(options.size)]

                def separate() -> None:
                    for body in bodies:
                        assert client.post(NOTES, json=body, headers=headers).status_code == 201

                def batch(mode: str) -> Callable[[], None]:
                    requests = [{"path": "/demo/v1/notes", "body": body} for body in bodies]

                    def send() -> None:
                        payload = {"validation": mode, "requests": requests}
                        response = client.post(BATCH, json=payload, headers=headers)
                        assert response.status_code == 207
                        assert all(r["status"] == 201 for r in response.json()["responses"])

                    return send

                results = {
                    f"{options.size} separate requests": _best(options.rounds, separate),
                    "one batch (normal)": _best(options.rounds, batch("normal")),
                    "one batch (atomic)": _best(options.rounds, batch("atomic")),
                }
        finally:
            server.should_exit = True
    base = results[f"{options.size} separate requests"]
    print(f"| {options.size} note creates | best of {options.rounds} | speed-up |")
    print("|---|---:|---:|")
    for name, seconds in results.items():
        print(f"| {name} | {seconds * 1000:.1f} ms | {base / seconds:.1f}x |")


if __name__ == "__main__":
    main()
