"""The command line for many hosts (DESIGN §6): ``--db``/``SVCREST_DB`` with a PostgreSQL URL,
``svcrest serve --proxy-headers --forwarded-allow-ips IPS``."""

from __future__ import annotations

import io
from typing import Any

import pytest

from svcrest.cli import (
    ENV_DB,
    ENV_HOME,
    ENV_PLUGINS,
    CliError,
    app_from_env,
    build_parser,
    main,
    proxy_options,
)
from tests.pg import PostgresServer


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], {"proxy_headers": False}),
        (["--proxy-headers"], {"proxy_headers": True, "forwarded_allow_ips": "127.0.0.1"}),
        (
            ["--proxy-headers", "--forwarded-allow-ips", "10.0.0.5,10.0.0.6"],
            {"proxy_headers": True, "forwarded_allow_ips": "10.0.0.5,10.0.0.6"},
        ),
        (
            ["--proxy-headers", "--forwarded-allow-ips", "*"],
            {"proxy_headers": True, "forwarded_allow_ips": "*"},
        ),
    ],
    ids=["off", "default-ips", "listed", "any"],
)
def test_proxy_options(argv: list[str], expected: dict[str, Any]) -> None:
    args = build_parser().parse_args(["serve", *argv])
    assert proxy_options(args) == expected


def test_forwarded_allow_ips_needs_proxy_headers() -> None:
    args = build_parser().parse_args(["serve", "--forwarded-allow-ips", "10.0.0.5"])
    with pytest.raises(CliError, match=r"^--forwarded-allow-ips needs --proxy-headers$"):
        proxy_options(args)


def test_serve_refuses_allow_ips_alone(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["serve", "--db", ":memory:", "--forwarded-allow-ips", "10.0.0.5"])
    assert status == 2
    assert capsys.readouterr().err == (
        "svcrest: using database :memory:\n"
        "svcrest: error: --forwarded-allow-ips needs --proxy-headers\n"
    )


def test_a_postgres_db_that_cannot_open_hides_the_password(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import builtins

    real_import = builtins.__import__

    def no_psycopg(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("psycopg"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_psycopg)
    status = main(["user", "add", "ed", "--role", "editor", "--db", "postgresql://ed:pw@db/x"])
    assert status == 2
    assert capsys.readouterr().err == (
        "svcrest: using database postgresql://ed@db/x\n"
        "svcrest: error: cannot open the database 'postgresql://ed@db/x': a PostgreSQL store"
        " needs the psycopg driver: pip install 'svcrest[postgres]'\n"
    )


def test_db_and_svcrest_db_take_a_postgres_url(
    postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = postgres.new_schema()
    argv = ["user", "add", "ed", "--role", "editor", "--password-stdin", "--db", url]
    monkeypatch.setattr("sys.stdin", io.StringIO("pw-of-ed\n"))
    assert main(argv) == 0
    assert capsys.readouterr().out == "Created user ed (editor).\n"
    monkeypatch.setenv(ENV_DB, url)
    monkeypatch.delenv(ENV_HOME, raising=False)  # another test's serve may have left these
    monkeypatch.delenv(ENV_PLUGINS, raising=False)
    app = app_from_env()
    try:
        assert app.store.dialect == "postgresql"
        assert app.users.authenticate("ed", "pw-of-ed") == app.users.get(1)
    finally:
        app.store.close()
