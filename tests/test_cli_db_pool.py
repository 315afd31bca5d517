"""``svcrest serve --db-pool-size N`` / ``SVCREST_DB_POOL_SIZE`` and ``--db-listen URL`` /
``SVCREST_DB_LISTEN``: written into the PostgreSQL URL the workers open."""

from __future__ import annotations

import pytest

from svcrest.cli import ENV_DB, ENV_HOME, ENV_PLUGINS, CliError, app_from_env, build_parser
from svcrest.cli.serve import db_with_pool_options
from svcrest.store.pg_url import PoolOptions
from tests.pg import PostgresServer

DB = "postgresql://svc:secret@db/site"


def serve_db(*argv: str) -> str:
    return db_with_pool_options(build_parser().parse_args(["serve", *argv]))


def test_pool_options_go_into_the_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SVCREST_DB_POOL_SIZE", raising=False)
    monkeypatch.delenv("SVCREST_DB_LISTEN", raising=False)
    assert serve_db("--db", DB) == DB
    assert serve_db("--db", DB, "--db-pool-size", "4") == f"{DB}?pool_size=4"
    assert (
        serve_db("--db", f"{DB}?pool_size=9", "--db-listen", "postgresql://l@db2/site")
        == f"{DB}?pool_size=9&listen=postgresql%3A%2F%2Fl%40db2%2Fsite"
    )


def test_pool_options_default_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SVCREST_DB_POOL_SIZE", "3")
    monkeypatch.setenv("SVCREST_DB_LISTEN", "postgresql:///site")
    assert serve_db("--db", DB) == f"{DB}?pool_size=3&listen=postgresql%3A%2F%2F%2Fsite"
    assert serve_db("--db", DB, "--db-pool-size", "5").startswith(f"{DB}?pool_size=5&")


@pytest.mark.parametrize("value", ["0", "1001", "x"])
def test_bad_pool_sizes_are_usage_errors(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SVCREST_DB_POOL_SIZE", raising=False)
    with pytest.raises(CliError) as caught:
        build_parser().parse_args(["serve", "--db-pool-size", value])
    assert str(caught.value) == (
        f"argument --db-pool-size: invalid pool size {value!r} (1-1000)"
        " (see 'svcrest serve --help')"
    )


def test_pool_options_need_a_postgres_db(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SVCREST_DB_LISTEN", raising=False)
    monkeypatch.delenv("SVCREST_DB_POOL_SIZE", raising=False)
    with pytest.raises(CliError, match="need a PostgreSQL --db"):
        serve_db("--db", "var/site.db", "--db-pool-size", "4")
    with pytest.raises(CliError, match="--db-listen must be a postgresql:// URL"):
        serve_db("--db", DB, "--db-listen", "var/other.db")


def test_the_workers_open_the_url_with_its_pool_options(
    postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = postgres.new_schema()
    monkeypatch.delenv("SVCREST_DB_LISTEN", raising=False)
    monkeypatch.delenv("SVCREST_DB_POOL_SIZE", raising=False)
    monkeypatch.setenv(ENV_DB, serve_db("--db", url, "--db-pool-size", "2", "--db-listen", url))
    monkeypatch.delenv(ENV_HOME, raising=False)
    monkeypatch.delenv(ENV_PLUGINS, raising=False)
    app = app_from_env()
    try:
        options = app.store.options  # type: ignore[attr-defined]
        assert options == PoolOptions(pool_size=2, listen=url)
        assert app.users.get(1) is None
    finally:
        app.store.close()
