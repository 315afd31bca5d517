"""The official MCP Python SDK's streamable-HTTP client, unchanged, against a live
``svcrest serve --mcp`` with the tools of tests/site/mcp_site.py: anonymous, a subscriber (a
plugin's bearer scheme), an editor and an administrator (application passwords over Basic)
each list and run exactly what they may; served by granian (WSGI, one and two workers: the
session id is the same to every worker) and uvicorn (ASGI)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.test_e2e_server import PASSWORD, free_port, svcrest, wait_for_port
from tests.processes import GRACEFUL_TIMEOUT, STOP_TIMEOUT, port_free, stop_server
from tests.site.mcp_site import SUBSCRIBER_TOKEN

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = "tests.site.mcp_site:register"

ANYONE = ["site-info", "get_mcpdemo_v1_echo"]
SUBSCRIBER = ["site-info", "site-whoami", "get_mcpdemo_v1_echo"]
EDITOR = ["site-info", "site-whoami", "math-double", "get_mcpdemo_v1_echo", "post_mcpdemo_v1_items"]
ADMIN = [*EDITOR[:3], "site-purge", *EDITOR[3:]]


def cli_ok(*args: str) -> str:
    """The output of ``svcrest args[:-1]`` with ``args[-1]`` (when not empty) on stdin; it
    must succeed."""
    done = svcrest(*args[:-1], stdin=args[-1] + "\n") if args[-1] else svcrest(*args[:-1])
    assert done.returncode == 0, done.stderr
    return done.stdout


def app_password(db: str, login: str) -> str:
    out = cli_ok("user", "app-password", "add", login, "agent", "--db", db, "")
    return out.strip().splitlines()[-1]


def _basic(login: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode()}


@contextlib.contextmanager
def serving_mcp(db: str, *extra: str) -> Iterator[str]:
    port = free_port()
    command = [sys.executable, "-m", "svcrest", "serve", "--port", str(port), "--db", db]
    command += ["--mcp", "--plugin", PLUGIN, "--no-access-log", *extra]
    command += ["--graceful-timeout", str(GRACEFUL_TIMEOUT)]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its workers in its process group: stopped with it
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}"
    finally:
        stopped = stop_server(process, STOP_TIMEOUT)
        output = process.communicate(timeout=10)
    assert stopped, output
    assert port_free(port)


@pytest.fixture(
    scope="module",
    params=[
        (),
        ("--workers", "2"),
        ("--server", "uvicorn", "--interface", "asgi"),
        ("--interface", "rsgi"),
    ],
    ids=["granian", "granian-2-workers", "uvicorn", "granian-rsgi"],
)
def site(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, dict[str, dict[str, str]]]]:
    db = str(tmp_path_factory.mktemp("mcp") / "svcrest.db")
    cli_ok("user", "add", "sub1", "--role", "subscriber", "--password-stdin", "--db", db, PASSWORD)
    cli_ok("user", "add", "editor1", "--role", "editor", "--password-stdin", "--db", db, PASSWORD)
    cli_ok(
        "user", "add", "admin1", "--role", "administrator", "--password-stdin", "--db", db, PASSWORD
    )
    callers = {
        "anonymous": {},
        "subscriber": {"Authorization": f"Bearer {SUBSCRIBER_TOKEN}"},
        "editor": _basic("editor1", app_password(db, "editor1")),
        "admin": _basic("admin1", app_password(db, "admin1")),
    }
    with serving_mcp(db, *request.param) as url:
        yield url, callers


async def _session(url: str, headers: dict[str, str]) -> dict[str, Any]:
    """List the tools and call each of them (and one that is not listed) as the SDK does."""
    seen: dict[str, Any] = {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url + "/mcp", http_client=http)) as client,
    ):
        tools = (await client.list_tools()).tools
        seen["names"] = [tool.name for tool in tools]
        seen["annotations"] = {
            tool.name: tool.annotations.model_dump(exclude_none=True)
            for tool in tools
            if tool.annotations is not None
        }
        calls: dict[str, dict[str, Any]] = {
            "site-info": {},
            "site-whoami": {},
            "math-double": {"input": 21},
            "site-purge": {},
            "get_mcpdemo_v1_echo": {"word": "hi"},
            "post_mcpdemo_v1_items": {"word": "hello"},
        }
        results: dict[str, Any] = {}
        for name, arguments in calls.items():
            result = await client.call_tool(name, arguments)
            if result.is_error:
                results[name] = json.loads(result.content[0].text)["code"]  # type: ignore[union-attr]
            else:
                results[name] = result.structured_content
        seen["results"] = results
        resources = (await client.list_resources()).resources
        seen["resources"] = [str(resource.uri) for resource in resources]
        read = await client.read_resource(url + "/openapi.json")
        seen["openapi"] = json.loads(read.contents[0].text)["openapi"]  # type: ignore[union-attr]
    return seen


REFUSED_ANONYMOUS = "rest_ability_cannot_execute"


@pytest.mark.parametrize(
    ("who", "names", "results"),
    [
        (
            "anonymous",
            ANYONE,
            {
                "site-info": {"name": "svcrest"},
                "site-whoami": REFUSED_ANONYMOUS,
                "math-double": REFUSED_ANONYMOUS,
                "site-purge": REFUSED_ANONYMOUS,
                "get_mcpdemo_v1_echo": {"word": "hi"},
                "post_mcpdemo_v1_items": "rest_forbidden",
            },
        ),
        (
            "subscriber",
            SUBSCRIBER,
            {
                "site-info": {"name": "svcrest"},
                "site-whoami": {"result": "sub1"},
                "math-double": REFUSED_ANONYMOUS,
                "site-purge": REFUSED_ANONYMOUS,
                "get_mcpdemo_v1_echo": {"word": "hi"},
                "post_mcpdemo_v1_items": "rest_forbidden",
            },
        ),
        (
            "editor",
            EDITOR,
            {
                "site-info": {"name": "svcrest"},
                "site-whoami": {"result": "editor1"},
                "math-double": {"result": 42},
                "site-purge": REFUSED_ANONYMOUS,
                "get_mcpdemo_v1_echo": {"word": "hi"},
                "post_mcpdemo_v1_items": {"word": "hello", "length": 5},
            },
        ),
        (
            "admin",
            ADMIN,
            {
                "site-info": {"name": "svcrest"},
                "site-whoami": {"result": "admin1"},
                "math-double": {"result": 42},
                "site-purge": {"result": True},
                "get_mcpdemo_v1_echo": {"word": "hi"},
                "post_mcpdemo_v1_items": {"word": "hello", "length": 5},
            },
        ),
    ],
)
def test_each_caller_lists_and_runs_exactly_what_it_may(
    site: tuple[str, dict[str, dict[str, str]]],
    who: str,
    names: list[str],
    results: dict[str, Any],
) -> None:
    url, callers = site
    seen = asyncio.run(_session(url, callers[who]))
    assert seen["names"] == names
    assert seen["results"] == results
    assert seen["resources"] == [url + "/svc-json/", url + "/openapi.json"]
    assert seen["openapi"] == "3.1.0"
    assert seen["annotations"]["site-info"] == {
        "read_only_hint": True,
        "destructive_hint": False,
        "idempotent_hint": True,
    }


def test_a_page_of_another_origin_is_refused(site: tuple[str, dict[str, dict[str, str]]]) -> None:
    url, _ = site
    with httpx2.Client() as http:
        response = http.post(
            url + "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
            headers={"Origin": "http://attacker.example", "Accept": "application/json"},
        )
    assert response.status_code == 403
