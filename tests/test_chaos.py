"""Fault actions against a real pipeline: real drivers, real signals."""

from __future__ import annotations

import json
import signal

import pytest

from harness.chaos.actions import kill_driver
from harness.evidence.checkpoint import batch_end_offsets, committed_batches
from harness.evidence.progress import query_events
from harness.runner.pipeline import PipelineRun
from harness.scenario.model import parse_scenario
from harness.waiting import wait_for
from tests.evidence_helpers import acked, egress_counts

pytestmark = pytest.mark.e2e

PIPELINE = {
    "name": "kill",
    "blueprint": {
        "streamlets": {"ingress": {"kind": "ingress"}, "processor": {"kind": "processor"},
                       "egress": {"kind": "egress", "settings": {"mode": "upsert"}}},
        "connections": {"ingress.out": ["processor.in"], "processor.out": ["egress.in"]},
    },
    "workload": {"rate": 100, "duration_s": 25, "keys": 4},
}


def _data_batches(run, streamlet, pid=None):
    return [e["progress"] for e in query_events(run.layout.progress(streamlet))
            if e["event"] == "progress" and e["progress"]["numInputRows"] > 0 and (pid is None or e["pid"] == pid)]


def test_a_killed_driver_is_gone_and_its_restart_resumes_from_the_checkpoint(tmp_path):
    with PipelineRun(parse_scenario(PIPELINE), tmp_path / "run", say=lambda m: None) as run:
        run.start_cluster()
        run.create_topics()
        run.start_drivers()
        run.start_generator(25)
        wait_for(lambda: len(_data_batches(run, "processor")) >= 3, timeout=120, what="3 processor batches")
        victim = run.drivers["processor"]
        old_pid = victim.pid

        kill_driver(run, "processor", "SIGKILL", restart_after_s=1)

        assert not victim.running() and victim.returncode == -signal.SIGKILL
        checkpoint = run.layout.root / "checkpoints" / "processor" / "out"
        old_last = max(p["batchId"] for p in _data_batches(run, "processor", pid=old_pid))
        new_pid = run.drivers["processor"].pid
        assert new_pid != old_pid
        first = wait_for(lambda: _data_batches(run, "processor", pid=new_pid), timeout=180,
                         what="the restarted processor's first batch")[0]
        # It continues after a batch the old driver committed (none it finished is run again),
        # from that batch's end offsets.
        resumed_after = first["batchId"] - 1
        assert resumed_after in committed_batches(checkpoint) and resumed_after >= old_last
        start = first["sources"][0]["startOffset"]
        assert (json.loads(start) if isinstance(start, str) else start) == batch_end_offsets(checkpoint, resumed_after)
        wait_for(run.generator_done, timeout=25 + 120, what="the generator to finish")
        run.drain()
        run.stop_drivers()
        kinds = [(e["event"], e.get("kind")) for e in map(json.loads, run.layout.history.read_text().splitlines())]
    assert ("fault_begun", "kill-driver") in kinds and ("fault_ended", "kill-driver") in kinds
    state = egress_counts(tmp_path / "run", "egress", "records")
    assert set(state) == acked(tmp_path / "run"), "upsert egress: nothing lost, nothing extra"
    assert set(state.values()) == {1}
