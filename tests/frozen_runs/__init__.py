"""Frozen run directories: real runs recorded once (record.py) and judged by the tests in `make test`, each run
afresh in `make test-long` so that what the checker is shown stays what a run of today writes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
# A module fixture's params: the frozen copy (no broker, no Spark: make test-fast too), a fresh run of the same
# scenario (make test-long).
FROZEN_OR_FRESH = ["frozen", pytest.param("fresh", marks=[pytest.mark.e2e, pytest.mark.long])]


def scenarios() -> dict[str, Path]:
    """Each frozen run's scenario, by name."""
    return {path.stem: path for path in sorted(HERE.glob("*.yaml"))}


def run_fresh(name: str, run_dir: Path, quiet: bool = True):
    """Run scenario `name` for real into `run_dir`; its summary."""
    from harness.runner.console import Console
    from harness.runner.run import run_scenario
    from harness.scenario import load_scenario

    return run_scenario(load_scenario(scenarios()[name]), run_dir, console=Console(quiet=quiet))


def judged_run(request, tmp_path_factory, name: str) -> Path:
    """A run directory of scenario `name` for a module fixture with FROZEN_OR_FRESH params: a copy of the frozen
    one (judging writes in it), or one run here."""
    run_dir = tmp_path_factory.mktemp(f"{name}-{request.param}") / "run"
    if request.param == "frozen":
        shutil.copytree(HERE / name, run_dir)
        return run_dir
    from tests.evidence_helpers import why

    summary = run_fresh(name, run_dir)
    assert summary.status == "complete" and not summary.failed_streamlets, why(summary)
    return run_dir
