"""The svcrest command line: routes, request, user add, serve and its errors."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import re
import signal
import socket
import subprocess
import sys
import time
import tomllib
import types
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from svcrest import App, DoingItWrong, Request, cli, public
from svcrest.cli import ENV_DB, ENV_HOME, ENV_PLUGINS, app_from_env, main
from svcrest.cli import site as cli_site
from svcrest.demo import register as register_demo
from svcrest.http.user import User
from svcrest.serve import accesslog, forwarded, launcher, uvicorn_wsgi
from svcrest.serve.metrics import ENV_ADMIN_PORT, ENV_METRICS_DIR
from svcrest.site.processes import ENV_WORKERS
from tests.cli_run import USING, env_names, keep_serve_state, run
from tests.processes import GRACEFUL_TIMEOUT, STOP_TIMEOUT, port_free, stop_server

PLUGIN = "svcrest_cli_test_plugin"
DOES_NOT_EXIST = (
    "svcrest: error: the database '{db}' does not exist (svcrest serve or svcrest user add"
    " creates it; --db :memory: reads an empty site)\n"
)
#: The routes every site has: the index, batch and the application-password routes.
CORE_ROUTES = [
    "/",
    "/batch/v1",
    "/svc/v2",
    r"/svc/v2/users/(?P<user_id>(?:[\d]+|me))/application-passwords",
    r"/svc/v2/users/(?P<user_id>(?:[\d]+|me))/application-passwords/(?P<uuid>[\w\-]+)",
]
DEMO_ROUTES = [
    "/ GET",
    "/batch/v1 POST",
    "/svc/v2 GET",
    r"/svc/v2/users/(?P<user_id>(?:[\d]+|me))/application-passwords GET, POST, DELETE",
    r"/svc/v2/users/(?P<user_id>(?:[\d]+|me))/application-passwords/(?P<uuid>[\w\-]+) GET, DELETE",
    "/demo/v1 GET",
    "/demo/v1/notes GET, POST",
    r"/demo/v1/notes/(?P<id>\d+) GET, PUT, PATCH, DELETE",
    "/demo/v1/notes/changes GET",
    r"/demo/v1/users/(?P<id>\d+) GET",
]
EXTRA_ROUTES = ["/extra/v1 GET", "/extra/v1/ping GET, POST"]
#: `svcrest serve` on uvicorn's ASGI interface (the tests that replace uvicorn.run).
UVICORN_ASGI = ("--server", "uvicorn", "--interface", "asgi")
#: The header lines every REST answer of the default site starts with (home 127.0.0.1:8000).
REST_HEADER_BLOCK = [
    "Content-Type: application/json; charset=UTF-8",
    "X-Content-Type-Options: nosniff",
    "X-Robots-Tag: noindex",
    'Link: <http://127.0.0.1:8000/svc-json/>; rel="https://api.w.org/"',
    "Vary: Origin",
    "Access-Control-Expose-Headers: X-SVC-Total, X-SVC-TotalPages, Link, ETag, RateLimit,"
    " RateLimit-Policy, Retry-After, Idempotent-Replayed, X-Request-Id",
    "Access-Control-Allow-Headers: Authorization, X-SVC-Nonce, Content-Disposition,"
    " Content-MD5, Content-Type, If-Match, If-None-Match, Idempotency-Key",
]


def _register(app: App) -> None:
    app.register_rest_route(
        "extra/v1",
        "/ping",
        {
            "permission_callback": public,
            "methods": "GET, POST",
            "callback": lambda request: {"pong": True},
        },
    )


def _broken(app: App) -> None:
    raise RuntimeError("boom")


def _bad_route(app: App) -> None:
    _register(app)
    app.register_rest_route("extra/v1", "/items/(?P<id", {"callback": _broken, **PUBLIC})


def _misspelt(app: App) -> None:
    args = {"n": {"type": "integer", "minimun": 1}}
    app.register_rest_route("extra/v1", "/count", {"callback": _broken, "args": args, **PUBLIC})


PUBLIC: dict[str, Any] = {"permission_callback": public}


@pytest.fixture(autouse=True)
def plugin_module(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    module = types.ModuleType(PLUGIN)
    vars(module).update(
        register=_register, broken=_broken, bad_route=_bad_route, misspelt=_misspelt, value=42
    )
    monkeypatch.setitem(sys.modules, PLUGIN, module)
    monkeypatch.setattr(cli_site, "entry_points", lambda group: [])
    monkeypatch.setattr(sys, "path", list(sys.path))  # plugin loading may add the cwd
    # The serve command sets variables for its workers and turns the access log on: each
    # test starts without the variables and ends as it began.
    keep_serve_state(monkeypatch)
    yield


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "site.db")


@pytest.fixture
def site_db(db: str) -> str:
    """``db``, created (reading a site needs an existing database)."""
    App(store=db).store.close()
    assert Path(db).exists()
    return db


def authenticate(db: str, login: str, password: str) -> User | None:
    app = App(store=db)
    try:
        return app.users.authenticate(login, password)
    finally:
        app.store.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def add_user(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    db: str,
    login: str,
    role: str,
    password: str = "pw",
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(password + "\n"))
    assert run(capsys, "user", "add", login, "--role", role, "--password-stdin", "--db", db)[0] == 0


# -- routes ------------------------------------------------------------------------------------


def test_routes(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "routes", "--db", ":memory:")
    assert (status, err) == (0, "")
    assert out.splitlines() == DEMO_ROUTES


def test_routes_with_plugins_each_loaded_once(capsys: pytest.CaptureFixture[str]) -> None:
    spec = f"{PLUGIN}:register"
    status, out, _ = run(capsys, "routes", "--plugin", spec, "--plugin", spec, "--db", ":memory:")
    assert status == 0
    assert out.splitlines() == DEMO_ROUTES + EXTRA_ROUTES


def test_openapi_prints_the_document(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "openapi", "--db", ":memory:", "--home", "http://h.test:9")
    assert (status, err) == (0, "")
    document = json.loads(out)
    app = App("http://h.test:9")
    register_demo(app)
    assert document == app.openapi()
    assert document["servers"] == [{"url": "http://h.test:9/svc-json"}]
    assert out.startswith('{\n  "openapi": "3.1.0",\n')


def test_openapi_with_a_plugin(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "openapi", "--plugin", f"{PLUGIN}:register", "--db", ":memory:")
    assert status == 0
    paths = json.loads(out)["paths"]
    assert set(paths["/extra/v1/ping"]) == {"x-svc-route", "get", "post"}


def test_openapi_refuses_a_missing_database(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, out, err = run(capsys, "openapi", "--db", str(tmp_path / "none.db"))
    assert (status, out) == (2, "")
    assert "does not exist" in err


def test_routes_with_entry_point_plugins(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    found = [
        EntryPoint("demo", "svcrest.demo:register", "svcrest.plugins"),
        EntryPoint("extra", f"{PLUGIN}:register", "svcrest.plugins"),
    ]
    seen: list[str] = []

    def fake_entry_points(group: str) -> list[EntryPoint]:
        seen.append(group)
        return found

    monkeypatch.setattr(cli_site, "entry_points", fake_entry_points)
    status, out, _ = run(capsys, "routes", "--plugin", f"{PLUGIN}:register", "--db", ":memory:")
    assert status == 0
    assert out.splitlines() == DEMO_ROUTES + EXTRA_ROUTES
    assert seen == ["svcrest.plugins"]


def test_broken_entry_point(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    found = [EntryPoint("gone", "svcrest_no_such_module:register", "svcrest.plugins")]
    monkeypatch.setattr(cli_site, "entry_points", lambda group: found)
    status, out, err = run(capsys, "routes", "--db", ":memory:")
    assert (status, out) == (2, "")
    assert err == (
        "svcrest: error: cannot load plugin 'svcrest_no_such_module:register' (entry point"
        " 'gone' in svcrest.plugins): ModuleNotFoundError: No module named"
        " 'svcrest_no_such_module'\n"
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (f"{PLUGIN}:broken", f"plugin '{PLUGIN}:broken' failed: RuntimeError: boom"),
        (
            "svcrest_no_such_module:register",
            "cannot load plugin 'svcrest_no_such_module:register': ModuleNotFoundError:"
            " No module named 'svcrest_no_such_module'",
        ),
        (
            f"{PLUGIN}:missing",
            f"cannot load plugin '{PLUGIN}:missing': '{PLUGIN}' has no attribute 'missing'",
        ),
        (f"{PLUGIN}:value", f"cannot load plugin '{PLUGIN}:value': 'value' is not callable"),
    ],
    ids=["raises", "no-module", "no-attribute", "not-callable"],
)
def test_bad_plugins(capsys: pytest.CaptureFixture[str], spec: str, message: str) -> None:
    status, out, err = run(capsys, "routes", "--plugin", spec, "--db", ":memory:")
    assert (status, out) == (2, "")
    assert err == f"svcrest: error: {message}\n"


@pytest.mark.parametrize("command", ["routes", "serve"])
def test_a_route_a_plugin_cannot_register_stops_the_command(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    def never_run(app: Any, **options: Any) -> None:
        raise AssertionError("the server must not start")

    monkeypatch.setattr(uvicorn, "run", never_run)
    spec = f"{PLUGIN}:bad_route"
    extra = ["--port", str(free_port()), *UVICORN_ASGI] if command == "serve" else []
    status, out, err = run(capsys, command, "--plugin", spec, "--db", ":memory:", *extra)
    line = _bad_route.__code__.co_firstlineno + 2
    assert (status, out) == (2, "")
    assert err == (
        f"svcrest: error: plugin '{spec}' cannot register the route /extra/v1/items/(?P<id"
        f" (test_cli.py:{line}): invalid route pattern '/items/(?P<id' in namespace"
        " 'extra/v1': missing >, unterminated name at position 11 of the route as written"
        " (before 'id')\n"
    )


def test_a_plugin_notice_is_shown_and_the_site_still_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.warns(DoingItWrong) as caught:
        status, out, _ = run(capsys, "routes", "--plugin", f"{PLUGIN}:misspelt", "--db", ":memory:")
    assert status == 0
    assert "/extra/v1/count GET" in out.splitlines()
    assert [str(warning.message) for warning in caught] == [
        "In the REST API route extra/v1/count: The argument definition of n has the unknown"
        " keyword 'minimun', which is ignored: did you mean 'minimum'?"
    ]
    # Shown at the plugin's line, as Python shows a warning.
    assert (caught[0].filename, caught[0].lineno) == (
        __file__,
        _misspelt.__code__.co_firstlineno + 2,
    )


# -- request -----------------------------------------------------------------------------------


def test_request_get(capsys: pytest.CaptureFixture[str], site_db: str) -> None:
    assert run(capsys, "request", "GET", "/demo/v1/notes", "--db", site_db) == (
        0,
        "200 OK\n[]\n",
        "",
    )


def test_request_anonymous_write_fails(capsys: pytest.CaptureFixture[str], site_db: str) -> None:
    status, out, err = run(
        capsys, "request", "post", "/demo/v1/notes", "--json", '{"title": "x"}', "--db", site_db
    )
    assert (status, err) == (1, "")
    status_line, _, body = out.partition("\n")
    assert status_line == "401 Unauthorized"
    assert json.loads(body) == {
        "code": "rest_cannot_create",
        "message": "Sorry, you are not allowed to create notes.",
        "data": {"status": 401},
    }


def test_request_as_user(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, db: str
) -> None:
    add_user(capsys, monkeypatch, db, "ed", "editor")
    body = '{"title": "From the shell", "date": "2024-05-06T07:08:09Z"}'
    status, out, _ = run(
        capsys, "request", "POST", "demo/v1/notes", "--json", body, "--user", "ed", "--db", db
    )
    assert status == 0
    status_line, _, data = out.partition("\n")
    assert status_line == "201 Created"
    assert json.loads(data) == {
        "id": 1,
        "title": "From the shell",
        "content": "",
        "author": 1,
        "date": "2024-05-06T07:08:09",
        "date_gmt": "2024-05-06T07:08:09",
        "_links": {
            "self": [{"href": "http://127.0.0.1:8000/svc-json/demo/v1/notes/1"}],
            "collection": [{"href": "http://127.0.0.1:8000/svc-json/demo/v1/notes"}],
            "author": [
                {"href": "http://127.0.0.1:8000/svc-json/demo/v1/users/1", "embeddable": True}
            ],
        },
    }
    status, out, _ = run(
        capsys, "request", "GET", "/demo/v1/notes?per_page=1&page=1", "-i", "--db", db
    )
    assert status == 0
    head, _, data = out.partition("\n\n")
    # The header lines as served over HTTP (issue 19): the REST block, the handler's, Allow.
    assert head.splitlines() == [
        "200 OK",
        *REST_HEADER_BLOCK,
        "X-SVC-Total: 1",
        "X-SVC-TotalPages: 1",
        "Allow: GET",  # anonymous: POST's permission callback refuses
        # The strong validator of the exact body sent (BLAKE2b, 16 bytes).
        'ETag: "c1acc7b78a10236669d8f40f66dd202b"',
        "X-Request-Id: svcrest-request",  # the command names its request
        "Content-Length: 357",  # the note with its self, collection and author links
    ]
    assert [note["title"] for note in json.loads(data)] == ["From the shell"]


def test_request_with_home(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(
        capsys, "request", "GET", "/", "--db", ":memory:", "--home", "https://example.test/blog"
    )
    assert status == 0
    assert json.loads(out.partition("\n")[2])["home"] == "https://example.test/blog"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--json", "{"],
            "--json is not valid JSON: unexpected end of data: line 1 column 2 (char 1)",
        ),
        (["--user", "ghost"], "no user with the login 'ghost'"),
    ],
    ids=["bad-json", "unknown-user"],
)
def test_request_errors(
    capsys: pytest.CaptureFixture[str], site_db: str, argv: list[str], message: str
) -> None:
    status, out, err = run(capsys, "request", "POST", "/demo/v1/notes", "--db", site_db, *argv)
    assert (status, out, err) == (2, "", f"svcrest: error: {message}\n")


# -- user add ----------------------------------------------------------------------------------


def test_user_add_password_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, db: str
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("s3cret pw\r\nsecond line\n"))
    status, out, err = run(
        capsys, "user", "add", "ed", "--role", "editor", "--role", "author", "--password-stdin",
        "--db", db,
    )  # fmt: skip
    assert (status, err) == (0, "")
    assert out == f"Created the database {db}\nCreated user ed (editor, author).\n"
    user = authenticate(db, "ed", "s3cret pw")
    assert user is not None
    assert user.roles == ("editor", "author")
    assert authenticate(db, "ed", "s3cret pw\r") is None


def test_user_add_generates_a_password(capsys: pytest.CaptureFixture[str], db: str) -> None:
    status, out, err = run(capsys, "user", "add", "ann", "--role", "subscriber", "--db", db)
    assert (status, err) == (0, "")
    created, _, out = out.partition("\n")
    assert created == f"Created the database {db}"
    match = re.fullmatch(r"Created user ann \(subscriber\) with password: ([\w-]{24})\n", out)
    assert match is not None
    assert authenticate(db, "ann", match.group(1)) is not None


@pytest.mark.parametrize(
    ("stdin", "login", "status", "message"),
    [
        ("\n", "bob", 2, "no password on standard input (--password-stdin reads its first line)"),
        ("", "bob", 2, "no password on standard input (--password-stdin reads its first line)"),
        ("pw\n", "a|b", 2, "login must not contain '|'"),
        ("pw\n", "ED", 1, "a user with the login 'ED' already exists"),
    ],
    ids=["empty-line", "no-input", "bad-login", "duplicate"],
)
def test_user_add_errors(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    db: str,
    stdin: str,
    login: str,
    status: int,
    message: str,
) -> None:
    add_user(capsys, monkeypatch, db, "ed", "editor")
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    argv = ["user", "add", login, "--role", "editor", "--password-stdin", "--db", db]
    assert run(capsys, *argv) == (status, "", f"svcrest: error: {message}\n")


# -- argument and environment errors -----------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            [],
            "svcrest: error: the following arguments are required: COMMAND (see 'svcrest --help')",
        ),
        (
            ["serve", "--port", "0"],
            "svcrest serve: error: argument --port: invalid port '0' (1-65535)"
            " (see 'svcrest serve --help')",
        ),
        (
            ["serve", "--port", "http"],
            "svcrest serve: error: argument --port: invalid port 'http' (1-65535)"
            " (see 'svcrest serve --help')",
        ),
        (
            ["serve", "--workers", "0"],
            "svcrest serve: error: argument --workers: invalid worker count '0' (1-1024)"
            " (see 'svcrest serve --help')",
        ),
        (
            ["routes", "--plugin", "no-colon"],
            "svcrest routes: error: argument --plugin: invalid plugin 'no-colon'"
            " (expected module:function) (see 'svcrest routes --help')",
        ),
        (
            ["request", "GET"],
            "svcrest request: error: the following arguments are required: ROUTE"
            " (see 'svcrest request --help')",
        ),
        (
            ["request", "G3T", "/"],
            "svcrest request: error: argument METHOD: invalid HTTP method 'G3T'"
            " (see 'svcrest request --help')",
        ),
        (
            ["user"],
            "svcrest user: error: the following arguments are required: ACTION"
            " (see 'svcrest user --help')",
        ),
        (
            ["user", "add", "ed"],
            "svcrest user add: error: the following arguments are required: --role"
            " (see 'svcrest user add --help')",
        ),
        (
            ["user", "add", "ed", "--role", "king"],
            "svcrest user add: error: argument --role: unknown role 'king' (known roles:"
            " administrator, author, editor, subscriber) (see 'svcrest user add --help')",
        ),
        (
            ["routes", "--home", "nope"],
            "svcrest: error: home must be an absolute http(s) URL, not 'nope'",
        ),
        (
            ["serve", "--workers", "2", "--db", ":memory:"],
            "svcrest: error: an in-memory database cannot be shared by several workers"
            " (use --db var/svcrest.db, or --workers 1)",
        ),
    ],
    ids=[
        "no-command",
        "port-zero",
        "port-not-number",
        "no-workers",
        "bad-plugin-spec",
        "missing-route",
        "bad-method",
        "user-without-action",
        "missing-role",
        "unknown-role",
        "bad-home",
        "memory-db-workers",
    ],
)
def test_bad_arguments(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert run(capsys, *argv) == (2, "", message + "\n")


def test_unknown_host(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "serve", "--host", "no-such-host.invalid")
    assert (status, out) == (2, "")
    # The reason is the resolver's ("Name or service not known", "No address associated…").
    assert err.startswith("svcrest: error: cannot resolve host 'no-such-host.invalid': ")
    assert err.count("\n") == 1


def test_unknown_command(capsys: pytest.CaptureFixture[str]) -> None:
    # argparse quotes the choices since Python 3.12.8 / 3.13.1.
    choices = (
        "serve, routes, request, openapi, user, webhook",
        "'serve', 'routes', 'request', 'openapi', 'user', 'webhook'",
    )
    assert run(capsys, "frobnicate") in [
        (
            2,
            "",
            f"svcrest: error: argument COMMAND: invalid choice: 'frobnicate' (choose from"
            f" {listed}) (see 'svcrest --help')\n",
        )
        for listed in choices
    ]


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "serve", "--help")
    assert status == 0
    assert out.startswith("usage: svcrest serve [-h] [--host HOST] [--port PORT] [--workers N]")


CANNOT_CREATE = (
    "svcrest: error: cannot create the directory '{directory}' for the database '{db}':"
    " Not a directory\n"
)


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["request", "GET", "/demo/v1/notes"], DOES_NOT_EXIST),
        (["user", "add", "ed", "--role", "editor"], CANNOT_CREATE),
        (["serve", "--port", "{port}"], CANNOT_CREATE),
    ],
    ids=["request", "user-add", "serve"],
)
def test_database_that_cannot_be_opened(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    uvicorn_calls: list[tuple[Any, dict[str, Any]]],
    argv: list[str],
    error: str,
) -> None:
    # Its directory cannot be made: a file stands where a directory would have to be.
    (tmp_path / "file").write_bytes(b"")
    directory = tmp_path / "file" / "dir"
    db = str(directory / "x.db")
    port = str(free_port())
    argv = [part.replace("{port}", port) for part in argv]
    expected = error.format(db=db, directory=directory)
    assert run(capsys, *argv, "--db", db) == (2, "", expected)
    assert uvicorn_calls == []


@pytest.mark.parametrize(
    ("content", "reason"),
    [(b"", "unable to open database file"), (b"x" * 200, "file is not a database")],
    ids=["directory", "not-a-database"],
)
def test_unusable_database_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, reason: str
) -> None:
    path = tmp_path / "site.db"
    if content:
        path.write_bytes(content)
    else:
        path.mkdir()
    status, out, err = run(capsys, "request", "GET", "/demo/v1/notes", "--db", str(path))
    assert (status, out) == (2, "")
    # The database named once.
    assert err == f"svcrest: error: cannot open the database '{path}': {reason}\n"


def test_port_in_use(capsys: pytest.CaptureFixture[str], db: str) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        status, out, err = run(
            capsys,
            "serve",
            *UVICORN_ASGI,
            "--port",
            str(port),
            "--db",
            db,
        )
    assert (status, out) == (2, "")
    assert err == f"svcrest: error: port {port} on 127.0.0.1 is already in use\n"
    assert not Path(db).exists()


# -- serve (uvicorn replaced) ------------------------------------------------------------------


def assert_redacting_access_log(config: dict[str, Any]) -> None:
    """The access handler of a server's logging configuration redacts secrets."""
    assert config["filters"]["svcrest_redact"] == {"()": "svcrest.serve.accesslog.RedactSecrets"}
    assert config["handlers"]["access"]["filters"] == ["svcrest_redact"]


@pytest.fixture
def uvicorn_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, dict[str, Any]]]:
    calls: list[tuple[Any, dict[str, Any]]] = []

    def fake_run(app: Any, **options: Any) -> None:
        calls.append((app, options))

    monkeypatch.setattr(uvicorn, "run", fake_run)
    return calls


def test_serve_creates_admin_once(
    capsys: pytest.CaptureFixture[str], db: str, uvicorn_calls: list[tuple[Any, dict[str, Any]]]
) -> None:
    port = free_port()
    status, out, err = run(
        capsys,
        "serve",
        *UVICORN_ASGI,
        "--port",
        str(port),
        "--db",
        db,
    )
    assert (status, err) == (0, "")
    created, *lines = out.splitlines()
    assert created == f"Created the database {db}"
    match = re.fullmatch(r"Created user admin with password: ([\w-]{24})", lines[0])
    assert match is not None
    home = f"http://127.0.0.1:{port}"
    assert lines[1:] == [
        f"Serving {home}/ (REST API at {home}/svc-json/) with uvicorn (asgi)",
        f"Log in at {home}/login as admin (its password was printed on first start); add users"
        " with: svcrest user add LOGIN --role ROLE",
    ]
    app, options = uvicorn_calls[0]
    assert isinstance(app, App)
    assert app.home == home
    assert_redacting_access_log(options.pop("log_config"))
    assert options == {
        "host": "127.0.0.1",
        "port": port,
        "interface": "asgi3",
        "http": "svcrest.serve.uvicorn_protocol:BoundedHttpToolsProtocol",
        "access_log": True,
        "log_level": "info",
        "proxy_headers": False,
        "timeout_keep_alive": 5.0,
        "h11_max_incomplete_event_size": 131072,
        "limit_concurrency": 1024,
        "timeout_graceful_shutdown": 30,
    }
    admin = authenticate(db, "admin", match.group(1))
    assert admin is not None
    assert admin.roles == ("administrator",)
    app.store.close()

    status, out, _ = run(
        capsys,
        "serve",
        *UVICORN_ASGI,
        "--port",
        str(port),
        "--db",
        db,
    )
    assert status == 0
    assert not out.startswith("Created user")
    uvicorn_calls[1][0].store.close()


def test_serve_with_workers_uses_the_env_factory(
    capsys: pytest.CaptureFixture[str], db: str, uvicorn_calls: list[tuple[Any, dict[str, Any]]]
) -> None:
    port = free_port()
    argv = [
        "serve",
        *UVICORN_ASGI,
        "--port",
        str(port),
        "--db",
        db,
        "--workers",
        "3",
    ]
    argv += ["--plugin", f"{PLUGIN}:register", "--home", "http://example.test/site/"]
    status, out, _ = run(capsys, *argv)
    assert status == 0
    assert (
        "Serving http://example.test/site/ (REST API at http://example.test/site/svc-json/)" in out
    )
    target, options = uvicorn_calls[0]
    assert target == "svcrest.cli:app_from_env"
    assert_redacting_access_log(options.pop("log_config"))
    assert options == {
        "host": "127.0.0.1",
        "port": port,
        "interface": "asgi3",
        "http": "svcrest.serve.uvicorn_protocol:BoundedHttpToolsProtocol",
        "access_log": True,
        "log_level": "info",
        "proxy_headers": False,
        "timeout_keep_alive": 5.0,
        "h11_max_incomplete_event_size": 131072,
        "limit_concurrency": 1024,
        "timeout_graceful_shutdown": 30,
        "factory": True,
        "workers": 3,
        "reload": False,
    }
    assert (os.environ[ENV_DB], os.environ[ENV_HOME]) == (db, "http://example.test/site/")
    assert os.environ[ENV_PLUGINS] == f"{PLUGIN}:register"
    app = app_from_env()
    assert app.home == "http://example.test/site"
    assert list(app.rest_get_server().get_routes()) == [
        *CORE_ROUTES,
        "/demo/v1",
        "/demo/v1/notes",
        r"/demo/v1/notes/(?P<id>\d+)",
        "/demo/v1/notes/changes",
        r"/demo/v1/users/(?P<id>\d+)",
        "/extra/v1",
        "/extra/v1/ping",
    ]
    assert app.users.get_by_login("admin") is not None
    app.store.close()


def test_serve_reports_uvicorn_startup_failure(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_run(app: Any, **options: Any) -> None:
        raise SystemExit(3)

    monkeypatch.setattr(uvicorn, "run", failing_run)
    assert main(["serve", "--port", str(free_port()), "--db", ":memory:"]) == 3


# -- serve for real ----------------------------------------------------------------------------


def _wait_for_port(port: int, process: subprocess.Popen[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[0]
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"svcrest serve did not listen on port {port} in {timeout} s")


def test_serve_subprocess(tmp_path: Path) -> None:
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "svcrest",
        "serve",
        *UVICORN_ASGI,
        "--port",
        str(port),
    ]
    command += ["--db", str(tmp_path / "site.db"), "--graceful-timeout", str(GRACEFUL_TIMEOUT)]
    process = subprocess.Popen(
        command,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # stopped with its whole process group
    )
    try:
        _wait_for_port(port, process, timeout=10)
        response = httpx.get(f"http://127.0.0.1:{port}/svc-json/demo/v1/notes", timeout=5)
        assert response.status_code == 200
        assert response.headers["X-SVC-Total"] == "0"
        assert response.json() == []
    finally:
        stopped = stop_server(process, STOP_TIMEOUT)
        output = process.communicate(timeout=10)[0]
    assert stopped, output
    assert port_free(port)
    # uvicorn shuts down gracefully, then re-raises the signal it caught.
    assert process.returncode == -signal.SIGTERM
    assert "Application shutdown complete." in output
    assert output.count("Created user admin with password: ") == 1
    assert f"Serving http://127.0.0.1:{port}/" in output


# -- a database that does not exist (issue 18) -------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [["request", "GET", "/demo/v1/notes"], ["routes"]],
    ids=["request", "routes"],
)
@pytest.mark.parametrize(
    ("given", "path"),
    [
        ("typo.db", "typo.db"),
        ("sqlite:///typo.db", "typo.db"),
        ("sqlite:///{tmp}/typo.db", "{tmp}/typo.db"),
        (None, "var/svcrest.db"),
    ],
    ids=["path", "relative-url", "absolute-url", "default"],
)
def test_reading_commands_refuse_a_database_that_does_not_exist(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    command: list[str],
    given: str | None,
    path: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "var").mkdir()
    path = path.replace("{tmp}", str(tmp_path))
    argv = command if given is None else [*command, "--db", given.replace("{tmp}", str(tmp_path))]
    assert run(capsys, *argv) == (
        2,
        "",
        f"svcrest: error: the database '{path}' does not exist (svcrest serve or svcrest user"
        " add creates it; --db :memory: reads an empty site)\n",
    )
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["var"]


def test_routes_reads_an_existing_database(
    capsys: pytest.CaptureFixture[str], site_db: str
) -> None:
    assert run(capsys, "routes", "--db", site_db) == (0, "\n".join(DEMO_ROUTES) + "\n", "")


def test_user_add_says_it_created_the_database_once(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.StringIO("pw\n"))
    argv = ["user", "add", "ed", "--role", "editor", "--password-stdin", "--db", "sqlite:///s.db"]
    assert run(capsys, *argv) == (0, "Created the database s.db\nCreated user ed (editor).\n", "")
    monkeypatch.setattr(sys, "stdin", io.StringIO("pw\n"))
    argv[2] = "ann"
    assert run(capsys, *argv) == (0, "Created user ann (editor).\n", "")
    assert run(capsys, "request", "GET", "/demo/v1/notes", "--db", "s.db") == (
        0,
        "200 OK\n[]\n",
        "",
    )


def test_serve_says_it_created_the_database_only_the_first_time(
    capsys: pytest.CaptureFixture[str], db: str, uvicorn_calls: list[tuple[Any, dict[str, Any]]]
) -> None:
    port = str(free_port())
    status, out, _ = run(
        capsys, "serve", "--server", "uvicorn", "--interface", "asgi", "--port", port, "--db", db
    )
    assert status == 0
    assert out.splitlines()[0] == f"Created the database {db}"
    uvicorn_calls[0][0].store.close()
    status, out, _ = run(
        capsys, "serve", "--server", "uvicorn", "--interface", "asgi", "--port", port, "--db", db
    )
    assert status == 0
    assert "Created" not in out
    uvicorn_calls[1][0].store.close()


@pytest.mark.parametrize("db_option", [":memory:", "sqlite:///:memory:"])
def test_an_in_memory_database_needs_no_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    db_option: str,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "request", "GET", "/demo/v1/notes", "--db", db_option)[0] == 0
    assert list(tmp_path.iterdir()) == []


# -- output into a closed pipe (issue 18) ------------------------------------------------------


def test_request_into_a_closed_pipe_ends_quietly(site_db: str) -> None:
    app = App(store=site_db)
    register_demo(app)
    editor = app.users.create("ed", "pw", roles=("editor",))
    for number in range(100):
        note = {"title": f"n{number}", "content": "x" * 4000}
        request = Request("POST", "/demo/v1/notes", json=note)
        request.user = editor
        assert app.rest_do_request(request).status == 201
    app.store.close()
    argv = ["request", "GET", "/demo/v1/notes?per_page=100", "--db", site_db]
    # About 400 KB of output: more than a pipe holds, so the writer meets the closed pipe.
    with subprocess.Popen(
        [sys.executable, "-m", "svcrest", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        head = [process.stdout.readline() for _ in range(3)]
        process.stdout.close()  # what `| head -3` does after three lines
        errors = process.stderr.read()
        status = process.wait(timeout=60)
    assert head[0] == b"200 OK\n"
    assert errors == f"{USING}{site_db}\n".encode()
    assert status == cli.BROKEN_PIPE_STATUS == 141


# -- a newcomer's svcrest (issue 19) -----------------------------------------------------------


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with (Path(__file__).resolve().parents[1] / "pyproject.toml").open("rb") as file:
        declared = tomllib.load(file)["project"]["version"]
    assert run(capsys, "--version") == (0, f"svcrest {declared}\n", "")


PLUGIN_SOURCE = """\
import svcrest


def register(app):
    handler = {"callback": lambda request: {"pong": 1}, "permission_callback": svcrest.public}
    app.register_rest_route("cwd/v1", "/ping", handler)
"""


def svcrest_script() -> str:
    """The ``svcrest`` console script of this environment (what a newcomer runs)."""
    script = Path(sys.executable).with_name("svcrest")
    assert script.is_file(), f"{script} is missing: pip install -e ."
    return str(script)


def test_console_script_imports_a_plugin_from_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "cwd_plugin.py").write_text(PLUGIN_SOURCE)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONSAFEPATH"}
    env.pop("PYTHONPATH", None)
    plugin = ["--plugin", "cwd_plugin:register", "--db", ":memory:"]
    routes = subprocess.run(
        [svcrest_script(), "routes", *plugin],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (routes.returncode, routes.stderr) == (0, f"{USING}:memory:\n")
    assert routes.stdout.splitlines() == [*DEMO_ROUTES, "/cwd/v1 GET", "/cwd/v1/ping GET"]
    answer = subprocess.run(
        [svcrest_script(), "request", "GET", "/cwd/v1/ping", *plugin],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (answer.returncode, answer.stdout, answer.stderr) == (
        0,
        '200 OK\n{\n  "pong": 1\n}\n',
        f"{USING}:memory:\n",
    )
    # PYTHONSAFEPATH keeps the current directory off sys.path, for python -m and for us.
    safe = subprocess.run(
        [svcrest_script(), "routes", *plugin],
        cwd=tmp_path, env={**env, "PYTHONSAFEPATH": "1"}, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert (safe.returncode, safe.stdout) == (2, "")
    assert safe.stderr == (
        f"{USING}:memory:\n"
        "svcrest: error: cannot load plugin 'cwd_plugin:register': ModuleNotFoundError:"
        " No module named 'cwd_plugin'\n"
    )


def test_plugin_loading_puts_the_current_directory_first_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cwd_plugin_once.py").write_text(PLUGIN_SOURCE)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "cwd_plugin_once", raising=False)
    for _ in range(2):
        assert callable(cli.load_plugin("cwd_plugin_once:register"))
    assert sys.path[0] == str(tmp_path)
    assert sys.path.count(str(tmp_path)) == 1


@pytest.fixture
def notes_db(db: str) -> str:
    """``db`` with the editor ``ed`` (password ``pw``) and two notes."""
    app = App(store=db)
    register_demo(app)
    editor = app.users.create("ed", "pw", roles=("editor",))
    for title, date in (("First", "2024-01-01T10:00:00Z"), ("Second", "2024-01-02T10:00:00Z")):
        request = Request("POST", "/demo/v1/notes", json={"title": title, "date": date})
        request.user = editor
        assert app.rest_do_request(request).status == 201
    app.store.close()
    return db


@pytest.mark.parametrize(
    "target",
    [
        "/demo/v1/notes?per_page=1&_fields=id,title",
        "demo/v1/notes?per_page=1&_fields=id,title",
        "/svc-json/demo/v1/notes?per_page=1&_fields=id,title",
        "/svc-json/demo/v1/notes/?per_page=1&_fields=id,title",
        "?rest_route=/demo/v1/notes&per_page=1&_fields=id,title",
        "/?rest_route=/demo/v1/notes&per_page=1&_fields=id,title",
        "http://127.0.0.1:8000/svc-json/demo/v1/notes?per_page=1&_fields=id,title",
        "http://127.0.0.1:8000/?rest_route=/demo/v1/notes&per_page=1&_fields=id,title",
    ],
    ids=[
        "route",
        "route-without-slash",
        "prefixed-path",
        "prefixed-path-trailing-slash",
        "rest-route",
        "slash-rest-route",
        "full-url",
        "full-url-rest-route",
    ],
)
def test_request_targets_and_fields(
    capsys: pytest.CaptureFixture[str], notes_db: str, target: str
) -> None:
    # _fields is applied by rest_post_dispatch, which internal dispatch never runs.
    assert run(capsys, "request", "GET", target, "--db", notes_db) == (
        0,
        '200 OK\n[\n  {\n    "id": 2,\n    "title": "Second"\n  }\n]\n',
        "",
    )


def test_request_envelope(capsys: pytest.CaptureFixture[str], notes_db: str) -> None:
    status, out, err = run(capsys, "request", "GET", "/demo/v1/notes/9?_envelope", "--db", notes_db)
    assert (status, err) == (0, "")  # the envelope is a 200
    status_line, _, body = out.partition("\n")
    assert status_line == "200 OK"
    assert json.loads(body) == {
        "body": {
            "code": "rest_note_invalid_id",
            "message": "Invalid note ID.",
            "data": {"status": 404},
        },
        "status": 404,
        "headers": {"Allow": "GET"},
    }


def test_request_method_override(capsys: pytest.CaptureFixture[str], notes_db: str) -> None:
    status, out, _ = run(
        capsys, "request", "POST", "/demo/v1/notes/1?_method=DELETE", "--user", "ed",
        "--db", notes_db,
    )  # fmt: skip
    assert (status, out.partition("\n")[0]) == (0, "200 OK")
    assert run(capsys, "request", "GET", "/demo/v1/notes/1", "--db", notes_db)[:2] == (
        1,
        '404 Not Found\n{\n  "code": "rest_note_invalid_id",\n  "message": "Invalid note ID.",'
        '\n  "data": {\n    "status": 404\n  }\n}\n',
    )


@pytest.mark.parametrize(
    ("argv", "path"),
    [
        (["GET", "/demo/v1/notes?per_page=1"], "/svc-json/demo/v1/notes?per_page=1"),
        (["HEAD", "/demo/v1/notes"], "/svc-json/demo/v1/notes"),
        (["GET", "/demo/v1/notes/2", "--user", "ed"], "/svc-json/demo/v1/notes/2"),
        (["OPTIONS", "/demo/v1/notes/2"], "/svc-json/demo/v1/notes/2"),
        (["GET", "/demo/v1/nothing"], "/svc-json/demo/v1/nothing"),
    ],
    ids=["list", "head", "as-user", "options", "no-route"],
)
def test_request_include_prints_the_lines_served_over_http(
    capsys: pytest.CaptureFixture[str],
    client_for: Any,
    notes_db: str,
    argv: list[str],
    path: str,
) -> None:
    status, out, _ = run(capsys, "request", *argv, "-i", "--db", notes_db)
    head, _, _ = out.partition("\n\n")
    app = App("http://127.0.0.1:8000", store=notes_db)
    register_demo(app)
    client = client_for(app)
    headers = {"X-Request-Id": "svcrest-request"}
    if "--user" in argv:
        password = {"log": "ed", "pwd": "pw"}
        assert client.post("/login", data=password).status_code == 303
        headers["X-SVC-Nonce"] = client.get("/auth/nonce").json()["nonce"]
    response = client.request(argv[0], path, headers=headers)
    served = [f"{name.decode()}: {value.decode()}" for name, value in response.headers.raw]
    # The nonce a valid one earns is the one thing a nonce-less --user request cannot get.
    served = [line for line in served if not line.startswith("X-SVC-Nonce: ")]
    assert head.splitlines() == [f"{response.status_code} {response.reason_phrase}", *served]
    assert status == (0 if response.status_code < 400 else 1)
    app.store.close()


def test_request_include_shows_the_rest_header_block(
    capsys: pytest.CaptureFixture[str], notes_db: str
) -> None:
    status, out, _ = run(
        capsys, "request", "GET", "/demo/v1/notes/2?_fields=id", "-i", "--user", "ed",
        "--db", notes_db,
    )  # fmt: skip
    assert (status, out) == (
        0,
        "\n".join(
            [
                "200 OK",
                *REST_HEADER_BLOCK,
                "Cache-Control: no-store",
                'ETag: "2-1"',  # the note's version (its etag_callback): id-revision
                "Allow: GET, PUT, PATCH, DELETE",
                "X-Request-Id: svcrest-request",
                "Content-Length: 8",
                "",
                '{\n  "id": 2\n}\n',
            ]
        ),
    )


@pytest.mark.parametrize(
    ("home", "target", "sent"),
    [
        ("http://127.0.0.1:8000", "/demo/v1/notes", "/svc-json/demo/v1/notes"),
        ("http://127.0.0.1:8000", "demo/v1/notes?a=1", "/svc-json/demo/v1/notes?a=1"),
        ("http://127.0.0.1:8000", "/", "/svc-json/"),
        ("http://127.0.0.1:8000", "", "/svc-json/"),
        ("http://127.0.0.1:8000", "/svc-json", "/svc-json"),
        ("http://127.0.0.1:8000", "/svc-jsonx/a", "/svc-json/svc-jsonx/a"),
        ("http://127.0.0.1:8000", "?rest_route=/a", "/?rest_route=/a"),
        ("http://127.0.0.1:8000", "/?rest_route=", "/svc-json/?rest_route="),
        ("https://example.test/blog", "/demo/v1/notes", "/blog/svc-json/demo/v1/notes"),
        ("https://example.test/blog", "/svc-json/a", "/blog/svc-json/a"),
        ("https://example.test/blog", "/blog/svc-json/a", "/blog/svc-json/a"),
        ("https://example.test/blog", "?rest_route=/a", "/blog/?rest_route=/a"),
        ("https://example.test/blog", "https://EXAMPLE.test:443/blog/svc-json/a?b",
         "/blog/svc-json/a?b"),
        ("https://example.test/blog", "https://example.test/blog?rest_route=/a",
         "/blog?rest_route=/a"),
    ],
)  # fmt: skip
def test_request_target(home: str, target: str, sent: str) -> None:
    assert cli.request_target(App(home), target) == sent


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (
            "http://127.0.0.1:9000/svc-json/demo/v1/notes",
            "http://127.0.0.1:9000/svc-json/demo/v1/notes is not on this site, whose home is"
            " http://127.0.0.1:8000 (to serve it, pass --home http://127.0.0.1:9000)",
        ),
        (
            "https://127.0.0.1:8000/svc-json/",
            "https://127.0.0.1:8000/svc-json/ is not on this site, whose home is"
            " http://127.0.0.1:8000 (to serve it, pass --home https://127.0.0.1:8000)",
        ),
        (
            "http://127.0.0.1:8000/login",
            "http://127.0.0.1:8000/login is not a REST URL: its path is not under"
            " http://127.0.0.1:8000/svc-json/ and it has no rest_route query variable",
        ),
        ("http://[::1/svc-json/", "invalid URL 'http://[::1/svc-json/': Invalid IPv6 URL"),
    ],
    ids=["other-port", "other-scheme", "not-rest", "invalid"],
)
def test_request_refuses_urls_elsewhere(
    capsys: pytest.CaptureFixture[str], site_db: str, target: str, message: str
) -> None:
    assert run(capsys, "request", "GET", target, "--db", site_db) == (
        2,
        "",
        f"svcrest: error: {message}\n",
    )


def test_request_at_another_home(capsys: pytest.CaptureFixture[str], site_db: str) -> None:
    argv = ["request", "GET", "http://localhost:9000/svc-json/", "--db", site_db]
    status, out, _ = run(capsys, *argv, "--home", "http://localhost:9000")
    assert status == 0
    assert json.loads(out.partition("\n")[2])["home"] == "http://localhost:9000"


@pytest.mark.parametrize(
    ("argv", "created"),
    [
        (
            ["user", "add", "ed", "--role", "editor", "--password-stdin"],
            "Created user ed (editor).",
        ),
        (
            ["serve", "--server", "uvicorn", "--interface", "asgi", "--port", "{port}"],
            "Created user admin with password: ",
        ),
    ],
    ids=["user-add", "serve"],
)
def test_commands_that_create_the_database_create_its_directory(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    uvicorn_calls: list[tuple[Any, dict[str, Any]]],
    argv: list[str],
    created: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.StringIO("pw\n"))
    argv = [part.replace("{port}", str(free_port())) for part in argv]
    status, out, err = run(capsys, *argv, "--db", "var/deep/x.db")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[:2] == ["Created the directory var/deep", "Created the database var/deep/x.db"]
    assert lines[2].startswith(created)
    assert (tmp_path / "var" / "deep" / "x.db").is_file()
    for app, _ in uvicorn_calls:
        app.store.close()
    # Reading commands find it now.
    assert run(capsys, "routes", "--db", "var/deep/x.db")[0] == 0


@pytest.mark.parametrize(
    "command", [["request", "GET", "/demo/v1/notes"], ["routes"]], ids=["request", "routes"]
)
def test_reading_commands_refuse_a_database_whose_directory_does_not_exist(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    command: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    for db in ("var/x.db", "sqlite:///var/x.db"):
        assert run(capsys, *command, "--db", db) == (2, "", DOES_NOT_EXIST.format(db="var/x.db"))
    assert list(tmp_path.iterdir()) == []


def test_the_serving_guide_shows_the_real_output(
    capsys: pytest.CaptureFixture[str], notes_db: str
) -> None:
    guide = (Path(__file__).resolve().parents[1] / "docs/guides/serving.md").read_text()
    [block] = re.findall(r"```console\n\$ svcrest (.*?)\n(.*?)```", guide, re.DOTALL)
    command, shown = block
    argv = [part.strip("'") for part in command.split()]
    assert run(capsys, *argv, "--db", notes_db) == (0, shown, "")


# -- serve on granian (issue 13; granian replaced) ---------------------------------------------


@pytest.fixture
def granian_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    import granian

    calls: list[dict[str, Any]] = []

    class FakeGranian:
        def __init__(self, **options: Any) -> None:
            calls.append(options)

        def serve(self) -> None:
            pass

    monkeypatch.setattr(granian, "Granian", FakeGranian)
    for name in (ENV_DB, ENV_HOME, ENV_PLUGINS, cli.ENV_DEMO):
        monkeypatch.delenv(name, raising=False)
    return calls


def test_serve_defaults_to_granian_asgi(
    capsys: pytest.CaptureFixture[str], db: str, granian_calls: list[dict[str, Any]]
) -> None:
    from granian.constants import Interfaces
    from granian.http import HTTP1Settings

    port = free_port()
    status, out, err = run(capsys, "serve", "--port", str(port), "--db", db, "--no-demo")
    assert (status, err) == (0, "")
    home = f"http://127.0.0.1:{port}"
    assert f"Serving {home}/ (REST API at {home}/svc-json/) with granian (asgi)" in out
    [options] = granian_calls
    assert_redacting_access_log(options.pop("log_dictconfig"))
    # svcrest writes the access line itself, around the site (tests/serve/test_access_line.py).
    assert options == {
        "target": "svcrest.serve.accesslog:asgi_from_env",
        "factory": True,
        "address": "127.0.0.1",
        "port": port,
        "interface": Interfaces.ASGI,
        "workers": 1,
        "reload": False,
        "log_access": False,
        "backpressure": 1024,
        "workers_kill_timeout": 30,
        "http1_settings": HTTP1Settings(header_read_timeout=10_000, max_buffer_size=131072),
        "websockets": False,
    }
    assert (os.environ[ENV_DB], os.environ[ENV_HOME]) == (db, home)
    assert (os.environ[ENV_PLUGINS], os.environ[cli.ENV_DEMO]) == ("", "0")
    assert os.environ["SVCREST_ACCESS_TARGET"] == "svcrest.cli:app_from_env"
    # What the worker builds: the site without the demo.
    site = cli.app_from_env()
    assert isinstance(site, App)
    assert list(site.rest_get_server().get_routes()) == CORE_ROUTES
    site.store.close()


def test_serve_granian_asgi_options(
    capsys: pytest.CaptureFixture[str], db: str, granian_calls: list[dict[str, Any]]
) -> None:
    from granian.constants import Interfaces
    from granian.http import HTTP1Settings

    port = free_port()
    argv = ["serve", "--interface", "asgi", "--port", str(port), "--db", db, "--no-demo"]
    status, out, err = run(capsys, *argv)
    assert (status, err) == (0, "")
    home = f"http://127.0.0.1:{port}"
    assert f"Serving {home}/ (REST API at {home}/svc-json/) with granian (asgi)" in out
    [options] = granian_calls
    assert_redacting_access_log(options.pop("log_dictconfig"))
    # svcrest writes the access line itself, around the site (tests/serve/test_access_line.py).
    assert options == {
        "target": "svcrest.serve.accesslog:asgi_from_env",
        "factory": True,
        "address": "127.0.0.1",
        "port": port,
        "interface": Interfaces.ASGI,
        "workers": 1,
        "reload": False,
        "log_access": False,
        "backpressure": 1024,
        "workers_kill_timeout": 30,
        "http1_settings": HTTP1Settings(header_read_timeout=10_000, max_buffer_size=131072),
        "websockets": False,
    }
    # What the worker builds: the site without the demo.
    site = app_from_env()
    assert list(site.rest_get_server().get_routes()) == CORE_ROUTES
    site.store.close()


def test_serve_granian_wsgi_options(
    capsys: pytest.CaptureFixture[str], db: str, granian_calls: list[dict[str, Any]]
) -> None:
    import watchfiles
    from granian.constants import Interfaces
    from granian.http import HTTP1Settings

    argv = ["serve", "--server", "granian", "--interface", "wsgi", "--port", str(free_port())]
    argv += ["--db", db, "--workers", "2", "--reload", "--no-access-log", "--header-timeout", "2"]
    assert run(capsys, *argv)[0] == 0
    [options] = granian_calls
    del options["log_dictconfig"], options["port"], options["address"]
    assert options == {
        "target": "svcrest.cli:wsgi_from_env",
        "factory": True,
        "interface": Interfaces.WSGI,
        "workers": 2,
        "reload": True,
        "log_access": False,
        "backpressure": 1024,
        "workers_kill_timeout": 30,
        "http1_settings": HTTP1Settings(header_read_timeout=2000, max_buffer_size=131072),
        "websockets": False,
        "blocking_threads": launcher.granian_threads(),
        "reload_filter": watchfiles.PythonFilter,
        "reload_ignore_worker_failure": True,
    }
    assert os.environ[cli.ENV_DEMO] == "1"
    assert os.environ[launcher.ENV_BODY_TIMEOUT] == "30.0"
    # Half of the request threads may read bodies; the others serve everyone else.
    assert os.environ[launcher.ENV_BODY_READERS] == str(max(1, launcher.granian_threads() // 2))
    # What the worker serves: the WSGI callable of the site.
    wsgi = cli.wsgi_from_env()
    site = wsgi.host
    assert isinstance(site, App)
    assert site.wsgi is wsgi
    site.store.close()


def test_an_in_memory_database_is_served_by_uvicorn(
    capsys: pytest.CaptureFixture[str],
    uvicorn_calls: list[tuple[Any, dict[str, Any]]],
    granian_calls: list[dict[str, Any]],
) -> None:
    status, out, _ = run(capsys, "serve", "--port", str(free_port()), "--db", ":memory:")
    assert status == 0
    assert "with uvicorn (asgi)" in out
    [(served, options)] = uvicorn_calls
    assert isinstance(served, App)
    assert options["interface"] == "asgi3"
    assert granian_calls == []
    served.store.close()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--server", "granian", "--db", ":memory:"],
            "granian serves from worker processes, which cannot share an in-memory database"
            " (use --db var/svcrest.db, or --server uvicorn)",
        ),
        (
            ["--reload", "--db", ":memory:"],
            "an in-memory database does not survive a reload (use --db PATH)",
        ),
    ],
    ids=["granian", "reload"],
)
def test_an_in_memory_database_refused(
    capsys: pytest.CaptureFixture[str],
    granian_calls: list[dict[str, Any]],
    argv: list[str],
    message: str,
) -> None:
    assert run(capsys, "serve", *argv) == (2, "", f"svcrest: error: {message}\n")
    assert granian_calls == []


def test_proxy_headers_on_uvicorn(
    capsys: pytest.CaptureFixture[str],
    db: str,
    uvicorn_calls: list[tuple[Any, dict[str, Any]]],
    granian_calls: list[dict[str, Any]],
) -> None:
    argv = ["serve", "--server", "uvicorn", "--port", str(free_port()), "--db", db]
    status, out, _ = run(capsys, *argv, "--proxy-headers", "--forwarded-allow-ips", "10.0.0.1")
    assert status == 0
    assert "with uvicorn (asgi)" in out
    [(served, options)] = uvicorn_calls
    assert (options["proxy_headers"], options["forwarded_allow_ips"]) == (True, "10.0.0.1")
    assert granian_calls == []
    served.store.close()


@pytest.mark.parametrize(
    ("interface", "site_factory", "wrapper"),
    [
        ("wsgi", "svcrest.cli:wsgi_from_env", "svcrest.serve.forwarded:wsgi_from_env"),
        ("asgi", "svcrest.cli:app_from_env", "svcrest.serve.forwarded:asgi_from_env"),
        ("rsgi", "svcrest.cli:app_from_env", "svcrest.serve.forwarded:rsgi_from_env"),
    ],
)
def test_proxy_headers_on_the_default_server_wrap_the_site(
    capsys: pytest.CaptureFixture[str],
    db: str,
    granian_calls: list[dict[str, Any]],
    interface: str,
    site_factory: str,
    wrapper: str,
) -> None:
    argv = ["serve", "--interface", interface, "--port", str(free_port()), "--db", db]
    status, out, _ = run(capsys, *argv, "--proxy-headers", "--forwarded-allow-ips", "10.0.0.1")
    assert status == 0
    assert f"with granian ({interface})" in out
    [options] = granian_calls
    if interface == "asgi":  # svcrest's access line around the forwarded wrapper (granian's place)
        assert options["target"] == accesslog.ASGI_FACTORY
        assert os.environ[accesslog.ENV_ACCESS_TARGET] == wrapper
        logged = accesslog.asgi_from_env()
        assert isinstance(logged.app, forwarded.ForwardedASGI)
        logged.app.app.store.close()
    else:
        assert options["target"] == wrapper
    assert os.environ[forwarded.ENV_TARGET] == site_factory
    assert os.environ[forwarded.ENV_ALLOW_IPS] == "10.0.0.1"
    # What the workers load: the site wrapped, trusting the allowed address only.
    loaded: Any = {
        "wsgi": forwarded.wsgi_from_env,
        "asgi": forwarded.asgi_from_env,
        "rsgi": forwarded.rsgi_from_env,
    }[interface]()
    assert "10.0.0.1" in loaded.peers
    assert "127.0.0.1" not in loaded.peers
    site = loaded.app.host if interface == "wsgi" else loaded.app
    assert isinstance(site, App)
    site.store.close()


def test_proxy_headers_trust_localhost_by_default(
    capsys: pytest.CaptureFixture[str], db: str, granian_calls: list[dict[str, Any]]
) -> None:
    argv = ["serve", "--port", str(free_port()), "--db", db, "--proxy-headers"]
    assert run(capsys, *argv)[0] == 0
    assert os.environ[forwarded.ENV_ALLOW_IPS] == "127.0.0.1"


def test_every_variable_serve_sets_is_one_the_tests_put_back(
    capsys: pytest.CaptureFixture[str], db: str, uvicorn_calls: list[tuple[Any, dict[str, Any]]]
) -> None:
    """``keep_serve_state`` puts back the variables named by svcrest's ``ENV_*`` constants: a
    variable ``serve`` set under another name would outlive the test."""
    argv = ["serve", "--server", "uvicorn", "--interface", "wsgi", "--workers", "2", "--db", db]
    argv += ["--port", str(free_port()), "--admin-port", str(free_port()), "--title", "T"]
    assert run(capsys, *argv)[0] == 0
    assert len(uvicorn_calls) == 1
    set_now = {name for name in os.environ if name.startswith("SVCREST_")}
    assert {cli.ENV_MCP, launcher.ENV_RELOAD, uvicorn_wsgi.ENV_TARGET, ENV_ADMIN_PORT} <= set_now
    assert set_now | {ENV_METRICS_DIR} <= env_names()


def test_threads_and_max_concurrency_reach_granian(
    capsys: pytest.CaptureFixture[str], db: str, granian_calls: list[dict[str, Any]]
) -> None:
    argv = ["serve", "--port", str(free_port()), "--db", db, "--interface", "wsgi"]
    assert run(capsys, *argv, "--threads", "3", "--max-concurrency", "64")[0] == 0
    [options] = granian_calls
    assert (options["blocking_threads"], options["backpressure"]) == (3, 64)


def test_serve_on_granians_rsgi_interface(
    capsys: pytest.CaptureFixture[str], db: str, granian_calls: list[dict[str, Any]]
) -> None:
    from granian.constants import Interfaces

    port = free_port()
    argv = ["serve", "--port", str(port), "--db", db, "--interface", "rsgi"]
    status, out, err = run(capsys, *argv)
    assert (status, err) == (0, "")
    assert "with granian (rsgi)" in out
    [options] = granian_calls
    # The App is the RSGI application too: the same factory as ASGI's.
    assert (options["target"], options["interface"]) == (
        "svcrest.cli:app_from_env",
        Interfaces.RSGI,
    )
    assert "blocking_threads" not in options


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--server", "uvicorn"],
            "uvicorn has no rsgi interface (one of wsgi, asgi);"
            " --interface rsgi needs --server granian",
        ),
        (
            ["--db", ":memory:"],
            "uvicorn (the server of an in-memory database) has no rsgi interface (one of wsgi,"
            " asgi); --interface rsgi needs --server granian",
        ),
    ],
    ids=["uvicorn", "memory"],
)
def test_rsgi_only_on_granian(
    capsys: pytest.CaptureFixture[str],
    granian_calls: list[dict[str, Any]],
    argv: list[str],
    message: str,
) -> None:
    status, out, err = run(capsys, "serve", "--interface", "rsgi", *argv)
    assert (status, out, err) == (2, "", f"svcrest: error: {message}\n")
    assert granian_calls == []


def test_the_launcher_refuses_rsgi_on_uvicorn() -> None:
    from svcrest.serve.launcher import ServeConfig, serve

    config = ServeConfig(asgi_factory="m:a", wsgi_factory="m:w", server="uvicorn", interface="rsgi")
    with pytest.raises(ValueError, match="uvicorn has no rsgi interface"):
        serve(config)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--interface", "asgi"],
        ["--interface", "rsgi"],
        ["--server", "uvicorn"],
        ["--db", ":memory:"],
    ],
    ids=["default-granian-asgi", "granian-asgi", "granian-rsgi", "uvicorn", "memory"],
)
def test_threads_only_for_granian_wsgi(
    capsys: pytest.CaptureFixture[str], granian_calls: list[dict[str, Any]], argv: list[str]
) -> None:
    message = "svcrest: error: --threads sets the threads of granian's WSGI interface only\n"
    assert run(capsys, "serve", "--threads", "4", *argv) == (2, "", message)
    assert granian_calls == []


@pytest.mark.parametrize(
    ("value", "shown"), [("0", "'0'"), ("257", "'257'"), ("x", "'x'")], ids=["0", "257", "x"]
)
def test_threads_must_be_a_count(
    capsys: pytest.CaptureFixture[str], value: str, shown: str
) -> None:
    status, out, err = run(capsys, "serve", "--threads", value)
    assert (status, out) == (2, "")
    assert err.startswith(
        f"svcrest serve: error: argument --threads: invalid thread count {shown} (1-256)"
    )


def test_max_concurrency_reaches_uvicorn(
    capsys: pytest.CaptureFixture[str],
    db: str,
    uvicorn_calls: list[tuple[Any, dict[str, Any]]],
) -> None:
    argv = ["serve", "--server", "uvicorn", "--port", str(free_port()), "--db", db]
    assert run(capsys, *argv, "--max-concurrency", "64")[0] == 0
    [(served, options)] = uvicorn_calls
    assert options["limit_concurrency"] == 64
    served.store.close()


@pytest.mark.parametrize(("cpus", "threads"), [(1, 3), (2, 5), (3, 7), (4, 8), (64, 8)])
def test_default_threads_stay_below_granians_warning(
    monkeypatch: pytest.MonkeyPatch, cpus: int, threads: int
) -> None:
    monkeypatch.setattr(multiprocessing, "cpu_count", lambda: cpus)
    assert launcher.granian_threads() == threads
    assert threads <= 2 * cpus + 1  # granian warns above it


def test_the_workers_are_told_their_count(
    capsys: pytest.CaptureFixture[str], db: str, granian_calls: list[dict[str, Any]]
) -> None:
    assert run(capsys, "serve", "--port", str(free_port()), "--db", db, "--workers", "3")[0] == 0
    assert os.environ[ENV_WORKERS] == "3"


def test_reload_starts_granian_workers_as_fresh_interpreters(
    capsys: pytest.CaptureFixture[str], db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import granian

    methods: list[str | None] = []

    class FakeGranian:
        def __init__(self, **options: Any) -> None:
            pass

        def serve(self) -> None:
            methods.append(multiprocessing.get_start_method(allow_none=True))

    monkeypatch.setattr(granian, "Granian", FakeGranian)
    before = multiprocessing.get_start_method(allow_none=True)
    argv = ["serve", "--port", str(free_port()), "--db", db]
    assert run(capsys, *argv, "--reload")[0] == 0
    assert run(capsys, *argv)[0] == 0
    assert methods == ["spawn", before]
    assert multiprocessing.get_start_method(allow_none=True) == before


@pytest.mark.parametrize("workers", ["1", "2"])
def test_serve_wordpress_compat_reaches_the_served_app(
    capsys: pytest.CaptureFixture[str],
    db: str,
    uvicorn_calls: list[tuple[Any, dict[str, Any]]],
    workers: str,
) -> None:
    argv = ["serve", "--server", "uvicorn", "--interface", "asgi", "--port", str(free_port())]
    status, _, _ = run(capsys, *argv, "--db", db, "--workers", workers, "--wordpress-compat")
    assert status == 0
    target = uvicorn_calls[0][0]
    # One worker serves the App built here; several build it from the environment.
    app = app_from_env() if workers == "2" else target
    assert isinstance(app, App)
    assert app.wordpress_compat is True
    assert "/wp-admin/admin-ajax.php" in app.pages
    app.store.close()
    if workers == "2":
        assert os.environ["SVCREST_WORDPRESS_COMPAT"] == "1"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_serve_title_and_api_version_reach_the_docs_page(
    capsys: pytest.CaptureFixture[str],
    db: str,
    uvicorn_calls: list[tuple[Any, dict[str, Any]]],
    workers: str,
) -> None:
    argv = ["serve", "--server", "uvicorn", "--interface", "asgi", "--port", str(free_port())]
    options = ["--title", "Notes <API>", "--api-version", "1.4.0"]
    status, _, _ = run(capsys, *argv, "--db", db, "--workers", workers, *options)
    assert status == 0
    # One worker serves the App built here; several build it from the environment.
    app = app_from_env() if workers == "2" else uvicorn_calls[0][0]
    assert isinstance(app, App)
    assert (app.name, app.version) == ("Notes <API>", "1.4.0")
    with httpx.Client(transport=httpx.WSGITransport(app=app.wsgi), base_url=app.home) as client:
        info = client.get("/openapi.json").json()["info"]
        assert (info["title"], info["version"]) == ("Notes <API>", "1.4.0")
        docs = client.get("/docs").text
        assert "<title>Notes &lt;API&gt;" in docs
    app.store.close()
    if workers == "2":
        assert (os.environ["SVCREST_TITLE"], os.environ["SVCREST_API_VERSION"]) == (
            "Notes <API>",
            "1.4.0",
        )


def test_serve_without_a_title_keeps_the_defaults(
    capsys: pytest.CaptureFixture[str], db: str, uvicorn_calls: list[tuple[Any, dict[str, Any]]]
) -> None:
    argv = ["serve", "--server", "uvicorn", "--interface", "asgi", "--port", str(free_port())]
    assert run(capsys, *argv, "--db", db)[0] == 0
    app = uvicorn_calls[0][0]
    assert (app.name, app.version) == ("svcrest", None)
    assert app.openapi()["info"] == {"title": "svcrest", "version": "2.0"}
    app.store.close()


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--title", " "], "svcrest: error: --title must not be empty\n"),
        (["--api-version", ""], "svcrest: error: --api-version must not be empty\n"),
    ],
)
def test_serve_refuses_an_empty_title_or_version(
    capsys: pytest.CaptureFixture[str],
    db: str,
    uvicorn_calls: list[tuple[Any, dict[str, Any]]],
    option: list[str],
    message: str,
) -> None:
    argv = ["serve", "--server", "uvicorn", "--interface", "asgi", "--port", str(free_port())]
    status, _, err = run(capsys, *argv, "--db", db, *option)
    assert (status, err) == (2, message)
    assert uvicorn_calls == []


def test_serve_body_timeout_reaches_the_workers(
    capsys: pytest.CaptureFixture[str], db: str, uvicorn_calls: list[tuple[Any, dict[str, Any]]]
) -> None:
    argv = ["serve", *UVICORN_ASGI, "--port", str(free_port()), "--db", db]
    assert run(capsys, *argv, "--body-timeout", "2.5")[0] == 0
    assert os.environ[launcher.ENV_BODY_TIMEOUT] == "2.5"
    uvicorn_calls[0][0].store.close()
    for bad in ("0", "-1", "soon"):
        status, _, err = run(capsys, *argv, "--body-timeout", bad)
        assert status == 2
        assert f"invalid time-out {bad!r} (seconds, 0-3600)" in err
