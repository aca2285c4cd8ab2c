"""Storms (harness/chaos/storm.py): the same seed draws the same storm; every kind is drawn or left out saying
why; a storm's broker faults never take more brokers down at once than the topics allow (the chaos driver's
group limit, with real threads); and a seed on a real three-broker pipeline ends with a report whose counts
equal a count made here from the raw evidence."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.chaos import player
from harness.chaos.schedule import Firing
from harness.chaos.storm import BROKERS, draw_storm
from harness.faults import FaultKind, builtin_fault_kinds
from harness.runner.pipeline_run import PipelineRun
from harness.scenario import load_scenario
from harness.scenario.parse import parse_scenario
from harness.scenario.storm_spec import StormSpec
from tests.conftest import run_harness
from tests.evidence_helpers import independent_counts

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


@pytest.fixture(scope="module")
def storm_scenario():
    return load_scenario(SCENARIOS / "storm.yaml")


def test_the_same_seed_draws_the_same_storm_and_another_seed_another(storm_scenario):
    def drawn(seed):
        return [
            (r.start_s, r.kind, r.target, r.params)
            for r in draw_storm(storm_scenario.storm, storm_scenario, seed).rules
        ]

    assert drawn(7) == drawn(7)
    assert drawn(7) != drawn(8)
    assert len([r for r in draw_storm(storm_scenario.storm, storm_scenario, 7).rules if r.fault.scheduled]) == 6


def test_every_kind_is_drawn_or_left_out_saying_why(storm_scenario):
    storms = [draw_storm(storm_scenario.storm, storm_scenario, seed) for seed in range(1, 60)]
    drawn = {r.kind for s in storms for r in s.rules}
    left_out = storms[0].left_out
    assert drawn | set(left_out) == set(builtin_fault_kinds()) and not drawn & set(left_out)
    assert "Spark standalone" in left_out["executor-kill"] and "Spark standalone" in left_out["worker-kill"]
    assert left_out["recreate-topic"].startswith("cannot overlap other faults safely")
    assert left_out["add-partitions"].startswith("cannot overlap other faults safely")
    for storm in storms:
        assert storm.max_brokers_down == 1  # replication 3, min.insync.replicas 2
        assert all((r.group == BROKERS) == r.kind.startswith("broker-") for r in storm.rules)
        starts = [r.start_s for r in storm.rules if r.fault.scheduled]
        assert starts == sorted(starts) and all(2 <= round(b - a, 6) <= 6.01 for a, b in zip(starts, starts[1:]))


def test_no_broker_may_go_down_unless_the_scenario_asks():
    single = load_scenario(SCENARIOS / "smoke.yaml")  # one broker, replication 1
    for name in ("broker-kill", "broker-pause", "broker-stop"):
        assert "no broker may go down" in draw_storm(StormSpec(), single, 1).left_out[name]
    asked = draw_storm(StormSpec(faults=30, max_brokers_down=1), single, 1)
    assert "broker-kill" not in asked.left_out and any(r.kind.startswith("broker-") for r in asked.rules)


def test_a_group_holds_its_second_fault_until_the_first_ends(tmp_path):
    scenario = parse_scenario(
        {
            "name": "group",
            "cluster": {"brokers": 3},
            "blueprint": {
                "streamlets": {"ingress": {"kind": "ingress"}, "egress": {"kind": "egress"}},
                "connections": {"ingress.out": ["egress.in"]},
            },
            "workload": {"rate": 10, "duration_s": 1},
        }
    )
    spans, lock, meeting = [], threading.Lock(), threading.Barrier(2, timeout=60)

    def hold(run, target, **params):
        start = time.monotonic()
        if params.get("meet"):  # broken, and the fault failed, unless the other one plays at the same time
            meeting.wait()
        time.sleep(0.6)
        with lock:
            spans.append((target, start, time.monotonic()))

    kinds = {"hold": FaultKind("hold", "broker", "holds a broker for 0.6 s", play=hold)}
    firings = [
        Firing(0.0, 0, "hold", "broker-1", {"meet": True}, BROKERS),
        Firing(0.0, 1, "hold", "broker-2", {}, BROKERS),
        Firing(0.0, 2, "hold", "broker-3", {"meet": True}),
    ]
    with PipelineRun(scenario, tmp_path / "run", say=lambda _: None) as run:
        run.generator.proc = run.supervisor.start("generator", [sys.executable, "-c", "pass"], tmp_path / "g.log")
        # all three played: broker-3, outside the group, met broker-1 (it did not wait for it)
        assert player.play(run, firings, kinds, 90, lambda _: None, group_limits={BROKERS: 1}) == 3
    by = {target: (start, end) for target, start, end in spans}
    assert by["broker-2"][0] >= by["broker-1"][1], "the second of the group waits for the first"


@pytest.mark.long  # a storm on three brokers; the draw and the group limit are tested above
@pytest.mark.e2e
def test_a_storm_seed_ends_with_a_report_whose_counts_equal_an_independent_count(tmp_path):
    run_dir = tmp_path / "storm"
    result = run_harness(
        "run", str(SCENARIOS / "storm.yaml"), "--seed", "1", "--duration", "30", "--out", str(run_dir), timeout=600
    )
    assert "harness: error" not in result.stderr, result.stderr
    assert result.returncode in (0, 1, 3), result.stdout + result.stderr
    report = json.loads((run_dir / "report.json").read_text())
    assert report["status"] == "complete" and report["run_info"]["storm"]["faults"] >= 6, result.stdout
    assert {
        k: report["counts"][k] for k in ("lost", "duplicated_in_state", "duplicated_deliveries", "phantom")
    } == independent_counts(run_dir), result.stdout
    assert "storm: " in (run_dir / "report.md").read_text()
    assert run_harness("clean", str(run_dir)).stdout.strip() == "nothing was running"
