"""The schedule search on a synthetic judge (no Spark, no broker): the same seed draws the same schedules, a failure
is found and shrunk to the one fault that makes it, the budget and unjudged runs give their exit codes, and what
`harness explore` writes is a scenario `harness run` accepts. The real search runs in bench/explore.py."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from harness.chaos.explore import (
    DISCARDED,
    UNJUDGED,
    Fault,
    draw_schedule,
    empty_space,
    explore,
    said,
    signature,
    simpler,
    started_ahead,
)
from harness.cli.explore import budget_seconds, write_outputs
from harness.errors import HarnessError
from harness.faults import load_fault_kind
from harness.runner.console import Console
from harness.runner.pipeline_start import ReadyRun
from harness.scenario import load_scenario
from harness.scenario.parse import parse_scenario
from harness.scenario.shipped import scenario_path
from harness.search_runs import scenario_raw, set_up

SCENARIO = scenario_path("explore-append")
BROKEN = (("end_to_end",), ("duplicated_in_state",))


class Clock:
    """Each run takes a minute."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _judge(clock: Clock, breaks=lambda f: f.target == "egress" and dict(f.params)["at"] == "after-write"):
    """Fails (duplicated in state) when a kill of the egress lands after a write, as an append egress does."""
    ran = []

    def judge(schedule, workload_s, phase):
        clock.now += 60
        ran.append((schedule, workload_s, phase))
        return BROKEN if any(f.kind == "kill-driver" and breaks(f) for f in schedule) else None

    return judge, ran


def test_the_same_seed_draws_the_same_schedules_within_the_space():
    scenario = load_scenario(SCENARIO)
    spec = scenario.explore
    first = [draw_schedule(spec, scenario, 7, i) for i in range(20)]
    assert first == [draw_schedule(spec, scenario, 7, i) for i in range(20)]
    assert first != [draw_schedule(spec, scenario, 8, i) for i in range(20)]
    assert all(1 <= len(s) <= spec.space.faults for s in first)
    faults = [f for s in first for f in s]
    assert {f.kind for f in faults} == {"kill-driver"} and {f.target for f in faults} == {"egress"}
    assert {dict(f.params)["at"] for f in faults} == {"anytime", "after-write"}  # the moments asked for
    assert all(f.start_s >= spec.space.start_s for f in faults)


def test_targets_and_moments_narrow_the_space_and_wrong_ones_are_refused_naming_the_field():
    raw = yaml.safe_load(SCENARIO.read_text())
    raw["explore"] = {**raw["explore"], "targets": ["ingress", "egress"], "moments": ["after-write"]}
    scenario = parse_scenario(raw, SCENARIO.parent)
    faults = [f for i in range(20) for f in draw_schedule(scenario.explore, scenario, 1, i)]
    assert {f.target for f in faults} == {"ingress", "egress"}
    # after a write: always a crash (a graceful stop would finish the batch), whatever the kind draws
    assert {(dict(f.params)["at"], dict(f.params)["signal"]) for f in faults} == {("after-write", "SIGKILL")}
    raw["explore"]["moments"] = ["at-lunch"]
    with pytest.raises(Exception, match=r"explore.moments\[0\]: 'at-lunch' is no fault's moment"):
        parse_scenario(raw, SCENARIO.parent)
    raw["explore"] = {**raw["explore"], "moments": ["after-write"], "targets": ["nobody"]}
    nobody = parse_scenario(raw, SCENARIO.parent)
    assert empty_space(nobody.explore, nobody) == (
        "explore: no fault of the space can play here (kill-driver: none of its targets here is among the targets "
        "asked for (nobody))"
    )
    assert empty_space(scenario.explore, scenario) is None


def test_a_failure_is_found_and_shrunk_to_the_single_kill_after_a_write():
    scenario = load_scenario(SCENARIO)
    clock = Clock()
    judge, ran = _judge(clock)
    found = explore(scenario, scenario.explore, judge, budget_s=3600, seed=1, clock=clock)
    assert found.exit_code == 1 and list(found.failures) == [BROKEN]
    [fault] = found.shrunk.schedule
    assert (fault.kind, fault.target, dict(fault.params)["at"]) == ("kill-driver", "egress", "after-write")
    assert found.shrunk.complete and found.shrunk.workload_s == 10.0  # halved to the least a run may have
    assert fault.start_s == scenario.explore.space.start_s  # moved as early as the space allows
    assert found.reproduced == 1.0 and [r.phase for r in found.runs][-3:] == ["replay"] * 3
    assert [r.phase for r in found.runs].count("search") == found.drawn
    # The search stopped at its first failure.
    assert [r.signature for r in found.runs if r.phase == "search"][:-1] == [None] * (found.drawn - 1)


def test_simpler_faults_are_tied_to_a_write_never_loosened_start_earlier_and_last_shorter():
    scenario = load_scenario(SCENARIO)
    kill = Fault("kill-driver", "egress", 9.0, (("at", "after-write"), ("restart_after_s", 3.0), ("signal", "SIGKILL")))
    tried = simpler(kill, scenario.explore)
    assert {dict(f.params)["at"] for f in tried} == {"after-write"}  # a moment tied to an event stays tied
    assert any(f.start_s == 4.0 for f in tried)
    assert any(dict(f.params)["restart_after_s"] == 1.5 for f in tried)
    anytime = replace(kill, params=(("at", "anytime"), ("restart_after_s", 3.0), ("signal", "SIGKILL")))
    tied, graceful = simpler(anytime, scenario.explore)[:2]
    assert dict(tied.params)["at"] == "after-write" and dict(graceful.params)["signal"] == "SIGTERM"
    # a weaker kind on the same target: a broker stopped instead of killed, a link delayed instead of cut
    crash = Fault("broker-kill", "broker-2", 6.0, (("down_s", 8.0),))
    assert simpler(crash, scenario.explore)[0] == Fault("broker-stop", "broker-2", 6.0, (("down_s", 8.0),))
    cut = Fault("network-partition", "egress", 6.0, (("duration_s", 5.0),))
    delayed = simpler(cut, scenario.explore)[0]
    assert delayed.kind == "network-delay" and dict(delayed.params)["duration_s"] == 5.0


def test_no_failure_in_the_budget_exits_0_and_runs_nobody_could_judge_exit_3():
    scenario = load_scenario(SCENARIO)
    clock = Clock()
    judge, _ = _judge(clock, breaks=lambda f: False)
    found = explore(scenario, scenario.explore, judge, budget_s=300, seed=1, clock=clock)
    assert found.exit_code == 0 and found.drawn == 5 and found.budget_ended and found.shrunk is None

    def unjudged(schedule, workload_s, phase):
        clock.now += 60
        return UNJUDGED

    found = explore(scenario, scenario.explore, unjudged, budget_s=120, seed=1, clock=clock)
    assert found.exit_code == 3 and found.unjudged == 2


def test_a_run_discarded_on_an_unhealthy_cluster_plays_its_schedule_later_and_three_in_a_row_stop_the_search():
    scenario = load_scenario(SCENARIO)
    clock = Clock()
    healthy = iter([False, True, True, False, False, False])
    played = []

    def judge(schedule, workload_s, phase):
        clock.now += 60
        if not next(healthy):
            return DISCARDED
        played.append(schedule)
        return None

    found = explore(scenario, scenario.explore, judge, budget_s=3600, seed=1, clock=clock)
    assert played == [draw_schedule(scenario.explore, scenario, 1, i) for i in range(2)]  # the first, not skipped
    assert found.drawn == 2 and found.stopped and "3 runs in a row discarded" in found.stopped
    assert found.exit_code == 3 and len(found.runs) == 6


def test_the_budget_ending_while_shrinking_keeps_the_smallest_failure_found():
    scenario = load_scenario(SCENARIO)
    clock = Clock()
    judge, _ = _judge(clock)
    found = explore(scenario, scenario.explore, judge, budget_s=3600, seed=1, clock=clock, replays=0)
    runs_needed = len(found.runs)
    clock = Clock()
    judge, _ = _judge(clock)
    cut = explore(scenario, scenario.explore, judge, budget_s=60 * (runs_needed - 2), seed=1, clock=clock, replays=0)
    assert cut.exit_code == 1 and not cut.shrunk.complete and cut.budget_ended
    assert any(f.target == "egress" and dict(f.params)["at"] == "after-write" for f in cut.shrunk.schedule)


def test_signatures_and_budgets():
    assert signature("pass", [], {}) is None and signature("unknown", [], {}) == UNJUDGED
    assert signature("fail", ["max_lost", "end_to_end"], {"lost": 3, "phantom": 0}) == (
        ("end_to_end", "max_lost"),
        ("lost",),
    )
    assert said(signature("fail", ["end_to_end"], {"duplicated_in_state": 2})) == (
        "fails end_to_end (duplicated in state)"
    )
    assert said(None) == "pass" and said(UNJUDGED) == "unjudged"
    assert [budget_seconds(t) for t in ("20m", "1h", "90s", "1h30m")] == [1200, 3600, 90, 5400]
    with pytest.raises(Exception, match="expected a span"):
        budget_seconds("soon")


def test_minimal_yaml_is_a_self_contained_scenario_harness_run_accepts(tmp_path):
    scenario = load_scenario(SCENARIO)
    clock = Clock()
    judge, _ = _judge(clock)
    found = explore(scenario, scenario.explore, judge, budget_s=3600, seed=3, clock=clock)
    dirs = [tmp_path / "runs" / f"{i:03d}" for i in range(1, len(found.runs) + 1)]
    write_outputs(tmp_path, scenario, SCENARIO.parent, found, 3, 600.0, dirs)
    minimal = yaml.safe_load((tmp_path / "minimal.yaml").read_text())
    assert "explore" not in minimal and minimal["workload"]["seed"] == 3
    replayed = parse_scenario(minimal, Path("/"))  # from anywhere: nothing in it is relative
    assert [(r.kind, r.target, r.params["at"]) for r in replayed.faults] == [("kill-driver", "egress", "after-write")]
    data = json.loads((tmp_path / "explore.json").read_text())
    assert data["minimal"]["reproduced"] == 1.0 and len(data["runs"]) == len(found.runs)
    assert data["minimal"]["trace"] and data["runs"][0]["report"] == "runs/001/report.html"
    assert "runs/001/report.html" in (tmp_path / "explore.html").read_text()


def test_paths_in_a_scenario_are_made_absolute_for_the_minimal_copy(tmp_path):
    raw = {
        "workload": {"record": {"sample": "orders.jsonl", "avro": "/abs/o.avsc"}, "duration_s": 30},
        "applications": {"job": {"command": ["python", "job.py"]}},
        "outputs": {"o": {"topic": "t", "avro": "o.avsc"}},
        "imports": ["lib"],
        "storm": {"faults": 2},
        "explore": {"faults": 2},
    }
    made = scenario_raw(raw, tmp_path, (), 12.0, 5)
    assert made["workload"]["record"] == {"sample": str(tmp_path / "orders.jsonl"), "avro": "/abs/o.avsc"}
    assert made["applications"]["job"]["cwd"] == str(tmp_path) and made["imports"] == [str(tmp_path / "lib")]
    assert made["outputs"]["o"]["avro"] == str(tmp_path / "o.avsc") and made["faults"] == []
    assert "storm" not in made and "explore" not in made and made["workload"]["duration_s"] == 12.0


def test_runs_are_started_ahead_only_when_no_fault_of_the_space_shapes_a_start():
    scenario = load_scenario(SCENARIO)
    spec = scenario.explore
    assert started_ahead(spec, scenario)  # kill-driver: it needs nothing before the drivers start

    def drawing(*kinds):
        return replace(spec, space=replace(spec.space, kinds=kinds, targets=None))

    assert not started_ahead(drawing("kill-driver", "network-delay"), scenario)  # its link is proxied from the start
    assert started_ahead(drawing("kill-driver", "broker-stop"), scenario)
    # a whole-run kind prepares what it needs before the drivers start (none of them can be drawn)
    assert all(load_fault_kind(kind).shapes_start for kind in ("late-events", "resend", "executor-crash"))


def test_a_run_readied_ahead_is_played_only_with_its_own_set_up_and_faults_that_shape_no_start(tmp_path):
    scenario = load_scenario(SCENARIO)
    ready = ReadyRun(set_up(scenario, SCENARIO.parent, 1), tmp_path / "001", Console(quiet=True).say)  # not begun
    faster = parse_scenario({**scenario_raw(scenario.raw, SCENARIO.parent, (), 10, 1), "name": "other"}, Path("/"))
    with pytest.raises(HarnessError, match="readied for another scenario than other"):
        ready.ready(faster, ())
    linked = parse_scenario(
        {
            **scenario_raw(scenario.raw, SCENARIO.parent, (), 10, 1),
            "faults": [{"kind": "network-delay", "target": "egress", "start_s": 2}],
        },
        Path("/"),
    )
    with pytest.raises(HarnessError, match="cannot play network-delay: it shapes a start"):
        ready.ready(linked, linked.faults)
    ready.discard()
    assert not (tmp_path / "001").exists()
