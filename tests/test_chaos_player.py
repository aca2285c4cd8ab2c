"""The chaos driver's scheduling, with real threads and real time: faults on different targets overlap, faults
on one target wait for each other, and a fault whose action fails is recorded and played past (skipped when it
failed before it began, failed when after).

The kind played is a stand-in that only records when it ran: what each real action does to a pipeline is
tested end to end (test_real_evidence.py, test_faults.py)."""

from __future__ import annotations

import json
import sys
import threading
import time

import pytest

from harness.chaos import player
from harness.chaos.schedule import Firing
from harness.errors import HarnessError
from harness.faults import FaultKind
from harness.runner.pipeline_run import PipelineRun
from harness.scenario.parse import parse_scenario

SCENARIO = {
    "name": "schedule",
    "blueprint": {
        "streamlets": {"ingress": {"kind": "ingress"}, "egress": {"kind": "egress"}},
        "connections": {"ingress.out": ["egress.in"]},
    },
    "workload": {"rate": 10, "duration_s": 1},
}


@pytest.fixture
def run(tmp_path):
    with PipelineRun(parse_scenario(SCENARIO), tmp_path / "run", say=lambda _: None) as pipeline_run:
        # A generator stand-in that is done at once: play() returns when the faults are.
        pipeline_run.generator.proc = pipeline_run.supervisor.start(
            "generator", [sys.executable, "-c", "pass"], tmp_path / "g.log"
        )
        yield pipeline_run


@pytest.fixture
def spans():
    """A fault kind that sleeps 0.6 s and records (target, start, end); with `meet`, it first waits until another
    fault with `meet` is playing too (a barrier: it breaks, and the fault fails, if they never play at once)."""
    recorded, lock, meeting = [], threading.Lock(), threading.Barrier(2, timeout=60)

    def action(run, target, **params):
        start = time.monotonic()
        assert target in run.under_fault  # its driver's exit is not taken for one that ended by itself
        if params.get("meet"):
            meeting.wait()
        if params.get("fail") == "before":
            raise HarnessError(f"{target} could not be found")
        kinds["stand-in"].begun(run, target)
        if params.get("fail") == "after":
            raise HarnessError(f"{target} could not be restarted")
        time.sleep(0.6)
        with lock:
            recorded.append((target, start, time.monotonic()))

    kinds = {"stand-in": FaultKind("stand-in", "streamlet", "sleeps and records when it ran", play=action)}
    return recorded, kinds


def _firing(at_s: float, target: str, number: int = 1, **params) -> Firing:
    return Firing(at_s, 0, "stand-in", target, params, number=number)


def test_faults_on_different_targets_overlap_and_on_one_target_follow_each_other(run, spans):
    recorded, kinds = spans
    firings = [_firing(0.0, "ingress", meet=True), _firing(0.0, "egress", meet=True), _firing(0.1, "egress")]
    played = player.play(run, firings, kinds, 90, lambda _: None)
    assert played == 3 and not run.under_fault  # the first two met: faults on different targets play at once
    by_target = {}
    for target, start, end in sorted(recorded, key=lambda s: s[1]):
        by_target.setdefault(target, []).append((start, end))
    (first, second) = by_target["egress"]
    assert second[0] >= first[1], "a fault waits for the one before it on its target"


def test_a_failing_action_is_recorded_and_the_run_goes_on(run, spans):
    said = []
    # fault 1 is a whole-run one (played by the runner): these are faults 2 to 4 of 4
    firings = [
        _firing(0.0, "ingress", 2),
        _firing(0.0, "egress", 3, fail="before"),
        _firing(0.1, "egress", 4, fail="after"),
    ]
    played = player.play(run, firings, spans[1], 30, said.append, total=4)
    assert played == 1 and [target for target, _, _ in spans[0]] == ["ingress"]
    events = [json.loads(line) for line in run.layout.history.read_text().splitlines()]
    assert [(e["fault"], e["planned_s"]) for e in events if e["event"] == "fault_planned"] == [
        (2, 0.0),
        (3, 0.0),
        (4, 0.1),
    ]
    begun = [e for e in events if e["event"] == "fault_begun"]
    assert [(e["fault"], e["planned_s"], e["late_s"] >= 0) for e in begun] == [(2, 0.0, True), (4, 0.1, True)]
    skipped = [e for e in events if e["event"] == "fault_skipped"]
    failed = [e for e in events if e["event"] == "fault_failed"]
    assert [(e["fault"], e["target"], e["reason"]) for e in skipped] == [(3, "egress", "egress could not be found")]
    assert [(e["fault"], e["target"], e["reason"], e["stage"]) for e in failed] == [
        (4, "egress", "egress could not be restarted", "effect")
    ]
    assert any(line.startswith("fault 2/4 at ") for line in said), said
    assert any(line.startswith("fault 3 skipped") for line in said), said
    assert any(line.startswith("fault 4 failed") and "unknown" in line for line in said), said
    assert "could not be restarted" in run.layout.log("faults").read_text()
