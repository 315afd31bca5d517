"""`svcrest serve --log-format json` over a real server with two workers: every line is one
JSON object, the command's own lines, a plugin's records and warnings in each worker, and the
record of a handler that raised (its traceback in `exception`, the matched route named)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_serving_options import free_port, running, serve_command

pytestmark = pytest.mark.slow

BOOM_PLUGIN = """
import logging
import os
import warnings

import svcrest


def register(app):
    logging.getLogger("boom_plugin").warning("registered in %d", os.getpid())
    warnings.warn("a warning while registering", UserWarning, stacklevel=1)

    def boom(request):
        raise RuntimeError("the handler's own mistake")

    app.register_rest_route(
        "t/v1",
        r"/boom/(?P<id>\\d+)",
        {"methods": "GET", "callback": boom, "permission_callback": svcrest.public},
    )
"""

BOOM_ROUTE = r"/t/v1/boom/(?P<id>\d+)"
FIELDS = {
    "time",
    "level",
    "logger",
    "message",
    "request_id",
    "method",
    "route",
    "status",
    "duration_ms",
    "user_id",
    "path",
}


def _records(output: str) -> list[dict[str, Any]]:
    """Every line of ``output`` as the JSON object it must be."""
    records = []
    for line in output.splitlines():
        record = json.loads(line)  # fails on a line that is not JSON
        assert isinstance(record, dict), line
        assert set(record) >= FIELDS, line
        records.append(record)
    return records


def _complete(output: str, server: str) -> bool:
    """Whether the main process and both workers registered the plugin (three process ids)
    and the access line of the request is written."""
    records = _records(output)
    registered = {record["message"] for record in records if record["logger"] == "boom_plugin"}
    return len(registered) == 3 and any(
        record["logger"] == f"{server}.access" for record in records
    )


@pytest.mark.parametrize("server", ["granian", "uvicorn"])
def test_every_line_is_json_in_every_worker(tmp_path: Path, server: str) -> None:
    (tmp_path / "boom_plugin.py").write_text(BOOM_PLUGIN)
    port = free_port()
    command = serve_command(port, "--server", server, "--db", "s.db", "--workers", "2")
    command += ["--log-format", "json", "--plugin", "boom_plugin:register"]
    with running(command, tmp_path, port) as served:
        response = httpx.get(
            f"{served.url}/svc-json/t/v1/boom/7", headers={"X-Request-Id": "json-boom"}
        )
        assert response.status_code == 500
        deadline = time.monotonic() + 20
        while not _complete(served.output(), server):
            assert time.monotonic() < deadline, served.output()
            time.sleep(0.1)
    records = _records(served.output())
    own = [record["message"] for record in records if record["logger"] == "svcrest"]
    assert own[:3] == [
        "using database s.db",
        "Created the database s.db",
        own[2],
    ]
    assert own[2].startswith("Created user admin with password: ")
    assert own[3].startswith(f"Serving http://127.0.0.1:{port}/ (REST API at ")
    assert own[4].startswith(f"Log in at http://127.0.0.1:{port}/login as admin")
    plugin = [record for record in records if record["logger"] == "boom_plugin"]
    assert [record["level"] for record in plugin] == ["WARNING"] * 3
    # Python warns once per place and process: the main process and each worker (granian's
    # ASGI workers, the default, and uvicorn's start afresh) register the plugin and warn.
    given = [record for record in records if record["logger"] == "py.warnings"]
    assert len(given) == 3, given
    for warning in given:
        assert warning["level"] == "WARNING"
        assert "UserWarning: a warning while registering" in warning["message"]
    [error] = [record for record in records if record["level"] == "ERROR"]
    trace = error.pop("exception")
    assert trace.startswith("Traceback (most recent call last):\n"), trace
    assert trace.endswith("RuntimeError: the handler's own mistake"), trace
    del error["time"]
    assert error == {
        "level": "ERROR",
        "logger": "svcrest",
        "message": "Unhandled exception while dispatching GET /t/v1/boom/7 (request json-boom)",
        "request_id": "json-boom",
        "method": None,
        "route": BOOM_ROUTE,
        "status": None,
        "duration_ms": None,
        "user_id": None,
        "path": None,
    }
    [access] = [record for record in records if record["logger"] == f"{server}.access"]
    assert (access["route"], access["status"], access["method"]) == (BOOM_ROUTE, 500, "GET")
