"""A throw-away PgBouncer (Debian's ``pgbouncer``) in transaction mode in front of a test
PostgreSQL server: run as ``postgres`` (it refuses root) in a temporary directory, listening
only on a unix socket there. It starts in a session of its own (as ``runuser``'s child when
run as root) and stops with its whole process group (:func:`tests.processes.stop_server`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from tests.pg import PostgresServer
from tests.processes import STOP_TIMEOUT, stop_server

__all__ = ["PgBouncer"]

PORT = 6432


def _find() -> str | None:
    found = shutil.which("pgbouncer")
    if found:
        return found
    return "/usr/sbin/pgbouncer" if os.path.exists("/usr/sbin/pgbouncer") else None


class PgBouncer:
    """PgBouncer in front of ``server``; :meth:`stop` ends it and removes its directory.
    ``settings`` are more lines of its ``[pgbouncer]`` section (``server_login_retry="1"``)."""

    def __init__(self, server: PostgresServer, **settings: str) -> None:
        binary = _find()
        if binary is None:
            raise RuntimeError("PgBouncer is not installed (make pgbouncer)")
        self.root = Path(tempfile.mkdtemp(prefix="svcrest-pgb-"))
        self.socket_dir = str(self.root)
        (self.root / "users.txt").write_text('"postgres" ""\n')
        (self.root / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = host={server.socket_dir} port=5432\n"
            "[pgbouncer]\n"
            "listen_addr =\n"
            f"listen_port = {PORT}\n"
            f"unix_socket_dir = {self.socket_dir}\n"
            "auth_type = trust\n"
            f"auth_file = {self.root / 'users.txt'}\n"
            "pool_mode = transaction\n"
            "max_client_conn = 500\n"
            "default_pool_size = 10\n"
            f"logfile = {self.root / 'log'}\n"
            + "".join(f"{name} = {value}\n" for name, value in settings.items())
        )
        command = [binary, str(self.root / "pgbouncer.ini")]
        if os.geteuid() == 0:
            import pwd

            entry = pwd.getpwnam("postgres")
            for path in (self.root, *self.root.iterdir()):
                os.chown(path, entry.pw_uid, entry.pw_gid)
            command = server._as_postgres(command)
        self._process = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # runuser and PgBouncer in its process group
        )
        deadline = time.monotonic() + 20
        while not (self.root / f".s.PGSQL.{PORT}").exists():
            if self._process.poll() is not None or time.monotonic() > deadline:
                log = self.root / "log"
                tail = log.read_text()[-2000:] if log.exists() else ""
                self.stop()
                raise RuntimeError(f"PgBouncer did not start: {tail}")
            time.sleep(0.05)

    def url(self, database: str) -> str:
        """A URL of ``database`` through the pooler (``?pgbouncer=1`` included)."""
        return (
            f"postgresql://postgres@/{database}?host={quote(self.socket_dir, safe='')}"
            f"&port={PORT}&pgbouncer=1"
        )

    def stop(self) -> bool:
        """SIGTERM (``runuser`` passes it on, and kills PgBouncer 2 s later if it is still
        there), its whole process group killed if it is not gone in time; whether it stopped
        by itself. No process of it is left either way."""
        try:
            return stop_server(self._process, STOP_TIMEOUT)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
