"""The command line in a new user's first hour: the ``SVCREST_*`` variables as the defaults of
every command's options, the database each command says it uses, the store directory made
before plugins open it, a failing plugin's traceback, ``--no-demo`` everywhere, ``--version``."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from svcrest import App, cli
from svcrest.cli import ENV_DB, ENV_DEMO, ENV_HOME, ENV_PLUGINS, main
from svcrest.cli import site as cli_site
from svcrest.serve import accesslog
from tests.cli_run import USING, keep_serve_state
from tests.processes import GRACEFUL_TIMEOUT, STOP_TIMEOUT, port_free, stop_server

DEFAULT_LINE = f"{USING}var/svcrest.db (the default; --db or SVCREST_DB chooses another)\n"
#: The routes of a site without the demo: the index, batch and the application passwords.
CORE_ROUTES = [
    "/ GET",
    "/batch/v1 POST",
    "/svc/v2 GET",
    r"/svc/v2/users/(?P<user_id>(?:[\d]+|me))/application-passwords GET, POST, DELETE",
    r"/svc/v2/users/(?P<user_id>(?:[\d]+|me))/application-passwords/(?P<uuid>[\w\-]+) GET, DELETE",
]
DEMO_ROUTES = [
    "/demo/v1 GET",
    "/demo/v1/notes GET, POST",
    r"/demo/v1/notes/(?P<id>\d+) GET, PUT, PATCH, DELETE",
    "/demo/v1/notes/changes GET",
    r"/demo/v1/users/(?P<id>\d+) GET",
]
#: A plugin like the tutorial's: it opens the store (a migration) while it registers.
SHELF_SOURCE = """\
import svcrest

STEPS = ("CREATE TABLE shelf_books (id INTEGER PRIMARY KEY, title TEXT NOT NULL)",)


def register(app):
    app.store.migrate("shelf", STEPS)
    handler = {"callback": lambda request: {"shelf": 1}, "permission_callback": svcrest.public}
    app.register_rest_route("shelf/v1", "/books", handler)
"""
SHELF_ROUTES = ["/shelf/v1 GET", "/shelf/v1/books GET"]
#: A plugin whose register fails two calls deep in its own file.
FAILING_SOURCE = """\
def settings_of(app):
    return {}["missing"]


def register(app):
    settings_of(app)
"""


@pytest.fixture(autouse=True)
def empty_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """Each test runs in an empty folder, without the variables ``serve`` sets for its workers
    (put back afterwards, with the access-log switch) or entry-point plugins."""
    keep_serve_state(monkeypatch)
    monkeypatch.setattr(cli_site, "entry_points", lambda group: [])
    monkeypatch.setattr(sys, "path", list(sys.path))  # plugin loading adds the cwd
    monkeypatch.chdir(tmp_path)
    yield tmp_path


@pytest.fixture
def plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[str], tuple[str, Path]]]:
    """Write a plugin module into the test's folder: its ``module:register`` and its file."""
    names: list[str] = []

    def write(source: str) -> tuple[str, Path]:
        name = f"plugin_{uuid.uuid4().hex[:12]}"
        path = tmp_path / f"{name}.py"
        path.write_text(source)
        names.append(name)
        return f"{name}:register", path

    yield write
    for name in names:
        sys.modules.pop(name, None)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Exit status, standard output and the whole of standard error."""
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def make_site(path: str) -> None:
    """A database with ed (editor, "ed-pw", one application password) and ann."""
    app = App(store=path)
    ed = app.users.create("ed", "ed-pw", roles=("editor",))
    app.users.create("ann", "ann-pw")
    app.users.create_application_password(ed.id, "phone")
    app.store.close()


@pytest.fixture
def uvicorn_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, dict[str, Any]]]:
    calls: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: calls.append((app, options)))
    return calls


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
    return calls


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- every command has the options, their defaults from the environment -------------------------


def leaf_commands() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command of the parser (``("user", "app-password", "add")``…) and its parser."""
    found: list[tuple[tuple[str, ...], argparse.ArgumentParser]] = []

    def walk(path: tuple[str, ...], parser: argparse.ArgumentParser) -> None:
        subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subparsers:
            found.append((path, parser))
        for action in subparsers:
            for name, child in action.choices.items():
                walk((*path, name), child)

    walk((), cli.build_parser())
    return found


def test_every_command_has_db_and_every_site_command_the_site_options() -> None:
    commands = {path: parser for path, parser in leaf_commands()}
    assert len(commands) == 15
    site_commands = {("serve",), ("routes",), ("request",), ("openapi",)}
    for path, parser in commands.items():
        options = {option: action for action in parser._actions for option in action.option_strings}
        # None: the value comes from the environment when the option is not given.
        assert options["--db"].default is None, path
        if path in site_commands:
            assert {"--plugin", "--home", "--demo", "--no-demo", "--traceback"} <= set(options)
            assert options["--plugin"].default is None
            assert options["--home"].default is None
            assert options["--demo"].default is None
        else:
            # These open the users or the webhooks of a database: no plugins.
            assert path[0] in ("user", "webhook")
    assert site_commands <= set(commands)


def test_the_plugin_help_says_when_the_demo_is_loaded() -> None:
    for path, parser in leaf_commands():
        helps = {
            option: action.help for action in parser._actions for option in action.option_strings
        }
        if "--plugin" in helps:
            assert helps["--plugin"] == (
                "register a plugin (repeatable; default $SVCREST_PLUGINS, comma-separated); the"
                " svcrest.plugins entry points are loaded too, and the demo unless --no-demo"
            ), path


def test_svcrest_db_is_the_database_of_user_add(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, empty_folder: Path
) -> None:
    monkeypatch.setenv(ENV_DB, "env.db")
    monkeypatch.setattr(sys, "stdin", io.StringIO("pw-of-ed\n"))
    argv = ["user", "add", "ed", "--role", "editor", "--password-stdin"]
    assert run(capsys, *argv) == (
        0,
        "Created the database env.db\nCreated user ed (editor).\n",
        f"{USING}env.db (from SVCREST_DB)\n",
    )
    assert sorted(path.name for path in empty_folder.iterdir()) == ["env.db"]
    app = App(store="env.db")
    assert app.users.authenticate("ed", "pw-of-ed") is not None
    app.store.close()


@pytest.mark.parametrize(
    ("argv", "out"),
    [
        (["routes"], "/ GET\n"),
        (["openapi"], '{\n  "openapi": "3.1.0",\n'),
        (
            ["request", "GET", "/svc/v2/users/me/application-passwords", "--user", "ed"],
            '200 OK\n[\n  {\n    "uuid": ',
        ),
        (["user", "list"], "1\ted\teditor\ted\n"),
        (["user", "delete", "ann"], "Deleted user ann.\n"),
        (["user", "set-password", "ann", "--password-stdin"], "Changed the password of ann.\n"),
        (["user", "app-password", "add", "ed", "laptop"], "Created application password 'laptop'"),
        (["user", "app-password", "list", "ed"], ""),
        (["user", "app-password", "delete", "ed", "nope"], ""),
    ],
    ids=lambda value: "-".join(value) if isinstance(value, list) else None,
)
def test_every_command_reads_svcrest_db(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    empty_folder: Path,
    argv: list[str],
    out: str,
) -> None:
    make_site(str(empty_folder / "env.db"))
    monkeypatch.setenv(ENV_DB, "env.db")
    monkeypatch.setattr(sys, "stdin", io.StringIO("new-pw\n"))
    status, printed, err = run(capsys, *argv)
    assert err.startswith(f"{USING}env.db (from SVCREST_DB)\n")
    assert printed.startswith(out)
    if argv[-1] == "nope":  # the answer came from env.db's ed
        assert (status, err.splitlines()[1:]) == (
            1,
            ["svcrest: error: ed has no application password 'nope'"],
        )
    else:
        assert status == 0
    assert sorted(path.name for path in empty_folder.iterdir()) == ["env.db"]


def test_serve_reads_svcrest_db_and_svcrest_home(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    empty_folder: Path,
    uvicorn_calls: list[tuple[Any, dict[str, Any]]],
) -> None:
    monkeypatch.setenv(ENV_DB, "data/env.db")
    monkeypatch.setenv(ENV_HOME, "http://env.test:8080/site")
    port = free_port()
    status, out, err = run(capsys, "serve", "--server", "uvicorn", "--port", str(port))
    assert (status, err) == (0, f"{USING}data/env.db (from SVCREST_DB)\n")
    assert out.splitlines()[:2] == [
        "Created the directory data",
        "Created the database data/env.db",
    ]
    assert (
        "Serving http://env.test:8080/site/ (REST API at http://env.test:8080/site/svc-json/)"
        in out
    )
    app, _options = uvicorn_calls[0]
    assert app.home == "http://env.test:8080/site"
    app.store.close()
    assert (empty_folder / "data" / "env.db").is_file()
    assert not (empty_folder / "var").exists()
    # The options still win over the variables.
    status, out, err = run(
        capsys, "serve", "--server", "uvicorn", "--port", str(port), "--db", ":memory:",
        "--home", "http://option.test",
    )  # fmt: skip
    assert (status, err) == (0, f"{USING}:memory:\n")
    assert uvicorn_calls[1][0].home == "http://option.test"


def test_the_default_database_is_named(
    capsys: pytest.CaptureFixture[str], empty_folder: Path
) -> None:
    status, out, err = run(capsys, "routes")
    assert (status, out) == (2, "")
    assert err == DEFAULT_LINE + (
        "svcrest: error: the database 'var/svcrest.db' does not exist (svcrest serve or svcrest"
        " user add creates it; --db :memory: reads an empty site)\n"
    )
    assert list(empty_folder.iterdir()) == []


def test_db_wins_over_svcrest_db_and_passwords_are_not_shown(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_DB, "missing.db")
    assert run(capsys, "routes", "--db", ":memory:", "--no-demo") == (
        0,
        "".join(line + "\n" for line in CORE_ROUTES),
        f"{USING}:memory:\n",
    )
    monkeypatch.setenv(ENV_DB, "postgresql://svc:secret@db.invalid/site")
    _status, _out, err = run(capsys, "routes")
    assert err.startswith(f"{USING}postgresql://svc@db.invalid/site (from SVCREST_DB)\n")
    assert "secret" not in err


def test_svcrest_home_is_the_default_home(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_HOME, "http://env.test:81")
    status, out, _ = run(capsys, "openapi", "--db", ":memory:")
    assert (status, json.loads(out)["servers"]) == (0, [{"url": "http://env.test:81/svc-json"}])
    status, out, _ = run(capsys, "openapi", "--db", ":memory:", "--home", "http://opt.test")
    assert (status, json.loads(out)["servers"]) == (0, [{"url": "http://opt.test/svc-json"}])
    status, out, _ = run(
        capsys, "request", "GET", "http://env.test:81/svc-json/", "--db", ":memory:"
    )
    assert (status, json.loads(out.partition("\n")[2])["home"]) == (0, "http://env.test:81")


def test_svcrest_plugins_and_svcrest_demo_are_the_defaults(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    plugin: Callable[[str], tuple[str, Path]],
) -> None:
    shelf, _ = plugin(SHELF_SOURCE)
    monkeypatch.setenv(ENV_PLUGINS, f" {shelf} ,")
    monkeypatch.setenv(ENV_DEMO, "0")
    status, out, _ = run(capsys, "routes", "--db", ":memory:")
    assert (status, out.splitlines()) == (0, CORE_ROUTES + SHELF_ROUTES)
    # --demo brings the demo back; a --plugin given replaces SVCREST_PLUGINS.
    other, _ = plugin(SHELF_SOURCE.replace("shelf", "other"))
    status, out, _ = run(capsys, "routes", "--db", ":memory:", "--demo", "--plugin", other)
    assert (status, out.splitlines()) == (0, [*CORE_ROUTES, *DEMO_ROUTES, "/other/v1 GET",
                                              "/other/v1/books GET"])  # fmt: skip
    for off in ("false", "OFF", "no"):
        monkeypatch.setenv(ENV_DEMO, off)
        monkeypatch.delenv(ENV_PLUGINS, raising=False)
        assert run(capsys, "routes", "--db", ":memory:")[1].splitlines() == CORE_ROUTES
    monkeypatch.setenv(ENV_DEMO, "1")
    assert run(capsys, "routes", "--db", ":memory:")[1].splitlines() == CORE_ROUTES + DEMO_ROUTES


def test_the_factory_reads_the_same_variables(
    monkeypatch: pytest.MonkeyPatch, plugin: Callable[[str], tuple[str, Path]]
) -> None:
    shelf, _ = plugin(SHELF_SOURCE)
    monkeypatch.setenv(ENV_DB, "site/one.db")
    monkeypatch.setenv(ENV_PLUGINS, shelf)
    monkeypatch.setenv(ENV_DEMO, "off")
    app = cli.app_from_env()
    try:
        assert list(app.rest_get_server().get_routes())[-2:] == ["/shelf/v1", "/shelf/v1/books"]
        assert "/demo/v1" not in app.rest_get_server().get_routes()
    finally:
        app.store.close()
    assert Path("site/one.db").is_file()


def cli_table() -> dict[str, str]:
    """The rows of the settings guide's command-line table: the command (``user add LOGIN``;
    empty for ``svcrest`` itself) and its options cell."""
    guide = Path(__file__).resolve().parents[1] / "docs" / "guides" / "settings.md"
    section = guide.read_text().split("## Command-line options\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        match = re.fullmatch(r"\| `svcrest([^`]*)` \| (.*) \|", line)
        if match is not None:
            rows[match.group(1).strip()] = match.group(2)
    return rows


def test_the_settings_guide_lists_every_command_and_option() -> None:
    parser = cli.build_parser()
    expected: dict[str, list[str]] = {"": ["--version", "-h", "--help"]}
    for path, command in leaf_commands():
        positionals = [action.metavar for action in command._actions if not action.option_strings]
        options = [
            option
            for action in command._actions
            for option in action.option_strings
            if option not in ("-h", "--help")
        ]
        expected[" ".join([*path, *map(str, positionals)])] = options
    assert parser.prog == "svcrest"
    rows = cli_table()
    assert sorted(rows) == sorted(expected)  # every command, and no row of a removed one
    missing = [
        (command, option)
        for command, options in expected.items()
        for option in options
        if re.search(rf"`{re.escape(option)}[` ]", rows[command]) is None
    ]
    assert missing == []


# -- the store directory exists before plugins load ------------------------------------------


def test_serve_creates_the_store_directory_before_plugins_load(
    capsys: pytest.CaptureFixture[str],
    empty_folder: Path,
    granian_calls: list[dict[str, Any]],
    plugin: Callable[[str], tuple[str, Path]],
) -> None:
    shelf, _ = plugin(SHELF_SOURCE)
    port = free_port()
    status, out, err = run(capsys, "serve", "--port", str(port), "--plugin", shelf,
                           "--db", "var/bookshelf.db")  # fmt: skip
    assert (status, err) == (0, f"{USING}var/bookshelf.db\n")
    lines = out.splitlines()
    assert lines[:2] == ["Created the directory var", "Created the database var/bookshelf.db"]
    assert lines[2].startswith("Created user admin with password: ")
    # granian's workers load svcrest's access line around the site's own factory.
    assert granian_calls[0]["target"] == accesslog.ASGI_FACTORY
    assert os.environ[accesslog.ENV_ACCESS_TARGET] == "svcrest.cli:app_from_env"
    # What each granian worker builds, from the variables serve set.
    site = cli.app_from_env()
    try:
        routes = site.rest_get_server().get_routes()
        assert "/shelf/v1/books" in routes and "/demo/v1/notes" in routes
        assert site.users.get_by_login("admin") is not None
    finally:
        site.store.close()


def test_the_factory_creates_the_store_directory(
    monkeypatch: pytest.MonkeyPatch, empty_folder: Path, plugin: Callable[[str], tuple[str, Path]]
) -> None:
    shelf, _ = plugin(SHELF_SOURCE)
    monkeypatch.setenv(ENV_DB, "var/deep/bookshelf.db")
    monkeypatch.setenv(ENV_PLUGINS, shelf)
    wsgi = cli.wsgi_from_env()
    wsgi.host.store.close()
    assert (empty_folder / "var" / "deep" / "bookshelf.db").is_file()


def test_user_add_creates_the_store_directory(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, empty_folder: Path
) -> None:
    monkeypatch.setenv(ENV_DB, "var/bookshelf.db")
    monkeypatch.setattr(sys, "stdin", io.StringIO("pw\n"))
    assert run(capsys, "user", "add", "ed", "--role", "editor", "--password-stdin") == (
        0,
        "Created the directory var\nCreated the database var/bookshelf.db\n"
        "Created user ed (editor).\n",
        f"{USING}var/bookshelf.db (from SVCREST_DB)\n",
    )


@pytest.mark.parametrize("command", [["routes"], ["openapi"], ["request", "GET", "/"]])
def test_reading_commands_check_the_database_before_plugins_open_it(
    capsys: pytest.CaptureFixture[str],
    empty_folder: Path,
    plugin: Callable[[str], tuple[str, Path]],
    command: list[str],
) -> None:
    shelf, _ = plugin(SHELF_SOURCE)
    status, out, err = run(capsys, *command, "--plugin", shelf, "--db", "var/bookshelf.db")
    assert (status, out) == (2, "")
    assert err == (
        f"{USING}var/bookshelf.db\nsvcrest: error: the database 'var/bookshelf.db' does not"
        " exist (svcrest serve or svcrest user add creates it; --db :memory: reads an empty"
        " site)\n"
    )
    assert sorted(path.suffix for path in empty_folder.iterdir()) == [".py"]


@pytest.mark.slow
def test_serve_bookshelf_in_an_empty_folder(empty_folder: Path) -> None:
    """The tutorial's command, on the default server (granian), from an empty folder."""
    tutorial = Path(__file__).resolve().parents[1] / "docs" / "tutorial" / "bookshelf.py"
    (empty_folder / "bookshelf.py").write_text(tutorial.read_text())
    port = free_port()
    command = [sys.executable, "-m", "svcrest", "serve", "--port", str(port),
               "--plugin", "bookshelf:register", "--db", "var/bookshelf.db"]  # fmt: skip
    command += ["--graceful-timeout", str(GRACEFUL_TIMEOUT)]
    process = subprocess.Popen(
        command,
        cwd=empty_folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its workers in its process group: stopped with it
    )
    try:
        deadline = 30.0
        response = None
        import time

        start = time.monotonic()
        while time.monotonic() - start < deadline:
            assert process.poll() is None, process.communicate()[0]
            try:
                response = httpx.get(
                    f"http://127.0.0.1:{port}/svc-json/bookshelf/v1/books", timeout=5
                )
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert response is not None, "svcrest serve did not answer"
        assert (response.status_code, response.json()) == (200, [])
    finally:  # Ctrl-C, as the tutorial's reader stops it
        stopped = stop_server(process, STOP_TIMEOUT, stop_signal=signal.SIGINT)
        output = process.communicate(timeout=30)[0]
    assert stopped, output
    assert port_free(port)
    assert "Created the directory var\nCreated the database var/bookshelf.db\n" in output
    assert (empty_folder / "var" / "bookshelf.db").is_file()


# -- a plugin that fails shows its own frames ----------------------------------------------------


@pytest.mark.parametrize("command", [["routes"], ["openapi"], ["request", "GET", "/"], ["serve"]])
def test_a_failing_plugin_shows_its_frames(
    capsys: pytest.CaptureFixture[str],
    plugin: Callable[[str], tuple[str, Path]],
    uvicorn_calls: list[tuple[Any, dict[str, Any]]],
    command: list[str],
) -> None:
    spec, path = plugin(FAILING_SOURCE)
    argv = [*command, "--plugin", spec, "--db", ":memory:"]
    if command == ["serve"]:
        argv += ["--port", str(free_port())]
    status, out, err = run(capsys, *argv)
    assert (status, out, uvicorn_calls) == (2, "", [])
    lines = err.splitlines()
    real = Path(path).resolve()
    assert lines[:6] == [
        f"{USING}:memory:",
        "Traceback (most recent call last; the plugin's frames, --traceback shows all):",
        f'  File "{real}", line 6, in register',
        "    settings_of(app)",
        f'  File "{real}", line 2, in settings_of',
        '    return {}["missing"]',
    ]
    assert lines[-2:] == [
        "KeyError: 'missing'",
        f"svcrest: error: plugin '{spec}' failed: KeyError: 'missing'",
    ]
    assert "svcrest/cli" not in err  # svcrest's own frames are left out


def test_traceback_shows_every_frame(
    capsys: pytest.CaptureFixture[str], plugin: Callable[[str], tuple[str, Path]]
) -> None:
    spec, path = plugin(FAILING_SOURCE)
    status, out, err = run(capsys, "routes", "--plugin", spec, "--db", ":memory:", "--traceback")
    assert (status, out) == (2, "")
    lines = err.splitlines()
    assert lines[1] == "Traceback (most recent call last):"
    assert any(line.endswith("in register_plugins") and "svcrest/cli/site.py" in line
               for line in lines)  # fmt: skip
    assert f'  File "{path.resolve()}", line 2, in settings_of' in lines
    assert lines[-2:] == [
        "KeyError: 'missing'",
        f"svcrest: error: plugin '{spec}' failed: KeyError: 'missing'",
    ]


def test_a_plugin_failing_on_import_shows_its_frames(
    capsys: pytest.CaptureFixture[str], plugin: Callable[[str], tuple[str, Path]]
) -> None:
    spec, path = plugin('CONFIG = {}\nNAME = CONFIG["name"]\n')
    status, out, err = run(capsys, "routes", "--plugin", spec, "--db", ":memory:")
    assert (status, out) == (2, "")
    real = path.resolve()
    assert err.splitlines() == [
        f"{USING}:memory:",
        "Traceback (most recent call last; the plugin's frames, --traceback shows all):",
        f'  File "{real}", line 2, in <module>',
        '    NAME = CONFIG["name"]',
        "           ~~~~~~^^^^^^^^",
        "KeyError: 'name'",
        f"svcrest: error: cannot load plugin '{spec}': KeyError: 'name'",
    ]


def test_a_package_plugin_shows_the_frames_of_all_its_modules(
    capsys: pytest.CaptureFixture[str], empty_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"pkg_{uuid.uuid4().hex[:12]}"
    package = empty_folder / name
    package.mkdir()
    (package / "__init__.py").write_text("from .parts import register\n")
    (package / "parts.py").write_text("def register(app):\n    raise ValueError('bad part')\n")
    try:
        status, _, err = run(capsys, "routes", "--plugin", f"{name}:register", "--db", ":memory:")
    finally:
        for module in [module for module in sys.modules if module.startswith(name)]:
            monkeypatch.delitem(sys.modules, module)
    assert status == 2
    assert err.splitlines()[2:] == [
        f'  File "{(package / "parts.py").resolve()}", line 2, in register',
        "    raise ValueError('bad part')",
        "ValueError: bad part",
        f"svcrest: error: plugin '{name}:register' failed: ValueError: bad part",
    ]


# -- --no-demo on every command that builds the site --------------------------------------------


def test_openapi_without_the_demo(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "openapi", "--db", ":memory:", "--no-demo")
    assert status == 0
    paths = json.loads(out)["paths"]
    assert paths and not [path for path in paths if path.startswith("/demo/")]
    status, out, _ = run(capsys, "openapi", "--db", ":memory:")
    assert "/demo/v1/notes" in json.loads(out)["paths"]


def test_routes_and_request_without_the_demo(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "routes", "--db", ":memory:", "--no-demo")[:2] == (
        0,
        "".join(line + "\n" for line in CORE_ROUTES),
    )
    status, out, _ = run(
        capsys, "request", "GET", "/demo/v1/notes", "--db", ":memory:", "--no-demo"
    )
    assert (status, out.splitlines()[0]) == (1, "404 Not Found")
    assert json.loads(out.partition("\n")[2])["code"] == "rest_no_route"


def test_serve_without_the_demo(
    capsys: pytest.CaptureFixture[str], uvicorn_calls: list[tuple[Any, dict[str, Any]]]
) -> None:
    argv = ["serve", "--server", "uvicorn", "--port", str(free_port()), "--db", ":memory:"]
    assert run(capsys, *argv, "--no-demo")[0] == 0
    assert "/demo/v1" not in uvicorn_calls[0][0].rest_get_server().get_routes()


# -- --version -------------------------------------------------------------------------------------


def test_the_console_script_prints_its_version() -> None:
    from importlib.metadata import version

    script = Path(sys.executable).with_name("svcrest")
    result = subprocess.run(
        [str(script), "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        f"svcrest {version('svcrest')}\n",
        "",
    )
