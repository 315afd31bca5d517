"""A throw-away PostgreSQL server for the tests: ``initdb`` and ``pg_ctl`` as ``postgres``.

PostgreSQL refuses to run as root, so as root the commands run through ``runuser -u
postgres --`` (``su postgres -c`` where there is no runuser) in a temporary directory owned by
postgres. The server listens only on a unix
socket in that directory, with ``fsync=off``. Each test gets its own schema (a URL whose
``search_path`` names it), so identities start at 1 in every test.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

__all__ = ["PostgresServer", "find_bin"]

DATABASE = "svcrest_test"


def find_bin(name: str) -> str | None:
    """The PostgreSQL program ``name``: on PATH, else in Debian's versioned directory."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


class PostgresServer:
    """One PostgreSQL cluster in a temporary directory; :meth:`stop` removes it."""

    def __init__(self) -> None:
        initdb, pg_ctl = find_bin("initdb"), find_bin("pg_ctl")
        if initdb is None or pg_ctl is None:
            raise RuntimeError("PostgreSQL is not installed (initdb/pg_ctl not found)")
        self._pg_ctl = pg_ctl
        self._prefix: list[str] = []
        self.root = Path(tempfile.mkdtemp(prefix="svcrest-pg-"))
        if os.geteuid() == 0:
            try:
                entry = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError("running as root and there is no postgres user") from None
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            self._prefix = (
                ["runuser", "-u", "postgres", "--"] if shutil.which("runuser") else ["su"]
            )
        self.data = self.root / "data"
        self.socket_dir = str(self.root)
        self._schemas = itertools.count(1)
        self._started = False
        try:
            self._run(initdb, "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8")
            self.start_server()
            self.psql(f"CREATE DATABASE {DATABASE}", database="postgres")
        except BaseException:
            self.stop()
            raise

    def start_server(self) -> None:
        """Start the server (again, after :meth:`stop_server`)."""
        options = (
            f"-k {self.socket_dir} -c listen_addresses='' -c fsync=off"
            " -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._run(
            self._pg_ctl, "-D", str(self.data), "-o", options, "-l", str(self.root / "log"),
            "-w", "-t", "30", "start",
        )  # fmt: skip
        self._started = True

    def stop_server(self, mode: str = "fast") -> None:
        """Stop the server, keeping its data (``mode``: ``pg_ctl stop -m``)."""
        self._run(self._pg_ctl, "-D", str(self.data), "-m", mode, "-w", "stop")
        self._started = False

    def _as_postgres(self, command: list[str]) -> list[str]:
        if self._prefix == ["su"]:  # no runuser: su takes one shell command line
            return ["su", "postgres", "-s", "/bin/sh", "-c", shlex.join(command)]
        return [*self._prefix, *command]

    def _run(self, *command: str) -> str:
        result = subprocess.run(
            self._as_postgres(list(command)),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if result.returncode != 0:
            log = self.root / "log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{command[0]} failed: {result.stderr.strip()}\n{tail}")
        return result.stdout

    def psql(self, sql: str, database: str = DATABASE) -> str:
        """Run ``sql`` as postgres (through psycopg: no psql binary needed)."""
        import psycopg

        with psycopg.connect(self.url(database=database), autocommit=True) as conn:
            conn.execute(sql)
        return ""

    @contextlib.contextmanager
    def autovacuum_paused(self, timeout: float = 60.0) -> Iterator[None]:
        """No autovacuum worker runs inside the block.

        An automatic ``ANALYZE`` writes the table's statistics, so it spends transaction ids
        of the cluster at times of its own (on an ``autovacuum_naptime`` visit of a database
        once enough rows changed: in a long session, the catalogs' too, as every test's
        schema adds and drops rows of ``pg_class`` and ``pg_attribute``): a test that counts
        the cluster's ids while its subject is idle must not count those. The block begins
        once the server has read the setting (a worker started after that analyzes nothing)
        and the workers already running have finished; the setting is restored on the way
        out.
        """
        self._set_autovacuum("off")
        try:
            deadline = time.monotonic() + timeout
            while self._autovacuum_state() != ("off", 0):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"autovacuum still running after {timeout} s")
                time.sleep(0.05)
            yield
        finally:
            self._set_autovacuum(None)

    def _set_autovacuum(self, value: str | None) -> None:
        import psycopg

        with psycopg.connect(self.url(database="postgres"), autocommit=True) as conn:
            if value is None:
                conn.execute("ALTER SYSTEM RESET autovacuum")
            else:
                conn.execute(f"ALTER SYSTEM SET autovacuum = {value}")
            conn.execute("SELECT pg_reload_conf()")

    def _autovacuum_state(self) -> tuple[str, int]:
        """The setting a new session starts with (the server's, once it has reloaded) and
        the number of autovacuum workers running."""
        import psycopg

        with psycopg.connect(self.url(database="postgres"), autocommit=True) as conn:
            row = conn.execute(
                "SELECT current_setting('autovacuum'), count(*) FROM pg_stat_activity"
                " WHERE backend_type = 'autovacuum worker'"
            ).fetchone()
        assert row is not None
        return str(row[0]), int(row[1])

    def url(self, *, database: str = DATABASE, schema: str | None = None) -> str:
        """A libpq URL of ``database`` over the unix socket (``search_path`` = ``schema``)."""
        url = f"postgresql://postgres@/{database}?host={quote(self.socket_dir, safe='')}"
        if schema is not None:
            url += "&options=" + quote(f"-c search_path={schema}", safe="")
        return url

    def new_schema(self) -> str:
        """A URL of a fresh, empty schema of the test database."""
        name = f"t{next(self._schemas)}"
        self.psql(f"DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}")
        return self.url(schema=name)

    def new_database(self) -> str:
        """A URL of a fresh, empty database."""
        name = f"{DATABASE}_{next(self._schemas)}"
        self.psql(f"CREATE DATABASE {name}", database="postgres")
        return self.url(database=name)

    def stop(self) -> None:
        """Stop the server and remove its directory."""
        if self._started:
            self._started = False
            subprocess.run(
                self._as_postgres([self._pg_ctl, "-D", str(self.data), "-m", "immediate", "stop"]),
                capture_output=True,
                timeout=60,
                check=False,
            )
        shutil.rmtree(self.root, ignore_errors=True)
