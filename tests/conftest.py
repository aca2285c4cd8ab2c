"""Shared fixtures. Every test must leave no process behind: checked after each test."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import settings

from harness.checker.step import STRICT_ENV
from harness.process.supervisor import STARTED_HERE, session_members, stop_recorded

# The property tests share two cores with real runs (JVMs starting, Spark batches): an example's time says
# nothing about the code under test, so no example has a deadline.
settings.register_profile("shared-cores", deadline=None)
settings.load_profile("shared-cores")

HARNESS = [sys.executable, "-m", "harness.cli"]

# A check step that raises fails the test (and every harness the tests start), instead of turning the
# outcome unknown as it does for a user (harness/checker/step.py): a bug cannot hide as UNKNOWN.
os.environ[STRICT_ENV] = "1"


@pytest.fixture(autouse=True)
def no_process_left_behind():
    """Fail a test that leaves a started process running (and stop it, by pid)."""
    before = len(STARTED_HERE)
    yield
    leaked = [r for r in STARTED_HERE[before:] if session_members(r)]
    for record in leaked:
        stop_recorded(record, timeout=5)
    assert not leaked, f"processes left running: {[(r.name, r.pid) for r in leaked]}"


def unavailable(reason: str) -> None:
    """A system package a test needs (PostgreSQL, Docker) is missing: on a developer's machine the test is skipped,
    saying why; in CI (CI set, as .ci/run's runner sets it) it fails, since .ci/run installs them and a green run
    must not hide a broken image."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set: .ci/run and make test install it)")
    pytest.skip(reason)


@contextmanager
def refusing_port():
    """A loopback port nothing answers on for as long as the block runs: bound by the test and never listened on, so
    a connection is refused and no other process can take it meanwhile (a port merely found free could be)."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


def run_harness(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run the `harness` CLI as a user would, in a separate process."""
    return subprocess.run(
        HARNESS + list(args),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env or dict(os.environ),
        cwd=Path(__file__).resolve().parent.parent,
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """For the workers (pytest-xdist, --dist loadfile: a file's tests on one worker, files in the order they
    are collected): the files whose tests share a module-scoped real run go first, then the other real runs,
    then the unit tests, so the longest work does not start last."""

    def rank(item) -> int:
        defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        if any(fixturedefs and fixturedefs[-1].scope == "module" for fixturedefs in defs.values()):
            return 0
        return 1 if item.get_closest_marker("e2e") else 2

    first = {}
    for item in items:
        first[item.module.__name__] = min(first.get(item.module.__name__, 2), rank(item))
    items.sort(key=lambda item: first[item.module.__name__])


@pytest.fixture
def postgres(tmp_path):
    """A real PostgreSQL server of the test's own (skipped, saying why, where none can start here)."""
    from harness.process import Supervisor
    from tests.postgres_server import PostgresServer, unavailable_reason

    reason = unavailable_reason()
    if reason:
        unavailable(reason)
    server = PostgresServer(Supervisor(tmp_path / "pg-pids"))
    server.start()
    yield server
    server.stop()
