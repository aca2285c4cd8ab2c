"""`harness explore` starts each run's pipeline while the run before it plays (harness/runner/pipeline_start.py), for
real: a budget that ends with the first run, so that the search runs it, then replays its schedule once. The
replay's start is begun as the first run's workload begins, and its workload waits for that run's end; the run
started during the replay's is stopped unplayed and its folder removed. What the two runs found is judged as any
run's."""

from __future__ import annotations

import json

import pytest
import yaml

from harness.scenario.shipped import scenario_path
from tests.conftest import run_harness

pytestmark = pytest.mark.e2e


def _events(run_dir) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]


def test_each_run_starts_while_the_one_before_plays_and_the_last_one_started_is_removed(tmp_path):
    raw = yaml.safe_load(scenario_path("explore-append").read_text())
    raw["explore"] = {**raw["explore"], "faults": 1, "moments": ["after-write"], "workload_s": 10}
    scenario = tmp_path / "append.yaml"
    scenario.write_text(yaml.safe_dump(raw, sort_keys=False))
    out = tmp_path / "out"
    args = ("explore", str(scenario), "--budget", "1s", "--runs", "1", "--replays", "1", "--out", str(out))
    result = run_harness(*args, timeout=600)
    assert result.returncode == 1, result.stdout + result.stderr
    data = json.loads((out / "explore.json").read_text())
    assert [(r["phase"], r["outcome"]) for r in data["runs"]] == [("search", "fail"), ("replay", "fail")], data
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["001", "002"]  # the third, never played, removed

    first, replay = _events(out / "runs" / "001"), _events(out / "runs" / "002")
    started = {e["role"]: e["ts_ms"] for e in reversed(replay) if e["event"] == "process_started"}  # each role's first
    first_workload = next(e["ts_ms"] for e in first if e["event"] == "process_started" and e["role"] == "generator")
    first_end = next(e["ts_ms"] for e in first if e["event"] == "run_ended")
    # The replay's start (its broker first) was begun as the first run's workload began, its own workload once that
    # run ended: the order of hand-over, which holds on a busy machine. How much of the start the first run hid
    # (its broker up before that run ended, on an idle machine) depends on the CPU that run left: the start is niced.
    assert first_workload < started["broker"] < started["driver"] < started["generator"], (started, first_workload)
    assert first_end < started["generator"], (started, first_end)
    assert json.loads((out / "runs" / "002" / "report.json").read_text())["counts"]["duplicated_in_state"] > 0
