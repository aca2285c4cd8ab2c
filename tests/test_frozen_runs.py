"""The frozen run directories (tests/frozen_runs/) the checker's real-evidence tests judge: one for each scenario
there, written in the run directory's current form, and small enough to keep in the repository."""

from __future__ import annotations

import json

from harness.evidence.layout import RUN_DIR_VERSION, RunLayout
from tests.frozen_runs import HERE, scenarios
from tests.frozen_runs.record import main

LIMIT_MB = 20  # all of them together


def test_each_frozen_run_is_recorded_in_the_run_directorys_current_form():
    assert scenarios(), "no frozen run's scenario"
    for name in scenarios():
        run = json.loads(RunLayout(HERE / name).summary.read_text())
        assert run["status"] == "complete", name
        assert run.get("run_dir_version") == RUN_DIR_VERSION, (
            f"tests/frozen_runs/{name} was written in form {run.get('run_dir_version')}, the run directory's is now "
            f"{RUN_DIR_VERSION}: record it again (python -m tests.frozen_runs.record {name})"
        )


def test_the_frozen_runs_keep_the_evidence_and_not_the_brokers_or_sparks_files():
    size = sum(p.stat().st_size for p in HERE.rglob("*") if p.is_file())
    assert size < LIMIT_MB * 1e6, f"{size / 1e6:.1f} MB"
    for name in scenarios():
        kept = {p.name for p in (HERE / name).iterdir()}
        assert {"acks.csv", "history.jsonl", "pipeline.json", "topics"} <= kept, name
        assert not kept & {"cluster", "checkpoints", "spark-local", "pids"}, name


def test_the_recorder_names_a_scenario_it_does_not_have_in_one_line(capsys):
    assert main(["nope"]) == 2
    assert (
        capsys.readouterr().err
        == "record: no tests/frozen_runs/nope.yaml (known: account-totals, chain, transactions)\n"
    )
