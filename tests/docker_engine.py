"""A Docker engine for the tests: the one that answers, or dockerd started here (as root, with the flags these
machines allow: no bridge, no iptables) and stopped when the tests are done. Without either, the Docker tests
are skipped with the reason, never failed."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from harness.docker import engine
from harness.errors import HarnessError
from harness.process import Supervisor
from harness.waiting import wait_for

DOCKERD_FLAGS = ["--bridge=none", "--iptables=false", "--ip6tables=false", "--ip-masq=false"]


class DockerEngine:
    def __init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="harness-dockerd-"))
        self.supervisor = Supervisor(self.folder / "pids")
        self.started = None  # the dockerd started here, if any

    def unavailable_reason(self) -> str | None:
        """None once an engine answers (started here if need be)."""
        try:
            engine.client()
            return None
        except HarnessError as exc:
            reason = str(exc)
        dockerd = shutil.which("dockerd") or ("/usr/sbin/dockerd" if Path("/usr/sbin/dockerd").exists() else None)
        if dockerd is None:
            return f"{reason}; and no dockerd to start (apt-get install docker.io)"
        if os.geteuid() != 0:
            return f"{reason}; and starting dockerd needs root"
        self.started = self.supervisor.start(
            "dockerd",
            [dockerd, *DOCKERD_FLAGS, f"--pidfile={self.folder / 'dockerd.pid'}"],
            self.folder / "dockerd.log",
        )

        def answers() -> bool:
            try:
                engine.client()
                return True
            except HarnessError:
                return False

        wait_for(
            answers,
            timeout=60,
            interval=0.5,
            what="the dockerd started for the tests",
            abort=lambda: None if self.started.running() else f"dockerd exited: see {self.folder / 'dockerd.log'}",
        )
        return None

    def stop(self) -> None:
        """Stop the dockerd started here (its containerd with it); one that was already running is left alone."""
        if self.started is not None:
            self.supervisor.close(timeout=60)
        shutil.rmtree(self.folder, ignore_errors=True)
