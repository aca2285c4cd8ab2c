"""A real PostgreSQL server on loopback for tests (Debian's packages; .ci/run installs them)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from harness.errors import WaitTimeout
from harness.process import Supervisor, free_port
from harness.waiting import wait_for


def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    return Path(found[-1]).parent if found else None


def unavailable_reason() -> str | None:
    if postgres_bin() is None:
        return "PostgreSQL server binaries not installed (apt-get install postgresql)"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "no 'postgres' system user to run the server as"
    return None


class PostgresServer:
    """initdb + postgres in the foreground under a Supervisor, as the postgres user when we are root.
    Password authentication (scram-sha-256), so that tests can check the password stays out of the evidence."""

    password = "pg-S3cret-only-in-memory"

    def __init__(self, supervisor: Supervisor):
        self.supervisor = supervisor
        self.bin = postgres_bin()
        self.dir = Path(tempfile.mkdtemp(prefix="harness-pg-"))
        self.port = free_port()

    def _as_postgres(self, argv: list[str]) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv

    @property
    def url(self) -> str:
        return f"postgresql://postgres:{self.password}@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        data = self.dir / "data"
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        pwfile = self.dir / "pwfile"
        pwfile.write_text(self.password + "\n")
        if os.geteuid() == 0:
            shutil.chown(pwfile, "postgres", "postgres")
        subprocess.run(
            self._as_postgres(
                [
                    str(self.bin / "initdb"),
                    "-D",
                    str(data),
                    "-A",
                    "scram-sha-256",
                    "-U",
                    "postgres",
                    f"--pwfile={pwfile}",
                ]
            ),
            check=True,
            capture_output=True,
        )
        pwfile.unlink()
        # The port was free when picked; another process may take it before postgres binds it: then another port.
        for _ in range(3):
            if self._serve(data):
                return
            self.port = free_port()
        raise RuntimeError(f"PostgreSQL found no free port to listen on (see {self._log})")

    @property
    def _log(self) -> Path:
        return self.dir.parent / f"{self.dir.name}.log"

    def _serve(self, data: Path) -> bool:
        """Start postgres on self.port and wait until it accepts connections; False if the port was taken."""
        proc = self.supervisor.start(
            "postgres",
            self._as_postgres(
                [
                    str(self.bin / "postgres"),
                    "-D",
                    str(data),
                    "-p",
                    str(self.port),
                    "-h",
                    "127.0.0.1",
                    "-k",
                    str(self.dir),
                    "-c",
                    "fsync=off",
                ]
            ),
            self._log,
        )

        def accepting() -> bool:
            import psycopg

            try:
                psycopg.connect(self.url, connect_timeout=2).close()
                return True
            except psycopg.OperationalError:
                return False

        try:
            wait_for(
                accepting,
                timeout=300,  # against a hang: a dead postgres ends the wait at once
                what="PostgreSQL to accept connections",
                abort=lambda: None if proc.running() else "postgres exited",
            )
        except WaitTimeout:
            if proc.running() or "could not bind" not in self._log.read_text(errors="replace"):
                raise
            return False
        return True

    def stop(self) -> None:
        self.supervisor.stop_all()
        shutil.rmtree(self.dir, ignore_errors=True)
        self._log.unlink(missing_ok=True)
