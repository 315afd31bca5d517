"""Running ``svcrest`` in-process for the command-line tests.

Every command that gets past its arguments first says which database it uses, one line on
standard error; :func:`run` checks that line (it names the ``--db`` given, else
``SVCREST_DB``, else ``var/svcrest.db``) and returns the rest of standard error.
"""

from __future__ import annotations

import os
import sys

import pytest

from svcrest.cli import DEFAULT_DB, ENV_DB, CliError, build_parser, main
from svcrest.http.request_id import ACCESS_LOG

USING = "svcrest: using database "


def expected_db(argv: tuple[str, ...]) -> str:
    """The database ``argv`` names, else the environment's, else the default."""
    if "--db" in argv:
        return argv[argv.index("--db") + 1]
    return os.environ.get(ENV_DB) or DEFAULT_DB


def without_using_line(err: str, argv: tuple[str, ...]) -> str:
    """``err`` without its first line, which must say which database the command used; as
    it is when the arguments are refused (the command then opens nothing)."""
    if {"-h", "--help", "--version"} & set(argv):
        return err
    try:
        build_parser().parse_args(list(argv))
    except CliError:
        return err
    line, newline, rest = err.partition("\n")
    assert newline and line.startswith(USING), err
    if "@" not in line:  # a PostgreSQL URL with credentials is shown without its password
        shown = line.removeprefix(USING)
        assert shown == expected_db(argv) or shown.startswith(expected_db(argv) + " ("), err
    return rest


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """The exit status, standard output and standard error (without the database line) of
    ``svcrest argv``."""
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, without_using_line(captured.err, argv)


def env_names() -> frozenset[str]:
    """Every environment variable named by an ``ENV_*`` constant of a loaded ``svcrest``
    module: the variables ``svcrest serve`` sets for its workers (and those its workers
    read), taken from the constants themselves so that a new one is covered."""
    names: set[str] = set()
    for module_name, module in list(sys.modules.items()):
        if module is None or not (module_name == "svcrest" or module_name.startswith("svcrest.")):
            continue
        for key, value in list(vars(module).items()):
            if key.startswith("ENV_") and isinstance(value, str):
                names.add(value)
    return frozenset(names)


def keep_serve_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """Have ``monkeypatch`` put back, after the test, what ``svcrest serve`` changes for the
    whole process: the environment variables it sets for its workers (every one of
    :func:`env_names`; the test starts without them) and the access-log switch
    (``ACCESS_LOG.on``, which it turns on)."""
    monkeypatch.setattr(ACCESS_LOG, "on", ACCESS_LOG.on)
    for name in sorted(env_names()):
        monkeypatch.setenv(name, "")  # recorded, so that the test ends as it began
        monkeypatch.delenv(name)
