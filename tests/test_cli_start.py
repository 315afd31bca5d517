"""What ``svcrest serve`` says at start when something is wrong: a database that cannot be
opened is reported as such (not as the failure of a plugin that opens the store), named once
and without its password; a missing server is found before anything is created or
announced; a URL of another kind names every form a database takes; and the log-in line
tells the truth when no ``admin`` was ever made."""

from __future__ import annotations

import builtins
import json
import logging
import re
import socket
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from svcrest.cli import main
from tests.cli_run import keep_serve_state, run

UVICORN_ASGI = ("--server", "uvicorn", "--interface", "asgi")
PLUGIN = "svcrest_cli_start_plugin"
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00")
#: Every form ``--db`` takes, as the message about another kind of URL names them.
FORMS = (
    "a SQLite file path (var/svcrest.db), sqlite:///relative/path.db,"
    " sqlite:////absolute/path.db, :memory: (an in-memory SQLite database), or a PostgreSQL URL"
    " (postgresql://user:password@host:port/dbname or postgres://user:password@host:port/dbname)"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(autouse=True)
def store_plugin(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A plugin that migrates a table of its own while it registers (so it opens the store)."""
    module = types.ModuleType(PLUGIN)

    def register(app: Any) -> None:
        app.store.migrate("start_plugin", ["CREATE TABLE start_plugin (id INTEGER)"])

    module.register = register  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, PLUGIN, module)
    keep_serve_state(monkeypatch)  # what the serve tests change for the whole process
    yield


@pytest.fixture
def uvicorn_calls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []

    def fake_run(app: Any, **options: Any) -> None:
        calls.append(app)

    monkeypatch.setattr(uvicorn, "run", fake_run)
    return calls


@pytest.mark.parametrize(
    "command",
    [["serve", *UVICORN_ASGI, "--port", "{port}"], ["routes"], ["openapi"]],
    ids=["serve", "routes", "openapi"],
)
def test_postgresql_down_is_the_databases_failure_not_the_plugins(
    capsys: pytest.CaptureFixture[str], uvicorn_calls: list[Any], command: list[str]
) -> None:
    closed = free_port()  # nothing listens there
    db = f"postgresql://ed:s3cret@127.0.0.1:{closed}/site"
    argv = [part.replace("{port}", str(free_port())) for part in command]
    status, out, err = run(capsys, *argv, "--db", db, "--plugin", f"{PLUGIN}:register")
    shown = f"postgresql://ed@127.0.0.1:{closed}/site"
    assert (status, out) == (2, "")
    assert err == (
        f"svcrest: error: cannot open the database '{shown}': connection failed: connection to"
        f' server at "127.0.0.1", port {closed} failed: Connection refused\n'
        "\tIs the server running on that host and accepting TCP/IP connections?\n"
    )
    assert uvicorn_calls == []


@pytest.mark.parametrize("server", ["granian", "uvicorn"])
def test_serve_without_the_server_fails_before_anything_is_made_or_said(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    server: str,
) -> None:
    real_import = builtins.__import__

    def without_server(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == server or name.startswith(f"{server}."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_server)
    db = tmp_path / "var" / "site.db"
    argv = ["serve", "--server", server, "--port", str(free_port()), "--db", str(db)]
    assert run(capsys, *argv) == (
        2,
        "",
        f"svcrest: error: {server} is not installed: pip install 'svcrest[server]'\n",
    )
    assert not db.parent.exists()  # no directory, no database, no admin made


@pytest.mark.parametrize(
    "command",
    [
        ["serve", *UVICORN_ASGI, "--port", "{port}"],
        ["routes"],
        ["request", "GET", "/demo/v1/notes"],
        ["user", "add", "ed", "--role", "editor"],
    ],
    ids=["serve", "routes", "request", "user-add"],
)
def test_another_kind_of_url_names_every_accepted_form(
    capsys: pytest.CaptureFixture[str], uvicorn_calls: list[Any], command: list[str]
) -> None:
    argv = [part.replace("{port}", str(free_port())) for part in command]
    status, out, err = run(capsys, *argv, "--db", "mysql://ed:s3cret@db.example/site")
    assert (status, out) == (2, "")
    assert err == (
        "svcrest: error: cannot open the database 'mysql://ed@db.example/site': unsupported"
        f" database URL scheme 'mysql': use {FORMS}\n"
    )


def test_the_forms_named_are_the_ones_accepted() -> None:
    from svcrest.store.locations import STORE_FORMS

    assert STORE_FORMS == FORMS


def test_the_login_line_when_no_admin_was_ever_made(
    capsys: pytest.CaptureFixture[str], uvicorn_calls: list[Any], tmp_path: Path
) -> None:
    db = str(tmp_path / "site.db")
    assert run(capsys, "user", "add", "ed", "--role", "editor", "--db", db)[0] == 0
    port = free_port()
    status, out, err = run(capsys, "serve", *UVICORN_ASGI, "--port", str(port), "--db", db)
    home = f"http://127.0.0.1:{port}"
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        f"Serving {home}/ (REST API at {home}/svc-json/) with uvicorn (asgi)",
        f"Log in at {home}/login as one of the site's users (there is no user admin: svcrest"
        " user list shows them); add users with: svcrest user add LOGIN --role ROLE",
    ]
    uvicorn_calls[0].store.close()


def test_the_login_line_names_admin_once_it_exists(
    capsys: pytest.CaptureFixture[str], uvicorn_calls: list[Any], tmp_path: Path
) -> None:
    db = str(tmp_path / "site.db")
    port = free_port()
    argv = ["serve", *UVICORN_ASGI, "--port", str(port), "--db", db]
    assert run(capsys, *argv)[0] == 0
    uvicorn_calls[0].store.close()
    status, out, err = run(capsys, *argv)
    home = f"http://127.0.0.1:{port}"
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        f"Serving {home}/ (REST API at {home}/svc-json/) with uvicorn (asgi)",
        f"Log in at {home}/login as admin (its password was printed on first start); add users"
        " with: svcrest user add LOGIN --role ROLE",
    ]
    uvicorn_calls[1].store.close()


def test_a_plugin_with_a_syntax_error_shows_where(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A syntax error has no frame of the plugin's own: its file, line and column are shown
    (as a reloading worker shows them after a bad save)."""
    path = tmp_path / "misspelt_plugin.py"
    path.write_text("def register(app):\n    x = (\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = "misspelt_plugin:register"
    status, out, err = run(capsys, "routes", "--db", ":memory:", "--plugin", spec)
    assert (status, out) == (2, "")
    assert err == (
        "Traceback (most recent call last; the plugin's frames, --traceback shows all):\n"
        f'  File "{path.resolve()}", line 2\n'
        "    x = (\n"
        "        ^\n"
        "SyntaxError: '(' was never closed\n"
        f"svcrest: error: cannot load plugin '{spec}': SyntaxError: '(' was never closed"
        " (misspelt_plugin.py, line 2)\n"
    )


@pytest.fixture
def logging_restored() -> Iterator[None]:
    """The process's logging as it was (``--log-format json`` configures the root logger
    and routes warnings through logging)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        logging.captureWarnings(False)
        root.handlers[:] = handlers
        root.setLevel(level)


def _json_lines(text: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in text.splitlines()]
    for line in lines:
        assert TIME.fullmatch(line.pop("time")), line
    return lines


def _own(message: str, level: str = "INFO", **extra: str) -> dict[str, Any]:
    return {
        "level": level,
        "logger": "svcrest",
        "message": message,
        "request_id": None,
        "method": None,
        "route": None,
        "status": None,
        "duration_ms": None,
        "user_id": None,
        "path": None,
        **extra,
    }


def test_json_start_up_lines(
    capsys: pytest.CaptureFixture[str],
    uvicorn_calls: list[Any],
    tmp_path: Path,
    logging_restored: None,
) -> None:
    db = str(tmp_path / "site.db")
    assert run(capsys, "user", "add", "ed", "--role", "editor", "--db", db)[0] == 0
    port = free_port()
    argv = ["serve", *UVICORN_ASGI, "--port", str(port), "--db", db, "--log-format", "json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    home = f"http://127.0.0.1:{port}"
    assert _json_lines(captured.err) == [_own(f"using database {db}")]
    assert _json_lines(captured.out) == [
        _own(f"Serving {home}/ (REST API at {home}/svc-json/) with uvicorn (asgi)"),
        _own(
            f"Log in at {home}/login as one of the site's users (there is no user admin:"
            " svcrest user list shows them); add users with: svcrest user add LOGIN --role ROLE"
        ),
    ]
    uvicorn_calls[0].store.close()


def test_json_plugin_failure(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    logging_restored: None,
) -> None:
    path = tmp_path / "misspelt_json_plugin.py"
    path.write_text("def register(app):\n    x = (\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = "misspelt_json_plugin:register"
    argv = ["serve", *UVICORN_ASGI, "--port", str(free_port()), "--db", str(tmp_path / "s.db")]
    assert main([*argv, "--log-format", "json", "--plugin", spec]) == 2
    captured = capsys.readouterr()
    assert _json_lines(captured.out) == [_own(f"Created the database {tmp_path / 's.db'}")]
    assert _json_lines(captured.err) == [
        _own(f"using database {tmp_path / 's.db'}"),
        _own(
            f"cannot load plugin '{spec}': SyntaxError: '(' was never closed"
            " (misspelt_json_plugin.py, line 2)",
            "ERROR",
            exception="Traceback (most recent call last; the plugin's frames, --traceback shows"
            f' all):\n  File "{path}", line 2\n    x = (\n        ^\n'
            "SyntaxError: '(' was never closed\n",
        ),
    ]
