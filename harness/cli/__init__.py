"""The `harness` command line: click declarations and what they print. The work is done elsewhere (running and
judging: harness.judging; gating: harness.suite, harness.matrix; clusters: harness.cluster, harness.docker)."""

from harness.cli import cluster, explore, runs, setup, suites, tools  # noqa: F401  (each registers its commands on `main`)
from harness.cli.app import main
from harness.cli.options import UntilType

__all__ = ["main", "UntilType"]
